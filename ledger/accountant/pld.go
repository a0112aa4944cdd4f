package accountant

import (
	"fmt"
	"math"
	"sort"
)

// PLD is the privacy loss distribution accountant: it discretises each
// event's privacy loss distribution pessimistically (Doroshenko, Ghazi,
// Kamath, Kumar & Manurangsi 2022, "Connect the dots: tighter discrete
// approximations of privacy loss distributions", Algorithm 1), composes them
// by FFT convolution (Koskela, Jälkö & Honkela 2020, "Computing tight
// differential privacy guarantees using FFT"), adds a bound on the FFT's
// rounding error (Higham 2002, "Accuracy and Stability of Numerical
// Algorithms", Theorem 24.2) and reports the larger epsilon(delta) of the
// add and remove directions. Why that epsilon is an upper bound:
// docs/privacy.md, section 7. The zero value chooses Interval from the
// events (PLDInterval); the result is a deterministic function of the
// events, delta and Interval, so a ledger can recompute it.
type PLD struct {
	// Interval is the discretisation interval of the privacy loss; 0
	// chooses it from the events (see PLDInterval).
	Interval float64
}

// Method returns MethodPLD.
func (PLD) Method() Method { return MethodPLD }

// pldCTDRatio is the discretisation interval relative to the root-mean-square
// standard deviation of the per-step privacy losses (PLDInterval). The
// connect-the-dots discretisation of one distribution preserves its mass and
// its exponential moment and adds at most h^2/4 to its variance, so composing
// n discretised distributions inflates the variance of the total loss by at
// most n h^2/4, a relative 0.0625% at this ratio (the standard deviation by
// 0.03%). Measured against dp_accounting's pessimistic estimate at its
// default interval 1e-4 (testdata/gen_pld_reference.py) it is within 0.06%
// on every row but two: one where the FFT's rounding bound (fftErr), not the
// grid, costs +0.4% (q = 0.001, z = 0.5, 10,000 steps, delta 1e-6), and one
// where dp_accounting's interval is the coarser and it is 0.29% below
// (q = 0.001, z = 2, 10,000 steps; at interval 1e-5 dp_accounting agrees).
const pldCTDRatio = 0.05

// pldTailMass is the mass each truncation after a convolution may cut from
// each tail of the result. The right tail's goes to +infinity, so delta
// grows by at most this per convolution (about 2 log2(steps) of them per
// event); cutting at the level of the FFT's rounding noise (1e-19 per bin)
// rather than far below it is what keeps the grids short.
const pldTailMass = 1e-13

// pldStepTail is the mass beyond the single-step grid at each end: above
// it goes to +infinity (so each step contributes at most this to delta),
// below it is folded onto the grid by the discretisation.
const pldStepTail = 1e-18

// pldFoldMass is the mass below the single-step grid, which the
// discretisation folds up onto its lowest points. Folding moves losses up,
// so it is safe at any level; this one keeps at least 1e-10 of mass at or
// below every grid point, so the certification (certify) can correct a
// shortfall at any grid point from the bins below it. (Below the bulk of
// the losses the profile is 1 - e^eps to within the mass below, which a
// float64 resolves only to 1e-16.)
const pldFoldMass = 1e-10

// pldMaxBins bounds the length of any distribution the accountant builds
// (64 Mi float64s, 512 MiB); larger problems are refused rather than run out
// of memory.
const pldMaxBins = 1 << 26

// Epsilon implements Accountant. Guarantee.Interval is the discretisation
// interval used.
func (p PLD) Epsilon(delta float64, events ...Event) (Guarantee, error) {
	if err := validateAll(delta, events); err != nil {
		return Guarantee{}, err
	}
	dists, h, err := p.compose(events)
	if err != nil {
		return Guarantee{}, err
	}
	eps := 0.0
	for _, d := range dists {
		e, err := d.epsilon(delta)
		if err != nil {
			return Guarantee{}, err
		}
		eps = math.Max(eps, e)
	}
	return Guarantee{Epsilon: eps * (1 + safetyPad), Delta: delta, Method: MethodPLD, Interval: h}, nil
}

// Delta returns an upper bound on the delta at which the composition of
// events is (eps, delta)-DP: the larger of the two directions' composed
// pessimistic profiles at eps, plus the floating-point error bound. It can
// exceed the true delta, never fall below it.
func (p PLD) Delta(eps float64, events ...Event) (float64, error) {
	if !finite(eps) || eps < 0 {
		return 0, fmt.Errorf("%w: epsilon = %v, want a finite epsilon >= 0", ErrInvalid, eps)
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("%w: no events", ErrInvalid)
	}
	for i, e := range events {
		if err := e.Validate(); err != nil {
			return 0, fmt.Errorf("event %d: %w", i, err)
		}
	}
	dists, _, err := p.compose(events)
	if err != nil {
		return 0, err
	}
	d := 0.0
	for _, dist := range dists {
		d = math.Max(d, dist.delta(eps))
	}
	return math.Min(1, d*(1+1e-12)), nil
}

// PLDInterval returns the discretisation interval the PLD accountant chooses
// for the events: pldCTDRatio times the root-mean-square standard deviation
// of the per-step privacy losses, sqrt(V / n), where V is the variance of the
// composed loss (the sum over events of steps times the single-step
// variance, plain Gaussian events counted once as their exact composition)
// and n the number of distributions composed. The variances are those of the
// removal direction's privacy loss, computed by quadrature.
func PLDInterval(events ...Event) (float64, error) {
	for i, e := range events {
		if err := e.Validate(); err != nil {
			return 0, fmt.Errorf("event %d: %w", i, err)
		}
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("%w: no events", ErrInvalid)
	}
	return pldInterval(events), nil
}

func pldInterval(events []Event) float64 {
	var v, n float64
	var gauss []Event
	for _, e := range events {
		if e.Q == 1 {
			gauss = append(gauss, e)
			continue
		}
		v += float64(e.Steps) * lossVariance(e.Q, e.Z)
		n += float64(e.Steps)
	}
	if len(gauss) > 0 {
		z, _ := EffectiveZ(gauss...)
		v += 1 / (z * z) // the loss of the Gaussian mechanism is N(1/(2z^2), 1/z^2)
		n++
	}
	return pldCTDRatio * math.Sqrt(v/n)
}

// lossVariance returns the variance of the privacy loss of one step of the
// Poisson-subsampled Gaussian mechanism in the removal direction,
// L = ln(1 - q + q e^{(2x-1)/(2z^2)}) with x ~ (1-q) N(0, z^2) + q N(1, z^2),
// by the trapezoidal rule on a fine grid over +-12 standard deviations (it
// only sets the grid spacing, so its accuracy affects tightness, not
// soundness).
func lossVariance(q, z float64) float64 {
	if q == 1 {
		return 1 / (z * z)
	}
	lo, hi := -12*z, 1+12*z
	const n = 4000
	dx := (hi - lo) / n
	log1mq, logq := math.Log1p(-q), math.Log(q)
	var m0, m1, m2 float64
	for i := 0; i <= n; i++ {
		x := lo + float64(i)*dx
		w := 1.0
		if i == 0 || i == n {
			w = 0.5
		}
		pdf := (1-q)*normPDF(x/z)/z + q*normPDF((x-1)/z)/z
		l := logAdd(log1mq, logq+(2*x-1)/(2*z*z))
		m0 += w * pdf
		m1 += w * pdf * l
		m2 += w * pdf * l * l
	}
	mean := m1 / m0
	return math.Max(m2/m0-mean*mean, 0) + 1e-300
}

func normPDF(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }

// compose returns the composed distributions of the events, one per
// direction (one when all events are plain Gaussians), and the interval.
func (p PLD) compose(events []Event) ([]*lossPMF, float64, error) {
	h := p.Interval
	if h == 0 {
		h = pldInterval(events)
	}
	if !finite(h) || h <= 0 {
		return nil, 0, fmt.Errorf("%w: discretisation interval %v, want > 0", ErrInvalid, h)
	}
	var gauss, sub []Event
	for _, e := range events {
		if e.Q == 1 {
			gauss = append(gauss, e)
		} else {
			sub = append(sub, e)
		}
	}
	// Deterministic order of composition (it only affects rounding).
	sort.SliceStable(sub, func(i, j int) bool {
		a, b := sub[i], sub[j]
		if a.Q != b.Q {
			return a.Q < b.Q
		}
		if a.Z != b.Z {
			return a.Z < b.Z
		}
		return a.Steps < b.Steps
	})
	dirs := []direction{remove, add}
	if len(sub) == 0 {
		dirs = dirs[:1] // the Gaussian's two directions coincide
	}
	var out []*lossPMF
	ffts := newFFTCache()
	for _, dir := range dirs {
		var acc *lossPMF
		if len(gauss) > 0 {
			z, err := EffectiveZ(gauss...)
			if err != nil {
				return nil, 0, err
			}
			g, err := discretise(mechanism{q: 1, z: z, dir: dir}, h)
			if err != nil {
				return nil, 0, err
			}
			acc = g
		}
		for _, e := range sub {
			d, err := discretise(mechanism{q: e.Q, z: e.Z, dir: dir}, h)
			if err != nil {
				return nil, 0, err
			}
			c, err := d.selfCompose(e.Steps, ffts)
			if err != nil {
				return nil, 0, err
			}
			if acc == nil {
				acc = c
			} else if acc, err = convolve(acc, c, ffts); err != nil {
				return nil, 0, err
			}
		}
		out = append(out, acc)
	}
	return out, h, nil
}

// direction is a direction of the add/remove neighbouring relation.
type direction int

const (
	// remove: P = (1-q) N(0, z^2) + q N(1, z^2) (the unit is in the data),
	// Q = N(0, z^2); loss ln(1 - q + q e^{(2x-1)/(2z^2)}), increasing in x.
	remove direction = iota
	// add: P = N(0, z^2), Q = (1-q) N(0, z^2) + q N(1, z^2); loss
	// -ln(1 - q + q e^{(2x-1)/(2z^2)}), decreasing in x, at most -ln(1-q).
	add
)

// mechanism is one step of the Poisson-subsampled Gaussian mechanism
// (sensitivity 1, noise N(0, z^2), sampling rate q) in one direction.
type mechanism struct {
	q, z float64
	dir  direction
}

// delta returns the privacy profile of the step: the hockey-stick
// divergence H_{e^eps}(P || Q) = sup_S P(S) - e^eps Q(S), attained by the set
// where the loss exceeds eps. With Φ̄ the standard normal survival function:
//
// remove, eps > ln(1-q): the loss exceeds eps iff x > t, t = z^2 ln((e^eps -
// (1-q))/q) + 1/2, so
//
//	delta = q Φ̄((t-1)/z) - (e^eps - (1-q)) Φ̄(t/z);
//
// for eps <= ln(1-q) every x qualifies and delta = 1 - e^eps.
//
// add, eps < -ln(1-q): the loss exceeds eps iff x < s, s = z^2 ln((e^-eps -
// (1-q))/q) + 1/2, so
//
//	delta = (1 - (1-q) e^eps) Φ(s/z) - q e^eps Φ((s-1)/z);
//
// for eps >= -ln(1-q) no x qualifies and delta = 0.
//
// For q = 1 both reduce to the analytic Gaussian mechanism (Balle & Wang
// 2018, "Improving the Gaussian mechanism for differential privacy",
// Theorem 8). Both terms are evaluated in log space, so neither over- nor
// underflows; the difference of the two terms is a relative 1/(z t) apart
// at worst, so no precision is lost to cancellation.
func (m mechanism) delta(eps float64) float64 {
	d, _ := m.deltaTol(eps)
	return d
}

// deltaTol returns delta(eps) and a bound on its relative error as
// evaluated, from the logarithms l1 > l2 of delta's two terms:
//
//	tol = profileTol(delta) + e_1 + (e_1 + e_2) w,   w = e^(l2-l1) / (1 - e^(l2-l1)),
//	e_j = 8u ((1 + |l_j|) + slope(y_j) (z (|ln A| + |ln q|) + |y_j| + 1)),
//
// with slope(y) the slope of ln Phi at the CDF's argument y_j (at most
// |y| + 1 below 0, 2 phi(y) above). The derivation of this bound and its
// test against 50-digit values: docs/privacy.md, section 7 (the bound rho_i).
func (m mechanism) deltaTol(eps float64) (float64, float64) {
	q, z := m.q, m.z
	logq := math.Log(q)
	// tol assembles the bound from the two logarithms l1 > l2, the
	// arguments y1, y2 of their log-normal CDFs and the log argument logA
	// (or logB).
	tol := func(l1, l2, y1, y2, logA float64) (float64, float64) {
		if l2 >= l1 {
			return 0, 0
		}
		d := math.Exp(l1) * -math.Expm1(l2-l1)
		w := math.Exp(l2-l1) / -math.Expm1(l2-l1)
		e := func(l, y float64) float64 {
			// d/dy ln Phi(y) = phi(y)/Phi(y): at most |y| + 1 below 0,
			// at most 2 phi(y) above (Phi(y) >= 1/2).
			slope := math.Abs(y) + 1
			if y >= 0 {
				slope = 2 * math.Exp(-y*y/2) / math.Sqrt(2*math.Pi)
			}
			return 8 * unitRound * ((1 + math.Abs(l)) + slope*(z*(math.Abs(logA)+math.Abs(logq))+math.Abs(y)+1))
		}
		e1, e2 := e(l1, y1), e(l2, y2)
		return d, profileTol(d) + e1 + (e1+e2)*w
	}
	switch m.dir {
	case remove:
		if q < 1 && eps <= math.Log1p(-q) {
			d := -math.Expm1(eps)
			return d, profileTol(d)
		}
		// logA = ln(e^eps - (1-q)).
		var logA float64
		if eps > 1 {
			logA = eps + math.Log1p(-(1-q)*math.Exp(-eps))
		} else {
			logA = math.Log(math.Expm1(eps) + q)
		}
		t := z*z*(logA-logq) + 0.5
		l1 := logq + logNormCDF(-(t-1)/z)
		l2 := logA + logNormCDF(-t/z)
		return tol(l1, l2, -(t-1)/z, -t/z, logA)
	default:
		if q < 1 && eps >= -math.Log1p(-q) {
			return 0, 0
		}
		// logB = ln(e^-eps - (1-q)); logC = ln(1 - (1-q) e^eps).
		var logB, logC float64
		if eps < -1 {
			logB = -eps + math.Log1p(-(1-q)*math.Exp(eps))
		} else {
			logB = math.Log(math.Expm1(-eps) + q)
		}
		if q == 1 {
			logC = 0
		} else {
			logC = math.Log(-math.Expm1(eps + math.Log1p(-q)))
		}
		s := z*z*(logB-logq) + 0.5
		l1 := logC + logNormCDF(s/z)
		l2 := logq + eps + logNormCDF((s-1)/z)
		return tol(l1, l2, s/z, (s-1)/z, logB)
	}
}

// lowerTail returns P(L < eps) for the loss L under P.
func (m mechanism) lowerTail(eps float64) float64 {
	q, z := m.q, m.z
	logq := math.Log(q)
	switch m.dir {
	case remove:
		if q < 1 && eps <= math.Log1p(-q) {
			return 0
		}
		var logA float64
		if eps > 1 {
			logA = eps + math.Log1p(-(1-q)*math.Exp(-eps))
		} else {
			logA = math.Log(math.Expm1(eps) + q)
		}
		t := z*z*(logA-logq) + 0.5
		return (1-q)*math.Exp(logNormCDF(t/z)) + q*math.Exp(logNormCDF((t-1)/z))
	default:
		if q < 1 && eps >= -math.Log1p(-q) {
			return 1
		}
		var logB float64
		if eps < -1 {
			logB = -eps + math.Log1p(-(1-q)*math.Exp(eps))
		} else {
			logB = math.Log(math.Expm1(-eps) + q)
		}
		s := z*z*(logB-logq) + 0.5
		return math.Exp(logNormCDF(-s / z))
	}
}

// support returns the range of losses [lo, hi] the discretisation covers:
// hi where the profile falls to tail (what lies above goes to +infinity
// with mass delta(hi)), lo where the mass below falls to fold (it is folded
// up onto the grid). The largest loss of the add direction is -ln(1-q) and
// the smallest of the remove direction ln(1-q); the range stops there.
func (m mechanism) support(tail, fold float64) (lo, hi float64) {
	// delta is nonincreasing, lowerTail nondecreasing: expand a bracket,
	// then bisect.
	hi = grow(func(e float64) bool { return m.delta(e) <= tail }, 1)
	lo = -grow(func(e float64) bool { return m.lowerTail(-e) <= fold }, 1)
	if m.q < 1 {
		if m.dir == remove {
			lo = math.Max(lo, math.Log1p(-m.q))
		} else {
			hi = math.Min(hi, -math.Log1p(-m.q))
		}
	}
	return lo, hi
}

// grow returns a point x >= -start... (approximately the smallest x at which
// ok becomes true, ok being monotone: false then true), to 1e-6 relative,
// rounded toward true.
func grow(ok func(float64) bool, step float64) float64 {
	lo, hi := -step, step
	for !ok(hi) {
		lo, hi = hi, 2*hi
		if hi > 1e12 {
			return hi
		}
	}
	for ok(lo) {
		hi, lo = lo, 2*lo
		if lo < -1e12 {
			return lo
		}
	}
	for i := 0; i < 100 && hi-lo > 1e-9*math.Max(1, math.Abs(hi)); i++ {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// lossPMF is a discrete privacy loss distribution: mass p[i] at the loss
// (lo+i)·h and mass inf at +infinity. err bounds the l1 distance between p
// (as computed) and the exact distribution it stands for, which dominates
// the mechanism: delta(eps) as computed from p plus err is an upper bound
// on the exact one.
type lossPMF struct {
	h   float64
	lo  int
	p   []float64
	inf float64
	err float64
}

// unitRound is the unit roundoff of float64.
const unitRound = 0x1p-53

// discretise returns the pessimistic connect-the-dots discretisation of the
// step's privacy loss distribution on the grid h·Z (Doroshenko et al. 2022,
// Algorithm 1, with a fixed gap): with eps_i = (lo+i) h, i = 0..n, and
// delta_i the exact profile at eps_i,
//
//	m_0 = 1 - delta_0 + (delta_1 - delta_0)/(e^h - 1),
//	m_i = ((delta_{i+1} - delta_i) - e^h (delta_i - delta_{i-1}))/(e^h - 1),
//	m_n = (delta_n - delta_{n-1})/(e^-h - 1),   m_inf = delta_n.
//
// The stored masses are then certified: their profile is recomputed at every
// grid point and any shortfall below delta_i is moved from the lowest bins to
// +infinity, and E[e^-L] <= 1 is checked. Why the result dominates the step:
// docs/privacy.md, section 7 ("Discretisation").
func discretise(m mechanism, h float64) (*lossPMF, error) {
	lo, hi := m.support(pldStepTail, pldFoldMass)
	iLo, iHi := math.Floor(lo/h), math.Ceil(hi/h)
	if iHi <= iLo {
		iHi = iLo + 1
	}
	if iHi-iLo+1 > pldMaxBins || math.Abs(iLo) > 1<<52 || math.Abs(iHi) > 1<<52 {
		return nil, fmt.Errorf("%w: the privacy loss of q = %v, z = %v spans [%.4g, %.4g]: %.4g bins of %.4g, above the accountant's limit %d", ErrUnsupported, m.q, m.z, lo, hi, iHi-iLo+1, h, pldMaxBins)
	}
	n := int(iHi - iLo)
	d, tol := make([]float64, n+1), make([]float64, n+1)
	for i := range d {
		d[i], tol[i] = m.deltaTol((iLo + float64(i)) * h)
	}
	// delta is nonincreasing; enforce it against rounding (raising values
	// only makes the interpolation more pessimistic; a raised value keeps
	// the tolerance of the point it came from).
	for i := n - 1; i >= 0; i-- {
		if d[i+1] > d[i] {
			d[i], tol[i] = d[i+1], max(tol[i], tol[i+1])
		}
	}
	p := make([]float64, n+1)
	eh, em1 := math.Exp(h), math.Expm1(h)
	if n == 0 {
		p[0] = 1 - d[0]
	} else {
		p[0] = 1 - d[0] + (d[1]-d[0])/em1
		for i := 1; i < n; i++ {
			p[i] = ((d[i+1] - d[i]) - eh*(d[i]-d[i-1])) / em1
		}
		p[n] = (d[n] - d[n-1]) / math.Expm1(-h)
	}
	out := &lossPMF{h: h, lo: int(iLo), p: p, inf: d[n]}
	if err := out.certify(d, tol); err != nil {
		return nil, fmt.Errorf("discretising q = %v, z = %v: %w", m.q, m.z, err)
	}
	return out, nil
}

// profileTol is the relative accuracy assumed of each term of the exact
// profile as evaluated by mechanism.deltaTol, from its exponentials and
// log-normal CDFs: 1e-14 (1 + |ln delta|), their error growing with the
// magnitude of their logarithms (testdata/gen_pld_reference.py gives
// 50-digit values, TestPLDProfileAgainstMultiprecision checks them).
// deltaTol adds the rounding of the arguments and the cancellation of the
// two terms, which dominate at large z.
func profileTol(delta float64) float64 {
	if !(delta > 0) {
		return 0
	}
	return 1e-14 * (1 + math.Abs(math.Log(delta)))
}

// certify makes the masses a probability distribution whose profile is at
// least want_i (1 + tol_i) at every grid point (tol_i: the relative error
// bound of want_i, mechanism.deltaTol) and whose exponential
// moment is at most 1 (see discretise). Every correction moves mass from the
// lowest bins to +infinity, which raises the profile at each grid point at
// or above those bins by the mass moved and lowers E[e^-L]. The profile and
// the moment are recomputed in double-double arithmetic, so their rounding
// (a few units in 1e-32) is far inside the margin.
func (d *lossPMF) certify(want, tol []float64) error {
	p := d.p
	for i, v := range p {
		if !(v > 0) { // negative or NaN
			p[i] = 0
		}
	}
	// Total mass 1: the lowest bin takes what the others leave. The total
	// is summed in double-double, so it is 1 to within an ulp.
	var rest dd
	for _, v := range p[1:] {
		rest = rest.addF(v)
	}
	rest = rest.addF(d.inf)
	p0 := dd{hi: 1}.sub(rest).float()
	if p0 < 0 {
		d.moveUp(-p0, 1, 0) // the bins above hold more than 1 - inf: lower them
		p0 = 0
	}
	p[0] = p0
	for k := 0; ; k++ {
		short, first := d.shortfall(want, tol)
		if short == 0 {
			break
		}
		if k == 8 {
			return fmt.Errorf("accountant: pessimistic discretisation stays %.3g short of the exact profile at loss %.6g", short, float64(d.lo+first)*d.h)
		}
		// Moving m from bins at or below `first` to +infinity raises the
		// profile at every grid point from `first` up by m; mass taken from
		// higher bins raises it less, hence the factor 2 and the loop.
		if !d.toInfinity(2 * short) {
			return fmt.Errorf("accountant: pessimistic discretisation is %.3g short of the exact profile with no mass left to move", short)
		}
	}
	// E[e^-L] = e^{-l_0} sum_i p_i e^{-ih} <= 1: the lower distribution Q of
	// the discretised pair puts e^-l p(l) on each loss and the rest of its
	// mass on an outcome P never produces (loss -infinity).
	l0 := float64(d.lo) * d.h
	for k := 0; ; k++ {
		s := d.moment()
		// ln E = -l0 + ln s, required <= ln(1 - 8u).
		excess := -l0 + math.Log(s) - math.Log1p(-8*unitRound)
		if excess <= 0 {
			break
		}
		if k == 8 {
			return fmt.Errorf("accountant: discretised privacy loss has E[exp(-L)] = exp(%.3g) > 1", excess)
		}
		// Moving m from bin 0 lowers E by m e^{-l0}; a relative excess of
		// ~excess needs m ~ excess E e^{l0} ~ excess (E ~ 1).
		if !d.toInfinity(2 * (-math.Expm1(-excess)) * s) {
			return fmt.Errorf("accountant: discretised privacy loss has E[exp(-L)] > 1 with no mass left to move")
		}
	}
	d.trimZeros()
	return nil
}

// shortfall returns the largest amount by which the profile of the stored
// masses falls below want_i (1 + tol_i), and the lowest grid index
// where it does (profile recurrence of discretise, in double-double).
func (d *lossPMF) shortfall(want, tol []float64) (short float64, first int) {
	p := d.p
	n := len(p) - 1
	emh := dd{hi: 1}.addF(math.Expm1(-d.h)) // e^-h to ~u h relative
	om := -math.Expm1(-d.h)
	prof := dd{hi: d.inf}
	var s dd
	first = -1
	check := func(i int, prof dd) {
		if gap := want[i]*(1+tol[i]) - prof.float(); gap > 0 {
			if first < 0 || i < first {
				first = i
			}
			short = math.Max(short, gap)
		}
	}
	check(n, prof)
	for i := n; i > 0; i-- {
		t := s.addF(p[i])
		prof = prof.add(t.mulF(om))
		s = t.mul(emh)
		check(i-1, prof)
	}
	return short, first
}

// moment returns sum_i p_i e^{-ih} in double-double (Horner from the top).
func (d *lossPMF) moment() float64 {
	emh := dd{hi: 1}.addF(math.Expm1(-d.h))
	var s dd
	for i := len(d.p) - 1; i >= 0; i-- {
		s = s.mul(emh)
		s = s.addF(d.p[i])
	}
	// Multiplying once too often by e^-h at i = 0 is avoided by the order
	// above: s_i = p_i + e^-h s_{i+1}.
	return s.float()
}

// toInfinity moves m from the lowest bins (ascending) to +infinity and
// reports whether there was enough mass.
func (d *lossPMF) toInfinity(m float64) bool {
	moved := d.moveUp(m, 0, -1)
	d.inf += moved
	return moved >= m
}

// moveUp removes up to m from the bins from index `from` up (ascending) and
// returns what it removed; the caller puts it where it belongs (at +infinity,
// or, with to >= 0, onto bin `to`).
func (d *lossPMF) moveUp(m float64, from, to int) float64 {
	rem := m
	for i := from; i < len(d.p) && rem > 0; i++ {
		t := math.Min(d.p[i], rem)
		d.p[i] -= t
		rem -= t
	}
	moved := m - rem
	if to >= 0 {
		d.p[to] += moved
	}
	return moved
}

// trimZeros drops zero bins at both ends.
func (d *lossPMF) trimZeros() {
	a, b := 0, len(d.p)
	for a < b-1 && d.p[a] == 0 {
		a++
	}
	for b > a+1 && d.p[b-1] == 0 {
		b--
	}
	d.p = d.p[a:b]
	d.lo += a
}

// truncate cuts the tails of p holding at most pldTailMass each: the right
// tail's mass goes to +infinity, the left tail's onto the lowest bin kept.
// Negative values (FFT rounding) are set to 0 first; the true values are
// nonnegative, so that only brings p closer to them.
func (d *lossPMF) truncate() {
	p := d.p
	for i, v := range p {
		if !(v > 0) {
			p[i] = 0
		}
	}
	a, left := 0, 0.0
	for a < len(p)-1 && left+p[a] <= pldTailMass {
		left += p[a]
		a++
	}
	b, right := len(p), 0.0
	for b > a+1 && right+p[b-1] <= pldTailMass {
		right += p[b-1]
		b--
	}
	d.p = p[a:b]
	d.p[0] += left
	d.lo += a
	d.inf += right
}

// fftErr bounds the l1 error of the FFT convolution of a and b (l1 norms at
// most 1 + ea and 1 + eb) at transform length n, keeping m = len(a)+len(b)-1
// outputs:
//
//	1.25 sqrt(m) (kappa (2 ||a||_2 ||b||_1 + ||a||_1 ||b||_2) + 3u ||a||_2 ||b||_1),
//	kappa = 8 u ceil(log2 n),
//
// kappa bounding a computed FFT's relative 2-norm error (Higham 2002,
// "Accuracy and Stability of Numerical Algorithms", Theorem 24.2). The
// derivation: docs/privacy.md, section 7 ("FFT rounding").
func fftErr(n, m int, a, b []float64, ea, eb float64) float64 {
	kappa := 8 * unitRound * math.Ceil(math.Log2(float64(n)))
	na, nb := l2(a), l2(b)
	return 1.25 * math.Sqrt(float64(m)) * ((2*kappa+3*unitRound)*na*(1+eb) + kappa*nb*(1+ea))
}

func l2(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s) * (1 + 1e-12)
}

// convolve returns the distribution of the sum of independent losses from
// a and b: the product pair of the two pairs, which dominates the adaptive
// composition of the mechanisms a and b dominate (Zhu, Dong & Wang 2022,
// the composition theorem for dominating pairs). Masses at +infinity
// combine as 1 - (1-a)(1-b).
func convolve(a, b *lossPMF, ffts *fftCache) (*lossPMF, error) {
	if a.h != b.h {
		return nil, fmt.Errorf("accountant: composing distributions on different grids (%v, %v)", a.h, b.h)
	}
	na, nb := len(a.p), len(b.p)
	if na+nb-1 > pldMaxBins {
		return nil, fmt.Errorf("%w: the composed privacy loss needs %d bins, above the accountant's limit %d", ErrUnsupported, na+nb-1, pldMaxBins)
	}
	var p []float64
	var e float64
	if na < 64 || nb < 64 {
		p = directConvolve(a.p, b.p)
		e = 4 * float64(min(na, nb)) * unitRound
	} else {
		n := fastLen(na + nb - 1)
		p = ffts.convolve(a.p, b.p, n)[:na+nb-1]
		e = fftErr(n, na+nb-1, a.p, b.p, a.err, b.err)
	}
	out := &lossPMF{
		h:   a.h,
		lo:  a.lo + b.lo,
		p:   p,
		inf: a.inf + b.inf - a.inf*b.inf,
		// ||a~*b~ - a*b||_1 <= err_a ||b~||_1 + ||a||_1 err_b, plus the
		// convolution's own rounding.
		err: a.err*(1+b.err) + b.err + e,
	}
	out.truncate()
	return out, nil
}

func directConvolve(a, b []float64) []float64 {
	out := make([]float64, len(a)+len(b)-1)
	for i, x := range a {
		if x == 0 {
			continue
		}
		for j, y := range b {
			out[i+j] += x * y
		}
	}
	return out
}

// selfCompose returns the steps-fold composition of d with itself by
// repeated squaring (right to left over the bits of steps).
func (d *lossPMF) selfCompose(steps int, ffts *fftCache) (*lossPMF, error) {
	var result *lossPMF
	base := d
	for k := steps; k > 0; k >>= 1 {
		if k&1 == 1 {
			if result == nil {
				result = base
			} else {
				var err error
				if result, err = convolve(result, base, ffts); err != nil {
					return nil, err
				}
			}
		}
		if k > 1 {
			var err error
			if base, err = convolve(base, base, ffts); err != nil {
				return nil, err
			}
		}
	}
	return result, nil
}

// delta returns the profile of the distribution at eps plus its error
// bound: inf + sum_{l > eps} p(l) (1 - e^{eps - l}) + err, the sum taken over
// nonnegative terms.
func (d *lossPMF) delta(eps float64) float64 {
	s := d.inf
	for i := len(d.p) - 1; i >= 0; i-- {
		l := float64(d.lo+i) * d.h
		if l <= eps {
			break
		}
		s += d.p[i] * -math.Expm1(eps-l)
	}
	return s*(1+1e-12) + d.err
}

// epsilon returns the smallest eps >= 0 whose delta (as computed by delta)
// is at most target. Scanning down from the largest loss with
// prof_k = profile at l_k and s_k = sum_{j>k} p_j e^{l_k - l_j} (see
// certify), the profile on (l_k, l_{k+1}] is prof_k + s_k - s_k e^{eps-l_k}
// (the hockey-stick divergence of a discrete PLD, Koskela et al. 2020;
// dp_accounting's get_epsilon_for_delta does the same),
// so where it crosses the target eps = l_k + ln(1 + (prof_k - target)/s_k).
// The result is checked with delta and moved up to the next grid point if
// rounding made it fail.
func (d *lossPMF) epsilon(target float64) (float64, error) {
	// Solve for a slightly smaller delta than delta() will check against,
	// so that the check's own rounding does not reject the solution.
	want := (target - d.err) / (1 + 4e-12)
	if !(want > 0) || d.inf >= want {
		return 0, fmt.Errorf("%w: the composed privacy loss is infinite with probability %.3g (plus rounding bound %.3g), above delta %g", ErrUnreachable, d.inf, d.err, target)
	}
	emh, om := math.Exp(-d.h), -math.Expm1(-d.h)
	prof, s := d.inf, 0.0
	k := len(d.p) - 1 // grid index: the profile at l_k is prof
	for k >= 0 && prof <= want {
		prof, s = prof+om*(d.p[k]+s), emh*(d.p[k]+s)
		k--
	}
	// The profile at l_k exceeds want (k = -1: at l_{-1} = (lo-1)h, below
	// every mass, unless the profile never exceeds want), at l_{k+1} not.
	lk := float64(d.lo+k) * d.h
	eps := lk + d.h
	if s > 0 {
		eps = math.Min(eps, lk+math.Log1p((prof-want)/s))
	}
	if !(eps > 0) {
		if d.delta(0) <= target {
			return 0, nil
		}
		eps = 0
	}
	for i := 0; d.delta(eps) > target; i++ {
		switch {
		case i < 8:
			eps += 1e-12 * math.Max(1, eps)
		case i < 16:
			eps = math.Max(eps, lk+d.h) + d.h*float64(i-8)
		default:
			return 0, fmt.Errorf("accountant: epsilon search did not converge at delta %g", target)
		}
	}
	return eps, nil
}
