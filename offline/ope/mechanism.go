package ope

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"dprl/internal/fielderr"
	"dprl/internal/rng"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/offline/budget"
	"dprl/offline/policies"
	"dprl/sessionlog"
)

// Config is one audit of a session log of one-step decisions ("dprl
// offline ope"): a target policy's value with its interval, private
// (charged to the log's dataset) or, with NonPrivate, the full
// non-private report.
type Config struct {
	// Data is the session log (dprl.sessions.v1) of one-step sessions with
	// logged probabilities: the private dataset.
	Data string `flag:"data" usage:"session log (dprl.sessions.v1) of one-step decisions with logged probabilities, the private dataset (a DSJSON log: dprl sessions import-dsjson first)"`
	// Target is the target policy (policies.Parse: uniform, snapshot:FILE,
	// greedy:FILE, softmax:FILE:TEMP, epsilon-greedy:FILE:EPS).
	Target string `flag:"target" usage:"target policy: uniform, snapshot:FILE, greedy:FILE, softmax:FILE:TEMP, epsilon-greedy:FILE:EPS"`
	// Actions is the public number of actions; required for a private run
	// (a decision with a larger action is refused). Without it a
	// non-private run takes the target's.
	Actions int `flag:"actions" usage:"the public number of actions (required for a private audit)"`
	// WeightBound is the public bound c on the importance weights pi / p
	// (for example max pi / the logging design's smallest probability);
	// required for a private run, whose weights are clipped to it.
	WeightBound float64 `flag:"weight-bound" usage:"public bound c on the importance weights pi/p, e.g. 1 / the logger's smallest probability (required for a private audit; weights above it are clipped)"`
	// Horizon is the public bound on an episode's steps: 1 (the default)
	// for a log of one-step decisions; above 1 the audit reads whole
	// episodes, each weighted by the product of its steps' ratios and
	// valued by its discounted return (EL-episode), and refuses an
	// episode of more steps.
	Horizon int `flag:"horizon" usage:"public bound on an episode's steps: 1 for one-step decisions; above 1 whole episodes are audited (weights: products of the steps' ratios; outcome: the discounted return)" default:"1"`
	// Gamma discounts an episode's rewards (Horizon above 1).
	Gamma float64 `flag:"gamma" usage:"discount of an episode's rewards, 0 <= gamma <= 1 (with --horizon above 1)" default:"1"`
	// RewardLow and RewardHigh are the public reward range per step (both
	// 0: [0, 1]); an episode's return lies in it times sum_{t < Horizon}
	// gamma^t.
	RewardLow  float64 `flag:"reward-low" usage:"public lower end of the reward range"`
	RewardHigh float64 `flag:"reward-high" usage:"public upper end of the reward range" default:"1"`
	// Epsilon and Delta are the private run's budget; 0 epsilon: no private
	// estimate (then NonPrivate is required).
	Epsilon float64 `flag:"epsilon" usage:"epsilon of the private audit, per decision"`
	Delta   float64 `flag:"delta" usage:"delta of the private audit"`
	// Level is the intervals' confidence level (0: 0.95).
	Level float64 `flag:"level" usage:"confidence level of the intervals" default:"0.95"`
	// Bootstrap is the non-private report's bootstrap resamples (0: 1000).
	Bootstrap int `flag:"bootstrap" usage:"percentile-bootstrap resamples of the non-private report" default:"1000"`
	// Seed seeds the noise, the folds and the bootstrap when Seeded (else
	// the secure generator).
	Seed   uint64 `flag:"seed" usage:"seed the noise, the folds and the bootstrap (repeatable research runs; recorded in the ledger)"`
	Seeded bool
	// NonPrivate adds the non-private report (every estimator, interval,
	// the lower bound and the weight diagnostics of the raw log), covered
	// by no guarantee and labelled so.
	NonPrivate bool `flag:"non-private" usage:"add the report NOT covered by any DP guarantee: every estimator and interval, the lower bound and the weight diagnostics of the raw log"`
}

// fieldNames are the Config fields an error may name.
var fieldNames = fielderr.Fields{"Data", "Target", "Actions", "WeightBound", "Horizon", "Gamma", "RewardLow", "RewardHigh", "Epsilon", "Delta", "Level", "Bootstrap", "NonPrivate"}

func configErrorf(format string, args ...any) error { return fieldNames.Errorf(format, args...) }

// Private reports whether the run releases a private estimate.
func (c *Config) Private() bool { return c.Epsilon > 0 }

// validate checks the configuration and fills its defaults.
func (c *Config) validate() error {
	if c.RewardLow == 0 && c.RewardHigh == 0 {
		c.RewardHigh = 1
	}
	if c.Level == 0 {
		c.Level = 0.95
	}
	if c.Horizon == 0 && c.Gamma == 0 { // a Config built in code
		c.Horizon, c.Gamma = 1, 1
	}
	switch {
	case c.Data == "":
		return configErrorf("{Data} is required")
	case c.Target == "":
		return configErrorf("{Target} is required")
	case !c.Private() && !c.NonPrivate:
		return configErrorf("give {Epsilon} (and {Delta}) for a private audit, or {NonPrivate} for the non-private report")
	case c.Epsilon < 0 || math.IsNaN(c.Epsilon) || math.IsInf(c.Epsilon, 0):
		return configErrorf("{Epsilon} %v: want > 0", c.Epsilon)
	case c.Private() && !(c.Delta > 0 && c.Delta < 1):
		return configErrorf("{Delta} %v: want in (0, 1)", c.Delta)
	case c.Private() && c.Actions < 1:
		return configErrorf("{Actions} is required for a private audit: the public number of actions")
	case !(c.WeightBound >= 0) || math.IsInf(c.WeightBound, 1):
		return configErrorf("{WeightBound} %v: want finite and >= 0", c.WeightBound)
	case c.Private() && !(c.WeightBound > 1):
		return configErrorf("{WeightBound} %v: a private audit needs the public bound on the importance weights, above 1 (max pi / the logging design's smallest probability)", c.WeightBound)
	case !finite(c.RewardLow) || !finite(c.RewardHigh) || !(c.RewardHigh > c.RewardLow):
		return configErrorf("{RewardLow} %v, {RewardHigh} %v: want finite with low < high", c.RewardLow, c.RewardHigh)
	case !(c.Level > 0 && c.Level < 1):
		return configErrorf("{Level} %v: want in (0, 1)", c.Level)
	case c.Horizon < 1 || c.Horizon > 1_000_000:
		return configErrorf("{Horizon} %d: want 1 to 1,000,000 steps", c.Horizon)
	case !(c.Gamma >= 0 && c.Gamma <= 1):
		return configErrorf("{Gamma} %v: want in [0, 1]", c.Gamma)
	}
	return nil
}

// Result is an audit's output. Outside NonPrivate, everything in it is
// covered by the printed guarantee: the estimate and interval are
// post-processing of the noisy moments and of public inputs.
type Result struct {
	Target string  `json:"target"`
	Level  float64 `json:"level"`
	// Per is what a value is per: "decision", or "episode" (a return).
	Per string `json:"per"`
	// Private is the private estimate (nil without Epsilon).
	Private *PrivateResult `json:"private,omitempty"`
	// NonPrivate is the non-private report, present only with NonPrivate.
	NonPrivate *NonPrivateSection `json:"non_private,omitempty"`
}

// PrivateResult is the private estimate and what covers it.
type PrivateResult struct {
	Estimate Estimate `json:"estimate"`
	// LowerEnd is the interval's lower end: with probability at least
	// 1 - (1 - Level)/2 the target's value is at least this.
	LowerEnd        float64 `json:"lower_end"`
	Epsilon         float64 `json:"epsilon"`
	Delta           float64 `json:"delta"`
	Unit            string  `json:"unit"`
	Mechanism       string  `json:"mechanism"`
	NoiseMultiplier float64 `json:"noise_multiplier"`
	WeightBound     float64 `json:"weight_bound"`
	// RewardLow and RewardHigh are the public range of a record's
	// outcome: the reward range, or for whole episodes the return range.
	RewardLow  float64 `json:"reward_low"`
	RewardHigh float64 `json:"reward_high"`
	LedgerSeq  uint64  `json:"ledger_seq"`
	// DatasetSpent is the dataset's composed epsilon with this run.
	DatasetSpent float64 `json:"dataset_spent"`
}

// NotCovered labels the non-private section.
const NotCovered = "NOT differentially private: computed from the raw log, covered by no guarantee"

// NonPrivateSection is the labelled non-private report.
type NonPrivateSection struct {
	Warning string  `json:"warning"`
	Report  *Report `json:"report,omitempty"`
	// Episodes are the whole-episode estimates (Horizon above 1):
	// EL-episode, PDIS, PDWIS, DR-episode and WDR-episode (Trajectories;
	// the doubly robust pair's model is fitted on the steps' observations).
	Episodes []Estimate `json:"episodes,omitempty"`
	// EpisodeNotes say which episode estimators were left out and why.
	EpisodeNotes []string `json:"episode_notes,omitempty"`
}

// WriteText prints the result: the private estimate's lower end first
// (the "ship it?" number), its interval and guarantee, then the labelled
// non-private report.
func (r *Result) WriteText(w io.Writer) error {
	pr := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	pr("target %s\n", r.Target)
	if p := r.Private; p != nil {
		iv := p.Estimate.Intervals[0]
		pr("lower end %.4f: with probability >= %.3g the target earns at least this per %s\n", p.LowerEnd, 1-(1-r.Level)/2, r.Per)
		pr("%s %.4f  %s %.3g [%.4f, %.4f]\n", p.Estimate.Estimator, p.Estimate.Value, iv.Method, iv.Level, iv.Lo, iv.Hi)
		if iv.Note != "" {
			pr("  (%s)\n", iv.Note)
		}
		pr("private: (epsilon %s, delta %.3g) at the %s level; %s; ledger entry %d, dataset spent %s\n",
			accountant.FormatEpsilon(p.Epsilon), p.Delta, p.Unit, p.Mechanism, p.LedgerSeq, accountant.FormatEpsilon(p.DatasetSpent))
	}
	if np := r.NonPrivate; np != nil {
		pr("--- %s ---\n", np.Warning)
		ests := np.Episodes
		if rep := np.Report; rep != nil {
			pr("lower bound (%s, %.3g): %.4f\n", rep.LowerBound.Method, rep.LowerBound.Level, rep.LowerBound.Value)
			ests = rep.Estimates
		}
		for _, e := range ests {
			pr("%-11s %.4f", e.Estimator, e.Value)
			for _, iv := range e.Intervals {
				pr("  %s [%.4f, %.4f]", iv.Method, iv.Lo, iv.Hi)
			}
			pr("\n")
			for _, iv := range e.Intervals {
				if iv.Note != "" {
					pr("            %s: %s\n", iv.Method, iv.Note)
				}
			}
		}
		for _, n := range np.EpisodeNotes {
			pr("(%s)\n", n)
		}
		if rep := np.Report; rep != nil {
			pr("decisions %d, effective sample size %.0f, mean weight %.4f, max weight %.4g\n", rep.N, rep.ESS, rep.MeanWeight, rep.MaxWeight)
		}
	}
	return nil
}

// Mechanism is an audit run as budget.Run sees it.
type Mechanism struct {
	c      Config
	target policies.Policy
	probs  []float64
	out    *Result
	z      float64
}

// New validates cfg and builds the run's mechanism. The returned
// ReaderOptions are those the log must be read with.
func New(cfg Config) (*Mechanism, sessionlog.ReaderOptions, error) {
	if err := cfg.validate(); err != nil {
		return nil, sessionlog.ReaderOptions{}, err
	}
	t, err := policies.Parse(cfg.Target, policies.Options{NumActions: cfg.Actions})
	if err != nil {
		return nil, sessionlog.ReaderOptions{}, configErrorf("{Target}: %w", err)
	}
	if cfg.Actions == 0 {
		cfg.Actions = t.NumActions()
	}
	per := "decision"
	if cfg.Horizon > 1 {
		per = "episode"
	}
	m := &Mechanism{c: cfg, target: t, probs: make([]float64, cfg.Actions), out: &Result{Target: cfg.Target, Level: cfg.Level, Per: per}}
	return m, sessionlog.ReaderOptions{Name: cfg.Data}, nil
}

// Check checks one record: one step, a discrete action below Actions, a
// logged probability, a reward in the public range, an observation the
// target accepts. It computes nothing that is released.
func (m *Mechanism) Check(s *sessionlog.Session) error {
	_, _, err := m.decision(s)
	return err
}

// outcomeRange is the public range of a record's outcome: the reward per
// step times sum_{t < Horizon} gamma^t (the reward itself for one-step
// decisions).
func (c *Config) outcomeRange() (lo, hi float64) {
	d, g := 0.0, 1.0
	for range c.Horizon {
		d += g
		g *= c.Gamma
	}
	return c.RewardLow * d, c.RewardHigh * d
}

// decision returns the record's weight, the product over its steps of
// pi(a|x)/p, and its outcome, the discounted return (for a one-step
// decision: pi(a|x)/p and the reward).
func (m *Mechanism) decision(s *sessionlog.Session) (w, r float64, err error) {
	if len(s.Steps) > m.c.Horizon {
		if m.c.Horizon == 1 {
			return 0, 0, fmt.Errorf("%d steps: the audit reads one-step decisions (a contextual bandit's log) unless --horizon bounds an episode's steps", len(s.Steps))
		}
		return 0, 0, fmt.Errorf("%d steps, more than the public horizon %d", len(s.Steps), m.c.Horizon)
	}
	w, disc := 1.0, 1.0
	for t := range s.Steps {
		st := &s.Steps[t]
		at := "" // a step's place, named in an episode's errors
		if len(s.Steps) > 1 {
			at = fmt.Sprintf("step %d: ", t)
		}
		switch {
		case st.Action.Vec != nil:
			return 0, 0, fmt.Errorf("%sa continuous action: the audit reads discrete decisions", at)
		case !st.HasProb():
			return 0, 0, fmt.Errorf("%sno logged probability (prob or logp): importance weights need it", at)
		case st.Action.Index < 0 || st.Action.Index >= m.c.Actions:
			return 0, 0, fmt.Errorf("%saction %d outside the %d public actions", at, st.Action.Index, m.c.Actions)
		case !(st.Reward >= m.c.RewardLow && st.Reward <= m.c.RewardHigh):
			return 0, 0, fmt.Errorf("%sreward %v outside the public range [%v, %v]", at, st.Reward, m.c.RewardLow, m.c.RewardHigh)
		}
		p := math.Exp(st.LogP)
		if !(p > 0 && p <= 1) {
			return 0, 0, fmt.Errorf("%slogged probability %v: want in (0, 1]", at, p)
		}
		if err := m.target.Probs(m.probs, st.Obs); err != nil {
			return 0, 0, fmt.Errorf("%starget: %w", at, err)
		}
		w *= m.probs[st.Action.Index] / p
		r += disc * st.Reward
		disc *= m.c.Gamma
	}
	return w, r, nil
}

// Entry is the run's cost: one Gaussian mechanism on the clipped
// moments, calibrated by the analytic Gaussian accountant (exact for one
// Gaussian mechanism; Balle & Wang 2018, "Improving the Gaussian
// Mechanism for Differential Privacy", Theorem 8) to (Epsilon, Delta) per
// decision. It depends on the flags only.
func (m *Mechanism) Entry(ix *sessionlog.Index, _ budget.Dataset) (ledger.Entry, error) {
	z, err := accountant.Calibrate(accountant.Analytic{}, m.c.Epsilon, m.c.Delta, 1, 1)
	if err != nil {
		return ledger.Entry{}, fmt.Errorf("ope: calibrating the noise: %w", err)
	}
	m.z = z
	ev := accountant.Gaussian(z)
	g, err := accountant.Analytic{}.Epsilon(m.c.Delta, ev)
	if err != nil {
		return ledger.Entry{}, err
	}
	return ledger.Entry{Unit: ledger.UnitTrajectory, Method: accountant.MethodAnalytic, Participants: ix.Len(),
		Mechanism: m.mechanismText(), Events: []accountant.Event{ev}, Epsilon: g.Epsilon, Delta: m.c.Delta, Seeded: m.c.Seeded,
		Sampler: noise.SamplerGaussianTable}, nil
}

func (m *Mechanism) mechanismText() string {
	lo, hi := m.c.outcomeRange()
	what := "rewards"
	if m.c.Horizon > 1 {
		what = fmt.Sprintf("episode returns (horizon %d, gamma %g)", m.c.Horizon, m.c.Gamma)
	}
	return fmt.Sprintf("ope: six clipped moments of the importance weights (c=%g) and %s ([%g, %g]) + Gaussian noise (L2 sensitivity sqrt 6, z=%.4g); the empirical-likelihood interval is post-processing", m.c.WeightBound, what, lo, hi, m.z)
}

// Validate has nothing to check beyond the scan.
func (m *Mechanism) Validate(*sessionlog.Index, *ledger.Entry) error { return nil }

// newRand is the run's generator: ChaCha8 keyed from the seed, else the
// secure generator.
func (m *Mechanism) newRand() *rand.Rand {
	if !m.c.Seeded {
		return rng.Secure()
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:8], m.c.Seed)
	copy(key[8:], "dprl offline ope")
	return rand.New(rand.NewChaCha8(key))
}

// Compute reads the log once more: the private estimate from the noisy
// clipped moments, and with NonPrivate the full report.
func (m *Mechanism) Compute(ctx context.Context, ix *sessionlog.Index, ch *budget.Charge) (*Result, error) {
	rnd := m.newRand()
	var l *Log
	var eps []Trajectory // whole episodes (Horizon above 1)
	if m.c.NonPrivate && m.c.Horizon == 1 {
		l = &Log{Actions: m.c.Actions, Policy: func(dst, x []float64) { _ = m.target.Probs(dst, x) }}
	}
	p := &prepared{}
	err := ix.Each(func(_ int, s *sessionlog.Session) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		w, r, err := m.decision(s)
		if err != nil {
			return err
		}
		p.w, p.r = append(p.w, w), append(p.r, r)
		switch {
		case l != nil:
			st := &s.Steps[0]
			l.Decisions = append(l.Decisions, Decision{X: st.Obs, Action: st.Action.Index, Reward: st.Reward, Prob: math.Exp(st.LogP)})
		case m.c.NonPrivate:
			tr := make(Trajectory, len(s.Steps))
			for t := range s.Steps {
				st := &s.Steps[t]
				_ = m.target.Probs(m.probs, st.Obs) // checked by decision
				tr[t] = Step{Reward: st.Reward, Prob: math.Exp(st.LogP), Target: m.probs[st.Action.Index],
					Action: st.Action.Index, Obs: st.Obs, Targets: slices.Clone(m.probs)}
			}
			eps = append(eps, tr)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	p.n = len(p.w)
	lo, hi := m.c.outcomeRange()
	if ch.Charged() {
		e := ch.Entry
		if len(e.Events) != 1 {
			return nil, fmt.Errorf("ledger entry %d: %d events, want one Gaussian mechanism", e.Seq, len(e.Events))
		}
		z := e.Events[0].Z
		sigma := z * PrivateSensitivity
		nm := NoisyMoments(ClippedMoments(p, m.c.WeightBound, lo, hi), z, noise.NewGaussian(rnd))
		est, err := PrivateEL(nm, noise.Std(sigma), m.c.WeightBound, lo, hi, m.c.Level)
		if err != nil {
			return nil, err
		}
		unit := " (one decision)"
		if m.c.Horizon > 1 {
			unit = " (one episode)"
		}
		m.out.Private = &PrivateResult{Estimate: est, LowerEnd: est.Intervals[0].Lo, Epsilon: e.Epsilon, Delta: e.Delta,
			Unit: string(e.Unit) + unit, Mechanism: e.Mechanism, NoiseMultiplier: z, WeightBound: m.c.WeightBound,
			RewardLow: lo, RewardHigh: hi, LedgerSeq: e.Seq, DatasetSpent: ch.Spent}
	}
	o := Options{Level: m.c.Level, RewardMin: m.c.RewardLow, RewardMax: m.c.RewardHigh, WeightBound: m.c.WeightBound, Bootstrap: m.c.Bootstrap, Rand: rnd}
	switch {
	case l != nil:
		rep, err := Evaluate(l, o)
		if err != nil {
			return nil, err
		}
		m.out.NonPrivate = &NonPrivateSection{Warning: NotCovered, Report: rep}
	case m.c.NonPrivate:
		tr, err := Trajectories(eps, m.c.Gamma, o)
		if err != nil {
			return nil, err
		}
		m.out.NonPrivate = &NonPrivateSection{Warning: NotCovered, Episodes: tr.Estimates, EpisodeNotes: tr.Notes}
	}
	return m.out, nil
}
