package main

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/offline"
	"dprl/offline/budget"
	"dprl/offline/gtd2"
	"dprl/offline/lsw"
	"dprl/offline/policies"
	"dprl/profile"
	"dprl/sims"
)

// The evaluation methods of "dprl offline gtd2".
const (
	methodGPOPE   = "gpope"
	methodLSTD    = "lstd"
	methodWISLSTD = "wis-lstd"
	methodDPLSW   = "dp-lsw"
)

// lswSource cites the theorem the DP-LSW ledger cost comes from.
const lswSource = "DP-LSW: Balle, Gomrokchi & Precup 2016 (ICML) §4 privacy theorem; Gaussian noise on a smooth sensitivity bound (Nissim, Raskhodnikova & Smith 2007)"

// offlineGTD2Flags holds the flags of "dprl offline gtd2".
type offlineGTD2Flags struct {
	data, evalData       string
	target, behavior     string
	features, method     string
	epsilon, delta       float64
	iters                int
	stepSize, clip       float64
	batch                float64
	publicN              int
	actions              int
	diminishing          bool
	gamma, ridge         float64
	env                  string
	seed                 uint64
	nonPrivate           bool
	low, high            []float64
	grid                 int
	rewardLow, rewardHig float64
	plot                 string
	asJSON               bool
	budget               offlineBudget
}

// gtd2Output is the result of "dprl offline gtd2". Outside NonPrivate, every
// field of a private run is covered by the guarantee it prints: the noised
// weights, what is post-processing of them and of public inputs (the value
// at the public start distribution, the MSPBE under the chain's exact model
// or a public evaluation log), and the guarantee's public parameters. No
// count, id, noise scale or other statistic of the private log is among
// them; those are in NonPrivate, filled only under --non-private.
type gtd2Output struct {
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
	// gpope: the noise multiplier, steps, clip, the configured expected
	// batch and the public number of trajectories the sampling rate
	// batch/n is computed from, with where n came from.
	NoiseMultiplier float64 `json:"noise_multiplier,omitempty"`
	Iters           int     `json:"iters,omitempty"`
	Clip            float64 `json:"clip,omitempty"`
	Batch           float64 `json:"batch,omitempty"`
	NTrajectories   int     `json:"n_trajectories,omitempty"`
	NSource         string  `json:"n_source,omitempty"`
	// rate is the sampling rate batch/n charged (printed as batch and n).
	rate float64
	// dp-lsw: the public reward bounds and return range W.
	RewardBounds []float64 `json:"reward_bounds,omitempty"`
	ReturnRange  float64   `json:"return_range,omitempty"`

	LedgerSeq    uint64  `json:"ledger_seq,omitempty"`
	DatasetSpent float64 `json:"dataset_spent_epsilon,omitempty"`
	Seeded       bool    `json:"seeded"`
	Plot         string  `json:"plot,omitempty"`

	NonPrivate *gtd2NonPrivate `json:"non_private,omitempty"`
}

// notCovered labels every value the privacy guarantee does not cover.
const notCovered = "NOT covered by the privacy guarantee"

// gtd2NonPrivate are statistics of the private log, printed only under
// --non-private and labelled as not covered by the privacy guarantee.
type gtd2NonPrivate struct {
	Warning string `json:"warning"`
	// DatasetID is the log's content id (offline.DatasetID), its key in
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

func newOfflineGTD2Cmd(a *app) *cobra.Command {
	var f offlineGTD2Flags
	c := &cobra.Command{
		Use:   "gtd2",
		Short: "Evaluate a target policy on a session log: GPOPE (DP GTD2), DP-LSW, or non-private LSTD",
		Long: `gtd2 estimates the value of a target policy from a dprl.sessions.v1 log with
linear features.

Methods (--method):
  gpope     (default) gradient-perturbed GTD2 (Xie et al., "Privacy preserving
            off-policy evaluation", Algorithm 1): T steps, each on a Poisson
            sample of expected --batch trajectories (the paper: one), their
            primal-dual gradients clipped to --clip and summed, Gaussian noise
            z*clip added, the sum divided by --batch. z is the smallest noise
            multiplier for which the RDP accountant of the subsampled Gaussian
            (rate q = batch/n, T steps) gives (--epsilon, --delta). On- and
            off-policy.
  dp-lsw    output perturbation (Balle, Gomrokchi & Precup 2016): first-visit
            Monte Carlo values of a finite state set (the one-hot states with
            tabular features, else a public --lsw-grid over the observation
            box), weighted least squares, Gaussian noise on a smooth
            sensitivity bound. On-policy logs only, as the user declares:
            a private run does not check (a refusal would depend on one
            record, uncharged); with --non-private off-policy data is
            refused.
            Needs public reward bounds (--reward-low/--reward-high; chain and
            mountaincar have them) and epsilon <= 1.
  lstd      LSTD(0), on-policy only.        } no privacy guarantee: they need
  wis-lstd  weighted-importance LSTD(0).    } --non-private and are not charged
The non-private methods release an estimate computed directly from the data;
they exist as references for research on data you may look at, are refused
without --non-private, and are not written to the ledger (nothing DP was
spent, and a ledger entry would wrongly suggest a guarantee).

The number of trajectories n (gpope): the Poisson rate q = batch/n, and so
the noise and the epsilon, depend on n. The guarantee (add or remove one
trajectory) holds only if n is public: give it with --n (the log's real size
may then differ; the guarantee holds, only the effective batch changes).
Without --n, n is the log's record count and you vouch that the log's size
is public; the output says which. DP-LSW does not use n.

Extreme records: every per-trajectory contribution is bounded before it is
summed. A gradient with a NaN or infinite entry or norm (e.g. a behaviour
logp of -800 makes the importance ratio infinite) counts as zero, any other
is clipped to --clip; DP-LSW clamps rewards to the public bounds (NaN as 0)
and returns to the return range, one visit per state per trajectory.

Target policies (--target): uniform, snapshot:FILE (a saved policy's sampled
policy), greedy:FILE, softmax:FILE:TEMP, epsilon-greedy:FILE:EPS, and with
--env chain or mountaincar the built-in controllers greedy, softmax:TEMP and
epsilon-greedy:EPS (chain: "advance"; mountaincar: "pump"). The paper's chain
target (stay or advance with probability 1/2) is "uniform" on --env chain.

Features (--features): tabular (one-hot observations), fourier:K (order-K
Fourier basis on the box --low/--high, default the environment's observation
box), raw (the observation and a bias).

Output of a private run, all covered by the printed epsilon: the weights, the
value estimate at the environment's public start distribution (--env; for
chain also the true value), the MSPBE when public moments exist, and the
guarantee's public parameters (epsilon, delta, accountant; gpope: z, clip,
steps, batch and the public n; dp-lsw: the reward bounds and return range).
The MSPBE is post-processing of the weights and is measured with:
  exact (chain model)   with --env chain: the true moments of the chain under
                        --behavior (without it: under the target, i.e. the
                        on-policy MSPBE);
  empirical (eval data) the moments of --eval-data, a public log;
otherwise it is omitted. DP-LSW's noise scale is a function of the visit
counts and is never printed beside the epsilon.

--non-private with gpope or dp-lsw adds a section of statistics of the
private log, labelled NOT covered by the privacy guarantee: the dataset's
content id, the numbers of trajectories and transitions, the MSPBE with the
private log's moments, and gpope's clipped/zeroed gradient counts or
dp-lsw's noise scale and visited states. The run is still charged (the
weights are DP); the section is not.

Budget: a private run is charged, at unit "trajectory", to the dataset its
records belong to in --ledger (identified by its records, not its bytes; see
"The dataset budget" in the README). The log is read once as a stream,
every record validated (with --env also against the target and features)
and hashed as it is read, so a log bad at line 2 is refused at line 2; the
run is checked against the dataset's stored cap; without --env the target
and features are validated against the dimensions learned from the log on a
second pass; only then is the cost written (synced) and the estimate
computed: malformed input and refused runs cost nothing. The printed
guarantee is read from the entry as written.

Memory: the log is never held. The run keeps 44 bytes per record (each
record's hash and place in the file) and re-reads the file, checking every
record against its hash (a log changed during the run is an error, never
other data under the charge). gpope reads only the trajectories each step's
Poisson sample draws; dp-lsw, lstd, wis-lstd, the --non-private statistics
and --eval-data stream the log into O(states x d) or O(d^2) sums. A private
run's ledger charge briefly holds about 130 bytes more per new record (the
dataset's record index). The command asks Go's collector to keep the heap
within 48 MiB + 176 bytes per record (set GOMEMLIMIT to choose otherwise):
10^6 chain sessions (a 2 GB log) run in under 300 MB. Time: each gpope step
draws a Bernoulli for every one of the n trajectories (Poisson sampling),
so a run costs iters x n draws.

Randomness: noise and sampling come from a generator keyed from the operating
system's secure source; --seed makes a run repeatable (research only) and the
ledger records that it was seeded.`,
		Example: `  dprl sims generate --env chain --behavior random --episodes 1000 --out chain.jsonl --seed 1
  dprl offline gtd2 --data chain.jsonl --env chain --target uniform --features tabular \
      --epsilon 1 --delta 1e-5 --iters 20000 --step-size 0.5 --plot mspbe.png
  dprl offline gtd2 --data chain.jsonl --env chain --target uniform --features tabular --method dp-lsw --epsilon 1 --delta 1e-5
  dprl offline gtd2 --data mc.jsonl --env mountaincar --target uniform --features fourier:5 --method wis-lstd --non-private --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOfflineGTD2(a, cmd, &f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.data, "data", "", "session log (dprl.sessions.v1), the private dataset")
	fl.StringVar(&f.target, "target", "", "target policy: uniform, snapshot:FILE, greedy[:FILE], softmax[:FILE]:TEMP, epsilon-greedy[:FILE]:EPS")
	fl.StringVar(&f.features, "features", "", "features: tabular, fourier:K or raw")
	fl.StringVar(&f.method, "method", methodGPOPE, "gpope, dp-lsw, lstd or wis-lstd")
	fl.Float64Var(&f.epsilon, "epsilon", 0, "privacy budget epsilon of this run (gpope, dp-lsw)")
	fl.Float64Var(&f.delta, "delta", 0, "privacy parameter delta of this run (gpope, dp-lsw)")
	fl.IntVar(&f.iters, "iters", 0, "gpope: number of noisy gradient steps T")
	fl.Float64Var(&f.stepSize, "step-size", 0.5, "gpope: step size alpha (alpha_0 with --diminishing)")
	fl.BoolVar(&f.diminishing, "diminishing", false, "gpope: step size alpha_0 / sqrt(t)")
	fl.Float64Var(&f.clip, "clip", 1, "gpope: L2 clip C of one trajectory's primal-dual gradient")
	fl.Float64Var(&f.batch, "batch", 1, "gpope: expected trajectories per step (Poisson sampling rate batch/n; the paper uses 1)")
	fl.IntVar(&f.publicN, "n", 0, "gpope: the public number of trajectories the sampling rate batch/n is computed from (default: the log's record count, which you then vouch is public)")
	fl.Float64Var(&f.gamma, "gamma", 0.9, "discount factor, 0 <= gamma < 1")
	fl.Float64Var(&f.ridge, "ridge", 1e-6, "lstd, wis-lstd: ridge added to A (unvisited tabular states make A singular)")
	fl.StringVar(&f.env, "env", "", "the simulator the data comes from (public knowledge): start distribution, bounds, built-in targets, exact chain MSPBE")
	fl.IntVar(&f.actions, "actions", 0, "the public number of discrete actions: required for a private run without --env (a record with a larger action is refused); without it a non-private run learns it from the log")
	fl.StringVar(&f.behavior, "behavior", "", "with --env chain: the behaviour policy of the data, for the exact MSPBE of off-policy data")
	fl.StringVar(&f.evalData, "eval-data", "", "a public session log on which to compute the empirical MSPBE instead of the private data")
	fl.Uint64Var(&f.seed, "seed", 0, "seed the noise and sampling (repeatable research runs; recorded in the ledger)")
	fl.BoolVar(&f.nonPrivate, "non-private", false, "allow output NOT covered by any DP guarantee: the lstd and wis-lstd methods, and with gpope or dp-lsw a section of statistics of the private log")
	fl.Float64SliceVar(&f.low, "low", nil, "fourier and grid box lower bounds (default: the environment's observation box)")
	fl.Float64SliceVar(&f.high, "high", nil, "fourier and grid box upper bounds")
	fl.IntVar(&f.grid, "lsw-grid", 10, "dp-lsw with non-tabular features: cells per observation component of the public grid")
	fl.Float64Var(&f.rewardLow, "reward-low", math.NaN(), "dp-lsw: public lower reward bound (default for chain 0, mountaincar -1)")
	fl.Float64Var(&f.rewardHig, "reward-high", math.NaN(), "dp-lsw: public upper reward bound (default for chain 1, mountaincar 0)")
	fl.StringVar(&f.plot, "plot", "", "gpope: write the MSPBE vs iteration curve as PNG to this file (public moments: --env chain or --eval-data; else only with --non-private)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	f.budget.register(fl)
	return c
}

// gtd2Run is the state of one run between validation and computation. It
// holds the log's index (offline.Index: 44 bytes per record) and the
// method's public inputs, never the log's sessions: every pass over the data
// streams it from the file through the index.
type gtd2Run struct {
	f     *offlineGTD2Flags
	env   sims.Env
	chain *sims.ChainConfig
	ix    *offline.Index
	spec  offline.Spec
	// maxAction is the largest action index of the log (the number of
	// actions without --env).
	maxAction int
	target    policies.Policy
	tp        targetProb
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

func runOfflineGTD2(a *app, cmd *cobra.Command, f *offlineGTD2Flags) error {
	private, err := checkGTD2Flags(cmd, f)
	if err != nil {
		return err
	}
	r := &gtd2Run{f: f, maxAction: -1}
	spec := offline.Spec{}
	if f.env != "" {
		if r.env, err = sims.New(f.env); err != nil {
			return usagef("--env: %w", err)
		}
		if as := r.env.ActionSpace(); as.Kind != sims.Discrete {
			return usagef("--env %s has continuous actions; gtd2 evaluates discrete-action policies", f.env)
		} else if f.actions != 0 && f.actions != as.N {
			return usagef("--actions %d: --env %s has %d actions", f.actions, f.env, as.N)
		}
		if ch, ok := r.env.(*sims.Chain); ok {
			cfg := ch.Config()
			r.chain = &cfg
		}
		// The environment fixes the dimensions: the target and features
		// are built now, from public inputs, and every record is
		// validated against them as the log is read.
		spec = offline.Spec{ObsDim: r.env.ObservationSpace().Dim(), Discrete: r.env.ActionSpace().N}
		r.spec = spec
		if err := r.setup(); err != nil {
			return err
		}
	} else if f.behavior != "" {
		return usagef("--behavior needs --env chain")
	}
	out := gtd2Output{Method: f.method, Private: private, Target: f.target, Features: f.features, Gamma: f.gamma, Seeded: cmd.Flags().Changed("seed")}

	// The protocol (budget.Run): one streaming pass reads, validates and
	// hashes every record (stopping at the first bad one); a private run
	// opens the ledger and is checked on the record count alone; the
	// target and features are validated against the whole log; a private
	// run is charged; then the estimate is computed.
	cfg, err := f.budget.config(a, private)
	if err != nil {
		return err
	}
	m := &gtd2Mechanism{r: r, a: a, out: &out}
	defer m.restoreHeap()
	opt := offline.ReaderOptions{Name: f.data, Spec: spec}
	if _, _, err := budget.Run(commandContext(cmd), cfg, budget.Input{Path: f.data, Reader: opt}, m); err != nil {
		return f.budget.explain(err)
	}
	return emit(a.stdout, f.asJSON, &out, func(w io.Writer) error { return printGTD2(w, &out) })
}

// gtd2Mechanism is a gtd2 run as budget.Run sees it.
type gtd2Mechanism struct {
	r       *gtd2Run
	a       *app
	out     *gtd2Output
	restore func()
}

// Check checks a record as the first pass reads it (gtd2Run.scanRecord).
func (m *gtd2Mechanism) Check(s *offline.Session) error { return m.r.scanRecord(s) }

// Scanned keeps the log's index and bounds the heap by its record count.
func (m *gtd2Mechanism) Scanned(ix *offline.Index) {
	m.r.ix = ix
	m.restore = limitHeap(ix.Len())
}

// restoreHeap restores the memory limit Scanned set.
func (m *gtd2Mechanism) restoreHeap() {
	if m.restore != nil {
		m.restore()
	}
}

// Entry is the run's cost, from the flags and the record count.
func (m *gtd2Mechanism) Entry(ix *offline.Index, ds budget.Dataset) (ledger.Entry, error) {
	e, err := gtd2Entry(m.r.f, ix.Len(), ds.Cap)
	e.Seeded = m.out.Seeded
	return e, err
}

// Validate checks, without --env, the target and features against the
// dimensions the scan learned, on a second pass; then fixes the public
// moments.
func (m *gtd2Mechanism) Validate(ix *offline.Index, _ *ledger.Entry) error {
	r, f := m.r, m.r.f
	if r.target == nil {
		r.spec = ix.Spec()
		switch {
		case f.actions > 0: // public, required for a private run
			r.spec.Discrete = f.actions
		case r.spec.Discrete == 0: // non-private: learned from the largest action seen
			r.spec.Discrete = max(r.maxAction+1, 2)
		}
		if err := r.setup(); err != nil {
			return err
		}
		if err := ix.Each(func(_ int, s *offline.Session) error { return r.validate(s) }); err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
	}
	if err := r.publicMoments(); err != nil {
		return err
	}
	if f.plot != "" && r.mom == nil && !f.nonPrivate {
		return usagef("--plot needs public moments for its MSPBE (--env chain or a public --eval-data); the MSPBE on the private log is only with --non-private")
	}
	return nil
}

// Compute fills the printed guarantee from the entry as written (what is
// printed is what was charged) and computes the estimate.
func (m *gtd2Mechanism) Compute(_ context.Context, ix *offline.Index, c *budget.Charge) (*gtd2Output, error) {
	r, f, out := m.r, m.r.f, m.out
	if c.Charged() {
		r.charged = true
		if err := fillGuarantee(f, c.Entry, out); err != nil {
			return nil, err
		}
		out.LedgerSeq, out.DatasetSpent = c.Entry.Seq, c.Spent
	}
	if f.nonPrivate {
		out.NonPrivate = &gtd2NonPrivate{Warning: notCovered, DatasetID: ix.ID()}
	}
	if err := r.compute(m.a, out); err != nil {
		return nil, err
	}
	return out, nil
}

// gtd2HeapBytes bounds the Go heap a gtd2 run on n records needs: 44 bytes
// per record for the log's index, about 130 more for a moment while the
// ledger registers a private run's records (two sorted copies of their
// hashes and a batch of index entries), and 48 MiB for the rest (one
// record, the method's d x d state, the runtime). The measured live heap at
// 10^6 records peaks at 164 MB, during the charge.
func gtd2HeapBytes(n int) int64 { return 48<<20 + 176*int64(n) }

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
func (r *gtd2Run) scanRecord(s *offline.Session) error {
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
func (r *gtd2Run) validate(s *offline.Session) error {
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
	switch r.f.method {
	case methodLSTD:
		if err := onPolicy(); err != nil {
			return fmt.Errorf("lstd is on-policy only (use wis-lstd or gpope for off-policy data): %w", err)
		}
	case methodDPLSW:
		// DP-LSW estimates the value of the policy that collected the log;
		// whether the log is on-policy is the user's declaration. Checking
		// it here would refuse or accept depending on one record, an
		// uncharged release, so the check runs only with --non-private.
		if r.f.nonPrivate {
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

// checkGTD2Flags validates the command line and reports whether the run is
// private.
func checkGTD2Flags(cmd *cobra.Command, f *offlineGTD2Flags) (bool, error) {
	switch {
	case f.data == "":
		return false, usagef("--data is required")
	case f.target == "":
		return false, usagef("--target is required")
	case f.features == "":
		return false, usagef("--features is required (tabular, fourier:K or raw)")
	case !(f.gamma >= 0 && f.gamma < 1):
		return false, usagef("--gamma %v: want 0 <= gamma < 1", f.gamma)
	}
	var private bool
	switch f.method {
	case methodGPOPE, methodDPLSW:
		private = true
		if !(f.epsilon > 0) || math.IsInf(f.epsilon, 0) {
			return false, usagef("--epsilon %v: want > 0 (method %s is private)", f.epsilon, f.method)
		}
		if !(f.delta > 0 && f.delta < 1) {
			return false, usagef("--delta %v: want 0 < delta < 1", f.delta)
		}
	case methodLSTD, methodWISLSTD:
		if !f.nonPrivate {
			return false, usagef("--method %s releases an estimate with no differential privacy guarantee; pass --non-private to run it anyway (it is not charged to the ledger)", f.method)
		}
		if cmd.Flags().Changed("epsilon") || cmd.Flags().Changed("delta") {
			return false, usagef("--epsilon/--delta have no meaning for the non-private %s", f.method)
		}
		if !(f.ridge >= 0) {
			return false, usagef("--ridge %v: want >= 0", f.ridge)
		}
	default:
		return false, usagef("--method %q: want gpope, dp-lsw, lstd or wis-lstd", f.method)
	}
	switch {
	case cmd.Flags().Changed("actions") && f.actions < 2:
		return false, usagef("--actions %d: want the public number of discrete actions, >= 2", f.actions)
	case private && f.env == "" && f.actions == 0:
		// Learned from the log, the number of actions would be the
		// largest action seen plus one: one record could change it.
		return false, usagef("a private run without --env needs --actions N, the public number of discrete actions (the log's largest action would depend on single records)")
	}
	if f.method == methodGPOPE {
		switch {
		case f.iters < 1:
			return false, usagef("--iters %d: want at least 1 (gpope)", f.iters)
		case !(f.stepSize > 0) || math.IsInf(f.stepSize, 0):
			return false, usagef("--step-size %v: want > 0", f.stepSize)
		case !(f.clip > 0) || math.IsInf(f.clip, 0):
			return false, usagef("--clip %v: want > 0", f.clip)
		case !(f.batch > 0) || math.IsInf(f.batch, 0):
			return false, usagef("--batch %v: want > 0", f.batch)
		case cmd.Flags().Changed("n") && f.publicN < 1:
			return false, usagef("--n %d: want the public number of trajectories, >= 1", f.publicN)
		}
	} else {
		if f.plot != "" {
			return false, usagef("--plot draws the gpope iterations; --method %s has none", f.method)
		}
		if cmd.Flags().Changed("n") {
			return false, usagef("--n is gpope's public number of trajectories; --method %s does not use it", f.method)
		}
	}
	if f.method == methodDPLSW && f.epsilon > 1 {
		return false, usagef("--epsilon %v: dp-lsw's smooth-sensitivity calibration is proved for epsilon <= 1", f.epsilon)
	}
	return private, nil
}

// gtd2Entry builds the ledger entry of a private run on a log of counted
// records. gpope's sampling rate is batch/n for the public n: --n, else the
// log's record count, which the user then vouches is public.
func gtd2Entry(f *offlineGTD2Flags, counted int, capFor func(ledger.Unit) (ledger.Cap, error)) (ledger.Entry, error) {
	e := ledger.Entry{Unit: ledger.UnitTrajectory, Method: accountant.MethodRDP, Participants: counted}
	switch f.method {
	case methodGPOPE:
		n := counted
		if f.publicN > 0 {
			n = f.publicN
		}
		e.Participants = n
		q := f.batch / float64(n)
		if q > 1 {
			return e, usagef("--batch %v exceeds the n = %d trajectories", f.batch, n)
		}
		acc := accountant.RDP{}
		z, err := accountant.Calibrate(acc, f.epsilon, f.delta, q, f.iters)
		if err != nil {
			return e, usageError{fmt.Errorf("calibrating the noise: %w", err)}
		}
		cfg := gtd2.Config{Iters: f.iters, StepSize: f.stepSize, Clip: f.clip, Z: z, Q: q, Batch: f.batch}
		if err := cfg.Validate(); err != nil {
			return e, usageError{err}
		}
		ev := accountant.Event{Q: q, Z: z, Steps: f.iters}
		g, err := acc.Epsilon(f.delta, ev)
		if err != nil {
			return e, err
		}
		e.Mechanism = fmt.Sprintf("gpope: %d steps of clipped (C=%g) primal-dual GTD2 gradients of a Poisson sample (q=%.4g = batch %g / public n %d) + Gaussian noise", f.iters, f.clip, q, f.batch, n)
		e.Events = []accountant.Event{ev}
		e.Epsilon, e.Delta = g.Epsilon, f.delta
	case methodDPLSW:
		c, err := capFor(ledger.UnitTrajectory)
		if err != nil {
			return e, err
		}
		if f.delta >= c.Delta {
			return e, usagef("dp-lsw spends its delta %g by basic composition, which leaves nothing of the dataset's cap delta %g for the accountant; lower --delta", f.delta, c.Delta)
		}
		e.Mechanism = "dp-lsw: first-visit Monte Carlo + weighted least squares + Gaussian noise on a smooth sensitivity bound"
		e.Fixed = []ledger.FixedCost{{Epsilon: f.epsilon, Delta: f.delta, Source: lswSource}}
		e.Epsilon, e.Delta = f.epsilon, f.delta
	}
	return e, nil
}

// fillGuarantee fills the printed guarantee of a private run from its
// ledger entry as written, so that what is printed is what was charged.
func fillGuarantee(f *offlineGTD2Flags, e ledger.Entry, out *gtd2Output) error {
	out.Epsilon, out.Delta = e.Epsilon, e.Delta
	switch f.method {
	case methodGPOPE:
		if len(e.Events) != 1 {
			return fmt.Errorf("ledger entry %d: %d events, want gpope's one", e.Seq, len(e.Events))
		}
		ev := e.Events[0]
		out.Accountant = "rdp (subsampled Gaussian, Mironov, Talwar & Zhang 2019)"
		out.NoiseMultiplier, out.Iters, out.Clip, out.Batch, out.rate = ev.Z, ev.Steps, f.clip, f.batch, ev.Q
		out.NTrajectories = e.Participants
		if f.publicN > 0 {
			out.NSource = "--n (public)"
		} else {
			out.NSource = "the log's record count, assumed public (the user vouches for it; pass --n to state it)"
		}
	case methodDPLSW:
		out.Accountant = "smooth sensitivity (Balle et al. 2016; NRS 2007), composed with the dataset's other runs by basic composition"
	}
	return nil
}

// policyOptions are the dimensions and reference a policy spec is checked
// against.
func (r *gtd2Run) policyOptions() policies.Options {
	o := policies.Options{NumActions: r.spec.Discrete, ObsDim: r.spec.ObsDim}
	if ref, ok := policies.Builtin(r.f.env, r.spec.ObsDim); ok {
		o.Reference = ref
	}
	return o
}

// box returns the public observation box: --low/--high, else the
// environment's.
func (r *gtd2Run) box() (low, high []float64, err error) {
	low, high = r.f.low, r.f.high
	if low == nil && high == nil && r.env != nil {
		sp := r.env.ObservationSpace()
		low, high = sp.Low, sp.High
	}
	if low == nil || high == nil {
		return nil, nil, usagef("--features %s needs the observation box: give --low and --high (or an --env with a bounded observation space)", r.f.features)
	}
	if len(low) != r.spec.ObsDim || len(high) != r.spec.ObsDim {
		return nil, nil, usagef("--low/--high have %d and %d components, the observations %d", len(low), len(high), r.spec.ObsDim)
	}
	for i := range low {
		if math.IsInf(low[i], 0) || math.IsInf(high[i], 0) {
			return nil, nil, usagef("observation component %d is unbounded in --env %s: give --low and --high", i, r.f.env)
		}
	}
	return low, high, nil
}

// parseFeatures builds the feature map for the log's observations.
func (r *gtd2Run) parseFeatures() (gtd2.Features, error) {
	spec := r.f.features
	switch {
	case spec == "tabular":
		return gtd2.Tabular{N: r.spec.ObsDim}, nil
	case spec == "raw":
		return gtd2.Raw{N: r.spec.ObsDim}, nil
	case strings.HasPrefix(spec, "fourier:"):
		k, err := strconv.Atoi(strings.TrimPrefix(spec, "fourier:"))
		if err != nil {
			return nil, usagef("--features %q: the Fourier order is not an integer", spec)
		}
		low, high, err := r.box()
		if err != nil {
			return nil, err
		}
		fr, err := gtd2.NewFourier(k, low, high)
		if err != nil {
			return nil, usagef("--features: %w", err)
		}
		return fr, nil
	}
	return nil, usagef("--features %q: want tabular, fourier:K or raw", spec)
}

// setup builds the target, the features and dp-lsw's public state set
// from the dimensions in force (r.spec) and public inputs; it reads no
// record.
func (r *gtd2Run) setup() error {
	var err error
	if r.target, err = policies.Parse(r.f.target, r.policyOptions()); err != nil {
		return usagef("--target: %w", err)
	}
	r.tp = targetProb{p: r.target, buf: make([]float64, r.target.NumActions())}
	if r.feats, err = r.parseFeatures(); err != nil {
		return err
	}
	if r.f.method == methodDPLSW {
		return r.prepareLSW()
	}
	return nil
}

// prepareLSW fixes DP-LSW's finite state set, its public state weights and
// reward bounds.
func (r *gtd2Run) prepareLSW() error {
	var sm lsw.StateMap
	if _, ok := r.feats.(gtd2.Tabular); ok {
		sm = lsw.Tabular{N: r.spec.ObsDim}
	} else {
		low, high, err := r.box()
		if err != nil {
			return err
		}
		g, err := lsw.NewGrid(low, high, r.f.grid)
		if err != nil {
			return usagef("--lsw-grid: %w", err)
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
	lo, hi := r.f.rewardLow, r.f.rewardHig
	if math.IsNaN(lo) || math.IsNaN(hi) {
		prof, err := profile.Get(r.f.env)
		if err != nil {
			return usagef("dp-lsw needs public reward bounds: give --reward-low and --reward-high")
		}
		lo, hi = prof.RewardLow, prof.RewardHigh
		if !math.IsNaN(r.f.rewardLow) {
			lo = r.f.rewardLow
		}
		if !math.IsNaN(r.f.rewardHig) {
			hi = r.f.rewardHig
		}
	}
	r.lswCfg = lsw.Config{Epsilon: r.f.epsilon, Delta: r.f.delta, Gamma: r.f.gamma, RewardLow: lo, RewardHigh: hi, Weights: weights}
	if err := r.lswCfg.Validate(); err != nil {
		return usageError{err}
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
		return usageError{err}
	}
	r.lswMap = sm
	return nil
}

// lswTrajectory maps a session to DP-LSW's states, in r.lswTraj's storage
// (valid until the next call).
func (r *gtd2Run) lswTrajectory(s *offline.Session) (lsw.Trajectory, error) {
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

// targetProb adapts a policies.Policy to gtd2.Policy; an observation the
// policy cannot read gives NaN, which gtd2.Prepare reports.
type targetProb struct {
	p   policies.Policy
	buf []float64
}

// Prob returns pi(a|obs).
func (t targetProb) Prob(obs []float64, a sims.Action) float64 {
	if a.Vec != nil || a.Index < 0 || a.Index >= len(t.buf) {
		return math.NaN()
	}
	if err := t.p.Probs(t.buf, obs); err != nil {
		return math.NaN()
	}
	return t.buf[a.Index]
}

// newNoiseRand returns the generator of the run's noise and sampling:
// ChaCha8 keyed from --seed, else from crypto/rand.
func newNoiseRand(seeded bool, seed uint64) (*mrand.Rand, error) {
	var key [32]byte
	if seeded {
		binary.LittleEndian.PutUint64(key[:8], seed)
		copy(key[8:], "dprl offline gtd2")
	} else if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("secure random source: %w", err)
	}
	return mrand.New(mrand.NewChaCha8(key)), nil
}

// publicMoments fixes the moments the MSPBE of the release is measured
// with: only public ones, so that the MSPBE is post-processing of the
// weights. With --env chain, the chain's exact model under --behavior, else
// under the target (the on-policy MSPBE; whether the log is on-policy is not
// consulted, as that is a property of the private data); else the moments of
// a public --eval-data log; else none.
func (r *gtd2Run) publicMoments() error {
	if r.chain != nil && r.spec.ObsDim == r.chain.States {
		k := r.chain.States - 1
		pi, err := chainTable(r.target, r.chain.States)
		if err != nil {
			return err
		}
		mu, kind := pi, "exact (chain model, behaviour = target)"
		if r.f.behavior != "" {
			beh, err := policies.Parse(r.f.behavior, r.policyOptions())
			if err != nil {
				return usagef("--behavior: %w", err)
			}
			if mu, err = chainTable(beh, r.chain.States); err != nil {
				return err
			}
			kind = "exact (chain model)"
		}
		m, err := gtd2.ChainMoments(*r.chain, mu[:k], pi[:k], r.feats, r.f.gamma)
		switch {
		case err == nil:
			r.mom, r.momKind = &m, kind
			return nil
		case r.f.behavior != "":
			return err
		}
		// The target never reaches the end: no on-policy model; a public
		// log may still do.
	}
	if r.f.evalData != "" {
		m, err := r.evalMoments()
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
func (r *gtd2Run) evalMoments() (gtd2.Moments, error) {
	file, err := os.Open(r.f.evalData)
	if err != nil {
		return gtd2.Moments{}, err
	}
	defer file.Close()
	rd := offline.NewReader(file, offline.ReaderOptions{Name: r.f.evalData, Spec: r.spec})
	ms := gtd2.NewMomentsSum(r.feats.Dim(), r.f.gamma, true)
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
			return gtd2.Moments{}, fmt.Errorf("%s:%d: %w", r.f.evalData, rd.Line(), err)
		}
		ms.Add(&tr)
	}
	if n == 0 {
		return gtd2.Moments{}, fmt.Errorf("%s: no sessions", r.f.evalData)
	}
	m := ms.Moments()
	m.FillUnvisited()
	return m, nil
}

// failed explains an error after the charge: the run was charged and
// nothing was released.
func (r *gtd2Run) failed(err error) error {
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

// startValue returns theta . mean phi over the environment's public start
// distribution (chain: uniform over the non-terminal states; otherwise 1000
// resets drawn with a fixed public seed), and for chain the true value.
func (r *gtd2Run) startValue(theta []float64) (v, truth *float64, err error) {
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
		vf, err := r.chain.ValueFunction(pi, r.f.gamma)
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
func (r *gtd2Run) compute(a *app, out *gtd2Output) error {
	f := r.f
	np := out.NonPrivate
	var privMom gtd2.Moments
	var privSum, lstdSum *gtd2.MomentsSum
	var visits *lsw.Visits
	d := r.feats.Dim()
	if np != nil {
		np.NTrajectories, np.NTransitions = r.ix.Len(), r.transitions
		privSum = gtd2.NewMomentsSum(d, f.gamma, true)
	}
	switch f.method {
	case methodLSTD, methodWISLSTD:
		lstdSum = gtd2.NewMomentsSum(d, f.gamma, f.method == methodWISLSTD)
	case methodDPLSW:
		visits = lsw.NewVisits(len(r.lswPhi), r.lswCfg.Gamma, r.lswCfg.RewardLow, r.lswCfg.RewardHigh)
	}
	if privSum != nil || lstdSum != nil || visits != nil {
		// One pass over the log, each record checked against its hash.
		err := r.ix.Each(func(_ int, s *offline.Session) error {
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
	rng, err := newNoiseRand(out.Seeded, f.seed)
	if err != nil {
		return err
	}
	// The plot's moments: public ones, else (only with --non-private) the
	// private log's.
	plotMom, plotKind := r.mom, r.momKind
	if plotMom == nil {
		plotMom, plotKind = &privMom, "empirical (private data: "+notCovered+")"
	}
	var curve plotter.XYs
	switch f.method {
	case methodGPOPE:
		cfg := gtd2.Config{Iters: out.Iters, StepSize: f.stepSize, Diminishing: f.diminishing, Clip: out.Clip, Z: out.NoiseMultiplier,
			Q: out.rate, Batch: out.Batch}
		every := max(1, f.iters/200)
		prog := newStepProgress(a, f.iters)
		cfg.Observe = func(t int, theta []float64) {
			prog.update(t)
			if f.plot != "" && (t%every == 0 || t == f.iters) {
				if e, err := gtd2.MSPBE(*plotMom, theta); err == nil {
					curve = append(curve, plotter.XY{X: float64(t), Y: e})
				}
			}
		}
		rr, err := r.ix.Open()
		if err != nil {
			return r.failed(fmt.Errorf("dataset: %w", err))
		}
		defer rr.Close()
		src, err := gtd2.NewOnDemand(rr, r.feats, r.tp, f.gamma)
		if err != nil {
			return r.failed(err)
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
	case methodDPLSW:
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
	case methodLSTD, methodWISLSTD:
		theta, err := gtd2.SolveLSTD(lstdSum.Moments(), f.ridge)
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
	if f.plot != "" {
		title := fmt.Sprintf("GPOPE on %s: (%.3g, %g)-DP", filepathBase(f.data), out.Epsilon, out.Delta)
		if err := writeMSPBEPNG(f.plot, curve, plotKind, title); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		out.Plot = f.plot
	}
	return nil
}

func printGTD2(w io.Writer, o *gtd2Output) error {
	fmt.Fprintf(w, "method:      %s (target %s, features %s, gamma %g)\n", o.Method, o.Target, o.Features, o.Gamma)
	if o.Value != nil {
		fmt.Fprintf(w, "value:       %.6g at the start distribution", *o.Value)
		if o.TrueValue != nil {
			fmt.Fprintf(w, " (true %.6g)", *o.TrueValue)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "value:       - (give --env for a public start distribution)")
	}
	if o.MSPBE != nil {
		fmt.Fprintf(w, "MSPBE:       %.6g, %s\n", *o.MSPBE, o.MSPBEKind)
	} else {
		fmt.Fprintf(w, "MSPBE:       - %s\n", o.MSPBEKind)
	}
	fmt.Fprintf(w, "weights:     %s\n", fmtVec(o.Weights))
	if !o.Private {
		fmt.Fprintln(w, "privacy:     NONE: this estimate is not differentially private (not charged)")
	} else {
		fmt.Fprintf(w, "privacy:     (%.4g, %g)-DP per trajectory (added or removed), %s\n", o.Epsilon, o.Delta, o.Accountant)
		if o.Method == methodGPOPE {
			fmt.Fprintf(w, "noise:       z = %.4g on clip %g, %d steps, Poisson sampling of expected batch %g of n = %d trajectories\n", o.NoiseMultiplier, o.Clip, o.Iters, o.Batch, o.NTrajectories)
			fmt.Fprintf(w, "public n:    %s\n", o.NSource)
		} else {
			fmt.Fprintf(w, "noise:       Gaussian on a smooth sensitivity bound, from public reward bounds [%g, %g] (return range %.4g); its scale depends on the data and is not released\n", o.RewardBounds[0], o.RewardBounds[1], o.ReturnRange)
		}
		fmt.Fprintf(w, "ledger:      entry %d; dataset spent epsilon %.4g", o.LedgerSeq, o.DatasetSpent)
		if o.Seeded {
			fmt.Fprint(w, " (seeded run)")
		}
		fmt.Fprintln(w)
	}
	if o.Plot != "" {
		fmt.Fprintf(w, "plot:        %s\n", o.Plot)
	}
	if np := o.NonPrivate; np != nil {
		fmt.Fprintf(w, "\n%s (--non-private): statistics of the private log\n", np.Warning)
		fmt.Fprintf(w, "  dataset:   %s\n", np.DatasetID)
		fmt.Fprintf(w, "  data:      %d trajectories, %d transitions\n", np.NTrajectories, np.NTransitions)
		if np.MSPBE != nil {
			fmt.Fprintf(w, "  MSPBE:     %.6g with the private log's moments\n", *np.MSPBE)
		} else {
			fmt.Fprintln(w, "  MSPBE:     - (not finite with the private log's moments)")
		}
		if g := np.GPOPE; g != nil {
			fmt.Fprintf(w, "  gradients: %d sampled, %d clipped, %d zeroed (not finite)\n", g.Sampled, g.Clipped, g.Zeroed)
		}
		if l := np.LSW; l != nil {
			fmt.Fprintf(w, "  noise:     sigma = %.4g per weight (Psi %.4g, %d states visited)\n", l.Sigma, l.Psi, l.Visited)
		}
	}
	return nil
}

func fmtVec(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'g', 4, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// writeMSPBEPNG plots MSPBE against the iteration on a log scale.
func writeMSPBEPNG(path string, curve plotter.XYs, kind, title string) error {
	if len(curve) == 0 {
		return errors.New("no MSPBE values to plot")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "MSPBE, " + strings.SplitN(kind, ":", 2)[0]
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i := range curve {
		curve[i].Y = math.Max(curve[i].Y, 1e-300)
	}
	l, err := plotter.NewLine(curve)
	if err != nil {
		return err
	}
	p.Add(l, plotter.NewGrid())
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// stepProgress logs the progress of a long loop every few seconds.
type stepProgress struct {
	a     *app
	total int
	last  time.Time
}

func newStepProgress(a *app, total int) *stepProgress {
	return &stepProgress{a: a, total: total, last: time.Now()}
}

func (p *stepProgress) update(t int) {
	if t%64 != 0 || time.Since(p.last) < 3*time.Second {
		return
	}
	p.last = time.Now()
	p.a.log.Info().Int("step", t).Int("of", p.total).Msg("gpope")
}

// filepathBase is the file name of a path, for plot titles.
func filepathBase(p string) string { return filepath.Base(p) }
