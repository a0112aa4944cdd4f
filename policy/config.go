package policy

import (
	"errors"
	"fmt"
	"math"
)

// Mode selects the mechanism applied to the local updates.
type Mode int

// The modes. The zero value is invalid, so a DPConfig whose Mode was never set
// is rejected rather than silently non-private.
const (
	ModeUnset Mode = iota
	// ModeDP clips each local update to norm ClipNorm and adds Gaussian noise
	// with multiplier NoiseMultiplier > 0 (DPPG, Algorithm 2).
	ModeDP
	// ModeClipOnly clips as ModeDP but adds no noise; NoiseMultiplier must be
	// 0. Not private: for ablations.
	ModeClipOnly
	// ModePPO is the non-private baseline: no clipping, no noise (same code
	// path, fixed denominator K). ClipNorm and NoiseMultiplier must be 0.
	ModePPO
)

// String returns "dp", "clip-only", "ppo" or "unset".
func (m Mode) String() string {
	switch m {
	case ModeDP:
		return "dp"
	case ModeClipOnly:
		return "clip-only"
	case ModePPO:
		return "ppo"
	case ModeUnset:
		return "unset"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// DPConfig holds the privacy parameters of DPPG. No field has a
// zero-means-default: zero is an error unless documented as meaningful.
type DPConfig struct {
	// Mode selects DP, clip-only or the non-private PPO baseline. Required.
	Mode Mode
	// NoiseMultiplier z: the noise std on the averaged update is z*S/K.
	// ModeDP: finite and > 0. Other modes: must be 0 (non-private is explicit
	// through Mode, never through z = 0 alone).
	NoiseMultiplier float64
	// ClipNorm S: L2 bound on the joint local update [policy; value].
	// ModeDP and ModeClipOnly: finite and > 0. ModePPO: must be 0.
	// Table 3: 0.05 (control), 0.08 (dosing).
	ClipNorm float64
	// UsersPerUpdate K, the fixed denominator of the average, >= 1 (at most
	// MaxUsersPerUpdate in mode dp). Table 3: 8.
	UsersPerUpdate int
	// PolicyClipShare f in (0, 1): the policy block is clipped to
	// S_pi = S sqrt(f) and the value block to S_v = S sqrt(1-f), so
	// S_pi^2 + S_v^2 = S^2 and the joint update has norm <= S. Required in
	// ModeDP and ModeClipOnly; ignored (may be 0) in ModePPO. The paper
	// clips the policy only (S_pi = S); our defaults give the policy 0.8 of
	// the squared norm (S_pi = 0.894 S).
	PolicyClipShare float64
	// Noise selects how the noise of successive releases is correlated:
	// NoiseIndependent (the zero value) is Algorithm 2; NoiseTree,
	// NoiseSqrt and NoiseBandedSqrt release the same averaged updates with
	// correlated noise whose sum over releases stays small (see
	// Aggregator). Every choice gives each user the Gaussian mechanism of
	// multiplier z in one release, so the epsilon of z is the same. The
	// agent refuses NoiseTree and NoiseSqrt (in-process training only: their
	// accounting assumes each user enters one release); it runs
	// NoiseBandedSqrt with the participation pattern its ledger enforces
	// (at least Band releases between two of a user's).
	Noise Noise
	// Horizon N is the number of releases over which NoiseTree or NoiseSqrt
	// correlates the noise; the correlation restarts after N releases (each
	// user's update enters one of them). It sets the noise of each draw
	// (NoiseFactor). Must be >= 1 with NoiseTree and NoiseSqrt, and 0 with
	// NoiseIndependent and NoiseBandedSqrt (an unbounded stream).
	Horizon int
	// Band b is the number of bands of NoiseBandedSqrt's factor, 1 to
	// bandsens.MaxBand (1 is independent noise); 0 with every other noise.
	Band int
}

// NoiseFactor returns f such that every fresh noise draw has std z f S / K
// per coordinate (Mechanism.Factor; 1 for an unknown kind, which Validate
// refuses): with it each user's update is exactly the Gaussian mechanism of
// multiplier z.
func (c DPConfig) NoiseFactor() float64 {
	m, err := c.Noise.Mechanism()
	if err != nil {
		return 1
	}
	return m.Factor(c)
}

// MaxUsersPerUpdate bounds K (DPConfig.UsersPerUpdate) in mode dp, for
// every noise: the exact sampler's guarantee assumes the computed mean of
// the K clipped updates is within 2^-23 of its sensitivity S/K of the exact
// one (package noise, condition 1), and a float64 sum of K contributions of
// norm at most S has error below K^2 2^-53 S (Higham 2002, "Accuracy and
// Stability of Numerical Algorithms", Eq. (4.4)): K <= 2^15
// (docs/privacy.md, section 2).
const MaxUsersPerUpdate = 1 << 15

// checkRounding reports a configuration whose floating-point rounding could
// pass the part of the exact sampler's margin reserved for it
// (docs/privacy.md, section 2): in units of the sensitivity S/K, the mean
// of K contributions errs by at most K^2 2^-53, and the kind adds
// Mechanism.RoundingExtra 2^-53. Two neighbours differ in one mean and
// every other term is computed identically, so their computed values
// differ by at most twice these errors beyond the sensitivity: a total
// below 2^30 (times 2^-53: 2^-23) keeps the difference within the 2^-22
// the proof allows.
func (c DPConfig) checkRounding(m Mechanism) error {
	k2 := float64(c.UsersPerUpdate) * float64(c.UsersPerUpdate)
	extra := m.RoundingExtra(c)
	if v := k2 + extra; !(v <= 1<<30) {
		return fmt.Errorf("policy: dp: %v noise with K = %d and horizon %d: the rounding error of the released sums could pass the exact sampler's margin (K^2 + %.3g = %.3g, at most 2^30; docs/privacy.md, section 2): use a shorter horizon or a smaller K", c.Noise, c.UsersPerUpdate, c.Horizon, extra, v)
	}
	return nil
}

// CheckGrid reports whether the exact sampler's condition (2), z sqrt(d) <=
// 2^38 (package noise), holds over every release one update enters: d = n
// values in each of rows releases drawn with the same noise (rows = 1 for
// independent and tree noise, whose every node is its own Gaussian
// mechanism; the horizon for the square-root factorization; the band for
// bandmf), so that the grid rounding of all of them together stays within
// 2^-21 of the sensitivity (docs/privacy.md, section 2).
func (c DPConfig) CheckGrid(n int) error {
	if c.Mode != ModeDP {
		return nil
	}
	rows := 1
	if m, err := c.Noise.Mechanism(); err == nil {
		rows = m.GridRows(c)
	}
	if v := c.NoiseMultiplier * math.Sqrt(float64(n)*float64(rows)); !(v <= 1<<38) {
		return fmt.Errorf("policy: dp: noise multiplier %v over %d values in %d releases: z sqrt(d x rows) = %.3g, at most 2^38 for the exact sampler's grid (docs/privacy.md, section 2)", c.NoiseMultiplier, n, rows, v)
	}
	return nil
}

// Validate reports every problem at once.
func (c DPConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("policy: dp: "+format, args...)) }
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch c.Mode {
	case ModeDP:
		if !(c.NoiseMultiplier > 0) || !finite(c.NoiseMultiplier) {
			bad("noise multiplier z = %v, must be finite and > 0 in mode dp (z = 0 is non-private: use mode clip-only or ppo)", c.NoiseMultiplier)
		}
	case ModeClipOnly, ModePPO:
		if c.NoiseMultiplier != 0 {
			bad("noise multiplier z = %v, must be 0 in mode %v", c.NoiseMultiplier, c.Mode)
		}
	default:
		bad("mode %v, must be dp, clip-only or ppo", c.Mode)
	}
	if c.Mode == ModePPO {
		if c.ClipNorm != 0 {
			bad("clip norm S = %v, must be 0 in mode ppo (no clipping)", c.ClipNorm)
		}
	} else if c.Mode != ModeUnset {
		if !(c.ClipNorm > 0) || !finite(c.ClipNorm) {
			bad("clip norm S = %v, must be finite and > 0", c.ClipNorm)
		}
		if !(c.PolicyClipShare > 0 && c.PolicyClipShare < 1) {
			bad("policy clip share = %v, must be in (0, 1)", c.PolicyClipShare)
		}
	}
	if c.UsersPerUpdate < 1 {
		bad("users per update K = %d, must be >= 1", c.UsersPerUpdate)
	} else if c.Mode == ModeDP && c.UsersPerUpdate > MaxUsersPerUpdate {
		bad("users per update K = %d, at most %d (2^15) with noise: the exact sampler's floating-point precondition (docs/privacy.md, section 2)", c.UsersPerUpdate, MaxUsersPerUpdate)
	}
	m, err := c.Noise.Mechanism()
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, err := range m.CheckParams(c) {
			errs = append(errs, fmt.Errorf("policy: dp: %w", err))
		}
	}
	if len(errs) == 0 && c.Mode == ModeDP {
		if err := c.checkRounding(m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// clipNorms returns S_pi and S_v; both +Inf in ModePPO.
func (c DPConfig) clipNorms() (sPi, sV float64) {
	if c.Mode == ModePPO {
		return math.Inf(1), math.Inf(1)
	}
	return c.ClipNorm * math.Sqrt(c.PolicyClipShare), c.ClipNorm * math.Sqrt(1-c.PolicyClipShare)
}

// MomentReset selects how the local Adam state starts each iteration. Each
// choice is a function of the released g~ only (or of nothing), so none
// carries raw user data across users.
type MomentReset int

// The moment resets.
const (
	// ResetPaper sets m = -g~ and v = g~^2 without bias correction (DPPG App.
	// C.2.3). Then m/sqrt(v) = -sign(g~) elementwise whatever the scale of g~,
	// so with no gradient at all every user still steps by about the local
	// learning rate per coordinate along sign(g~) (3.1 lr over 4 Adam steps):
	// the released updates sustain themselves, and a converged policy keeps
	// drifting at a constant speed until it falls off (policy/REPRODUCE.md).
	ResetPaper MomentReset = iota
	// ResetSecond sets m = 0 and v = g~^2 without bias correction: the
	// adaptive scale of the paper's reset without its self-sustaining
	// momentum (no gradient, no motion).
	ResetSecond
	// ResetZero starts every user from zero moments with bias correction.
	ResetZero
)

// PPOConfig holds the learning hyperparameters of the per-user local update
// (Algorithm 3) and of the server step.
type PPOConfig struct {
	// Hidden lists the hidden layer widths of both the policy and the value
	// network. Table 3: 64, 64.
	Hidden []int
	// StepsPerUser T, the trajectory length the agent collects, >= 1.
	// LocalUpdate accepts any length >= 1; T sizes the workspaces. Table 3: 64.
	StepsPerUser int
	// Gamma is the discount, in [0, 1]. Table 3: 0.99.
	Gamma float64
	// Lambda is the GAE parameter, in [0, 1]. Table 3: 0.85 control, 0.97 dosing.
	Lambda float64
	// Epochs E, local epochs over the user's data, >= 1. Table 3: 8 control, 4 dosing.
	Epochs int
	// Minibatches per epoch, >= 1 (the trajectory is split into this many
	// near-equal shuffled minibatches; if T is smaller, into T). Table 3: 2.
	Minibatches int
	// EntropyCoef c_ent >= 0. Table 3: 0.36 control, 0.01 dosing.
	EntropyCoef float64
	// ValueCoef >= 0 weights the value loss 0.5 (V - R)^2 (CleanRL vf_coef).
	// Default 0.5.
	ValueCoef float64
	// ObsScale, if not empty, holds one public constant per observation
	// component: both networks see obs[i] * ObsScale[i]. It makes the
	// components of similar magnitude (CartPole's pole angle is ~10x smaller
	// than its other components), which matters here because Adam and the
	// isotropic DP noise move every weight by similar amounts. Its length must
	// be the observation dimension (checked by NewLearner and NewActorFor).
	ObsScale []float64
	// ValueScale c > 0 is a public constant in the units of the returns: the
	// critic's network predicts V(s)/c and its loss is 0.5 (net(s) - R/c)^2,
	// so a return of order c needs network outputs of order 1. With c = 1
	// (the usual) a critic whose update is clipped to a small norm cannot
	// reach CartPole's returns (~1/(1-gamma) = 100) within a few hundred
	// updates. 0 means 1.
	ValueScale float64
	// NormalizeAdvantages standardises the user's advantages (mean 0, std 1,
	// over the whole trajectory) before the epochs, as CleanRL does per
	// minibatch. Default true.
	NormalizeAdvantages bool
	// MomentReset says how ResetMoments seeds the local Adam state from the
	// released update g~ at every iteration. The zero value is the paper's.
	MomentReset MomentReset
	// Adam configures the local optimiser; Adam.LR is Table 3's learning rate
	// (7.26e-4 control, 9.25e-4 dosing).
	Adam AdamConfig
	// ServerLR eta of theta <- theta + eta g~, finite and > 0. Default 1.
	ServerLR float64
	// InitLogStd is the initial log standard deviation of a Gaussian policy.
	// Default 0.
	InitLogStd float64
}

// Validate reports every problem at once.
func (c PPOConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("policy: ppo: "+format, args...)) }
	for i, h := range c.Hidden {
		if h < 1 {
			bad("hidden[%d] = %d, must be >= 1", i, h)
		}
	}
	if c.StepsPerUser < 1 {
		bad("steps per user T = %d, must be >= 1", c.StepsPerUser)
	}
	if !(c.Gamma >= 0 && c.Gamma <= 1) {
		bad("gamma = %v, must be in [0, 1]", c.Gamma)
	}
	if !(c.Lambda >= 0 && c.Lambda <= 1) {
		bad("lambda = %v, must be in [0, 1]", c.Lambda)
	}
	if c.Epochs < 1 {
		bad("epochs E = %d, must be >= 1", c.Epochs)
	}
	if c.Minibatches < 1 {
		bad("minibatches = %d, must be >= 1", c.Minibatches)
	}
	if !(c.EntropyCoef >= 0) || math.IsInf(c.EntropyCoef, 0) {
		bad("entropy coef = %v, must be finite and >= 0", c.EntropyCoef)
	}
	if !(c.ValueCoef >= 0) || math.IsInf(c.ValueCoef, 0) {
		bad("value coef = %v, must be finite and >= 0", c.ValueCoef)
	}
	for i, v := range c.ObsScale {
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			bad("obs scale[%d] = %v, must be finite and non-zero", i, v)
		}
	}
	if !(c.ValueScale >= 0) || math.IsInf(c.ValueScale, 0) {
		bad("value scale = %v, must be finite and > 0 (0 means 1)", c.ValueScale)
	}
	if !(c.ServerLR > 0) || math.IsInf(c.ServerLR, 0) {
		bad("server lr = %v, must be finite and > 0", c.ServerLR)
	}
	if math.IsNaN(c.InitLogStd) || math.IsInf(c.InitLogStd, 0) {
		bad("init log std = %v, must be finite", c.InitLogStd)
	}
	if c.MomentReset < ResetPaper || c.MomentReset > ResetZero {
		bad("moment reset %d, must be 0 (paper), 1 (second moment only) or 2 (zero)", c.MomentReset)
	}
	if err := c.Adam.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("policy: ppo: %w", err))
	}
	return errors.Join(errs...)
}

// valueScale returns ValueScale, 1 if unset.
func (c PPOConfig) valueScale() float64 {
	if c.ValueScale == 0 {
		return 1
	}
	return c.ValueScale
}

// Config is a complete learner configuration.
type Config struct {
	PPO PPOConfig
	DP  DPConfig
}

// Validate reports every problem of both parts.
func (c Config) Validate() error { return errors.Join(c.PPO.Validate(), c.DP.Validate()) }

// DefaultControlConfig returns Table 3's control column (CartPole, Acrobot):
// gamma 0.99, lr 7.26e-4, 2 minibatches, E = 8, T = 64, S = 0.05, entropy
// 0.36, lambda 0.85, 64x64 hidden, K = 8; mode dp with z = 1 (Table 1's
// z = 1.0 runs) and policy clip share 0.8. Each call returns a fresh value.
func DefaultControlConfig() Config {
	return Config{
		PPO: PPOConfig{
			Hidden:              []int{64, 64},
			StepsPerUser:        64,
			Gamma:               0.99,
			Lambda:              0.85,
			Epochs:              8,
			Minibatches:         2,
			EntropyCoef:         0.36,
			ValueCoef:           0.5,
			NormalizeAdvantages: true,
			Adam:                AdamConfig{LR: 7.26e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-5},
			ServerLR:            1,
		},
		DP: DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 0.05, UsersPerUpdate: 8, PolicyClipShare: 0.8},
	}
}

// DefaultDosingConfig returns Table 3's dosing column: as the control column
// but lr 9.25e-4, E = 4, S = 0.08, entropy 0.01, lambda 0.97; z = 0.1 (the
// Dosing-0 runs of Table 1). Each call returns a fresh value.
func DefaultDosingConfig() Config {
	c := DefaultControlConfig()
	c.PPO.Adam.LR = 9.25e-4
	c.PPO.Epochs = 4
	c.PPO.EntropyCoef = 0.01
	c.PPO.Lambda = 0.97
	c.DP.ClipNorm = 0.08
	c.DP.NoiseMultiplier = 0.1
	return c
}

// DefaultMuJoCoConfig returns Table 3's MuJoCo column: lr 2.04e-4, 64
// minibatches, E = 8, T = 2048, S = 1.80, entropy 0.02, lambda 0.91; z = 1.
// Each call returns a fresh value.
func DefaultMuJoCoConfig() Config {
	c := DefaultControlConfig()
	c.PPO.Adam.LR = 2.04e-4
	c.PPO.Minibatches = 64
	c.PPO.StepsPerUser = 2048
	c.PPO.EntropyCoef = 0.02
	c.PPO.Lambda = 0.91
	c.DP.ClipNorm = 1.80
	return c
}
