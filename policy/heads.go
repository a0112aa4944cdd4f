package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Categorical is the action distribution over N discrete actions with
// probabilities softmax(logits). Its methods take the logits (len N) of one
// observation and allocate nothing.
type Categorical struct {
	N int // number of actions, >= 2
}

func (c Categorical) check(logits []float64) {
	if len(logits) != c.N {
		panic(fmt.Sprintf("policy: categorical logits length %d, want %d", len(logits), c.N))
	}
}

// logSumExp returns log(sum exp(z)), computed stably.
func logSumExp(z []float64) float64 {
	m := math.Inf(-1)
	for _, v := range z {
		m = max(m, v)
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// LogProb returns log pi(a) = logits[a] - logsumexp(logits).
func (c Categorical) LogProb(logits []float64, a int) float64 {
	c.check(logits)
	if a < 0 || a >= c.N {
		panic(fmt.Sprintf("policy: categorical action %d out of [0, %d)", a, c.N))
	}
	return logits[a] - logSumExp(logits)
}

// Entropy returns H = -sum_j p_j log p_j.
func (c Categorical) Entropy(logits []float64) float64 {
	c.check(logits)
	lse := logSumExp(logits)
	h := 0.0
	for _, z := range logits {
		lp := z - lse
		h -= math.Exp(lp) * lp
	}
	return h
}

// Sample draws an action from softmax(logits) by inversion of one uniform
// draw from rng.
func (c Categorical) Sample(rng *rand.Rand, logits []float64) int {
	c.check(logits)
	lse := logSumExp(logits)
	u := rng.Float64()
	acc := 0.0
	for j, z := range logits {
		acc += math.Exp(z - lse)
		if u < acc {
			return j
		}
	}
	return c.N - 1 // rounding: acc ended just below 1
}

// AddGrad adds to dst (len N) wLogp * d log pi(a)/d logits + wEnt * dH/d logits,
// where d log pi(a)/dz_j = 1{j=a} - p_j and dH/dz_j = -p_j (log p_j + H).
func (c Categorical) AddGrad(dst, logits []float64, a int, wLogp, wEnt float64) {
	c.check(logits)
	if len(dst) != c.N {
		panic("policy: categorical grad length mismatch")
	}
	lse := logSumExp(logits)
	h := 0.0
	if wEnt != 0 {
		for _, z := range logits {
			lp := z - lse
			h -= math.Exp(lp) * lp
		}
	}
	for j, z := range logits {
		lp := z - lse
		p := math.Exp(lp)
		g := -wLogp * p
		if j == a {
			g += wLogp
		}
		if wEnt != 0 {
			g -= wEnt * p * (lp + h)
		}
		dst[j] += g
	}
}

// DiagGaussian is the action distribution N(mean, diag(exp(logStd))^2) over
// Dim-dimensional actions. mean comes from the network for each observation;
// logStd is a state-independent parameter vector (part of the flat policy
// parameters). Its methods allocate nothing.
type DiagGaussian struct {
	Dim int // action dimension, >= 1
}

const halfLog2Pi = 0.91893853320467274178 // 0.5 * log(2 pi)

func (g DiagGaussian) check(v []float64) {
	if len(v) != g.Dim {
		panic(fmt.Sprintf("policy: gaussian vector length %d, want %d", len(v), g.Dim))
	}
}

// LogProb returns log N(a; mean, diag(exp(2 logStd))) =
// sum_i -(a_i-mean_i)^2/(2 sigma_i^2) - logStd_i - 0.5 log(2 pi).
func (g DiagGaussian) LogProb(mean, logStd, a []float64) float64 {
	g.check(mean)
	g.check(logStd)
	g.check(a)
	lp := 0.0
	for i := range a {
		z := (a[i] - mean[i]) * math.Exp(-logStd[i])
		lp += -0.5*z*z - logStd[i] - halfLog2Pi
	}
	return lp
}

// Entropy returns sum_i logStd_i + Dim*(0.5 + 0.5 log(2 pi)); its gradient
// with respect to each logStd_i is 1.
func (g DiagGaussian) Entropy(logStd []float64) float64 {
	g.check(logStd)
	h := 0.0
	for _, s := range logStd {
		h += s + 0.5 + halfLog2Pi
	}
	return h
}

// Sample writes mean + exp(logStd) .* eps into dst, eps standard normal draws
// from rng.
func (g DiagGaussian) Sample(dst []float64, rng *rand.Rand, mean, logStd []float64) {
	g.check(dst)
	g.check(mean)
	g.check(logStd)
	for i := range dst {
		dst[i] = mean[i] + math.Exp(logStd[i])*rng.NormFloat64()
	}
}

// AddGrad adds wLogp * d log pi(a) and wEnt * dH to dMean and dLogStd:
// d log pi/d mean_i = (a_i-mean_i)/sigma_i^2,
// d log pi/d logStd_i = (a_i-mean_i)^2/sigma_i^2 - 1, dH/d logStd_i = 1.
func (g DiagGaussian) AddGrad(dMean, dLogStd, mean, logStd, a []float64, wLogp, wEnt float64) {
	g.check(dMean)
	g.check(dLogStd)
	g.check(mean)
	g.check(logStd)
	g.check(a)
	for i := range a {
		inv := math.Exp(-logStd[i])
		z := (a[i] - mean[i]) * inv
		dMean[i] += wLogp * z * inv
		dLogStd[i] += wLogp*(z*z-1) + wEnt
	}
}
