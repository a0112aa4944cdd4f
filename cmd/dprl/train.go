package main

import (
	"bytes"
	"context"
	"dprl/experiment"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"dprl/internal/progress"
	"dprl/policy"
	"dprl/profile"
	"dprl/sims"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// trainFlags are the flags of dprl train.
type trainFlags struct {
	env          string
	algo         string
	z            float64
	epsilon      float64
	sweepZ       []float64
	k            int
	clip         float64
	users        int
	delta        float64
	seed         uint64
	evalEpisodes int
	workers      int
	lr           float64
	ent          float64
	hidden       []int
	advNorm      bool
	share        float64
	epochs       int
	lambda       float64
	anneal       bool
	serverLR     float64
	noise        string
	horizon      string
	average      float64
	fresh        bool
	valueScale   float64
	obsScale     string
	momentReset  string
	json         bool
	plot         string
	diag         string
	// dppg-loglinear
	epsilons  []float64
	regions   []string
	episodes  int
	seeds     int
	clipAtLR0 bool
	initRight float64
	eta       float64
	baseLR    float64
	alpha     float64
	ridge     float64
	fisherEx  bool
}

// Defaults of dprl train for the control tasks (see policy/REPRODUCE.md).
const (
	trainDefaultUsers = 10000
	trainDefaultZ     = 1.0
	trainDefaultDelta = 1e-5
)

// trainResult is the output of dprl train.
type trainResult struct {
	Env          string  `json:"env"`
	Method       string  `json:"method"`
	EvalMean     float64 `json:"eval_mean"`
	EvalStd      float64 `json:"eval_std"`
	EvalEpisodes int     `json:"eval_episodes"`
	// Epsilon is per episode (the privacy unit, episodeAccount); the
	// epsilon of one simulated user (a segment) is epsilon_per_segment.
	Epsilon    float64 `json:"epsilon"`
	Delta      float64 `json:"delta"`
	Accountant string  `json:"accountant,omitempty"`
	// The episode structure behind Epsilon (nil for the non-private ppo).
	*episodeAccount
	Z    float64 `json:"z"`
	Clip float64 `json:"clip"`
	K    int     `json:"k"`
	// Noise and Horizon are --noise and the horizon in releases (both
	// omitted for independent noise, Algorithm 2).
	Noise          string  `json:"noise,omitempty"`
	Horizon        int     `json:"horizon,omitempty"`
	Users          int     `json:"users"`
	Updates        int     `json:"updates"`
	Steps          int64   `json:"steps"`
	Seconds        float64 `json:"seconds"`
	StepsPerSecond float64 `json:"steps_per_second"`
	Seed           uint64  `json:"seed"`
	Seeded         bool    `json:"seeded"`
	// Skipped counts failed local updates (zero vectors in their batch
	// place): a statistic of the simulated users, simulation only.
	Skipped int `json:"sim_skipped_local_updates"`
	// Average is --average; with it, EvalMean/EvalStd evaluate the averaged
	// parameters and LastMean/LastStd the last iterate.
	Average  float64             `json:"average,omitempty"`
	LastMean *float64            `json:"last_iterate_mean,omitempty"`
	LastStd  *float64            `json:"last_iterate_std,omitempty"`
	Curve    []policy.CurvePoint `json:"curve"`
}

func newTrainCmd(a *app) *cobra.Command {
	c, _ := newTrainCommand(a)
	return c
}

// newTrainCommand returns dprl train and the flags it parses into.
func newTrainCommand(a *app) (*cobra.Command, *trainFlags) {
	f := new(trainFlags)
	c := &cobra.Command{
		Use:   "train --env E --algo dppg|ppo|dppg-loglinear|dpsgd-reinforce|dpsgd-dqn [flags]",
		Short: "Train a policy in process against simulated users (DPPG or the PPO baseline)",
		Long: `Runs DPPG (Rio et al., Algorithm 2) in process: each simulated user runs the
current policy for at most T = 64 steps of one episode (user slot i of a batch
continues the episode slot i's previous user left running, as a vectorised PPO
does; --fresh-episodes starts every user on a new one), computes its PPO local
update clipped to norm S (policy and critic share S), and every K users the
average is released with Gaussian noise N(0, (zS/K)^2 I). Each user takes
part in one update only, so one user (a segment of at most T steps) is
protected by one Gaussian mechanism with multiplier z, whatever the number of
users.

The privacy unit is the episode (the trajectory). With continuing episodes an
episode of at most L steps (the environment's public step limit; training
ends every episode there) is split over up to m = ceil(L/T) users of slot i in
consecutive releases, one clipped update in each, whose contributions can
point the same way: with independent noise the episode gets the m-fold
composition of the Gaussian mechanism of multiplier z; with --noise tree or
sqrt the Gaussian mechanism of multiplier z/rho, rho the norm of the sum of
m consecutive columns of the noise's encoder matrix over one column's
(CartPole's defaults: L = 500, m = 8, rho = 6.97 with sqrt, so epsilon 53.2
per episode at z = 1 and delta 1e-5 against 4.377 per segment; 55.7 with
the tree, 15.5 with independent noise). The per-episode epsilon is printed
as the headline (exact, analytic Gaussian mechanism) and the per-segment
epsilon beside it, labelled; with --fresh-episodes every user is one episode
truncated after T steps and the two are equal. --epsilon E sets z from a
per-episode target instead: the smallest z whose per-episode epsilon at
--delta is at most E. --algo ppo is the non-private baseline.

--noise tree|sqrt replaces the independent noise of each release by
correlated noise: the releases are differences of private estimates of the
prefix sums of the averaged updates, so the parameters carry a bounded
amount of noise instead of one draw per release. tree is the binary
mechanism of DP-FTRL; sqrt the square-root factorization of the prefix-sum
matrix (less noise than the tree, both in the parameters and per release).
Each fresh draw is scaled so that a user's update is still exactly the
Gaussian mechanism of multiplier z: the epsilon per segment is unchanged,
the epsilon per episode is not (above). --horizon N
restarts the correlation every N releases (default run: one horizon of
ceil(users/K) releases). CartPole's default is K = 8 with --noise sqrt and
--server-lr 0.5 (the agent, which cannot correlate noise, keeps K = 32).

The final policy is evaluated on --eval-episodes episodes with actions sampled
from the policy (the paper's protocol). --seeds N repeats the run for seeds
--seed, --seed+1, ..., each identical to the single run with that seed, and
reports the mean and std over seeds (--plot: the mean learning curve).
--sweep-z Z1,Z2,... trains at each noise multiplier over the same seeds and
reports eval return against epsilon (--plot: the privacy-utility curve). Progress goes to stderr; the result to
stdout (text or --json); --plot writes the learning curve as PNG.

Defaults depend on --env (flags override them; policy/REPRODUCE.md has the
measurements). Control tasks: Table 3 except 16x16 networks, K = 32
(cartpole: K = 8 with --noise sqrt --server-lr 0.5),
S = 0.2, E = 3, entropy 0.01, advantages not standardised, the local Adam
state reset to m = 0, v = g~^2 each iteration (--moment-reset second; the
paper's m = -g~ makes a converged policy drift); cartpole also
scales the pole angle by 10 and the critic's target by 1/10 (--obs-scale
1,1,10,1 --value-scale 10) and uses GAE lambda 0.98 (--gae-lambda 0.98),
acrobot scales the critic's target (--value-scale 10).
--hidden 64,64 --K 8 --clip 0.05 --epochs 8 --ent-coef 0.36 --adv-norm
--value-scale 1 --obs-scale none --moment-reset paper --gae-lambda 0.85 (cartpole
also --noise independent --server-lr 1) restores Table 3.
Dosing: Table 3's dosing column with z = 0.1, observations scaled by public
constants (glucose /100, meals /1000, ...) and --value-scale 10.

The noise comes from a seeded generator: this is a simulation, not a
production release. --diag writes statistics of the simulated users' raw
data and the exact noise: simulation only, not covered by any epsilon
printed (each record says so).`,
		Example: `  dprl train --env cartpole --algo dppg
  dprl train --env cartpole --algo dppg --z 3 --seed 7 --json
  dprl train --env cartpole --algo dppg --epsilon 2 --delta 1e-6
  dprl train --env cartpole --algo dppg --seed 1 --seeds 30 --json
  dprl train --env cartpole --sweep-z 0.5,1,2,4 --seed 1 --seeds 5 --plot eps.png
  dprl train --env acrobot --algo ppo --users 4000 --plot curve.png`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTrain(cmd, a, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.env, "env", "cartpole", "environment: "+strings.Join(sims.Names(), ", "))
	fl.StringVar(&f.algo, "algo", "dppg", "dppg (differentially private), ppo (non-private baseline), dppg-loglinear (RiverSwim, cumulative regret), dpsgd-reinforce or dpsgd-dqn (DP-SGD baselines)")
	fl.Float64Var(&f.z, "z", trainDefaultZ, "noise multiplier z > 0 (dppg only; dosing: 0.1)")
	fl.Float64Var(&f.epsilon, "epsilon", 0, "target per-episode epsilon at --delta: z is set to the smallest noise multiplier whose per-episode epsilon (analytic Gaussian) is at most this (dppg only; instead of --z)")
	fl.Float64SliceVar(&f.sweepZ, "sweep-z", nil, "dppg: train at each of these noise multipliers (comma-separated; --seeds runs each) and report eval return against epsilon; --plot draws it (the paper's Fig. 2)")
	fl.IntVar(&f.k, "K", 32, "users per update K >= 1 (Table 3 and dosing: 8; dppg-loglinear: episodes per update, default 1 as in App. C.2.2)")
	fl.Float64Var(&f.clip, "clip", 0.2, "clipping norm S > 0 of the joint local update, policy and critic (dppg; Table 3: 0.05, dosing: 0.08); dppg-loglinear: choose each run's alpha so that its first update's trust-region S is this (instead of --alpha; KL needs --fisher-exact)")
	fl.IntVar(&f.users, "users", trainDefaultUsers, "number of simulated users, >= 1")
	fl.Float64Var(&f.delta, "delta", trainDefaultDelta, "delta of the reported (epsilon, delta), in (0, 1)")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of every random draw (default: from the OS; printed in the result)")
	fl.IntVar(&f.evalEpisodes, "eval-episodes", 20, "evaluation episodes of the final policy, >= 1")
	fl.IntVar(&f.workers, "workers", 0, "goroutines for the local updates (dppg-loglinear: for the seeds and configurations; default GOMAXPROCS; the result does not depend on it)")
	fl.Float64Var(&f.lr, "lr", 7.26e-4, "local Adam learning rate > 0 (Table 3; dosing: 9.25e-4)")
	fl.Float64Var(&f.ent, "ent-coef", 0.01, "entropy bonus coefficient >= 0 (Table 3: 0.36)")
	fl.IntSliceVar(&f.hidden, "hidden", []int{16, 16}, "hidden layer widths of both networks (Table 3 and dosing: 64,64)")
	fl.BoolVar(&f.advNorm, "adv-norm", false, "standardise each user's advantages (mean 0, std 1) before the local epochs (dosing default: true)")
	fl.Float64Var(&f.share, "policy-share", 0.8, "share f of the squared clipping norm given to the policy block; the critic gets 1-f (dppg only)")
	fl.IntVar(&f.epochs, "epochs", 3, "local epochs E >= 1 (Table 3: 8, dosing: 4)")
	fl.Float64Var(&f.lambda, "gae-lambda", 0.85, "GAE lambda in [0, 1] (Table 3; cartpole: 0.98, dosing: 0.97)")
	fl.Float64Var(&f.valueScale, "value-scale", 10, "public return scale c: the critic predicts V/c (cartpole, acrobot, dosing: 10, others 1)")
	fl.StringVar(&f.momentReset, "moment-reset", "second", "local Adam state at each iteration: paper (m = -g~, v = g~^2), second (m = 0, v = g~^2) or zero (fresh, bias-corrected); dosing default: paper")
	fl.StringVar(&f.obsScale, "obs-scale", "1,1,10,1", "public per-component observation scale seen by both networks, comma-separated, or none (cartpole: 1,1,10,1; dosing: 0.01,0.05,0.05,0.1,0.1,0.01,0.001,0.01,0.001; others: none)")
	fl.Float64Var(&f.serverLR, "server-lr", 1, "server step size eta of theta <- theta + eta g~, > 0 (Algorithm 2; cartpole default: 0.5)")
	fl.StringVar(&f.noise, "noise", "independent", "noise of the releases: independent (Algorithm 2), tree (binary tree mechanism, DP-FTRL) or sqrt (square-root factorization); the epsilon per segment of z is the same, the epsilon per episode is not (dppg only; cartpole default: sqrt, with K 8 and --server-lr 0.5)")
	fl.StringVar(&f.horizon, "horizon", "run", "releases over which --noise tree or sqrt correlates the noise before restarting: run (all ceil(users/K) releases) or N >= 1 (dppg only)")
	fl.BoolVar(&f.anneal, "anneal", false, "decay the server step size linearly to 0 over the run (public schedule)")
	fl.Float64Var(&f.average, "average", 0, "release the exponential moving average of the parameters with this decay in [0, 1) instead of the last iterate (post-processing; 0: off)")
	fl.BoolVar(&f.fresh, "fresh-episodes", false, "every user starts a fresh episode (default: user slot i of a batch continues the episode slot i's previous user left running)")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	fl.StringVar(&f.plot, "plot", "", "write the learning curve (return vs users) as PNG to this file")
	fl.Float64SliceVar(&f.epsilons, "eps", []float64{1, 5}, "dppg-loglinear: total epsilons per episode (policy and baseline composed)")
	fl.StringSliceVar(&f.regions, "region", []string{"l2", "kl"}, "dppg-loglinear: trust regions (l2, kl, l2-markov)")
	fl.IntVar(&f.episodes, "episodes", 3000, "dppg-loglinear: episodes per run")
	fl.IntVar(&f.seeds, "seeds", 0, "runs with seeds --seed, --seed+1, ... and their mean and std over seeds (default 1; dppg-loglinear: 5 per configuration)")
	fl.Float64Var(&f.alpha, "alpha", policy.DefaultLogLinearConfig().Alpha, "dppg-loglinear: trust region size alpha > 0 (Table 2: 3.5)")
	fl.Float64Var(&f.eta, "eta", 0, "dppg-loglinear: constant policy step size eta > 0 instead of Table 2's schedule (12, divided by 5 every 50 episodes, floor 0.06)")
	fl.Float64Var(&f.baseLR, "baseline-lr", policy.DefaultLogLinearConfig().BaselineLR, "dppg-loglinear: step size >= 0 of the private linear baseline (0: the baseline stays 0 and the returns are the advantages; epsilon still composes its mechanism, an upper bound)")
	fl.Float64Var(&f.initRight, "init-right", 0, "dppg-loglinear: start from the policy with logit gap theta(s, right) - theta(s, left) equal to this in every state (0: uniform, the paper's start; large: near the optimal policy)")
	fl.Float64Var(&f.ridge, "fisher-ridge", policy.DefaultLogLinearConfig().FisherRidge, "dppg-loglinear, KL region: ridge >= 0 added to the Fisher estimate (Table 2: 1e-3); it bounds how far S can grow as the policy turns deterministic")
	fl.BoolVar(&f.fisherEx, "fisher-exact", false, "dppg-loglinear, KL region: use the Fisher matrix's expectation under the public model instead of the estimate on 25 public episodes (same privacy: S depends on the released policy and the public model only)")
	fl.BoolVar(&f.clipAtLR0, "clip-at-lr0", false, "dppg-loglinear: compute the trust-region clipping norm at eta_0 instead of the current eta")
	fl.StringVar(&f.diag, "diag", "", "SIMULATION ONLY, not covered by the privacy guarantee: write per-update diagnostics computed from the simulated users' raw data and the exact noise (entropy, value loss, returns, un-noised clipped fractions, signal and noise norms) as JSON Lines to this file, every record labelled so; dppg-loglinear: each seed's released policy (value and per-state logit gaps right - left; post-processing of the releases) at every regret-curve point")
	return c, f
}

// trainFlagAlgos maps each flag of dprl train that only some algorithms
// read to those algorithms; flags not listed (--env, --algo, --seed,
// --delta, --json, the global ones) apply to all.
var trainFlagAlgos = func() map[string][]string {
	ppoFamily := []string{"dppg", "ppo"}
	m := map[string][]string{
		"z":             {"dppg", "ppo", policy.AlgoDPSGDReinforce, policy.AlgoDPSGDDQN}, // ppo: rejected with its own message
		"clip":          {"dppg", "ppo", policy.AlgoDPSGDReinforce, policy.AlgoDPSGDDQN, algoLogLinear},
		"eval-episodes": {"dppg", "ppo", policy.AlgoDPSGDReinforce, policy.AlgoDPSGDDQN},
		"plot":          {"dppg", "ppo", algoLogLinear},
		"epsilon":       {"dppg"},
		"sweep-z":       {"dppg"},
		"noise":         {"dppg"},
		"horizon":       {"dppg"},
	}
	for _, name := range []string{"K", "users", "workers", "lr", "ent-coef", "hidden", "adv-norm", "policy-share",
		"epochs", "gae-lambda", "value-scale", "moment-reset", "obs-scale", "server-lr", "anneal", "average", "fresh-episodes", "diag"} {
		m[name] = ppoFamily
	}
	m["diag"] = []string{"dppg", "ppo", algoLogLinear}
	m["K"] = []string{"dppg", "ppo", algoLogLinear}
	m["seeds"] = []string{"dppg", "ppo", algoLogLinear}
	m["workers"] = []string{"dppg", "ppo", algoLogLinear}
	for _, name := range []string{"eps", "region", "episodes", "clip-at-lr0", "alpha", "init-right", "eta", "baseline-lr", "fisher-ridge", "fisher-exact"} {
		m[name] = []string{algoLogLinear}
	}
	return m
}()

// checkTrainFlagsApply rejects a flag set on the command line that algo
// would silently ignore. An unknown algo is left to trainConfig.
func checkTrainFlagsApply(cmd *cobra.Command, algo string) error {
	known := false
	for _, algos := range trainFlagAlgos {
		known = known || slices.Contains(algos, algo)
	}
	if !known {
		return nil
	}
	var errs []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if algos, ok := trainFlagAlgos[fl.Name]; ok && !slices.Contains(algos, algo) {
			errs = append(errs, fmt.Sprintf("--%s does not apply to --algo %s (only to %s)", fl.Name, algo, strings.Join(algos, ", ")))
		}
	})
	if len(errs) > 0 {
		slices.Sort(errs)
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	return nil
}

// trainEnvDefaults is the learner configuration of an environment before
// flags and before dprl train's correlated-noise defaults: its profile's
// Learner (package profile says how each value was measured). An unknown
// name gets Table 3's control column; trainConfig refuses it anyway.
func trainEnvDefaults(env string) policy.Config {
	p, err := profile.Get(env)
	if err != nil {
		return policy.DefaultControlConfig()
	}
	return p.Learner
}

// trainConfig validates the flags and builds the learner configuration: the
// environment's defaults (its profile's TrainLearner) with every flag that
// was set on the command line applied over them.
func trainConfig(cmd *cobra.Command, f *trainFlags) (policy.Config, error) {
	changed := cmd.Flags().Changed
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if _, ok := sims.Lookup(f.env); !ok {
		bad("--env %q: unknown environment (valid: %s)", f.env, strings.Join(sims.Names(), ", "))
	}
	cfg, noise := trainEnvDefaults(f.env), policy.NoiseIndependent
	if p, err := profile.Get(f.env); err == nil {
		cfg, noise = p.TrainLearner()
	}
	switch f.algo {
	case "dppg":
		if changed("z") {
			if !(f.z > 0) || math.IsInf(f.z, 0) {
				bad("--z %v: the noise multiplier must be finite and > 0 (use --algo ppo for the non-private baseline)", f.z)
			}
			cfg.DP.NoiseMultiplier = f.z
		}
		if changed("epsilon") {
			switch {
			case changed("z"):
				bad("--epsilon and --z both set: give the target epsilon or the noise multiplier, not both")
			case !(f.epsilon > 0) || math.IsInf(f.epsilon, 0):
				bad("--epsilon %v: the target epsilon must be finite and > 0", f.epsilon)
			}
			// z is calibrated per episode below, once K, the noise and
			// its horizon are known.
		}
		if changed("clip") {
			if !(f.clip > 0) || math.IsInf(f.clip, 0) {
				bad("--clip %v: the clipping norm must be finite and > 0", f.clip)
			}
			cfg.DP.ClipNorm = f.clip
		}
		if changed("policy-share") {
			if !(f.share > 0 && f.share < 1) {
				bad("--policy-share %v: must be in (0, 1)", f.share)
			}
			cfg.DP.PolicyClipShare = f.share
		}
	case "ppo":
		for _, name := range []string{"z", "clip", "policy-share"} {
			if changed(name) {
				bad("--%s: --algo ppo neither clips nor adds noise; drop --%s or use --algo dppg", name, name)
			}
		}
		cfg = profile.NonPrivate(cfg)
	default:
		bad("--algo %q: want dppg, ppo, dppg-loglinear, dpsgd-reinforce or dpsgd-dqn", f.algo)
	}
	if changed("K") {
		if f.k < 1 {
			bad("--K %d: users per update must be >= 1", f.k)
		}
		cfg.DP.UsersPerUpdate = f.k
	}
	if changed("noise") {
		n, err := policy.ParseNoise(f.noise)
		if err != nil {
			bad("--noise %q: want independent, tree or sqrt", f.noise)
		}
		noise = n
	}
	if changed("horizon") && noise == policy.NoiseIndependent {
		bad("--horizon: independent noise has no horizon; add --noise tree or sqrt")
	}
	if cfg.DP.Mode == policy.ModeDP && noise != policy.NoiseIndependent {
		cfg.DP.Noise = noise
		if f.horizon == "run" {
			cfg.DP.Horizon = (max(f.users, 1) + cfg.DP.UsersPerUpdate - 1) / max(1, cfg.DP.UsersPerUpdate)
		} else if n, err := strconv.Atoi(f.horizon); err != nil || n < 1 {
			bad("--horizon %q: want run or a number of releases >= 1", f.horizon)
		} else {
			cfg.DP.Horizon = n
		}
	}
	if changed("lr") {
		if !(f.lr > 0) || math.IsInf(f.lr, 0) {
			bad("--lr %v: must be finite and > 0", f.lr)
		}
		cfg.PPO.Adam.LR = f.lr
	}
	if changed("server-lr") {
		if !(f.serverLR > 0) || math.IsInf(f.serverLR, 0) {
			bad("--server-lr %v: must be finite and > 0", f.serverLR)
		}
		cfg.PPO.ServerLR = f.serverLR
	}
	if changed("ent-coef") {
		if !(f.ent >= 0) || math.IsInf(f.ent, 0) {
			bad("--ent-coef %v: must be finite and >= 0", f.ent)
		}
		cfg.PPO.EntropyCoef = f.ent
	}
	if changed("hidden") {
		for _, h := range f.hidden {
			if h < 1 {
				bad("--hidden %v: widths must be >= 1", f.hidden)
				break
			}
		}
		cfg.PPO.Hidden = f.hidden
	}
	if changed("adv-norm") {
		cfg.PPO.NormalizeAdvantages = f.advNorm
	}
	if changed("epochs") {
		if f.epochs < 1 {
			bad("--epochs %d: must be >= 1", f.epochs)
		}
		cfg.PPO.Epochs = f.epochs
	}
	if changed("gae-lambda") {
		if !(f.lambda >= 0 && f.lambda <= 1) {
			bad("--gae-lambda %v: must be in [0, 1]", f.lambda)
		}
		cfg.PPO.Lambda = f.lambda
	}
	if changed("moment-reset") {
		switch f.momentReset {
		case "paper":
			cfg.PPO.MomentReset = policy.ResetPaper
		case "second":
			cfg.PPO.MomentReset = policy.ResetSecond
		case "zero":
			cfg.PPO.MomentReset = policy.ResetZero
		default:
			bad("--moment-reset %q: want paper, second or zero", f.momentReset)
		}
	}
	if changed("value-scale") {
		if !(f.valueScale > 0) || math.IsInf(f.valueScale, 0) {
			bad("--value-scale %v: must be finite and > 0", f.valueScale)
		}
		cfg.PPO.ValueScale = f.valueScale
	}
	if changed("obs-scale") {
		var scale []float64
		if v := strings.TrimSpace(f.obsScale); v != "" && v != "none" {
			for _, part := range strings.Split(v, ",") {
				x, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
				if err != nil {
					bad("--obs-scale %q: %v", f.obsScale, err)
					break
				}
				scale = append(scale, x)
			}
		}
		if d := envObsDim(f.env); len(scale) != 0 && d > 0 && len(scale) != d {
			bad("--obs-scale %q: want %d values (the observation dimension of %s), or none", f.obsScale, d, f.env)
		}
		cfg.PPO.ObsScale = scale
	}
	if f.users < 1 {
		bad("--users %d: must be >= 1", f.users)
	}
	if !(f.delta > 0 && f.delta < 1) {
		bad("--delta %v: must be in (0, 1)", f.delta)
	}
	if !(f.average >= 0 && f.average < 1) {
		bad("--average %v: the decay must be in [0, 1)", f.average)
	}
	if f.evalEpisodes < 1 {
		bad("--eval-episodes %d: must be >= 1", f.evalEpisodes)
	}
	if f.workers < 0 {
		bad("--workers %d: must be >= 0", f.workers)
	}
	if len(errs) > 0 {
		return cfg, usagef("train: %s", strings.Join(errs, "; "))
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err}
	}
	if f.algo == "dppg" && changed("epsilon") {
		// The smallest z, rounded up, whose analytic epsilon per episode
		// (the privacy unit) is at most the target.
		acct, err := newEpisodeAccount(f, cfg)
		if err != nil {
			return cfg, usagef("train: %v", err)
		}
		z, err := acct.ep.Calibrate(f.epsilon, f.delta)
		if err != nil {
			return cfg, usagef("train: --epsilon %v: %v", f.epsilon, err)
		}
		cfg.DP.NoiseMultiplier = z
	}
	return cfg, nil
}

// envObsDim returns the observation dimension of a registered environment
// (0 if unknown).
func envObsDim(name string) int {
	info, ok := sims.Lookup(name)
	if !ok {
		return 0
	}
	return info.New().ObservationSpace().Dim()
}

func runTrain(cmd *cobra.Command, a *app, f *trainFlags) error {
	if err := checkTrainFlagsApply(cmd, f.algo); err != nil {
		return err
	}
	if f.algo == policy.AlgoDPSGDReinforce || f.algo == policy.AlgoDPSGDDQN {
		return runTrainDPSGD(cmd, a, f)
	}
	if f.algo == algoLogLinear {
		return runTrainLogLinear(cmd, a, f)
	}
	cfg, err := trainConfig(cmd, f)
	if err != nil {
		return err
	}
	n := 1
	if cmd.Flags().Changed("seeds") {
		switch {
		case f.seeds < 1:
			return usagef("train: --seeds %d: must be >= 1", f.seeds)
		case f.seeds > 1 && f.diag != "":
			return usagef("train: --diag writes the diagnostics of one run: use it without --seeds")
		}
		n = f.seeds
	}
	if cmd.Flags().Changed("sweep-z") {
		return runTrainSweep(cmd, a, f, cfg, n)
	}
	info, _ := sims.Lookup(f.env)
	res := trainResult{Env: f.env, Method: f.algo, Delta: f.delta, K: cfg.DP.UsersPerUpdate,
		Z: cfg.DP.NoiseMultiplier, Clip: cfg.DP.ClipNorm, EvalEpisodes: f.evalEpisodes, Seed: f.seed, Seeded: cmd.Flags().Changed("seed")}
	if cfg.DP.Noise != policy.NoiseIndependent {
		res.Noise, res.Horizon = cfg.DP.Noise.String(), cfg.DP.Horizon
	}
	if cfg.DP.Mode == policy.ModeDP {
		// Per episode (the privacy unit), with the segment's beside it.
		acct, err := newEpisodeAccount(f, cfg)
		if err != nil {
			return usagef("train: %v", err)
		}
		g, _, err := acct.at(cfg.DP.NoiseMultiplier, f.delta)
		if err != nil {
			return usageError{err}
		}
		res.Epsilon, res.Accountant, res.episodeAccount = g.Epsilon, string(g.Method), acct
	} else {
		res.Epsilon = math.Inf(1)
	}
	if res.Seed, err = seedFlag(cmd, "seed", f.seed); err != nil {
		return fmt.Errorf("train: %w", err)
	}

	prog := newTrainProgress(a, n*f.users, res.Epsilon)
	runs := make([]trainResult, 0, n)
	for i := range n {
		r := res
		r.Seed = res.Seed + uint64(i)
		prog.offset = i * f.users
		if err := trainSeed(cmd.Context(), a, f, cfg, info.New, &r, prog); err != nil {
			prog.done()
			return err
		}
		runs = append(runs, r)
	}
	prog.done()
	if n > 1 {
		return emitSeeds(a, f, runs)
	}
	res = runs[0]
	if f.plot != "" {
		if err := writeCurvePNG(f.plot, res); err != nil {
			return fmt.Errorf("train: --plot: %w", err)
		}
	}
	if math.IsInf(res.Epsilon, 1) {
		// JSON has no infinity: the non-private baseline reports epsilon as null.
		return emit(a.stdout, f.json, ppoResult{res, nil}, func(w io.Writer) error { return res.text(w) })
	}
	return emit(a.stdout, f.json, res, res.text)
}

// trainSeed trains and evaluates one run with seed r.Seed
// (experiment.RunControl) and fills in r; with --diag it writes the run's
// diagnostics.
func trainSeed(ctx context.Context, a *app, f *trainFlags, cfg policy.Config, newEnv func() sims.Env, r *trainResult, prog *trainProgress) error {
	c := experiment.Control{NewEnv: newEnv, Config: cfg, Users: f.users, Workers: f.workers, EvalEpisodes: f.evalEpisodes,
		FreshEpisodes: f.fresh, AnnealServerLR: f.anneal, Average: f.average, Diagnostics: f.diag != ""}
	out, err := experiment.RunControl(ctx, c, r.Seed, prog.update)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if out.LastMean != nil {
		r.Average, r.LastMean, r.LastStd = f.average, out.LastMean, out.LastStd
	}
	r.EvalMean, r.EvalStd = out.EvalMean, out.EvalStd
	a.log.Debug().Uint64("seed", r.Seed).Dur("eval", time.Duration(out.EvalSeconds*float64(time.Second))).Float64("eval_mean", r.EvalMean).Msg("evaluated")
	r.Users, r.Updates, r.Steps, r.Skipped, r.Curve = out.Users, out.Updates, out.Steps, out.Skipped, out.Curve
	r.Seconds, r.StepsPerSecond = out.Seconds, out.StepsPerSecond
	if f.diag != "" {
		if err := writeDiagnostics(f.diag, out.Diagnostics); err != nil {
			return fmt.Errorf("train: --diag: %w", err)
		}
	}
	return nil
}

// ppoResult is trainResult with epsilon null (no privacy guarantee).
type ppoResult struct {
	trainResult
	Epsilon *float64 `json:"epsilon"`
}

func (r trainResult) text(w io.Writer) error {
	privacy := "non-private (ppo)"
	if !math.IsInf(r.Epsilon, 1) {
		privacy = privacyText(r.Epsilon, r.Delta, r.Z, r.Clip, r.K, r.Noise, r.Horizon, r.Accountant, r.episodeAccount)
	}
	_, err := fmt.Fprintf(w, "%s %s: eval return %.2f ± %.2f over %d episodes\n%s\n%d users, %d updates, %d steps in %.1fs (%.0f steps/s), seed %d\n",
		r.Env, r.Method, r.EvalMean, r.EvalStd, r.EvalEpisodes, privacy, r.Users, r.Updates, r.Steps, r.Seconds, r.StepsPerSecond, r.Seed)
	return err
}

// privacyText is the privacy line of dprl train's text output: the
// per-episode epsilon first, then the episode structure and the
// per-segment epsilon (acct may be nil only in tests of old results).
func privacyText(eps, delta, z, clip float64, k int, noise string, horizon int, method string, acct *episodeAccount) string {
	s := fmt.Sprintf("epsilon = %.4g at delta = %g per episode (z = %g, S = %g, K = %d%s, %s)", eps, delta, z, clip, k, noiseText(noise, horizon), method)
	if acct != nil {
		s += "\n  " + acct.text()
	}
	return s
}

// noiseText describes --noise for the privacy line ("" for independent
// noise).
func noiseText(noise string, horizon int) string {
	if noise == "" {
		return ""
	}
	return fmt.Sprintf(", %s noise over %d releases", noise, horizon)
}

// writeDiagnostics writes one JSON object per update, each labelled
// simulation only (policy.DiagnosticsScope): they are statistics of the
// simulated users' raw data and of the exact noise, which no epsilon covers.
func writeDiagnostics(path string, diag []policy.UpdateDiag) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, d := range diag {
		d.Scope = policy.DiagnosticsScope
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// writeCurvePNG plots the learning curve (mean return vs users, with a ±1 std
// band) to a PNG file.
func writeCurvePNG(path string, r trainResult) error {
	if len(r.Curve) == 0 {
		return errors.New("no learning-curve points")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s", r.Env, r.Method)
	if !math.IsInf(r.Epsilon, 1) {
		p.Title.Text += fmt.Sprintf(" (z = %g, ε = %.3g per episode, δ = %g)", r.Z, r.Epsilon, r.Delta)
	}
	p.X.Label.Text = "users"
	p.Y.Label.Text = "return"
	mean := make(plotter.XYs, len(r.Curve))
	band := make(plotter.XYs, 0, 2*len(r.Curve))
	for i, c := range r.Curve {
		mean[i] = plotter.XY{X: float64(c.Users), Y: c.Mean}
		band = append(band, plotter.XY{X: float64(c.Users), Y: c.Mean + c.Std})
	}
	for i := len(r.Curve) - 1; i >= 0; i-- {
		c := r.Curve[i]
		band = append(band, plotter.XY{X: float64(c.Users), Y: c.Mean - c.Std})
	}
	poly, err := plotter.NewPolygon(band)
	if err != nil {
		return err
	}
	poly.Color = plotColor{0x1f, 0x77, 0xb4, 0x40}
	poly.LineStyle.Width = 0
	line, err := plotter.NewLine(mean)
	if err != nil {
		return err
	}
	line.Color = plotColor{0x1f, 0x77, 0xb4, 0xff}
	line.Width = vg.Points(1.5)
	p.Add(poly, line, plotter.NewGrid())
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// plotColor is a non-premultiplied RGBA colour (alpha premultiplied on use).
type plotColor struct{ r, g, b, a uint8 }

// RGBA implements color.Color.
func (c plotColor) RGBA() (r, g, b, a uint32) {
	a = uint32(c.a) * 0x101
	return uint32(c.r) * 0x101 * a / 0xffff, uint32(c.g) * 0x101 * a / 0xffff, uint32(c.b) * 0x101 * a / 0xffff, a
}

// newReporter returns the progress reporter of a command: live lines on a
// terminal stderr, log lines otherwise, nothing with --log-level above info.
func newReporter(a *app) *progress.Reporter {
	return progress.New(a.stderr, isTerminal(a.stderr), a.log.GetLevel() > zerolog.InfoLevel)
}

// trainProgress reports progress on stderr: a live bar redrawn in place on a
// terminal, an info log line every few seconds otherwise, nothing with
// --log-level disabled (or above info).
type trainProgress struct {
	*progress.Reporter
	a       *app
	users   int
	offset  int // users of the earlier seeds of a --seeds run
	epsilon float64
}

func newTrainProgress(a *app, users int, eps float64) *trainProgress {
	return &trainProgress{Reporter: newReporter(a), a: a, users: users, epsilon: eps}
}

func (p *trainProgress) update(pr policy.Progress) {
	pr.Users += p.offset
	if !p.Due(pr.Users >= p.users) {
		return
	}
	sps := 0.0
	if s := pr.Elapsed.Seconds(); s > 0 {
		sps = float64(pr.Steps) / s
	}
	if p.TTY() {
		p.Draw(fmt.Sprintf("%s %d/%d users  %d updates  return %.1f  ε/episode %.3g  %.0f steps/s ",
			progress.Bar(30, int64(pr.Users), int64(p.users)), pr.Users, p.users, pr.Updates, pr.RecentReturn, p.epsilon, sps))
		return
	}
	p.a.log.Info().Int("users", pr.Users).Int("of", p.users).Int("updates", pr.Updates).
		Float64("recent_return", pr.RecentReturn).Float64("epsilon", p.epsilon).
		Float64("steps_per_second", math.Round(sps)).Msg("training")
}

// done ends the live bar's line.
func (p *trainProgress) done() { p.Done() }
