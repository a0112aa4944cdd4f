package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// runCLI runs the command line in-process and returns exit code, stdout and
// stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--log-level", "disabled"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		code    int
		errText string
	}{
		{"help", []string{"--help"}, 0, ""},
		{"no args", nil, 0, ""},
		{"unknown command", []string{"nope"}, 2, "unknown"},
		{"unknown subcommand", []string{"accountant", "nope"}, 2, "unknown subcommand"},
		{"missing subcommand", []string{"accountant"}, 2, "missing subcommand"},
		{"unknown flag", []string{"accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--bogus"}, 2, "unknown flag"},
		{"required flag", []string{"accountant", "epsilon", "--delta", "1e-5"}, 2, "required flag"},
		{"bad number", []string{"accountant", "epsilon", "--z", "abc", "--delta", "1e-5"}, 2, "invalid argument"},
		{"z zero", []string{"accountant", "epsilon", "--z", "0", "--delta", "1e-5"}, 2, "noise multiplier z = 0"},
		{"z NaN", []string{"accountant", "epsilon", "--z", "NaN", "--delta", "1e-5"}, 2, "noise multiplier z = NaN"},
		{"delta one", []string{"accountant", "epsilon", "--z", "1", "--delta", "1"}, 2, "delta = 1"},
		{"q outside", []string{"accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--q", "1.5"}, 2, "sampling rate q = 1.5"},
		{"steps zero", []string{"accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--steps", "0"}, 2, "steps = 0"},
		{"classic out of range", []string{"accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--method", "classic"}, 2, "validity range"},
		{"analytic subsampled", []string{"accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--q", "0.1", "--method", "analytic"}, 2, "--method pld or rdp"},
		{"unknown method", []string{"accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--method", "prv"}, 2, "method"},
		{"bad log level", []string{"--log-level", "loud", "accountant", "epsilon", "--z", "1", "--delta", "1e-5"}, 2, "--log-level"},
		{"positional", []string{"accountant", "epsilon", "x", "--z", "1", "--delta", "1e-5"}, 2, "unexpected argument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, stderr)
			}
			if !strings.Contains(stderr, c.errText) {
				t.Errorf("stderr %q lacks %q", stderr, c.errText)
			}
			if c.code != 0 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("error is not one line: %q", stderr)
			}
		})
	}
}

func TestAccountantEpsilonJSON(t *testing.T) {
	code, out, stderr := runCLI(t, "accountant", "epsilon", "--z", "1.1", "--delta", "1e-5", "--q", "0.01", "--steps", "1000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"epsilon", "delta", "z", "q", "steps", "method", "order"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out)
		}
	}
	if r["method"] != "rdp" {
		t.Errorf("method %v, want rdp", r["method"])
	}
	// Default without --q/--steps is the analytic mechanism.
	_, out, _ = runCLI(t, "accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--json")
	var g struct {
		Epsilon float64
		Method  string
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil || g.Method != "analytic" || g.Epsilon < 4.37 || g.Epsilon > 4.39 {
		t.Errorf("analytic default: %+v %v", g, err)
	}
}

// TestAccountantPLD: --method pld works for epsilon and noise, reproduces
// the figures (q = 0.01, z = 1, delta 1e-5: about 1.83 after 1,000
// steps and 6.19 after 10,000, vs RDP 2.10 and 6.71) and prints its
// discretisation interval.
func TestAccountantPLD(t *testing.T) {
	for _, c := range []struct {
		steps    string
		lo, hi   float64
		rdpAbove float64
	}{{"1000", 1.828, 1.832, 2.1}, {"10000", 6.187, 6.22, 6.7}} {
		code, out, stderr := runCLI(t, "accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--q", "0.01", "--steps", c.steps, "--method", "pld", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var r struct {
			Epsilon, Interval float64
			Method            string
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Method != "pld" || r.Epsilon < c.lo || r.Epsilon > c.hi || !(r.Interval > 0) {
			t.Errorf("%s steps: %+v %v", c.steps, r, err)
		}
		_, out, _ = runCLI(t, "accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--q", "0.01", "--steps", c.steps, "--method", "rdp", "--json")
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Epsilon < c.rdpAbove {
			t.Errorf("%s steps rdp: %+v %v", c.steps, r, err)
		}
	}
	code, out, stderr := runCLI(t, "accountant", "epsilon", "--z", "1", "--delta", "1e-5", "--q", "0.01", "--steps", "100", "--method", "pld")
	if code != 0 || !strings.Contains(out, "method pld, discretisation interval") {
		t.Errorf("text: exit %d %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "accountant", "noise", "--epsilon", "2", "--delta", "1e-5", "--q", "0.01", "--steps", "1000", "--method", "pld", "--json")
	if code != 0 {
		t.Fatalf("noise: exit %d: %s", code, stderr)
	}
	var n struct {
		Z        float64
		Achieved float64 `json:"achieved_epsilon"`
		Method   string
	}
	if err := json.Unmarshal([]byte(out), &n); err != nil || n.Method != "pld" || n.Achieved > 2 || n.Achieved < 1.99 || n.Z > 1 || n.Z < 0.85 {
		t.Errorf("noise: %+v %v", n, err)
	}
}

func TestAccountantNoiseJSON(t *testing.T) {
	code, out, stderr := runCLI(t, "accountant", "noise", "--epsilon", "1", "--delta", "1e-5", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Z        float64
		Achieved float64 `json:"achieved_epsilon"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// Balle & Wang 2018: about 3.73 for (1, 1e-5).
	if r.Z < 3.72 || r.Z > 3.74 || r.Achieved > 1 {
		t.Errorf("got %+v", r)
	}
}

func TestAccountantText(t *testing.T) {
	code, out, _ := runCLI(t, "accountant", "svt", "--epsilon", "7.5", "--delta", "9e-4", "--queries", "50", "--max-len", "500", "--pmin", "0.02")
	if code != 0 || !strings.Contains(out, "theta = ") {
		t.Errorf("svt: exit %d, %q", code, out)
	}
	code, out, _ = runCLI(t, "accountant", "epsilon", "--z", "1", "--delta", "1e-5")
	if code != 0 || !strings.HasPrefix(out, "epsilon = 4.377") {
		t.Errorf("epsilon text: exit %d, %q", code, out)
	}
}
