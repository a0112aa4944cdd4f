// Package policies holds the discrete stochastic policies the offline modes
// need on both sides of off-policy evaluation: the behaviour policy that
// generates a session log (dprl sims generate) and the target policy that is
// evaluated on it (dprl offline gtd2). A policy is given on the command line
// by a spec string (Parse) and built from action scores: the logits of a
// saved policy snapshot, or a built-in reference controller of a simulator.
//
// Spec strings:
//
//	uniform | random           every action with probability 1/N
//	snapshot:FILE | policy:FILE  the snapshot's own policy, softmax(logits)
//	greedy:FILE                the argmax of the snapshot's logits
//	softmax:FILE:TEMP          softmax(logits / TEMP)
//	epsilon-greedy:FILE:EPS    the argmax with probability 1-EPS+EPS/N, else uniform
//	greedy | softmax:TEMP | epsilon-greedy:EPS
//	                           the same over the reference scores: the snapshot
//	                           given as reference, else the environment's
//	                           built-in controller (Builtin)
//
// Ties in an argmax go to the lowest action index.
package policies

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"dprl/policy"
)

// ErrSpec marks a policy spec that cannot be parsed or built.
var ErrSpec = errors.New("policies: bad policy spec")

// Scorer gives action preferences (logits) for an observation.
type Scorer interface {
	// NumActions is the number of discrete actions.
	NumActions() int
	// ObsDim is the observation length the scorer reads.
	ObsDim() int
	// Scores writes the N action scores for obs into dst (len NumActions).
	// It returns an error for an observation of the wrong length or with
	// non-finite values.
	Scores(dst, obs []float64) error
}

// Policy is a discrete stochastic policy.
type Policy interface {
	// NumActions is the number of discrete actions.
	NumActions() int
	// Probs writes pi(.|obs) into dst (len NumActions); the values sum to 1.
	Probs(dst, obs []float64) error
	// String is the spec the policy was built from.
	String() string
}

// Uniform is the uniform policy over N actions.
type Uniform struct{ N int }

// NumActions returns N.
func (u Uniform) NumActions() int { return u.N }

// Probs writes 1/N everywhere.
func (u Uniform) Probs(dst, _ []float64) error {
	for i := range dst[:u.N] {
		dst[i] = 1 / float64(u.N)
	}
	return nil
}

// String returns "uniform".
func (Uniform) String() string { return "uniform" }

// Kind is how a policy turns scores into probabilities.
type Kind int

// The score-based policy kinds.
const (
	// Sampled is softmax(scores): a snapshot's own policy.
	Sampled Kind = iota + 1
	// Greedy puts probability 1 on the argmax.
	Greedy
	// Softmax is softmax(scores / Param), Param > 0 the temperature.
	Softmax
	// EpsilonGreedy puts 1-Param+Param/N on the argmax and Param/N on every
	// other action, Param in [0, 1].
	EpsilonGreedy
)

// Scored is a policy computed from a Scorer's action scores.
type Scored struct {
	S     Scorer
	Kind  Kind
	Param float64 // temperature (Softmax) or epsilon (EpsilonGreedy)
	Spec  string  // the spec string, for String
	buf   []float64
}

// NewScored checks the parameter and returns the policy.
func NewScored(s Scorer, k Kind, param float64, spec string) (*Scored, error) {
	switch k {
	case Softmax:
		if !(param > 0) || math.IsInf(param, 0) {
			return nil, fmt.Errorf("%w: %q: temperature %v, want > 0", ErrSpec, spec, param)
		}
	case EpsilonGreedy:
		if !(param >= 0 && param <= 1) {
			return nil, fmt.Errorf("%w: %q: epsilon %v, want in [0, 1]", ErrSpec, spec, param)
		}
	case Sampled, Greedy:
	default:
		return nil, fmt.Errorf("%w: kind %d", ErrSpec, k)
	}
	return &Scored{S: s, Kind: k, Param: param, Spec: spec, buf: make([]float64, s.NumActions())}, nil
}

// NumActions returns the scorer's action count.
func (p *Scored) NumActions() int { return p.S.NumActions() }

// String returns the spec.
func (p *Scored) String() string { return p.Spec }

// Probs computes the policy's probabilities. Not safe for concurrent use (it
// reuses a score buffer).
func (p *Scored) Probs(dst, obs []float64) error {
	n := p.S.NumActions()
	if err := p.S.Scores(p.buf, obs); err != nil {
		return err
	}
	switch p.Kind {
	case Sampled:
		softmax(dst[:n], p.buf, 1)
	case Softmax:
		softmax(dst[:n], p.buf, p.Param)
	case Greedy, EpsilonGreedy:
		best := 0
		for a := 1; a < n; a++ {
			if p.buf[a] > p.buf[best] {
				best = a
			}
		}
		eps := 0.0
		if p.Kind == EpsilonGreedy {
			eps = p.Param
		}
		for a := range dst[:n] {
			dst[a] = eps / float64(n)
		}
		dst[best] += 1 - eps
	}
	return nil
}

// softmax writes softmax(z / temp) into dst, computed stably.
func softmax(dst, z []float64, temp float64) {
	m := math.Inf(-1)
	for _, v := range z {
		m = max(m, v/temp)
	}
	var s float64
	for i, v := range z {
		dst[i] = math.Exp(v/temp - m)
		s += dst[i]
	}
	for i := range dst {
		dst[i] /= s
	}
}

// Sample draws an action from probs by inversion of one uniform draw.
func Sample(rng *rand.Rand, probs []float64) int {
	u := rng.Float64()
	var c float64
	last := 0
	for a, p := range probs {
		if p <= 0 {
			continue
		}
		last = a
		c += p
		if u < c {
			return a
		}
	}
	return last // rounding: the last action with positive probability
}

// SnapshotScorer scores actions by the logits of a saved discrete policy
// snapshot's actor network.
type SnapshotScorer struct {
	spec  policy.Spec
	net   *policy.MLP
	theta []float64
	obs   []float64
}

// NewSnapshotScorer returns the scorer of a discrete-action snapshot: of
// the policy it serves (policy.Snapshot.Served).
func NewSnapshotScorer(s *policy.Snapshot) (*SnapshotScorer, error) {
	if s.Spec.Kind != policy.ActionDiscrete {
		return nil, fmt.Errorf("%w: snapshot has %v actions, want discrete", ErrSpec, s.Spec.Kind)
	}
	net, err := policy.NewMLP(append(append([]int{s.Spec.ObsDim}, s.Hidden...), s.Spec.NumActions)...)
	if err != nil {
		return nil, fmt.Errorf("%w: snapshot network: %v", ErrSpec, err)
	}
	theta := s.Served() // the served average, when the snapshot holds one
	if len(theta) < net.NumParams() {
		return nil, fmt.Errorf("%w: snapshot theta has %d values, the actor needs %d", ErrSpec, len(theta), net.NumParams())
	}
	return &SnapshotScorer{spec: s.Spec, net: net, theta: theta[:net.NumParams()]}, nil
}

// LoadSnapshot reads and decodes a snapshot file (policy.MarshalSnapshot
// format) and returns its scorer.
func LoadSnapshot(path string) (*SnapshotScorer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	s, err := policy.UnmarshalSnapshot(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSpec, path, err)
	}
	return NewSnapshotScorer(s)
}

// NumActions returns the snapshot's action count.
func (s *SnapshotScorer) NumActions() int { return s.spec.NumActions }

// ObsDim returns the snapshot's observation length.
func (s *SnapshotScorer) ObsDim() int { return s.spec.ObsDim }

// Scores writes the actor's logits.
func (s *SnapshotScorer) Scores(dst, obs []float64) error {
	if err := checkObs(obs, s.spec.ObsDim); err != nil {
		return fmt.Errorf("snapshot policy: %w", err)
	}
	s.net.Forward(dst, s.theta, obs)
	return nil
}

func checkObs(obs []float64, dim int) error {
	if len(obs) != dim {
		return fmt.Errorf("observation length %d, want %d", len(obs), dim)
	}
	for i, x := range obs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("obs[%d] = %v", i, x)
		}
	}
	return nil
}

// Reference is a built-in scripted controller: it scores its preferred
// action 1 and the others 0.
type Reference struct {
	Name      string
	N, Dim    int
	Preferred func(obs []float64) int
}

// NumActions returns N.
func (r *Reference) NumActions() int { return r.N }

// ObsDim returns the observation length.
func (r *Reference) ObsDim() int { return r.Dim }

// Scores puts 1 on the preferred action and 0 elsewhere.
func (r *Reference) Scores(dst, obs []float64) error {
	if err := checkObs(obs, r.Dim); err != nil {
		return fmt.Errorf("%s reference: %w", r.Name, err)
	}
	clear(dst[:r.N])
	dst[r.Preferred(obs)] = 1
	return nil
}

// Builtin returns the reference controller of a simulator, when it has one:
//
//   - chain (any number of states): "advance", action 1;
//   - mountaincar: "pump", push in the direction of the velocity (action 2
//     when velocity >= 0, else 0), which reaches the goal from every start.
func Builtin(env string, obsDim int) (*Reference, bool) {
	switch env {
	case "chain":
		return &Reference{Name: "chain advance", N: 2, Dim: obsDim, Preferred: func([]float64) int { return 1 }}, true
	case "mountaincar":
		if obsDim != 2 {
			return nil, false
		}
		return &Reference{Name: "mountaincar pump", N: 3, Dim: 2, Preferred: func(obs []float64) int {
			if obs[1] >= 0 {
				return 2
			}
			return 0
		}}, true
	}
	return nil, false
}

// Options say what a spec without a file refers to.
type Options struct {
	// NumActions is the environment's or log's action count; a policy with a
	// different count is an error. 0: not checked.
	NumActions int
	// ObsDim is the observation length; a snapshot with a different one is
	// an error. 0: not checked.
	ObsDim int
	// Reference, if set, is the scorer that greedy, softmax:TEMP and
	// epsilon-greedy:EPS without a file refer to.
	Reference Scorer
}

// Parse builds the policy described by spec (see the package comment).
func Parse(spec string, o Options) (Policy, error) {
	parts := strings.Split(spec, ":")
	head := parts[0]
	num := func(s, what string) (float64, error) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q: %s %q is not a number", ErrSpec, spec, what, s)
		}
		return v, nil
	}
	ref := func() (Scorer, error) {
		if o.Reference == nil {
			return nil, fmt.Errorf("%w: %q needs a reference policy (a snapshot file, e.g. %s:FILE:..., or an environment with a built-in controller: chain, mountaincar)", ErrSpec, spec, head)
		}
		return o.Reference, nil
	}
	var (
		sc    Scorer
		kind  Kind
		param float64
		err   error
	)
	switch {
	case (head == "uniform" || head == "random") && len(parts) == 1:
		if o.NumActions < 2 {
			return nil, fmt.Errorf("%w: %q needs the number of actions", ErrSpec, spec)
		}
		return Uniform{N: o.NumActions}, nil
	case (head == "snapshot" || head == "policy") && len(parts) == 2:
		sc, err = LoadSnapshot(parts[1])
		kind = Sampled
	case head == "greedy" && len(parts) <= 2:
		kind = Greedy
		if len(parts) == 2 {
			sc, err = LoadSnapshot(parts[1])
		} else {
			sc, err = ref()
		}
	case (head == "softmax" || head == "epsilon-greedy") && (len(parts) == 2 || len(parts) == 3):
		what := "temperature"
		kind = Softmax
		if head == "epsilon-greedy" {
			kind, what = EpsilonGreedy, "epsilon"
		}
		if param, err = num(parts[len(parts)-1], what); err != nil {
			return nil, err
		}
		if len(parts) == 3 {
			sc, err = LoadSnapshot(parts[1])
		} else {
			sc, err = ref()
		}
	default:
		return nil, fmt.Errorf("%w: %q (want uniform, snapshot:FILE, greedy[:FILE], softmax[:FILE]:TEMP or epsilon-greedy[:FILE]:EPS)", ErrSpec, spec)
	}
	if err != nil {
		return nil, err
	}
	if o.NumActions != 0 && sc.NumActions() != o.NumActions {
		return nil, fmt.Errorf("%w: %q has %d actions, the data has %d", ErrSpec, spec, sc.NumActions(), o.NumActions)
	}
	if o.ObsDim != 0 && sc.ObsDim() != o.ObsDim {
		return nil, fmt.Errorf("%w: %q reads observations of length %d, the data has %d", ErrSpec, spec, sc.ObsDim(), o.ObsDim)
	}
	return NewScored(sc, kind, param, spec)
}
