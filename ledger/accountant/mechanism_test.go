package accountant

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// flag names a configuration field as a command line does.
func flag(f string) string { return "--" + strings.ToLower(f) }

func TestMechanismAccountant(t *testing.T) {
	cases := []struct {
		name string
		m    Mechanism
		want Method
		err  string // rendered with flag names
	}{
		{"default plain", Mechanism{Q: 1, Steps: 1}, MethodAnalytic, ""},
		{"default composed", Mechanism{Q: 1, Steps: 1, Composed: true}, MethodRDP, ""},
		{"analytic composes plain Gaussians", Mechanism{Method: "analytic", Q: 1, Steps: 10}, MethodAnalytic, ""},
		{"zhao", Mechanism{Method: " Zhao ", Q: 1, Steps: 1}, MethodZhao, ""},
		{"rdp", Mechanism{Method: "rdp", Q: 0.1, Steps: 5}, MethodRDP, ""},
		{"pld", Mechanism{Method: "pld", Q: 0.01, Steps: 100}, MethodPLD, ""},
		{"pld plain", Mechanism{Method: "PLD", Q: 1, Steps: 1}, MethodPLD, ""},
		{"unknown", Mechanism{Method: "prv", Q: 1, Steps: 1}, "", `--method: accountant: invalid parameter: method "prv", want analytic, rdp, pld, classic or zhao`},
		{"analytic subsampled", Mechanism{Method: "analytic", Q: 0.5, Steps: 1}, "", "--method analytic is exact only without subsampling (--q 1); use --method pld or rdp for q = 0.5"},
		{"default with q < 1 but not composed", Mechanism{Q: 0.5, Steps: 1}, "", "--method analytic is exact only without subsampling"},
		{"classic composed", Mechanism{Method: "classic", Q: 1, Steps: 2}, "", "--method classic covers one Gaussian mechanism (--q 1 --steps 1); use analytic, pld or rdp"},
		{"zhao subsampled", Mechanism{Method: "zhao", Q: 0.5, Steps: 1}, "", "--method zhao covers one Gaussian mechanism"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acc, err := c.m.Accountant()
			if c.err == "" {
				if err != nil || acc.Method() != c.want {
					t.Fatalf("accountant %v, %v; want %s", acc, err, c.want)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(ce.Render(flag), c.err) {
				t.Fatalf("error %v, want a ConfigError rendering as %q", err, c.err)
			}
			if strings.ContainsAny(err.Error(), "{}") {
				t.Errorf("Error() %q leaves a placeholder", err.Error())
			}
		})
	}
}

func TestComputeEpsilon(t *testing.T) {
	plain, _ := Analytic{}.Epsilon(1e-5, Gaussian(1))
	sub, _ := RDP{}.Epsilon(1e-5, Event{Q: 0.01, Z: 1.1, Steps: 1000})
	cases := []struct {
		name string
		c    EpsilonConfig
		want EpsilonResult
		err  string
	}{
		{"analytic", EpsilonConfig{Mechanism{Q: 1, Steps: 1}, 1, 1e-5}, EpsilonResult{Epsilon: plain.Epsilon, Delta: 1e-5, Z: 1, Q: 1, Steps: 1, Method: MethodAnalytic}, ""},
		{"rdp", EpsilonConfig{Mechanism{Q: 0.01, Steps: 1000, Composed: true}, 1.1, 1e-5},
			EpsilonResult{Epsilon: sub.Epsilon, Delta: 1e-5, Z: 1.1, Q: 0.01, Steps: 1000, Method: MethodRDP, Order: sub.Order}, ""},
		{"z zero", EpsilonConfig{Mechanism{Q: 1, Steps: 1}, 0, 1e-5}, EpsilonResult{}, "accountant: invalid parameter: noise multiplier z = 0"},
		// q is checked before z, as Event.Validate does.
		{"q and z", EpsilonConfig{Mechanism{Q: 1.5, Steps: 1, Composed: true}, 0, 1e-5}, EpsilonResult{}, "accountant: invalid parameter: sampling rate q = 1.5"},
		{"steps", EpsilonConfig{Mechanism{Q: 1, Steps: 0, Composed: true}, 1, 1e-5}, EpsilonResult{}, "accountant: invalid parameter: steps = 0"},
		{"delta", EpsilonConfig{Mechanism{Q: 1, Steps: 1}, 1, 1}, EpsilonResult{}, "accountant: invalid parameter: delta = 1"},
		{"classic out of range", EpsilonConfig{Mechanism{Method: "classic", Q: 1, Steps: 1}, 1, 1e-5}, EpsilonResult{}, "accountant: outside the formula's validity range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ComputeEpsilon(c.c)
			if c.err != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("error %v, want a ConfigError %q", err, c.err)
				}
				if verr := c.c.Validate(); c.name != "classic out of range" && (verr == nil || verr.Error() != err.Error()) {
					t.Errorf("Validate %v, ComputeEpsilon %v", verr, err)
				}
				return
			}
			if err != nil || r != c.want {
				t.Fatalf("result %+v, %v; want %+v", r, err, c.want)
			}
		})
	}
}

func TestCalibrateNoise(t *testing.T) {
	r, err := CalibrateNoise(NoiseConfig{Mechanism{Q: 1, Steps: 1}, 1, 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	// The achieved epsilon is at or below the target, and 1e-6 less noise
	// (relative) would miss it.
	below, _ := GaussianEpsilon(r.Z*(1-2e-6), 1e-5)
	if r.Method != MethodAnalytic || !(r.Achieved <= 1) || !(below > 1) || r.Epsilon != 1 || r.Delta != 1e-5 || r.Q != 1 || r.Steps != 1 {
		t.Errorf("result %+v (epsilon with less noise %v)", r, below)
	}
	for _, c := range []struct {
		c   NoiseConfig
		err string
	}{
		{NoiseConfig{Mechanism{Q: 1, Steps: 1}, 0, 1e-5}, "accountant: invalid parameter: epsilon = 0"},
		{NoiseConfig{Mechanism{Q: 1, Steps: 1}, 1, 0}, "accountant: invalid parameter: delta = 0"},
		{NoiseConfig{Mechanism{Q: 2, Steps: 1, Composed: true}, 1, 1e-5}, "event 0: accountant: invalid parameter: sampling rate q = 2"},
		{NoiseConfig{Mechanism{Method: "analytic", Q: 0.1, Steps: 1}, 1, 1e-5}, "Method analytic is exact only without subsampling (Q 1)"},
		{NoiseConfig{Mechanism{Q: 1, Steps: 1}, 1e7, 1e-5}, "accountant: target unreachable"},
	} {
		_, err := CalibrateNoise(c.c)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("%+v: error %v, want a ConfigError %q", c.c, err, c.err)
		}
	}
}

func TestResultText(t *testing.T) {
	var buf bytes.Buffer
	EpsilonResult{Epsilon: 4.377178, Delta: 1e-5, Z: 1, Q: 1, Steps: 1, Method: MethodAnalytic}.WriteText(&buf)
	EpsilonResult{Epsilon: 1.2, Delta: 1e-5, Z: 1.1, Q: 0.01, Steps: 1000, Method: MethodRDP, Order: 12.5}.WriteText(&buf)
	NoiseResult{Z: 4.2216, Epsilon: 1, Achieved: 0.99999, Delta: 1e-5, Q: 1, Steps: 1, Method: MethodAnalytic}.WriteText(&buf)
	want := `epsilon = 4.37718 at delta = 1e-05  (z = 1, q = 1, steps = 1, method analytic)
epsilon = 1.2 at delta = 1e-05  (z = 1.1, q = 0.01, steps = 1000, method rdp, optimal order 12.5)
z = 4.2216  (epsilon 0.99999 <= 1 at delta = 1e-05, q = 1, steps = 1, method analytic)
`
	if buf.String() != want {
		t.Errorf("text:\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestSVTReport(t *testing.T) {
	r, err := NewSVTReport(30, 1e-3, 100, 10, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := SVTSplit(30, 1e-3, 100, 10, 0.1)
	if r.SVTParams != p || !r.Solved || r.Eps1 != 30 || r.Delta1 != 1e-3 {
		t.Fatalf("report %+v", r)
	}
	// The JSON is the split alone.
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(p)
	if string(a) != string(b) {
		t.Errorf("JSON %s, want %s", a, b)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "<= eps1 30 at delta1 0.001 (eps' solved: the paper's closed form would compose above eps1)\n") || strings.Count(buf.String(), "\n") != 3 {
		t.Errorf("text:\n%s", buf.String())
	}
	if _, err := NewSVTReport(30, 1e-3, 0, 10, 0.1); !errors.Is(err, ErrInvalid) {
		t.Errorf("T = 0: %v", err)
	}
	if c, err := (SVTConfig{Eps1: 30, Delta1: 1e-3, Queries: 100, MaxLen: 10, PMin: 0.1}).Report(); err != nil || c != r {
		t.Errorf("SVTConfig.Report = %+v, %v, want %+v", c, err, r)
	}
}
