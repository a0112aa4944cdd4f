package audit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Claim is the (Epsilon, Delta)-DP guarantee a mechanism prints beside its
// release, for the neighbouring relation its canaries instantiate.
type Claim struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Mu, when positive, is the Gaussian-DP guarantee the mechanism's
	// accounting rests on for one canary's participation (Dong, Roth & Su
	// 2022, "Gaussian differential privacy"): 1 / z for one Gaussian
	// mechanism of multiplier z, sqrt(k) / z for k of them at q = 1. The
	// accountant's (Epsilon, Delta) is a point of that curve. With Mu the
	// audit also bounds mu from below (MuLowerBound), which has the power
	// to refute a 2x error in the noise at a few thousand releases, where
	// the (epsilon, delta) bound at a small delta has not.
	Mu float64 `json:"mu,omitempty"`
}

// Canary is one pair of neighbouring inputs of a mechanism: D, which holds the
// canary, and D', which does not.
type Canary struct {
	// Name identifies the canary in reports ("large update", "NaN update").
	Name string
	// Release runs the mechanism once on D (in = true) or D' (in = false)
	// and returns its release, drawing every random bit from rng. The
	// auditor copies the slice, so Release may reuse it.
	Release func(in bool, rng *rand.Rand) ([]float64, error)
	// Lattice, when not nil, enables the floating-point lattice test: it
	// holds what a white-box auditor knows of the first coordinates of the
	// release (see Lattice).
	Lattice *Lattice
	// Shift, when not nil, enables the white-box projection test: the
	// un-noised release on D minus that on D' (computed by the mechanism's
	// own code without noise) is the direction the release is projected
	// on. The projection test's direction, the difference of the
	// calibration half's means, carries the noise of those means, which
	// costs power when the release has many coordinates; the white-box
	// one does not. A Shift that is zero or not finite everywhere is
	// ignored (the mechanism's noiseless run saw no difference).
	Shift []float64
}

// Lattice is the white-box knowledge the floating-point lattice test uses:
// the release's first len(Out) coordinates are meant to be the Gaussian
// mechanism's output v + N(0, Sigma^2) per coordinate, where v is Out on D'
// and In on D (the un-noised values, computed exactly as the mechanism
// computes them). Out and In have the same length.
type Lattice struct {
	Sigma   float64
	Out, In []float64
}

// Target is one mechanism under audit: the guarantee it claims and the
// canaries it is run with. Every canary must be a pair of inputs that are
// neighbours under the relation the claim is made for.
type Target struct {
	Name     string
	Claim    Claim
	Canaries []Canary
}

// Options configure an audit.
type Options struct {
	// Runs is the number of releases on each side (D and D') per canary,
	// >= 4: half calibrate the tests, half evaluate them.
	Runs int
	// Confidence is the probability, in (0, 1), with which the reported
	// lower bound holds (jointly over every test and canary of the target).
	Confidence float64
	// Progress, if set, is called after every pair of releases with the
	// pairs done and the total (read only; for progress reports).
	Progress func(done, total int)
}

// The tests the auditor runs on every canary.
const (
	// TestProjection: the release projected on the difference of the mean
	// releases of D and D' on the calibration half.
	TestProjection = "projection"
	// TestNonFinite: whether any coordinate of the release is NaN or
	// infinite.
	TestNonFinite = "non-finite"
	// TestLattice: which side's un-noised value the release fits on the
	// lattice of Go's ziggurat normal sampler (canaries with a Lattice).
	TestLattice = "float-lattice"
	// TestShift: the release projected on the canary's un-noised shift
	// (canaries with a Shift).
	TestShift = "white-box projection"
)

// TestResult is one test on one canary: the decision rule chosen on the
// calibration half and its errors on the held-out half.
type TestResult struct {
	Canary string `json:"canary"`
	Test   string `json:"test"`
	// Criterion is what the rule was fitted to maximise on the
	// calibration half: CriterionDP (the epsilon lower bound) or
	// CriterionGDP (the mu lower bound).
	Criterion string `json:"criterion"`
	// The rule says "D" (canary in) iff score >= Threshold (Above) or
	// score <= Threshold (!Above).
	Threshold float64 `json:"threshold"`
	Above     bool    `json:"above"`
	// FP counts held-out releases of D' the rule calls D, out of NOut; FN
	// counts releases of D it calls D', out of NIn.
	FP   int `json:"false_positives"`
	NOut int `json:"n_out"`
	FN   int `json:"false_negatives"`
	NIn  int `json:"n_in"`
	// FPRUpper and FNRUpper are the one-sided Clopper-Pearson upper bounds
	// on the two error rates, each at level Alpha.
	FPRUpper float64 `json:"fpr_upper"`
	FNRUpper float64 `json:"fnr_upper"`
	Alpha    float64 `json:"alpha"`
	// EpsilonLB is the lower bound on epsilon the bounds imply (>= 0).
	EpsilonLB float64 `json:"epsilon_lb"`
	// MuLB is the lower bound on mu they imply if the mechanism is
	// mu-Gaussian-DP (MuLowerBound; >= 0).
	MuLB float64 `json:"mu_lb"`
}

// The criteria a test's rule is fitted to.
const (
	// CriterionDP: the rule maximises the (epsilon, delta) lower bound
	// (EpsilonLowerBound), which assumes nothing of the mechanism.
	CriterionDP = "dp"
	// CriterionGDP: the rule maximises the Gaussian-DP lower bound
	// (MuLowerBound), for targets whose claim has a Mu.
	CriterionGDP = "gdp"
)

// Report is the audit of one target.
type Report struct {
	Target string `json:"target"`
	Claim  Claim  `json:"claim"`
	// EpsilonLB is the largest lower bound over the tests and canaries;
	// with probability at least Confidence the mechanism is not
	// (epsilon, Claim.Delta)-DP for any epsilon below it.
	EpsilonLB float64 `json:"epsilon_lb"`
	// Best names the canary and test that achieved EpsilonLB ("" when it
	// is 0).
	Best string `json:"best"`
	// MuLB is the largest Gaussian-DP lower bound over the tests and
	// canaries (only when Claim.Mu > 0): with probability at least
	// Confidence the mechanism is not mu-GDP for any mu below it.
	// GDPEpsilonLB is the epsilon at Claim.Delta of MuLB-GDP, the
	// (epsilon, delta) the claim's own Gaussian accounting would print at
	// that mu; BestGDP names the canary and test of MuLB.
	MuLB         float64 `json:"mu_lb,omitempty"`
	GDPEpsilonLB float64 `json:"gdp_epsilon_lb,omitempty"`
	BestGDP      string  `json:"best_gdp,omitempty"`
	Confidence   float64 `json:"confidence"`
	Runs         int     `json:"runs"`
	// Violation reports EpsilonLB > Claim.Epsilon, or MuLB > Claim.Mu for
	// a claim with a Mu: the claim (or the Gaussian accounting it rests
	// on) is false, with probability at least Confidence.
	Violation bool         `json:"violation"`
	Tests     []TestResult `json:"tests"`
}

// Run audits a target: for every canary it releases Runs times on D and on
// D', splits the releases into a calibration half and an evaluation half,
// fits every test's decision rule on the first and counts its errors on the
// second, and turns the counts into a lower bound on epsilon at the claimed
// delta (package documentation). rng drives every release.
func Run(t Target, opt Options, rng *rand.Rand) (Report, error) {
	if err := validate(t, opt); err != nil {
		return Report{}, err
	}
	criteria := []string{CriterionDP}
	if t.Claim.Mu > 0 {
		criteria = append(criteria, CriterionGDP)
	}
	nTests := 0
	for _, c := range t.Canaries {
		nTests += 2
		if c.Lattice != nil {
			nTests++
		}
		if hasShift(c) {
			nTests++
		}
	}
	nTests *= len(criteria)
	// Bonferroni: two one-sided bounds (FPR and FNR) per test and
	// criterion, all of them holding together with probability >=
	// Confidence.
	alpha := (1 - opt.Confidence) / float64(2*nTests)
	rep := Report{Target: t.Name, Claim: t.Claim, Confidence: opt.Confidence, Runs: opt.Runs}
	cp := newCPTable(alpha)
	total := opt.Runs * len(t.Canaries)
	done := 0
	lat := NewZigguratLattice()
	for _, c := range t.Canaries {
		in, out := make([][]float64, opt.Runs), make([][]float64, opt.Runs)
		for i := range opt.Runs {
			v, err := c.Release(true, rng)
			if err != nil {
				return Report{}, fmt.Errorf("audit: %s, canary %s, with the canary: %w", t.Name, c.Name, err)
			}
			in[i] = slices.Clone(v)
			if v, err = c.Release(false, rng); err != nil {
				return Report{}, fmt.Errorf("audit: %s, canary %s, without the canary: %w", t.Name, c.Name, err)
			}
			out[i] = slices.Clone(v)
			done++
			if opt.Progress != nil {
				opt.Progress(done, total)
			}
		}
		h := opt.Runs / 2
		type test struct {
			name  string
			score func([]float64) float64
		}
		tests := []test{
			{TestProjection, projection(in[:h], out[:h])},
			{TestNonFinite, nonFinite},
		}
		if c.Lattice != nil {
			tests = append(tests, test{TestLattice, lat.score(c.Lattice)})
		}
		if hasShift(c) {
			tests = append(tests, test{TestShift, projectOn(c.Shift)})
		}
		for _, ts := range tests {
			for _, crit := range criteria {
				r, err := evaluate(ts.score, in, out, h, t.Claim.Delta, crit, cp)
				if err != nil {
					return Report{}, fmt.Errorf("audit: %s, canary %s, test %s: %w", t.Name, c.Name, ts.name, err)
				}
				r.Canary, r.Test = c.Name, ts.name
				rep.Tests = append(rep.Tests, r)
				if r.EpsilonLB > rep.EpsilonLB {
					rep.EpsilonLB, rep.Best = r.EpsilonLB, fmt.Sprintf("%s (canary: %s)", ts.name, c.Name)
				}
				if t.Claim.Mu > 0 && r.MuLB > rep.MuLB {
					rep.MuLB, rep.BestGDP = r.MuLB, fmt.Sprintf("%s (canary: %s)", ts.name, c.Name)
				}
			}
		}
	}
	rep.GDPEpsilonLB = GDPEpsilon(rep.MuLB, t.Claim.Delta)
	rep.Violation = rep.EpsilonLB > t.Claim.Epsilon || (t.Claim.Mu > 0 && rep.MuLB > t.Claim.Mu)
	return rep, nil
}

func validate(t Target, opt Options) error {
	var errs []error
	if opt.Runs < 4 {
		errs = append(errs, fmt.Errorf("audit: %d runs per side, want >= 4", opt.Runs))
	}
	if !(opt.Confidence > 0 && opt.Confidence < 1) {
		errs = append(errs, fmt.Errorf("audit: confidence %v, want in (0, 1)", opt.Confidence))
	}
	if !(t.Claim.Epsilon >= 0) || math.IsInf(t.Claim.Epsilon, 0) || !(t.Claim.Delta >= 0 && t.Claim.Delta < 1) {
		errs = append(errs, fmt.Errorf("audit: %s claims (%v, %v)-DP, want epsilon >= 0 finite and 0 <= delta < 1", t.Name, t.Claim.Epsilon, t.Claim.Delta))
	}
	if !(t.Claim.Mu >= 0) || math.IsInf(t.Claim.Mu, 0) {
		errs = append(errs, fmt.Errorf("audit: %s claims mu = %v, want finite and >= 0 (0: no Gaussian-DP claim)", t.Name, t.Claim.Mu))
	}
	if len(t.Canaries) == 0 {
		errs = append(errs, fmt.Errorf("audit: %s has no canary", t.Name))
	}
	for _, c := range t.Canaries {
		if c.Release == nil {
			errs = append(errs, fmt.Errorf("audit: %s, canary %s: no Release", t.Name, c.Name))
		}
		if l := c.Lattice; l != nil && (len(l.In) != len(l.Out) || !(l.Sigma > 0)) {
			errs = append(errs, fmt.Errorf("audit: %s, canary %s: lattice of %d and %d values, sigma %v", t.Name, c.Name, len(l.Out), len(l.In), l.Sigma))
		}
	}
	return errors.Join(errs...)
}

// EpsilonLowerBound returns the lower bound on epsilon that a test with
// false positive rate at most fpr and false negative rate at most fnr
// implies at delta: an (epsilon, delta)-DP mechanism has, for every test,
// fpr + e^epsilon fnr >= 1 - delta and fnr + e^epsilon fpr >= 1 - delta
// (Kairouz, Oh & Viswanath 2015, "The composition theorem for differential
// privacy", Theorem 2.1 (the hypothesis-testing characterisation); used for
// auditing by Jagielski, Ullman & Oprea 2020, "Auditing differentially
// private machine learning: how private is private SGD?", and Nasr et al.
// 2021, "Adversary instantiation: lower bounds for differentially private
// machine learning"), so
//
//	epsilon >= max(log((1 - delta - fnr) / fpr), log((1 - delta - fpr) / fnr)).
//
// It returns 0 when neither ratio exceeds 1.
func EpsilonLowerBound(fpr, fnr, delta float64) float64 {
	eps := 0.0
	if a := 1 - delta - fnr; a > 0 && fpr >= 0 {
		eps = math.Max(eps, math.Log(a/fpr))
	}
	if a := 1 - delta - fpr; a > 0 && fnr >= 0 {
		eps = math.Max(eps, math.Log(a/fnr))
	}
	return eps
}

// evaluate fits the rule of one score on the calibration releases
// (in[:h], out[:h]) to the criterion and measures it on the rest.
func evaluate(score func([]float64) float64, in, out [][]float64, h int, delta float64, criterion string, cp *cpTable) (TestResult, error) {
	s1, s0 := scores(score, in), scores(score, out)
	objective := func(fpU, fnU float64) float64 { return EpsilonLowerBound(fpU, fnU, delta) }
	if criterion == CriterionGDP {
		objective = MuLowerBound
	}
	thr, above, err := fitRule(s1[:h], s0[:h], objective, cp)
	if err != nil {
		return TestResult{}, err
	}
	says := func(s float64) bool {
		if above {
			return s >= thr
		}
		return s <= thr
	}
	r := TestResult{Criterion: criterion, Threshold: thr, Above: above, NOut: len(s0) - h, NIn: len(s1) - h, Alpha: cp.alpha}
	for _, s := range s0[h:] {
		if says(s) {
			r.FP++
		}
	}
	for _, s := range s1[h:] {
		if !says(s) {
			r.FN++
		}
	}
	if r.FPRUpper, err = cp.upper(r.FP, r.NOut); err != nil {
		return TestResult{}, err
	}
	if r.FNRUpper, err = cp.upper(r.FN, r.NIn); err != nil {
		return TestResult{}, err
	}
	r.EpsilonLB = EpsilonLowerBound(r.FPRUpper, r.FNRUpper, delta)
	r.MuLB = MuLowerBound(r.FPRUpper, r.FNRUpper)
	return r, nil
}

func scores(score func([]float64) float64, vs [][]float64) []float64 {
	s := make([]float64, len(vs))
	for i, v := range vs {
		s[i] = score(v)
	}
	return s
}

// fitRule returns the rule "D iff score >= thr" (above) or "D iff score <=
// thr" that maximises objective (of the upper bounds on the false positive
// and false negative rates) on the given releases of D (s1) and D' (s0).
// The candidate thresholds are the midpoints between consecutive distinct
// scores, so that a rule separating the two samples leaves the same margin
// to both.
func fitRule(s1, s0 []float64, objective func(fpU, fnU float64) float64, cp *cpTable) (thr float64, above bool, err error) {
	best := math.Inf(-1)
	for _, sign := range []float64{1, -1} {
		a1, a0 := signed(s1, sign), signed(s0, sign)
		vals := slices.Compact(slices.Sorted(slices.Values(slices.Concat(a1, a0))))
		// For the rule "D iff a >= t", sweep t upwards: i1 counts a1 below
		// t (false negatives), i0 counts a0 below t (true negatives).
		i1, i0 := 0, 0
		for j := 1; j < len(vals); j++ {
			t := vals[j-1] + (vals[j]-vals[j-1])/2
			for i1 < len(a1) && a1[i1] < t {
				i1++
			}
			for i0 < len(a0) && a0[i0] < t {
				i0++
			}
			fpU, err := cp.upper(len(a0)-i0, len(a0))
			if err != nil {
				return 0, false, err
			}
			fnU, err := cp.upper(i1, len(a1))
			if err != nil {
				return 0, false, err
			}
			if e := objective(fpU, fnU); e > best {
				best, thr, above = e, sign*t, sign > 0
			}
		}
	}
	if math.IsInf(best, -1) {
		// Every score the same: no rule tells the sides apart; say D never
		// (scores are finite, so none reaches MaxFloat64).
		return math.MaxFloat64, true, nil
	}
	return thr, above, nil
}

// signed returns sign * s, sorted.
func signed(s []float64, sign float64) []float64 {
	a := make([]float64, len(s))
	for i, x := range s {
		a[i] = sign * x
	}
	slices.Sort(a)
	return a
}

// projection returns the score o . w with w the mean of the calibration
// releases of D minus that of D' (coordinates sanitized: NaN as 0, the rest
// clamped to 1e100, so that every score is finite).
func projection(in, out [][]float64) func([]float64) float64 {
	n := 0
	if len(in) > 0 {
		n = len(in[0])
	}
	w := make([]float64, n)
	for _, v := range in {
		for j := range min(n, len(v)) {
			w[j] += sanitize(v[j]) / float64(len(in))
		}
	}
	for _, v := range out {
		for j := range min(n, len(v)) {
			w[j] -= sanitize(v[j]) / float64(len(out))
		}
	}
	return func(o []float64) float64 {
		s := 0.0
		for j := range min(n, len(o)) {
			s += w[j] * sanitize(o[j])
		}
		return s
	}
}

// hasShift reports whether c has a usable white-box direction: a finite,
// non-zero Shift.
func hasShift(c Canary) bool {
	nonzero := false
	for _, x := range c.Shift {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		nonzero = nonzero || x != 0
	}
	return nonzero
}

// projectOn returns the score o . w for the white-box direction w (Canary.Shift).
func projectOn(w []float64) func([]float64) float64 {
	return func(o []float64) float64 {
		s := 0.0
		for j := range min(len(w), len(o)) {
			s += w[j] * sanitize(o[j])
		}
		return s
	}
}

func sanitize(x float64) float64 {
	if x != x {
		return 0
	}
	return max(-1e100, min(1e100, x))
}

func nonFinite(o []float64) float64 {
	for _, x := range o {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 1
		}
	}
	return 0
}

// cpTable memoises Clopper-Pearson upper bounds at one level.
type cpTable struct {
	alpha float64
	memo  map[[2]int]float64
}

func newCPTable(alpha float64) *cpTable {
	return &cpTable{alpha: alpha, memo: make(map[[2]int]float64)}
}

func (c *cpTable) upper(k, n int) (float64, error) {
	if u, ok := c.memo[[2]int{k, n}]; ok {
		return u, nil
	}
	u, err := ClopperPearsonUpper(k, n, c.alpha)
	if err != nil {
		return 0, err
	}
	c.memo[[2]int{k, n}] = u
	return u, nil
}
