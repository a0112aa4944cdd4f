package evaluate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/offline/gtd2"
	"dprl/offline/lsw"
)

func ptr(x float64) *float64 { return &x }

func TestResultWriteText(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"gpope with the non-private section", Result{Method: "gpope", Private: true, Target: "uniform", Features: "tabular", Gamma: 0.9,
			Value: ptr(0.25), TrueValue: ptr(0.2573449), MSPBE: ptr(1.5), MSPBEKind: "exact (chain model)", Weights: []float64{1, -0.123456, 2e-7},
			Epsilon: 0.99999985, Delta: 1e-5, Accountant: "rdp", NoiseMultiplier: 0.94461, Iters: 300, Clip: 1, Batch: 2, NTrajectories: 300,
			NSource: "--n (public)", LedgerSeq: 3, DatasetSpent: 2.5, Seeded: true, Plot: "m.png",
			NonPrivate: &NonPrivate{Warning: NotCovered, DatasetID: "records-sha256:ab", NTrajectories: 300, NTransitions: 6376,
				GPOPE: &gtd2.Diagnostics{Sampled: 419, Clipped: 18, Zeroed: 1}}},
			`method:      gpope (target uniform, features tabular, gamma 0.9)
value:       0.25 at the start distribution (true 0.257345)
MSPBE:       1.5, exact (chain model)
weights:     [1 -0.1235 2e-07]
privacy:     (1, 1e-05)-DP per trajectory (added or removed), rdp
noise:       z = 0.9446 on clip 1, 300 steps, Poisson sampling of expected batch 2 of n = 300 trajectories
public n:    --n (public)
ledger:      entry 3; dataset spent epsilon 2.5 (seeded run)
plot:        m.png

NOT covered by the privacy guarantee (--non-private): statistics of the private log
  dataset:   records-sha256:ab
  data:      300 trajectories, 6376 transitions
  MSPBE:     - (not finite with the private log's moments)
  gradients: 419 sampled, 18 clipped, 1 zeroed (not finite)
`},
		{"dp-lsw", Result{Method: "dp-lsw", Private: true, Target: "uniform", Features: "fourier:2", Gamma: 0.9, MSPBEKind: "(none)",
			Weights: []float64{}, Epsilon: 1, Delta: 1e-6, Accountant: "smooth", RewardBounds: []float64{-1, 0}, ReturnRange: 10, LedgerSeq: 1, DatasetSpent: 1,
			NonPrivate: &NonPrivate{Warning: NotCovered, DatasetID: "d", MSPBE: ptr(92996.7), LSW: &lsw.Diagnostics{Sigma: 464.3, Psi: 2.972, Visited: 19}}},
			`method:      dp-lsw (target uniform, features fourier:2, gamma 0.9)
value:       - (give --env for a public start distribution)
MSPBE:       - (none)
weights:     []
privacy:     (1, 1e-06)-DP per trajectory (added or removed), smooth
noise:       Gaussian on a smooth sensitivity bound, from public reward bounds [-1, 0] (return range 10); its scale depends on the data and is not released
ledger:      entry 1; dataset spent epsilon 1

NOT covered by the privacy guarantee (--non-private): statistics of the private log
  dataset:   d
  data:      0 trajectories, 0 transitions
  MSPBE:     92996.7 with the private log's moments
  noise:     sigma = 464.3 per weight (Psi 2.972, 19 states visited)
`},
		{"non-private lstd", Result{Method: "lstd", Target: "greedy", Features: "raw", Gamma: 0.5, Value: ptr(-3), MSPBE: ptr(0), MSPBEKind: "exact",
			Weights: []float64{0.5}, Accountant: "none: not differentially private"},
			`method:      lstd (target greedy, features raw, gamma 0.5)
value:       -3 at the start distribution
MSPBE:       0, exact
weights:     [0.5]
privacy:     NONE: this estimate is not differentially private (not charged)
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestResultWritePlot(t *testing.T) {
	dir := t.TempDir()
	r := Result{Epsilon: 1, Delta: 1e-5, CurveKind: "exact (chain model)",
		Curve: []CurvePoint{{Iter: 1, MSPBE: 3}, {Iter: 2, MSPBE: 0.5}, {Iter: 3, MSPBE: 0}}}
	path := filepath.Join(dir, "m.png")
	if err := r.WritePlot(path, "/some/dir/chain.jsonl"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 1000 {
		t.Fatalf("not a PNG (%d bytes, %v)", len(b), err)
	}
	// Repeatable: the same curve gives the same bytes.
	again := filepath.Join(dir, "again.png")
	if err := r.WritePlot(again, "chain.jsonl"); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(again); !bytes.Equal(b, b2) {
		t.Error("the same curve and title gave another PNG")
	}
	r.Curve = nil
	if err := r.WritePlot(filepath.Join(dir, "empty.png"), "x"); err == nil || err.Error() != "no MSPBE values to plot" {
		t.Errorf("empty curve: %v", err)
	}
}
