package primorl

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestSummarize: runs group by MOPO, no privacy and epsilon (rounded up to
// 4 digits), baselines first; the mean, sample std and t-based 95% CI are
// the hand-computed ones.
func TestSummarize(t *testing.T) {
	rs := []Result{
		{Private: true, Epsilon: 4.999998, Score: 800},
		{Private: true, Epsilon: 1, Score: 500},
		{Method: "mopo", Score: 790},
		{Private: true, Epsilon: 5.0000001, Score: 820},
		{Score: 810},
		{Private: true, Epsilon: 4.99999, Score: 840},
	}
	s := Summarize(rs)
	if len(s) != 5 || s[0].Label != "mopo" || s[1].Label != "no privacy" || s[2].Epsilon != 1 || s[3].Label != "epsilon 5" || s[4].Label != "epsilon 5.001" {
		t.Fatalf("summaries %+v", s)
	}
	// 5.0000001 rounds up to 5.001, so it is a group of its own: ceil
	// never rounds an epsilon down.
	var five Summary
	for _, x := range s {
		if x.Label == "epsilon 5" {
			five = x
		}
	}
	if five.Runs != 2 || five.Mean != 820 || math.Abs(five.Std-math.Sqrt(800)) > 1e-9 || math.Abs(five.CI95-12.706*math.Sqrt(800)/math.Sqrt(2)) > 1e-3*20 {
		t.Fatalf("epsilon 5: %+v", five)
	}
}

// TestPlotScores: results round-trip through JSON and ReadResult, the
// figure is written, and a file that is not a result is refused.
func TestPlotScores(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, r := range []Result{{Env: "pendulum", Method: "primorl", Private: true, Epsilon: 5, Score: 890},
		{Env: "pendulum", Method: "primorl", Private: true, Epsilon: 1, Score: 700}, {Env: "pendulum", Method: "mopo", Score: 880}} {
		b, _ := json.Marshal(r)
		p := filepath.Join(dir, "r"+string(rune('0'+i))+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var rs []Result
	for _, p := range paths {
		r, err := ReadResult(p)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	out := filepath.Join(dir, "fig.png")
	if err := PlotScores(out, "t", Summarize(rs), true); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(out); err != nil || st.Size() < 1000 {
		t.Fatalf("figure: %v", err)
	}
	if err := PlotScores(out, "t", Summarize(rs[2:]), false); err == nil {
		t.Fatal("a figure without private results accepted")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"foo": 1}`), 0o644)
	if _, err := ReadResult(bad); err == nil {
		t.Fatal("a file that is not a result accepted")
	}
}

// TestForEnv: the cart-poles take the paper's settings unless kept (and
// Balance its measured policy phase, which TestResolve checks); Pendulum's
// are the defaults.
func TestForEnv(t *testing.T) {
	d := DefaultConfig()
	p := d.ForEnv("pendulum", nil)
	if p.Model.Ensemble != 3 || p.ClipMode != ClipPerLayer || p.Horizon != 30 || p.Uncertainty != MPD || p.Branch != 0.5 {
		t.Fatalf("pendulum: %+v", p)
	}
	b := d.ForEnv("cartpole-balance", nil)
	if b.Env != "cartpole-balance" || b.Model.Ensemble != 5 || b.Model.Hidden[0] != 128 || b.ClipMode != ClipFlat || b.Horizon != 20 || b.Uncertainty != MPD || b.Branch != 0.5 {
		t.Fatalf("balance: %+v", b)
	}
	s := d.ForEnv("cartpole-swingup", func(f string) bool { return f == "Horizon" || f == "Branch" })
	if s.Uncertainty != MA || s.Horizon != 30 || s.Branch != 0.5 {
		t.Fatalf("swing-up keeping the horizon: %+v", s)
	}
}
