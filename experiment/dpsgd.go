package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/sims"
)

// DPSGD configures one run of a DP-SGD baseline (policy.TrainDPSGD) with
// the network and schedule of policy.DefaultDPSGDConfig: REINFORCE with one
// episode as the privacy unit (analytic Gaussian accountant), or DQN with
// one transition as the unit (Poisson-sampled replay, PLD accountant with
// RDP as the cross-check).
type DPSGD struct {
	Env  string // a registered environment
	Algo string // policy.AlgoDPSGDReinforce or policy.AlgoDPSGDDQN
	// Z is the noise multiplier and Clip the clipping norm of the
	// per-example gradients, both finite and > 0; Delta is in (0, 1).
	Z, Clip, Delta float64
	EvalEpisodes   int    // greedy evaluation episodes, >= 1
	Seed           uint64 // every random draw derives from it
}

// Validate reports every invalid field, as errors naming the fields
// (*fielderr.Error), joined; RunDPSGD also checks the full policy
// configuration.
func (c DPSGD) Validate() error {
	var errs []error
	_, ok := sims.Lookup(c.Env)
	bad(&errs, !ok, "{Env} %q: unknown environment (valid: %s)", c.Env, strings.Join(sims.Names(), ", "))
	bad(&errs, c.Algo != policy.AlgoDPSGDReinforce && c.Algo != policy.AlgoDPSGDDQN, "{Algo} %q: want %s or %s", c.Algo, policy.AlgoDPSGDReinforce, policy.AlgoDPSGDDQN)
	bad(&errs, !positive(c.Z), "{Z} %v: the noise multiplier must be finite and > 0", c.Z)
	bad(&errs, !positive(c.Clip), "{Clip} %v: the clipping norm must be finite and > 0", c.Clip)
	bad(&errs, !(c.Delta > 0 && c.Delta < 1), "{Delta} %v: must be in (0, 1)", c.Delta)
	bad(&errs, c.EvalEpisodes < 1, "{EvalEpisodes} %d: must be >= 1", c.EvalEpisodes)
	return errors.Join(errs...)
}

// DPSGDResult is the result of a DPSGD run (the JSON of dprl train --algo
// dpsgd-reinforce or dpsgd-dqn).
type DPSGDResult struct {
	policy.DPSGDResult
	Seed uint64 `json:"seed"`
	// UnitNote says, when the privacy unit is not the episode (DQN: a
	// transition), that an episode is covered only by group privacy over
	// its transitions, which is not computed.
	UnitNote string `json:"privacy_unit_note,omitempty"`
	// Env and EvalEpisodes are those of the configuration (text only).
	Env          string `json:"-"`
	EvalEpisodes int    `json:"-"`
}

// RunDPSGD validates c and runs it; progress, if not nil, receives
// policy.TrainDPSGD's progress. A configuration the policy package rejects
// is a *ConfigError.
func RunDPSGD(ctx context.Context, c DPSGD, progress func(policy.DPSGDProgress)) (DPSGDResult, error) {
	if err := c.Validate(); err != nil {
		return DPSGDResult{}, err
	}
	cfg := policy.DefaultDPSGDConfig()
	cfg.EvalEpisodes = c.EvalEpisodes
	p := policy.DPSGDPrivacy{ClipNorm: c.Clip, NoiseMultiplier: c.Z, Delta: c.Delta}
	cfg.Reinforce.Privacy, cfg.DQN.Privacy = p, p
	if err := cfg.Validate(); err != nil {
		return DPSGDResult{}, &ConfigError{err}
	}
	info, _ := sims.Lookup(c.Env)
	rng := rand.New(rand.NewPCG(c.Seed, 0x6470736764)) // "dpsgd"
	res, err := policy.TrainDPSGD(ctx, c.Algo, info.New, cfg, rng, progress)
	if err != nil {
		return DPSGDResult{}, err
	}
	out := DPSGDResult{DPSGDResult: res, Seed: c.Seed, Env: c.Env, EvalEpisodes: cfg.EvalEpisodes}
	// The unit of the epsilon: one episode for REINFORCE (each fresh
	// episode enters one update), one transition for DQN (its replay
	// buffer samples transitions). A DQN episode of up to MaxSteps
	// transitions is protected only by group privacy over them, which is
	// not computed: the result says so beside the epsilon.
	if res.PrivacyUnit != "episode" {
		out.UnitNote = fmt.Sprintf("not per episode: an episode is up to %d transitions, covered only by group privacy, not computed", info.New().MaxSteps())
	}
	return out, nil
}

// WriteText writes the result as dprl train prints it.
func (r DPSGDResult) WriteText(w io.Writer) error {
	note := ""
	if r.UnitNote != "" {
		note = " (" + r.UnitNote + ")"
	}
	cross := ""
	if r.RDPEpsilon > 0 {
		cross = fmt.Sprintf("; rdp cross-check %s", accountant.FormatEpsilon(r.RDPEpsilon))
	}
	_, err := fmt.Fprintf(w, "%s on %s: eval return %.1f +- %.1f over %d episodes; epsilon %s at delta %g per %s%s (%s, z = %g%s); %d updates, %d episodes, %.1f s, seed %d\n",
		r.Algo, r.Env, r.EvalMean, r.EvalStd, r.EvalEpisodes, accountant.FormatEpsilon(r.Epsilon), r.Delta, r.PrivacyUnit, note, r.Accountant, r.NoiseMultiplier, cross, r.Updates, r.Episodes, r.Seconds, r.Seed)
	return err
}
