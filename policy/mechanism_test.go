package policy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// validFor returns a DPConfig in mode dp that the kind m accepts: its
// horizon or band set as it needs.
func validFor(t *testing.T, n Noise, m Mechanism) DPConfig {
	t.Helper()
	c := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 4, PolicyClipShare: 0.5, Noise: n}
	if m.Horizon() {
		c.Horizon = 16
	}
	if len(m.CheckParams(c)) > 0 {
		c.Band = 4 // a kind with bands (bandmf)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("%v: no valid configuration found: %v", n, err)
	}
	return c
}

// TestMechanismContract checks every registered noise kind against what
// the Aggregator, the agent and dprl train rely on, so that a new kind
// (one file) is held to it: its name parses back; one release is the
// Gaussian mechanism of multiplier z (window sensitivity 1, factor >= 1);
// windows of m releases have sensitivity between 1 and m (the triangle
// inequality) and exactly sqrt(m) for fresh noise; a release without noise
// returns the mean; an online kind writes a ledger entry and states a
// user's sensitivity of sqrt(k) under its separation; a kind the agent
// cannot run refuses both.
func TestMechanismContract(t *testing.T) {
	if len(kinds()) < 4 {
		t.Fatalf("%d kinds registered, want at least independent, tree, sqrt and bandmf", len(kinds()))
	}
	for _, n := range kinds() {
		m, err := n.Mechanism()
		if err != nil {
			t.Fatal(err)
		}
		t.Run(n.String(), func(t *testing.T) {
			if back, err := ParseNoise(m.Name()); err != nil || back != n {
				t.Fatalf("ParseNoise(%q) = %v, %v", m.Name(), back, err)
			}
			c := validFor(t, n, m)
			if f := m.Factor(c); !(f >= 1) || math.IsInf(f, 0) {
				t.Errorf("factor %v, want finite and >= 1 (a column of the factor has the unit first entry)", f)
			}
			if rows := m.GridRows(c); rows < 1 {
				t.Errorf("grid rows %d", rows)
			}
			for _, mm := range []int{1, 2, 5, 16} {
				rho, err := c.WindowSensitivity(mm, 64)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case mm == 1 && rho != 1:
					t.Errorf("rho(1) = %v, want 1", rho)
				case !(rho >= 1 && rho <= float64(mm)*(1+1e-6)):
					t.Errorf("rho(%d) = %v, want in [1, %d]", mm, rho, mm)
				case m.Fresh() && math.Abs(rho-math.Sqrt(float64(mm))) > 1e-12:
					t.Errorf("fresh noise: rho(%d) = %v, want sqrt(m)", mm, rho)
				}
			}
			// Without noise a release is the batch's mean, whatever the kind.
			clip := c
			clip.Mode, clip.NoiseMultiplier = ModeClipOnly, 0
			st, err := m.NewNoise(clip, 3, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			for r := range 5 {
				x := []float64{float64(r), -1, 0.5}
				want := append([]float64(nil), x...)
				out := make([]float64, 3)
				st.Release(x, out)
				st.Commit()
				for i := range out {
					if math.Abs(out[i]-want[i]) > 1e-12 {
						t.Fatalf("noiseless release %d: %v, want %v", r, out, want)
					}
				}
			}
			// With noise a release differs from the mean.
			st, err = m.NewNoise(c, 3, 1, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float64, 3)
			st.Release([]float64{0, 0, 0}, out)
			if out[0] == 0 && out[1] == 0 && out[2] == 0 {
				t.Errorf("a noised release of 0 is exactly 0")
			}
			e, errE := m.Entry(c, 3, 1)
			rho, errU := m.UserSensitivity(c, 3)
			if !m.Online() {
				if errE == nil || errU == nil {
					t.Errorf("a kind the agent cannot run wrote an entry (%v) or a user sensitivity (%v)", errE, errU)
				}
				return
			}
			if errE != nil || errU != nil {
				t.Fatalf("entry: %v; user sensitivity: %v", errE, errU)
			}
			if e.Text == "" || !strings.Contains(strings.ToLower(e.Text), "noise") {
				t.Errorf("entry text %q", e.Text)
			}
			if m.Fresh() != (e.Correlation == nil) {
				t.Errorf("fresh %v with correlation %+v", m.Fresh(), e.Correlation)
			}
			if e.Correlation != nil && e.Correlation.MinSeparation != m.Separation(c) {
				t.Errorf("correlation separation %d, the kind's %d", e.Correlation.MinSeparation, m.Separation(c))
			}
			if math.Abs(rho-math.Sqrt(3)) > 1e-12 {
				t.Errorf("user sensitivity of 3 releases %v, want sqrt(3)", rho)
			}
		})
	}
	if _, err := Noise(99).Mechanism(); err == nil {
		t.Error("an unregistered kind has a mechanism")
	}
	if OnlineNoises() != "independent or bandmf" {
		t.Errorf("online kinds %q", OnlineNoises())
	}
}
