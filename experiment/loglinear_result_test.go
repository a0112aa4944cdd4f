package experiment

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixedLogLinear is a result as dprl train --algo dppg-loglinear writes it.
func fixedLogLinear() LogLinearResult {
	return LogLinearResult{Env: "riverswim-0.9", Method: LogLinearMethod, P: 0.9, Optimal: 5.1951, Episodes: 8, Delta: 1e-5, PrivacyUnit: "episode",
		ClipAtLR0: true, Alpha: 3.5, Clip: 5, K: 4, Eta: 1e-3, InitRight: 1, BaselineLR: 0.05, FisherRidge: 0.01, FisherExact: true, Seconds: 0.04,
		Runs: []LogLinearRun{
			{Epsilon: 5, Z: 1.2611, Region: "l2", Alpha: 2.888e-5, Seeds: []uint64{1}, Final: []float64{38.2}, FinalValue: []float64{0.4312},
				CurveEpisodes: []int{1, 2}, Mean: []float64{4.7, 9.5}, FirstSlope: 4.769, LastSlope: 4.77, ClipFirst: 5, ClipLast: 5},
			{Epsilon: 1, Z: 5.276, Region: "kl", Alpha: 5.869e-6, Seeds: []uint64{1, 2}, Final: []float64{38.1, 38.3}, FinalValue: []float64{0.4312, 0.1},
				CurveEpisodes: []int{1, 2}, Mean: []float64{0, 9.5}, FirstSlope: 4.769, LastSlope: 4.769, ClipFirst: 0.0366, ClipLast: 0.241},
		},
		Trace: []LogLinearTracePoint{{Epsilon: 5, Region: "l2", Seed: 1, Episodes: 1, Value: 1, Gaps: []float64{1, 2}}, {Epsilon: 5, Region: "l2", Seed: 1, Episodes: 2, Value: 2}}}
}

func TestLogLinearResultText(t *testing.T) {
	var b bytes.Buffer
	if err := fixedLogLinear().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "riverswim-0.9 dppg-loglinear (p = 0.9, optimal value 5.195, 8 episodes, K 4 per update, delta 1e-05, alpha per run for a first S of 5, eta 0.001, baseline lr 0.05, start logit gap 1, S at eta_0, KL Fisher exact with ridge 0.01; 0.0 s):\n" +
		"  epsilon 5 per episode (z = 1.261) l2  alpha 2.888e-05: cumulative regret 38.2 ± 0.0 over 1 seeds; regret per episode first 10% 4.769, last 10% 4.77; S 5 to 5; final values 0.43\n" +
		"  epsilon 1 per episode (z = 5.276) kl  alpha 5.869e-06: cumulative regret 38.2 ± 0.1 over 2 seeds; regret per episode first 10% 4.769, last 10% 4.769; S 0.0366 to 0.241; final values 0.43 0.10\n"
	if b.String() != want {
		t.Errorf("text\n%s\nwant\n%s", b.String(), want)
	}
	r := fixedLogLinear()
	r.Eta, r.Clip, r.ClipAtLR0, r.FisherExact, r.Runs = 0, 0, false, false, nil
	b.Reset()
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), "alpha 3.5, eta Table 2's schedule, baseline lr 0.05, start logit gap 1, S at the current eta, KL Fisher on 25 public episodes with ridge 0.01") {
		t.Errorf("defaults: %q", b.String())
	}
	b.Reset()
	if err := fixedLogLinear().WriteTrace(&b); err != nil || strings.Count(b.String(), "\n") != 2 || !strings.Contains(b.String(), `"gaps":[1,2]`) {
		t.Errorf("trace %q", b.String())
	}
}

// TestReadLogLinearResult: a written result reads back; files that are not
// such a result are rejected with what is wrong.
func TestReadLogLinearResult(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.json", fixedLogLinear())
	r, err := ReadLogLinearResult(good)
	if err != nil || r.P != 0.9 || len(r.Runs) != 2 || r.Trace != nil {
		t.Fatalf("read back: %+v, %v", r, err)
	}
	if CountRuns([]LogLinearResult{r, r}) != 4 {
		t.Error("CountRuns")
	}
	bad := fixedLogLinear()
	bad.Method, bad.Runs = "dppg", nil
	short := fixedLogLinear()
	short.Runs[1].Mean = short.Runs[1].Mean[:1]
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.json"), "no such file"},
		{write("other.json", map[string]any{"eval_mean": 1}), `not a dprl train --algo dppg-loglinear --json result: json: unknown field "eval_mean"`},
		{write("bad.json", bad), `method "dppg", want "dppg-loglinear"; no runs`},
		{write("short.json", short), "runs[1]: 1 regret points for 2 episode counts"},
	} {
		if _, err := ReadLogLinearResult(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", filepath.Base(tc.path), err, tc.want)
		}
	}
}
