package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"dprl/policy"
	"dprl/sims"

	"github.com/spf13/cobra"
)

// runTrainDPSGD runs the DP-SGD baselines (REINFORCE with one episode as the
// privacy unit, analytic Gaussian; DQN with one transition as the unit,
// Poisson-sampled replay, RDP). --z, --delta, --clip and --eval-episodes
// apply; the configs fix episodes and steps, and the learner flags of dppg
// are rejected (checkTrainFlagsApply).
func runTrainDPSGD(cmd *cobra.Command, a *app, f *trainFlags) error {
	if _, ok := sims.Lookup(f.env); !ok {
		return usagef("--env %q: unknown environment (valid: %s)", f.env, strings.Join(sims.Names(), ", "))
	}
	cfg := policy.DefaultDPSGDConfig()
	cfg.EvalEpisodes = f.evalEpisodes
	p := policy.DPSGDPrivacy{ClipNorm: 1, NoiseMultiplier: f.z, Delta: f.delta}
	if cmd.Flags().Changed("clip") {
		p.ClipNorm = f.clip
	}
	cfg.Reinforce.Privacy, cfg.DQN.Privacy = p, p
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	seed, err := seedFlag(cmd, "seed", f.seed)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	info, _ := sims.Lookup(f.env)
	rng := rand.New(rand.NewPCG(seed, 0x6470736764)) // "dpsgd"
	res, err := policy.TrainDPSGD(cmd.Context(), f.algo, info.New, cfg, rng, nil)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	// The unit of the epsilon: one episode for REINFORCE (each fresh
	// episode enters one update), one transition for DQN (its replay
	// buffer samples transitions). A DQN episode of up to MaxSteps
	// transitions is protected only by group privacy over them, which is
	// not computed: the output says so beside the epsilon.
	unitNote := ""
	if res.PrivacyUnit != "episode" {
		unitNote = fmt.Sprintf(" (not per episode: an episode is up to %d transitions, covered only by group privacy, not computed)", info.New().MaxSteps())
	}
	return emit(a.stdout, f.json, struct {
		policy.DPSGDResult
		Seed     uint64 `json:"seed"`
		UnitNote string `json:"privacy_unit_note,omitempty"`
	}{res, seed, strings.TrimSuffix(strings.TrimPrefix(unitNote, " ("), ")")}, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s on %s: eval return %.1f +- %.1f over %d episodes; epsilon %.4g at delta %g per %s%s (%s, z = %g); %d updates, %d episodes, %.1f s, seed %d\n",
			res.Algo, f.env, res.EvalMean, res.EvalStd, cfg.EvalEpisodes, res.Epsilon, res.Delta, res.PrivacyUnit, unitNote, res.Accountant, res.NoiseMultiplier, res.Updates, res.Episodes, res.Seconds, seed)
		return err
	})
}
