package experiment

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"dprl/internal/atomicfile"
	"dprl/internal/progress"
	"dprl/internal/rng"
	"dprl/policy"
	"dprl/profile"
)

// TrainArgs are dprl train's settings as an operator gives them, one field
// per flag, named as the configuration field it sets (Train and its
// Overrides, DPSGD, Sweep, LogLinear, SAC), so that the configurations'
// errors name the flags. Each method building a configuration takes set,
// which reports whether the field's setting was given: a setting not given
// leaves the configuration's default (the environment's profile, Table 2,
// DefaultSAC) in place.
// A tagged field declares its flag ({byenv} in a usage stands for
// profile.ByEnv, see profile.ExpandByEnv; Env's help lists the registered
// simulators); the fields' order is that of train's error messages.
type TrainArgs struct {
	Env            string
	Z              float64   `flag:"z" usage:"noise multiplier z > 0{byenv}; dpsgd-*: default 1"`
	Epsilons       []float64 `flag:"epsilon" usage:"target per-episode epsilon at --delta: dppg: z is set to the smallest noise multiplier whose per-episode epsilon (analytic Gaussian) is at most this (instead of --z); dppg-loglinear: total epsilons per episode, policy and baseline composed, one configuration each (comma-separated; default 1,5)"`
	Clip           float64   `flag:"clip" usage:"clipping norm S > 0 of the joint local update, policy and critic{byenv:Table 3: 0.05}; dpsgd-*: default 1; dppg-loglinear: choose each run's alpha so that its first update's trust-region S is this (instead of --alpha; KL needs --fisher-exact)"`
	PolicyShare    float64   `flag:"policy-share" usage:"share f of the squared clipping norm given to the policy block; the critic gets 1-f{byenv}"`
	Algo           string    `flag:"algo" default:"dppg" usage:"dppg (differentially private), ppo (non-private baseline), dppg-loglinear (RiverSwim, cumulative regret), dpsgd-reinforce or dpsgd-dqn (DP-SGD baselines), sac (non-private Soft Actor-Critic, continuous actions)"`
	K              int       `flag:"K" usage:"users per update K >= 1{byenv:Table 3: 8}; dppg-loglinear: episodes per update, default 1 as in App. C.2.2"`
	Noise          string    `flag:"noise" usage:"noise of the releases: independent (Algorithm 2), tree (binary tree mechanism, DP-FTRL) or sqrt (square-root factorization); the epsilon per segment of z is the same, the epsilon per episode is not{byenv}"`
	Horizon        string    `flag:"horizon" default:"run" usage:"releases over which --noise tree or sqrt correlates the noise before restarting: run (all ceil(users/K) releases) or N >= 1 (dppg only)"`
	LR             float64   `flag:"lr" usage:"local Adam learning rate > 0{byenv}"`
	ServerLR       float64   `flag:"server-lr" usage:"server step size eta of theta <- theta + eta g~, > 0{byenv}"`
	EntropyCoef    float64   `flag:"ent-coef" usage:"entropy bonus coefficient >= 0{byenv:Table 3: 0.36}"`
	Hidden         []int     `flag:"hidden" usage:"hidden layer widths of both networks{byenv:Table 3: 64,64}"`
	Epochs         int       `flag:"epochs" usage:"local epochs E >= 1{byenv:Table 3: 8}"`
	StepsPerUser   int       `flag:"steps-per-user" usage:"segment length T >= 1: the most steps one simulated user plays{byenv:Table 3: 64}"`
	Gamma          float64   `flag:"gamma" usage:"discount in [0, 1]{byenv:Table 3: 0.99}"`
	Lambda         float64   `flag:"gae-lambda" usage:"GAE lambda in [0, 1]{byenv:Table 3: 0.85}"`
	MomentReset    string    `flag:"moment-reset" usage:"local Adam state at each iteration: paper (m = -g~, v = g~^2), second (m = 0, v = g~^2) or zero (fresh, bias-corrected){byenv}"`
	ValueScale     float64   `flag:"value-scale" usage:"public return scale c: the critic predicts V/c{byenv}"`
	ObsScale       string    `flag:"obs-scale" usage:"public per-component observation scale seen by both networks, comma-separated, or none{byenv}"`
	Users          int       `flag:"users" usage:"number of simulated users, >= 1{byenv}"`
	Steps          int       `flag:"steps" usage:"sac: environment steps per run, >= 1"`
	LearningStarts int       `flag:"learning-starts" usage:"sac: first steps with uniformly random actions, before the first update"`
	Batch          int       `flag:"batch" usage:"sac: minibatch size >= 1"`
	EpisodeLog     string    `flag:"log-episodes" usage:"sac: write every training episode of every seed to this new file as a dprl.sessions.v1 log (with the behaviour's log-density of each action): a dataset mixing random, improving and expert episodes for the offline modes"`
	Replays        int       `flag:"log-replays" usage:"sac, with --log-episodes: also log this many extra episodes of the current policy (sampled actions, no learning) after each training episode once learning has started: a large dataset of every stage of training at little extra time"`
	Delta          float64   `flag:"delta" default:"1e-5" usage:"delta of the reported (epsilon, delta), in (0, 1)"`
	Average        float64   `flag:"average" usage:"release the exponential moving average of the parameters with this decay in [0, 1) instead of the last iterate (post-processing; 0: off){byenv:--algo ppo: 0}"`
	EvalEpisodes   int       `flag:"eval-episodes" default:"20" usage:"evaluation episodes of the final policy, >= 1"`
	Workers        int       `flag:"workers" usage:"goroutines for the local updates (dppg-loglinear: for the seeds and configurations; default GOMAXPROCS; the result does not depend on it)"`
	Zs             []float64 `flag:"sweep-z" usage:"dppg: train at each of these noise multipliers (comma-separated; --seeds runs each) and report eval return against epsilon; --plot draws it (the paper's Fig. 2)"`
	Seeds          int       `flag:"seeds" usage:"runs with seeds --seed, --seed+1, ... and their mean and std over seeds (default 1; dppg-loglinear: 5 per configuration)"`
	// Diag is the file of the diagnostics (dppg, ppo: one run's per-update
	// diagnostics; dppg-loglinear: the trace of the released policies); ""
	// for none.
	Diag string `flag:"diag" usage:"SIMULATION ONLY, not covered by the privacy guarantee: write per-update diagnostics computed from the simulated users' raw data and the exact noise (entropy, value loss, returns, un-noised clipped fractions, signal and noise norms) as JSON Lines to this file, every record labelled so; dppg-loglinear: each seed's released policy (value and per-state logit gaps right - left; post-processing of the releases) at every regret-curve point"`
	// Plot is the file of the run's figure ("" for none; dppg, ppo,
	// dppg-loglinear, sac).
	Plot                string   `flag:"plot" usage:"write the learning curve (return vs users) as PNG to this file"`
	NormalizeAdvantages bool     `flag:"adv-norm" usage:"standardise each user's advantages (mean 0, std 1) before the local epochs{byenv}"`
	AnnealServerLR      bool     `flag:"anneal" usage:"decay the server step size linearly to 0 over the run (public schedule)"`
	FreshEpisodes       bool     `flag:"fresh-episodes" usage:"every user starts a fresh episode (default: user slot i of a batch continues the episode slot i's previous user left running)"`
	Episodes            int      `flag:"episodes" default:"3000" usage:"dppg-loglinear: episodes per run"`
	Regions             []string `flag:"region" default:"l2,kl" usage:"dppg-loglinear: trust regions (l2, kl, l2-markov)"`
	InitRight           float64  `flag:"init-right" usage:"dppg-loglinear: start from the policy with logit gap theta(s, right) - theta(s, left) equal to this in every state (0: uniform, the paper's start; large: near the optimal policy)"`
	Alpha               float64  `flag:"alpha" usage:"dppg-loglinear: trust region size alpha > 0 (Table 2: 3.5)"`
	Eta                 float64  `flag:"eta" usage:"dppg-loglinear: constant policy step size eta > 0 instead of Table 2's schedule (12, divided by 5 every 50 episodes, floor 0.06)"`
	BaselineLR          float64  `flag:"baseline-lr" usage:"dppg-loglinear: step size >= 0 of the private linear baseline (0: the baseline stays 0 and the returns are the advantages; epsilon still composes its mechanism, an upper bound)"`
	FisherRidge         float64  `flag:"fisher-ridge" usage:"dppg-loglinear, KL region: ridge >= 0 added to the Fisher estimate (Table 2: 1e-3); it bounds how far S can grow as the policy turns deterministic"`
	FisherExact         bool     `flag:"fisher-exact" usage:"dppg-loglinear, KL region: use the Fisher matrix's expectation under the public model instead of the estimate on 25 public episodes (same privacy: S depends on the released policy and the public model only)"`
	ClipAtLR0           bool     `flag:"clip-at-lr0" usage:"dppg-loglinear: compute the trust-region clipping norm at eta_0 instead of the current eta"`
	// Seed is the first seed, if given; else a secure one is drawn.
	Seed uint64 `flag:"seed" usage:"seed of every random draw (default: from the OS; printed in the result)"`
}

// Algorithm groups of trainModes.
const (
	ppoFamily = MethodDPPG + " " + MethodPPO
	dpsgdAlgo = policy.AlgoDPSGDReinforce + " " + policy.AlgoDPSGDDQN
)

// trainModes are the algorithms (space-separated) that read each setting
// of TrainArgs that not every algorithm reads, by field.
var trainModes = []struct {
	algos  string
	fields []string
}{
	{ppoFamily + " " + dpsgdAlgo, []string{"Z"}},
	{MethodDPPG + " " + LogLinearMethod, []string{"Epsilons"}},
	{ppoFamily + " " + dpsgdAlgo + " " + LogLinearMethod, []string{"Clip", "Delta"}},
	{ppoFamily, []string{"PolicyShare", "ServerLR", "EntropyCoef", "Epochs", "StepsPerUser", "Lambda", "MomentReset", "ValueScale", "ObsScale", "Users",
		"Average", "NormalizeAdvantages", "AnnealServerLR", "FreshEpisodes"}},
	{ppoFamily + " " + LogLinearMethod, []string{"K", "Workers", "Diag"}},
	{MethodDPPG, []string{"Noise", "Horizon", "Zs"}},
	{ppoFamily + " " + MethodSAC, []string{"LR", "Hidden", "Gamma"}},
	{MethodSAC, []string{"Steps", "LearningStarts", "Batch", "EpisodeLog", "Replays"}},
	{ppoFamily + " " + dpsgdAlgo + " " + MethodSAC, []string{"EvalEpisodes"}},
	{ppoFamily + " " + LogLinearMethod + " " + MethodSAC, []string{"Seeds", "Plot"}},
	{LogLinearMethod, []string{"Episodes", "Regions", "InitRight", "Alpha", "Eta", "BaselineLR", "FisherRidge", "FisherExact", "ClipAtLR0"}},
}

// Inapplicable returns the errors, joined, of the settings given (set
// reports whether a field was) that Algo would ignore, each naming the
// algorithms that read it; none for an unknown Algo (Train reports it).
// Env, Algo and Seed apply to every algorithm.
func (a TrainArgs) Inapplicable(set func(field string) bool) error {
	if CheckMethod(a.Algo) != nil {
		return nil
	}
	var errs []error
	for _, m := range trainModes {
		algos := strings.Fields(m.algos)
		for _, f := range m.fields {
			bad(&errs, set(f) && !slices.Contains(algos, a.Algo), "{%s} does not apply to {Algo} %s (only to %s)", f, a.Algo, strings.Join(algos, ", "))
		}
	}
	return errors.Join(errs...)
}

// seed returns the first seed: Seed if given, else one from the secure
// generator.
func (a TrainArgs) seed(set func(string) bool) uint64 {
	if set("Seed") {
		return a.Seed
	}
	return rng.SecureSeed()
}

// users returns Users if given, else the environment profile's
// (profile.Profile.Users, BaselineUsers for --algo ppo;
// profile.DefaultTrainUsers for an unknown environment).
func (a TrainArgs) users(set func(string) bool) int {
	if set("Users") {
		return a.Users
	}
	p, err := profile.Get(a.Env)
	switch {
	case err != nil:
		return profile.DefaultTrainUsers
	case a.Algo == MethodPPO:
		return p.BaselineUsers
	}
	return p.Users
}

// average returns Average if given, else for dppg the environment
// profile's (profile.Profile.Average), else 0: the non-private baseline
// releases its last iterate unless told otherwise.
func (a TrainArgs) average(set func(string) bool) float64 {
	if set("Average") || a.Algo != MethodDPPG {
		return a.Average
	}
	if p, err := profile.Get(a.Env); err == nil {
		return p.Average
	}
	return 0
}

// ifSet returns v if the field was given, else nil.
func ifSet[T any](set func(string) bool, field string, v *T) *T {
	if set(field) {
		return v
	}
	return nil
}

// Train returns the configuration of a dppg or ppo run: the environment's
// defaults with every setting given over them; err joins the errors of the
// settings whose values do not parse (Train.Validate checks the rest).
func (a TrainArgs) Train(set func(string) bool) (t Train, err error) {
	var errs []error
	parsed := func(err error) bool {
		errs = append(errs, err)
		return err == nil
	}
	t = Train{Env: a.Env, Method: a.Algo, Delta: a.Delta, Users: a.users(set), Workers: a.Workers, EvalEpisodes: a.EvalEpisodes,
		FreshEpisodes: a.FreshEpisodes, AnnealServerLR: a.AnnealServerLR, Average: a.average(set), Diagnostics: a.Diag != "", Seeded: set("Seed")}
	o := &t.Overrides
	if a.Algo != MethodDPPG && a.Algo != MethodPPO {
		errs = append(errs, fields.Errorf("{Method} %w", CheckMethod(a.Algo)))
		t.Method = MethodDPPG // to check the other settings
	} else {
		o.Z, o.Clip, o.PolicyShare = ifSet(set, "Z", &a.Z), ifSet(set, "Clip", &a.Clip), ifSet(set, "PolicyShare", &a.PolicyShare)
		if set("Epsilons") && len(a.Epsilons) != 1 {
			errs = append(errs, fields.Errorf("{Epsilons} %v: {Method} %s takes one target epsilon (several: one run each, or {Zs})", a.Epsilons, a.Algo))
		} else if set("Epsilons") {
			t.Epsilon = &a.Epsilons[0]
		}
	}
	o.K, o.LR, o.ServerLR, o.EntropyCoef = ifSet(set, "K", &a.K), ifSet(set, "LR", &a.LR), ifSet(set, "ServerLR", &a.ServerLR), ifSet(set, "EntropyCoef", &a.EntropyCoef)
	o.NormalizeAdvantages, o.Epochs, o.Lambda = ifSet(set, "NormalizeAdvantages", &a.NormalizeAdvantages), ifSet(set, "Epochs", &a.Epochs), ifSet(set, "Lambda", &a.Lambda)
	o.ValueScale, o.StepsPerUser, o.Gamma = ifSet(set, "ValueScale", &a.ValueScale), ifSet(set, "StepsPerUser", &a.StepsPerUser), ifSet(set, "Gamma", &a.Gamma)
	if set("Hidden") {
		o.Hidden = a.Hidden
	}
	if n, err := profile.ParseNoise(a.Noise); set("Noise") && parsed(err) {
		o.Noise = &n
	}
	if h, err := profile.ParseHorizon(a.Horizon); set("Horizon") && parsed(err) {
		o.Horizon = &h
	}
	if m, err := profile.ParseMomentReset(a.MomentReset); set("MomentReset") && parsed(err) {
		o.MomentReset = &m
	}
	if sc, err := profile.ParseObsScale(a.ObsScale, a.Env); set("ObsScale") && parsed(err) {
		o.ObsScale = &sc
	}
	return t, errors.Join(errs...)
}

// TrainOutput is a result of dprl train with a figure.
type TrainOutput interface {
	WriteText(w io.Writer) error
	Plot(path string) error
}

// TrainArgsHooks are the optional callbacks of TrainArgs.RunSeeds and
// TrainArgs.Sweep: Task receives the progress of every run, Evaluated
// each run's result.
type TrainArgsHooks struct {
	Task      *progress.Task
	Evaluated func(TrainResult)
	// Point receives every point of a sweep when its runs are done.
	Point func(SweepPoint)
}

// Runs returns the number of runs of a dppg or ppo plan: Seeds if given
// (>= 1; with Diag only 1), else 1.
func (a TrainArgs) Runs(set func(string) bool) (int, error) {
	switch {
	case !set("Seeds"):
		return 1, nil
	case a.Seeds < 1:
		return 0, fields.Errorf("{Seeds} %d: must be >= 1", a.Seeds)
	case a.Seeds > 1 && a.Diag != "":
		return 0, fields.Errorf("{Diag} writes the diagnostics of one run: use it without {Seeds}")
	}
	return a.Seeds, nil
}

// RunSeeds runs plan n times from the first seed (TrainPlan.RunSeeds),
// writing the diagnostics of the run to Diag if given, and returns the run
// or, for n > 1, the summary over seeds (SummarizeSeeds).
func (a TrainArgs) RunSeeds(ctx context.Context, plan *TrainPlan, n int, set func(string) bool, hooks TrainArgsHooks) (TrainOutput, error) {
	runs, err := plan.RunSeeds(ctx, a.seed(set), n, SeedHooks{Progress: hooks.Task, Done: func(r TrainResult) error {
		if hooks.Evaluated != nil {
			hooks.Evaluated(r)
		}
		if a.Diag == "" {
			return nil
		} else if err := atomicfile.Write(a.Diag, 0o644, func(w io.Writer) error { return WriteDiagnostics(w, r.Diagnostics) }); err != nil {
			return fields.Errorf("{Diag}: %w", err)
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	if n > 1 {
		return SummarizeSeeds(runs), nil
	}
	return runs[0], nil
}

// SweepErrors are the errors of a sweep's settings (Zs given): the
// settings a sweep sets itself, and Sweep.Validate's.
func (a TrainArgs) SweepErrors(set func(string) bool) error {
	var errs []error
	for _, f := range []string{"Z", "Epsilons", "Diag"} {
		bad(&errs, set(f), "{%s}: not with {Zs} (the sweep sets z; {Diag} writes one run)", f)
	}
	return errors.Join(append(errs, Sweep{Zs: a.Zs, Seeds: []uint64{0}, Delta: a.Delta}.Validate())...)
}

// Sweep trains plan at every noise multiplier of Zs, n runs each from the
// first seed (TrainPlan.Sweep), reporting the progress over all of them
// to hooks.Task.
func (a TrainArgs) Sweep(ctx context.Context, plan *TrainPlan, n int, set func(string) bool, hooks TrainArgsHooks) (TrainSweepResult, error) {
	users := a.users(set)
	total := len(slices.Compact(slices.Sorted(slices.Values(a.Zs)))) * n * users
	return plan.Sweep(ctx, a.Zs, SeedRange(a.seed(set), n), SweepHooks{
		Progress: func(point, run int, eps float64) func(policy.Progress) {
			return TrainProgress(hooks.Task, (point*n+run)*users, total, eps)
		},
		Point: hooks.Point,
	})
}

// DPSGD returns the configuration of a DP-SGD baseline run: Z and Clip
// default to 1; the configuration fixes episodes and steps.
func (a TrainArgs) DPSGD(set func(string) bool) DPSGD {
	c := DPSGD{Env: a.Env, Algo: a.Algo, Z: 1, Clip: 1, Delta: a.Delta, EvalEpisodes: a.EvalEpisodes, Seed: a.seed(set)}
	if set("Z") {
		c.Z = a.Z
	}
	if set("Clip") {
		c.Clip = a.Clip
	}
	return c
}

// LogLinear returns the configuration of a dppg-loglinear run on the
// RiverSwim of Env (Table 2's settings where not given: epsilons 1 and 5,
// five seeds, K 1). Its error joins LogLinear.Validate's and those of a
// Clip or Eta given as 0 (0 means "unset" in LogLinear) or of Clip given
// with Alpha; an Env without RiverSwim is an error of its own.
func (a TrainArgs) LogLinear(set func(string) bool) (LogLinear, error) {
	prof, err := profile.Get(a.Env)
	if err != nil || prof.RiverSwimP == 0 {
		return LogLinear{}, fields.Errorf("{Method} %s needs {Env} riverswim or riverswim-0.9, got %q", LogLinearMethod, a.Env)
	}
	c := LogLinear{Env: a.Env, P: prof.RiverSwimP, Episodes: a.Episodes, Seeds: 5, Workers: a.Workers, Epsilons: a.Epsilons, Delta: a.Delta,
		Regions: a.Regions, InitRight: a.InitRight, Alpha: a.Alpha, K: 1, ClipAtLR0: a.ClipAtLR0, BaselineLR: a.BaselineLR,
		FisherRidge: a.FisherRidge, FisherExact: a.FisherExact, Trace: a.Diag != "", Seed: a.seed(set)}
	if !set("Epsilons") {
		c.Epsilons = []float64{1, 5}
	}
	if set("Seeds") {
		c.Seeds = a.Seeds
	}
	if set("K") {
		c.K = a.K
	}
	var errs []error
	if set("Clip") {
		c.Clip = a.Clip
		bad(&errs, a.Clip == 0, "{Clip} %v: the clipping norm must be finite and > 0", a.Clip)
		bad(&errs, set("Alpha"), "{Clip} and {Alpha}: set one ({Clip} chooses alpha)")
	}
	if set("Eta") {
		c.Eta = a.Eta
		bad(&errs, a.Eta == 0, "{Eta} %v: the step size must be finite and > 0", a.Eta)
	}
	return c, errors.Join(c.Validate(), errors.Join(errs...))
}

// SAC returns the configuration of a non-private SAC run: DefaultSAC(Env)
// with the settings given over it.
func (a TrainArgs) SAC(set func(string) bool) SAC {
	c := DefaultSAC(a.Env)
	c.Steps, c.LearningStarts, c.Batch, c.EvalEpisodes, c.EpisodeLog, c.Replays = a.Steps, a.LearningStarts, a.Batch, a.EvalEpisodes, a.EpisodeLog, a.Replays
	c.Seed = a.seed(set)
	if set("Hidden") {
		c.Hidden = a.Hidden
	}
	if set("LR") {
		c.LR = a.LR
	}
	if set("Gamma") {
		c.Gamma = a.Gamma
	}
	if set("Seeds") {
		c.Seeds = a.Seeds
	}
	return c
}
