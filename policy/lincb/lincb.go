// Package lincb is a private linear contextual bandit: a linear reward
// model per action, learned from Gaussian-noised sufficient statistics
// released once per block of users, and served with inverse-gap weighting.
//
// # The learner
//
// A user with features x is served an action a and returns a reward y. The
// features enter as phi = clip(x, C)/C, x scaled to L2 norm at most the
// public bound C (so ||phi|| <= 1), and the reward as r = (y - mid)/half,
// y clamped to the public range [lo, hi] with mid its centre and half its
// half-width (|r| <= 1). The user's contribution to the statistics is the
// vector
//
//	u = [g vech(phi phi^T), r phi]
//
// in action a's slot and zero elsewhere, with vech the upper triangle
// (diagonal included) and g > 0 the public Gram weight. A contribution with
// a non-finite feature or reward is the zero vector (it keeps its place in
// the block). Its L2 norm is at most
//
//	Delta = sqrt(g^2 + 1),
//
// since ||vech(phi phi^T)|| <= ||phi phi^T||_F = ||phi||^2 <= 1 and
// ||r phi|| <= 1.
//
// Users arrive in blocks of public sizes n_0 = FirstBlock, n_{k+1} =
// floor(Growth n_k) (capped at MaxBlock). At the end of block k the block's
// sum of contributions is released with independent Gaussian noise N(0,
// (z Delta)^2) on every coordinate (the exact sampler of package noise).
// The model is post-processing of every block released so far: per action,
// the released Gram sum G_a (divided by g) and vector b_a, summed over the
// blocks, give theta_a = V diag(1/max(lambda_i, f)) V^T b_a, where V
// diag(lambda) V^T = G_a and the floor f = Ridge 2 sqrt(d) s is the expected
// spectral norm of the summed Gram noise (s its standard deviation per
// entry; at least MinFloor): a noisy, possibly indefinite Gram is never
// inverted where the noise dominates it (Shariff & Sheffet 2018,
// "Differentially Private Contextual Linear Bandits", regularise the noisy
// Gram the same way). The predicted reward of action a is mid + half
// theta_a . phi.
//
// # Serving
//
// The released model serves by inverse-gap weighting (Abe & Long 1999;
// Foster & Rakhlin 2020, "Beyond UCB: Optimal and Efficient Contextual
// Bandits with Regression Oracles", SquareCB): with the predicted rewards
// yhat, the best action b and gamma = Gamma N^GammaExponent (N the users
// released so far), every other action a gets probability 1/(A + gamma
// (yhat_b - yhat_a)/(hi - lo)) and b the rest. Serving reads only the
// released model and the user's own features, so it is post-processing:
// the actions served carry no information about other users beyond the
// release.
//
// # Privacy
//
// Each user is in exactly one block, and the block's release is one
// Gaussian mechanism of sensitivity Delta under the zero-out neighbours of
// the agent's privacy model (a user's contribution replaced by zero): noise
// multiplier z. The blocks are disjoint, so a user's guarantee is that of
// one Gaussian mechanism with multiplier z (Epsilon: the analytic Gaussian
// mechanism, Balle & Wang 2018, "Improving the Gaussian Mechanism for
// Differential Privacy", Theorem 8), whatever the number of blocks.
package lincb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/sims"
)

// Config is the learner's public configuration.
type Config struct {
	// Actions is the number of actions A (>= 2) and Dim the feature
	// dimension d (1 to 1024).
	Actions int `json:"actions"`
	Dim     int `json:"dim"`
	// FeatureClip is the L2 bound C on the features (> 0): x is scaled to
	// norm at most C, then divided by C.
	FeatureClip float64 `json:"feature_clip"`
	// RewardLow and RewardHigh are the public reward range (finite, low <
	// high); rewards are clamped to it.
	RewardLow  float64 `json:"reward_low"`
	RewardHigh float64 `json:"reward_high"`
	// GramWeight is the weight g of the Gram part of a contribution (> 0):
	// how the noise is shared between the Gram and the reward vector.
	GramWeight float64 `json:"gram_weight"`
	// FirstBlock is the first block's users (>= 1), Growth the factor of
	// each next block's (>= 1) and MaxBlock the largest block (0: none).
	FirstBlock int     `json:"first_block"`
	Growth     float64 `json:"growth"`
	MaxBlock   int     `json:"max_block"`
	// Gamma and GammaExponent set inverse-gap weighting's gamma = Gamma
	// N^GammaExponent after N released users (Gamma > 0, exponent >= 0).
	Gamma         float64 `json:"gamma"`
	GammaExponent float64 `json:"gamma_exponent"`
	// Ridge scales the eigenvalue floor (>= 0) and MinFloor is its least
	// value (> 0).
	Ridge    float64 `json:"ridge"`
	MinFloor float64 `json:"min_floor"`
	// NoiseMultiplier is z (>= 0; 0: non-private, no noise).
	NoiseMultiplier float64 `json:"noise_multiplier"`
}

// DefaultConfig returns the settings chosen on the contextual bandit
// (docs/agent.md: tuned on seeds 1001-1040, measured on others) for A
// actions, d features of L2 norm up to clip and rewards in [0, 1].
func DefaultConfig(actions, dim int, clip float64) Config {
	return Config{Actions: actions, Dim: dim, FeatureClip: clip, RewardLow: 0, RewardHigh: 1,
		GramWeight: 1, FirstBlock: 1000, Growth: 1.3, Gamma: 40, GammaExponent: 0.5,
		Ridge: 1, MinFloor: 1e-6}
}

// ErrConfig marks an invalid Config.
var ErrConfig = errors.New("lincb: bad config")

// Validate reports every problem of the config.
func (c Config) Validate() error {
	var errs []error
	bad := func(cond bool, format string, args ...any) {
		if cond {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	bad(c.Actions < 2, "actions %d, want >= 2", c.Actions)
	bad(c.Dim < 1 || c.Dim > 1024, "dim %d, want in [1, 1024]", c.Dim)
	bad(!(c.FeatureClip > 0) || !finite(c.FeatureClip), "feature clip %v, want finite and > 0", c.FeatureClip)
	bad(!finite(c.RewardLow) || !finite(c.RewardHigh) || !(c.RewardLow < c.RewardHigh), "reward range [%v, %v], want finite with low < high", c.RewardLow, c.RewardHigh)
	bad(!(c.GramWeight > 0) || !finite(c.GramWeight), "gram weight %v, want finite and > 0", c.GramWeight)
	bad(c.FirstBlock < 1, "first block %d, want >= 1", c.FirstBlock)
	bad(!(c.Growth >= 1) || !finite(c.Growth), "growth %v, want finite and >= 1", c.Growth)
	bad(c.MaxBlock < 0, "max block %d, want >= 0", c.MaxBlock)
	bad(!(c.Gamma > 0) || !finite(c.Gamma), "gamma %v, want finite and > 0", c.Gamma)
	bad(!(c.GammaExponent >= 0) || !finite(c.GammaExponent), "gamma exponent %v, want finite and >= 0", c.GammaExponent)
	bad(!(c.Ridge >= 0) || !finite(c.Ridge), "ridge %v, want finite and >= 0", c.Ridge)
	bad(!(c.MinFloor > 0) || !finite(c.MinFloor), "min floor %v, want finite and > 0", c.MinFloor)
	bad(!(c.NoiseMultiplier >= 0) || !finite(c.NoiseMultiplier), "noise multiplier %v, want finite and >= 0", c.NoiseMultiplier)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// Sensitivity is Delta = sqrt(g^2 + 1), the largest L2 norm of one user's
// contribution (package documentation).
func (c Config) Sensitivity() float64 { return math.Hypot(c.GramWeight, 1) }

// Sigma is the standard deviation of the noise on every released
// coordinate, z Delta (0: non-private).
func (c Config) Sigma() float64 { return c.NoiseMultiplier * c.Sensitivity() }

// Epsilon is a user's epsilon at delta: one Gaussian mechanism with
// multiplier z (each user is in one block; analytic Gaussian mechanism,
// rounded up). It is +Inf for a non-private config.
func (c Config) Epsilon(delta float64) (float64, error) {
	if c.NoiseMultiplier == 0 {
		return math.Inf(1), nil
	}
	e, err := accountant.GaussianEpsilon(c.NoiseMultiplier, delta)
	if err != nil {
		return 0, fmt.Errorf("lincb: %w", err)
	}
	return e, nil
}

// NoiseFor returns the smallest noise multiplier whose user-level
// guarantee is (eps, delta) (analytic Gaussian mechanism).
func NoiseFor(eps, delta float64) (float64, error) {
	z, err := accountant.GaussianSigma(eps, delta)
	if err != nil {
		return 0, fmt.Errorf("lincb: %w", err)
	}
	return z, nil
}

// stride is the length of one action's slot: vech (d(d+1)/2) then the
// reward vector (d).
func (c Config) stride() int { return c.Dim*(c.Dim+1)/2 + c.Dim }

// Learner accumulates the current block's contributions, releases blocks
// and holds the model. It is not safe for concurrent use.
type Learner struct {
	cfg      Config
	block    []float64 // the current block's sum, Actions x stride
	released []float64 // the sum of the released (noised) blocks
	size     int       // the current block's public size
	in       int       // users in the current block
	blocks   int       // blocks released
	users    int       // users in released blocks
	model    *Model
	phi, u   []float64 // workspaces: features, one contribution
}

// New validates cfg and returns a learner with nothing released: its model
// serves every action with probability 1/A.
func New(cfg Config) (*Learner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Learner{cfg: cfg, size: cfg.FirstBlock, phi: make([]float64, cfg.Dim), u: make([]float64, cfg.stride()),
		block: make([]float64, cfg.Actions*cfg.stride()), released: make([]float64, cfg.Actions*cfg.stride())}
	l.model = &Model{cfg: cfg}
	return l, nil
}

// Config returns the learner's config.
func (l *Learner) Config() Config { return l.cfg }

// Model returns the current released model (immutable: a release replaces
// it).
func (l *Learner) Model() *Model { return l.model }

// BlockSize is the current block's public size and InBlock the users
// observed in it so far.
func (l *Learner) BlockSize() int { return l.size }

// InBlock returns the users observed in the current block.
func (l *Learner) InBlock() int { return l.in }

// Blocks and Users are the released blocks and the users in them.
func (l *Learner) Blocks() int { return l.blocks }

// Users returns the users in released blocks.
func (l *Learner) Users() int { return l.users }

// scale returns the factor f with phi = f x (x scaled to norm at most C,
// then divided by C) and whether x is valid: of length Dim, every value
// finite. The norm is computed scaled by the largest magnitude, so that it
// does not overflow.
func (c Config) scale(x []float64) (float64, bool) {
	if len(x) != c.Dim {
		return 0, false
	}
	m := 0.0
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false
		}
		m = max(m, math.Abs(v))
	}
	if m == 0 {
		return 1 / c.FeatureClip, true
	}
	s := 0.0
	for _, v := range x {
		s += (v / m) * (v / m)
	}
	if n := m * math.Sqrt(s); n > c.FeatureClip {
		return 1 / n, true
	}
	return 1 / c.FeatureClip, true
}

// features writes phi = f x into dst (len Dim) and reports whether x is
// valid (scale). ||phi|| <= 1, also after rounding.
func (c Config) features(dst, x []float64) bool {
	f, ok := c.scale(x)
	if !ok {
		return false
	}
	for i, v := range x {
		dst[i] = v * f
	}
	if s := sumSquares(dst); s > 1 {
		r := (1 - 1e-15) / math.Sqrt(s)
		for i := range dst {
			dst[i] *= r
		}
	}
	return true
}

func sumSquares(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return s
}

// reward returns r = (clamp(y) - mid)/half and whether y is not NaN.
func (c Config) reward(y float64) (float64, bool) {
	if math.IsNaN(y) {
		return 0, false
	}
	y = min(max(y, c.RewardLow), c.RewardHigh)
	half := (c.RewardHigh - c.RewardLow) / 2
	r := (y - (c.RewardLow + half)) / half
	return min(max(r, -1), 1), true
}

// BlockSize returns the public size of block k (0-based): FirstBlock, then
// each floor(Growth x the last), at most MaxBlock (if > 0).
func (c Config) BlockSize(k int) int {
	n := c.FirstBlock
	for range k {
		next := c.next(n)
		if next == n {
			break // the schedule is constant from here
		}
		n = next
	}
	return n
}

// maxBlockSize bounds a block's size whatever the schedule (2^40 users), so
// that a growing schedule never overflows.
const maxBlockSize = 1 << 40

// next is the size of the block after one of n users.
func (c Config) next(n int) int {
	f := float64(n) * c.Growth
	if c.MaxBlock > 0 {
		f = min(f, float64(c.MaxBlock))
	}
	return max(int(min(f, maxBlockSize)), 1)
}

// UsersBefore returns the users in blocks 0 to k-1 (their public sizes).
func (c Config) UsersBefore(k int) int {
	total, n := 0, c.FirstBlock
	for i := range k {
		total += n
		next := c.next(n)
		if next == n {
			return total + (k-1-i)*n
		}
		n = next
	}
	return total
}

// BlockOf returns the block of the user-th user (0-based) under the
// public schedule.
func (c Config) BlockOf(user int) int {
	k, total, n := 0, 0, c.FirstBlock
	for {
		if user < total+n {
			return k
		}
		total += n
		k++
		next := c.next(n)
		if next == n {
			return k + (user-total)/n
		}
		n = next
	}
}

// Stride is the length of one action's slot of the statistics.
func (c Config) Stride() int { return c.stride() }

// Contribution writes the user's contribution to action a's slot into dst
// (len Stride: vech(g phi phi^T), then r phi) and reports whether it is
// non-zero: a non-finite or wrongly sized feature vector, a NaN reward or
// an action out of range gives the zero vector. Its L2 norm is at most
// Sensitivity.
func (c Config) Contribution(dst, x []float64, a int, y float64, phi []float64) bool {
	clear(dst)
	r, okY := c.reward(y)
	if a < 0 || a >= c.Actions || !okY || len(phi) != c.Dim || !c.features(phi, x) {
		return false
	}
	d, k := c.Dim, 0
	for i := range d {
		gi := c.GramWeight * phi[i]
		for j := i; j < d; j++ {
			dst[k] = gi * phi[j]
			k++
		}
	}
	for j := range d {
		dst[k+j] = r * phi[j]
	}
	return true
}

// Observe adds one user's contribution to the current block: features x
// (len Dim), the action a served and the reward y. An invalid record
// (wrong length, NaN or infinite feature, NaN reward, action out of range)
// contributes zero but still counts in the block; Observe reports whether
// the record was used. Call Release when InBlock reaches BlockSize.
func (l *Learner) Observe(x []float64, a int, y float64) bool {
	l.in++
	if !l.cfg.Contribution(l.u, x, a, y, l.phi) {
		return false
	}
	st := l.cfg.stride()
	for i, v := range l.u {
		l.block[a*st+i] += v
	}
	return true
}

// Full reports whether the current block has reached its size.
func (l *Learner) Full() bool { return l.in >= l.size }

// Release noises the current block's sum with N(0, Sigma^2) per coordinate
// from g (nil only for a non-private config), adds it to the released
// statistics, computes the new model and starts the next block. It returns
// the users of the released block (its public size, also for a block
// flushed early).
func (l *Learner) Release(g *noise.Gaussian) (int, error) {
	sigma := l.cfg.Sigma()
	if sigma > 0 {
		if g == nil {
			return 0, errors.New("lincb: a private release needs a noise generator")
		}
		g.Add(l.block, sigma)
	}
	for i, v := range l.block {
		l.released[i] += v
	}
	clear(l.block)
	n := l.size
	l.blocks++
	l.users += n
	l.in = 0
	l.size = l.cfg.BlockSize(l.blocks)
	m, err := l.fit()
	if err != nil {
		return 0, err
	}
	l.model = m
	return n, nil
}

// Floor is the eigenvalue floor after the released blocks: Ridge 2 sqrt(d)
// sqrt(blocks) Sigma / g (the expected spectral norm of the summed Gram
// noise, in Gram units), at least MinFloor.
func (l *Learner) Floor() float64 { return floor(l.cfg, l.blocks) }

func floor(c Config, blocks int) float64 {
	s := math.Sqrt(float64(blocks)) * c.Sigma() / c.GramWeight
	return max(c.Ridge*2*math.Sqrt(float64(c.Dim))*s, c.MinFloor)
}

// fit computes the model from the released statistics.
func (l *Learner) fit() (*Model, error) { return Fit(l.cfg, l.released, l.blocks, l.users) }

// Fit computes the model from released statistics: stats, the sum of
// blocks released blocks (len Actions x Stride) holding users users.
// It is post-processing of the releases.
func Fit(c Config, stats []float64, blocks, users int) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	d, st := c.Dim, c.stride()
	if len(stats) != c.Actions*st || blocks < 0 || users < 0 {
		return nil, fmt.Errorf("lincb: %d statistics, %d blocks, %d users; want %d values and counts >= 0", len(stats), blocks, users, c.Actions*st)
	}
	if blocks == 0 {
		return &Model{cfg: c}, nil
	}
	m := &Model{cfg: c, theta: make([]float64, c.Actions*d), fitted: true,
		gamma: c.Gamma * math.Pow(float64(users), c.GammaExponent)}
	f := floor(c, blocks)
	G := mat.NewSymDense(d, nil)
	var es mat.EigenSym
	var V mat.Dense
	vb := mat.NewVecDense(d, nil)
	th := mat.NewVecDense(d, nil)
	for a := range c.Actions {
		s := stats[a*st : (a+1)*st]
		for _, v := range s {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("lincb: action %d: a non-finite statistic", a)
			}
		}
		k := 0
		for i := range d {
			for j := i; j < d; j++ {
				G.SetSym(i, j, s[k]/c.GramWeight)
				k++
			}
		}
		if !es.Factorize(G, true) {
			return nil, fmt.Errorf("lincb: action %d: the eigendecomposition of the released Gram failed", a)
		}
		vals := es.Values(nil)
		es.VectorsTo(&V)
		b := mat.NewVecDense(d, s[k:k+d])
		vb.MulVec(V.T(), b)
		for i := range d {
			vb.SetVec(i, vb.AtVec(i)/max(vals[i], f))
		}
		th.MulVec(&V, vb)
		for j := range d {
			v := th.AtVec(j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("lincb: action %d: non-finite coefficient", a)
			}
			m.theta[a*d+j] = v
		}
	}
	return m, nil
}

// Model is a released model: a coefficient vector per action and the
// inverse-gap weighting's gamma. It is immutable and safe for concurrent
// use.
type Model struct {
	cfg    Config
	theta  []float64 // Actions x Dim
	gamma  float64
	fitted bool
}

// Gamma returns the inverse-gap weighting's gamma (0 before the first
// release).
func (m *Model) Gamma() float64 { return m.gamma }

// Theta returns action a's coefficients (shared; do not modify), nil
// before the first release.
func (m *Model) Theta(a int) []float64 {
	if !m.fitted {
		return nil
	}
	d := m.cfg.Dim
	return m.theta[a*d : (a+1)*d]
}

// Predict writes the predicted reward of every action for features x into
// dst (len Actions): mid + half theta_a . phi(x), and mid for every action
// before the first release or for an invalid x.
func (m *Model) Predict(dst, x []float64) {
	c := m.cfg
	half := (c.RewardHigh - c.RewardLow) / 2
	mid := c.RewardLow + half
	f, ok := c.scale(x)
	for a := range dst {
		if !m.fitted || !ok {
			dst[a] = mid
			continue
		}
		s := 0.0
		for j, t := range m.theta[a*c.Dim : (a+1)*c.Dim] {
			s += t * (x[j] * f)
		}
		dst[a] = mid + half*s
	}
}

// Probs writes the probability of serving each action to a user with
// features x into dst (len Actions): inverse-gap weighting over the
// predicted rewards (package documentation); uniform before the first
// release or for an invalid x. It allocates nothing.
func (m *Model) Probs(dst, x []float64) {
	c := m.cfg
	A := float64(c.Actions)
	m.Predict(dst, x)
	best := 0
	for a, v := range dst {
		if v > dst[best] {
			best = a
		}
	}
	top, rng := dst[best], c.RewardHigh-c.RewardLow
	sum := 0.0
	for a, v := range dst {
		if a == best {
			continue
		}
		p := 1 / (A + m.gamma*(top-v)/rng)
		dst[a] = p
		sum += p
	}
	dst[best] = max(1-sum, 0)
}

// Sample returns the action the probabilities p (Probs's) give a uniform u
// in [0, 1): the first whose cumulative probability passes u, skipping
// zero probabilities (the last positive one absorbs rounding).
func Sample(p []float64, u float64) int {
	last := 0
	for i, q := range p {
		if q <= 0 {
			continue
		}
		if u < q {
			return i
		}
		u -= q
		last = i
	}
	return last
}

// Evaluate returns the mean undiscounted return of the model over
// episodes fresh episodes of env (discrete actions, observations of the
// model's dimension), each action drawn from its probabilities with rng.
// Simulation only: it reads the public simulator and a released model.
func Evaluate(env sims.Env, m *Model, episodes int, rng *rand.Rand) float64 {
	obs := make([]float64, m.cfg.Dim)
	p := make([]float64, m.cfg.Actions)
	sum := 0.0
	for range episodes {
		env.Reset(rng, obs)
		for {
			m.Probs(p, obs)
			r, term, trunc := env.Step(sims.Action{Index: Sample(p, rng.Float64())}, obs)
			sum += r
			if term || trunc {
				break
			}
		}
	}
	return sum / float64(max(episodes, 1))
}
