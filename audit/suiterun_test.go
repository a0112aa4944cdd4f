package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// suiteConfig is a valid configuration with few runs.
func suiteConfig(mechanism string) SuiteConfig {
	return SuiteConfig{Mechanism: mechanism, Runs: 40, Confidence: 0.95, Epsilon: 1, Delta: 1e-5, Seed: 7}
}

func TestSuiteConfigValidate(t *testing.T) {
	flag := func(f string) string { return "--" + strings.ToLower(f) }
	cases := []struct {
		name   string
		modify func(*SuiteConfig)
		want   string // rendered with flag names; "" for valid
	}{
		{"valid", func(*SuiteConfig) {}, ""},
		{"valid with mutants", func(c *SuiteConfig) { c.Mutants = true }, ""},
		{"runs", func(c *SuiteConfig) { c.Runs = 3 }, "--runs 3: want >= 4"},
		{"confidence", func(c *SuiteConfig) { c.Confidence = 1 }, "--confidence 1: want 0 < confidence < 1"},
		{"runs before the claim", func(c *SuiteConfig) { c.Runs, c.Epsilon = 0, -1 }, "--runs 0: want >= 4"},
		{"mechanism", func(c *SuiteConfig) { c.Mechanism = "svt" }, `audit: mechanism "svt", want dppg, bandmf, gpope, learn, primorl or all`},
		{"epsilon", func(c *SuiteConfig) { c.Epsilon = -1 }, "audit: calibrating z: accountant: invalid parameter: epsilon = -1"},
		{"delta", func(c *SuiteConfig) { c.Delta = 2 }, "audit: calibrating z: accountant: invalid parameter: delta = 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := suiteConfig(MechanismAll)
			c.modify(&cfg)
			err := cfg.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(ce.Render(flag), c.want) {
				t.Fatalf("error %v, want a ConfigError rendering as %q", err, c.want)
			}
			if _, rerr := RunSuite(cfg); rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("RunSuite: %v, Validate: %v", rerr, err)
			}
		})
	}
}

// TestRunSuiteTargetsIndependent: each target's releases depend only on the
// seed and its name, so DPPG's reports are the same whether GPOPE runs too;
// another seed changes them; progress is reported per target.
func TestRunSuiteTargetsIndependent(t *testing.T) {
	dppg, err := RunSuite(suiteConfig(MechanismDPPG))
	if err != nil {
		t.Fatal(err)
	}
	cfg := suiteConfig(MechanismAll)
	pairs := map[string]int{}
	cfg.Progress = func(target string, done, total int) {
		if done != pairs[target]+1 || done > total {
			t.Errorf("%s: progress %d of %d after %d", target, done, total, pairs[target])
		}
		pairs[target] = done
	}
	all, err := RunSuite(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(dppg.Results) != 3 || len(all.Results) != 7 || all.Runs != 40 || all.Seed != 7 || all.Confidence != 0.95 {
		t.Fatalf("%d and %d results, header %+v", len(dppg.Results), len(all.Results), all)
	}
	for i, r := range dppg.Results {
		a, _ := json.Marshal(r.Report) // Seconds differ
		b, _ := json.Marshal(all.Results[i].Report)
		if string(a) != string(b) || r.Verdict != all.Results[i].Verdict {
			t.Errorf("%s differs when the other mechanisms run too:\n%s\n%s", r.Target, a, b)
		}
		if r.Kind != KindMechanism || pairs[r.Target] == 0 {
			t.Errorf("%s: kind %s, %d pairs reported", r.Target, r.Kind, pairs[r.Target])
		}
	}
	other := suiteConfig(MechanismDPPG)
	other.Seed = 8
	o, err := RunSuite(other)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(o.Results[0].Report)
	b, _ := json.Marshal(dppg.Results[0].Report)
	if string(a) == string(b) {
		t.Error("seeds 7 and 8 gave the same releases")
	}
	if TargetKey(7, "dppg/tree") == TargetKey(7, "dppg/sqrt") || TargetKey(7, "x") == TargetKey(8, "x") {
		t.Error("target keys collide")
	}
}

func TestSuiteResultTextAndErr(t *testing.T) {
	r := SuiteResult{Runs: 40, Confidence: 0.95, Seed: 3, Results: []SuiteReport{
		{Kind: KindMechanism, Verdict: "ok", Seconds: 1.26, Report: Report{Target: "dppg/independent", Claim: Claim{Epsilon: 0.99999966, Delta: 1e-5, Mu: 0.268}, EpsilonLB: 0.1, MuLB: 0.12, Best: "projection (canary: NaN update)", BestGDP: "projection (canary: large update)"}},
		{Kind: KindMutant, Verdict: "MISSED", Report: Report{Target: "mutant: no noise", Claim: Claim{Epsilon: 1, Delta: 1e-5}}},
		{Kind: KindMutant, Verdict: "flagged", Report: Report{Target: "mutant: unclipped", Claim: Claim{Epsilon: 1, Delta: 1e-5, Mu: 0.268}, EpsilonLB: 2.5, MuLB: 3, Best: "projection (canary: large update)", BestGDP: "white-box projection (canary: large update)", Violation: true}},
		{Kind: KindMutant, Verdict: "flagged", Report: Report{Target: "mutant: noise / 2", Claim: Claim{Epsilon: 1, Delta: 1e-5, Mu: 0.268}, EpsilonLB: 0.7, MuLB: 0.41, Best: "projection (canary: large update)", BestGDP: "white-box projection (canary: large update)", Violation: true}},
	}, Failed: true, Seconds: 2.04}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := `40 releases per side per canary, confidence 0.95, seed 3
target             claimed (eps, delta)  mu     eps_lb  mu_lb  test                                         verdict  time
dppg/independent   (1, 1e-05)            0.268  0.100   0.120  projection (canary: large update)            ok       1.3 s
mutant: no noise   (1, 1e-05)            -      0.000   -      -                                            MISSED   0.0 s
mutant: unclipped  (1, 1e-05)            0.268  2.500   3.000  projection (canary: large update)            flagged  0.0 s
mutant: noise / 2  (1, 1e-05)            0.268  0.700   0.410  white-box projection (canary: large update)  flagged  0.0 s
4 targets in 2.0 s
`
	if buf.String() != want {
		t.Errorf("text:\n%s\nwant\n%s", buf.String(), want)
	}
	if err := r.Err(); err == nil || err.Error() != "audit: mutant: no noise MISSED" {
		t.Errorf("Err %v", err)
	}
	r.Results = r.Results[:1]
	if err := r.Err(); err != nil {
		t.Errorf("Err without failures: %v", err)
	}
}
