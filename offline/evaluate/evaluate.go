// Package evaluate is off-policy evaluation of a target policy on a session
// log with linear features, as a mechanism of the offline budget protocol
// (budget.Run): GPOPE (gradient-perturbed GTD2, Xie et al., "Privacy
// preserving off-policy evaluation", Algorithm 1), DP-LSW (Balle, Gomrokchi &
// Precup, "Differentially private policy evaluation", 2016), and the
// non-private references LSTD(0) and weighted-importance LSTD(0). It calibrates
// the noise, states the run's cost (its ledger entry), sets up the target,
// features and public moments, and computes the estimate, its value at the
// environment's public start distribution and its MSPBE.
package evaluate

import (
	"dprl/noise"
	"dprl/profile"

	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"dprl/internal/fielderr"
	"dprl/internal/rng"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/offline/budget"
	"dprl/offline/gtd2"
	"dprl/offline/lsw"
	"dprl/offline/policies"
	"dprl/sessionlog"
	"dprl/sims"
)

// Method is an evaluation method.
type Method string

// The evaluation methods.
const (
	// GPOPE is gradient-perturbed GTD2 (private).
	GPOPE Method = "gpope"
	// LSTD is LSTD(0), on-policy only (not private).
	LSTD Method = "lstd"
	// WISLSTD is weighted-importance LSTD(0) (not private).
	WISLSTD Method = "wis-lstd"
	// DPLSW is DP-LSW, output perturbation (private).
	DPLSW Method = "dp-lsw"
)

// lswSource cites the theorem the DP-LSW ledger cost comes from.
const lswSource = "DP-LSW: Balle, Gomrokchi & Precup 2016 (ICML) §4 privacy theorem; Gaussian noise on a smooth sensitivity bound (Nissim, Raskhodnikova & Smith 2007)"

// Config configures one evaluation run.
type Config struct {
	// Data is the session log (the private dataset); EvalData a public log
	// whose moments measure the MSPBE (optional).
	Data     string `flag:"data" usage:"session log (dprl.sessions.v1), the private dataset"`
	EvalData string `flag:"eval-data" usage:"a public session log on which to compute the empirical MSPBE instead of the private data"`
	// Target is the target policy spec (policies.Parse); Behavior the
	// behaviour policy of the data (chain only, for the exact MSPBE).
	Target   string `flag:"target" usage:"target policy: uniform, snapshot:FILE, greedy[:FILE], softmax[:FILE]:TEMP, epsilon-greedy[:FILE]:EPS"`
	Behavior string `flag:"behavior" usage:"with --env chain: the behaviour policy of the data, for the exact MSPBE of off-policy data"`
	// Features is tabular, fourier:K or raw.
	Features string `flag:"features" usage:"features: tabular, fourier:K or raw"`
	// Method is the evaluation method.
	Method Method `flag:"method" usage:"gpope, dp-lsw, lstd or wis-lstd"`
	// Epsilon and Delta are the run's guarantee (private methods);
	// EpsilonGiven and DeltaGiven say they were given explicitly.
	Epsilon                  float64 `flag:"epsilon" usage:"privacy budget epsilon of this run (gpope, dp-lsw)"`
	Delta                    float64 `flag:"delta" usage:"privacy parameter delta of this run (gpope, dp-lsw)"`
	EpsilonGiven, DeltaGiven bool
	// Iters, StepSize, Diminishing, Clip and Batch are gpope's T, alpha,
	// alpha_0/sqrt(t) schedule, L2 clip and expected Poisson batch.
	Iters       int     `flag:"iters" usage:"gpope: number of noisy gradient steps T"`
	StepSize    float64 `flag:"step-size" default:"0.5" usage:"gpope: step size alpha (alpha_0 with --diminishing)"`
	Diminishing bool    `flag:"diminishing" usage:"gpope: step size alpha_0 / sqrt(t)"`
	Clip        float64 `flag:"clip" default:"1" usage:"gpope: L2 clip C of one trajectory's primal-dual gradient"`
	Batch       float64 `flag:"batch" default:"1" usage:"gpope: expected trajectories per step (Poisson sampling rate batch/n; the paper uses 1)"`
	// PublicN is gpope's public number of trajectories (0: the log's record
	// count, vouched public); PublicNGiven says it was given.
	PublicN      int `flag:"n" usage:"gpope: the public number of trajectories the sampling rate batch/n is computed from (default: the log's record count, which you then vouch is public)"`
	PublicNGiven bool
	// IntervalSplits is the number B of disjoint random parts of gpope's
	// subsample-and-aggregate interval for the start value (0: no
	// interval); IntervalLevel its level (0: 0.95).
	IntervalSplits int     `flag:"interval-splits" usage:"gpope with --env: split the log at random into B >= 2 disjoint parts, run gpope on each (noise for a part's public n/B trajectories; one part's cost by parallel composition) and release the parts' start values with their mean's Student-t interval (0: no interval)"`
	IntervalLevel  float64 `flag:"interval-level" default:"0.95" usage:"gpope: the level of the --interval-splits interval"`
	// Actions is the public number of discrete actions (0: from Env, or
	// learned from the log by a non-private run); ActionsGiven says it was
	// given.
	Actions      int `flag:"actions" usage:"the public number of discrete actions: required for a private run without --env (a record with a larger action is refused); without it a non-private run learns it from the log"`
	ActionsGiven bool
	// Gamma is the discount, Ridge the ridge added to A (lstd, wis-lstd).
	Gamma float64 `flag:"gamma" default:"0.9" usage:"discount factor, 0 <= gamma < 1"`
	Ridge float64 `flag:"ridge" default:"1e-6" usage:"lstd, wis-lstd: ridge added to A (unvisited tabular states make A singular)"`
	// Env names the public simulator the data comes from (optional).
	Env string `flag:"env" usage:"the simulator the data comes from (public knowledge): start distribution, bounds, built-in targets, exact chain MSPBE"`
	// Seed keys the noise and sampling when Seeded (research runs).
	Seed   uint64 `flag:"seed" usage:"seed the noise and sampling (repeatable research runs; recorded in the ledger)"`
	Seeded bool
	// NonPrivate allows the non-private methods and fills Result.NonPrivate.
	NonPrivate bool `flag:"non-private" usage:"allow output NOT covered by any DP guarantee: the lstd and wis-lstd methods, and with gpope or dp-lsw a section of statistics of the private log"`
	// Low and High are the observation box (default: Env's).
	Low  []float64 `flag:"low" usage:"fourier and grid box lower bounds (default: the environment's observation box)"`
	High []float64 `flag:"high" usage:"fourier and grid box upper bounds"`
	// Grid is dp-lsw's cells per observation component (non-tabular).
	Grid int `flag:"lsw-grid" default:"10" usage:"dp-lsw with non-tabular features: cells per observation component of the public grid"`
	// RewardLow and RewardHigh are dp-lsw's public reward bounds (NaN: the
	// environment's default).
	RewardLow  float64 `flag:"reward-low" default:"NaN" usage:"dp-lsw: public lower reward bound (default for chain 0, mountaincar -1)"`
	RewardHigh float64 `flag:"reward-high" default:"NaN" usage:"dp-lsw: public upper reward bound (default for chain 1, mountaincar 0)"`
	// Curve records gpope's MSPBE by iteration in Result.Curve.
	Curve bool
	// Progress, if set, is called at every gpope step.
	Progress func(t int)
}

// CurvePoint is the MSPBE after an iteration.
type CurvePoint struct {
	Iter  int
	MSPBE float64
}

// ConfigError is an error of the configuration: its message names the
// Config fields at fault, which a command line renames to its flags
// (fielderr.Rename).
type ConfigError = fielderr.Error

// fieldNames are the Config fields a ConfigError may name.
var fieldNames = fielderr.Fields{"Data", "EvalData", "Target", "Behavior", "Features", "Method", "Epsilon", "Delta", "Iters", "StepSize",
	"Clip", "Batch", "PublicN", "IntervalSplits", "IntervalLevel", "Actions", "Gamma", "Ridge", "Env", "NonPrivate", "Low", "High", "Grid", "RewardLow", "RewardHigh", "Curve"}

// configErrorf returns a ConfigError; {Field} in format names a field.
func configErrorf(format string, args ...any) error { return fieldNames.Errorf(format, args...) }

// configError marks err as an error of the configuration.
func configError(err error) error { return fieldNames.Wrap(err) }

// Result is the result of "dprl offline gtd2". Outside NonPrivate, every
// field of a private run is covered by the guarantee it prints: the noised
// weights, what is post-processing of them and of public inputs (the value
// at the public start distribution, the MSPBE under the chain's exact model
// or a public evaluation log), and the guarantee's public parameters. No
// count, id, noise scale or other statistic of the private log is among
// them; those are in NonPrivate, filled only under --non-private.
type Result struct {
	Method   string  `json:"method"`
	Private  bool    `json:"private"`
	Target   string  `json:"target"`
	Features string  `json:"features"`
	Gamma    float64 `json:"gamma"`
	// Value is theta . mean phi over the environment's public start
	// distribution (null without --env).
	Value     *float64 `json:"value"`
	TrueValue *float64 `json:"true_value,omitempty"`
	// MSPBE is measured with public moments only (null without them).
	MSPBE     *float64  `json:"mspbe"`
	MSPBEKind string    `json:"mspbe_kind"`
	Weights   []float64 `json:"weights"`

	Epsilon    float64 `json:"epsilon,omitempty"`
	Delta      float64 `json:"delta,omitempty"`
	Accountant string  `json:"accountant"`
	// RDPEpsilon is, for gpope, the RDP accountant's epsilon for the same
	// noise: a cross-check of the PLD accountant's Epsilon, which is the
	// one charged (a function of the public z, q and steps only).
	RDPEpsilon float64 `json:"rdp_epsilon,omitempty"`
	// gpope: the noise multiplier, steps, clip, the configured expected
	// batch and the public number of trajectories the sampling rate
	// batch/n is computed from, with where n came from.
	NoiseMultiplier float64 `json:"noise_multiplier,omitempty"`
	Iters           int     `json:"iters,omitempty"`
	Clip            float64 `json:"clip,omitempty"`
	Batch           float64 `json:"batch,omitempty"`
	NTrajectories   int     `json:"n_trajectories,omitempty"`
	NSource         string  `json:"n_source,omitempty"`
	// Interval is gpope's subsample-and-aggregate interval for Value
	// (--interval-splits; Value is then its mean and Weights the mean of the
	// parts' weights).
	Interval *Interval `json:"interval,omitempty"`
	// rate is the sampling rate batch/n charged (printed as batch and n).
	rate float64
	// dp-lsw: the public reward bounds and return range W.
	RewardBounds []float64 `json:"reward_bounds,omitempty"`
	ReturnRange  float64   `json:"return_range,omitempty"`

	LedgerSeq    uint64  `json:"ledger_seq,omitempty"`
	DatasetSpent float64 `json:"dataset_spent_epsilon,omitempty"`
	Seeded       bool    `json:"seeded"`
	Plot         string  `json:"plot,omitempty"`
	// Curve is gpope's MSPBE by iteration (Config.Curve), measured with
	// CurveKind's moments: public ones, else (only with NonPrivate) the
	// private log's.
	Curve     []CurvePoint `json:"-"`
	CurveKind string       `json:"-"`

	NonPrivate *NonPrivate `json:"non_private,omitempty"`
}

// NotCovered labels every value the privacy guarantee does not cover.
const NotCovered = "NOT covered by the privacy guarantee"

// NonPrivate are statistics of the private log, printed only under
// --non-private and labelled as not covered by the privacy guarantee.
type NonPrivate struct {
	Warning string `json:"warning"`
	// DatasetID is the log's content id (sessionlog.DatasetID), its key in
	// the ledger: a deterministic function of the data.
	DatasetID     string `json:"dataset_id"`
	NTrajectories int    `json:"n_trajectories"`
	NTransitions  int    `json:"n_transitions"`
	// MSPBE is measured with the moments of the private log (null when
	// not finite).
	MSPBE *float64          `json:"mspbe_private_data"`
	GPOPE *gtd2.Diagnostics `json:"gpope,omitempty"`
	LSW   *lsw.Diagnostics  `json:"dp_lsw,omitempty"`
}

// run is the state of one run between validation and computation. It
// holds the log's index (sessionlog.Index: 44 bytes per record) and the
// method's public inputs, never the log's sessions: every pass over the data
// streams it from the file through the index.
type run struct {
	c     *Config
	env   sims.Env
	chain *sims.ChainConfig
	ix    *sessionlog.Index
	spec  sessionlog.Spec
	// maxAction is the largest action index of the log (the number of
	// actions without --env).
	maxAction int
	target    policies.Policy
	tp        TargetProb
	feats     gtd2.Features
	// scratch holds the trajectory being validated or read.
	scratch gtd2.Trajectory
	// transitions counts the log's steps (for --non-private only).
	transitions int
	lswMap      lsw.StateMap
	lswPhi      [][]float64
	lswCfg      lsw.Config
	lswTraj     lsw.Trajectory
	// mom are the public moments the MSPBE is measured with (nil without
	// them) and momKind says which they are.
	mom     *gtd2.Moments
	momKind string
	// charged says that the run was charged (an error after it says so).
	charged bool
}

// New validates cfg and builds the run's mechanism for budget.Run. With
// cfg.Env the environment fixes the dimensions: the target and features are
// built now, from public inputs, and every record is validated against them
// as the log is read. The returned ReaderOptions are those the log must be
// read with (budget.Input.Reader). Call Close when the run is over.
func New(cfg Config) (*Mechanism, sessionlog.ReaderOptions, error) {
	if err := cfg.Validate(); err != nil {
		return nil, sessionlog.ReaderOptions{}, err
	}
	c := &cfg
	r := &run{c: c, maxAction: -1}
	spec := sessionlog.Spec{}
	if c.Env != "" {
		var err error
		if r.env, err = sims.New(c.Env); err != nil {
			return nil, sessionlog.ReaderOptions{}, configErrorf("{Env}: %w", err)
		}
		if as := r.env.ActionSpace(); as.Kind != sims.Discrete {
			return nil, sessionlog.ReaderOptions{}, configErrorf("{Env} %s has continuous actions; gtd2 evaluates discrete-action policies", c.Env)
		} else if c.Actions != 0 && c.Actions != as.N {
			return nil, sessionlog.ReaderOptions{}, configErrorf("{Actions} %d: {Env} %s has %d actions", c.Actions, c.Env, as.N)
		}
		if ch, ok := r.env.(*sims.Chain); ok {
			cc := ch.Config()
			r.chain = &cc
		}
		spec = sessionlog.Spec{ObsDim: r.env.ObservationSpace().Dim(), Discrete: r.env.ActionSpace().N}
		r.spec = spec
		if err := r.setup(); err != nil {
			return nil, sessionlog.ReaderOptions{}, err
		}
	} else if c.Behavior != "" {
		return nil, sessionlog.ReaderOptions{}, configErrorf("{Behavior} needs {Env} chain")
	}
	out := &Result{Method: string(c.Method), Private: c.Private(), Target: c.Target, Features: c.Features, Gamma: c.Gamma, Seeded: c.Seeded}
	return &Mechanism{r: r, out: out}, sessionlog.ReaderOptions{Name: c.Data, Spec: spec}, nil
}

// Mechanism is a gtd2 run as budget.Run sees it.
type Mechanism struct {
	r       *run
	out     *Result
	restore func()
	ds      *budget.Dataset // the run's dataset (a charged run: Entry was called)
}

// Check checks a record as the first pass reads it (run.scanRecord).
func (m *Mechanism) Check(s *sessionlog.Session) error { return m.r.scanRecord(s) }

// Scanned keeps the log's index and bounds the heap by its record count.
func (m *Mechanism) Scanned(ix *sessionlog.Index) {
	m.r.ix = ix
	m.restore = limitHeap(ix.Len())
}

// Close restores the memory limit Scanned set.
func (m *Mechanism) Close() {
	if m.restore != nil {
		m.restore()
	}
}

// Entry is the run's cost, from the flags and the record count.
func (m *Mechanism) Entry(ix *sessionlog.Index, ds budget.Dataset) (ledger.Entry, error) {
	m.ds = &ds
	e, err := entry(m.r.c, ix.Len(), ds)
	e.Seeded = m.out.Seeded
	return e, err
}

// Validate checks, without --env, the target and features against the
// dimensions the scan learned, on a second pass; then fixes the public
// moments.
func (m *Mechanism) Validate(ix *sessionlog.Index, _ *ledger.Entry) error {
	r, c := m.r, m.r.c
	if r.target == nil {
		r.spec = ix.Spec()
		switch {
		case c.Actions > 0: // public, required for a private run
			r.spec.Discrete = c.Actions
		case r.spec.Discrete == 0: // non-private: learned from the largest action seen
			r.spec.Discrete = max(r.maxAction+1, 2)
		}
		if err := r.setup(); err != nil {
			return err
		}
		if err := ix.Each(func(_ int, s *sessionlog.Session) error { return r.validate(s) }); err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
	}
	if err := r.publicMoments(m.ds); err != nil {
		return err
	}
	if c.Curve && r.mom == nil && !c.NonPrivate {
		return configErrorf("{Curve} needs public moments for its MSPBE ({Env} chain or a public {EvalData}); the MSPBE on the private log is only with {NonPrivate}")
	}
	return nil
}

// Compute fills the printed guarantee from the entry as written (what is
// printed is what was charged) and computes the estimate.
func (m *Mechanism) Compute(_ context.Context, ix *sessionlog.Index, ch *budget.Charge) (*Result, error) {
	r, c, out := m.r, m.r.c, m.out
	if ch.Charged() {
		r.charged = true
		if err := fillGuarantee(c, ch.Entry, out); err != nil {
			return nil, err
		}
		out.LedgerSeq, out.DatasetSpent = ch.Entry.Seq, ch.Spent
	}
	if c.NonPrivate {
		out.NonPrivate = &NonPrivate{Warning: NotCovered, DatasetID: ix.ID()}
	}
	if err := r.compute(out); err != nil {
		return nil, err
	}
	return out, nil
}

// gtd2HeapBytes bounds the Go heap a gtd2 run on n records needs: 76 bytes
// per record for the log's index (each record's identity, exact hash and
// place), about 130 more for a moment while the ledger registers a private
// run's records (a sorted copy of their identities, their holders, the new
// ones and a batch of index entries), and 48 MiB for the rest (one record,
// the method's d x d state, the runtime). The measured live heap at 10^6
// records peaks at 194 MB, during the charge.
func gtd2HeapBytes(n int) int64 { return 48<<20 + 208*int64(n) }

// limitHeap asks the Go collector to keep the heap within gtd2HeapBytes(n)
// (runtime/debug.SetMemoryLimit, a soft limit: the collector works harder
// near it instead of letting the heap grow to twice its live size), unless
// the user set GOMEMLIMIT. It returns the function that restores the
// previous limit.
func limitHeap(n int) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetMemoryLimit(gtd2HeapBytes(n))
	return func() { debug.SetMemoryLimit(old) }
}

// scanRecord checks a record as the first pass reads it: discrete actions,
// and, when --env fixed the dimensions, everything validate checks.
func (r *run) scanRecord(s *sessionlog.Session) error {
	if s.Steps[0].Action.Vec != nil {
		return errors.New("continuous actions; gtd2 evaluates discrete-action policies")
	}
	for i := range s.Steps {
		r.maxAction = max(r.maxAction, s.Steps[i].Action.Index)
	}
	if r.target != nil {
		return r.validate(s)
	}
	return nil
}

// validate checks one record against the target, the features and the
// method, as the computation will read it (gtd2.PrepareSession; dp-lsw's
// state map), computing nothing that is released.
func (r *run) validate(s *sessionlog.Session) error {
	if err := gtd2.PrepareSession(&r.scratch, s, r.feats, r.tp); err != nil {
		return err
	}
	r.transitions += len(s.Steps)
	onPolicy := func() error {
		if t, rho := r.scratch.OffPolicyStep(); t >= 0 {
			return fmt.Errorf("session %q step %d: target/behaviour probability ratio %.6g != 1: the data is off-policy for this target", s.Session, t, rho)
		}
		return nil
	}
	switch r.c.Method {
	case LSTD:
		if err := onPolicy(); err != nil {
			return fmt.Errorf("lstd is on-policy only (use wis-lstd or gpope for off-policy data): %w", err)
		}
	case DPLSW:
		// DP-LSW estimates the value of the policy that collected the log;
		// whether the log is on-policy is the user's declaration. Checking
		// it here would refuse or accept depending on one record, an
		// uncharged release, so the check runs only with --non-private.
		if r.c.NonPrivate {
			if err := onPolicy(); err != nil {
				return fmt.Errorf("dp-lsw is on-policy only (use gpope for off-policy data): %w", err)
			}
		}
		if _, err := r.lswTrajectory(s); err != nil {
			return err
		}
	}
	return nil
}

// Private reports whether the method is differentially private (gpope,
// dp-lsw): a private run is charged.
func (c *Config) Private() bool { return c.Method == GPOPE || c.Method == DPLSW }

// Validate checks the configuration and returns every error found, each a
// *ConfigError naming its fields.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, configErrorf(format, args...)) }
	if c.Data == "" {
		add("{Data} is required")
	}
	if c.Target == "" {
		add("{Target} is required")
	}
	if c.Features == "" {
		add("{Features} is required (tabular, fourier:K or raw)")
	}
	if !(c.Gamma >= 0 && c.Gamma < 1) {
		add("{Gamma} %v: want 0 <= gamma < 1", c.Gamma)
	}
	private := c.Private()
	switch c.Method {
	case GPOPE, DPLSW:
		if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) {
			add("{Epsilon} %v: want > 0 (method %s is private)", c.Epsilon, c.Method)
		}
		if !(c.Delta > 0 && c.Delta < 1) {
			add("{Delta} %v: want 0 < delta < 1", c.Delta)
		}
	case LSTD, WISLSTD:
		if !c.NonPrivate {
			add("{Method} %s releases an estimate with no differential privacy guarantee; pass {NonPrivate} to run it anyway (it is not charged to the ledger)", c.Method)
		}
		if c.EpsilonGiven || c.DeltaGiven {
			add("{Epsilon}/{Delta} have no meaning for the non-private %s", c.Method)
		}
		if !(c.Ridge >= 0) {
			add("{Ridge} %v: want >= 0", c.Ridge)
		}
	default:
		add("{Method} %q: want gpope, dp-lsw, lstd or wis-lstd", c.Method)
	}
	switch {
	case c.ActionsGiven && c.Actions < 2:
		add("{Actions} %d: want the public number of discrete actions, >= 2", c.Actions)
	case private && c.Env == "" && c.Actions == 0:
		// Learned from the log, the number of actions would be the
		// largest action seen plus one: one record could change it.
		add("a private run without {Env} needs {Actions} N, the public number of discrete actions (the log's largest action would depend on single records)")
	}
	if c.Method == GPOPE {
		if c.Iters < 1 {
			add("{Iters} %d: want at least 1 (gpope)", c.Iters)
		}
		if !(c.StepSize > 0) || math.IsInf(c.StepSize, 0) {
			add("{StepSize} %v: want > 0", c.StepSize)
		}
		if !(c.Clip > 0) || math.IsInf(c.Clip, 0) {
			add("{Clip} %v: want > 0", c.Clip)
		}
		if !(c.Batch > 0) || math.IsInf(c.Batch, 0) || c.Batch > noise.MaxPoissonBatch {
			add("{Batch} %v: want > 0 and at most %d (the exact noise's rounding condition)", c.Batch, noise.MaxPoissonBatch)
		}
		if c.PublicNGiven && c.PublicN < 1 {
			add("{PublicN} %d: want the public number of trajectories, >= 1", c.PublicN)
		}
		switch {
		case c.IntervalSplits < 0:
			add("{IntervalSplits} %d: want 0 (no interval) or a number of parts >= 2", c.IntervalSplits)
		case c.IntervalSplits == 1:
			add("{IntervalSplits} 1: an interval needs at least 2 parts (0 turns it off)")
		case c.IntervalSplits >= 2 && c.Env == "":
			add("{IntervalSplits} needs {Env}: the interval is for the value at the environment's public start distribution")
		case c.IntervalSplits >= 2 && c.Curve:
			add("{Curve} draws one run's iterations; with {IntervalSplits} %d there are %d runs", c.IntervalSplits, c.IntervalSplits)
		}
		if c.IntervalLevel != 0 && !(c.IntervalLevel > 0 && c.IntervalLevel < 1) {
			add("{IntervalLevel} %v: want 0 < level < 1", c.IntervalLevel)
		}
	} else {
		if c.Curve {
			add("{Curve} draws the gpope iterations; {Method} %s has none", c.Method)
		}
		if c.PublicNGiven {
			add("{PublicN} is gpope's public number of trajectories; {Method} %s does not use it", c.Method)
		}
		if c.IntervalSplits != 0 {
			add("{IntervalSplits} is gpope's interval; {Method} %s has none", c.Method)
		}
	}
	if c.Method == DPLSW && c.Epsilon > 1 {
		add("{Epsilon} %v: dp-lsw's smooth-sensitivity calibration is proved for epsilon <= 1", c.Epsilon)
	}
	return errors.Join(errs...)
}

// entry builds the ledger entry of a private run on a log of counted
// records. gpope's sampling rate is batch/n for the public n: --n, else the
// log's record count, which the user then vouches is public. gpope's noise
// is calibrated, and its cost charged, with the PLD accountant (tighter
// than RDP for the Poisson-subsampled Gaussian; fillGuarantee prints the
// RDP figure beside it as a cross-check).
func entry(c *Config, counted int, ds budget.Dataset) (ledger.Entry, error) {
	e := ledger.Entry{Unit: ledger.UnitTrajectory, Method: accountant.MethodRDP, Participants: counted, Sampler: noise.SamplerGaussianTable}
	switch c.Method {
	case GPOPE:
		n := counted
		if c.PublicN > 0 {
			n = c.PublicN
		}
		e.Participants = n
		q := c.Batch / float64(n)
		if q > 1 {
			return e, configErrorf("{Batch} %v exceeds the n = %d trajectories", c.Batch, n)
		}
		if b := c.IntervalSplits; b >= 2 {
			// Each part runs with the sampling rate batch/n_b of its public
			// size n_b = floor(n/B); the parts are disjoint, so the run
			// costs one part's (parallel composition).
			if 2*b > n {
				return e, configErrorf("{IntervalSplits} %d: more than n/2 parts of the n = %d trajectories (each part needs at least 2)", b, n)
			}
			nb := n / b
			if q = c.Batch / float64(nb); q > 1 {
				return e, configErrorf("{Batch} %v exceeds a part's n/B = %d trajectories ({IntervalSplits} %d of n = %d): give fewer parts or a smaller batch", c.Batch, nb, b, n)
			}
		}
		e.Method = accountant.MethodPLD
		acc := accountant.PLD{}
		z, err := accountant.Calibrate(acc, c.Epsilon, c.Delta, q, c.Iters)
		if err != nil {
			return e, configError(fmt.Errorf("calibrating the noise: %w", err))
		}
		cfg := gtd2.Config{Iters: c.Iters, StepSize: c.StepSize, Clip: c.Clip, Z: z, Q: q, Batch: c.Batch}
		if err := cfg.Validate(); err != nil {
			return e, configError(err)
		}
		ev := accountant.Event{Q: q, Z: z, Steps: c.Iters}
		g, err := acc.Epsilon(c.Delta, ev)
		if err != nil {
			return e, err
		}
		e.Mechanism = fmt.Sprintf("gpope: %d steps of clipped (C=%g) primal-dual GTD2 gradients of a Poisson sample (q=%.4g = batch %g / public n %d) + Gaussian noise", c.Iters, c.Clip, q, c.Batch, n)
		if b := c.IntervalSplits; b >= 2 {
			e.Mechanism = fmt.Sprintf("gpope, subsample and aggregate over %d disjoint random parts (parallel composition: one part's cost), each: %d steps of clipped (C=%g) primal-dual GTD2 gradients of a Poisson sample (q=%.4g = batch %g / public n_b %d = n %d / %d) + Gaussian noise",
				b, c.Iters, c.Clip, q, c.Batch, n/b, n, b)
		}
		e.Events = []accountant.Event{ev}
		e.Epsilon, e.Delta = g.Epsilon, c.Delta
	case DPLSW:
		dc, err := ds.Cap(ledger.UnitTrajectory)
		if err != nil {
			return e, err
		}
		if c.Delta >= dc.Delta {
			// Refused as over the budget, so that budget.Explain names how
			// the cap is set (a first run) or raised (a stored one).
			return e, ds.Refuse(ledger.UnitTrajectory, configErrorf("%w: dp-lsw spends its {Delta} %g by basic composition, which takes the whole of the cap's delta %g and leaves none for the accountant of the dataset's other runs: give {Delta} below %g", ledger.ErrBudgetExceeded, c.Delta, dc.Delta, dc.Delta))
		}
		e.Mechanism = "dp-lsw: first-visit Monte Carlo + weighted least squares + Gaussian noise on a smooth sensitivity bound"
		e.Fixed = []ledger.FixedCost{{Epsilon: c.Epsilon, Delta: c.Delta, Source: lswSource}}
		e.Epsilon, e.Delta = c.Epsilon, c.Delta
	}
	return e, nil
}

// fillGuarantee fills the printed guarantee of a private run from its
// ledger entry as written, so that what is printed is what was charged.
func fillGuarantee(c *Config, e ledger.Entry, out *Result) error {
	out.Epsilon, out.Delta = e.Epsilon, e.Delta
	switch c.Method {
	case GPOPE:
		if len(e.Events) != 1 {
			return fmt.Errorf("ledger entry %d: %d events, want gpope's one", e.Seq, len(e.Events))
		}
		ev := e.Events[0]
		rdp, err := accountant.RDP{}.Epsilon(e.Delta, ev)
		if err != nil {
			return err
		}
		out.RDPEpsilon = rdp.Epsilon
		if e.Method == accountant.MethodPLD {
			out.Accountant = fmt.Sprintf("pld (Poisson-subsampled Gaussian: privacy loss distribution, Koskela et al. 2020, Doroshenko et al. 2022); rdp cross-check %s", accountant.FormatEpsilon(rdp.Epsilon))
		} else {
			out.Accountant = "rdp (subsampled Gaussian, Mironov, Talwar & Zhang 2019)"
		}
		out.NoiseMultiplier, out.Iters, out.Clip, out.Batch, out.rate = ev.Z, ev.Steps, c.Clip, c.Batch, ev.Q
		out.NTrajectories = e.Participants
		if b := c.IntervalSplits; b >= 2 {
			level := c.IntervalLevel
			if level == 0 {
				level = 0.95
			}
			out.Interval = &Interval{Method: IntervalMethod, Level: level, Splits: b, PartN: e.Participants / b, Covers: IntervalCovers}
		}
		if c.PublicN > 0 {
			out.NSource = "--n (public)"
		} else {
			out.NSource = "the log's record count, assumed public (the user vouches for it; pass --n to state it)"
		}
	case DPLSW:
		out.Accountant = "smooth sensitivity (Balle et al. 2016; NRS 2007), composed with the dataset's other runs by basic composition"
	}
	return nil
}

// policyOptions are the dimensions and reference a policy spec is checked
// against.
func (r *run) policyOptions() policies.Options {
	o := policies.Options{NumActions: r.spec.Discrete, ObsDim: r.spec.ObsDim}
	if ref, ok := policies.Builtin(r.c.Env, r.spec.ObsDim); ok {
		o.Reference = ref
	}
	return o
}

// box returns the public observation box: --low/--high, else the
// environment's.
func (r *run) box() (low, high []float64, err error) {
	low, high = r.c.Low, r.c.High
	if low == nil && high == nil && r.env != nil {
		sp := r.env.ObservationSpace()
		low, high = sp.Low, sp.High
	}
	if low == nil || high == nil {
		return nil, nil, configErrorf("{Features} %s needs the observation box: give {Low} and {High} (or an {Env} with a bounded observation space)", r.c.Features)
	}
	if len(low) != r.spec.ObsDim || len(high) != r.spec.ObsDim {
		return nil, nil, configErrorf("{Low}/{High} have %d and %d components, the observations %d", len(low), len(high), r.spec.ObsDim)
	}
	for i := range low {
		if math.IsInf(low[i], 0) || math.IsInf(high[i], 0) {
			return nil, nil, configErrorf("observation component %d is unbounded in {Env} %s: give {Low} and {High}", i, r.c.Env)
		}
	}
	return low, high, nil
}

// parseFeatures builds the feature map for the log's observations.
func (r *run) parseFeatures() (gtd2.Features, error) {
	spec := r.c.Features
	switch {
	case spec == "tabular":
		return gtd2.Tabular{N: r.spec.ObsDim}, nil
	case spec == "raw":
		return gtd2.Raw{N: r.spec.ObsDim}, nil
	case strings.HasPrefix(spec, "fourier:"):
		k, err := strconv.Atoi(strings.TrimPrefix(spec, "fourier:"))
		if err != nil {
			return nil, configErrorf("{Features} %q: the Fourier order is not an integer", spec)
		}
		low, high, err := r.box()
		if err != nil {
			return nil, err
		}
		fr, err := gtd2.NewFourier(k, low, high)
		if err != nil {
			return nil, configErrorf("{Features}: %w", err)
		}
		return fr, nil
	}
	return nil, configErrorf("{Features} %q: want tabular, fourier:K or raw", spec)
}

// setup builds the target, the features and dp-lsw's public state set
// from the dimensions in force (r.spec) and public inputs; it reads no
// record.
func (r *run) setup() error {
	var err error
	if r.target, err = policies.Parse(r.c.Target, r.policyOptions()); err != nil {
		return configErrorf("{Target}: %w", err)
	}
	r.tp = NewTargetProb(r.target)
	if r.feats, err = r.parseFeatures(); err != nil {
		return err
	}
	if r.c.Method == DPLSW {
		return r.prepareLSW()
	}
	return nil
}

// prepareLSW fixes DP-LSW's finite state set, its public state weights and
// reward bounds.
func (r *run) prepareLSW() error {
	var sm lsw.StateMap
	if _, ok := r.feats.(gtd2.Tabular); ok {
		sm = lsw.Tabular{N: r.spec.ObsDim}
	} else {
		low, high, err := r.box()
		if err != nil {
			return err
		}
		g, err := lsw.NewGrid(low, high, r.c.Grid)
		if err != nil {
			return configErrorf("{Grid}: %w", err)
		}
		sm = g
	}
	n := sm.NumStates()
	weights := make([]float64, n)
	for s := range weights {
		weights[s] = 1
	}
	if r.chain != nil && r.spec.ObsDim == r.chain.States {
		// The absorbing end is never a state of a logged step: public
		// structure of the chain, so it gets no weight.
		weights[n-1] = 0
	}
	lo, hi := r.c.RewardLow, r.c.RewardHigh
	if math.IsNaN(lo) || math.IsNaN(hi) {
		prof, err := profile.Get(r.c.Env)
		if err != nil {
			return configErrorf("dp-lsw needs public reward bounds: give {RewardLow} and {RewardHigh}")
		}
		lo, hi = prof.RewardLow, prof.RewardHigh
		if !math.IsNaN(r.c.RewardLow) {
			lo = r.c.RewardLow
		}
		if !math.IsNaN(r.c.RewardHigh) {
			hi = r.c.RewardHigh
		}
	}
	r.lswCfg = lsw.Config{Epsilon: r.c.Epsilon, Delta: r.c.Delta, Gamma: r.c.Gamma, RewardLow: lo, RewardHigh: hi, Weights: weights}
	if err := r.lswCfg.Validate(); err != nil {
		return configError(err)
	}
	r.lswPhi = make([][]float64, n)
	obs := make([]float64, r.spec.ObsDim)
	for s := range n {
		sm.Represent(obs, s)
		r.lswPhi[s] = make([]float64, r.feats.Dim())
		if err := r.feats.Phi(r.lswPhi[s], obs); err != nil {
			return err
		}
	}
	if err := r.lswCfg.Check(r.lswPhi); err != nil {
		return configError(err)
	}
	r.lswMap = sm
	return nil
}

// lswTrajectory maps a session to DP-LSW's states, in r.lswTraj's storage
// (valid until the next call).
func (r *run) lswTrajectory(s *sessionlog.Session) (lsw.Trajectory, error) {
	tr := &r.lswTraj
	tr.States, tr.Rewards = tr.States[:0], tr.Rewards[:0]
	for t := range s.Steps {
		st := &s.Steps[t]
		idx, err := r.lswMap.Index(st.Obs)
		if err != nil {
			return lsw.Trajectory{}, fmt.Errorf("session %q step %d: %w", s.Session, t, err)
		}
		tr.States, tr.Rewards = append(tr.States, idx), append(tr.Rewards, st.Reward)
	}
	return *tr, nil
}

// TargetProb adapts a policies.Policy to gtd2.Policy; an observation the
// policy cannot read gives NaN, which gtd2.Prepare reports.
type TargetProb struct {
	p   policies.Policy
	buf []float64
}

// NewTargetProb adapts p to gtd2.Policy.
func NewTargetProb(p policies.Policy) TargetProb {
	return TargetProb{p: p, buf: make([]float64, p.NumActions())}
}

// Prob returns pi(a|obs).
func (t TargetProb) Prob(obs []float64, a sims.Action) float64 {
	if a.Vec != nil || a.Index < 0 || a.Index >= len(t.buf) {
		return math.NaN()
	}
	if err := t.p.Probs(t.buf, obs); err != nil {
		return math.NaN()
	}
	return t.buf[a.Index]
}

// NewNoiseRand returns the generator of a run's noise and sampling:
// ChaCha8 keyed from --seed, else from crypto/rand.
//
// The seeded key (seed || "dprl offline gtd2") predates internal/rng and is
// kept so that seeded runs repeat their documented numbers. The error is
// always nil; it stays for compatibility.
func NewNoiseRand(seeded bool, seed uint64) (*mrand.Rand, error) {
	if !seeded {
		return rng.Secure(), nil
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:8], seed)
	copy(key[8:], "dprl offline gtd2")
	return mrand.New(mrand.NewChaCha8(key)), nil
}

// publicMoments fixes the moments the MSPBE of the release is measured
// with: only public ones, so that the MSPBE is post-processing of the
// weights. With --env chain, the chain's exact model under --behavior, else
// under the target (the on-policy MSPBE; whether the log is on-policy is not
// consulted, as that is a property of the private data); else the moments of
// a public --eval-data log; else none. In a charged run (ds not nil) the
// --eval-data log is checked first (budget.Dataset.CheckPublic): a log
// holding a record of the private input or of a dataset the ledger knows is
// refused, before the charge, and the moments are those of the log as
// checked. An uncharged run claims nothing and checks nothing.
func (r *run) publicMoments(ds *budget.Dataset) error {
	if r.chain != nil && r.spec.ObsDim == r.chain.States {
		k := r.chain.States - 1
		pi, err := chainTable(r.target, r.chain.States)
		if err != nil {
			return err
		}
		mu, kind := pi, "exact (chain model, behaviour = target)"
		if r.c.Behavior != "" {
			beh, err := policies.Parse(r.c.Behavior, r.policyOptions())
			if err != nil {
				return configErrorf("{Behavior}: %w", err)
			}
			if mu, err = chainTable(beh, r.chain.States); err != nil {
				return err
			}
			kind = "exact (chain model)"
		}
		m, err := gtd2.ChainMoments(*r.chain, mu[:k], pi[:k], r.feats, r.c.Gamma)
		switch {
		case err == nil:
			r.mom, r.momKind = &m, kind
			return nil
		case r.c.Behavior != "":
			return err
		}
		// The target never reaches the end: no on-policy model; a public
		// log may still do.
	}
	if r.c.EvalData != "" {
		m, err := r.evalMoments(ds)
		if err != nil {
			return fmt.Errorf("--eval-data: %w", err)
		}
		r.mom, r.momKind = &m, "empirical (eval data)"
		return nil
	}
	r.momKind = "none (no public moments: give --env chain or a public --eval-data)"
	return nil
}

// evalMoments streams the public --eval-data log into its moments: memory
// O(d^2), whatever its size.
func (r *run) evalMoments(ds *budget.Dataset) (gtd2.Moments, error) {
	opt := sessionlog.ReaderOptions{Name: r.c.EvalData, Spec: r.spec}
	ms := gtd2.NewMomentsSum(r.feats.Dim(), r.c.Gamma, true)
	if ds != nil {
		ix, err := ds.CheckPublic(r.c.EvalData, opt)
		if err != nil {
			return gtd2.Moments{}, err
		}
		var tr gtd2.Trajectory
		if err := ix.Each(func(_ int, s *sessionlog.Session) error {
			if err := gtd2.PrepareSession(&tr, s, r.feats, r.tp); err != nil {
				return err
			}
			ms.Add(&tr)
			return nil
		}); err != nil {
			return gtd2.Moments{}, err
		}
		m := ms.Moments()
		m.FillUnvisited()
		return m, nil
	}
	file, err := os.Open(r.c.EvalData)
	if err != nil {
		return gtd2.Moments{}, err
	}
	defer file.Close()
	rd := sessionlog.NewReader(file, opt)
	var tr gtd2.Trajectory
	n := 0
	for ; ; n++ {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return gtd2.Moments{}, err
		}
		if err := gtd2.PrepareSession(&tr, &s, r.feats, r.tp); err != nil {
			return gtd2.Moments{}, fmt.Errorf("%s:%d: %w", r.c.EvalData, rd.Line(), err)
		}
		ms.Add(&tr)
	}
	if n == 0 {
		return gtd2.Moments{}, fmt.Errorf("%s: no sessions", r.c.EvalData)
	}
	m := ms.Moments()
	m.FillUnvisited()
	return m, nil
}

// failed explains an error after the charge: the run was charged and
// nothing was released.
func (r *run) failed(err error) error {
	if r.charged {
		return fmt.Errorf("%w (the run was charged; nothing was released)", err)
	}
	return err
}

// chainTable tabulates a policy on the chain's one-hot states.
func chainTable(p policies.Policy, n int) ([][]float64, error) {
	out := make([][]float64, n)
	obs := make([]float64, n)
	for s := range n {
		clear(obs)
		obs[s] = 1
		out[s] = make([]float64, p.NumActions())
		if err := p.Probs(out[s], obs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// gpopeInterval runs GPOPE on out.Interval.Splits random parts of src
// (cfg's rate is a part's, from the ledger entry) and fills the interval
// from the parts' start values, and out.Weights with the mean of the
// parts' weights.
func (r *run) gpopeInterval(src gtd2.Trajectories, cfg gtd2.Config, out *Result, rng *mrand.Rand) error {
	iv := out.Interval
	var parts []gtd2.Result
	var err error
	if np := out.NonPrivate; np != nil {
		var diag gtd2.Diagnostics
		parts, diag, err = gtd2.GPOPEPartsWithDiagnostics(src, cfg, iv.Splits, rng)
		np.GPOPE = &diag
	} else {
		parts, err = gtd2.GPOPEParts(src, cfg, iv.Splits, rng)
	}
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	values, mean, err := r.partValues(parts)
	if err != nil {
		return err
	}
	iv.PartValues = values
	if iv.Mean, iv.Low, iv.High, err = TInterval(values, iv.Level); err != nil {
		return err
	}
	out.Weights = mean
	return nil
}

// partValues returns the parts' start values and their mean weights.
func (r *run) partValues(parts []gtd2.Result) (values, mean []float64, err error) {
	mean = make([]float64, len(parts[0].Theta))
	values = make([]float64, len(parts))
	for b, p := range parts {
		v, _, err := r.startValue(p.Theta)
		if err != nil {
			return nil, nil, err
		}
		if v == nil {
			return nil, nil, errors.New("the interval needs the environment's start distribution")
		}
		values[b] = *v
		for k, x := range p.Theta {
			mean[k] += x / float64(len(parts))
		}
	}
	return values, mean, nil
}

// startValue returns theta . mean phi over the environment's public start
// distribution (chain: uniform over the non-terminal states; otherwise 1000
// resets drawn with a fixed public seed), and for chain the true value.
func (r *run) startValue(theta []float64) (v, truth *float64, err error) {
	if r.env == nil {
		return nil, nil, nil
	}
	var starts [][]float64
	if r.chain != nil {
		for s := range r.chain.States - 1 {
			o := make([]float64, r.chain.States)
			o[s] = 1
			starts = append(starts, o)
		}
	} else {
		rng := mrand.New(mrand.NewPCG(0, 0))
		for range 1000 {
			o := make([]float64, r.spec.ObsDim)
			r.env.Reset(rng, o)
			starts = append(starts, o)
		}
	}
	phis := make([][]float64, len(starts))
	for i, o := range starts {
		phis[i] = make([]float64, r.feats.Dim())
		if err := r.feats.Phi(phis[i], o); err != nil {
			return nil, nil, fmt.Errorf("start distribution: %w", err)
		}
	}
	val := gtd2.StartValue(theta, phis)
	if r.chain != nil && r.spec.ObsDim == r.chain.States {
		pi, err := chainTable(r.target, r.chain.States)
		if err != nil {
			return nil, nil, err
		}
		vf, err := r.chain.ValueFunction(pi, r.c.Gamma)
		if err != nil {
			return nil, nil, err
		}
		var t float64
		for s := range r.chain.States - 1 {
			t += vf[s]
		}
		t /= float64(r.chain.States - 1)
		truth = &t
	}
	return &val, truth, nil
}

// compute runs the method and fills in the result (printed by the caller
// once the run is over). Statistics of the private
// log are computed only for the --non-private section.
//
// Memory, besides the index (44 bytes per record) and one record at a
// time: gpope reads the trajectories its Poisson samples draw from the file
// (gtd2.OnDemand), O(d) for its iterates; dp-lsw streams the log into its
// first-visit sums (lsw.Visits), O(states x d); lstd, wis-lstd and the
// private moments of --non-private stream it into d x d moments
// (gtd2.MomentsSum).
func (r *run) compute(out *Result) error {
	c := r.c
	np := out.NonPrivate
	var privMom gtd2.Moments
	var privSum, lstdSum *gtd2.MomentsSum
	var visits *lsw.Visits
	d := r.feats.Dim()
	if np != nil {
		np.NTrajectories, np.NTransitions = r.ix.Len(), r.transitions
		privSum = gtd2.NewMomentsSum(d, c.Gamma, true)
	}
	switch c.Method {
	case LSTD, WISLSTD:
		lstdSum = gtd2.NewMomentsSum(d, c.Gamma, c.Method == WISLSTD)
	case DPLSW:
		visits = lsw.NewVisits(len(r.lswPhi), r.lswCfg.Gamma, r.lswCfg.RewardLow, r.lswCfg.RewardHigh)
	}
	if privSum != nil || lstdSum != nil || visits != nil {
		// One pass over the log, each record checked against its hash.
		err := r.ix.Each(func(_ int, s *sessionlog.Session) error {
			if privSum != nil || lstdSum != nil {
				if err := gtd2.PrepareSession(&r.scratch, s, r.feats, r.tp); err != nil {
					return err
				}
				if privSum != nil {
					privSum.Add(&r.scratch)
				}
				if lstdSum != nil {
					lstdSum.Add(&r.scratch)
				}
			}
			if visits != nil {
				tr, err := r.lswTrajectory(s)
				if err != nil {
					return err
				}
				if !visits.Add(tr) {
					return fmt.Errorf("session %q: a state outside dp-lsw's %d states", s.Session, len(r.lswPhi))
				}
			}
			return nil
		})
		if err != nil {
			return r.failed(fmt.Errorf("dataset: %w", err))
		}
	}
	if privSum != nil {
		privMom = privSum.Moments()
		privMom.FillUnvisited()
	}
	out.MSPBEKind = r.momKind
	rng, err := NewNoiseRand(out.Seeded, c.Seed)
	if err != nil {
		return err
	}
	// The plot's moments: public ones, else (only with --non-private) the
	// private log's.
	plotMom, plotKind := r.mom, r.momKind
	if plotMom == nil {
		plotMom, plotKind = &privMom, "empirical (private data: "+NotCovered+")"
	}
	switch c.Method {
	case GPOPE:
		cfg := gtd2.Config{Iters: out.Iters, StepSize: c.StepSize, Diminishing: c.Diminishing, Clip: out.Clip, Z: out.NoiseMultiplier,
			Q: out.rate, Batch: out.Batch}
		every := max(1, c.Iters/200)
		done := 0 // steps over all parts
		cfg.Observe = func(t int, theta []float64) {
			done++
			if c.Progress != nil {
				c.Progress(done)
			}
			if c.Curve && (t%every == 0 || t == c.Iters) {
				if e, err := gtd2.MSPBE(*plotMom, theta); err == nil {
					out.Curve = append(out.Curve, CurvePoint{Iter: t, MSPBE: e})
				}
			}
		}
		rr, err := r.ix.Open()
		if err != nil {
			return r.failed(fmt.Errorf("dataset: %w", err))
		}
		defer rr.Close()
		src, err := gtd2.NewOnDemand(rr, r.feats, r.tp, c.Gamma)
		if err != nil {
			return r.failed(err)
		}
		if out.Interval != nil {
			if err := r.gpopeInterval(src, cfg, out, rng); err != nil {
				return r.failed(err)
			}
			break
		}
		var res gtd2.Result
		if np != nil {
			var diag gtd2.Diagnostics
			res, diag, err = gtd2.GPOPEWithDiagnostics(src, cfg, rng)
			np.GPOPE = &diag
		} else {
			res, err = gtd2.GPOPE(src, cfg, rng)
		}
		if err != nil {
			return r.failed(fmt.Errorf("dataset: %w", err))
		}
		out.Weights = res.Theta
	case DPLSW:
		var res lsw.Result
		if np != nil {
			var diag lsw.Diagnostics
			res, diag, err = lsw.EstimateVisitsWithDiagnostics(r.lswPhi, visits, r.lswCfg, rng)
			np.LSW = &diag
		} else {
			res, err = lsw.EstimateVisits(r.lswPhi, visits, r.lswCfg, rng)
		}
		if err != nil {
			return err
		}
		out.Weights = res.Theta
		out.RewardBounds = []float64{r.lswCfg.RewardLow, r.lswCfg.RewardHigh}
		out.ReturnRange = res.ReturnRange
	case LSTD, WISLSTD:
		theta, err := gtd2.SolveLSTD(lstdSum.Moments(), c.Ridge)
		if err != nil {
			return err
		}
		out.Weights = theta
		out.Accountant = "none: not differentially private"
	}
	if r.mom != nil {
		e, err := gtd2.MSPBE(*r.mom, out.Weights)
		if err != nil {
			return err
		}
		out.MSPBE = &e
	}
	if np != nil {
		if e, err := gtd2.MSPBE(privMom, out.Weights); err == nil && !math.IsNaN(e) && !math.IsInf(e, 0) {
			np.MSPBE = &e
		}
	}
	if out.Value, out.TrueValue, err = r.startValue(out.Weights); err != nil {
		return err
	}
	if iv := out.Interval; iv != nil {
		// The value of the mean weights is the mean of the parts' values
		// (StartValue is linear in theta); print the aggregate's own mean.
		out.Value = &iv.Mean
	}
	if c.Curve {
		out.CurveKind = plotKind
	}
	return nil
}
