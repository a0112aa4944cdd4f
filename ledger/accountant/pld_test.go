package accountant

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

type pldReference struct {
	Rows []struct {
		Q, Z        float64
		Steps       int
		Delta       float64
		DP          float64  `json:"dp_epsilon"`
		RDP         float64  `json:"rdp_epsilon"`
		Exact       *float64 `json:"exact_epsilon"`
		Independent *float64 `json:"independent_epsilon"`
	} `json:"rows"`
	Profile []struct {
		Q, Z      float64
		Direction string
		Epsilon   float64
		Delta     float64
	} `json:"profile"`
}

func loadPLDReference(t *testing.T) pldReference {
	t.Helper()
	b, err := os.ReadFile("testdata/pld_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var r pldReference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) < 30 || len(r.Profile) == 0 {
		t.Fatalf("reference table has %d rows, %d profile points", len(r.Rows), len(r.Profile))
	}
	return r
}

// TestPLDAgainstReference checks the held-out table of
// testdata/gen_pld_reference.py: on every row the PLD accountant is within
// 0.5% of dp_accounting's pessimistic PLD estimate, and never below the
// exact epsilon (q = 1: the analytic Gaussian at z/sqrt(steps)) or the
// independent numerical integration (q < 1, one or two steps). Rows where
// the PLD exceeds the RDP accountant are reported, not failed (RDP is
// usually looser, not always).
func TestPLDAgainstReference(t *testing.T) {
	ref := loadPLDReference(t)
	worst := 0.0
	for _, r := range ref.Rows {
		ev := Event{Q: r.Q, Z: r.Z, Steps: r.Steps}
		g, err := PLD{}.Epsilon(r.Delta, ev)
		if err != nil {
			t.Errorf("%+v: %v", ev, err)
			continue
		}
		rel := (g.Epsilon - r.DP) / r.DP
		worst = math.Max(worst, math.Abs(rel))
		if math.Abs(rel) > 0.005 {
			t.Errorf("q=%v z=%v steps=%d delta=%g: pld %.6f, dp_accounting %.6f (%+.3f%%)", r.Q, r.Z, r.Steps, r.Delta, g.Epsilon, r.DP, 100*rel)
		}
		for name, v := range map[string]*float64{"exact": r.Exact, "independent": r.Independent} {
			if v != nil && g.Epsilon < *v {
				t.Errorf("q=%v z=%v steps=%d delta=%g: pld %.12g below the %s epsilon %.12g", r.Q, r.Z, r.Steps, r.Delta, g.Epsilon, name, *v)
			}
		}
		rdp, err := RDP{}.Epsilon(r.Delta, ev)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon > rdp.Epsilon {
			t.Logf("q=%v z=%v steps=%d delta=%g: pld %.6f above rdp %.6f", r.Q, r.Z, r.Steps, r.Delta, g.Epsilon, rdp.Epsilon)
		}
	}
	t.Logf("largest relative difference from dp_accounting: %.4f%%", 100*worst)
}

// TestPLDProfileAgainstMultiprecision: the one-step profile the
// discretisation starts from is accurate to profileTol relative against
// 50-digit values, the accuracy certify assumes.
func TestPLDProfileAgainstMultiprecision(t *testing.T) {
	for _, c := range loadPLDReference(t).Profile {
		dir := remove
		if c.Direction == "add" {
			dir = add
		}
		got := mechanism{q: c.Q, z: c.Z, dir: dir}.delta(c.Epsilon)
		if math.Abs(got-c.Delta) > profileTol(c.Delta)*c.Delta+1e-300 {
			t.Errorf("delta(q=%v, z=%v, %s, eps=%v) = %.17g, want %.17g (rel %.2g)", c.Q, c.Z, c.Direction, c.Epsilon, got, c.Delta, relErr(got, c.Delta))
		}
	}
}

// TestPLDNeverBelowExactGaussian: for plain Gaussian mechanisms the exact
// epsilon is known (Analytic); the PLD is never below it and close to it.
func TestPLDNeverBelowExactGaussian(t *testing.T) {
	for _, z := range []float64{0.3, 0.7, 1, 2, 5, 20} {
		for _, steps := range []int{1, 3, 100} {
			for _, d := range []float64{1e-3, 1e-5, 1e-8} {
				ev := Event{Q: 1, Z: z, Steps: steps}
				exact, err := Analytic{}.Epsilon(d, ev)
				if err != nil {
					t.Fatal(err)
				}
				g, err := PLD{}.Epsilon(d, ev)
				if err != nil {
					t.Fatal(err)
				}
				if g.Epsilon < exact.Epsilon || g.Epsilon > exact.Epsilon*1.001+1e-6 {
					t.Errorf("z=%v steps=%d delta=%g: pld %.9g, exact %.9g", z, steps, d, g.Epsilon, exact.Epsilon)
				}
			}
		}
	}
}

// TestPLDDiscretisationDominates: each discretised step is a probability
// distribution with E[e^-L] <= 1 whose profile is at or above the exact one
// everywhere, not only at the grid points (random epsilons in and beyond
// the grid).
func TestPLDDiscretisationDominates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range []mechanism{{0.01, 1, remove}, {0.01, 1, add}, {1, 0.8, remove}, {0.001, 0.5, add}, {0.3, 2, remove}, {0.3, 2, add}} {
		h := pldInterval([]Event{{Q: m.q, Z: m.z, Steps: 100}})
		d, err := discretise(m, h)
		if err != nil {
			t.Fatal(err)
		}
		checkDominates(t, m, d, rng)
	}
}

func checkDominates(t *testing.T, m mechanism, d *lossPMF, rng *rand.Rand) {
	t.Helper()
	var total, mom float64
	for i, v := range d.p {
		if v < 0 {
			t.Fatalf("%+v: negative mass %v", m, v)
		}
		total += v
		mom += v * math.Exp(-float64(d.lo+i)*d.h)
	}
	total += d.inf
	if math.Abs(total-1) > 1e-13 || mom > 1+1e-13 {
		t.Errorf("%+v: total mass %.17g, E[exp(-L)] %.17g", m, total, mom)
	}
	lo, hi := float64(d.lo)*d.h, float64(d.lo+len(d.p))*d.h
	for k := 0; k < 2000; k++ {
		eps := lo - 1 + (hi-lo+2)*rng.Float64()
		if k < 50 {
			eps = float64(d.lo+rng.IntN(len(d.p))) * d.h // grid points
		}
		exact := m.delta(eps)
		got := d.delta(eps) // includes err
		if got < exact*(1-1e-12) {
			t.Errorf("%+v: discretised delta(%.6g) = %.17g below the exact %.17g", m, eps, got, exact)
			return
		}
	}
}

// TestPLDCertifyCorrects: a discretisation whose profile was damaged (mass
// taken from the top bins, as rounding could) is corrected upward by
// certify, never accepted short.
func TestPLDCertifyCorrects(t *testing.T) {
	m := mechanism{0.01, 1, remove}
	h := 1e-3
	lo, hi := m.support(pldStepTail, pldFoldMass)
	iLo, iHi := math.Floor(lo/h), math.Ceil(hi/h)
	n := int(iHi - iLo)
	want, tol := make([]float64, n+1), make([]float64, n+1)
	for i := range want {
		want[i], tol[i] = m.deltaTol((iLo + float64(i)) * h)
	}
	d, err := discretise(m, h)
	if err != nil {
		t.Fatal(err)
	}
	// Damage: move 1e-9 of mass from high losses down to the lowest bin.
	p := make([]float64, n+1)
	copy(p[d.lo-int(iLo):], d.p)
	moved := 0.0
	for i := n; i > n/2 && moved < 1e-9; i-- {
		t := math.Min(p[i], 1e-9-moved)
		p[i] -= t
		moved += t
	}
	p[0] += moved
	bad := &lossPMF{h: h, lo: int(iLo), p: p, inf: d.inf}
	if short, _ := bad.shortfall(want, tol); short <= 0 {
		t.Fatal("the damage did not make the profile short")
	}
	if err := bad.certify(want, tol); err != nil {
		t.Fatal(err)
	}
	if bad.inf < d.inf+moved/2 {
		t.Errorf("certify moved %.3g to +infinity, want about the damaged %.3g", bad.inf-d.inf, moved)
	}
	checkDominates(t, m, bad, rand.New(rand.NewPCG(3, 4)))
}

// TestPLDComposition: steps compose like repeated events, composition
// only adds privacy loss, and mixed plain and subsampled events work.
func TestPLDComposition(t *testing.T) {
	acc := PLD{Interval: 1e-3}
	eps := func(events ...Event) float64 {
		t.Helper()
		g, err := acc.Epsilon(1e-5, events...)
		if err != nil {
			t.Fatal(err)
		}
		return g.Epsilon
	}
	a := Event{Q: 0.05, Z: 1.2, Steps: 6}
	split := eps(Event{Q: 0.05, Z: 1.2, Steps: 2}, Event{Q: 0.05, Z: 1.2, Steps: 4})
	if relErr(split, eps(a)) > 1e-6 {
		t.Errorf("6 steps %v, 2 + 4 steps %v", eps(a), split)
	}
	b := Event{Q: 1, Z: 4, Steps: 3}
	ab := eps(a, b)
	if ab <= eps(a) || ab <= eps(b) {
		t.Errorf("composition %v not above its parts %v, %v", ab, eps(a), eps(b))
	}
	// Plain Gaussians compose exactly: 4 x z=2 is one z=1.
	if relErr(eps(Event{Q: 1, Z: 2, Steps: 4}), eps(Gaussian(1))) > 1e-12 {
		t.Errorf("4 x z=2 differs from z=1")
	}
	// Monotone in the parameters.
	base := eps(Event{Q: 0.01, Z: 1.1, Steps: 300})
	for _, e := range []Event{{Q: 0.02, Z: 1.1, Steps: 300}, {Q: 0.01, Z: 1.0, Steps: 300}, {Q: 0.01, Z: 1.1, Steps: 400}} {
		if eps(e) <= base {
			t.Errorf("%+v: %v not above %v", e, eps(e), base)
		}
	}
}

// TestPLDDelta: delta(epsilon) and epsilon(delta) are consistent inverses
// on the same composed distribution.
func TestPLDDelta(t *testing.T) {
	ev := Event{Q: 0.01, Z: 1, Steps: 1000}
	for _, d := range []float64{1e-3, 1e-5, 1e-7} {
		g, err := PLD{}.Epsilon(d, ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PLD{}.Delta(g.Epsilon, ev)
		if err != nil {
			t.Fatal(err)
		}
		if got > d || got < d*0.999 {
			t.Errorf("delta(epsilon(%g) = %v) = %g", d, g.Epsilon, got)
		}
	}
	if d, err := (PLD{}).Delta(0, Gaussian(1)); err != nil || d < 0.38 || d > 0.39 {
		// Balle & Wang: delta(0) = 2 Phi(1/2) - 1 = 0.3829 at z = 1.
		t.Errorf("delta(0) at z=1: %v, %v", d, err)
	}
}

func TestPLDInvalid(t *testing.T) {
	for name, call := range map[string]func() error{
		"delta=0":   func() error { _, err := PLD{}.Epsilon(0, Gaussian(1)); return err },
		"no events": func() error { _, err := PLD{}.Epsilon(1e-5); return err },
		"q=0":       func() error { _, err := PLD{}.Epsilon(1e-5, Event{Q: 0, Z: 1, Steps: 1}); return err },
		"eps<0":     func() error { _, err := PLD{}.Delta(-1, Gaussian(1)); return err },
		"interval":  func() error { _, err := PLD{Interval: -1}.Epsilon(1e-5, Gaussian(1)); return err },
	} {
		if err := call(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
	// A delta below what the composition's rounding bound resolves is
	// refused rather than answered optimistically.
	if _, err := (PLD{}).Epsilon(1e-300, Event{Q: 0.01, Z: 1, Steps: 100}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("delta 1e-300: err %v, want ErrUnreachable", err)
	}
}

// TestFFTConvolve: the FFT convolution agrees with the direct one within
// its error bound, at awkward lengths.
func TestFFTConvolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := newFFTCache()
	for _, n := range []struct{ a, b int }{{100, 100}, {257, 1000}, {3001, 77}} {
		a, b := make([]float64, n.a), make([]float64, n.b)
		for i := range a {
			a[i] = rng.Float64() / float64(n.a)
		}
		for i := range b {
			b[i] = rng.Float64() / float64(n.b)
		}
		m := n.a + n.b - 1
		l := fastLen(m)
		got := c.convolve(a, b, l)[:m]
		want := directConvolve(a, b)
		var diff float64
		for i := range want {
			diff += math.Abs(got[i] - want[i])
		}
		if bound := fftErr(l, m, a, b, 0, 0); diff > bound {
			t.Errorf("%v: l1 difference %.3g above the bound %.3g", n, diff, bound)
		}
	}
	for _, n := range []int{1, 7, 1000, 1 << 20, 3 * 5 * 7 * 11} {
		f := fastLen(n)
		m, a, b, c5 := f, 0, 0, 0
		for m%2 == 0 {
			m, a = m/2, a+1
		}
		for m%3 == 0 {
			m, b = m/3, b+1
		}
		for m%5 == 0 {
			m, c5 = m/5, c5+1
		}
		if f < n || m != 1 || a/2+a%2+b+c5 > 13 || f > 2*n {
			t.Errorf("fastLen(%d) = %d", n, f)
		}
	}
}

func BenchmarkEpsilonPLD(b *testing.B) {
	b.ReportAllocs()
	for _, c := range []struct {
		name string
		e    Event
	}{
		{"q=0.01,z=1,T=10000", Event{Q: 0.01, Z: 1, Steps: 10000}},
		{"q=0.01,z=1,T=1000", Event{Q: 0.01, Z: 1, Steps: 1000}},
		{"q=0.001,z=0.8,T=10000", Event{Q: 0.001, Z: 0.8, Steps: 10000}},
		{"q=1,z=1,T=1", Event{Q: 1, Z: 1, Steps: 1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := (PLD{}).Epsilon(1e-5, c.e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPLDProfileLargeZ checks the per-point accuracy the discretisation
// assumes of the evaluated profile (its certified margin) against 50-digit
// values at z = 10, 20 and 50 (testdata/gen_pld_profile_large_z.py), where
// the evaluation loses digits to its z^2-scaled arguments and to the
// cancellation of its two terms.
func TestPLDProfileLargeZ(t *testing.T) {
	b, err := os.ReadFile("testdata/pld_profile_large_z.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Profile []struct {
			Q, Z      float64
			Direction string
			Epsilon   float64
			Delta     string
		} `json:"profile"`
	}
	if err := json.Unmarshal(b, &ref); err != nil || len(ref.Profile) < 100 {
		t.Fatalf("reference: %d points, %v", len(ref.Profile), err)
	}
	worst := 0.0
	for _, c := range ref.Profile {
		want, err := strconv.ParseFloat(c.Delta, 64)
		if err != nil {
			t.Fatal(err)
		}
		dir := remove
		if c.Direction == "add" {
			dir = add
		}
		m := mechanism{q: c.Q, z: c.Z, dir: dir}
		got, tol := m.deltaTol(c.Epsilon)
		if e := relErr(got, want); e > tol {
			t.Errorf("delta(q=%v, z=%v, %s, eps=%v) = %.17g, want %.17g: relative error %.2g above the assumed %.2g", c.Q, c.Z, c.Direction, c.Epsilon, got, want, e, tol)
		}
		worst = max(worst, relErr(got, want)/tol)
	}
	t.Logf("largest error / assumed tolerance: %.3g", worst)
}

// TestPLDLargeZAgainstExactGaussian: one Gaussian mechanism at z = 10, 20
// and 50, whose exact epsilon at delta (Balle & Wang 2018, Theorem 8) is
// computed in 60 digits by testdata/gen_pld_profile_large_z.py: the PLD
// accountant is never below it and within 0.1% of it; and the pessimistic
// discretisation of the step's profile holds at z = 50 (it dominates the
// exact profile between and beyond the grid points).
func TestPLDLargeZAgainstExactGaussian(t *testing.T) {
	b, err := os.ReadFile("testdata/pld_profile_large_z.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Exact []struct {
			Z, Delta float64
			Epsilon  string
		} `json:"exact_gaussian"`
	}
	if err := json.Unmarshal(b, &ref); err != nil || len(ref.Exact) < 9 {
		t.Fatalf("reference: %d values, %v", len(ref.Exact), err)
	}
	for _, c := range ref.Exact {
		exact, err := strconv.ParseFloat(c.Epsilon, 64)
		if err != nil {
			t.Fatal(err)
		}
		g, err := PLD{}.Epsilon(c.Delta, Event{Q: 1, Z: c.Z, Steps: 1})
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon < exact || g.Epsilon > exact*1.001 {
			t.Errorf("z = %v, delta = %g: pld %.12g, exact %.12g (ratio %.6g)", c.Z, c.Delta, g.Epsilon, exact, g.Epsilon/exact)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, m := range []mechanism{{1, 50, remove}, {1, 50, add}, {0.01, 50, remove}, {1, 10, add}} {
		h := pldInterval([]Event{{Q: m.q, Z: m.z, Steps: 1}})
		d, err := discretise(m, h)
		if err != nil {
			t.Fatal(err)
		}
		checkDominates(t, m, d, rng)
	}
}
