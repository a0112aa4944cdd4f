package sims

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// BanditConfig sizes the contextual-bandit personalization task (Bandit).
// Every field is a public constant of the simulator: the click model's
// parameters are drawn once, at construction, from a generator seeded with
// ItemSeed, so two simulators with the same config have the same model.
type BanditConfig struct {
	// SegmentProbs are the probabilities of the user's segment (one-hot
	// features), each >= 0, summing to 1. Default 0.5, 0.3, 0.2.
	SegmentProbs []float64
	// DeviceProbs are the probabilities of the user's device (one-hot
	// features), each >= 0, summing to 1. Default 0.6 (mobile), 0.4
	// (desktop).
	DeviceProbs []float64
	// Continuous is the number of continuous features, each uniform on
	// [-1, 1] (>= 0). Default 3.
	Continuous int
	// Items is the catalogue size A (>= 2). Default 10.
	Items int
	// ItemScale is the standard deviation of each component of an item
	// vector w_a (finite, >= 0). Default 1.
	ItemScale float64
	// BaseLogit is the mean item bias b_a (finite). Default -1.5.
	BaseLogit float64
	// BiasStd is the standard deviation of the item biases around
	// BaseLogit (finite, >= 0): item popularity. Default 0.5.
	BiasStd float64
	// ItemSeed seeds the draw of the item vectors and biases. Default 3.
	ItemSeed uint64
}

// DefaultBanditConfig returns the registered bandit's config: d = 3 + 2 + 3
// = 8 features, A = 10 items.
func DefaultBanditConfig() BanditConfig {
	return BanditConfig{
		SegmentProbs: []float64{0.5, 0.3, 0.2}, DeviceProbs: []float64{0.6, 0.4}, Continuous: 3,
		Items: 10, ItemScale: 1, BaseLogit: -1.5, BiasStd: 0.5, ItemSeed: 3,
	}
}

// ErrBanditConfig marks an invalid BanditConfig.
var ErrBanditConfig = errors.New("sims: bad bandit config")

// Validate reports every problem of the config in one error.
func (c BanditConfig) Validate() error {
	var errs []error
	bad := func(cond bool, format string, args ...any) {
		if cond {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	for _, d := range []struct {
		name string
		p    []float64
	}{{"SegmentProbs", c.SegmentProbs}, {"DeviceProbs", c.DeviceProbs}} {
		sum, ok := 0.0, len(d.p) > 0
		for _, v := range d.p {
			ok = ok && v >= 0 && finite(v)
			sum += v
		}
		bad(!ok || math.Abs(sum-1) > 1e-9, "%s %v, want at least one probability, each >= 0, summing to 1", d.name, d.p)
	}
	bad(c.Continuous < 0, "Continuous %d, want >= 0", c.Continuous)
	bad(c.Items < 2, "Items %d, want >= 2", c.Items)
	bad(!(c.ItemScale >= 0) || !finite(c.ItemScale), "ItemScale %v, want finite and >= 0", c.ItemScale)
	bad(!finite(c.BaseLogit), "BaseLogit %v, want finite", c.BaseLogit)
	bad(!(c.BiasStd >= 0) || !finite(c.BiasStd), "BiasStd %v, want finite and >= 0", c.BiasStd)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrBanditConfig, err)
	}
	return nil
}

// Dim returns the feature dimension d: segments + devices + continuous.
func (c BanditConfig) Dim() int { return len(c.SegmentProbs) + len(c.DeviceProbs) + c.Continuous }

// Bandit is a contextual-bandit personalization task: one decision per
// session, what production personalizers mostly serve. Reset draws a user
// with public-distribution features x in R^d: a one-hot segment (drawn with
// SegmentProbs), a one-hot device (DeviceProbs), then Continuous features
// uniform on [-1, 1], in that order; the observation is x. The action is an
// item a of the catalogue, the reward is a click (1) or not (0), and the
// episode terminates after that one step (the observation is left at x).
//
// The click model is logistic and known: P(click | x, a) = sigmoid(w_a . x
// + b_a), with item vectors w_a whose components are N(0, ItemScale²) and
// biases b_a ~ N(BaseLogit, BiasStd²), drawn at construction from
// PCG(ItemSeed, 0x6a7) in the order w_0, b_0, w_1, b_1, ... (fixed public
// parameters, not per user). With the defaults the best item differs across
// users, so personalization matters: BanditBaselines shows the best fixed
// item well above a uniformly random one and well below the per-user
// optimum.
type Bandit struct {
	cfg   BanditConfig
	w     []float64 // Items x Dim, row a is w_a
	b     []float64 // Items
	x     []float64 // current user's features
	rng   *rand.Rand
	oLow  []float64
	oHigh []float64
	done  bool
}

// NewBandit validates cfg and builds the simulator and its click model.
func NewBandit(cfg BanditConfig) (*Bandit, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.SegmentProbs = append([]float64(nil), cfg.SegmentProbs...)
	cfg.DeviceProbs = append([]float64(nil), cfg.DeviceProbs...)
	d, A := cfg.Dim(), cfg.Items
	e := &Bandit{cfg: cfg, w: make([]float64, A*d), b: make([]float64, A), x: make([]float64, d),
		oLow: make([]float64, d), oHigh: make([]float64, d)}
	rng := rand.New(rand.NewPCG(cfg.ItemSeed, 0x6a7))
	for a := range A {
		for j := range d {
			e.w[a*d+j] = cfg.ItemScale * rng.NormFloat64()
		}
		e.b[a] = cfg.BaseLogit + cfg.BiasStd*rng.NormFloat64()
	}
	cat := len(cfg.SegmentProbs) + len(cfg.DeviceProbs)
	for j := range d {
		e.oHigh[j] = 1
		if j >= cat {
			e.oLow[j] = -1
		}
	}
	return e, nil
}

// Config returns the simulator's config (its slices are shared; do not
// modify them).
func (e *Bandit) Config() BanditConfig { return e.cfg }

// Item returns item a's vector w_a (shared; do not modify) and bias b_a.
func (e *Bandit) Item(a int) ([]float64, float64) {
	d := len(e.x)
	return e.w[a*d : (a+1)*d], e.b[a]
}

// ObservationSpace is the box of the features: [0, 1] for the one-hot
// features, [-1, 1] for the continuous ones.
func (e *Bandit) ObservationSpace() Space { return Space{Kind: Box, Low: e.oLow, High: e.oHigh} }

// ActionSpace is discrete over the Items items.
func (e *Bandit) ActionSpace() Space { return Space{Kind: Discrete, N: e.cfg.Items} }

// MaxSteps is 1: one decision per session.
func (e *Bandit) MaxSteps() int { return 1 }

// Reset draws a new user's features from rng into the simulator and obs.
func (e *Bandit) Reset(rng *rand.Rand, obs []float64) {
	e.rng = rng
	e.drawUser(rng, e.x)
	e.done = false
	e.observe(obs)
}

// drawUser writes the features of a user drawn from rng into x (len Dim):
// the segment, the device, then the continuous features.
func (e *Bandit) drawUser(rng *rand.Rand, x []float64) {
	clear(x)
	o := 0
	for _, p := range [][]float64{e.cfg.SegmentProbs, e.cfg.DeviceProbs} {
		x[o+pickIndex(p, rng.Float64())] = 1
		o += len(p)
	}
	for j := o; j < len(x); j++ {
		x[j] = 2*rng.Float64() - 1
	}
}

// pickIndex returns the category of a uniform draw u in [0, 1) under the
// probabilities p (the last category absorbs rounding).
func pickIndex(p []float64, u float64) int {
	for i, pi := range p[:len(p)-1] {
		if u < pi {
			return i
		}
		u -= pi
	}
	return len(p) - 1
}

// Features returns the current user's features x (shared; do not modify).
func (e *Bandit) Features() []float64 { return e.x }

// ClickProb is the exact click probability of item a for the current user:
// sigmoid(w_a . x + b_a).
func (e *Bandit) ClickProb(a int) float64 { return e.clickProb(e.x, a) }

// ClickProbs writes ClickProb(a) for every item into dst (len Items).
func (e *Bandit) ClickProbs(dst []float64) {
	if len(dst) != e.cfg.Items {
		panic(fmt.Sprintf("sims: Bandit click probabilities need length %d, got %d", e.cfg.Items, len(dst)))
	}
	for a := range dst {
		dst[a] = e.clickProb(e.x, a)
	}
}

// clickProb is sigmoid(w_a . x + b_a).
func (e *Bandit) clickProb(x []float64, a int) float64 {
	d := len(x)
	z := e.b[a]
	for j, v := range e.w[a*d : (a+1)*d] {
		z += v * x[j]
	}
	return 1 / (1 + math.Exp(-z))
}

// Step serves item a.Index to the current user: reward 1 with probability
// ClickProb(a.Index), else 0, and the episode terminates (reported both
// terminated and, at MaxSteps = 1, truncated). Stepping a
// terminated episode panics, as does an action outside the catalogue.
func (e *Bandit) Step(a Action, obs []float64) (float64, bool, bool) {
	if a.Index < 0 || a.Index >= e.cfg.Items || a.Vec != nil {
		panic(fmt.Sprintf("sims: Bandit action %d outside [0, %d)", a.Index, e.cfg.Items))
	}
	if e.done {
		panic("sims: Bandit stepped after its one decision; Reset first")
	}
	p := e.clickProb(e.x, a.Index)
	e.done = true
	e.observe(obs)
	// One decision: terminated, and truncated too since the elapsed count
	// reaches MaxSteps (the Env contract); terminal takes precedence for
	// every consumer (no bootstrap from V).
	if e.rng.Float64() < p {
		return 1, true, true
	}
	return 0, true, true
}

func (e *Bandit) observe(obs []float64) {
	if len(obs) != len(e.x) {
		panic(fmt.Sprintf("sims: Bandit observation needs length %d, got %d", len(e.x), len(obs)))
	}
	copy(obs, e.x)
}

// BanditBaselines are the expected clicks per session of the reference
// policies, each the average of exact click probabilities over Users users
// drawn from the feature distribution (Monte Carlo over users only: no
// click is sampled).
type BanditBaselines struct {
	// Users is the number of users averaged over.
	Users int `json:"users"`
	// Uniform serves a uniformly random item: mean_a P(click | x, a).
	Uniform float64 `json:"uniform"`
	// BestFixed serves BestArm to everyone: the best fixed arm.
	BestFixed float64 `json:"best_fixed"`
	// BestArm is the item with the highest average click probability.
	BestArm int `json:"best_arm"`
	// Oracle serves each user its own best item: max_a P(click | x, a),
	// the per-user optimum regret is measured against.
	Oracle float64 `json:"oracle"`
	// ArmMeans is the average click probability of each item.
	ArmMeans []float64 `json:"arm_means"`
}

// Baselines returns the reference policies' expected clicks over users
// users drawn from rng (its own stream: the simulator's current user is
// left as it is). It panics if users < 1.
func (e *Bandit) Baselines(users int, rng *rand.Rand) BanditBaselines {
	if users < 1 {
		panic("sims: Bandit baselines need >= 1 user")
	}
	A := e.cfg.Items
	x := make([]float64, len(e.x))
	bl := BanditBaselines{Users: users, ArmMeans: make([]float64, A)}
	// Sums in float64 over up to millions of terms in [0, 1]: the rounding
	// error is far below the Monte Carlo error over users.
	var uni, orc float64
	for range users {
		e.drawUser(rng, x)
		best, sum := 0.0, 0.0
		for a := range A {
			p := e.clickProb(x, a)
			bl.ArmMeans[a] += p
			sum += p
			best = max(best, p)
		}
		uni += sum / float64(A)
		orc += best
	}
	n := float64(users)
	bl.Uniform, bl.Oracle = uni/n, orc/n
	for a := range bl.ArmMeans {
		bl.ArmMeans[a] /= n
		if bl.ArmMeans[a] > bl.ArmMeans[bl.BestArm] {
			bl.BestArm = a
		}
	}
	bl.BestFixed = bl.ArmMeans[bl.BestArm]
	return bl
}

// DrawUser draws a user's features from rng into x (len Dim) without
// changing the simulator's current user: held-out users for evaluating a
// policy exactly with ClickProbsFor.
func (e *Bandit) DrawUser(rng *rand.Rand, x []float64) {
	if len(x) != len(e.x) {
		panic(fmt.Sprintf("sims: Bandit features need length %d, got %d", len(e.x), len(x)))
	}
	e.drawUser(rng, x)
}

// ClickProbsFor writes the exact click probability of every item for a user
// with features x into dst (len Items).
func (e *Bandit) ClickProbsFor(dst, x []float64) {
	if len(dst) != e.cfg.Items || len(x) != len(e.x) {
		panic(fmt.Sprintf("sims: Bandit click probabilities need lengths %d and %d, got %d and %d", e.cfg.Items, len(e.x), len(dst), len(x)))
	}
	for a := range dst {
		dst[a] = e.clickProb(x, a)
	}
}

// mustBandit builds the default bandit, whose default configuration always
// validates.
func mustBandit() Env {
	e, err := NewBandit(DefaultBanditConfig())
	if err != nil {
		panic(err)
	}
	return e
}

// BanditUsers is a fixed set of held-out users of a Bandit with the exact
// click probability of every item for each: the reference on which policies
// and the baselines are scored exactly (Monte Carlo over users only; no
// click is drawn). Simulation only: the users are draws from the public
// feature distribution, not anybody's data.
type BanditUsers struct {
	n, d, a int
	x, p    []float64 // n x d features, n x a click probabilities
}

// HeldOut draws users held-out users from rng (its own stream: the
// simulator's current user is left as it is) and stores their exact click
// probabilities.
func (e *Bandit) HeldOut(users int, rng *rand.Rand) (*BanditUsers, error) {
	if users < 1 {
		return nil, fmt.Errorf("sims: %d held-out bandit users, want >= 1", users)
	}
	d, A := len(e.x), e.cfg.Items
	u := &BanditUsers{n: users, d: d, a: A, x: make([]float64, users*d), p: make([]float64, users*A)}
	for i := range users {
		x := u.x[i*d : (i+1)*d]
		e.drawUser(rng, x)
		e.ClickProbsFor(u.p[i*A:(i+1)*A], x)
	}
	return u, nil
}

// Each calls f with every held-out user's features, in order (f must not
// keep or change x).
func (u *BanditUsers) Each(f func(x []float64)) {
	for i := range u.n {
		f(u.x[i*u.d : (i+1)*u.d])
	}
}

// Len returns the number of held-out users.
func (u *BanditUsers) Len() int { return u.n }

// Value returns the exact expected click per session of a policy over the
// held-out users: the mean over users x of sum_a pi(a | x) P(click | x, a),
// where probs writes pi(. | x) into dst (len Items; it must not keep x).
func (u *BanditUsers) Value(probs func(dst, x []float64)) float64 {
	pi := make([]float64, u.a)
	v := 0.0
	for i := range u.n {
		probs(pi, u.x[i*u.d:(i+1)*u.d])
		for a, q := range u.p[i*u.a : (i+1)*u.a] {
			v += pi[a] * q
		}
	}
	return v / float64(u.n)
}

// Baselines returns the reference policies' exact expected clicks on the
// held-out users: a uniformly random item, the item with the highest mean
// click probability on them (the best fixed item), and each user's own best
// item (the oracle).
func (u *BanditUsers) Baselines() BanditBaselines {
	bl := BanditBaselines{Users: u.n, ArmMeans: make([]float64, u.a)}
	var uni, orc float64
	for i := range u.n {
		best, sum := 0.0, 0.0
		for a, p := range u.p[i*u.a : (i+1)*u.a] {
			bl.ArmMeans[a] += p
			sum += p
			best = max(best, p)
		}
		uni += sum / float64(u.a)
		orc += best
	}
	n := float64(u.n)
	bl.Uniform, bl.Oracle = uni/n, orc/n
	for a := range bl.ArmMeans {
		bl.ArmMeans[a] /= n
		if bl.ArmMeans[a] > bl.ArmMeans[bl.BestArm] {
			bl.BestArm = a
		}
	}
	bl.BestFixed = bl.ArmMeans[bl.BestArm]
	return bl
}
