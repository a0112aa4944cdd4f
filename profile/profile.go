// Package profile holds, in one table, what dprl knows about each registered
// simulator beyond its dynamics: the policy spec its spaces give, the learner
// defaults measured for it (Table 3 of "Differentially Private Policy
// Gradient" with the changes policy/REPRODUCE.md measured), its public reward
// range, its public observation and value scales, the defaults of dprl train
// that the agent cannot use (correlated noise), and the demo's target return.
//
// Every value here is a public constant read from an environment's
// specification or fixed before any data is seen; none is a statistic of
// private data. In particular the reward range is what the agent clips each
// reward to on arrival, so it must hold for every reward the environment can
// give (the package tests check it on random rollouts).
//
// The package imports policy and sims; neither imports it.
package profile

import (
	"errors"
	"fmt"
	"math"

	"dprl/policy"
	"dprl/sims"
)

// ErrNoProfile is returned by Get for a registered simulator without a
// profile (a programming error the package tests catch).
var ErrNoProfile = errors.New("profile: simulator has no profile")

// Profile is what dprl knows about one simulator. Get returns a fresh value:
// the caller may modify it, its slices included.
type Profile struct {
	// Name is the simulator's registry name (package sims).
	Name string
	// Spec is the policy spec of the simulator's observation and action
	// spaces.
	Spec policy.Spec
	// Learner is the learner configuration measured for the simulator: the
	// default of dprl train --algo dppg (TrainLearner), and of dprl agent
	// and dprl demo --env. Its
	// PPO.ObsScale and PPO.ValueScale are the public observation and value
	// scales.
	Learner policy.Config
	// RewardLow and RewardHigh are the public range of a reward, from the
	// simulator's specification (never from data): the agent clips each
	// reward to it.
	RewardLow, RewardHigh float64
	// TrainWholeEpisodes makes one simulated user of dprl train play one
	// whole episode (its segment length T is MaxSteps, the environment's
	// public step limit), so that the privacy unit, the episode, is one
	// user in one release: the headline epsilon is per user.
	TrainWholeEpisodes bool
	// MaxSteps is the environment's public step limit.
	MaxSteps int
	// DemoTargetReturn is the mean return at which dprl demo stops admitting
	// users by default; 0: none (the demo runs all its users).
	DemoTargetReturn float64
	// RiverSwimP is the probability of a successful move right of a RiverSwim
	// model, whose exact values dprl train --algo dppg-loglinear computes;
	// 0: not a RiverSwim.
	RiverSwimP float64
	// FeatureClip is the public L2 bound on an observation of the linear
	// contextual bandit (dprl agent --learner lincb, package lincb): larger
	// observations are scaled down to it. 0: the learner is not offered for
	// the simulator (it learns one decision per session).
	FeatureClip float64
	// Baseline is the learner of the non-private PPO baseline (dprl train
	// --algo ppo, TrainBaseline): NonPrivate(Learner) unless the private
	// learner's settings are chosen for the noise (recsys: DPPG takes K =
	// 256 users per update and server step 4, PPO learns with K = 32 and
	// step 1).
	Baseline policy.Config
	// Users is dprl train's default number of simulated users (--users),
	// BaselineUsers that of --algo ppo.
	Users, BaselineUsers int
	// Average is the decay of the exponential moving average of the
	// released iterates that dprl train --algo dppg releases and dprl agent
	// and dprl demo serve by default (policy.TrainOptions.AverageDecay,
	// agent.Config.AverageDecay; post-processing, the same epsilon); 0: the
	// last iterate.
	Average float64
}

// TrainLearner returns dprl train's default learner configuration and noise
// before flags: Learner (Algorithm 2: independent noise; --noise tree|sqrt
// correlates it), with TrainWholeEpisodes a segment length of MaxSteps.
func (p Profile) TrainLearner() (policy.Config, policy.Noise) {
	cfg, noise := p.Learner, policy.NoiseIndependent
	if p.TrainWholeEpisodes {
		cfg.PPO.StepsPerUser = p.MaxSteps
	}
	return cfg, noise
}

// TrainBaseline returns dprl train --algo ppo's default learner
// configuration: Baseline, with TrainWholeEpisodes a segment length of
// MaxSteps.
func (p Profile) TrainBaseline() policy.Config {
	cfg := p.Baseline
	if p.TrainWholeEpisodes {
		cfg.PPO.StepsPerUser = p.MaxSteps
	}
	return cfg
}

// DefaultTrainUsers is dprl train's number of simulated users where the
// profile states none.
const DefaultTrainUsers = 10000

// NonPrivate returns cfg as the non-private PPO baseline (dprl train --algo
// ppo): the same networks, optimiser and users per update, with neither
// clipping nor noise.
func NonPrivate(cfg policy.Config) policy.Config {
	cfg.DP = policy.DPConfig{Mode: policy.ModePPO, UsersPerUpdate: cfg.DP.UsersPerUpdate}
	return cfg
}

// entry is the part of a profile that is not read from the simulator.
type entry struct {
	low, high  float64
	learner    func() policy.Config
	trainWhole bool
	demoTarget float64
	riverSwimP float64
	clip       float64
	average    float64
	// baseline, when not nil, is the non-private baseline's learner
	// (before NonPrivate); users, when not 0, dprl train's default users.
	baseline      func() policy.Config
	users         int
	baselineUsers int
}

// pendulumRewardLow is Pendulum-v1's lowest reward: -(angle^2 + 0.1 speed^2
// + 0.001 torque^2) with the angle in [-pi, pi), the speed in [-8, 8] and the
// torque in [-2, 2].
var pendulumRewardLow = -(math.Pi*math.Pi + 0.1*8*8 + 0.001*2*2)

// table returns the profiles' entries by simulator name. It is built anew on
// each call, so there is no package state and every Config is fresh.
func table() map[string]entry {
	return map[string]entry{
		// 1 per step, 0 after termination.
		"cartpole": {low: 0, high: 1, learner: cartPoleLearner,
			// One user plays one whole episode, as the agent's sessions
			// are: the per-episode epsilon, the headline, is one user's
			// in one release, 4.378 at z = 1 (seeds 201-210 all reach
			// 500 with 10,000 users; docs/train.md). The square-root
			// correlated noise at K = 8 over 64-step segments of
			// continuing episodes reached 499.8 on seeds 1-120 but at
			// 53.2 per episode (--K 8 --noise sqrt --server-lr 0.5
			// --steps-per-user 64 restores it).
			trainWhole: true,
			// Gymnasium's CartPole-v1 reward threshold.
			demoTarget: 475},
		// -1 per step, 0 on reaching the line.
		"acrobot": {low: -1, high: 0, learner: acrobotLearner},
		// -(angle^2 + 0.1 speed^2 + 0.001 torque^2).
		"pendulum": {low: pendulumRewardLow, high: 0, learner: controlLearner},
		// The suite's smooth reward, a product of factors in [0, 1].
		"cartpole-balance": {low: 0, high: 1, learner: controlLearner},
		"cartpole-swingup": {low: 0, high: 1, learner: controlLearner},
		// -1 per step.
		"mountaincar":   {low: -1, high: 0, learner: controlLearner},
		"riverswim":     {low: 0, high: 1, learner: controlLearner, riverSwimP: 0.6},
		"riverswim-0.9": {low: 0, high: 1, learner: controlLearner, riverSwimP: 0.9},
		// -0.1 V - 2e4 e1^2 - 2e3 e2^2 + 1e3 E: generous, from the model's
		// steady states (healthy: E ~ 3.5e5, so ~3.5e8; unhealthy: V ~ 6.4e4).
		"hiv": {low: -1e7, high: 1e9, learner: controlLearner},
		// -1 outside the glucose band, 1 - tanh^2 inside.
		"dosing-0": {low: -1, high: 1, learner: dosingLearner},
		"dosing-1": {low: -1, high: 1, learner: dosingLearner},
		// The watch time of one video.
		// The private learner's defaults (docs/train.md, measured at
		// per-user epsilon 5): 120,000 users, K = 256, S = 0.25, server
		// step 4, and the moving average of the releases served with decay
		// 0.9 (above the last iterate on seeds 1-4 and 101-105; 0.99
		// lagged behind it on seeds 201-210). Each user enters one
		// release, so more users are more releases at the same per-user
		// epsilon: at 80,000, 9 seeds of 211-220 served a policy above the
		// best constant; at 120,000 all of 221-230 did. The non-private
		// baseline keeps K = 32, step 1 and 40,000 users, with which it
		// was measured.
		"recsys": {low: 0, high: sims.DefaultRecSysConfig().VideoLength, learner: recsysLearner, baseline: recsysBaseline,
			users: 120000, baselineUsers: 40000, average: 0.9},
		// 1 on reaching the absorbing end, else 0.
		"chain": {low: 0, high: 1, learner: controlLearner},
		// A click (1) or not (0). The features: a one-hot segment and
		// device (norm sqrt 2) and three continuous ones in [-1, 1];
		// the linear bandit clips them at norm sqrt 3 (the continuous
		// part's norm above 1, about 1 user in 4, is scaled down; chosen
		// on seeds 1001-1040, docs/agent.md).
		"bandit": {low: 0, high: 1, learner: banditLearner, clip: math.Sqrt(3)},
	}
}

// Get returns the profile of the registered simulator name. The error wraps
// sims.ErrUnknownEnv for an unknown name, ErrNoProfile for a simulator
// without a profile.
func Get(name string) (Profile, error) {
	env, err := sims.New(name)
	if err != nil {
		return Profile{}, err
	}
	e, ok := table()[name]
	if !ok {
		return Profile{}, fmt.Errorf("%w: %q", ErrNoProfile, name)
	}
	spec := policy.Spec{ObsDim: env.ObservationSpace().Dim()}
	if as := env.ActionSpace(); as.Kind == sims.Discrete {
		spec.Kind, spec.NumActions = policy.ActionDiscrete, as.N
	} else {
		spec.Kind, spec.ActionDim = policy.ActionContinuous, as.Dim()
	}
	p := Profile{Name: name, Spec: spec, Learner: e.learner(), RewardLow: e.low, RewardHigh: e.high,
		DemoTargetReturn: e.demoTarget, RiverSwimP: e.riverSwimP, TrainWholeEpisodes: e.trainWhole, MaxSteps: env.MaxSteps(),
		FeatureClip: e.clip, Average: e.average, Users: DefaultTrainUsers}
	p.Baseline = NonPrivate(p.Learner)
	if e.baseline != nil {
		p.Baseline = NonPrivate(e.baseline())
	}
	if e.users != 0 {
		p.Users = e.users
	}
	p.BaselineUsers = p.Users
	if e.baselineUsers != 0 {
		p.BaselineUsers = e.baselineUsers
	}
	return p, nil
}

// controlLearner is the learner of every environment but dosing (dprl
// train's default, policy/REPRODUCE.md): Table 3's control column
// (policy.DefaultControlConfig) with 16x16 networks, K = 32, S = 0.2, E = 3
// local epochs, entropy 0.01, advantages not standardised, z = 1, and the
// local Adam reset to m = 0, v = g~^2 (policy.ResetSecond; the paper's
// m = -g~ makes converged policies drift).
func controlLearner() policy.Config {
	cfg := policy.DefaultControlConfig()
	cfg.PPO.Hidden = []int{16, 16}
	cfg.PPO.Epochs = 3
	cfg.PPO.EntropyCoef = 0.01
	cfg.PPO.NormalizeAdvantages = false
	cfg.PPO.MomentReset = policy.ResetSecond
	cfg.DP.UsersPerUpdate = 32
	cfg.DP.ClipNorm = 0.2
	return cfg
}

// cartPoleLearner is controlLearner where the critic predicts V/10
// (ValueScale 10), the policy sees the pole angle times 10 (ObsScale 1, 1,
// 10, 1), public constants, and GAE lambda is 0.98.
func cartPoleLearner() policy.Config {
	cfg := controlLearner()
	cfg.PPO.ValueScale = 10
	cfg.PPO.ObsScale = []float64{1, 1, 10, 1}
	// GAE lambda 0.98 instead of Table 3's 0.85: advantages that lean less
	// on the privately trained critic, whose errors on the rare failure
	// states otherwise steer the policy down late in a run (seeds 1-120,
	// z = 1: 492.0 against 466.7; policy/REPRODUCE.md).
	cfg.PPO.Lambda = 0.98
	return cfg
}

// recsysLearner is recsysBaseline with the settings of the private
// learner: K = 256 users per update (at K = 32 the noise swamps the
// update) and server step 4 (chosen on seeds 1 and 2), and clipping norm
// S = 0.25 (chosen on seeds 1-4; docs/train.md). The noise is
// proportional to S, and a session's local update is small: at S = 1 no
// update of a simulated run reached the norm (their mean norm was 0.11 on
// the policy block), so S = 1 paid four times the noise for nothing; 0.15
// clips too much.
func recsysLearner() policy.Config {
	cfg := recsysBaseline()
	cfg.DP.UsersPerUpdate = 256
	cfg.DP.ClipNorm = 0.25
	cfg.PPO.ServerLR = 4
	return cfg
}

// recsysBaseline is controlLearner for the recommendation simulator's
// sessions: one simulated user is one whole session (T = the simulator's
// 400-step limit, so in dprl train an episode is one user and one release),
// undiscounted returns (gamma 1) with GAE lambda 0.9, each user's
// advantages standardised, an entropy bonus of 0.01 and the critic
// predicting V/30 (returns reach ~1,000 watch minutes). A topic's quality
// never changes the immediate reward: it refunds the user's time budget, so
// its value appears only as a longer session, hundreds of steps later; the
// critic bootstraps it from the remaining session time in the observation
// (sims.RecSys), a discount below 1 would lose it, and 64-step segments
// would cut sessions where the critic must fill in the rest. The entropy
// bonus (it matters against standardised advantages) keeps topics other
// than the best constant one explored, which is where personalization is
// found. It is the non-private baseline's learner.
func recsysBaseline() policy.Config {
	cfg := controlLearner()
	cfg.PPO.StepsPerUser = sims.DefaultRecSysConfig().MaxSteps
	cfg.PPO.Gamma, cfg.PPO.Lambda = 1, 0.9
	cfg.PPO.NormalizeAdvantages = true
	cfg.PPO.ValueScale = 30
	cfg.PPO.EntropyCoef = 0.01
	return cfg
}

// acrobotLearner is controlLearner with ValueScale 10.
func acrobotLearner() policy.Config {
	cfg := controlLearner()
	cfg.PPO.ValueScale = 10
	return cfg
}

// dosingLearner is Table 3's dosing column (policy.DefaultDosingConfig:
// 64x64, K = 8, S = 0.08, E = 4, lr 9.25e-4, lambda 0.97, z = 0.1, the
// paper's Adam reset) with public observation scales (0.01 for glucose,
// 0.001 for meals, ...) and ValueScale 10.
func dosingLearner() policy.Config {
	cfg := policy.DefaultDosingConfig()
	// Glucose ~60-320 mg/dL, insulin compartments 1-45, meals ~1,000-1,600:
	// raw, they saturate the tanh units.
	cfg.PPO.ObsScale = []float64{0.01, 0.05, 0.05, 0.1, 0.1, 0.01, 0.001, 0.01, 0.001}
	cfg.PPO.ValueScale = 10
	return cfg
}

// banditLearner is the learner of the contextual bandit: one decision per
// session, so each user's trajectory is one step (T = 1, one minibatch) and
// its advantage is r - V(x). K = 1,000 users per update, a production
// personalizer's traffic: at z = 3.73 (user-level epsilon 1 at delta 1e-5,
// one release per user) the noise std per coordinate is z S / K = 0.0037,
// about the signal's size per update, where K = 32 would drown it. 16
// hidden units, E = 4 local epochs at Adam rate 0.01, S = 1, server step 4,
// entropy 0.01, advantages not standardised (one step: its std is 0). Chosen
// on seeds 1-3 of dprl train at 50,000 users; about 40% of the local updates
// reach the clipping norm.
func banditLearner() policy.Config {
	cfg := controlLearner()
	cfg.PPO.StepsPerUser = 1
	cfg.PPO.Minibatches = 1
	cfg.PPO.Epochs = 4
	cfg.PPO.Hidden = []int{16}
	cfg.PPO.Adam.LR = 0.01
	cfg.PPO.ServerLR = 4
	cfg.DP.UsersPerUpdate = 1000
	cfg.DP.ClipNorm = 1
	return cfg
}
