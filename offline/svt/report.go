package svt

import (
	"fmt"
	"io"
	"strings"

	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/offline/budget"
	"dprl/sessionlog"
)

// PrefixBin is one bar of the stable prefixes' length histogram.
type PrefixBin struct {
	Length int `json:"length"`
	Count  int `json:"count"`
}

// Report is what a Release prints ("dprl offline svt"). Its top-level
// values are public parameters (the configuration, the ledger's entry and
// the dataset's budget) or functions of the stable release, so covered by
// (eps1, delta1); NonPrivate holds statistics of the private log and is
// filled only for a seeded run (a simulation on synthetic data).
type Report struct {
	// Queried is T = min(Queries, trajectories): Queries, since a larger
	// value is refused before anything is charged.
	Queried            int         `json:"queried"`
	Whole              int         `json:"whole"`
	StableTrajectories int         `json:"stable_trajectories"`
	StableTransitions  int         `json:"stable_transitions"`
	PrefixHistogram    []PrefixBin `json:"prefix_histogram"`
	Epsilon            float64     `json:"epsilon"`
	Delta              float64     `json:"delta"`
	Unit               string      `json:"unit"`
	PMin               float64     `json:"pmin"`
	MaxLen             int         `json:"max_len"`
	EpsPrime           float64     `json:"eps_prime"`
	// EpsPrimeSolved reports that eps' was solved for because the paper's
	// closed form would compose above eps1 (accountant.SVTSplit).
	EpsPrimeSolved bool    `json:"eps_prime_solved"`
	Threshold      float64 `json:"threshold"`
	LedgerSeq      uint64  `json:"ledger_seq"`
	DatasetSpent   float64 `json:"dataset_spent"`
	DatasetCap     float64 `json:"dataset_cap"`
	OutStable      string  `json:"out_stable"`
	// OutUnstable is the unstable set's file: not released.
	OutUnstable string `json:"out_unstable,omitempty"`
	// Reach is what the release could keep at best, from public inputs
	// (Reach); its warning, if any, is printed.
	Reach      *Reach      `json:"reach,omitempty"`
	NonPrivate *NonPrivate `json:"non_private,omitempty"`
	Seed       uint64      `json:"seed,omitempty"`
	Seeded     bool        `json:"seeded"`
}

// NonPrivate are statistics of the private log that no guarantee covers:
// the dataset's id, the number of experts, trajectories and transitions,
// and what went to the unstable set. A Report holds them only for a seeded
// run (a simulation on synthetic data), labelled non-private.
type NonPrivate struct {
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

// report builds the Report of a release charged as ch says.
func (m *Release) report(out Result, ch *budget.Charge) *Report {
	c := m.c
	r := &Report{Epsilon: c.Epsilon, Delta: c.Delta, Unit: string(ledger.UnitExpert), PMin: c.PMin, MaxLen: c.MaxLen,
		OutStable: c.OutStable, OutUnstable: c.OutUnstable, Seeded: c.Seeded,
		Queried: out.Queried, Whole: out.Whole, EpsPrime: out.Params.EpsPrime, EpsPrimeSolved: out.Params.Solved,
		Threshold: out.Params.Theta + out.Params.NoisyThresholdShift,
		LedgerSeq: ch.Entry.Seq, DatasetCap: ch.Cap.Epsilon, DatasetSpent: ch.Spent,
		StableTrajectories: len(out.Stable), StableTransitions: transitions(out.Stable), PrefixHistogram: []PrefixBin{}}
	if m.reach.Roster > 0 {
		reach := m.reach
		r.Reach = &reach
	}
	for l, n := range out.PrefixLengths {
		if n > 0 {
			r.PrefixHistogram = append(r.PrefixHistogram, PrefixBin{Length: l, Count: n})
		}
	}
	if !c.Seeded {
		return r
	}
	r.Seed = c.Seed
	np := &NonPrivate{DatasetID: ch.Dataset, Experts: len(m.experts), Trajectories: len(m.sessions), Transitions: transitions(m.sessions),
		UnstableTrajectories: len(out.Unstable), UnstableTransitions: transitions(out.Unstable)}
	np.QueriedTransitions = r.StableTransitions + tailTransitions(out)
	if np.Transitions > 0 {
		np.StableFraction = float64(r.StableTransitions) / float64(np.Transitions)
	}
	if np.QueriedTransitions > 0 {
		np.QueriedStableFrac = float64(r.StableTransitions) / float64(np.QueriedTransitions)
	}
	r.NonPrivate = np
	return r
}

// transitions counts the sessions' steps.
func transitions(ss []sessionlog.Session) int {
	n := 0
	for i := range ss {
		n += len(ss[i].Steps)
	}
	return n
}

// tailTransitions returns the transitions of the queried trajectories that
// went to the unstable set: DataRelease appends, in query order, the tail of
// every queried trajectory not released whole, then the untouched ones.
func tailTransitions(r Result) int {
	return transitions(r.Unstable[:r.Queried-r.Whole])
}

// WriteText writes the report as "dprl offline svt" prints it: the
// queries, the release and where it went, where the unstable set went
// (labelled not released, not DP), the non-private section of a seeded run,
// and the charge.
func (r *Report) WriteText(w io.Writer) error {
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
	if r.Reach != nil && r.Reach.Warning() != "" {
		fmt.Fprintf(&b, "warning: %s\n", strings.TrimPrefix(r.Reach.Warning(), "svt: "))
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
	fmt.Fprintf(&b, "charged (eps1 %g, delta1 %g) at unit %s, ledger entry %d%s; dataset spent %s of %g\n",
		r.Epsilon, r.Delta, r.Unit, r.LedgerSeq, seeded, accountant.FormatEpsilon(r.DatasetSpent), r.DatasetCap)
	_, err := io.WriteString(w, b.String())
	return err
}
