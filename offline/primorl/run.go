package primorl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"dprl/internal/atomicfile"
	"dprl/internal/chart"
	"dprl/internal/fielderr"
	"dprl/internal/rng"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/offline/budget"
	"dprl/policy/sac"
	"dprl/sessionlog"
	"dprl/sims"
)

// fieldNames are Config's fields that errors name (fielderr renders them as
// flags in the command).
var fieldNames = fielderr.Fields{"Out", "SaveModel", "ModelFile", "Data", "Env", "Epsilon", "Delta", "NonPrivate", "PublicData", "CheckEvery", "Patience", "MOPO", "Plain", "MOPOFraction", "PublicN", "Batch", "Rounds", "Clip", "LocalEpochs",
	"MiniBatch", "LR", "ServerLR", "ServerMomentum", "Ensemble", "Hidden", "Lambda", "Horizon", "Branch", "Mirror", "PublicReward", "PerRollout", "Select", "Policies", "SACSteps", "SACHidden", "TargetEntropy", "EvalEpisodes", "ClipMode", "Uncertainty"}

// ConfigError is an invalid configuration, naming its fields.
type ConfigError = fielderr.Error

// PublicScales returns the public scales of env's model inputs and
// targets: design constants from the environment's definition (its
// observation and action bounds, the size of one step's change, its reward
// range, which components are a cosine and a sine), never from data.
func PublicScales(env string) (Scales, error) {
	switch env {
	case "pendulum":
		// cos, sin in [-1, 1], speed in [-8, 8], torque in [-2, 2]. One
		// 0.05 s step turns the angle by at most 0.05 x 8 = 0.4 rad (so cos
		// and sin change by at most 0.4) and changes the speed by at most
		// 0.05 (3 g / 2 l + 3 u_max / m l^2) = 0.05 (15 + 6) = 1.05; the
		// reward is in [-16.3, 0]. Scaling the targets by their real range
		// matters: with the speed's change scaled by 8 instead, a
		// 1,000-episode log gave a model in which the online SAC policy
		// scored -765 instead of its real -154.
		// Mirror: the equations of motion are odd in (theta, theta_dot,
		// torque) and the cost even, so (cos, -sin, -speed) under -torque
		// is the mirror image of a step.
		// Reward: the cost of the pre-step state and the clipped torque
		// (sims.PendulumReward).
		return Scales{In: []float64{1, 1, 8, 2}, Out: []float64{0.4, 0.4, 1.05, 16.3}, Circle: [][2]int{{0, 1}},
			Mirror: []float64{1, -1, -1, -1},
			Reward: func(obs, act, _ []float64) float64 {
				return sims.PendulumReward(math.Atan2(obs[1], obs[0]), obs[2], min(max(act[0], -2), 2))
			}}, nil
	case "cartpole-balance", "cartpole-swingup":
		// x on the rail [-1.8, 1.8], cos and sin, speeds of a few m/s and
		// rad/s, the control in [-1, 1]. One 0.01 s step moves x by at most
		// 0.05 and cos and sin by at most 0.12; the force (gear 10 on 1.1
		// kg) changes the cart's speed by about 0.1 (more when the cart
		// hits a rail stop, rarely), the pole's by at most 0.25; the reward
		// is in [0, 1]. Measured on the simulator (public) with random,
		// bang-bang and energy-pumping controls.
		// Mirror: the cart-pole reflected about the rail's centre (x,
		// theta and both speeds negated, the force too) obeys the same
		// equations, the rail is symmetric and the reward even in each.
		// Reward: the suite's smooth reward of the new state and the
		// clipped control (sims.DMCCartPoleReward).
		return Scales{In: []float64{1.8, 1, 1, 5, 10, 1}, Out: []float64{0.05, 0.12, 0.12, 0.5, 0.25, 1}, Circle: [][2]int{{1, 2}},
			Mirror: []float64{-1, 1, -1, -1, -1, -1},
			Reward: func(_, act, next []float64) float64 {
				return sims.DMCCartPoleReward(next[0], math.Atan2(next[2], next[1]), next[4], min(max(act[0], -1), 1))
			}}, nil
	}
	return Scales{}, fmt.Errorf("primorl: no public scales for %q (pendulum, cartpole-balance, cartpole-swingup)", env)
}

// Config is one PriMORL run on a session log: the private model, then the
// policy trained in it.
type Config struct {
	// Data is the dprl.sessions.v1 log (continuous actions).
	Data string `flag:"data" usage:"the dprl.sessions.v1 log (continuous actions)"`
	// Env is the public simulator: its spaces, start states and scales,
	// and the policy's evaluation (which the simulator, not the private
	// data, provides).
	Env string `flag:"env" usage:"the public simulator: pendulum, cartpole-balance or cartpole-swingup"`
	// Epsilon and Delta are the trajectory-level guarantee the model is
	// trained to; z is calibrated to them (PLD).
	Epsilon float64 `flag:"epsilon" usage:"target epsilon per trajectory"`
	Delta   float64 `flag:"delta" usage:"delta of the guarantee"`
	// NonPrivate runs the paper's "no privacy" ablation instead: clipped,
	// without noise, not charged, labelled NOT private.
	NonPrivate bool `flag:"non-private" usage:"the no-privacy ablation: clipped, no noise, not charged, NOT private"`
	// MOPO runs the MOPO baseline instead (implies NonPrivate): the
	// ensemble trained on all transitions without clipping or noise
	// (Plain), and SAC's rollouts started from logged states with
	// MOPOFraction of every batch logged transitions. Not private, not
	// charged, labelled.
	MOPO         bool `flag:"mopo" usage:"the MOPO baseline: the ensemble trained on all transitions (Adam, no clipping, no noise), SAC's rollouts from logged states with --mopo-fraction of each batch logged transitions; not charged, NOT private"`
	Plain        PlainConfig
	MOPOFraction float64 `flag:"mopo-fraction" usage:"--mopo: share of logged transitions in each SAC batch"`
	// PublicN is the public number of trajectories n (0: the log's record
	// count, taken as public, as dprl offline gtd2 does); Batch is the
	// expected number of trajectories per round, so q = Batch/n and the
	// averaged delta's denominator is q n = Batch.
	PublicN int     `flag:"n" usage:"the public number of trajectories (default: the log's record count)"`
	Batch   float64 `flag:"batch" usage:"expected trajectories per round (q = batch/n; 100 for cartpole-balance, 30 otherwise)"`
	// Rounds is T, fixed before the run and charged whatever happens.
	Rounds int `flag:"rounds" usage:"rounds T, fixed before the run (500 for cartpole-balance, 1,000 otherwise)"`
	// PublicData, if set, is a log the user declares public (never the
	// private log): every CheckEvery rounds the ensemble's error on its
	// transitions is measured, the best ensemble so far kept, and training
	// stops after Patience checks without improvement, releasing the best.
	// Stopping early saves time, not budget: T rounds are charged (the
	// number actually run depends on the private data only through the
	// released models, so it is post-processing).
	PublicData string `flag:"public-data" usage:"a log you declare public (never the private one): stop the model's training early when its error on it has not improved for --patience checks every --check-every rounds (all --rounds are still charged)"`
	CheckEvery int    `flag:"check-every" usage:"--public-data: rounds between checks"`
	Patience   int    `flag:"patience" usage:"--public-data: checks without improvement before stopping"`
	// Clip is C; ClipMode flat or per layer.
	Clip     float64 `flag:"clip" usage:"clipping norm C of a trajectory's ensemble change"`
	ClipMode ClipMode
	// LocalEpochs, MiniBatch and LR are the local gradient descent's.
	LocalEpochs int     `flag:"local-epochs" usage:"local epochs E per sampled trajectory"`
	MiniBatch   int     `flag:"minibatch" usage:"local minibatch size B"`
	LR          float64 `flag:"model-lr" usage:"the models' local gradient-descent step size"`
	// ServerLR and ServerMomentum apply each round's noised average as a
	// server optimizer (TDPConfig): post-processing, no privacy cost.
	ServerLR       float64 `flag:"server-lr" usage:"server step size eta of theta <- theta + eta v, v <- beta v + the round's noised average (post-processing, no privacy cost; 1, the paper's, except 2 for cartpole-balance)"`
	ServerMomentum float64 `flag:"server-momentum" usage:"server momentum beta in [0, 1) of v <- beta v + the round's noised average (post-processing, no privacy cost; 0: the paper's)"`
	// Model is the ensemble.
	Model ModelConfig
	// Uncertainty, Lambda and Horizon define the pessimistic MDP.
	Uncertainty Uncertainty
	Lambda      float64 `flag:"lambda" usage:"penalty coefficient of the pessimistic reward r - lambda u"`
	Horizon     int     `flag:"horizon" usage:"model rollout length h"`
	// Branch is the probability that a rollout starts from a state an
	// earlier rollout reached instead of a public start state
	// (ModelEnv.SetBranch; post-processing); 0: every rollout from a start
	// state, as the paper. The default is 0.5 for Pendulum and Balance, 0
	// for Swing-up and MOPO.
	Branch float64 `flag:"branch" usage:"probability that a model rollout starts where earlier rollouts went (a reservoir of the states they reached) instead of at a public start state; post-processing of the release, no privacy cost (0: the paper's rollouts from start states only; default 0.5 for pendulum and cartpole-balance, 0 for cartpole-swingup and --mopo)"`
	// Mirror averages every model prediction with its mirror image
	// (ModelEnv.SetMirror; Scales.Mirror, the environment's public
	// symmetry): post-processing of the release, no privacy cost. Default
	// on; MOPO's default off (the baseline as published).
	Mirror bool `flag:"mirror" usage:"average each model prediction with its mirror image under the environment's public symmetry (cancels the drift the training noise puts into the model); post-processing, no privacy cost (default on, off for --mopo; --mirror=false: the paper's model as released)"`
	// PublicReward makes the policy's training use the environment's
	// public reward function (Scales.Reward; ModelEnv.SetPublicReward)
	// instead of the ensemble's predicted reward: post-processing, no
	// privacy cost. Default on for Balance, off otherwise.
	PublicReward bool `flag:"public-reward" usage:"train the policy on the task's own reward function of the model's states (public: the task's definition) instead of the reward the model predicts; post-processing, no privacy cost (default on for cartpole-balance, off otherwise and for --mopo)"`
	// PerRollout makes each model rollout follow one model of the
	// ensemble, drawn at its start, instead of one drawn at every step
	// (ModelEnv.SetModelPerRollout): post-processing, no privacy cost.
	PerRollout bool `flag:"model-per-rollout" usage:"follow one model of the ensemble for a whole rollout (drawn at its start) instead of drawing one at every step, so that the policy must do well in each model's dynamics; post-processing, no privacy cost"`
	// Select, if > 0, rates the policy at each point of its curve by its
	// mean return over Select whole episodes (the real task's length) of
	// the model's mean dynamics (ModelEnv.SetMeanStep, no penalty) from
	// the public start states, and releases the best rated point's policy
	// instead of the last (sac.TrainOptions.KeepBest): post-processing, no
	// privacy cost. 0: the last policy, as the paper. Default 10 for
	// Balance, 0 otherwise.
	Select int `flag:"select" usage:"rate the policy at each of its 20 checkpoints by its return over this many whole episodes of the model's mean dynamics, and release the best rated one instead of the last (post-processing, no privacy cost; 0: the last, as the paper; default 10 for cartpole-balance, 0 otherwise)"`
	// Policies is the number of SAC policies trained in the model, each
	// from its own generator; with more than one, Select must be set, and
	// the one with the best rated point is released: post-processing, no
	// privacy cost. 1: one policy, as the paper; the default except on
	// Balance (2).
	Policies int `flag:"policies" usage:"train this many SAC policies in the model, each from its own seed, and release the one whose best checkpoint is rated highest in the model (needs --select; post-processing, no privacy cost; runs up to one per core at once; default 2 for cartpole-balance, 1 otherwise and for --mopo)"`
	// SACSteps and SACHidden configure the policy's training in the model.
	SACSteps  int   `flag:"sac-steps" usage:"SAC steps in the model (60,000 for pendulum and cartpole-balance, 30,000 for cartpole-swingup)"`
	SACHidden []int `flag:"sac-hidden" usage:"SAC's hidden widths"`
	// TargetEntropy is SAC's entropy target; NaN: minus the action
	// dimension, SAC's usual choice, the default for Pendulum, Swing-up
	// and MOPO; -3 (the paper's Table 5) for Balance.
	TargetEntropy float64 `flag:"target-entropy" usage:"SAC's entropy target (default -3, the paper's, for cartpole-balance; minus the action dimension otherwise and for --mopo; NaN: minus the action dimension)"`
	// EvalEpisodes is the number of simulator episodes of the evaluation.
	EvalEpisodes int `flag:"eval-episodes" usage:"simulator episodes of the policy's evaluation"`
	// Seed keys every generator when Seeded (a repeatable simulation, so
	// labelled in the result and the ledger); otherwise the noise and
	// sampling come from the secure generator.
	Seed   uint64 `flag:"seed" usage:"seed every generator (a repeatable simulation, recorded as seeded in the ledger; default: the secure generator)"`
	Seeded bool
	// Out, if set, is a new file the released policy is written to (a
	// policy/sac actor snapshot, atomically, after the run).
	Out string `flag:"out" usage:"write the released policy to this new file (a SAC actor snapshot: versioned, CRC-32C checked)"`
	// SaveModel, if set, is a new file the released ensemble is written
	// to (MarshalModel, atomically, once it is trained), with the run's
	// provenance.
	SaveModel string `flag:"save-model" usage:"write the released model (the ensemble, with the run's guarantee) to this new file, to train policies in later with --model at no privacy cost"`
	// ModelFile, if set, is a model file (SaveModel) to train the policy in
	// instead of training a model: no log is read and nothing is charged
	// (post-processing of that release), and the policy carries the
	// file's provenance. Data, PublicData and MOPO do not apply.
	ModelFile string `flag:"model" usage:"train the policy in this released model file (--save-model) instead of a log: reads no data, charges nothing, and the policy carries the model's guarantee"`
	// Progress, if set, receives each phase's progress.
	Progress func(phase string, done, total int)
}

// DefaultConfig returns the paper's Pendulum settings (Tables 4-5: q n = 30
// trajectories a round, C = 1 per layer, E = 1, B = 16, 3 models of 2 x 64,
// u_MPD, lambda 2, h 30) with T = 1,000 rounds and 60,000 SAC steps, and
// two changes. A local step size of 1e-2 where the paper has 1e-3: with
// plain local gradient descent, 1e-3 left the ensemble undertrained after
// 500 rounds on a 1,000-episode Pendulum log (the policy in it scored 169
// against 877 with 1e-2, one seed each, no privacy). Half the model
// rollouts branched from states earlier ones reached (Branch 0.5): from
// start states only, the policy failed from some start states on 3 seeds
// of 5 at epsilon 5 (docs/offline.md). SAC runs 60,000 steps in the model:
// at 30,000 its return on the simulator still swung between checkpoints,
// and a run ending on a bad one failed from some start states (one seed
// of 5 below 750 at epsilon 5; docs/offline.md). The cart-poles keep
// 30,000 (ForEnv), where longer training exploited the model's errors.
// And every model prediction is averaged with its mirror image (Mirror):
// the drift the noise put into the private model made one policy in five
// fail on the simulator (docs/offline.md).
func DefaultConfig() Config {
	return Config{Env: "pendulum", Epsilon: 5, Delta: 1e-5, Batch: 30, Rounds: 1000, Clip: 1, ClipMode: ClipPerLayer, LocalEpochs: 1,
		MiniBatch: 16, LR: 1e-2, ServerLR: 1, Model: DefaultModelConfig(), Uncertainty: MPD, Lambda: 2, Horizon: 30, Branch: 0.5, Mirror: true, Policies: 1, SACSteps: 60000,
		SACHidden: []int{64, 64}, TargetEntropy: math.NaN(), EvalEpisodes: 10, CheckEvery: 10, Patience: 10, Plain: DefaultPlainConfig(), MOPOFraction: 0.05}
}

// ForEnv returns c with the paper's settings for env where they differ from
// Pendulum's (Tables 4-5 and Section 5): the DMC cart-poles take 5 models of
// 2 x 128, flat clipping and rollouts of 20 steps, Swing-up the u_MA
// penalty. Swing-up keeps the paper's rollouts from start states only
// (Branch 0) and 30,000 SAC steps. Balance's policy phase is the one
// measured to balance on every seed (docs/offline.md): half the rollouts
// branched (Branch 0.5), the task's public reward function
// (PublicReward), the paper's entropy target -3, 60,000 SAC steps, two
// SAC runs (Policies 2) and the checkpoint rated best on 10 whole
// episodes of the model released (Select 10); from start states only
// with 30,000 steps and SAC's usual target, one SAC seed in four balanced
// on the private model. Balance's model trains on Poisson samples of 100
// trajectories (Batch) for 500 rounds with the server step 2 (ServerLR)
// instead of the paper's 30 for 1,000. keep reports the fields to leave as they are (set
// by the user; nil: none) among "Ensemble", "Hidden", "ClipMode",
// "Horizon", "Branch", "Batch", "Rounds", "ServerLR", "SACSteps",
// "Uncertainty", "PublicReward", "TargetEntropy", "Select" and "Policies".
func (c Config) ForEnv(env string, keep func(field string) bool) Config {
	c.Env = env
	if env != "cartpole-balance" && env != "cartpole-swingup" {
		return c
	}
	if keep == nil {
		keep = func(string) bool { return false }
	}
	if !keep("Ensemble") {
		c.Model.Ensemble = 5
	}
	if !keep("Hidden") {
		c.Model.Hidden = []int{128, 128}
	}
	if !keep("ClipMode") {
		c.ClipMode = ClipFlat
	}
	if !keep("Horizon") {
		c.Horizon = 20
	}
	if env == "cartpole-swingup" {
		if !keep("Branch") {
			c.Branch = 0
		}
		if !keep("SACSteps") {
			c.SACSteps = 30000
		}
		if !keep("Uncertainty") {
			c.Uncertainty = MA
		}
		return c
	}
	if !keep("Branch") {
		c.Branch = 0.5
	}
	// The model: larger Poisson samples, fewer rounds and the server
	// step 2 (at epsilon 8.2 the noise per coordinate of a round's
	// average falls from 0.015 to 0.0054, and the model's error from
	// 0.0148 to 0.0083: docs/offline.md).
	if !keep("Batch") {
		c.Batch = 100
	}
	if !keep("Rounds") {
		c.Rounds = 500
	}
	if !keep("ServerLR") {
		c.ServerLR = 2
	}
	if !keep("SACSteps") {
		c.SACSteps = 60000
	}
	if !keep("PublicReward") {
		c.PublicReward = true
	}
	if !keep("TargetEntropy") {
		c.TargetEntropy = -3
	}
	if !keep("Select") {
		c.Select = 10
	}
	if !keep("Policies") {
		c.Policies = 2
		if c.Select == 0 {
			c.Policies = 1 // --select 0: nothing to choose by
		}
	}
	return c
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	bad := func(cond bool, f string, a ...any) {
		if cond {
			errs = append(errs, fieldNames.Errorf(f, a...))
		}
	}
	if c.ModelFile != "" {
		bad(c.Data != "" || c.PublicData != "" || c.MOPO || c.SaveModel != "", "{ModelFile}: the policy is trained in a released model: {Data}, {PublicData}, {MOPO} and {SaveModel} do not apply")
	} else {
		bad(c.Data == "", "{Data} missing: the session log to learn from (or {ModelFile}, a released model)")
	}
	sc, scErr := PublicScales(c.Env)
	bad(scErr != nil, "{Env} %q: %v", c.Env, scErr)
	bad(scErr == nil && c.Mirror && sc.Mirror == nil, "{Mirror}: %s has no public mirror symmetry", c.Env)
	bad(c.Select < 0, "{Select} %d: must be >= 0", c.Select)
	bad(math.IsInf(c.TargetEntropy, 0), "{TargetEntropy} %v: want finite (NaN: minus the action dimension)", c.TargetEntropy)
	bad(c.Policies < 0 || c.Policies > 64, "{Policies} %d: must be in [1, 64] (0: 1)", c.Policies)
	bad(c.Policies > 1 && c.Select == 0, "{Policies} %d: choosing among policies needs {Select} > 0 (their rating in the model)", c.Policies)
	bad(scErr == nil && c.PublicReward && sc.Reward == nil, "{PublicReward}: %s has no public reward function", c.Env)
	if c.MOPO {
		if err := c.Plain.Validate(); err != nil {
			errs = append(errs, fieldNames.Errorf("{Plain}: %v", err))
		}
		bad(!(c.MOPOFraction >= 0 && c.MOPOFraction < 1), "{MOPOFraction} %v: must be in [0, 1)", c.MOPOFraction)
	}
	if !c.NonPrivate && !c.MOPO {
		bad(!(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0), "{Epsilon} %v: must be finite and > 0", c.Epsilon)
		bad(!(c.Delta > 0 && c.Delta < 1), "{Delta} %v: must be in (0, 1)", c.Delta)
		bad(c.Batch > noise.MaxPoissonBatch, "{Batch} %v: a round's expected batch is at most %d (the exact noise's rounding condition)", c.Batch, noise.MaxPoissonBatch)
	}
	bad(c.PublicN < 0, "{PublicN} %d: must be >= 0 (0: the record count)", c.PublicN)
	bad(!(c.Batch > 0) || math.IsInf(c.Batch, 0), "{Batch} %v: must be finite and > 0", c.Batch)
	bad(c.Rounds < 1, "{Rounds} %d: must be >= 1", c.Rounds)
	bad(c.CheckEvery < 1 || c.Patience < 1, "{CheckEvery} %d and {Patience} %d: must be >= 1", c.CheckEvery, c.Patience)
	bad(c.PublicData != "" && c.MOPO, "{PublicData} does not apply to {MOPO} (its model is not trained in rounds)")
	if c.PublicData != "" && c.Data != "" {
		a, errA := os.Stat(c.PublicData)
		b, errB := os.Stat(c.Data)
		bad(errA == nil && errB == nil && os.SameFile(a, b), "{PublicData} %q is the private log %q: a public log must be another file", c.PublicData, c.Data)
	}
	bad(!(c.Clip > 0) || math.IsInf(c.Clip, 0), "{Clip} %v: must be finite and > 0", c.Clip)
	bad(c.LocalEpochs < 1 || c.MiniBatch < 1, "{LocalEpochs} %d and {MiniBatch} %d: must be >= 1", c.LocalEpochs, c.MiniBatch)
	bad(!(c.ServerLR > 0) || math.IsInf(c.ServerLR, 0), "{ServerLR} %v: must be finite and > 0", c.ServerLR)
	bad(!(c.ServerMomentum >= 0 && c.ServerMomentum < 1), "{ServerMomentum} %v: must be in [0, 1)", c.ServerMomentum)
	bad(!(c.LR > 0) || math.IsInf(c.LR, 0), "{LR} %v: must be finite and > 0", c.LR)
	if err := c.Model.Validate(); err != nil {
		errs = append(errs, fieldNames.Errorf("{Ensemble}/{Hidden}: %v", err))
	}
	bad(!(c.Lambda >= 0) || math.IsInf(c.Lambda, 0), "{Lambda} %v: must be finite and >= 0", c.Lambda)
	bad(c.Horizon < 1, "{Horizon} %d: must be >= 1", c.Horizon)
	bad(!(c.Branch >= 0 && c.Branch <= 1), "{Branch} %v: must be in [0, 1]", c.Branch)
	bad(c.SACSteps < 2, "{SACSteps} %d: must be >= 2", c.SACSteps)
	bad(len(c.SACHidden) == 0 || slices.ContainsFunc(c.SACHidden, func(h int) bool { return h < 1 }), "{SACHidden} %v: want widths >= 1", c.SACHidden)
	bad(c.EvalEpisodes < 1, "{EvalEpisodes} %d: must be >= 1", c.EvalEpisodes)
	for _, f := range []struct{ path, name string }{{c.Out, "{Out}"}, {c.SaveModel, "{SaveModel}"}} {
		if f.path != "" {
			_, err := os.Stat(f.path)
			bad(err == nil, "%s %q exists: choose a new file", f.name, f.path)
		}
	}
	bad(c.Out != "" && c.Out == c.SaveModel, "{Out} and {SaveModel} are one file %q", c.Out)
	return errors.Join(errs...)
}

// NotPrivate labels a non-private run's result.
const NotPrivate = "NOT differentially private: the no-privacy ablation (clipped, no noise), not charged"

// NotPrivateMOPO labels a MOPO baseline run's result.
const NotPrivateMOPO = "NOT differentially private: the MOPO baseline (no clipping, no noise, logged states and transitions in the policy's training), not charged"

// Result is a run's outcome. Everything in it is covered by the printed
// guarantee (the model is the release; the policy, its evaluation on the
// simulator and the model's error on simulator transitions are
// post-processing) or, for a non-private run, labelled.
type Result struct {
	Env string `json:"env"`
	// Method is "primorl" or "mopo".
	Method  string  `json:"method"`
	Private bool    `json:"private"`
	Warning string  `json:"warning,omitempty"`
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	// RDPEpsilon is the RDP accountant's epsilon for the same events, a
	// cross-check (>= Epsilon).
	RDPEpsilon float64 `json:"rdp_epsilon,omitempty"`
	Accountant string  `json:"accountant,omitempty"`
	Z          float64 `json:"z"`
	Q          float64 `json:"q"`
	Rounds     int     `json:"rounds"`
	N          int     `json:"n"`
	Seeded     bool    `json:"seeded"`
	LedgerSeq  uint64  `json:"ledger_seq,omitempty"`
	// ServerLR and ServerMomentum are the model training's server
	// optimizer (Config.ServerLR, ServerMomentum; absent for --model and
	// --mopo, which run none).
	ServerLR       float64 `json:"server_lr,omitempty"`
	ServerMomentum float64 `json:"server_momentum,omitempty"`
	// ModelError is the released ensemble's mean squared error of the
	// scaled (s' - s, r) on 20 simulator episodes of uniformly random
	// actions (public data), with its predictions mirrored as the
	// policy's training used them (Mirror).
	ModelError float64 `json:"model_error"`
	// Branch is the rollouts' branching probability (Config.Branch).
	Branch float64 `json:"branch"`
	// Mirror reports whether the model's predictions were averaged with
	// their mirror images (Config.Mirror), in the policy's training and
	// in ModelError.
	Mirror bool `json:"mirror"`
	// PublicReward reports whether the policy was trained on the task's
	// public reward function rather than the model's (Config.PublicReward).
	PublicReward bool `json:"public_reward,omitempty"`
	// SelectedSteps is the SAC step count of the released policy when it
	// was chosen by its rating in the model (Config.Select; 0: the last).
	SelectedSteps int `json:"selected_steps,omitempty"`
	// PolicyRatings are the best ratings in the model of each of the
	// Config.Policies candidates (the released one is the highest): a
	// function of the release alone.
	PolicyRatings []float64 `json:"policy_ratings,omitempty"`
	// Return is the policy's mean return on EvalEpisodes simulator
	// episodes, with its standard deviation; Score normalises Pendulum's
	// as 1000 (R + 1500) / 1500 (the paper's), and is the return for the
	// others.
	Return    float64 `json:"return"`
	ReturnStd float64 `json:"return_std"`
	Score     float64 `json:"score"`
	// RoundsRun is the number of rounds run: Rounds, or fewer when the
	// public log stopped training early (Rounds are charged either way).
	RoundsRun  int    `json:"rounds_run"`
	PublicData string `json:"public_data,omitempty"`
	// Timing is the run's wall-clock time: operational, NOT covered by the
	// guarantee (see Timing).
	Timing Timing     `json:"timing"`
	Agent  *sac.Agent `json:"-"`
	// Curve is the policy's deterministic return on the simulator (3
	// episodes) during its training in the model.
	Curve []sac.CurvePoint `json:"policy_curve,omitempty"`
	// Out is the released policy's snapshot file, if written.
	Out string `json:"out,omitempty"`
	// SavedModel is the released model's file, if written (SaveModel).
	SavedModel string `json:"saved_model,omitempty"`
	// Model is the model file the policy was trained in (Config.ModelFile):
	// the guarantee above is that file's provenance, and this run charged
	// nothing.
	Model string `json:"model,omitempty"`
}

// TimingNote labels Timing wherever it is shown.
const TimingNote = "operational, NOT covered by the guarantee: the model's time grows with the sampled trajectories' lengths"

// Timing is how long a run's phases took. It is not part of the release:
// the time of a round of DP training grows with the lengths of the
// trajectories its Poisson sample drew (0.32 s against 1.52 s on two
// neighbouring logs), so a time is a statistic of the private data that no
// accountant covers. It is printed and written labelled with TimingNote.
type Timing struct {
	// Note is TimingNote.
	Note         string  `json:"note"`
	ModelSeconds float64 `json:"model_seconds"`
	SACSeconds   float64 `json:"sac_seconds"`
}

// WriteText writes the result as the command prints it.
func (r *Result) WriteText(w io.Writer) error {
	if r.Model != "" {
		// The guarantee is the model file's: nothing was charged.
		if r.Private {
			fmt.Fprintf(w, "primorl on %s: a policy trained in the released model %s, (epsilon %s, delta %g)-DP per trajectory (ledger entry %d; post-processing, nothing charged)",
				r.Env, r.Model, accountant.FormatEpsilon(r.Epsilon), r.Delta, r.LedgerSeq)
			if r.Seeded {
				fmt.Fprint(w, " (seeded: a simulation, not a production release)")
			}
			fmt.Fprintln(w)
		} else {
			fmt.Fprintf(w, "primorl on %s: a policy trained in the model %s: %s\n", r.Env, r.Model, r.Warning)
		}
	} else if r.Private {
		fmt.Fprintf(w, "primorl on %s: epsilon %s at delta %g per trajectory (%s; rdp cross-check %s), z = %.4g, q = %.4g, T = %d, n = %d",
			r.Env, accountant.FormatEpsilon(r.Epsilon), r.Delta, r.Accountant, accountant.FormatEpsilon(r.RDPEpsilon), r.Z, r.Q, r.Rounds, r.N)
		if r.Seeded {
			fmt.Fprint(w, " (seeded: a simulation, not a production release)")
		}
		fmt.Fprintln(w)
	} else {
		if r.Method == "mopo" {
			fmt.Fprintf(w, "mopo on %s: %s\n", r.Env, r.Warning)
		} else {
			fmt.Fprintf(w, "primorl on %s: %s (q = %.4g, T = %d)\n", r.Env, r.Warning, r.Q, r.Rounds)
		}
	}
	if r.PublicData != "" {
		fmt.Fprintf(w, "early stopping on the public log %s: %d of %d rounds run (%d charged)\n", r.PublicData, r.RoundsRun, r.Rounds, r.Rounds)
	}
	score := "" // the score is the return, except on Pendulum
	if r.Score != r.Return {
		score = fmt.Sprintf(" (score %.1f = 1000 (return + 1500) / 1500, the PriMORL paper's Pendulum score)", r.Score)
	}
	_, err := fmt.Fprintf(w, "model error %.4g (scaled mse on simulator transitions); policy return on the simulator %.1f ± %.1f%s\ntiming (%s): model %.1f s, policy %.1f s\n",
		r.ModelError, r.Return, r.ReturnStd, score, TimingNote, r.Timing.ModelSeconds, r.Timing.SACSeconds)
	if err == nil && r.SelectedSteps > 0 {
		// The ratings are computed in the released model only: post-processing.
		_, err = fmt.Fprintf(w, "released the checkpoint after %d SAC steps, the best rated on whole episodes of the model's mean dynamics\n", r.SelectedSteps)
	}
	if err == nil && r.SavedModel != "" {
		_, err = fmt.Fprintf(w, "model written to %s\n", r.SavedModel)
	}
	if err == nil && r.Out != "" {
		_, err = fmt.Fprintf(w, "policy written to %s\n", r.Out)
	}
	return err
}

// Mechanism is a PriMORL run as the budget protocol sees it.
type Mechanism struct {
	c       Config
	public  []Trajectory // the public log's transitions, scaled
	popt    sessionlog.ReaderOptions
	spec    sims.Env
	scales  Scales
	od, ad  int
	q, z    float64
	n       int
	entry   ledger.Entry
	rdp     float64
	results *Result
}

// New validates c and returns its mechanism and the log's reader options.
func New(c Config) (*Mechanism, sessionlog.ReaderOptions, error) {
	if err := c.Validate(); err != nil {
		return nil, sessionlog.ReaderOptions{}, err
	}
	env, err := sims.New(c.Env)
	if err != nil {
		return nil, sessionlog.ReaderOptions{}, fieldNames.Errorf("{Env}: %v", err)
	}
	sc, _ := PublicScales(c.Env)
	m := &Mechanism{c: c, spec: env, scales: sc, od: env.ObservationSpace().Dim(), ad: env.ActionSpace().Dim()}
	// Behaviour probabilities are not used: logs without them (an SVT
	// release) are accepted.
	opt := sessionlog.ReaderOptions{Name: c.Data, Spec: sessionlog.Spec{ObsDim: m.od, Discrete: -1, ActDim: m.ad}, OptionalProb: true}
	if c.PublicData != "" {
		// Read and validated before anything is charged.
		popt := opt
		popt.Name = c.PublicData
		m.popt = popt
		ix, err := sessionlog.ScanLog(c.PublicData, popt, m.Check)
		if err == nil {
			m.public, err = m.trajectories(ix, nil)
		}
		if err != nil {
			return nil, sessionlog.ReaderOptions{}, fieldNames.Errorf("{PublicData}: %v", err)
		}
	}
	return m, opt, nil
}

// Check checks a record: the environment's dimensions (the reader holds
// the log to them) and at least one step.
func (m *Mechanism) Check(s *sessionlog.Session) error {
	if len(s.Steps) == 0 {
		return errors.New("a session without steps")
	}
	return nil
}

// Entry is the run's cost from public inputs and the record count: the
// Poisson-subsampled Gaussian (q = Batch/n, z, T) at the target epsilon.
//
// The public log is checked here, before anything is charged
// (budget.Dataset.CheckPublic): a log holding a record of the private
// input or of a dataset the ledger knows (a copy, a subset, an id-renamed,
// probability-stripped or reformatted copy) is refused, and the public
// transitions early stopping reads are those of the log as checked.
func (m *Mechanism) Entry(ix *sessionlog.Index, ds budget.Dataset) (ledger.Entry, error) {
	c := m.c
	if c.PublicData != "" {
		pix, err := ds.CheckPublic(c.PublicData, m.popt)
		if err == nil {
			m.public, err = m.trajectories(pix, nil)
		}
		if err != nil {
			return ledger.Entry{}, fieldNames.Errorf("{PublicData}: %w", err)
		}
	}
	m.n = ix.Len()
	if c.PublicN > 0 {
		m.n = c.PublicN
	}
	m.q = c.Batch / float64(m.n)
	if m.q > 1 {
		return ledger.Entry{}, fieldNames.Errorf("{Batch} %v exceeds the n = %d trajectories", c.Batch, m.n)
	}
	z, err := accountant.Calibrate(accountant.PLD{}, c.Epsilon, c.Delta, m.q, c.Rounds)
	if err != nil {
		return ledger.Entry{}, fieldNames.Errorf("{Epsilon}: calibrating the noise: %v", err)
	}
	m.z = z
	ev := accountant.Event{Q: m.q, Z: z, Steps: c.Rounds}
	g, err := (accountant.PLD{}).Epsilon(c.Delta, ev)
	if err != nil {
		return ledger.Entry{}, err
	}
	if r, err := (accountant.RDP{}).Epsilon(c.Delta, ev); err == nil {
		m.rdp = r.Epsilon
	}
	return ledger.Entry{Unit: ledger.UnitTrajectory, Method: accountant.MethodPLD, Participants: m.n, Events: []accountant.Event{ev},
		Epsilon: g.Epsilon, Delta: c.Delta, Seeded: c.Seeded, Sampler: noise.SamplerGaussianTable,
		Mechanism: fmt.Sprintf("primorl: %d rounds of TDP model ensemble training (Poisson q=%.4g = batch %g / n %d, EnsembleClip %s C=%g, noise z=%.4g C/(q n))",
			c.Rounds, m.q, c.Batch, m.n, c.ClipMode, c.Clip, z)}, nil
}

// Validate has nothing left to check: the scan checked every record.
func (m *Mechanism) Validate(*sessionlog.Index, *ledger.Entry) error { return nil }

// gen returns the generator of purpose: seeded when the run is, else
// secure.
func (m *Mechanism) gen(purpose string) *rand.Rand {
	if m.c.Seeded {
		return rng.Seeded(m.c.Seed, "dprl offline primorl "+purpose)
	}
	return rng.Secure()
}

// Compute trains the model (the release), then the policy in it, and
// evaluates both on the simulator.
func (m *Mechanism) Compute(ctx context.Context, ix *sessionlog.Index, ch *budget.Charge) (*Result, error) {
	c := m.c
	res := &Result{Env: c.Env, Method: "primorl", Private: !c.NonPrivate && !c.MOPO, Rounds: c.Rounds, Seeded: c.Seeded}
	if ch.Charged() {
		e := ch.Entry
		res.Epsilon, res.Delta, res.Accountant, res.LedgerSeq = e.Epsilon, e.Delta, string(e.Method), e.Seq
		res.Z, res.Q, res.N, res.RDPEpsilon = e.Events[0].Z, e.Events[0].Q, e.Participants, m.rdp
	} else {
		res.Warning = NotPrivate
		if c.MOPO {
			res.Warning, res.Method, res.Rounds = NotPrivateMOPO, "mopo", 0
		}
		m.n = ix.Len()
		if c.PublicN > 0 {
			m.n = c.PublicN
		}
		res.Q, res.N = min(c.Batch/float64(m.n), 1), m.n
	}
	var logged *loggedTransitions
	if c.MOPO {
		logged = newLoggedTransitions(m.od, m.ad, maxLogged, m.gen("mopo reservoir"))
	}
	data, err := m.trajectories(ix, logged)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	var e *Ensemble
	var params []float64
	if c.MOPO {
		e, params, err = m.trainPlain(ctx, data)
	} else {
		res.ServerLR, res.ServerMomentum = c.ServerLR, c.ServerMomentum
		e, params, res.RoundsRun, err = m.trainModel(ctx, data, res)
	}
	if err != nil {
		return nil, err
	}
	res.Timing.Note, res.Timing.ModelSeconds = TimingNote, time.Since(t0).Seconds()
	res.PublicData = c.PublicData
	// The files record their provenance: the run's charge, or that it is
	// not private (--non-private, --mopo: no charge).
	prov := ledger.Provenance{}
	if ch.Charged() {
		prov = ledger.ProvenanceOf(ch.Entry)
	}
	if c.SaveModel != "" {
		b, err := MarshalModel(c.Env, e, params, prov)
		if err == nil {
			err = atomicfile.WriteFile(c.SaveModel, b, 0o644)
		}
		if err != nil {
			return nil, err
		}
		res.SavedModel = c.SaveModel
	}
	if err := m.policyPhase(ctx, e, params, logged, prov, res); err != nil {
		return nil, err
	}
	return res, nil
}

// policyPhase is the post-processing of a released ensemble: SAC in its
// pessimistic MDP (with logged transitions for MOPO), the policy's
// evaluation on the simulator, and the policy's file (Config.Out) with
// provenance prov.
func (m *Mechanism) policyPhase(ctx context.Context, e *Ensemble, params []float64, logged *loggedTransitions, prov ledger.Provenance, res *Result) error {
	c := m.c
	res.ModelError = m.modelError(e, params)
	res.Branch, res.Mirror, res.PublicReward = c.Branch, c.Mirror, c.PublicReward
	t1 := time.Now()
	tp, err := m.trainPolicy(ctx, e, params, logged)
	if err != nil {
		return err
	}
	res.SelectedSteps, res.PolicyRatings = tp.steps, tp.ratings
	res.Timing.Note, res.Timing.SACSeconds = TimingNote, time.Since(t1).Seconds()
	agent := tp.agent
	res.Agent, res.Curve = agent, tp.curve
	info, _ := sims.Lookup(c.Env)
	res.Return, res.ReturnStd = sac.Evaluate(info.New(), agent, c.EvalEpisodes, m.gen("eval"))
	res.Score = res.Return
	if c.Env == "pendulum" {
		res.Score = 1000 * (res.Return + 1500) / 1500
	}
	if c.Out != "" {
		b, err := agent.MarshalActor(prov)
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(c.Out, b, 0o644); err != nil {
			return err
		}
		res.Out = c.Out
	}
	return nil
}

// TrainInModel trains and evaluates a policy in the released model of
// c.ModelFile (MarshalModel) with c's policy settings: post-processing of
// that release, so it reads no log and charges nothing, and the result
// and the policy's file carry the model's provenance. The model must be
// of c.Env.
func TrainInModel(ctx context.Context, c Config) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.ModelFile == "" {
		return nil, fieldNames.Errorf("{ModelFile} missing")
	}
	b, err := os.ReadFile(c.ModelFile)
	if err != nil {
		return nil, fieldNames.Errorf("{ModelFile}: %w", err)
	}
	model, err := LoadModel(b)
	if err != nil {
		return nil, fieldNames.Errorf("{ModelFile} %s: %w", c.ModelFile, err)
	}
	if model.Env != c.Env {
		return nil, fieldNames.Errorf("{ModelFile} %s models %s, not {Env} %s", c.ModelFile, model.Env, c.Env)
	}
	m, _, err := New(c)
	if err != nil {
		return nil, err
	}
	p := model.Provenance
	res := &Result{Env: c.Env, Method: "primorl", Private: p.Private, Seeded: c.Seeded, Model: c.ModelFile}
	if p.Private {
		res.Epsilon, res.Delta, res.LedgerSeq = p.Epsilon, p.Delta, p.LedgerSeq
	} else {
		res.Warning = NotPrivateModel
	}
	if err := m.policyPhase(ctx, model.Ensemble, model.Params, nil, p, res); err != nil {
		return nil, err
	}
	return res, nil
}

// NotPrivateModel labels a policy trained in a model file that records no
// guarantee (one a --non-private or --mopo run saved).
const NotPrivateModel = "NOT differentially private: trained in a model file that a non-private run released"

// trajectories reads the log's transitions, scaled by the public scales,
// one Trajectory per record with at least one transition.
func (m *Mechanism) trajectories(ix *sessionlog.Index, logged *loggedTransitions) ([]Trajectory, error) {
	var data []Trajectory
	obs, act := make([]float64, m.od), make([]float64, m.ad)
	if err := ix.Each(func(_ int, s *sessionlog.Session) error {
		var d Trajectory
		for t, st := range s.Steps {
			var next []float64
			switch {
			case t+1 < len(s.Steps):
				next = s.Steps[t+1].Obs
			case !s.Terminal && s.FinalObs != nil:
				next = s.FinalObs
			default:
				continue // a terminal last step: no next observation
			}
			copy(obs, st.Obs)
			copy(act, st.Action.Vec)
			d.X, d.Y = m.scales.Encode(d.X, d.Y, obs, act, next, st.Reward)
			d.N++
			if logged != nil {
				logged.add(st.Obs, st.Action.Vec, st.Reward, next, s.Terminal && t+1 == len(s.Steps))
			}
		}
		if d.N > 0 {
			data = append(data, d)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, errors.New("primorl: the log holds no transition")
	}
	return data, nil
}

// trainModel is the release: TDP Model Ensemble Training of a fresh
// ensemble on data at res's q and z, stopped early on the public log if
// one was given. It returns the ensemble and the rounds run.
func (m *Mechanism) trainModel(ctx context.Context, data []Trajectory, res *Result) (*Ensemble, []float64, int, error) {
	c := m.c
	e, err := NewEnsemble(c.Model, m.od+m.ad, m.od+1)
	if err != nil {
		return nil, nil, 0, err
	}
	params := make([]float64, e.NumParams())
	e.Init(params, m.gen("init"))
	// The denominator is q n = Batch with the public n, whatever the log's
	// length.
	tdp := TDPConfig{Q: res.Q, Z: res.Z, C: c.Clip, Rounds: c.Rounds, LocalEpochs: c.LocalEpochs, Batch: c.MiniBatch, LR: c.LR, Clip: c.ClipMode,
		Denominator: res.Q * float64(m.n), ServerLR: c.ServerLR, ServerMomentum: c.ServerMomentum}
	tr, err := NewTrainer(e, tdp, m.gen("noise"))
	if err != nil {
		return nil, nil, 0, err
	}
	sample := m.gen("sampling")
	var best []float64
	bestErr, since := math.Inf(1), 0
	for r := range c.Rounds {
		if err := ctx.Err(); err != nil {
			return nil, nil, r, err
		}
		tr.Round(params, data, sample)
		if c.Progress != nil {
			c.Progress("model", r+1, c.Rounds)
		}
		if m.public == nil || (r+1)%c.CheckEvery != 0 {
			continue
		}
		if pe := meanError(e, params, m.public); pe < bestErr {
			bestErr, since, best = pe, 0, append(best[:0], params...)
		} else if since++; since >= c.Patience {
			return e, best, r + 1, nil
		}
	}
	if best != nil {
		params = best
	}
	return e, params, c.Rounds, nil
}

// meanError is the ensemble's mean squared error of the scaled targets'
// means over models, targets and the transitions of data (a NaN, from a
// diverged model, counts as +Inf).
func meanError(e *Ensemble, params []float64, data []Trajectory) float64 {
	var se float64
	var n int
	var mean, lv []float64
	for _, d := range data {
		if len(mean) < len(d.Y) {
			mean, lv = make([]float64, len(d.Y)), make([]float64, len(d.Y))
		}
		for i := range e.Models() {
			e.Predict(params, i, d.X, d.N, mean, lv)
			for j, y := range d.Y {
				se += (y - mean[j]) * (y - mean[j])
			}
			n += len(d.Y)
		}
	}
	if n == 0 || math.IsNaN(se) {
		return math.Inf(1)
	}
	return se / float64(n)
}

// trainPlain is the MOPO baseline's model: a fresh ensemble trained on all
// transitions without clipping or noise.
func (m *Mechanism) trainPlain(ctx context.Context, data []Trajectory) (*Ensemble, []float64, error) {
	c := m.c
	e, err := NewEnsemble(c.Model, m.od+m.ad, m.od+1)
	if err != nil {
		return nil, nil, err
	}
	params := make([]float64, e.NumParams())
	e.Init(params, m.gen("init"))
	err = TrainPlain(ctx, e, params, data, c.Plain, m.gen("plain"), func(done, total int) {
		if c.Progress != nil {
			c.Progress("model", done, total)
		}
	})
	return e, params, err
}

// branchPool is the number of visited states a model environment keeps
// for branched rollouts (Config.Branch): more than SAC's default 60,000
// steps visit, so a run of that length keeps them all.
const branchPool = 1 << 17

// trainedPolicy is what trainPolicy returns: the released policy, its
// curve, the step of its chosen point (0: the last) and, with Policies > 1,
// each candidate's best rating in the model.
type trainedPolicy struct {
	agent   *sac.Agent
	curve   []sac.CurvePoint
	steps   int
	ratings []float64
}

// trainPolicy trains SAC in the pessimistic MDP of the released ensemble
// (post-processing: no record enters it), or, for MOPO (logged not nil),
// with rollouts from the logged states and logged transitions mixed into
// its batches. With Policies > 1 it trains that many, each from its own
// generator, at most GOMAXPROCS at once, and returns the one rated best in
// the model (Select).
func (m *Mechanism) trainPolicy(ctx context.Context, e *Ensemble, params []float64, logged *loggedTransitions) (trainedPolicy, error) {
	c := m.c
	info, _ := sims.Lookup(c.Env)
	n := max(1, c.Policies)
	outs, errs := make([]sac.Result, n), make([]error, n)
	var mu sync.Mutex
	done := make([]int, n)
	sem := make(chan struct{}, max(1, min(n, runtime.GOMAXPROCS(0))))
	var wg sync.WaitGroup
	for i := range n {
		ens := e
		if i > 0 {
			ens = e.workspace() // the ensemble's scratch is not safe for concurrent use
		}
		// A generator per candidate; the first is the single policy's, so
		// Policies = 1 repeats earlier runs.
		gen := m.gen("sac")
		if i > 0 {
			gen = m.gen(fmt.Sprintf("sac %d", i))
		}
		opts := m.policyOptions(info, ens, params, logged, func(p sac.Progress) {
			if c.Progress == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			done[i] = p.Steps
			var sum int
			for _, d := range done {
				sum += d
			}
			c.Progress("policy", sum, n*c.SACSteps)
		})
		scfg := sac.DefaultConfig()
		scfg.Hidden, scfg.TargetEntropy = c.SACHidden, c.TargetEntropy
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			outs[i], errs[i] = sac.Train(ctx, func() sims.Env { return m.modelEnv(info, ens, params, logged, c.Horizon, true) }, scfg, opts, gen)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return trainedPolicy{}, err
	}
	best := 0
	var ratings []float64
	if n > 1 {
		ratings = make([]float64, n)
		for i, o := range outs {
			ratings[i] = math.Inf(-1)
			for _, p := range o.Curve {
				if p.Select != nil && *p.Select > ratings[i] {
					ratings[i] = *p.Select
				}
			}
			if ratings[i] > ratings[best] {
				best = i
			}
		}
	}
	o := outs[best]
	return trainedPolicy{agent: o.Agent, curve: o.Curve, steps: o.BestSteps, ratings: ratings}, nil
}

// policyOptions are SAC's options for a policy trained in the model
// (ens, params): evaluations on the simulator, MOPO's logged transitions,
// and with Select its rating on whole episodes of the model's mean
// dynamics.
func (m *Mechanism) policyOptions(info sims.Info, ens *Ensemble, params []float64, logged *loggedTransitions, progress func(sac.Progress)) sac.TrainOptions {
	c := m.c
	opts := sac.TrainOptions{Steps: c.SACSteps, LearningStarts: min(5000, c.SACSteps/2), EvalEpisodes: 3,
		NewEvalEnv: info.New, Progress: progress}
	if logged != nil {
		opts.Fixed, opts.FixedFraction = logged.buf, c.MOPOFraction
	}
	if c.Select > 0 {
		// Whole episodes of the task from its public start states.
		opts.Select = func() sims.Env { return m.modelEnv(info, ens, params, logged, max(1, info.New().MaxSteps()), false) }
		opts.SelectEpisodes, opts.KeepBest = c.Select, true
	}
	return opts
}

// modelEnv returns the pessimistic MDP of the release for the policy's
// rollouts of horizon steps (rollouts), or, for its rating (not rollouts),
// the model's mean dynamics without the penalty, from the public start
// states only.
func (m *Mechanism) modelEnv(info sims.Info, e *Ensemble, params []float64, logged *loggedTransitions, horizon int, rollouts bool) sims.Env {
	c := m.c
	lambda := c.Lambda
	if !rollouts {
		lambda = 0
	}
	me, err := NewModelEnv(info.New(), e, params, m.scales, c.Uncertainty, lambda, horizon)
	if err == nil && logged != nil && rollouts {
		err = me.SetStartStates(logged.buf.States())
	}
	if err == nil && c.Branch > 0 && rollouts {
		err = me.SetBranch(c.Branch, branchPool)
	}
	if err == nil && c.Mirror {
		err = me.SetMirror(true)
	}
	if err == nil && c.PublicReward {
		err = me.SetPublicReward(true)
	}
	if err != nil {
		panic(err) // validated by New: the same arguments
	}
	me.SetModelPerRollout(c.PerRollout && rollouts)
	me.SetMeanStep(!rollouts)
	return me
}

// PlotCurve draws the policy's return on the simulator against its SAC
// steps in the model.
func (r *Result) PlotCurve(path string) error {
	if len(r.Curve) == 0 {
		return errors.New("primorl: no policy curve to plot")
	}
	x, y, e := make([]float64, len(r.Curve)), make([]float64, len(r.Curve)), make([]float64, len(r.Curve))
	for i, p := range r.Curve {
		x[i], y[i], e[i] = float64(p.Steps), p.Mean, p.Std
	}
	title := fmt.Sprintf("%s on %s: epsilon %s", r.Method, r.Env, accountant.FormatEpsilon(r.Epsilon))
	if !r.Private {
		title = fmt.Sprintf("%s on %s: NOT private", r.Method, r.Env)
	}
	return chart.Chart{Title: title, XLabel: "SAC steps in the model", YLabel: "return on the simulator", Width: 7, Height: 4.2,
		Series: []chart.Series{{Label: "deterministic policy", SpreadLabel: "± 1 std over 3 episodes", X: x, Y: y, YErr: e, Points: true}}}.Save(path)
}

// modelError is the ensemble's mean squared error (over models, targets
// and transitions) on 20 simulator episodes of uniformly random actions.
func (m *Mechanism) modelError(e *Ensemble, params []float64) float64 {
	info, _ := sims.Lookup(m.c.Env)
	env := info.New()
	r := m.gen("model error")
	as := env.ActionSpace()
	obs, next := make([]float64, m.od), make([]float64, m.od)
	a := sims.Action{Vec: make([]float64, m.ad)}
	var x, y []float64
	n := 0
	for range 20 {
		env.Reset(r, obs)
		for {
			for j := range a.Vec {
				a.Vec[j] = as.Low[j] + (as.High[j]-as.Low[j])*r.Float64()
			}
			copy(next, obs)
			rew, term, trunc := env.Step(a, next)
			x, y = m.scales.Encode(x, y, obs, a.Vec, next, rew)
			n++
			copy(obs, next)
			if term || trunc {
				break
			}
		}
	}
	O := m.od + 1
	mean, lv := make([]float64, n*O), make([]float64, n*O)
	var mx, mmean, mlv []float64
	if m.c.Mirror {
		mx, mmean, mlv = make([]float64, len(x)), make([]float64, n*O), make([]float64, n*O)
		mirrorInputs(mx, x, n, m.scales.Mirror)
	}
	var se float64
	for i := range e.Models() {
		e.Predict(params, i, x, n, mean, lv)
		if mx != nil {
			e.Predict(params, i, mx, n, mmean, mlv)
			symmetrize(mean, lv, mmean, mlv, n, m.scales.Mirror)
		}
		for k, v := range y {
			se += (v - mean[k]) * (v - mean[k])
		}
	}
	return se / float64(e.Models()*n*O)
}

// Args are the settings of dprl offline primorl that Config holds parsed:
// the clip mode and the uncertainty estimator by name (clip-mode,
// uncertainty; ParseClipMode, ParseUncertainty).
type Args struct {
	ClipMode    string `flag:"clip-mode" default:"per-layer" usage:"EnsembleClip: per-layer (C/sqrt(N L) per layer) or flat (C/sqrt(N) per model)"`
	Uncertainty string `flag:"uncertainty" default:"mpd" usage:"penalty's estimator: mpd (max mean disagreement) or ma (max covariance norm)"`
}

// Resolve returns c with a parsed into it and the paper's per-task
// settings where not given (ForEnv; set reports whether a field was
// given). It refuses settings that do not apply: Epsilon and Delta with
// NonPrivate or MOPO, the MOPO settings (Plain, MOPOFraction) without
// MOPO. Its errors name the fields (ConfigError).
func (c Config) Resolve(a Args, set func(field string) bool) (Config, error) {
	var err error
	if c.ClipMode, err = ParseClipMode(a.ClipMode); err != nil {
		return c, fieldNames.Errorf("{ClipMode} %v", err)
	}
	if c.Uncertainty, err = ParseUncertainty(a.Uncertainty); err != nil {
		return c, fieldNames.Errorf("{Uncertainty} %v", err)
	}
	c = c.ForEnv(c.Env, set)
	if c.MOPO && !set("Branch") {
		c.Branch = 0 // MOPO as published: rollouts from logged states only
	}
	if c.MOPO && !set("Mirror") {
		c.Mirror = false // MOPO as published: the model's own predictions
	}
	if c.MOPO && !set("PublicReward") {
		c.PublicReward = false // the model's reward
	}
	if c.MOPO && !set("Select") {
		c.Select = 0 // the last policy
	}
	if c.MOPO && !set("Policies") {
		c.Policies = 1
	}
	if c.MOPO && !set("TargetEntropy") {
		c.TargetEntropy = math.NaN() // SAC's usual target
	}
	if (c.NonPrivate || c.MOPO) && (set("Epsilon") || set("Delta")) {
		return c, fieldNames.Errorf("{NonPrivate} and {MOPO} train without noise: {Epsilon} and {Delta} do not apply")
	}
	if !c.MOPO && (set("Plain") || set("MOPOFraction")) {
		return c, fieldNames.Errorf("{Plain} and {MOPOFraction} apply only with {MOPO}")
	}
	if set("ModelFile") {
		// The model and its guarantee are the file's.
		for _, f := range []string{"Epsilon", "Delta", "NonPrivate", "Batch", "PublicN", "Rounds", "Clip", "ClipMode", "LocalEpochs", "MiniBatch", "LR",
			"ServerLR", "ServerMomentum", "Ensemble", "Hidden", "CheckEvery", "Patience"} {
			if set(f) {
				return c, fieldNames.Errorf("{ModelFile} holds a trained model and its guarantee: {%s} does not apply", f)
			}
		}
	}
	return c, nil
}
