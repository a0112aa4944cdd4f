package primorl

import (
	"fmt"
	"math"
)

// Scales are the public per-component scales of the models' inputs and
// targets: In for (s, a) (len ObsDim + ActDim), Out for (s' - s, r) (len
// ObsDim + 1). They come from public knowledge of the environment (its
// observation and action bounds, its public reward range), never from the
// private data, so scaling releases nothing.
type Scales struct {
	In, Out []float64
	// Circle lists pairs of observation components that are a cosine and a
	// sine (public knowledge of the observation's definition): the model
	// environment puts each predicted pair back on the unit circle, which
	// keeps its rollouts among observations the real system can produce.
	Circle [][2]int
	// Mirror, if set, is the environment's mirror symmetry (public
	// knowledge of its equations of motion and reward): the sign each
	// component of (s, a) takes under the reflection M (len ObsDim +
	// ActDim, each +1 or -1), such that stepping from M(s, a) reaches M s'
	// with the same reward. The model environment can average each model's
	// prediction with its mirror image (ModelEnv.SetMirror), which cancels
	// any part of the released model that breaks the symmetry, such as a
	// constant drift the training noise put into a speed's change.
	Mirror []float64
	// Reward, if set, is the environment's reward function (public: the
	// task's definition, not the data) at the observation obs, the action
	// act and the next observation next. The model environment can use it
	// instead of the reward the ensemble predicts (ModelEnv.SetPublicReward),
	// which a policy cannot exploit far from the logged states.
	Reward func(obs, act, next []float64) float64
}

// Validate checks every scale is finite and > 0 and the lengths match obs
// and act dimensions.
func (s Scales) Validate(obsDim, actDim int) error {
	if len(s.In) != obsDim+actDim || len(s.Out) != obsDim+1 {
		return fmt.Errorf("primorl: scales of %d inputs and %d targets, want %d and %d", len(s.In), len(s.Out), obsDim+actDim, obsDim+1)
	}
	for _, v := range append(append([]float64(nil), s.In...), s.Out...) {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("primorl: scale %v, want finite and > 0", v)
		}
	}
	if s.Mirror != nil {
		if len(s.Mirror) != obsDim+actDim {
			return fmt.Errorf("primorl: mirror of %d signs, want %d", len(s.Mirror), obsDim+actDim)
		}
		for _, v := range s.Mirror {
			if v != 1 && v != -1 {
				return fmt.Errorf("primorl: mirror sign %v, want +1 or -1", v)
			}
		}
	}
	for _, p := range s.Circle {
		if p[0] < 0 || p[1] < 0 || p[0] >= obsDim || p[1] >= obsDim || p[0] == p[1] {
			return fmt.Errorf("primorl: circle pair %v outside the %d observation components", p, obsDim)
		}
	}
	return nil
}

// Encode appends one transition, scaled, to x (inputs) and y (targets) and
// returns them.
func (s Scales) Encode(x, y, obs, act, next []float64, reward float64) ([]float64, []float64) {
	for i, v := range obs {
		x = append(x, v/s.In[i])
	}
	for j, v := range act {
		x = append(x, v/s.In[len(obs)+j])
	}
	for i, v := range next {
		y = append(y, (v-obs[i])/s.Out[i])
	}
	return x, append(y, reward/s.Out[len(obs)])
}

// project puts each Circle pair of obs back on the unit circle (a zero pair
// becomes (1, 0)).
func (s Scales) project(obs []float64) {
	for _, p := range s.Circle {
		c, v := obs[p[0]], obs[p[1]]
		n := math.Hypot(c, v)
		if !(n > 0) || math.IsInf(n, 0) {
			obs[p[0]], obs[p[1]] = 1, 0
			continue
		}
		obs[p[0]], obs[p[1]] = c/n, v/n
	}
}

// Decode turns a scaled prediction of (s' - s, r) at obs back into the
// next observation (written into next) and the reward.
func (s Scales) Decode(next, obs, pred []float64) (reward float64) {
	for i, v := range obs {
		next[i] = v + pred[i]*s.Out[i]
	}
	return pred[len(obs)] * s.Out[len(obs)]
}
