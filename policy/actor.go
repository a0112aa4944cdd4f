package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Actor serves actions from the policy block of a joint parameter vector
// (the layout of Learner). It owns a forward workspace: allocation-free, not
// safe for concurrent use (one Actor per serving goroutine).
type Actor struct {
	spec   Spec
	net    *MLP
	nActor int
	nPi    int
	out    []float64
	scale  []float64 // PPOConfig.ObsScale, empty if none
	in     []float64 // scaled observation
}

// NewActorFor returns an actor for spec with cfg's hidden widths and
// observation scaling: the actor of a Learner with the same PPOConfig.
func NewActorFor(spec Spec, cfg PPOConfig) (*Actor, error) {
	if err := checkObsScale(cfg.ObsScale, spec); err != nil {
		return nil, err
	}
	a, err := NewActor(spec, cfg.Hidden)
	if err != nil {
		return nil, err
	}
	a.scale = append([]float64(nil), cfg.ObsScale...)
	return a, nil
}

// NewActor returns an actor for spec with the given hidden widths (the same
// as the Learner's cfg.PPO.Hidden) and no observation scaling; NewActorFor
// takes both from a PPOConfig.
func NewActor(spec Spec, hidden []int) (*Actor, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	net, err := NewMLP(append(append([]int{spec.ObsDim}, hidden...), spec.netOut())...)
	if err != nil {
		return nil, err
	}
	a := &Actor{spec: spec, net: net, nActor: net.NumParams(), out: make([]float64, spec.netOut()), in: make([]float64, spec.ObsDim)}
	a.nPi = a.nActor
	if spec.Kind == ActionContinuous {
		a.nPi += spec.ActionDim
	}
	return a, nil
}

// NumPolicyParams returns the policy block length; theta passed to the
// methods may be the policy block or the whole joint vector (only its first
// NumPolicyParams values are read).
func (a *Actor) NumPolicyParams() int { return a.nPi }

// input checks the arguments and returns the network input: obs, or its
// scaled copy.
func (a *Actor) input(theta, obs []float64) []float64 {
	if len(theta) < a.nPi || len(obs) != a.spec.ObsDim {
		panic(fmt.Sprintf("policy: actor theta %d obs %d, want >= %d and %d", len(theta), len(obs), a.nPi, a.spec.ObsDim))
	}
	if len(a.scale) == 0 {
		return obs
	}
	for i, v := range obs {
		a.in[i] = v * a.scale[i]
	}
	return a.in
}

// ActDiscrete samples an action for obs from a discrete policy with rng and
// returns it with its log-probability. It allocates nothing.
func (a *Actor) ActDiscrete(rng *rand.Rand, theta, obs []float64) (action int, logp float64) {
	if a.spec.Kind != ActionDiscrete {
		panic("policy: ActDiscrete on a continuous policy")
	}
	a.net.Forward(a.out, theta[:a.nActor], a.input(theta, obs))
	c := Categorical{N: a.spec.NumActions}
	action = c.Sample(rng, a.out)
	return action, c.LogProb(a.out, action)
}

// Probs writes the action probabilities of a discrete policy at obs into
// dst (len NumActions): the softmax of the logits. It allocates nothing.
// Exact evaluation of one-step tasks uses it (the expected reward of the
// policy is sum_a Probs[a] E[r | obs, a]).
func (a *Actor) Probs(dst, theta, obs []float64) {
	if a.spec.Kind != ActionDiscrete || len(dst) != a.spec.NumActions {
		panic(fmt.Sprintf("policy: Probs needs a discrete policy and %d slots, got %d", a.spec.NumActions, len(dst)))
	}
	a.net.Forward(a.out, theta[:a.nActor], a.input(theta, obs))
	lse := logSumExp(a.out)
	for i, z := range a.out {
		dst[i] = math.Exp(z - lse)
	}
}

// ActContinuous samples an action for obs from a Gaussian policy into dst
// (len ActionDim) and returns its log density. It allocates nothing.
func (a *Actor) ActContinuous(dst []float64, rng *rand.Rand, theta, obs []float64) (logp float64) {
	if a.spec.Kind != ActionContinuous {
		panic("policy: ActContinuous on a discrete policy")
	}
	a.net.Forward(a.out, theta[:a.nActor], a.input(theta, obs))
	g := DiagGaussian{Dim: a.spec.ActionDim}
	logStd := theta[a.nActor:a.nPi]
	g.Sample(dst, rng, a.out, logStd)
	return g.LogProb(a.out, logStd, dst)
}
