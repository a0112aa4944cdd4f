package qlearn

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"dprl/sessionlog"
)

// Data is a discrete-action offline dataset as the learners see it: its
// transitions (s, a, r, s', done) in flat arrays, grouped into units (the
// protected unit of the privacy guarantee: an expert, or a trajectory).
// Unit u owns the rows [Start[u], Start[u+1]). A unit with no transition
// (every session of it a lone final observation) has an empty range.
type Data struct {
	// ObsDim is the observation length and NumActions the number of
	// discrete actions.
	ObsDim, NumActions int
	// Obs and Next are the observations and next observations (Len() x
	// ObsDim, row-major).
	Obs, Next []float64
	// Actions, Rewards and Terminal are per transition; Terminal marks a
	// transition that ended its episode (no bootstrap from Next).
	Actions  []int
	Rewards  []float64
	Terminal []bool
	// Start holds the units' first rows, with Start[Units()] = Len().
	Start []int
}

// Len returns the number of transitions.
func (d *Data) Len() int { return len(d.Actions) }

// Units returns the number of units.
func (d *Data) Units() int { return len(d.Start) - 1 }

// UnitOf names the unit a session belongs to.
type UnitOf func(s *sessionlog.Session) string

// ByExpert groups sessions by their expert (an empty expert is an error in
// FromSessions).
func ByExpert(s *sessionlog.Session) string { return s.Expert }

// FromSessions builds the dataset of the sessions' transitions: step i of a
// session gives (obs_i, a_i, r_i, obs_{i+1}), the last step's next
// observation being the session's final observation and its done flag the
// session's terminal flag. A session that did not terminate and has no final
// observation has no next state for its last step, which is dropped.
// Sessions are grouped into units by unit (nil: each session is a unit), in
// order of first appearance. It checks dimensions, actions in [0, nAct) and
// finiteness, naming the session of the first problem.
func FromSessions(ss []sessionlog.Session, obsDim, nAct int, unit UnitOf) (*Data, error) {
	b, err := NewBuilder(obsDim, nAct, unit)
	if err != nil {
		return nil, err
	}
	for i := range ss {
		if err := b.Count(&ss[i]); err != nil {
			return nil, err
		}
	}
	for i := range ss {
		if err := b.Add(i, &ss[i]); err != nil {
			return nil, err
		}
	}
	return b.Data()
}

// FromIndex is FromSessions on a scanned log, read twice through ix (each
// record checked against its hash): once to count each unit's transitions,
// once to place them, so that only the transitions are held.
func FromIndex(ix *sessionlog.Index, obsDim, nAct int, unit UnitOf) (*Data, error) {
	b, err := NewBuilder(obsDim, nAct, unit)
	if err != nil {
		return nil, err
	}
	if err := ix.Each(func(_ int, s *sessionlog.Session) error { return b.Count(s) }); err != nil {
		return nil, err
	}
	if err := ix.Each(b.Add); err != nil {
		return nil, err
	}
	return b.Data()
}

// Builder builds a Data in two passes over the same sessions, in the same
// order: Count sees every session (it can run as a log is scanned), then
// Add places every session's transitions directly in their unit's rows.
// It holds the transitions and one small record per unit, never the
// sessions.
type Builder struct {
	obsDim, nAct int
	unit         UnitOf
	index        map[string]int // unit key -> unit (unit != nil)
	counts       []int          // transitions per unit
	sessions     int            // sessions counted
	d            *Data
	cursor       []int // next row of each unit (pass 2)
	added        int   // sessions added
}

// NewBuilder returns a builder for observations of length obsDim, nAct
// actions and units named by unit (nil: each session is a unit).
func NewBuilder(obsDim, nAct int, unit UnitOf) (*Builder, error) {
	if obsDim < 1 || nAct < 2 {
		return nil, fmt.Errorf("qlearn: observation length %d and %d actions, want >= 1 and >= 2", obsDim, nAct)
	}
	return &Builder{obsDim: obsDim, nAct: nAct, unit: unit, index: map[string]int{}}, nil
}

// transitions returns the number of transitions a session gives.
func transitions(s *sessionlog.Session) int {
	n := len(s.Steps)
	if n > 0 && !s.Terminal && s.FinalObs == nil {
		n--
	}
	return n
}

// unitOf returns the unit of the i-th session, adding it in pass 1.
func (b *Builder) unitOf(i int, s *sessionlog.Session, add bool) (int, error) {
	if b.unit == nil {
		if add {
			b.counts = append(b.counts, 0)
		}
		return i, nil
	}
	k := b.unit(s)
	if k == "" {
		return 0, fmt.Errorf("qlearn: session %q names no unit (expert)", s.Session)
	}
	u, ok := b.index[k]
	if !ok {
		if !add {
			return 0, fmt.Errorf("qlearn: session %q: unit %q was not counted", s.Session, k)
		}
		u = len(b.counts)
		b.index[k] = u
		b.counts = append(b.counts, 0)
	}
	return u, nil
}

// Count is pass 1: it checks the session and counts its transitions in
// its unit.
func (b *Builder) Count(s *sessionlog.Session) error {
	if b.d != nil {
		return errors.New("qlearn: Count after Add")
	}
	if err := checkSession(s, b.obsDim, b.nAct); err != nil {
		return fmt.Errorf("qlearn: session %q: %w", s.Session, err)
	}
	u, err := b.unitOf(b.sessions, s, true)
	if err != nil {
		return err
	}
	b.counts[u] += transitions(s)
	b.sessions++
	return nil
}

// Add is pass 2: it places the i-th session's transitions (the sessions
// in Count's order) in its unit's rows.
func (b *Builder) Add(i int, s *sessionlog.Session) error {
	if b.d == nil {
		b.alloc()
	}
	if i != b.added || i >= b.sessions {
		return fmt.Errorf("qlearn: session %d added out of order (want %d of %d)", i, b.added, b.sessions)
	}
	u, err := b.unitOf(i, s, false)
	if err != nil {
		return err
	}
	d, dim := b.d, b.obsDim
	if n := transitions(s); b.cursor[u]+n > d.Start[u+1] {
		return fmt.Errorf("qlearn: session %q has more transitions than were counted", s.Session)
	}
	for t := range s.Steps {
		var next []float64
		last := t == len(s.Steps)-1
		switch {
		case !last:
			next = s.Steps[t+1].Obs
		case s.FinalObs != nil:
			next = s.FinalObs
		case s.Terminal:
			next = nil // zeros
		default:
			continue
		}
		r := b.cursor[u]
		b.cursor[u]++
		copy(d.Obs[r*dim:(r+1)*dim], s.Steps[t].Obs)
		copy(d.Next[r*dim:(r+1)*dim], next)
		d.Actions[r] = s.Steps[t].Action.Index
		d.Rewards[r] = s.Steps[t].Reward
		d.Terminal[r] = last && s.Terminal
	}
	b.added++
	return nil
}

// alloc sizes the dataset from pass 1's counts.
func (b *Builder) alloc() {
	U := len(b.counts)
	start := make([]int, U+1)
	for u, c := range b.counts {
		start[u+1] = start[u] + c
	}
	n := start[U]
	b.d = &Data{ObsDim: b.obsDim, NumActions: b.nAct, Obs: make([]float64, n*b.obsDim), Next: make([]float64, n*b.obsDim),
		Actions: make([]int, n), Rewards: make([]float64, n), Terminal: make([]bool, n), Start: start}
	b.cursor = slices.Clone(start[:U])
}

// Data returns the dataset once every counted session was added.
func (b *Builder) Data() (*Data, error) {
	if b.d == nil {
		b.alloc()
	}
	if b.added != b.sessions {
		return nil, fmt.Errorf("qlearn: %d of %d sessions added", b.added, b.sessions)
	}
	for u, c := range b.cursor {
		if c != b.d.Start[u+1] {
			return nil, fmt.Errorf("qlearn: unit %d holds %d of its %d transitions", u, c-b.d.Start[u], b.d.Start[u+1]-b.d.Start[u])
		}
	}
	return b.d, nil
}

// checkSession checks one session's dimensions, actions and values.
func checkSession(s *sessionlog.Session, obsDim, nAct int) error {
	for t := range s.Steps {
		st := &s.Steps[t]
		if len(st.Obs) != obsDim {
			return fmt.Errorf("step %d: observation of length %d, want %d", t, len(st.Obs), obsDim)
		}
		if st.Action.Vec != nil || st.Action.Index < 0 || st.Action.Index >= nAct {
			return fmt.Errorf("step %d: action %v, want a discrete action in [0, %d)", t, st.Action.Index, nAct)
		}
		if !finite(st.Reward) || !allFinite(st.Obs) {
			return fmt.Errorf("step %d: non-finite observation or reward", t)
		}
	}
	if s.FinalObs != nil && (len(s.FinalObs) != obsDim || !allFinite(s.FinalObs)) {
		return fmt.Errorf("final observation of length %d or non-finite, want %d finite values", len(s.FinalObs), obsDim)
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func allFinite(xs []float64) bool {
	for _, x := range xs {
		if !finite(x) {
			return false
		}
	}
	return true
}
