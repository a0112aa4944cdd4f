package accountant

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"dprl/internal/jsonstrict"
)

// Method names an accounting method.
type Method string

// The accounting methods.
const (
	MethodAnalytic Method = "analytic" // exact, Gaussian mechanisms without subsampling
	MethodRDP      Method = "rdp"      // Rényi DP, every event
	MethodClassic  Method = "classic"  // Dwork & Roth Thm A.1, single mechanism, eps < 1
	MethodZhao     Method = "zhao"     // Zhao et al. 2019, single mechanism
	MethodPLD      Method = "pld"      // privacy loss distribution, every event
)

// ParseMethod parses a method name.
func ParseMethod(s string) (Method, error) {
	switch m := Method(strings.ToLower(strings.TrimSpace(s))); m {
	case MethodAnalytic, MethodRDP, MethodClassic, MethodZhao, MethodPLD:
		return m, nil
	}
	return "", fmt.Errorf("%w: method %q, want analytic, rdp, pld, classic or zhao", ErrInvalid, s)
}

// New returns the accountant for a method.
func New(m Method) (Accountant, error) {
	switch m {
	case MethodAnalytic:
		return Analytic{}, nil
	case MethodRDP:
		return RDP{}, nil
	case MethodClassic:
		return Classic{}, nil
	case MethodZhao:
		return Zhao{}, nil
	case MethodPLD:
		return PLD{}, nil
	}
	return nil, fmt.Errorf("%w: method %q", ErrInvalid, string(m))
}

// Event is one sensitivity-normalised noise mechanism that ran Steps times:
// a Gaussian mechanism with noise multiplier Z (noise standard deviation Z
// times the L2 sensitivity) applied to a Poisson subsample with rate Q.
// Q = 1 is the plain Gaussian mechanism.
type Event struct {
	// Q is the Poisson sampling rate, 0 < Q <= 1.
	Q float64 `json:"q"`
	// Z is the noise multiplier, Z > 0.
	Z float64 `json:"z"`
	// Steps is how many times the mechanism ran, Steps >= 1.
	Steps int `json:"steps"`
}

// Gaussian returns the event of one plain Gaussian mechanism.
func Gaussian(z float64) Event { return Event{Q: 1, Z: z, Steps: 1} }

// Validate reports the first parameter outside its domain.
func (e Event) Validate() error {
	if err := checkQ(e.Q); err != nil {
		return err
	}
	if err := checkZ(e.Z); err != nil {
		return err
	}
	return checkSteps(e.Steps)
}

// ParseEvent decodes an event from JSON ({"q":..,"z":..,"steps":..}),
// strictly: unknown fields, trailing data and invalid parameters are errors.
func ParseEvent(data []byte) (Event, error) {
	var e Event
	if err := jsonstrict.Decode(data, &e); err != nil {
		return Event{}, fmt.Errorf("%w: event: %v", ErrInvalid, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, fmt.Errorf("event: %w", err)
	}
	return e, nil
}

// Guarantee is an (Epsilon, Delta)-DP guarantee and how it was obtained.
type Guarantee struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Method  Method  `json:"method"`
	// Order is the optimal Rényi order (RDP only; 0 otherwise).
	Order float64 `json:"order,omitempty"`
	// Interval is the discretisation interval of the privacy loss (PLD
	// only; 0 otherwise).
	Interval float64 `json:"interval,omitempty"`
}

// Accountant bounds the privacy loss of a composition of events. The
// returned epsilon is an upper bound on the true one for the given delta.
// Implementations are stateless values, safe for concurrent use.
type Accountant interface {
	// Epsilon returns the guarantee of the adaptive composition of events at
	// delta. It returns ErrInvalid for bad parameters and ErrUnsupported for
	// events the method cannot bound.
	Epsilon(delta float64, events ...Event) (Guarantee, error)
	// Method names the accountant.
	Method() Method
}

func validateAll(delta float64, events []Event) error {
	if err := checkDelta(delta); err != nil {
		return err
	}
	if len(events) == 0 {
		return fmt.Errorf("%w: no events", ErrInvalid)
	}
	for i, e := range events {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return nil
}

// Analytic is the exact accountant for compositions of Gaussian mechanisms
// without subsampling. A Gaussian mechanism with multiplier z is mu-GDP with
// mu = 1/z; the adaptive composition of mu_i-GDP mechanisms is
// sqrt(sum mu_i^2)-GDP (Dong, Roth & Su 2019, Corollary 3.3), and mu-GDP is
// exactly the privacy profile of Balle & Wang 2018, Theorem 8 with z = 1/mu
// (Dong, Roth & Su 2019, Corollary 2.13). Events with Q < 1 are unsupported.
type Analytic struct{}

// Method returns MethodAnalytic.
func (Analytic) Method() Method { return MethodAnalytic }

// EffectiveZ returns the single noise multiplier equivalent to the
// composition of Gaussian events: (sum_i steps_i / z_i^2)^(-1/2) (Dong,
// Roth & Su, "Gaussian Differential Privacy", Corollary 3.3). It is
// computed as z_min (sum_i steps_i (z_min/z_i)^2)^(-1/2), every term at
// most steps_i, so that no z in float64's range over- or underflows.
func EffectiveZ(events ...Event) (float64, error) {
	zmin := math.Inf(1)
	for i, e := range events {
		if err := e.Validate(); err != nil {
			return 0, fmt.Errorf("event %d: %w", i, err)
		}
		if e.Q != 1 {
			return 0, fmt.Errorf("%w: event %d is subsampled (q = %v); the analytic accountant is exact only for q = 1, use rdp", ErrUnsupported, i, e.Q)
		}
		zmin = math.Min(zmin, e.Z)
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("%w: no events", ErrInvalid)
	}
	var s float64
	for _, e := range events {
		r := zmin / e.Z
		s += float64(e.Steps) * r * r
	}
	return zmin / math.Sqrt(s), nil
}

// Epsilon implements Accountant.
func (Analytic) Epsilon(delta float64, events ...Event) (Guarantee, error) {
	if err := validateAll(delta, events); err != nil {
		return Guarantee{}, err
	}
	z, err := EffectiveZ(events...)
	if err != nil {
		return Guarantee{}, err
	}
	eps, err := GaussianEpsilon(z, delta)
	if err != nil {
		return Guarantee{}, err
	}
	return Guarantee{Epsilon: eps, Delta: delta, Method: MethodAnalytic}, nil
}

// RDP is the Rényi DP accountant: the RDP curves of the events (Mironov,
// Talwar & Zhang 2019 for subsampled events, Mironov 2017 Prop. 7 for plain
// Gaussians) are added over the orders (Mironov 2017, Proposition 1) and
// converted with RDPToDP. Orders nil means DefaultOrders().
type RDP struct {
	Orders []float64
}

// Method returns MethodRDP.
func (RDP) Method() Method { return MethodRDP }

// Curve returns the orders and the composed RDP curve of the events.
func (r RDP) Curve(events ...Event) (orders, rdp []float64, err error) {
	orders = r.Orders
	if orders == nil {
		orders = DefaultOrders()
	}
	for _, a := range orders {
		if err := checkOrder(a); err != nil {
			return nil, nil, err
		}
	}
	rdp = make([]float64, len(orders))
	for i, e := range events {
		if err := e.Validate(); err != nil {
			return nil, nil, fmt.Errorf("event %d: %w", i, err)
		}
		for k, a := range orders {
			rdp[k] += float64(e.Steps) * sgmRDP(e.Q, e.Z, a)
		}
	}
	return orders, rdp, nil
}

// Epsilon implements Accountant.
func (r RDP) Epsilon(delta float64, events ...Event) (Guarantee, error) {
	if err := validateAll(delta, events); err != nil {
		return Guarantee{}, err
	}
	orders := r.Orders
	if orders == nil {
		orders = DefaultOrders()
	} else {
		orders = append([]float64(nil), orders...)
		slices.Sort(orders)
	}
	for _, a := range orders {
		if err := checkOrder(a); err != nil {
			return Guarantee{}, err
		}
	}
	eps, order := prunedEpsilon(orders, delta, func(a float64) float64 {
		var t float64
		for _, e := range events {
			t += float64(e.Steps) * sgmRDP(e.Q, e.Z, a)
		}
		return t
	})
	return Guarantee{Epsilon: eps * (1 + safetyPad), Delta: delta, Method: MethodRDP, Order: order}, nil
}

// convert is the per-order conversion of RDPToDP: nondecreasing in r.
func convert(a, r, logDelta, delta float64) float64 {
	if delta*delta+math.Expm1(-r) >= 0 {
		return 0
	}
	return r + math.Log1p(-1/a) - (logDelta+math.Log(a))/(a-1)
}

// prunedEpsilon minimises the conversion of the composed curve rdp over the
// ascending orders, skipping orders that provably cannot win: Rényi
// divergence is nondecreasing in the order (van Erven & Harremoës 2014,
// Theorem 3), so rdp at the nearest evaluated lower order bounds rdp(a) from
// below, and with it the epsilon at a. Skipping affects only which order is
// reported, never the validity of the bound: the result is always the
// conversion of a computed curve value.
func prunedEpsilon(orders []float64, delta float64, rdp func(float64) float64) (eps, order float64) {
	logDelta := math.Log(delta)
	known := make([]float64, len(orders))
	done := make([]bool, len(orders))
	eps, order = math.Inf(1), math.NaN()
	eval := func(i int) {
		known[i], done[i] = rdp(orders[i]), true
		if e := convert(orders[i], known[i], logDelta, delta); e < eps {
			eps, order = e, orders[i]
		}
	}
	// Seed with the cheap small integer orders, where optima usually lie.
	for i, a := range orders {
		if a == math.Trunc(a) && a <= 12 {
			eval(i)
		}
	}
	if math.IsInf(eps, 1) {
		eval(len(orders) / 2)
	}
	lower := 0.0 // composed rdp at the largest evaluated order below a
	for i, a := range orders {
		if done[i] {
			lower = math.Max(lower, known[i])
			continue
		}
		if convert(a, lower, logDelta, delta) >= eps {
			continue
		}
		eval(i)
		lower = math.Max(lower, known[i])
	}
	return math.Max(eps, 0), order
}

// Classic is the classic Gaussian mechanism bound (ClassicEpsilon) for a
// single plain Gaussian event.
type Classic struct{}

// Method returns MethodClassic.
func (Classic) Method() Method { return MethodClassic }

// Epsilon implements Accountant.
func (Classic) Epsilon(delta float64, events ...Event) (Guarantee, error) {
	z, err := singleGaussian(MethodClassic, delta, events)
	if err != nil {
		return Guarantee{}, err
	}
	eps, err := ClassicEpsilon(z, delta)
	if err != nil {
		return Guarantee{}, err
	}
	return Guarantee{Epsilon: eps, Delta: delta, Method: MethodClassic}, nil
}

// Zhao is the closed form of Zhao et al. 2019 (ZhaoEpsilon) for a single plain
// Gaussian event.
type Zhao struct{}

// Method returns MethodZhao.
func (Zhao) Method() Method { return MethodZhao }

// Epsilon implements Accountant.
func (Zhao) Epsilon(delta float64, events ...Event) (Guarantee, error) {
	z, err := singleGaussian(MethodZhao, delta, events)
	if err != nil {
		return Guarantee{}, err
	}
	eps, err := ZhaoEpsilon(z, delta)
	if err != nil {
		return Guarantee{}, err
	}
	return Guarantee{Epsilon: eps, Delta: delta, Method: MethodZhao}, nil
}

func singleGaussian(m Method, delta float64, events []Event) (float64, error) {
	if err := validateAll(delta, events); err != nil {
		return 0, err
	}
	if len(events) != 1 || events[0].Q != 1 || events[0].Steps != 1 {
		return 0, fmt.Errorf("%w: the %s bound covers one plain Gaussian mechanism (q = 1, steps = 1); use analytic or rdp for compositions", ErrUnsupported, m)
	}
	return events[0].Z, nil
}

// Calibrate returns the smallest noise multiplier z (to a relative 1e-6,
// rounded up) for which Steps runs of the mechanism with sampling rate q
// satisfy (eps, delta)-DP under the accountant. It bisects on z, relying on
// the accountant being monotone in z, and checks the result: the epsilon at
// the returned z is at or below eps (never overshoot: the printed epsilon
// must be an upper bound).
func Calibrate(acc Accountant, eps, delta, q float64, steps int) (float64, error) {
	if err := checkEpsilon(eps); err != nil {
		return 0, err
	}
	if err := validateAll(delta, []Event{{Q: q, Z: 1, Steps: steps}}); err != nil {
		return 0, err
	}
	epsAt := func(z float64) (float64, error) {
		g, err := acc.Epsilon(delta, Event{Q: q, Z: z, Steps: steps})
		if errors.Is(err, ErrOutOfRange) {
			// A closed form outside its range certifies nothing at z.
			return math.Inf(1), nil
		}
		return g.Epsilon, err
	}
	lo, hi := 0.0, 1.0
	for {
		e, err := epsAt(hi)
		if err != nil {
			return 0, err
		}
		if e <= eps {
			break
		}
		lo, hi = hi, hi*2
		if hi > 1e6 {
			return 0, fmt.Errorf("%w: no z below 1e6 reaches epsilon %v at delta %v (q = %v, steps = %d)", ErrUnreachable, eps, delta, q, steps)
		}
	}
	if lo == 0 {
		lo = hi / 2
		for {
			e, err := epsAt(lo)
			if err != nil {
				return 0, err
			}
			if e > eps {
				break
			}
			hi, lo = lo, lo/2
			if lo < 1e-3 {
				return 0, fmt.Errorf("%w: epsilon %v is met by every z >= 1e-3; the accountant is not informative here", ErrUnreachable, eps)
			}
		}
	}
	for hi-lo > 1e-6*hi {
		mid := lo + (hi-lo)/2
		e, err := epsAt(mid)
		if err != nil {
			return 0, err
		}
		if e <= eps {
			hi = mid
		} else {
			lo = mid
		}
	}
	if e, err := epsAt(hi); err != nil || e > eps {
		return 0, fmt.Errorf("accountant: calibration check failed at z = %v (epsilon %v > %v): %w", hi, e, eps, err)
	}
	return hi, nil
}
