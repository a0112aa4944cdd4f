package svt

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"dprl/internal/atomicfile"
	"dprl/policy"
	"dprl/sessionlog"
)

// Errors of the expert loader.
var (
	// ErrUnknownExpert marks an expert id of a log with no snapshot file.
	ErrUnknownExpert = errors.New("svt: unknown expert")
	// ErrExpertMismatch marks an expert that does not fit the log: another
	// observation length or action space, or a behaviour probability in the
	// log that the smoothed expert does not give.
	ErrExpertMismatch = errors.New("svt: expert does not match the log")
)

// SnapshotExt is the file extension of an expert's snapshot: expert id "e17"
// lives in DIR/e17.snap.
const SnapshotExt = ".snap"

// SmoothedExpert is one expert as the paper queries it: a trained
// categorical policy (a policy.Snapshot) smoothed to p_min. Sharma et al.,
// App. B.1: "for each state, the action with the highest probability gets
// 1 - (|A| - 1) p_min probability, whereas all the other actions get p_min",
// so every action probability is at least p_min (Assumption 3.6). Ties for
// the highest probability go to the lowest action index.
//
// It owns a forward workspace: not safe for concurrent use.
type SmoothedExpert struct {
	// ID is the expert's id in the session log.
	ID    string
	net   *policy.MLP
	theta []float64 // the policy network's parameters
	out   []float64
	pMin  float64
	pTop  float64 // 1 - (|A| - 1) p_min
	nAct  int
}

// NewSmoothedExpert returns the expert of a discrete policy snapshot smoothed
// to pMin, which must be in (0, 1/|A|] so that the top action keeps at least
// pMin.
func NewSmoothedExpert(id string, snap *policy.Snapshot, pMin float64) (*SmoothedExpert, error) {
	if snap.Spec.Kind != policy.ActionDiscrete {
		return nil, fmt.Errorf("%w: expert %q: %v actions, want discrete", ErrExpertMismatch, id, snap.Spec.Kind)
	}
	n := snap.Spec.NumActions
	if !(pMin > 0) || pMin*float64(n) > 1 {
		return nil, fmt.Errorf("svt: p_min = %v, want 0 < p_min <= 1/|A| = 1/%d", pMin, n)
	}
	net, err := policy.NewMLP(append(append([]int{snap.Spec.ObsDim}, snap.Hidden...), n)...)
	if err != nil {
		return nil, fmt.Errorf("svt: expert %q: %w", id, err)
	}
	if len(snap.Theta) < net.NumParams() {
		return nil, fmt.Errorf("svt: expert %q: %d parameters, want at least %d", id, len(snap.Theta), net.NumParams())
	}
	return &SmoothedExpert{ID: id, net: net, theta: snap.Theta[:net.NumParams()], out: make([]float64, n),
		pMin: pMin, pTop: 1 - float64(n-1)*pMin, nAct: n}, nil
}

// NumActions returns |A|.
func (e *SmoothedExpert) NumActions() int { return e.nAct }

// Greedy returns the snapshot policy's most probable action for obs (the
// largest logit; the lowest index on ties).
func (e *SmoothedExpert) Greedy(obs []float64) int {
	e.net.Forward(e.out, e.theta, obs)
	best := 0
	for a := 1; a < e.nAct; a++ {
		if e.out[a] > e.out[best] {
			best = a
		}
	}
	return best
}

// Prob returns the smoothed probability of action a in obs: 1 - (|A|-1)
// p_min for the greedy action, p_min for the others (Sharma et al., App.
// B.1). It implements Expert.
func (e *SmoothedExpert) Prob(obs []float64, a int) float64 {
	if e.Greedy(obs) == a {
		return e.pTop
	}
	return e.pMin
}

// Sample draws an action for obs from the smoothed policy with rng and
// returns it with its probability.
func (e *SmoothedExpert) Sample(rng *rand.Rand, obs []float64) (action int, prob float64) {
	g := e.Greedy(obs)
	if e.nAct == 1 || rng.Float64() < e.pTop {
		return g, e.pTop
	}
	// One of the other |A|-1 actions, uniformly.
	a := rng.IntN(e.nAct - 1)
	if a >= g {
		a++
	}
	return a, e.pMin
}

// CheckID reports whether id can name an expert file: 1 to 128 characters
// of [A-Za-z0-9._-], not starting with a dot.
func CheckID(id string) error {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return fmt.Errorf("svt: expert id %q: want 1-128 characters of [A-Za-z0-9._-], not starting with '.'", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("svt: expert id %q: character %q not in [A-Za-z0-9._-]", id, c)
		}
	}
	return nil
}

// ExpertPath is the snapshot file of expert id in dir.
func ExpertPath(dir, id string) string { return filepath.Join(dir, id+SnapshotExt) }

// WriteExpert writes the snapshot of expert id to dir atomically (a synced
// temporary file renamed into place, permissions 0600).
func WriteExpert(dir, id string, snap *policy.Snapshot) error {
	if err := CheckID(id); err != nil {
		return err
	}
	b, err := policy.MarshalSnapshot(snap)
	if err != nil {
		return fmt.Errorf("svt: expert %q: %w", id, err)
	}
	if err := atomicfile.WriteFile(ExpertPath(dir, id), b, 0o600); err != nil {
		return fmt.Errorf("svt: expert %q: %w", id, err)
	}
	return nil
}

// LoadExperts loads the experts ids from their snapshot files in dir and
// smooths them to pMin, checking each against the log's observation length
// and discrete action count: obsDim must equal the snapshot's, and every
// action index the log uses (below numActions) must exist in it. All experts
// must share one action count. Every missing file is reported at once,
// wrapping ErrUnknownExpert; a snapshot that does not fit wraps
// ErrExpertMismatch (or policy.ErrCorruptSnapshot).
func LoadExperts(dir string, ids []string, obsDim, numActions int, pMin float64) ([]*SmoothedExpert, error) {
	var missing []string
	for _, id := range ids {
		if err := CheckID(id); err != nil {
			return nil, err
		}
		if _, err := os.Stat(ExpertPath(dir, id)); errors.Is(err, os.ErrNotExist) {
			missing = append(missing, id)
		} else if err != nil {
			return nil, fmt.Errorf("svt: expert %q: %w", id, err)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		shown := missing
		if len(shown) > 5 {
			shown = shown[:5]
		}
		return nil, fmt.Errorf("%w: %d expert id(s) of the log have no %s file in %s: %s%s", ErrUnknownExpert,
			len(missing), SnapshotExt, dir, strings.Join(shown, ", "), map[bool]string{true: ", ...", false: ""}[len(missing) > 5])
	}
	out := make([]*SmoothedExpert, len(ids))
	nAct := 0
	for i, id := range ids {
		b, err := os.ReadFile(ExpertPath(dir, id))
		if err != nil {
			return nil, fmt.Errorf("svt: expert %q: %w", id, err)
		}
		snap, err := policy.UnmarshalSnapshot(b)
		if err != nil {
			return nil, fmt.Errorf("svt: expert %q (%s): %w", id, ExpertPath(dir, id), err)
		}
		if snap.Spec.Kind != policy.ActionDiscrete {
			return nil, fmt.Errorf("%w: expert %q: %v actions, the log's are discrete", ErrExpertMismatch, id, snap.Spec.Kind)
		}
		if snap.Spec.ObsDim != obsDim {
			return nil, fmt.Errorf("%w: expert %q: obs_dim %d in the snapshot != %d in the log", ErrExpertMismatch, id, snap.Spec.ObsDim, obsDim)
		}
		if snap.Spec.NumActions < numActions {
			return nil, fmt.Errorf("%w: expert %q: %d actions in the snapshot, the log uses action %d", ErrExpertMismatch, id, snap.Spec.NumActions, numActions-1)
		}
		if nAct == 0 {
			nAct = snap.Spec.NumActions
		} else if snap.Spec.NumActions != nAct {
			return nil, fmt.Errorf("%w: expert %q: %d actions, expert %q has %d", ErrExpertMismatch, id, snap.Spec.NumActions, ids[0], nAct)
		}
		if out[i], err = NewSmoothedExpert(id, snap, pMin); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// probTolerance is the relative difference allowed between a logged
// behaviour probability and the smoothed expert's: the log stores log(p)
// as the shortest decimal that round-trips, so exp(logp) is within a few
// ulps of p.
const probTolerance = 1e-9

// CheckBehaviour verifies that the session was generated by e: at every step
// the logged behaviour probability must be the smoothed expert's
// probability of the logged action. The privacy analysis (Sharma et al.,
// Lemma 5.1) is about the experts that generated the data, so DataRelease
// must query exactly those policies at exactly this p_min; a mismatch
// (another snapshot, another p_min) wraps ErrExpertMismatch.
func CheckBehaviour(s *sessionlog.Session, e *SmoothedExpert) error {
	for k := range s.Steps {
		st := &s.Steps[k]
		if st.Action.Vec != nil {
			return fmt.Errorf("%w: session %q step %d: continuous action", ErrExpertMismatch, s.Session, k)
		}
		if st.Action.Index >= e.nAct {
			return fmt.Errorf("%w: session %q step %d: action %d, expert %q has %d actions", ErrExpertMismatch, s.Session, k, st.Action.Index, e.ID, e.nAct)
		}
		if st.NoProb {
			return fmt.Errorf("%w: session %q step %d: no behaviour probability logged; the release checks every step's against its expert", ErrExpertMismatch, s.Session, k)
		}
		logged := math.Exp(st.LogP)
		want := e.Prob(st.Obs, st.Action.Index)
		if !(math.Abs(logged-want) <= probTolerance*want) {
			return fmt.Errorf("%w: session %q step %d: logged prob %.6g, expert %q smoothed to p_min %v gives %.6g (wrong snapshot, or the log was generated at another p_min)",
				ErrExpertMismatch, s.Session, k, logged, e.ID, e.pMin, want)
		}
	}
	return nil
}
