package ledger

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"dprl/ledger/accountant"
)

// Summary is the ledger at a glance ("dprl ledger show"): every entry,
// each dataset's per-unit totals and derived files, the number of users
// and the most-used user's epsilon. It is the operator's own audit trail,
// not a release: it holds dataset ids and per-user counts.
type Summary struct {
	Head     Head                      `json:"head"`
	Entries  []Entry                   `json:"entries"`
	Datasets map[string]DatasetSummary `json:"datasets"`
	Users    int                       `json:"users"`
	// MaxUser is the user with the most updates (nil without users).
	MaxUser *UserSummary         `json:"max_user,omitempty"`
	ByKind  map[Kind]KindSummary `json:"by_kind"`
}

// DatasetSummary is a dataset's budget per protected unit and the files
// registered as derived from it.
type DatasetSummary struct {
	Units        map[Unit]UnitSummary `json:"units"`
	DerivedFiles []DerivedSummary     `json:"derived_files,omitempty"`
}

// UnitSummary is a dataset's total at one unit: the composed epsilon of
// the runs charged at that unit, at the cap's delta.
type UnitSummary struct {
	Runs int `json:"runs"`
	// Epsilon is nil when the total cannot be computed (Error says why):
	// no epsilon is shown rather than a wrong one.
	Epsilon    *float64 `json:"epsilon"`
	Delta      float64  `json:"delta"`
	CapEpsilon float64  `json:"cap_epsilon"`
	// Error says why the total cannot be computed, and what to change.
	Error string `json:"error,omitempty"`
	// Method is "pld" when a run charged with the PLD accountant is among
	// the unit's runs: Epsilon is then the smaller of the PLD and RDP
	// totals and RDPEpsilon the RDP one (the cross-check). Empty: RDP.
	Method     accountant.Method `json:"method,omitempty"`
	RDPEpsilon *float64          `json:"rdp_epsilon,omitempty"`
}

// DerivedSummary is a file registered as derived from a dataset by the
// offline run with sequence number From. Released says it is the output of
// a differentially private release, which may be read as public
// (Entry.Released).
type DerivedSummary struct {
	File     string `json:"file"`
	Note     string `json:"note"`
	From     uint64 `json:"from_entry"`
	Released bool   `json:"released,omitempty"`
}

// UserSummary is one user's updates and epsilon at Delta.
type UserSummary struct {
	Updates int     `json:"updates"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// KindSummary counts the entries of one kind.
type KindSummary struct {
	Entries int `json:"entries"`
}

// UnitsNote says what the per-unit totals mean.
const UnitsNote = "each unit's total is the composed epsilon, at that unit, of the runs charged at that unit only: totals at different units are never added or converted into one another"

// deltaHint says how to make a unit whose fixed deltas exhaust its cap's
// delta computable again.
const deltaHint = "the cap's delta must exceed the sum of the runs' fixed deltas: a dataset's first run at a unit stores its --dataset-delta as the cap's delta; raise it with dprl ledger set-cap --delta"

// Summary reads the whole ledger into a Summary, with the most-used user's
// epsilon at userDelta. A dataset unit whose total cannot be computed (its
// runs' fixed deltas reach the cap's delta) is listed with the error in
// place of its epsilon, so that the entries are always shown; Verify
// reports such a unit as a problem.
func (s *Store) Summary(userDelta float64) (Summary, error) {
	res := Summary{ByKind: map[Kind]KindSummary{}, Datasets: map[string]DatasetSummary{}}
	var err error
	if res.Head, err = s.Head(); err != nil {
		return Summary{}, err
	}
	err = s.Entries(func(e Entry) error {
		res.Entries = append(res.Entries, e)
		k := res.ByKind[e.Kind]
		k.Entries++
		res.ByKind[e.Kind] = k
		if e.Kind == KindDerived {
			d := res.Datasets[e.DatasetID]
			d.DerivedFiles = append(d.DerivedFiles, DerivedSummary{File: e.File, Note: e.Mechanism, From: e.DerivedFrom, Released: e.Released})
			res.Datasets[e.DatasetID] = d
		}
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	err = s.Datasets(func(id string, st DatasetState) error {
		d := res.Datasets[id]
		d.Units = map[Unit]UnitSummary{}
		for u, b := range st.Units {
			x := UnitSummary{Runs: b.Runs, Delta: b.Cap.Delta, CapEpsilon: b.Cap.Epsilon, Method: b.Method}
			if eps, err := b.Spent(); err == nil {
				x.Epsilon = &eps
				if b.Method == accountant.MethodPLD {
					rb := b
					rb.Method = ""
					if r, err := rb.Spent(); err == nil {
						x.RDPEpsilon = &r
					}
				}
			} else {
				x.Error = err.Error()
				if errors.As(err, new(*DeltaError)) {
					x.Error += " (" + deltaHint + ")"
				}
			}
			d.Units[u] = x
		}
		res.Datasets[id] = d
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	err = s.Users(func(_ UserKey, u UserState) error {
		res.Users++
		if res.MaxUser == nil || u.Updates > res.MaxUser.Updates {
			eps, err := u.Epsilon(userDelta)
			if err != nil {
				return err
			}
			res.MaxUser = &UserSummary{Updates: u.Updates, Epsilon: eps, Delta: userDelta}
		}
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	return res, nil
}

// WriteText writes the head, a table of the entries, each dataset's
// per-unit totals and derived files, and the users.
func (m Summary) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "head: %d entries, policy version %d, hash %.16s\n", m.Head.Seq, m.Head.Version, m.Head.Hash)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tUNIT\tEPSILON\tDELTA\tMETHOD\tZ\tPARTICIPANTS\tVERSION/DATASET\tNOISE")
	for _, e := range m.Entries {
		target := fmt.Sprint(e.PolicyVersion)
		switch e.Kind {
		case KindRelease:
		case KindWriter:
			target = e.Writer
		default:
			target = e.DatasetID
		}
		noise := "secure"
		if e.Seeded {
			noise = "seeded"
		}
		eps, del := accountant.FormatEpsilon(e.Epsilon), fmt.Sprint(e.Delta)
		switch e.Kind {
		case KindCap:
			eps, del = fmt.Sprintf("cap %g", e.Cap.Epsilon), fmt.Sprint(e.Cap.Delta)
		case KindDerived, KindLink, KindWriter:
			eps, del = "-", "-"
		}
		method, z := entryMethodZ(e)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.Seq, e.Time.Format("2006-01-02 15:04:05"), e.Kind, e.Unit, eps, del, method, z, e.Participants, target, noise)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ids := make([]string, 0, len(m.Datasets))
	for id := range m.Datasets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m.Datasets[id].writeText(w, id)
	}
	if len(ids) > 0 {
		fmt.Fprintln(w, "("+UnitsNote+")")
	}
	fmt.Fprintf(w, "users: %d", m.Users)
	if m.MaxUser != nil {
		fmt.Fprintf(w, "; most used: %d updates, epsilon %s at delta %g", m.MaxUser.Updates, accountant.FormatEpsilon(m.MaxUser.Epsilon), m.MaxUser.Delta)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// writeText writes a dataset's per-unit totals and derived files.
func (d DatasetSummary) writeText(w io.Writer, id string) {
	units := make([]Unit, 0, len(d.Units))
	for u := range d.Units {
		units = append(units, u)
	}
	slices.Sort(units)
	fmt.Fprintf(w, "dataset %s:\n", id)
	for _, u := range units {
		x := d.Units[u]
		if x.Epsilon == nil {
			fmt.Fprintf(w, "  unit %s: %d runs, epsilon not computable for cap %g at delta %g: %s\n", u, x.Runs, x.CapEpsilon, x.Delta, x.Error)
			continue
		}
		how := ""
		if x.Method == accountant.MethodPLD && x.RDPEpsilon != nil {
			how = fmt.Sprintf(" (pld; rdp %s)", accountant.FormatEpsilon(*x.RDPEpsilon))
		}
		fmt.Fprintf(w, "  unit %s: %d runs, epsilon %s of cap %g at delta %g%s\n", u, x.Runs, accountant.FormatEpsilon(*x.Epsilon), x.CapEpsilon, x.Delta, how)
	}
	for _, f := range d.DerivedFiles {
		released := ""
		if f.Released {
			released = ", released"
		}
		fmt.Fprintf(w, "  derived file %s (%s, entry %d%s)\n", f.File, f.Note, f.From, released)
	}
}

// entryMethodZ are the METHOD and Z columns of an entry: the accountant
// of its noise events ("fixed" for an entry of fixed costs only, "-" for
// an entry without a cost), and its noise multiplier (the online update's, else the events'
// when they share one; "-" when there is none).
func entryMethodZ(e Entry) (method, z string) {
	method, z = string(e.Method), "-"
	switch {
	case len(e.Events) == 0 && len(e.Fixed) > 0:
		method = "fixed"
	case method == "":
		method = "-"
	}
	switch {
	case e.Z > 0:
		z = fmt.Sprintf("%.4g", e.Z)
	case len(e.Events) > 0:
		z = fmt.Sprintf("%.4g", e.Events[0].Z)
		for _, ev := range e.Events[1:] {
			if ev.Z != e.Events[0].Z {
				z = "several"
			}
		}
	}
	return method, z
}
