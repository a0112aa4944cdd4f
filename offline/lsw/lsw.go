// Package lsw is DP-LSW, the output-perturbation baseline of differentially
// private on-policy evaluation (Balle, Gomrokchi & Precup 2016,
// "Differentially private policy evaluation", ICML, arXiv 1603.02010): a
// first-visit Monte Carlo estimate F_X(s) of the value of every state of a
// finite (or publicly discretised) state set, a weighted least-squares fit of
// linear features to it, and Gaussian noise calibrated to a data-dependent
// smooth upper bound of the fit's local sensitivity (Nissim, Raskhodnikova &
// Smith 2007, "Smooth sensitivity and sampling in private data analysis").
//
// # The estimator (Balle et al. 2016, §4, "DP-LSW")
//
//	F_X(s)  = mean over the c_X(s) trajectories that visit s of the discounted
//	          return from their first visit to s (0 when c_X(s) = 0)
//	theta_X = argmin_theta sum_s rho_s (F_X(s) - phi_s . theta)^2
//	        = (Gamma^1/2 Phi)^+ Gamma^1/2 F_X,   Gamma = diag(rho)
//
// with public state weights rho (Config.Weights) and public features Phi.
//
// # The noise (Balle et al. 2016, §4, privacy theorem of DP-LSW)
//
//	theta~ = theta_X + sigma_X N(0, I_d)
//	sigma_X = alpha * W * ||(Gamma^1/2 Phi)^+||_2 * sqrt(Psi_beta(X))
//	Psi_beta(X) = max_{k >= 0} e^{-k beta} sum_s rho_s / max(c_X(s) - k, 1)^2
//	alpha = 5 sqrt(2 ln(2/delta)) / epsilon,  beta = epsilon / (4 (d + ln(2/delta)))
//
// W bounds the range of a discounted return. The paper has rewards in
// [0, R_max] and W = R_max / (1 - gamma); here rewards are clipped to the
// public range [RewardLow, RewardHigh] and W = (max(0, RewardHigh) -
// min(0, RewardLow)) / (1 - gamma), which is the paper's value for
// RewardLow = 0.
//
// Why this is (epsilon, delta)-DP for the addition or removal of one
// trajectory (the unit of the ledger): theta_X is the fixed linear map
// (Gamma^1/2 Phi)^+ Gamma^1/2 of F_X. Adding or removing one trajectory
// changes each F_X(s) by at most W / max(c_X(s), 1) (a mean of returns in an
// interval of width W containing 0), so the local sensitivity is at most
// A_0(X) = W ||(Gamma^1/2 Phi)^+||_2 sqrt(sum_s rho_s / max(c_X(s), 1)^2); a
// dataset within k changes has counts >= c_X(s) - k, so A_k(X), the same sum
// with max(c_X(s) - k, 1), bounds its local sensitivity, and A_k(X) <=
// A_{k+1}(Y) for neighbours X, Y. Hence max_k e^{-k beta} A_k(X) is a
// beta-smooth upper bound on the local sensitivity (NRS 2007, §3), and so is
// sigma_X / alpha = max_k e^{-k beta / 2} A_k(X), which is larger. Gaussian
// noise with scale alpha times a beta-smooth bound, for the alpha and beta
// above, is (epsilon, delta)-DP in d dimensions (NRS 2007, §2: admissibility
// of the Gaussian). Taking the square root outside the maximum, as the paper
// does, is kept so that the calibration is the paper's; it only adds noise.
// The operator norm ||.||_2 is what the sensitivity argument uses (the
// paper's authors' code uses the larger Frobenius norm).
//
// The admissibility lemma is stated for epsilon <= 1; Config.Validate
// refuses larger epsilons rather than extrapolate it.
//
// # What is released
//
// Only theta~ (Result.Theta) is covered by the guarantee. sigma_X itself is
// a deterministic function of the visit counts: released beside theta~ it
// would tell neighbouring datasets apart (it changes when one trajectory is
// added), so Result does not hold it; it, Psi_beta(X), the visit counts and
// theta_X are in Diagnostics, which EstimateWithDiagnostics returns for
// research on data one may look at and which the guarantee does NOT cover.
// The public parameters of the calibration (alpha, beta, W and the norm of
// the public fit) may be released: they are the same for every dataset.
//
// # Extreme records
//
// Every trajectory's contribution is bounded before it enters a sum
// (FirstVisit): rewards are clamped to the public range (NaN counts as 0,
// +-Inf as the bound), returns to the interval of width W, and each
// trajectory adds at most one visit per state. So no record, however
// extreme, can move F_X(s) by more than W / max(c_X(s), 1).
//
// DP-LSW evaluates the policy that generated the data: it is on-policy only.
package lsw

import (
	"dprl/noise"

	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// ErrRange marks a DP-LSW input outside the range its guarantee covers.
var ErrRange = errors.New("lsw: outside the guarantee's range")

// StateMap maps observations to the finite state set DP-LSW works on.
type StateMap interface {
	// NumStates is the number of states.
	NumStates() int
	// Index returns the state of an observation, or an error for an
	// observation it cannot map.
	Index(obs []float64) (int, error)
	// Represent writes an observation standing for state s into dst (the
	// one-hot vector, or a grid cell's centre); its features are phi_s.
	Represent(dst []float64, s int)
}

// Tabular is the state set of one-hot observations of length N.
type Tabular struct{ N int }

// NumStates returns N.
func (t Tabular) NumStates() int { return t.N }

// Index returns the position of the one in a one-hot observation.
func (t Tabular) Index(obs []float64) (int, error) {
	if len(obs) != t.N {
		return 0, fmt.Errorf("lsw: tabular state: observation length %d, want %d", len(obs), t.N)
	}
	idx := -1
	for i, v := range obs {
		switch {
		case v == 0:
		case v == 1 && idx < 0:
			idx = i
		default:
			return 0, fmt.Errorf("lsw: tabular state: observation is not one-hot (obs[%d] = %v)", i, v)
		}
	}
	if idx < 0 {
		return 0, errors.New("lsw: tabular state: observation has no one")
	}
	return idx, nil
}

// Represent writes the one-hot vector of s.
func (t Tabular) Represent(dst []float64, s int) {
	clear(dst[:t.N])
	dst[s] = 1
}

// Grid is the public discretisation of a box into Bins equal cells per
// component; observations outside the box go to the nearest cell.
type Grid struct {
	Low, High []float64
	Bins      int
}

// NewGrid checks the box and returns the grid.
func NewGrid(low, high []float64, bins int) (Grid, error) {
	if len(low) == 0 || len(low) != len(high) {
		return Grid{}, fmt.Errorf("lsw: grid bounds of lengths %d and %d", len(low), len(high))
	}
	if bins < 1 {
		return Grid{}, fmt.Errorf("lsw: grid bins %d, want >= 1", bins)
	}
	n := 1
	for i := range low {
		if !(high[i] > low[i]) || math.IsInf(high[i]-low[i], 0) {
			return Grid{}, fmt.Errorf("lsw: grid bounds [%v, %v] on component %d: want finite low < high", low[i], high[i], i)
		}
		n *= bins
		if n > 1<<16 {
			return Grid{}, fmt.Errorf("lsw: grid of %d bins in %d dimensions is too large", bins, len(low))
		}
	}
	return Grid{Low: append([]float64(nil), low...), High: append([]float64(nil), high...), Bins: bins}, nil
}

// NumStates returns Bins^d.
func (g Grid) NumStates() int {
	n := 1
	for range g.Low {
		n *= g.Bins
	}
	return n
}

// Index returns the cell of obs (first component fastest).
func (g Grid) Index(obs []float64) (int, error) {
	if len(obs) != len(g.Low) {
		return 0, fmt.Errorf("lsw: grid state: observation length %d, want %d", len(obs), len(g.Low))
	}
	idx, stride := 0, 1
	for j, x := range obs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("lsw: grid state: obs[%d] = %v", j, x)
		}
		b := int(math.Floor((x - g.Low[j]) / (g.High[j] - g.Low[j]) * float64(g.Bins)))
		b = min(max(b, 0), g.Bins-1)
		idx += b * stride
		stride *= g.Bins
	}
	return idx, nil
}

// Represent writes the centre of cell s.
func (g Grid) Represent(dst []float64, s int) {
	for j := range g.Low {
		b := s % g.Bins
		s /= g.Bins
		dst[j] = g.Low[j] + (float64(b)+0.5)*(g.High[j]-g.Low[j])/float64(g.Bins)
	}
}

// Config configures DP-LSW. Every field is a privacy parameter or public
// knowledge; none has a default.
type Config struct {
	// Epsilon and Delta are the target guarantee: 0 < Epsilon <= 1,
	// 0 < Delta < 1.
	Epsilon, Delta float64
	// Gamma is the discount of the returns, 0 <= Gamma < 1.
	Gamma float64
	// RewardLow and RewardHigh are the public reward bounds; rewards are
	// clipped to them. RewardLow < RewardHigh.
	RewardLow, RewardHigh float64
	// Weights are the public state weights rho_s >= 0 (one per state, not
	// all zero): the least-squares weighting and the sensitivity sum.
	Weights []float64
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if !(c.Epsilon > 0 && c.Epsilon <= 1) {
		errs = append(errs, fmt.Errorf("%w: dp-lsw epsilon = %v, want 0 < epsilon <= 1 (the smooth-sensitivity Gaussian lemma's range)", ErrRange, c.Epsilon))
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		errs = append(errs, fmt.Errorf("%w: dp-lsw delta = %v, want 0 < delta < 1", ErrRange, c.Delta))
	}
	if !(c.Gamma >= 0 && c.Gamma < 1) {
		errs = append(errs, fmt.Errorf("%w: dp-lsw gamma = %v, want 0 <= gamma < 1", ErrRange, c.Gamma))
	}
	if !(c.RewardLow < c.RewardHigh) || math.IsInf(c.RewardHigh-c.RewardLow, 0) {
		errs = append(errs, fmt.Errorf("%w: dp-lsw reward range [%v, %v], want finite low < high", ErrRange, c.RewardLow, c.RewardHigh))
	}
	var sum float64
	for i, w := range c.Weights {
		if !(w >= 0) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Errorf("%w: dp-lsw weight[%d] = %v, want >= 0", ErrRange, i, w))
		}
		sum += w
	}
	if !(sum > 0) {
		errs = append(errs, fmt.Errorf("%w: dp-lsw state weights are all zero", ErrRange))
	}
	return errors.Join(errs...)
}

// ReturnRange is W, the width of an interval containing 0 and every
// discounted return of rewards in [low, high].
func ReturnRange(low, high, gamma float64) float64 {
	return (math.Max(0, high) - math.Min(0, low)) / (1 - gamma)
}

// Alpha is the noise-to-smooth-sensitivity ratio for (epsilon, delta):
// 5 sqrt(2 ln(2/delta)) / epsilon (NRS 2007 Gaussian admissibility, as used by
// Balle et al. 2016 §4).
func Alpha(epsilon, delta float64) float64 {
	return 5 * math.Sqrt(2*math.Log(2/delta)) / epsilon
}

// Beta is the smoothness for (epsilon, delta) in d dimensions:
// epsilon / (4 (d + ln(2/delta))) (same sources as Alpha).
func Beta(epsilon, delta float64, d int) float64 {
	return epsilon / (4 * (float64(d) + math.Log(2/delta)))
}

// Psi is Psi_beta(X) = max_{k >= 0} e^{-k beta} sum_s w_s / max(c_s - k, 1)^2
// over the states with w_s > 0. The maximum is over k = 0..max c_s: beyond,
// every term is w_s and the factor only decays.
func Psi(weights []float64, counts []int, beta float64) float64 {
	maxC := 0
	for s, c := range counts {
		if weights[s] > 0 {
			maxC = max(maxC, c)
		}
	}
	best := 0.0
	for k := 0; k <= maxC; k++ {
		var sum float64
		for s, c := range counts {
			if w := weights[s]; w > 0 {
				m := float64(max(c-k, 1))
				sum += w / (m * m)
			}
		}
		best = math.Max(best, math.Exp(-float64(k)*beta)*sum)
	}
	return best
}

// Trajectory is one session as DP-LSW reads it: the state of every step and
// the reward that followed it.
type Trajectory struct {
	States  []int
	Rewards []float64
}

// valid reports whether tr has one reward per state and every state in
// [0, numStates).
func (tr *Trajectory) valid(numStates int) bool {
	if len(tr.States) != len(tr.Rewards) {
		return false
	}
	for _, s := range tr.States {
		if s < 0 || s >= numStates {
			return false
		}
	}
	return true
}

// ClampReward limits a reward to the public range [low, high]: +Inf gives
// high, -Inf low, and NaN 0, which contributes nothing (0 lies in the
// return range of ReturnRange whatever the bounds). No record can push a
// return outside the range the noise is calibrated to.
func ClampReward(r, low, high float64) float64 {
	if math.IsNaN(r) {
		return 0
	}
	return math.Min(high, math.Max(low, r))
}

// FirstVisit returns F_X (the mean discounted return from the first visit of
// each state, 0 for unvisited states) and the visit counts c_X(s), with
// rewards clamped to [low, high] (ClampReward).
//
// Each trajectory's contribution is bounded before it enters the sums,
// whatever it holds: it adds at most 1 to each count (first visits only),
// and each of its returns is clamped to [min(0, low), max(0, high)] /
// (1 - gamma), the interval of width ReturnRange the sensitivity argument
// uses (the clamp only guards against rounding: the returns of clamped
// rewards lie in it). A trajectory with a state outside [0, numStates) or
// with as many rewards as states contributes nothing (Estimate refuses
// such input; FirstVisit never panics on it).
func FirstVisit(trajs []Trajectory, numStates int, gamma, low, high float64) (f []float64, counts []int) {
	v := NewVisits(numStates, gamma, low, high)
	for _, tr := range trajs {
		v.Add(tr)
	}
	return v.Means()
}

// Visits accumulates FirstVisit one trajectory at a time: adding the
// trajectories in order and calling Means gives exactly FirstVisit. It holds
// O(numStates) values and one trajectory's returns, whatever the number of
// trajectories, so DP-LSW can stream a log (EstimateVisits).
type Visits struct {
	gamma, low, high float64
	retLo, retHi     float64
	f                []float64
	counts           []int
	seen             []int // seen[s] = i+1 once trajectory i visited s
	ret              []float64
	i                int
}

// NewVisits returns empty sums over numStates states, for discount gamma and
// public reward bounds [low, high].
func NewVisits(numStates int, gamma, low, high float64) *Visits {
	return &Visits{gamma: gamma, low: low, high: high,
		retLo: math.Min(0, low) / (1 - gamma), retHi: math.Max(0, high) / (1 - gamma),
		f: make([]float64, numStates), counts: make([]int, numStates), seen: make([]int, numStates)}
}

// Add adds one trajectory's first visits. A trajectory FirstVisit would
// skip (a state outside [0, numStates), or not one reward per state) adds
// nothing, and Add reports it as false.
func (v *Visits) Add(tr Trajectory) bool {
	i := v.i
	v.i++
	if !tr.valid(len(v.f)) {
		return false
	}
	n := len(tr.States)
	v.ret = append(v.ret[:0], make([]float64, n+1)...)
	ret := v.ret
	for t := n - 1; t >= 0; t-- {
		ret[t] = ClampReward(tr.Rewards[t], v.low, v.high) + v.gamma*ret[t+1]
	}
	for t, s := range tr.States {
		if v.seen[s] == i+1 {
			continue
		}
		v.seen[s] = i + 1
		v.counts[s]++
		v.f[s] += ClampReward(ret[t], v.retLo, v.retHi)
	}
	return true
}

// Means returns F_X and the visit counts of the trajectories added so far
// (new slices; the sums go on).
func (v *Visits) Means() (f []float64, counts []int) {
	f, counts = slices.Clone(v.f), slices.Clone(v.counts)
	for s, c := range counts {
		if c > 0 {
			f[s] /= float64(c)
		}
	}
	return f, counts
}

// Result is a DP-LSW release: exactly what its (epsilon, delta) guarantee
// covers. Theta is the noisy weight vector; the other fields are public:
// functions of the configuration and the public features only, the same for
// every dataset. The noise scale sigma_X is NOT here: it is a deterministic
// function of the visit counts (the smooth sensitivity bound), so printing
// it would tell neighbouring datasets apart; it is in Diagnostics.
type Result struct {
	// Theta is the released (noisy) weight vector.
	Theta []float64 `json:"theta"`
	// Alpha and Beta are the public calibration constants for (epsilon,
	// delta) and the feature dimension.
	Alpha float64 `json:"alpha"`
	Beta  float64 `json:"beta"`
	// PinvNorm is ||(Gamma^1/2 Phi)^+||_2 of the public features and
	// weights.
	PinvNorm float64 `json:"pinv_norm"`
	// ReturnRange is W of the public reward bounds and gamma.
	ReturnRange float64 `json:"return_range"`
}

// Diagnostics are statistics of a DP-LSW run on the private data. They are
// NOT covered by the privacy guarantee: each is a deterministic function of
// the data, released without noise. They are for research on data one may
// look at, never to be printed beside the epsilon of a private run.
type Diagnostics struct {
	// Sigma is the noise standard deviation per coordinate, sigma_X.
	Sigma float64 `json:"sigma"`
	// Psi is Psi_beta(X) of the visit counts.
	Psi float64 `json:"psi"`
	// Visited is the number of states with c_X(s) > 0.
	Visited int `json:"visited"`
	// NonPrivate is theta_X, the fit before noise.
	NonPrivate []float64 `json:"non_private_theta"`
}

// Fit returns the weighted least-squares map P = (Gamma^1/2 Phi)^+ Gamma^1/2
// (d x N) and ||(Gamma^1/2 Phi)^+||_2, for features phi (N rows of length d)
// and weights w. Singular values below 1e-10 times the largest are treated
// as zero, in both.
func Fit(phi [][]float64, w []float64) (*mat.Dense, float64, error) {
	n, d := len(phi), len(phi[0])
	g := mat.NewDense(n, d, nil)
	for s := range n {
		sw := math.Sqrt(w[s])
		for k := range d {
			g.Set(s, k, sw*phi[s][k])
		}
	}
	var svd mat.SVD
	if !svd.Factorize(g, mat.SVDThin) {
		return nil, 0, errors.New("lsw: SVD of the weighted features failed")
	}
	vals := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	tol := 1e-10 * vals[0]
	minVal := math.Inf(1)
	inv := mat.NewDense(len(vals), len(vals), nil)
	for i, sv := range vals {
		if sv > tol {
			inv.Set(i, i, 1/sv)
			minVal = math.Min(minVal, sv)
		}
	}
	if math.IsInf(minVal, 1) {
		return nil, 0, errors.New("lsw: the weighted features are all zero")
	}
	// P = V Sigma^+ U^T Gamma^1/2.
	var p mat.Dense
	p.Product(&v, inv, u.T())
	for s := range n {
		sw := math.Sqrt(w[s])
		for k := range d {
			p.Set(k, s, p.At(k, s)*sw)
		}
	}
	return &p, 1 / minVal, nil
}

// Check reports whether DP-LSW can run with this configuration on the
// public features phi (N rows of length d, one per state), from public
// values alone: the configuration is valid, the weighted features have a
// least-squares fit, and the noise scale stays in the Gaussian sampler's
// range for every dataset. Call it before charging a run.
func (c Config) Check(phi [][]float64) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if len(phi) == 0 || len(c.Weights) != len(phi) {
		return fmt.Errorf("lsw: %d states, %d weights", len(phi), len(c.Weights))
	}
	_, _, err := c.fit(phi)
	return err
}

// fit is Fit with the check that sigma_X stays below the Gaussian sampler's
// range (2^900) for every dataset: Psi <= sum_s w_s whatever the counts, so
// a public bound decides (checked against 2^899 for rounding).
func (c Config) fit(phi [][]float64) (*mat.Dense, float64, error) {
	p, pinv, err := Fit(phi, c.Weights)
	if err != nil {
		return nil, 0, err
	}
	var sumW float64
	for _, w := range c.Weights {
		sumW += w
	}
	ret := ReturnRange(c.RewardLow, c.RewardHigh, c.Gamma)
	if sigmaMax := Alpha(c.Epsilon, c.Delta) * ret * pinv * math.Sqrt(sumW); !(sigmaMax <= 0x1p899) {
		return nil, 0, fmt.Errorf("%w: dp-lsw noise scale could reach %v, beyond the Gaussian sampler's 2^900: narrow the reward bounds", ErrRange, sigmaMax)
	}
	return p, pinv, nil
}

// Estimate runs DP-LSW on trajectories over the states of phi (phi[s] are the
// features of state s). Every draw comes from rng.
func Estimate(phi [][]float64, trajs []Trajectory, c Config, rng *rand.Rand) (Result, error) {
	v, err := visitsOf(phi, trajs, c)
	if err != nil {
		return Result{}, err
	}
	return estimate(phi, v, c, rng, nil)
}

// EstimateWithDiagnostics runs Estimate exactly (the same draws from rng,
// the same Result) and also returns the run's Diagnostics, which the privacy
// guarantee does NOT cover.
func EstimateWithDiagnostics(phi [][]float64, trajs []Trajectory, c Config, rng *rand.Rand) (Result, Diagnostics, error) {
	v, err := visitsOf(phi, trajs, c)
	if err != nil {
		return Result{}, Diagnostics{}, err
	}
	var diag Diagnostics
	res, err := estimate(phi, v, c, rng, &diag)
	return res, diag, err
}

// EstimateVisits runs DP-LSW on the first visits v accumulated over a log's
// trajectories (NewVisits with c's Gamma, RewardLow and RewardHigh, each
// trajectory added once): Estimate on those trajectories, the same release
// with the same draws, in O(numStates d) memory. The caller must refuse a
// log with a trajectory Visits.Add rejects, as Estimate does.
func EstimateVisits(phi [][]float64, v *Visits, c Config, rng *rand.Rand) (Result, error) {
	if err := v.check(len(phi), c); err != nil {
		return Result{}, err
	}
	return estimate(phi, v, c, rng, nil)
}

// EstimateVisitsWithDiagnostics is EstimateVisits with the run's
// Diagnostics, which the privacy guarantee does NOT cover.
func EstimateVisitsWithDiagnostics(phi [][]float64, v *Visits, c Config, rng *rand.Rand) (Result, Diagnostics, error) {
	if err := v.check(len(phi), c); err != nil {
		return Result{}, Diagnostics{}, err
	}
	var diag Diagnostics
	res, err := estimate(phi, v, c, rng, &diag)
	return res, diag, err
}

// check reports whether v was accumulated for n states and c's parameters.
func (v *Visits) check(n int, c Config) error {
	if len(v.f) != n || v.gamma != c.Gamma || v.low != c.RewardLow || v.high != c.RewardHigh {
		return fmt.Errorf("lsw: first visits of %d states at gamma %v, rewards [%v, %v]; the configuration has %d states at gamma %v, rewards [%v, %v]",
			len(v.f), v.gamma, v.low, v.high, n, c.Gamma, c.RewardLow, c.RewardHigh)
	}
	return nil
}

// visitsOf validates the trajectories and accumulates their first visits.
func visitsOf(phi [][]float64, trajs []Trajectory, c Config) (*Visits, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n := len(phi)
	if n == 0 || len(c.Weights) != n {
		return nil, fmt.Errorf("lsw: %d states, %d weights", n, len(c.Weights))
	}
	for i := range trajs {
		if !trajs[i].valid(n) {
			return nil, fmt.Errorf("lsw: trajectory %d: %d states and %d rewards, or a state outside [0, %d)", i, len(trajs[i].States), len(trajs[i].Rewards), n)
		}
	}
	v := NewVisits(n, c.Gamma, c.RewardLow, c.RewardHigh)
	for _, tr := range trajs {
		v.Add(tr)
	}
	return v, nil
}

func estimate(phi [][]float64, v *Visits, c Config, rng *rand.Rand, diag *Diagnostics) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	n := len(phi)
	if n == 0 || len(c.Weights) != n {
		return Result{}, fmt.Errorf("lsw: %d states, %d weights", n, len(c.Weights))
	}
	d := len(phi[0])
	p, pinv, err := c.fit(phi)
	if err != nil {
		return Result{}, err
	}
	alpha, beta, ret := Alpha(c.Epsilon, c.Delta), Beta(c.Epsilon, c.Delta, d), ReturnRange(c.RewardLow, c.RewardHigh, c.Gamma)
	f, counts := v.Means()
	theta := mat.NewVecDense(d, nil)
	theta.MulVec(p, mat.NewVecDense(n, f))
	res := Result{Alpha: alpha, Beta: beta, PinvNorm: pinv, ReturnRange: ret}
	psi := Psi(c.Weights, counts, res.Beta)
	sigma := res.Alpha * res.ReturnRange * res.PinvNorm * math.Sqrt(psi)
	sigma = math.Max(sigma, 0x1p-900) // the sampler's floor: only adds noise
	if diag != nil {
		diag.Sigma, diag.Psi = sigma, psi
		for _, cnt := range counts {
			if cnt > 0 {
				diag.Visited++
			}
		}
		diag.NonPrivate = append([]float64(nil), theta.RawVector().Data...)
	}
	res.Theta = make([]float64, d)
	for k := range d {
		res.Theta[k] = theta.AtVec(k)
	}
	if sigma > 0 {
		// Exact Gaussian noise on a grid fixed by sigma (package noise).
		noise.NewGaussian(rng).Add(res.Theta, sigma)
	}
	return res, nil
}
