package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"dprl/internal/atomicfile"
	"dprl/internal/rng"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/offline/budget"
	"dprl/offline/svt"
	"dprl/sessionlog"
)

// svtSource cites the theorem the charged (eps1, delta1) comes from.
const svtSource = "Sharma et al., Preserving Expert-Level Privacy in Offline RL, Theorem 5.5: DataRelease (Algorithm 2) is (eps1, delta1)-DP at expert level"

// offlineSVTFlags are the flags of dprl offline svt.
type offlineSVTFlags struct {
	data        string
	experts     string
	epsilon     float64
	delta       float64
	pMin        float64
	queries     int
	maxLen      int
	outStable   string
	outUnstable string
	seed        uint64
	json        bool
	budget      offlineBudget
}

// svtBin is one bar of the prefix-length histogram.
type svtBin struct {
	Length int `json:"length"`
	Count  int `json:"count"`
}

// offlineSVTResult is the output of dprl offline svt. Its top-level values
// are public parameters or functions of the stable release, so covered by
// (eps1, delta1); NonPrivate holds statistics of the private log, printed
// only for seeded (simulation) runs.
type offlineSVTResult struct {
	// Queried is T = min(--queries, trajectories): --queries, since a
	// larger value is refused before anything is charged.
	Queried            int      `json:"queried"`
	Whole              int      `json:"whole"`
	StableTrajectories int      `json:"stable_trajectories"`
	StableTransitions  int      `json:"stable_transitions"`
	PrefixHistogram    []svtBin `json:"prefix_histogram"`
	Epsilon            float64  `json:"epsilon"`
	Delta              float64  `json:"delta"`
	Unit               string   `json:"unit"`
	PMin               float64  `json:"pmin"`
	MaxLen             int      `json:"max_len"`
	EpsPrime           float64  `json:"eps_prime"`
	// EpsPrimeSolved reports that eps' was solved for because the paper's
	// closed form would compose above eps1 (accountant.SVTSplit).
	EpsPrimeSolved bool    `json:"eps_prime_solved"`
	Threshold      float64 `json:"threshold"`
	LedgerSeq      uint64  `json:"ledger_seq"`
	DatasetSpent   float64 `json:"dataset_spent"`
	DatasetCap     float64 `json:"dataset_cap"`
	OutStable      string  `json:"out_stable"`
	// OutUnstable is the unstable set's file: not released (see the help).
	OutUnstable string         `json:"out_unstable,omitempty"`
	NonPrivate  *svtNonPrivate `json:"non_private,omitempty"`
	Seed        uint64         `json:"seed,omitempty"`
	Seeded      bool           `json:"seeded"`
}

// svtNonPrivate are statistics of the private log that no guarantee covers:
// the dataset's id, the number of experts, trajectories and transitions, and what went to the
// unstable set. They are printed only with --seed (a simulation on
// synthetic data), labelled non-private.
type svtNonPrivate struct {
	// DatasetID identifies the log by its records: two neighbouring logs
	// have different ids, so it is not covered either.
	DatasetID            string  `json:"dataset_id"`
	Experts              int     `json:"experts"`
	Trajectories         int     `json:"trajectories"`
	Transitions          int     `json:"transitions"`
	QueriedTransitions   int     `json:"queried_transitions"`
	UnstableTrajectories int     `json:"unstable_trajectories"`
	UnstableTransitions  int     `json:"unstable_transitions"`
	StableFraction       float64 `json:"stable_fraction"`
	QueriedStableFrac    float64 `json:"queried_stable_fraction"`
}

func newOfflineSVTCmd(a *app) *cobra.Command {
	var f offlineSVTFlags
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
into place. --max-len L is a public bound on trajectory length (the
environment's step limit), not read from the data.

The log is read once as a stream, each record checked (format, expert id,
discrete actions, --max-len) and hashed as it is read, so a log bad at line
2 is refused at line 2. DataRelease then needs every trajectory at once:
the run holds the log's sessions (about 80 bytes per step plus 8 per
observation value) and 44 bytes per record for the log's index, read again
from the file with each record checked against its hash.`,
		Example: `  dprl offline svt --data data.jsonl --experts experts --epsilon 10 --delta 3.3e-4 \
      --dataset-delta 1e-3 --queries 25 --out-stable stable.jsonl --out-unstable unstable.jsonl
  dprl offline svt ... --seed 1 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runOfflineSVT(cmd, a, &f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.data, "data", "", "session log (dprl.sessions.v1) with expert ids")
	fl.StringVar(&f.experts, "experts", "", "directory of expert snapshots DIR/<expert id>.snap")
	fl.Float64Var(&f.epsilon, "epsilon", 0, "eps1 > 0 of the release (expert level)")
	fl.Float64Var(&f.delta, "delta", 0, "delta1 in (0, 1) of the release (the paper: 1/M)")
	fl.Float64Var(&f.pMin, "pmin", 0.02, "the experts' smoothing floor p_min, as when the log was generated")
	fl.IntVar(&f.queries, "queries", 0, "T, the number of trajectories queried, 1..number in the log (the paper: 20-100)")
	fl.IntVar(&f.maxLen, "max-len", 500, "L, public bound on trajectory length (the environment's step limit; a longer trajectory is an error)")
	fl.StringVar(&f.outStable, "out-stable", "", "file for the release: the stable prefixes, without ids or behaviour probabilities (dprl.sessions.v1)")
	fl.StringVar(&f.outUnstable, "out-unstable", "", "file for the tails and unqueried trajectories, NOT released and not DP: for the data owner's expert-level DP learner only (dprl.sessions.v1; default: not written)")
	fl.Uint64Var(&f.seed, "seed", 0, "seed the noise and the shuffle (simulation only; recorded in the ledger). Default: a secure generator seeded from the OS")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	f.budget.register(fl)
	return c
}

// check validates the flags without touching any file.
func (f *offlineSVTFlags) check() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	for _, r := range []struct{ name, v string }{{"--data", f.data}, {"--experts", f.experts}, {"--out-stable", f.outStable}} {
		if r.v == "" {
			bad("%s: required", r.name)
		}
	}
	cfg := svt.Config{Epsilon: f.epsilon, Delta: f.delta, Queries: f.queries, MaxLen: f.maxLen, PMin: f.pMin}
	if err := cfg.Validate(); err != nil {
		bad("%v", oneLine(err.Error()))
	}
	if f.outStable != "" && f.outStable == f.outUnstable {
		bad("--out-stable and --out-unstable: the same file %q", f.outStable)
	}
	for _, o := range []string{f.outStable, f.outUnstable} {
		if o != "" && f.data != "" && filepath.Clean(o) == filepath.Clean(f.data) {
			bad("output %q would overwrite --data", o)
		}
	}
	if f.delta > 0 && f.budget.changed("dataset-delta") && f.budget.cap.Delta > 0 && f.delta > f.budget.cap.Delta {
		bad("--delta %v exceeds the dataset's --dataset-delta %v: the release's delta is added to the dataset's (basic composition); raise --dataset-delta if the dataset's owner agreed", f.delta, f.budget.cap.Delta)
	}
	if len(errs) > 0 {
		return usagef("offline svt: %s", strings.Join(errs, "; "))
	}
	return nil
}

func runOfflineSVT(cmd *cobra.Command, a *app, f *offlineSVTFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	res := offlineSVTResult{Epsilon: f.epsilon, Delta: f.delta, Unit: string(ledger.UnitExpert), PMin: f.pMin, MaxLen: f.maxLen,
		OutStable: f.outStable, OutUnstable: f.outUnstable, Seeded: cmd.Flags().Changed("seed")}
	// Secure unless --seed is given. The seeded key (seed || "dprl offline
	// svt") predates internal/rng and is kept so that seeded runs repeat
	// their documented numbers.
	noiseRNG := rng.Secure()
	if res.Seeded {
		res.Seed = f.seed
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:8], f.seed)
		copy(key[8:], "dprl offline svt")
		noiseRNG = rand.New(rand.NewChaCha8(key))
	}

	// The protocol (budget.Run): scan and check every record, open the
	// ledger, refuse over the cap, validate the whole log and the experts,
	// charge, then compute and write.
	cfg, err := f.budget.config(a, true)
	if err != nil {
		return fmt.Errorf("offline svt: %w", err)
	}
	m := &svtMechanism{f: f, scan: &svtScan{f: f, index: map[string]int{}, maxAction: -1}, seeded: res.Seeded, rng: noiseRNG}
	defer m.abort()
	out, charged, err := budget.Run(commandContext(cmd), cfg, budget.Input{Path: f.data, Reader: sessionlog.ReaderOptions{Name: f.data}}, m)
	if err != nil {
		return fmt.Errorf("offline svt: %w", budget.Explain(err))
	}
	res.LedgerSeq, res.DatasetCap, res.DatasetSpent = charged.Entry.Seq, charged.Cap.Epsilon, charged.Spent
	np := svtNonPrivate{DatasetID: charged.Dataset, Trajectories: len(m.sessions), Experts: len(m.experts)}
	for i := range m.sessions {
		np.Transitions += len(m.sessions[i].Steps)
	}
	res.Queried, res.Whole = out.Queried, out.Whole
	res.EpsPrime, res.EpsPrimeSolved = out.Params.EpsPrime, out.Params.Solved
	res.Threshold = out.Params.Theta + out.Params.NoisyThresholdShift
	res.StableTrajectories = len(out.Stable)
	for i := range out.Stable {
		res.StableTransitions += len(out.Stable[i].Steps)
	}
	res.PrefixHistogram = []svtBin{}
	for l, n := range out.PrefixLengths {
		if n > 0 {
			res.PrefixHistogram = append(res.PrefixHistogram, svtBin{Length: l, Count: n})
		}
	}
	if res.Seeded {
		np.UnstableTrajectories = len(out.Unstable)
		for i := range out.Unstable {
			np.UnstableTransitions += len(out.Unstable[i].Steps)
		}
		np.QueriedTransitions = res.StableTransitions + tailTransitions(out)
		if np.Transitions > 0 {
			np.StableFraction = float64(res.StableTransitions) / float64(np.Transitions)
		}
		if np.QueriedTransitions > 0 {
			np.QueriedStableFrac = float64(res.StableTransitions) / float64(np.QueriedTransitions)
		}
		res.NonPrivate = &np
	}
	return emit(a.stdout, f.json, res, res.text)
}

// svtMechanism is DataRelease as budget.Run sees it: each record checked as
// the log is first read (svtScan), the cost (eps1, delta1) at unit expert
// stated from the flags alone, the whole log and the experts validated and
// the output files created before the charge, the release computed and
// written after it.
type svtMechanism struct {
	f        *offlineSVTFlags
	scan     *svtScan
	seeded   bool
	rng      *rand.Rand
	sessions []sessionlog.Session
	experts  []*svt.SmoothedExpert
	// stableOut and unstableOut are the outputs' temporary files, created
	// by Validate (a file that cannot be created costs nothing).
	stableOut, unstableOut *atomicfile.File
}

// Check checks one record as the log is first read.
func (m *svtMechanism) Check(s *sessionlog.Session) error { return m.scan.check(s) }

// Entry is the release's cost: (eps1, delta1) at unit expert, a fixed cost
// (Theorem 5.5).
func (m *svtMechanism) Entry(*sessionlog.Index, budget.Dataset) (ledger.Entry, error) {
	f := m.f
	return ledger.Entry{Unit: ledger.UnitExpert,
		Mechanism: fmt.Sprintf("svt: DataRelease (Sharma et al., Algorithm 2), T = %d queries, L = %d, p_min = %v, discrete Laplace noise", f.queries, f.maxLen, f.pMin),
		Method:    accountant.MethodRDP, Epsilon: f.epsilon, Delta: f.delta, Seeded: m.seeded,
		Fixed: []ledger.FixedCost{{Epsilon: f.epsilon, Delta: f.delta, Source: svtSource}}}, nil
}

// Validate checks the whole log and the experts (svtScan.load), records
// the number of experts in the entry, and creates the outputs' temporary
// files; nothing is released.
func (m *svtMechanism) Validate(ix *sessionlog.Index, e *ledger.Entry) error {
	var err error
	if m.sessions, m.experts, err = m.scan.load(ix); err != nil {
		return err
	}
	if m.stableOut, err = atomicfile.Create(m.f.outStable, 0o600); err != nil {
		return fmt.Errorf("--out-stable: %w", err)
	}
	if m.f.outUnstable != "" {
		if m.unstableOut, err = atomicfile.Create(m.f.outUnstable, 0o600); err != nil {
			return fmt.Errorf("--out-unstable: %w", err)
		}
	}
	e.Participants = len(m.experts)
	return nil
}

// Compute runs DataRelease, registers its outputs in the ledger as derived
// from the dataset (before they exist, so any run on them is charged to
// it) and writes them.
func (m *svtMechanism) Compute(_ context.Context, _ *sessionlog.Index, c *budget.Charge) (svt.Result, error) {
	f := m.f
	qs := make([]svt.Expert, len(m.experts))
	for i, e := range m.experts {
		qs[i] = e
	}
	out, err := svt.DataRelease(m.sessions, qs, svt.Config{Epsilon: f.epsilon, Delta: f.delta, Queries: f.queries, MaxLen: f.maxLen, PMin: f.pMin}, m.rng)
	if err != nil {
		return out, fmt.Errorf("%w (the run was charged)", err)
	}
	if err := c.RegisterDerived(budget.Derived{Note: "svt stable prefixes (" + filepath.Base(f.outStable) + ")", Sessions: out.Stable},
		budget.Derived{Note: "svt unstable tails and unqueried trajectories (" + filepath.Base(f.outUnstable) + ")", Sessions: out.Unstable}); err != nil {
		return out, fmt.Errorf("%w (the run was charged)", err)
	}
	if err := writeSessions(m.stableOut, out.Stable); err != nil {
		return out, fmt.Errorf("--out-stable: %w (the run was charged)", err)
	}
	if m.unstableOut != nil {
		if err := writeSessions(m.unstableOut, out.Unstable); err != nil {
			return out, fmt.Errorf("--out-unstable: %w (the run was charged)", err)
		}
	}
	return out, nil
}

// abort removes the temporary files not renamed into place.
func (m *svtMechanism) abort() {
	if m.stableOut != nil {
		m.stableOut.Abort()
	}
	if m.unstableOut != nil {
		m.unstableOut.Abort()
	}
}

// tailTransitions returns the transitions of the queried trajectories that
// went to the unstable set: DataRelease appends, in query order, the tail of
// every queried trajectory not released whole, then the untouched ones.
func tailTransitions(r svt.Result) int {
	n := 0
	for i := 0; i < r.Queried-r.Whole; i++ {
		n += len(r.Unstable[i].Steps)
	}
	return n
}

// svtScan checks SVT's input record by record as the log is first read:
// every session names an expert (a valid id), actions are discrete and no
// trajectory is longer than --max-len. It collects the expert ids and the
// largest action.
type svtScan struct {
	f         *offlineSVTFlags
	index     map[string]int
	ids       []string
	maxAction int
}

// check checks one record (sessionlog.ScanLog names its line in errors).
func (v *svtScan) check(s *sessionlog.Session) error {
	if s.Steps[0].Action.Vec != nil {
		return errors.New("continuous actions: SVT needs discrete actions (Sharma et al. assume a finite action set)")
	}
	if s.Expert == "" {
		return fmt.Errorf("session %q names no expert: every session needs an \"expert\" id", s.Session)
	}
	if err := svt.CheckID(s.Expert); err != nil {
		return err
	}
	if len(s.Steps) > v.f.maxLen {
		return fmt.Errorf("session %q has %d steps, above --max-len %d", s.Session, len(s.Steps), v.f.maxLen)
	}
	for _, st := range s.Steps {
		v.maxAction = max(v.maxAction, st.Action.Index)
	}
	if _, ok := v.index[s.Expert]; !ok {
		v.index[s.Expert] = len(v.ids)
		v.ids = append(v.ids, s.Expert)
	}
	return nil
}

// load checks what needs the whole log (--queries at most the number of
// trajectories; the experts' snapshots fit the log and gave its logged
// probabilities) and returns the sessions, read again through the index
// (each checked against its hash), with the experts. SVT's DataRelease
// holds every session: its memory is that of the log's sessions (about
// 80 bytes per step plus 8 per observation component), bounded by
// --max-len per trajectory.
func (v *svtScan) load(ix *sessionlog.Index) ([]sessionlog.Session, []*svt.SmoothedExpert, error) {
	f := v.f
	if f.queries > ix.Len() {
		return nil, nil, fmt.Errorf("--queries %d: the log has %d trajectories (T must be at most their number)", f.queries, ix.Len())
	}
	sort.Strings(v.ids)
	for i, id := range v.ids {
		v.index[id] = i
	}
	experts, err := svt.LoadExperts(f.experts, v.ids, ix.Spec().ObsDim, v.maxAction+1, f.pMin)
	if err != nil {
		return nil, nil, err
	}
	sessions := make([]sessionlog.Session, 0, ix.Len())
	err = ix.Each(func(_ int, s *sessionlog.Session) error {
		if err := svt.CheckBehaviour(s, experts[v.index[s.Expert]]); err != nil {
			return err
		}
		sessions = append(sessions, *s)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return sessions, experts, nil
}

// writeSessions writes the sessions to a pending output file and commits
// it (synced and renamed into place).
func writeSessions(a *atomicfile.File, ss []sessionlog.Session) error {
	w := sessionlog.NewWriter(a)
	for i := range ss {
		if err := w.Write(&ss[i]); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return a.Commit()
}

func (r offlineSVTResult) text(w io.Writer) error {
	var b strings.Builder
	solved := ""
	if r.EpsPrimeSolved {
		solved = " (solved: the paper's closed form would compose above eps1)"
	}
	fmt.Fprintf(&b, "queried %d trajectories; eps' %.4g%s, noisy threshold centre %.1f\n",
		r.Queried, r.EpsPrime, solved, r.Threshold)
	fmt.Fprintf(&b, "stable (the release): %d prefixes, %d transitions, %d of them whole trajectories -> %s\n",
		r.StableTrajectories, r.StableTransitions, r.Whole, r.OutStable)
	if len(r.PrefixHistogram) > 0 {
		b.WriteString("prefix lengths:")
		for _, h := range r.PrefixHistogram {
			fmt.Fprintf(&b, " %d:%d", h.Length, h.Count)
		}
		b.WriteString("\n")
	}
	if r.OutUnstable != "" {
		fmt.Fprintf(&b, "unstable (NOT released, not DP; for the data owner's expert-level DP learner only) -> %s\n", r.OutUnstable)
	}
	if np := r.NonPrivate; np != nil {
		fmt.Fprintf(&b, "non-private (simulation, --seed): dataset %s: %d experts, %d trajectories, %d transitions; queried %d transitions; stable %.4g of all, %.4g of the queried; unstable %d trajectories, %d transitions\n",
			np.DatasetID, np.Experts, np.Trajectories, np.Transitions, np.QueriedTransitions, np.StableFraction, np.QueriedStableFrac, np.UnstableTrajectories, np.UnstableTransitions)
	}
	seeded := ""
	if r.Seeded {
		seeded = fmt.Sprintf(" (seeded %d: simulation, not a production release)", r.Seed)
	}
	fmt.Fprintf(&b, "charged (eps1 %g, delta1 %g) at unit %s, ledger entry %d%s; dataset spent %.4g of %g\n",
		r.Epsilon, r.Delta, r.Unit, r.LedgerSeq, seeded, r.DatasetSpent, r.DatasetCap)
	_, err := io.WriteString(w, b.String())
	return err
}
