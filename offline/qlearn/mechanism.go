package qlearn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"dprl/internal/atomicfile"
	"dprl/internal/chart"
	"dprl/internal/fielderr"
	"dprl/internal/rng"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/offline/budget"
	"dprl/sessionlog"
	"dprl/sims"
)

// ConfigError is an error naming LearnConfig's fields.
type ConfigError = fielderr.Error

// fieldNames are LearnConfig's fields that errors name.
var fieldNames = fielderr.Fields{"Data", "Stable", "Unstable", "Env", "Unit", "Experts", "Epsilon", "Delta", "Sigma", "P",
	"Steps", "Clip", "NonPrivate", "EvalEpisodes", "EvalEvery", "Out", "Batch", "LR", "Hidden", "Algo"}

// LearnConfig is one run of dprl offline learn: discrete CQL or BCQ on a
// session log, with expert-level (or trajectory-level) DP-SGD, selective
// DP-SGD after an SVT release, or without privacy.
type LearnConfig struct {
	// Config is the learner's.
	Config
	// Env is the public simulator (discrete actions): its spaces, and the
	// evaluation of the policy.
	Env string `flag:"env" usage:"the public simulator (discrete actions) the policy is evaluated on"`
	// Data is a private log, for DP-SGD alone (every step a DP step) or a
	// non-private run. Exclusive with Stable and Unstable.
	Data string `flag:"data" usage:"the private dprl.sessions.v1 log (DP-SGD alone, or --non-private)"`
	// Stable and Unstable are the outputs of dprl offline svt on a source
	// log charged in the same ledger: selective DP-SGD (Sharma et al.,
	// Algorithm 3) takes each step as a DP step on Unstable with
	// probability P, else a plain step on Stable (a release: public).
	// The run is charged to the source dataset.
	Stable   string `flag:"stable" usage:"the stable release of dprl offline svt (selective DP-SGD)"`
	Unstable string `flag:"unstable" usage:"the unstable set of dprl offline svt (selective DP-SGD)"`
	// Unit is the protected unit: expert or trajectory (with Data only).
	Unit ledger.Unit `flag:"unit" usage:"protected unit: expert or trajectory (--data only)"`
	// Experts is the public number of experts m at unit expert: each
	// expert is sampled with probability q = Batch/m. At unit trajectory m
	// is the log's record count (taken as public, as the other offline
	// modes do).
	Experts int `flag:"experts" usage:"the public number of experts m (unit expert): each expert is sampled with probability batch/m"`
	// Epsilon and Delta are this run's guarantee (eps2, delta2 after an
	// SVT release, whose own cost is already on the dataset).
	Epsilon float64 `flag:"epsilon" usage:"this run's epsilon per unit (after an SVT release: eps2)"`
	Delta   float64 `flag:"delta" usage:"this run's delta (after an SVT release: delta2)"`
	// Sigma is the noise multiplier; 0 calibrates it (PLD) so that the
	// run's DP steps cost exactly Epsilon. Given, the run costs what its
	// DP steps cost, which must not exceed Epsilon.
	Sigma float64 `flag:"sigma" usage:"noise multiplier (default: calibrated to --epsilon)"`
	// P is the probability that a step is a DP step (selective mode;
	// DP-SGD alone is P = 1).
	P float64 `flag:"p" usage:"probability of a DP step on the unstable set (selective DP-SGD)"`
	// Steps is the number of gradient steps N.
	Steps int `flag:"steps" usage:"gradient steps N"`
	// Clip is the per-unit clipping norm C.
	Clip float64 `flag:"clip" usage:"per-transition clipping norm C"`
	// NonPrivate trains on Data without clipping or noise, uncharged and
	// labelled NOT private: the reference the paper normalises by.
	NonPrivate bool `flag:"non-private" usage:"train on --data without clipping or noise; not charged, NOT private"`
	// EvalEpisodes are the simulator episodes of the final evaluation,
	// and of one every EvalEvery steps (0: only the final one).
	EvalEpisodes int `flag:"eval-episodes" usage:"simulator episodes of each evaluation"`
	EvalEvery    int `flag:"eval-every" usage:"evaluate every this many steps for the curve (0: at the end only)"`
	// Seed keys every generator when Seeded (a simulation, recorded as
	// such); otherwise batches and noise come from the secure generator.
	Seed   uint64 `flag:"seed" usage:"seed every generator (a repeatable simulation, recorded as seeded in the ledger; default: the secure generator)"`
	Seeded bool
	// Out, if set, is a new file the policy is written to (Snapshot).
	Out string `flag:"out" usage:"write the policy to this new file (dprl.qlearn.v2 JSON, recording its provenance: private or not, epsilon, delta, unit, ledger entry)"`
	// Progress, if set, receives the steps done.
	Progress func(done, total int)
}

// DefaultLearnConfig returns CQL on CartPole at unit expert with the paper's
// clip 1 and Table 3's CartPole setting at epsilon 10 for CQL (eta 1e-4, b
// 128; p 0.8 and sigma 80 for selective runs, which set them), 10,000
// steps and 10 evaluation episodes.
func DefaultLearnConfig() LearnConfig {
	c := DefaultConfig()
	return LearnConfig{Config: c, Env: "cartpole", Unit: ledger.UnitExpert, Delta: 1e-5, P: 1, Steps: 10000, Clip: 1,
		EvalEpisodes: 10, EvalEvery: 1000}
}

// selective reports whether the run is selective DP-SGD.
func (c LearnConfig) selective() bool { return c.Unstable != "" || c.Stable != "" }

// Validate reports every invalid field; it reads no file except to refuse
// an existing Out.
func (c LearnConfig) Validate() error {
	var errs []error
	bad := func(cond bool, f string, a ...any) {
		if cond {
			errs = append(errs, fieldNames.Errorf(f, a...))
		}
	}
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	info, ok := sims.Lookup(c.Env)
	bad(!ok, "{Env} %q: unknown simulator", c.Env)
	if ok {
		bad(info.New().ActionSpace().Kind != sims.Discrete, "{Env} %q: actions are not discrete", c.Env)
	}
	switch {
	case c.Data != "" && c.selective():
		bad(true, "{Data} and {Stable}/{Unstable}: give one log, or the two outputs of dprl offline svt")
	case c.Data == "" && !c.selective():
		bad(true, "{Data} missing: the session log to learn from (or {Stable} and {Unstable})")
	case c.selective():
		bad(c.Stable == "" || c.Unstable == "", "{Stable} and {Unstable}: both are needed for selective DP-SGD")
		bad(c.NonPrivate, "{NonPrivate} applies to {Data} only")
		bad(c.Unit != ledger.UnitExpert, "{Unit} %q: the SVT release is expert-level, so selective DP-SGD is too", c.Unit)
		bad(!(c.P > 0 && c.P <= 1), "{P} %v: must be in (0, 1]", c.P)
		if c.Stable != "" && c.Stable == c.Unstable {
			bad(true, "{Stable} and {Unstable}: the same file")
		}
	default:
		bad(c.P != 1, "{P} %v: applies to selective DP-SGD ({Stable} and {Unstable}) only", c.P)
	}
	bad(c.Unit != ledger.UnitExpert && c.Unit != ledger.UnitTrajectory, "{Unit} %q: want expert or trajectory", c.Unit)
	if !c.NonPrivate {
		bad(!(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0), "{Epsilon} %v: must be finite and > 0", c.Epsilon)
		bad(!(c.Delta > 0 && c.Delta < 1), "{Delta} %v: must be in (0, 1)", c.Delta)
		bad(!(c.Sigma >= 0) || math.IsInf(c.Sigma, 0), "{Sigma} %v: must be finite and >= 0 (0: calibrated)", c.Sigma)
		bad(!(c.Clip > 0) || math.IsInf(c.Clip, 0), "{Clip} %v: must be finite and > 0", c.Clip)
		bad(c.Batch > noise.MaxPoissonBatch, "{Batch} %d: a DP step's expected batch is at most %d (the exact noise's rounding condition)", c.Batch, noise.MaxPoissonBatch)
		if c.Unit == ledger.UnitExpert {
			bad(c.Experts < 1, "{Experts} %d: the public number of experts m is needed at unit expert (q = batch/m)", c.Experts)
			bad(c.Experts >= 1 && c.Batch > c.Experts, "{Batch} %d exceeds {Experts} %d", c.Batch, c.Experts)
		}
	}
	bad(c.Steps < 1 || c.Steps > 1<<26, "{Steps} %d: want 1..%d", c.Steps, 1<<26)
	bad(c.EvalEpisodes < 1, "{EvalEpisodes} %d: must be >= 1", c.EvalEpisodes)
	bad(c.EvalEvery < 0, "{EvalEvery} %d: must be >= 0", c.EvalEvery)
	if c.Out != "" {
		_, err := os.Lstat(c.Out)
		bad(err == nil, "{Out} %q exists: choose a new file", c.Out)
	}
	return errors.Join(errs...)
}

// NotPrivate labels a non-private run's result.
const NotPrivate = "NOT differentially private: no clipping, no noise, not charged (the reference learner)"

// CurvePoint is the policy's mean evaluation return after Step steps.
type CurvePoint struct {
	Step   int     `json:"step"`
	Return float64 `json:"return"`
}

// Result is a run's outcome. The policy and its returns on the simulator
// are post-processing of the DP-SGD iterates; the rest are public
// parameters, or labelled for a non-private run.
type Result struct {
	Algo    Algo    `json:"algo"`
	Env     string  `json:"env"`
	Mode    string  `json:"mode"` // dp-sgd, selective or non-private
	Unit    string  `json:"unit,omitempty"`
	Private bool    `json:"private"`
	Warning string  `json:"warning,omitempty"`
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	// RDPEpsilon is the RDP accountant's epsilon for the same events, a
	// cross-check (>= Epsilon up to the PLD's discretisation).
	RDPEpsilon float64 `json:"rdp_epsilon,omitempty"`
	Accountant string  `json:"accountant,omitempty"`
	// DatasetSpent is the dataset's composed epsilon at the unit after
	// the run, with the SVT release's cost for a selective run.
	DatasetSpent float64 `json:"dataset_spent,omitempty"`
	Sigma        float64 `json:"sigma,omitempty"`
	Q            float64 `json:"q,omitempty"`
	P            float64 `json:"p,omitempty"`
	M            int     `json:"m,omitempty"`
	Clip         float64 `json:"clip,omitempty"`
	Batch        int     `json:"batch"`
	LR           float64 `json:"lr"`
	Steps        int     `json:"steps"`
	DPSteps      int     `json:"dp_steps"`
	Seeded       bool    `json:"seeded"`
	LedgerSeq    uint64  `json:"ledger_seq,omitempty"`
	// Return is the greedy policy's mean return over EvalEpisodes
	// simulator episodes, with its standard deviation.
	Return    float64 `json:"return"`
	ReturnStd float64 `json:"return_std"`
	// LastReturn is the paper's metric (App. B.3): the mean of the
	// evaluations in the last 10,000 steps (the curve's points there,
	// the final one included).
	LastReturn float64      `json:"last_10k_return"`
	Curve      []CurvePoint `json:"curve,omitempty"`
	// Seconds is the run's wall-clock time: operational, NOT covered by
	// the guarantee (a time can depend on the data), and printed so
	// labelled.
	Seconds float64 `json:"seconds"`
	Out     string  `json:"out,omitempty"`
}

// WriteText writes the result as the command prints it.
func (r *Result) WriteText(w io.Writer) error {
	if r.Private {
		fmt.Fprintf(w, "%s %s on %s: epsilon %s at delta %g per %s (%s; rdp cross-check %s); sigma %.4g, q %.4g, %d DP steps of %d",
			r.Algo, r.Mode, r.Env, accountant.FormatEpsilon(r.Epsilon), r.Delta, r.Unit, r.Accountant, accountant.FormatEpsilon(r.RDPEpsilon), r.Sigma, r.Q, r.DPSteps, r.Steps)
		if r.Mode == "selective" {
			fmt.Fprintf(w, " (p %g)", r.P)
		}
		fmt.Fprintf(w, "; the dataset has spent %s", accountant.FormatEpsilon(r.DatasetSpent))
		if r.Seeded {
			fmt.Fprint(w, " (seeded: a simulation, not a production release)")
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "%s on %s: %s\n", r.Algo, r.Env, r.Warning)
	}
	window := "the last 10,000"
	if r.Steps <= lastWindow {
		window = fmt.Sprintf("all %d", r.Steps) // the run is shorter than the paper's window
	}
	_, err := fmt.Fprintf(w, "policy return on the simulator %.1f ± %.1f after %d steps, %.1f on average over %s; %.1f s (operational timing, NOT covered by the guarantee)\n", r.Return, r.ReturnStd, r.Steps, r.LastReturn, window, r.Seconds)
	if err == nil && r.Out != "" {
		_, err = fmt.Fprintf(w, "policy written to %s\n", r.Out)
	}
	return err
}

// PlotCurve draws the evaluation return against steps.
func (r *Result) PlotCurve(path string) error {
	if len(r.Curve) == 0 {
		return errors.New("qlearn: no evaluation curve (set an evaluation period)")
	}
	s := chart.Series{Label: fmt.Sprintf("%s, %s", r.Algo, r.Mode), Points: true}
	for _, p := range r.Curve {
		s.X, s.Y = append(s.X, float64(p.Step)), append(s.Y, p.Return)
	}
	title := fmt.Sprintf("%s on %s: %s", r.Algo, r.Env, r.Warning)
	if r.Private {
		title = fmt.Sprintf("%s on %s, %s: epsilon %s per %s", r.Algo, r.Env, r.Mode, accountant.FormatEpsilon(r.Epsilon), r.Unit)
	}
	return chart.Chart{Title: title, XLabel: "gradient steps", YLabel: "greedy return on the simulator", Series: []chart.Series{s}}.Save(path)
}

// Learn is a run as the budget protocol sees it: its input is Data, or
// Unstable for a selective run (charged, through the ledger's lineage, to
// the dataset the SVT release read), Stable being read as public after the
// ledger confirms it is that dataset's release. Call Close when done.
type Learn struct {
	c          LearnConfig
	obsDim, nA int
	opt        sessionlog.ReaderOptions
	q, sigma   float64
	m          int
	plan       Plan
	rdp        float64
	private    *Data
	public     *Data
	stable     *sessionlog.Index // the stable release, checked in the ledger
	build      *Builder          // the private log's transitions
}

// Check refuses settings of c that do not parse or do not apply, naming
// their fields (set reports whether a field was given): an unknown Algo,
// a Unit other than expert or trajectory, and with NonPrivate any of the
// privacy settings (Epsilon, Delta, Sigma, Clip, Experts, P).
func (c LearnConfig) Check(set func(field string) bool) error {
	if _, err := ParseAlgo(string(c.Algo)); err != nil {
		return fieldNames.Errorf("{Algo}: %v", err)
	}
	if c.Unit != ledger.UnitExpert && c.Unit != ledger.UnitTrajectory {
		return fieldNames.Errorf("{Unit} %q: want expert or trajectory", c.Unit)
	}
	for _, f := range []string{"Epsilon", "Delta", "Sigma", "Clip", "Experts", "P"} {
		if c.NonPrivate && set(f) {
			return fieldNames.Errorf("{NonPrivate} trains without noise: {%s} does not apply", f)
		}
	}
	return nil
}

// NewLearn validates c and returns its mechanism and the input's reader
// options.
func NewLearn(c LearnConfig) (*Learn, budget.Input, error) {
	if err := c.Validate(); err != nil {
		return nil, budget.Input{}, err
	}
	env, _ := sims.New(c.Env)
	m := &Learn{c: c, obsDim: env.ObservationSpace().Dim(), nA: env.ActionSpace().N}
	var unit UnitOf
	if c.Unit == ledger.UnitExpert && !c.NonPrivate {
		unit = ByExpert
	}
	var err error
	if m.build, err = NewBuilder(m.obsDim, m.nA, unit); err != nil {
		return nil, budget.Input{}, err
	}
	path := c.Data
	if c.selective() {
		path = c.Unstable
	}
	// Behaviour probabilities are not used: logs without them are read.
	m.opt = sessionlog.ReaderOptions{Name: path, Spec: sessionlog.Spec{ObsDim: m.obsDim, Discrete: m.nA}, OptionalProb: true}
	return m, budget.Input{Path: path, Reader: m.opt}, nil
}

// Check checks a record (the reader checked dimensions and values; at
// unit expert every session must name its expert) and counts its
// transitions in its unit: the first pass of the transitions' Builder,
// which Validate completes.
func (m *Learn) Check(s *sessionlog.Session) error {
	if m.c.Unit == ledger.UnitExpert && !m.c.NonPrivate && s.Expert == "" {
		return fmt.Errorf("session %q names no expert (unit expert samples by expert)", s.Session)
	}
	return m.build.Count(s)
}

// gen returns the generator of purpose: seeded when the run is, else
// secure.
func (m *Learn) gen(purpose string) *rand.Rand {
	if m.c.Seeded {
		return rng.Seeded(m.c.Seed, "dprl offline learn "+purpose)
	}
	return rng.Secure()
}

// Entry states the cost: the plan's DP steps, each a Poisson-subsampled
// Gaussian mechanism with q = Batch/m and multiplier sigma (given, or
// calibrated to Epsilon), at the unit. The plan is drawn here, before the
// charge, from a generator independent of the data. For a selective run
// it first checks, in the ledger, that Stable is a release of the
// dataset the run is charged to.
func (m *Learn) Entry(ix *sessionlog.Index, ds budget.Dataset) (ledger.Entry, error) {
	c := m.c
	if c.selective() {
		sopt := m.opt
		sopt.Name = c.Stable
		six, err := ds.CheckReleased(c.Stable, sopt)
		if err != nil {
			return ledger.Entry{}, fieldNames.Errorf("{Stable}: %w", err)
		}
		m.stable = six
	}
	m.m = c.Experts
	if c.Unit == ledger.UnitTrajectory {
		m.m = ix.Len()
	}
	m.q = float64(c.Batch) / float64(m.m)
	if m.q > 1 {
		return ledger.Entry{}, fieldNames.Errorf("{Batch} %d exceeds the %d trajectories", c.Batch, m.m)
	}
	m.plan = NewPlan(c.Steps, c.P, m.gen("plan"))
	k := m.plan.DPSteps
	if k == 0 {
		return ledger.Entry{}, fieldNames.Errorf("{P} %v: the plan drew no DP step in %d steps: raise {P} or {Steps}", c.P, c.Steps)
	}
	if c.Sigma > 0 {
		m.sigma = c.Sigma
	} else {
		z, err := accountant.Calibrate(accountant.PLD{}, c.Epsilon, c.Delta, m.q, k)
		if err != nil {
			return ledger.Entry{}, fieldNames.Errorf("{Epsilon}: calibrating the noise: %v", err)
		}
		m.sigma = z
	}
	ev := accountant.Event{Q: m.q, Z: m.sigma, Steps: k}
	g, err := (accountant.PLD{}).Epsilon(c.Delta, ev)
	if err != nil {
		return ledger.Entry{}, err
	}
	if g.Epsilon > c.Epsilon {
		return ledger.Entry{}, fieldNames.Errorf("{Sigma} %v: %d DP steps at q %.4g cost epsilon %.4g, above {Epsilon} %v: raise {Sigma} or lower {Steps}", c.Sigma, k, m.q, g.Epsilon, c.Epsilon)
	}
	if r, err := (accountant.RDP{}).Epsilon(c.Delta, ev); err == nil {
		m.rdp = r.Epsilon
	}
	mode := "expert-level DP-SGD (Sharma et al., Preserving Expert-Level Privacy in Offline RL, Algorithm 4)"
	if c.Unit == ledger.UnitTrajectory {
		mode = "trajectory-level DP-SGD"
	}
	if c.selective() {
		mode = fmt.Sprintf("selective DP-SGD after an SVT release (Algorithm 3): %d DP steps of %d drawn with p=%g before the charge", k, c.Steps, c.P)
	}
	return ledger.Entry{Unit: c.Unit, Method: accountant.MethodPLD, Participants: m.m, Events: []accountant.Event{ev},
		Epsilon: g.Epsilon, Delta: c.Delta, Seeded: c.Seeded, Sampler: noise.SamplerGaussianTable,
		Mechanism: fmt.Sprintf("offline learn %s: %s; Poisson q=%.4g = batch %d / m %d, one transition per sampled unit, clip C=%g, noise z=%.4g C, divided by batch",
			c.Algo, mode, m.q, c.Batch, m.m, c.Clip, m.sigma)}, nil
}

// Validate reads the private log's transitions (the Builder's second
// pass: only the transitions are held) and, for a selective run, the
// stable release's; it releases nothing.
func (m *Learn) Validate(ix *sessionlog.Index, _ *ledger.Entry) error {
	if err := ix.Each(m.build.Add); err != nil {
		return err
	}
	d, err := m.build.Data()
	if err != nil {
		return err
	}
	m.private = d
	if m.c.selective() {
		var err error
		if m.public, err = FromIndex(m.stable, m.obsDim, m.nA, nil); err != nil {
			return fieldNames.Errorf("{Stable}: %v", err)
		}
		if m.public.Len() == 0 && m.plan.DPSteps < m.c.Steps {
			return fieldNames.Errorf("{Stable}: no transition to take the plain steps on")
		}
	}
	return nil
}

// Compute trains the learner, evaluates it on the simulator and writes the
// policy.
func (m *Learn) Compute(ctx context.Context, _ *sessionlog.Index, ch *budget.Charge) (*Result, error) {
	c := m.c
	res := &Result{Algo: c.Algo, Env: c.Env, Private: !c.NonPrivate, Batch: c.Batch, LR: c.Adam.LR, Steps: c.Steps, Seeded: c.Seeded}
	tc := TrainConfig{EvalEvery: c.EvalEvery, EvalEpisodes: c.EvalEpisodes}
	info, _ := sims.Lookup(c.Env)
	tc.Env = info.New
	var public, private *Data
	var g *noise.Gaussian
	switch {
	case c.NonPrivate:
		res.Mode, res.Warning = "non-private", NotPrivate
		tc.Plan = Plan{Private: make([]bool, c.Steps)}
		public = m.private
	default:
		res.Mode = "dp-sgd"
		if c.selective() {
			res.Mode, res.P = "selective", c.P
		}
		e := ch.Entry
		res.Unit, res.Epsilon, res.Delta, res.Accountant, res.LedgerSeq = string(e.Unit), e.Epsilon, e.Delta, string(e.Method), e.Seq
		res.Sigma, res.Q, res.M, res.Clip, res.DPSteps, res.RDPEpsilon, res.DatasetSpent = m.sigma, m.q, m.m, c.Clip, m.plan.DPSteps, m.rdp, ch.Spent
		tc.Plan, tc.DP = m.plan, DP{Clip: c.Clip, Sigma: m.sigma, SampleRate: m.q}
		public, private = m.public, m.private
		g = noise.NewGaussian(m.gen("noise"))
	}
	l, err := New(c.Config, m.obsDim, m.nA, m.gen("init"))
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	err = Train(ctx, l, public, private, tc, m.gen("batches"), g, func(p Progress) {
		if p.Evaluated {
			res.Curve = append(res.Curve, CurvePoint{Step: p.Step, Return: p.Return})
		}
		if c.Progress != nil {
			c.Progress(p.Step, p.Steps)
		}
	})
	if err != nil {
		return nil, err
	}
	res.Seconds = time.Since(t0).Seconds()
	res.Return, res.ReturnStd = Evaluate(l, info.New(), c.EvalEpisodes, m.gen("eval"))
	res.Curve = append(res.Curve, CurvePoint{Step: c.Steps, Return: res.Return})
	res.LastReturn = lastReturn(res.Curve, c.Steps)
	if c.Out != "" {
		snap := l.Snapshot()
		snap.Env = c.Env
		if res.Private {
			snap.SetProvenance(ledger.ProvenanceOf(ch.Entry))
		} else {
			snap.SetProvenance(ledger.Provenance{})
		}
		b, err := snap.Marshal()
		if err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(c.Out, b, 0o644); err != nil {
			return nil, fieldNames.Errorf("{Out}: %v", err)
		}
		res.Out = filepath.Clean(c.Out)
	}
	return res, nil
}

// lastWindow is the span of steps the paper's metric averages over
// (App. B.3): the last 10,000.
const lastWindow = 10000

// lastReturn is the mean return of the curve's points in the last
// lastWindow of steps steps.
func lastReturn(curve []CurvePoint, steps int) float64 {
	var s float64
	n := 0
	for _, p := range curve {
		if p.Step > steps-lastWindow {
			s += p.Return
			n++
		}
	}
	return s / float64(n)
}

var _ budget.Mechanism[*Result] = (*Learn)(nil)
