package main

import (
	"math"

	"dprl/cmd/dprl/cliflags"
	"dprl/internal/progress"
	"dprl/offline/budget"
	"dprl/offline/evaluate"

	"github.com/spf13/cobra"
)

// offlineGTD2Flags holds the flags of "dprl offline gtd2": most are the
// fields of the evaluation's evaluate.Config.
type offlineGTD2Flags struct {
	cfg    evaluate.Config
	fl     *cliflags.Flags
	plot   string
	asJSON bool
	budget offlineBudget
}

func newOfflineGTD2Cmd(a *app) *cobra.Command {
	var f offlineGTD2Flags
	e := &f.cfg
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
            multiplier for which the PLD accountant of the subsampled Gaussian
            (rate q = batch/n, T steps) gives (--epsilon, --delta); the RDP
            accountant's epsilon is printed beside it as a cross-check. On-
            and off-policy.
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
records belong to in --ledger, after every record was validated and the run
checked against the dataset's cap, and before the estimate is computed:
malformed input and refused runs cost nothing; the printed guarantee is read
from the entry as written. The log is streamed, never held (44 bytes per
record; gpope costs iters x n Bernoulli draws). The README's "The dataset
budget" and "Memory" sections give the details and measurements.

Randomness: noise and sampling come from a generator keyed from the operating
system's secure source; --seed makes a run repeatable (research only) and the
ledger records that it was seeded.`,
		Example: `  dprl sims generate --env chain --behavior random --episodes 1000 --out chain.jsonl --seed 1
  dprl offline gtd2 --data chain.jsonl --env chain --target uniform --features tabular \
      --epsilon 1 --delta 1e-5 --iters 20000 --step-size 0.5 --plot mspbe.png
  dprl offline gtd2 --data chain.jsonl --env chain --target uniform --features tabular --method dp-lsw --epsilon 1 --delta 1e-5
  dprl offline gtd2 --data mc.jsonl --env mountaincar --target uniform --features fourier:5 --method wis-lstd --non-private --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runOfflineGTD2(a, cmd, &f) },
	}
	fl := cliflags.New(c.Flags(), e)
	f.fl = fl
	fl.Name("Curve", "plot")
	fl.StringVar(&e.Data, "data", "", "session log (dprl.sessions.v1), the private dataset")
	fl.StringVar(&e.Target, "target", "", "target policy: uniform, snapshot:FILE, greedy[:FILE], softmax[:FILE]:TEMP, epsilon-greedy[:FILE]:EPS")
	fl.StringVar(&e.Features, "features", "", "features: tabular, fourier:K or raw")
	fl.StringVar((*string)(&e.Method), "method", string(evaluate.GPOPE), "gpope, dp-lsw, lstd or wis-lstd")
	fl.Float64Var(&e.Epsilon, "epsilon", 0, "privacy budget epsilon of this run (gpope, dp-lsw)")
	fl.Float64Var(&e.Delta, "delta", 0, "privacy parameter delta of this run (gpope, dp-lsw)")
	fl.IntVar(&e.Iters, "iters", 0, "gpope: number of noisy gradient steps T")
	fl.Float64Var(&e.StepSize, "step-size", 0.5, "gpope: step size alpha (alpha_0 with --diminishing)")
	fl.BoolVar(&e.Diminishing, "diminishing", false, "gpope: step size alpha_0 / sqrt(t)")
	fl.Float64Var(&e.Clip, "clip", 1, "gpope: L2 clip C of one trajectory's primal-dual gradient")
	fl.Float64Var(&e.Batch, "batch", 1, "gpope: expected trajectories per step (Poisson sampling rate batch/n; the paper uses 1)")
	fl.IntVar(&e.PublicN, "n", 0, "gpope: the public number of trajectories the sampling rate batch/n is computed from (default: the log's record count, which you then vouch is public)")
	fl.Float64Var(&e.Gamma, "gamma", 0.9, "discount factor, 0 <= gamma < 1")
	fl.Float64Var(&e.Ridge, "ridge", 1e-6, "lstd, wis-lstd: ridge added to A (unvisited tabular states make A singular)")
	fl.StringVar(&e.Env, "env", "", "the simulator the data comes from (public knowledge): start distribution, bounds, built-in targets, exact chain MSPBE")
	fl.IntVar(&e.Actions, "actions", 0, "the public number of discrete actions: required for a private run without --env (a record with a larger action is refused); without it a non-private run learns it from the log")
	fl.StringVar(&e.Behavior, "behavior", "", "with --env chain: the behaviour policy of the data, for the exact MSPBE of off-policy data")
	fl.StringVar(&e.EvalData, "eval-data", "", "a public session log on which to compute the empirical MSPBE instead of the private data")
	fl.Uint64Var(&e.Seed, "seed", 0, "seed the noise and sampling (repeatable research runs; recorded in the ledger)")
	fl.BoolVar(&e.NonPrivate, "non-private", false, "allow output NOT covered by any DP guarantee: the lstd and wis-lstd methods, and with gpope or dp-lsw a section of statistics of the private log")
	fl.Float64SliceVar(&e.Low, "low", nil, "fourier and grid box lower bounds (default: the environment's observation box)")
	fl.Float64SliceVar(&e.High, "high", nil, "fourier and grid box upper bounds")
	fl.IntVar(&e.Grid, "lsw-grid", 10, "dp-lsw with non-tabular features: cells per observation component of the public grid")
	fl.Float64Var(&e.RewardLow, "reward-low", math.NaN(), "dp-lsw: public lower reward bound (default for chain 0, mountaincar -1)")
	fl.Float64Var(&e.RewardHigh, "reward-high", math.NaN(), "dp-lsw: public upper reward bound (default for chain 1, mountaincar 0)")
	fl.StringVar(&f.plot, "plot", "", "gpope: write the MSPBE vs iteration curve as PNG to this file (public moments: --env chain or --eval-data; else only with --non-private)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	f.budget.register(c.Flags())
	return c
}

func runOfflineGTD2(a *app, cmd *cobra.Command, f *offlineGTD2Flags) error {
	fl, ec := cmd.Flags(), f.cfg
	ec.Curve, ec.Seeded = f.plot != "", fl.Changed("seed")
	ec.EpsilonGiven, ec.DeltaGiven, ec.PublicNGiven, ec.ActionsGiven = fl.Changed("epsilon"), fl.Changed("delta"), fl.Changed("n"), fl.Changed("actions")
	prog := a.task("gpope")
	defer prog.Finish()
	ec.Progress = func(t int) { prog.Update(progress.Report{Done: int64(t), Total: int64(ec.Iters), Unit: "steps"}) }
	m, opt, err := evaluate.New(ec)
	if err != nil {
		return fieldUsage("", f.fl, err)
	}
	defer m.Close()
	return runOffline(a, cmd, offlineRun[*evaluate.Result]{budget: &f.budget, private: ec.Private(),
		in: budget.Input{Path: ec.Data, Reader: opt}, m: m, asJSON: f.asJSON, flags: f.fl,
		plot: f.plot, draw: func(out *evaluate.Result, p string) error { out.Plot = p; return out.WritePlot(p, ec.Data) }})
}
