package evaluate

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateCollectsEveryError checks that Validate reports every bad
// field at once, each as a *ConfigError naming its field, and that Render
// renames the fields.
func TestValidateCollectsEveryError(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"valid gpope", Config{Data: "d", Target: "uniform", Features: "tabular", Method: GPOPE, Epsilon: 1, Delta: 1e-5,
			Iters: 10, StepSize: 0.5, Clip: 1, Batch: 1, Env: "chain", Gamma: 0.9}, nil},
		{"everything missing", Config{Method: GPOPE, Delta: 2, Gamma: 1},
			[]string{"Data is required", "Target is required", "Features is required", "Gamma 1", "Epsilon 0", "Delta 2",
				"without Env needs Actions N", "Iters 0", "StepSize 0", "Clip 0", "Batch 0"}},
		{"non-private without NonPrivate", Config{Data: "d", Target: "t", Features: "raw", Method: LSTD, EpsilonGiven: true, Ridge: -1, Curve: true},
			[]string{"pass NonPrivate", "Epsilon/Delta have no meaning", "Ridge -1", "Curve draws the gpope iterations"}},
		{"gpope batch above the exact noise's bound", Config{Data: "d", Target: "uniform", Features: "tabular", Method: GPOPE, Epsilon: 1, Delta: 1e-5,
			Iters: 10, StepSize: 0.5, Clip: 1, Batch: 1<<14 + 1, Env: "chain", Gamma: 0.9}, []string{"Batch 16385: want > 0 and at most 16384"}},
		{"dp-lsw epsilon", Config{Data: "d", Target: "t", Features: "raw", Method: DPLSW, Epsilon: 2, Delta: 1e-6, Actions: 2, PublicNGiven: true},
			[]string{"PublicN is gpope's", "proved for epsilon <= 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate: nil, want errors")
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok || len(joined.Unwrap()) != len(tt.want) {
				t.Fatalf("Validate: %v; want %d errors", err, len(tt.want))
			}
			for i, e := range joined.Unwrap() {
				var ce *ConfigError
				if !errors.As(e, &ce) || !strings.Contains(ce.Error(), tt.want[i]) {
					t.Errorf("error %d: %v, want a ConfigError with %q", i, e, tt.want[i])
				}
			}
		})
	}
	err := (&Config{Data: "d", Target: "t", Features: "raw", Method: GPOPE, Epsilon: 1, Delta: 1e-5, StepSize: 1, Clip: 1, Batch: 1, Env: "chain"}).Validate()
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Render(func(f string) string { return "--" + strings.ToLower(f) }) != "--iters 0: want at least 1 (gpope)" {
		t.Errorf("Render: %v", err)
	}
}
