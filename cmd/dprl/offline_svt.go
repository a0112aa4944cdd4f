package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/offline/svt"
)

// offlineSVTFlags are the flags of dprl offline svt: most are the fields
// of the release's svt.ReleaseConfig.
type offlineSVTFlags struct {
	cfg    svt.ReleaseConfig
	fl     *cliflags.Flags
	json   bool
	budget offlineBudget
}

func newOfflineSVTCmd(a *app) *cobra.Command {
	var f offlineSVTFlags
	r := &f.cfg
	c := &cobra.Command{
		Use:   "svt --data FILE --experts DIR --epsilon E1 --delta D1 --queries T --out-stable FILE [--out-unstable FILE]",
		Short: "Release the stable trajectory prefixes of an expert log with expert-level DP (SVT)",
		Long: `Runs DataRelease (Sharma et al., Preserving Expert-Level Privacy in Offline RL,
Algorithm 2): T trajectories of the log, in a random order, are cut at the
first prefix whose count over the experts, count(prefix) = sum_i prod_j
pi_i(a_j|s_j), falls below a noisy threshold (sparse vector technique, exact
discrete Laplace noise); the kept prefixes form the stable dataset, released
with (eps1, delta1)-DP at the level of one expert (Theorem 5.5). The per-query
budget eps' is the paper's eps1 / sqrt(32 T ln(2/delta1)) unless that would
compose to more than eps1 (large eps1), in which case it is solved for (see
dprl accountant svt).

The stable file (--out-stable) is the release. Each record holds what the
mechanism releases and nothing else: the prefix's observations, actions and
rewards, its final_obs (the next observation; the log's, for a trajectory
kept whole) and terminal (false for a cut prefix; the log's for a whole
trajectory). It carries no user, expert or policy_version, no behaviour
probabilities (prob/logp: they are the generating expert's own), and a fresh
id "stable-<i>" numbering the records in a fresh random order, so neither ids
nor order say anything about the log. Readers that need behaviour
probabilities (dprl offline gtd2) refuse it; learners that do not (CQL/BCQ,
behaviour cloning) read it with sessionlog.ReaderOptions.OptionalProb.

The unstable file (--out-unstable, optional) is NOT released and has no DP
guarantee: the tails of the queried trajectories (named "<session>#<k>" after
the k steps they lost) and the trajectories not queried, with every field of
the log, including expert ids and probabilities. It stays with the data owner
as the input of a learner that is itself expert-level DP (the paper's
selective DP-SGD, Algorithm 3, not part of dprl), whose cost is charged
separately.

Printed values are public parameters or functions of the release. Counts of
the private log (experts, trajectories, transitions, the unstable set's size)
are printed only with --seed, a simulation on synthetic data, under
"non-private".

Every session of the log must name its expert; expert "e17" is read from
DIR/e17.snap (written by dprl sims experts) and smoothed to --pmin (the
greedy action gets 1 - (|A|-1) p_min, the others p_min). The logged
behaviour probability of every step must be the smoothed expert's: the
guarantee is about the experts that generated the data.

The run is charged (eps1, delta1) against the dataset in the ledger (unit
"expert") after the whole log and every expert have been checked; a bad log,
unknown or mismatching experts, or a run over the dataset's cap cost nothing.
The dataset's cap delta at unit expert must be at least --delta (fixed costs
compose by adding their deltas). The outputs are dprl.sessions.v1, registered
in the ledger as derived from the dataset before they are written (so a later
run on either is charged to it), then written to temporary files and renamed
into place; an existing output is refused (before any charge) without
--force. --max-len L is a public bound on trajectory length (the
environment's step limit), not read from the data.

The log is read once as a stream, each record checked (format, expert id,
discrete actions, --max-len) and hashed, so a bad log is refused at its first
bad line; DataRelease then holds the log's sessions (the README's "Memory").`,
		Example: `  dprl offline svt --data data.jsonl --experts experts --epsilon 10 --delta 3.3e-4 \
      --dataset-delta 1e-3 --queries 25 --out-stable stable.jsonl --out-unstable unstable.jsonl
  dprl offline svt ... --seed 1 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runOfflineSVT(cmd, a, &f) },
	}
	fl := cliflags.New(c.Flags(), r)
	f.fl = fl
	fl.Name("CapDelta", "dataset-delta")
	fl.StringVar(&r.Data, "data", "", "session log (dprl.sessions.v1) with expert ids")
	fl.StringVar(&r.Experts, "experts", "", "directory of expert snapshots DIR/<expert id>.snap")
	fl.Float64Var(&r.Epsilon, "epsilon", 0, "epsilon eps1 > 0 of the release (expert level)")
	fl.Float64Var(&r.Delta, "delta", 0, "delta1 in (0, 1) of the release (the paper: 1/M)")
	fl.Float64Var(&r.PMin, "pmin", 0.02, "the experts' smoothing floor p_min, as when the log was generated")
	fl.IntVar(&r.Queries, "queries", 0, "T, the number of trajectories queried, 1..number in the log (the paper: 20-100)")
	fl.IntVar(&r.MaxLen, "max-len", 500, "L, public bound on trajectory length (the environment's step limit; a longer trajectory is an error)")
	fl.StringVar(&r.OutStable, "out-stable", "", "file for the release: the stable prefixes, without ids or behaviour probabilities (dprl.sessions.v1)")
	fl.StringVar(&r.OutUnstable, "out-unstable", "", "file for the tails and unqueried trajectories, NOT released and not DP: for the data owner's expert-level DP learner only (dprl.sessions.v1; default: not written)")
	fl.BoolVar(&r.Force, "force", false, "overwrite --out-stable and --out-unstable if they exist")
	fl.Uint64Var(&r.Seed, "seed", 0, "seed the noise and the shuffle (simulation only; recorded in the ledger). Default: a secure generator seeded from the OS")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	f.budget.register(c.Flags())
	return c
}

func runOfflineSVT(cmd *cobra.Command, a *app, f *offlineSVTFlags) error {
	rc := f.cfg
	rc.Seeded = cmd.Flags().Changed("seed")
	if f.budget.changed("dataset-delta") {
		rc.CapDelta = f.budget.cap.Delta
	}
	m, err := svt.NewRelease(rc, svt.NewNoiseRand(rc.Seeded, rc.Seed))
	if err != nil {
		return usagef("offline svt: %w", f.fl.Rename(err))
	}
	defer m.Close()
	wrap := func(err error) error { return fmt.Errorf("offline svt: %w", err) }
	return runOffline(a, cmd, offlineRun[*svt.Report]{budget: &f.budget, private: true, in: m.Input(), m: m, asJSON: f.json,
		cfgErr: wrap, runErr: func(err error) error { return wrap(f.fl.Rename(err)) }})
}
