package coverage

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/noise"
	"dprl/offline/ope"
	"dprl/sims"
)

// swim is RiverSwim (p = 0.6, 20 steps, rewards in [0, 1]) with a logger
// and a target that are epsilon-greedy around swimming right: right with
// probability 1 - eps + eps/2, left with eps/2.
type swim struct {
	env    *sims.RiverSwim
	cfg    *Config
	obs    []float64
	pl, pt float64 // the logger's and the target's probability of right
}

func newSwim(c *Config) (*swim, error) {
	env, err := sims.NewRiverSwim(0.6)
	if err != nil {
		return nil, err
	}
	return &swim{env: env, cfg: c, obs: make([]float64, sims.RiverSwimStates),
		pl: 1 - c.LoggerEps/2, pt: 1 - c.TargetEps/2}, nil
}

// episodes runs n episodes under the probability of right pr, recording
// the target's probability of every action taken.
func (s *swim) episodes(n int, pr float64, rng *rand.Rand) []ope.Trajectory {
	out := make([]ope.Trajectory, n)
	for i := range out {
		s.env.Reset(rng, s.obs)
		for {
			a, p, q := 0, 1-pr, 1-s.pt
			if rng.Float64() < pr {
				a, p, q = 1, pr, s.pt
			}
			r, term, trunc := s.env.Step(sims.Action{Index: a}, s.obs)
			out[i] = append(out[i], ope.Step{Reward: r, Prob: p, Target: q})
			if term || trunc {
				break
			}
		}
	}
	return out
}

// bound is the public bound on an episode's product of ratios: the larger
// per-step ratio to the power of the horizon.
func (s *swim) bound() float64 {
	return math.Pow(max(s.pt/s.pl, (1-s.pt)/(1-s.pl)), sims.RiverSwimHorizon)
}

// setupRiverSwim prepares the episode study: the target's value by Monte
// Carlo over HeldOut episodes (its standard error is printed in the
// result's Target), the weight bound, and each worker's drawer.
func setupRiverSwim(c *Config) (*Result, func(map[float64]float64, float64) (drawer, error), error) {
	s, err := newSwim(c)
	if err != nil {
		return nil, nil, err
	}
	var sum, sum2 float64
	for _, tr := range s.episodes(c.HeldOut, s.pt, rand.New(rand.NewPCG(c.Seed, 0x5717))) {
		g := 0.0
		for _, st := range tr {
			g += st.Reward
		}
		sum += g
		sum2 += g * g
	}
	n := float64(c.HeldOut)
	truth := sum / n
	se := math.Sqrt(max(0, sum2/n-truth*truth) / n)
	res := &Result{Simulation: SimulationOnly, Env: "riverswim", Per: "episode", Truth: truth, WeightBound: s.bound(),
		Logger: fmt.Sprintf("epsilon-greedy (%g) around swimming right (right with probability %g)", c.LoggerEps, s.pl),
		Target: fmt.Sprintf("epsilon-greedy (%g) around swimming right (right with probability %g); true value by Monte Carlo over %d episodes, standard error %.4f", c.TargetEps, s.pt, c.HeldOut, se),
		Reps:   c.Reps, Level: 0.95}
	return res, func(zs map[float64]float64, truth float64) (drawer, error) {
		w, err := newSwim(c)
		if err != nil {
			return nil, err
		}
		return func(n, rep int) (outcome, error) { return w.one(n, rep, zs, truth) }, nil
	}, nil
}

// one draws log rep of n episodes and scores its intervals: EL-episode,
// PDIS and PDWIS non-private, the private audit of whole episodes at each
// epsilon (the return range [0, 20]).
func (s *swim) one(n, rep int, zs map[float64]float64, truth float64) (outcome, error) {
	c := s.cfg
	rng := rand.New(rand.NewPCG(c.Seed^uint64(n)<<32, uint64(rep)))
	eps := s.episodes(n, s.pl, rng)
	o := outcome{n: n, rep: rep}
	opt := ope.Options{WeightBound: s.bound(), Bootstrap: c.Bootstrap, Rand: rng}
	w, g := make([]float64, n), make([]float64, n)
	for i, tr := range eps {
		w[i] = 1
		for _, st := range tr {
			w[i] *= st.Target / st.Prob
			g[i] += st.Reward
		}
	}
	for _, e := range c.Epsilons {
		if e > 0 {
			ret := opt
			ret.RewardMin, ret.RewardMax = 0, sims.RiverSwimHorizon
			est, err := ope.PrivateAuditRecords(w, g, ret, zs[e], noise.NewGaussian(rng))
			if err != nil {
				return o, err
			}
			o.ests = append(o.ests, scored{e, est.Estimator, est.Value, est.Intervals})
			continue
		}
		es, err := ope.TrajectoryEstimates(eps, 1, opt)
		if err != nil {
			return o, err
		}
		for _, est := range es {
			o.ests = append(o.ests, scored{0, est.Estimator, est.Value, est.Intervals})
		}
	}
	return o, nil
}
