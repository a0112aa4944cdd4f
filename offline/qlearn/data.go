package qlearn

import (
	"fmt"
	"math"

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
	if obsDim < 1 || nAct < 2 {
		return nil, fmt.Errorf("qlearn: observation length %d and %d actions, want >= 1 and >= 2", obsDim, nAct)
	}
	// Order sessions by unit, keeping first-appearance order.
	order := make([]int, 0, len(ss))
	var starts []int
	if unit == nil {
		for i := range ss {
			order = append(order, i)
			starts = append(starts, i)
		}
	} else {
		index := map[string]int{}
		var members [][]int
		for i := range ss {
			k := unit(&ss[i])
			if k == "" {
				return nil, fmt.Errorf("qlearn: session %q names no unit (expert)", ss[i].Session)
			}
			u, ok := index[k]
			if !ok {
				u = len(members)
				index[k] = u
				members = append(members, nil)
			}
			members[u] = append(members[u], i)
		}
		for _, m := range members {
			starts = append(starts, len(order))
			order = append(order, m...)
		}
	}
	n := 0
	for _, i := range order {
		s := &ss[i]
		n += len(s.Steps)
		if !s.Terminal && s.FinalObs == nil && len(s.Steps) > 0 {
			n--
		}
	}
	d := &Data{ObsDim: obsDim, NumActions: nAct,
		Obs: make([]float64, 0, n*obsDim), Next: make([]float64, 0, n*obsDim),
		Actions: make([]int, 0, n), Rewards: make([]float64, 0, n), Terminal: make([]bool, 0, n),
		Start: make([]int, 0, len(starts)+1)}
	zero := make([]float64, obsDim)
	k := 0
	for j, i := range order {
		for k < len(starts) && starts[k] == j {
			d.Start = append(d.Start, d.Len())
			k++
		}
		s := &ss[i]
		if err := checkSession(s, obsDim, nAct); err != nil {
			return nil, fmt.Errorf("qlearn: session %q: %w", s.Session, err)
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
				next = zero
			default:
				continue
			}
			d.Obs = append(d.Obs, s.Steps[t].Obs...)
			d.Next = append(d.Next, next...)
			d.Actions = append(d.Actions, s.Steps[t].Action.Index)
			d.Rewards = append(d.Rewards, s.Steps[t].Reward)
			d.Terminal = append(d.Terminal, last && s.Terminal)
		}
	}
	for k < len(starts) {
		d.Start = append(d.Start, d.Len())
		k++
	}
	d.Start = append(d.Start, d.Len())
	return d, nil
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
