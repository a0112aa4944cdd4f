package fielderr

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

var fields = Fields{"Epsilon", "Delta", "Data"}

// flag names the fields as a command line would.
func flag(f string) string {
	return map[string]string{"Epsilon": "--epsilon", "Delta": "--delta", "Data": "--data"}[f]
}

func TestRename(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		plain     string // Error()
		rendered  string // Rename(err, flag).Error()
		wrapsEOF  bool
		fieldLike bool
	}{
		{"one field", fields.Errorf("{Epsilon} %v: want > 0", 0), "Epsilon 0: want > 0", "--epsilon 0: want > 0", false, true},
		{"two fields", fields.Errorf("{Epsilon}/{Delta} have no meaning"), "Epsilon/Delta have no meaning", "--epsilon/--delta have no meaning", false, true},
		{"user text kept", fields.Errorf("{Data} %q: {Other} unknown", "a{b}.jsonl"), `Data "a{b}.jsonl": {Other} unknown`, `--data "a{b}.jsonl": {Other} unknown`, false, true},
		{"wrapped", fmt.Errorf("dataset: %w", fields.Wrap(fmt.Errorf("{Data}: %w", io.EOF))), "dataset: Data: EOF", "dataset: --data: EOF", true, true},
		{"joined", errors.Join(fields.Errorf("{Data} is required"), errors.New("{Delta} untouched outside an Error"), fields.Errorf("{Delta} 2")),
			"Data is required\n{Delta} untouched outside an Error\nDelta 2", "--data is required\n{Delta} untouched outside an Error\n--delta 2", false, true},
		{"no field error", fmt.Errorf("x: %w", io.EOF), "x: EOF", "x: EOF", true, false},
		{"field without a flag", Fields{"Epsilon", "Hidden"}.Errorf("{Hidden} 3 with {Epsilon} 1"), "Hidden 3 with Epsilon 1", "Hidden 3 with --epsilon 1", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.plain {
				t.Errorf("Error: %q, want %q", got, tt.plain)
			}
			r := Rename(tt.err, flag)
			if got := r.Error(); got != tt.rendered {
				t.Errorf("Rename: %q, want %q", got, tt.rendered)
			}
			if errors.Is(r, io.EOF) != tt.wrapsEOF {
				t.Errorf("errors.Is(EOF) = %v after Rename", !tt.wrapsEOF)
			}
			var fe *Error
			if errors.As(r, &fe) != tt.fieldLike {
				t.Errorf("errors.As(*Error) = %v after Rename", !tt.fieldLike)
			}
			if !tt.fieldLike && r != tt.err {
				t.Error("Rename replaced an error without fields")
			}
		})
	}
}
