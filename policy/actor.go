package policy

import (
	"fmt"
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
}

// NewActor returns an actor for spec with the given hidden widths (the same
// as the Learner's cfg.PPO.Hidden).
func NewActor(spec Spec, hidden []int) (*Actor, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	net, err := NewMLP(append(append([]int{spec.ObsDim}, hidden...), spec.netOut())...)
	if err != nil {
		return nil, err
	}
	a := &Actor{spec: spec, net: net, nActor: net.NumParams(), out: make([]float64, spec.netOut())}
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

func (a *Actor) check(theta, obs []float64) {
	if len(theta) < a.nPi || len(obs) != a.spec.ObsDim {
		panic(fmt.Sprintf("policy: actor theta %d obs %d, want >= %d and %d", len(theta), len(obs), a.nPi, a.spec.ObsDim))
	}
}

// ActDiscrete samples an action for obs from a discrete policy with rng and
// returns it with its log-probability. It allocates nothing.
func (a *Actor) ActDiscrete(rng *rand.Rand, theta, obs []float64) (action int, logp float64) {
	if a.spec.Kind != ActionDiscrete {
		panic("policy: ActDiscrete on a continuous policy")
	}
	a.check(theta, obs)
	a.net.Forward(a.out, theta[:a.nActor], obs)
	c := Categorical{N: a.spec.NumActions}
	action = c.Sample(rng, a.out)
	return action, c.LogProb(a.out, action)
}

// ActContinuous samples an action for obs from a Gaussian policy into dst
// (len ActionDim) and returns its log density. It allocates nothing.
func (a *Actor) ActContinuous(dst []float64, rng *rand.Rand, theta, obs []float64) (logp float64) {
	if a.spec.Kind != ActionContinuous {
		panic("policy: ActContinuous on a discrete policy")
	}
	a.check(theta, obs)
	a.net.Forward(a.out, theta[:a.nActor], obs)
	g := DiagGaussian{Dim: a.spec.ActionDim}
	logStd := theta[a.nActor:a.nPi]
	g.Sample(dst, rng, a.out, logStd)
	return g.LogProb(a.out, logStd, dst)
}
