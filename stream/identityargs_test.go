package stream

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

// TestIdentityArgs: Create writes a new seed and returns the public key
// or the named entry; a missing seed file setting, a bad name and an
// existing seed file are refused naming their fields, the file untouched.
func TestIdentityArgs(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "web.nk")
	entry, err := IdentityArgs{SeedFile: seed, Name: "web"}.Create()
	if err != nil || !strings.HasPrefix(entry, `{"name":"web","nkey":"U`) {
		t.Fatalf("Create: %q, %v", entry, err)
	}
	before, _ := os.ReadFile(seed)
	pub, err := IdentityArgs{SeedFile: filepath.Join(dir, "bare.nk")}.Create()
	if err != nil || !strings.HasPrefix(pub, "U") || strings.Contains(pub, "{") {
		t.Errorf("bare key: %q, %v", pub, err)
	}
	for _, c := range []struct {
		args IdentityArgs
		want string
	}{
		{IdentityArgs{Name: "web"}, "{SeedFile} is required"},
		{IdentityArgs{SeedFile: filepath.Join(dir, "x.nk"), Name: "a.b"}, `{Name} "a.b": want 1 to 64 letters`},
		{IdentityArgs{SeedFile: seed}, "{SeedFile}: seed file: "},
	} {
		_, err := c.args.Create()
		var fe *fielderr.Error
		if !errors.As(err, &fe) || !strings.HasPrefix(fielderr.Rename(err, func(f string) string { return "{" + f + "}" }).Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.args, err, c.want)
		}
	}
	if after, _ := os.ReadFile(seed); string(after) != string(before) {
		t.Error("an existing seed file was overwritten")
	}
}
