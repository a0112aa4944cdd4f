package dsjson

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"dprl/internal/fielderr"
)

// TestArgsRefused checks that the settings an operator gets wrong are
// refused as errors naming their fields, before anything is read.
func TestArgsRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "exists")
	if err := os.WriteFile(out, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"import no in", ImportArgs{Out: "x"}.Validate, "In and Out are required"},
		{"import out exists", func() error { _, err := ImportArgs{In: "x", Out: out}.Run(); return err }, "Out " + out + " exists (pass Force to overwrite)"},
		{"export no actions", ExportArgs{In: "x", Out: "y"}.Validate, "In, Out and Actions (1 to 65536) are required"},
		{"export too many actions", ExportArgs{In: "x", Out: "y", Actions: MaxActions + 1}.Validate, "In, Out and Actions (1 to 65536) are required"},
		{"export out exists", func() error { _, err := ExportArgs{In: "x", Out: out, Actions: 2}.Run(); return err }, "Out " + out + " exists (pass Force to overwrite)"},
	} {
		err := tc.err()
		if fe := (*fielderr.Error)(nil); !errors.As(err, &fe) || err.Error() != tc.want {
			t.Errorf("%s: %v, want a *fielderr.Error %q", tc.name, err, tc.want)
		}
	}
	if err := (ExportArgs{In: "x", Out: "y", Actions: 1}).Validate(); err != nil {
		t.Errorf("valid export: %v", err)
	}
}
