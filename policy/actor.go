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

	// Batch workspaces (ActDiscreteBatch, ActContinuousBatch), grown to the
	// largest batch seen.
	inBatch, outBatch []float64
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

// batchForward computes the network outputs for n observations (row-major
// in obs) into a.outBatch, scaling them first if the actor scales
// observations. A row's outputs do not depend on n or on the other rows
// (MLP.ForwardBatch), so a batched rollout is the same as one user at a
// time with ForwardBatch.
func (a *Actor) batchForward(theta, obs []float64, n int) []float64 {
	od, no := a.spec.ObsDim, a.spec.netOut()
	if len(theta) < a.nPi || n < 1 || len(obs) != n*od {
		panic(fmt.Sprintf("policy: actor batch theta %d obs %d n %d, want >= %d and n*%d", len(theta), len(obs), n, a.nPi, od))
	}
	if cap(a.outBatch) < n*no {
		a.outBatch = make([]float64, n*no)
		a.inBatch = make([]float64, n*od)
		a.net.Reserve(n)
	}
	x := obs
	if len(a.scale) > 0 {
		x = a.inBatch[:n*od]
		for i, v := range obs {
			x[i] = v * a.scale[i%od]
		}
	}
	out := a.outBatch[:n*no]
	a.net.ForwardBatch(out, theta[:a.nActor], x, n)
	return out
}

// ActDiscreteBatch samples one action for each of the len(rngs)
// observations in obs (row-major), row i with rngs[i], into actions and
// their log-probabilities into logps: one batched forward for all rows.
// Row i gets what ActDiscrete would with a network forward computed by
// MLP.ForwardBatch (the same values whatever the batch). It allocates
// nothing once its workspaces have grown to the batch size.
func (a *Actor) ActDiscreteBatch(rngs []*rand.Rand, theta, obs []float64, actions []int, logps []float64) {
	if a.spec.Kind != ActionDiscrete {
		panic("policy: ActDiscreteBatch on a continuous policy")
	}
	n, k := len(rngs), a.spec.NumActions
	if len(actions) != n || len(logps) != n {
		panic(fmt.Sprintf("policy: actor batch of %d rngs, %d actions, %d logps", n, len(actions), len(logps)))
	}
	out := a.batchForward(theta, obs, n)
	c := Categorical{N: k}
	for i, rng := range rngs {
		row := out[i*k : (i+1)*k]
		actions[i] = c.Sample(rng, row)
		logps[i] = c.LogProb(row, actions[i])
	}
}

// ActContinuousBatch is ActDiscreteBatch for a Gaussian policy: row i's
// action goes to dst[i*ActionDim:(i+1)*ActionDim].
func (a *Actor) ActContinuousBatch(dst []float64, rngs []*rand.Rand, theta, obs []float64, logps []float64) {
	if a.spec.Kind != ActionContinuous {
		panic("policy: ActContinuousBatch on a discrete policy")
	}
	n, d := len(rngs), a.spec.ActionDim
	if len(dst) != n*d || len(logps) != n {
		panic(fmt.Sprintf("policy: actor batch of %d rngs, dst %d, %d logps", n, len(dst), len(logps)))
	}
	out := a.batchForward(theta, obs, n)
	g := DiagGaussian{Dim: d}
	logStd := theta[a.nActor:a.nPi]
	for i, rng := range rngs {
		mean, act := out[i*d:(i+1)*d], dst[i*d:(i+1)*d]
		g.Sample(act, rng, mean, logStd)
		logps[i] = g.LogProb(mean, logStd, act)
	}
}
