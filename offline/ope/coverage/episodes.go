package coverage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"dprl/noise"
	"dprl/offline/ope"
	"dprl/sims"
)

// episodic is a simulator of whole episodes for the episode study: it
// logs n episodes under the logger (or runs them under the target, for
// the truth), recording for every step the logger's and the target's
// probability of the action taken.
type episodic interface {
	// episodes runs n episodes under the logger (logger true: every
	// step carries the state's features and the target's distribution,
	// for the doubly robust estimators) or the target.
	episodes(n int, logger bool, rng *rand.Rand) []ope.Trajectory
	// bound is the public bound on an episode's product of ratios.
	bound() float64
	// top is the public upper end of an episode's return and stepTop of
	// one step's reward (the lower ends are 0).
	top() float64
	stepTop() float64
	// describe names the logger and the target.
	describe() (logger, target string)
}

// greedyProbs fills dst with the epsilon-greedy distribution around the
// action best: 1 - eps + eps/A on it, eps/A on the others.
func greedyProbs(dst []float64, best int, eps float64) {
	for a := range dst {
		dst[a] = eps / float64(len(dst))
	}
	dst[best] += 1 - eps
}

// swim is RiverSwim (p = 0.6, 20 steps, rewards in [0, 1]) with a logger
// and a target that are epsilon-greedy around swimming right: right with
// probability 1 - eps + eps/2, left with eps/2.
type swim struct {
	env    *sims.RiverSwim
	cfg    *Config
	obs    []float64
	pl, pt float64 // the logger's and the target's probability of right
}

func newSwim(c *Config) (episodic, error) {
	env, err := sims.NewRiverSwim(0.6)
	if err != nil {
		return nil, err
	}
	return &swim{env: env, cfg: c, obs: make([]float64, sims.RiverSwimStates),
		pl: 1 - c.LoggerEps/2, pt: 1 - c.TargetEps/2}, nil
}

func (s *swim) episodes(n int, logger bool, rng *rand.Rand) []ope.Trajectory {
	pr := s.pt
	if logger {
		pr = s.pl
	}
	out := make([]ope.Trajectory, n)
	for i := range out {
		s.env.Reset(rng, s.obs)
		for {
			a, p, q := 0, 1-pr, 1-s.pt
			if rng.Float64() < pr {
				a, p, q = 1, pr, s.pt
			}
			// The state's features and the target's distribution, for the
			// doubly robust estimators' model.
			st := ope.Step{Action: a}
			if logger {
				st.Obs, st.Targets = slices.Clone(s.obs), []float64{1 - s.pt, s.pt}
			}
			r, term, trunc := s.env.Step(sims.Action{Index: a}, s.obs)
			st.Reward, st.Prob, st.Target = r, p, q
			out[i] = append(out[i], st)
			if term || trunc {
				break
			}
		}
	}
	return out
}

// bound: the larger per-step ratio to the power of the horizon.
func (s *swim) bound() float64 {
	return math.Pow(max(s.pt/s.pl, (1-s.pt)/(1-s.pl)), sims.RiverSwimHorizon)
}

func (s *swim) top() float64     { return sims.RiverSwimHorizon }
func (s *swim) stepTop() float64 { return 1 }

func (s *swim) describe() (string, string) {
	return fmt.Sprintf("epsilon-greedy (%g) around swimming right (right with probability %g)", s.cfg.LoggerEps, s.pl),
		fmt.Sprintf("epsilon-greedy (%g) around swimming right (right with probability %g)", s.cfg.TargetEps, s.pt)
}

// recsys is the recommendation simulator's sessions cut to their first
// Horizon steps (the audited value is the watch time of a session's first
// Horizon slates), under a logger and a target that are epsilon-greedy
// around the same public rule: the topic with the highest observed
// (smoothed) click rate, ties to the topic of higher mean quality (the
// higher index). The target explores less than the logger: "what would a
// greedier recommender earn?"
type recsys struct {
	env     *sims.RecSys
	cfg     *Config
	obs     []float64
	pl, pt  []float64 // the logger's and the target's action distributions
	topics  int
	horizon int
}

func newRecSys(c *Config) (episodic, error) {
	env, err := sims.NewRecSys(sims.DefaultRecSysConfig())
	if err != nil {
		return nil, err
	}
	T := env.ActionSpace().N
	return &recsys{env: env, cfg: c, obs: make([]float64, env.ObservationSpace().Dim()),
		pl: make([]float64, T), pt: make([]float64, T), topics: T, horizon: c.Horizon}, nil
}

// base is the rule both policies explore around.
func (s *recsys) base() int {
	best := 0
	for c := 1; c < s.topics; c++ {
		if s.obs[c] >= s.obs[best] {
			best = c
		}
	}
	return best
}

func (s *recsys) episodes(n int, logger bool, rng *rand.Rand) []ope.Trajectory {
	out := make([]ope.Trajectory, n)
	for i := range out {
		s.env.Reset(rng, s.obs)
		tr := make(ope.Trajectory, 0, s.horizon)
		for range s.horizon {
			b := s.base()
			greedyProbs(s.pl, b, s.cfg.LoggerEps)
			greedyProbs(s.pt, b, s.cfg.TargetEps)
			dist := s.pt
			if logger {
				dist = s.pl
			}
			a := pick(dist, rng.Float64())
			st := ope.Step{Action: a, Prob: s.pl[a], Target: s.pt[a]}
			if logger { // the truth's rollouts need no features
				st.Obs, st.Targets = slices.Clone(s.obs), slices.Clone(s.pt)
			}
			r, term, trunc := s.env.Step(sims.Action{Index: a}, s.obs)
			st.Reward = r
			tr = append(tr, st)
			if term || trunc {
				break
			}
		}
		out[i] = tr
	}
	return out
}

// pick draws an action from dist with the uniform u.
func pick(dist []float64, u float64) int {
	for a, p := range dist {
		if u < p {
			return a
		}
		u -= p
	}
	return len(dist) - 1
}

// bound: the larger per-step ratio (on the rule's topic, or off it) to the
// power of the horizon.
func (s *recsys) bound() float64 {
	T := float64(s.topics)
	on := (1 - s.cfg.TargetEps + s.cfg.TargetEps/T) / (1 - s.cfg.LoggerEps + s.cfg.LoggerEps/T)
	off := s.cfg.TargetEps / s.cfg.LoggerEps
	return math.Pow(max(on, off), float64(s.horizon))
}

// top: a click's watch time is at most the video length.
func (s *recsys) top() float64     { return s.stepTop() * float64(s.horizon) }
func (s *recsys) stepTop() float64 { return sims.DefaultRecSysConfig().VideoLength }

func (s *recsys) describe() (string, string) {
	const rule = "around the topic of highest observed click rate"
	return fmt.Sprintf("epsilon-greedy (%g) %s", s.cfg.LoggerEps, rule),
		fmt.Sprintf("epsilon-greedy (%g) %s; the value is the watch time of a session's first %d slates", s.cfg.TargetEps, rule, s.horizon)
}

// setupEpisodes prepares an episode study: the target's value by Monte
// Carlo over HeldOut episodes (its standard error is printed in the
// result's Target), the weight bound, and each worker's drawer.
func setupEpisodes(c *Config, newEnv func(*Config) (episodic, error)) (*Result, func(map[float64]float64, float64) (drawer, error), error) {
	s, err := newEnv(c)
	if err != nil {
		return nil, nil, err
	}
	var sum, sum2 float64
	for _, tr := range s.episodes(c.HeldOut, false, rand.New(rand.NewPCG(c.Seed, 0x5717))) {
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
	logger, target := s.describe()
	res := &Result{Simulation: SimulationOnly, Env: c.Env, Per: "episode", Truth: truth, OutcomeMax: s.top(), WeightBound: s.bound(),
		Logger: logger,
		Target: fmt.Sprintf("%s; true value by Monte Carlo over %d episodes, standard error %.4f", target, c.HeldOut, se),
		Reps:   c.Reps, Level: 0.95}
	return res, func(zs map[float64]float64, truth float64) (drawer, error) {
		w, err := newEnv(c)
		if err != nil {
			return nil, err
		}
		return func(n, rep int) (outcome, error) { return oneEpisodes(w, c, n, rep, zs) }, nil
	}, nil
}

// oneEpisodes draws log rep of n episodes and scores its intervals:
// EL-episode, PDIS, PDWIS, DR-episode and WDR-episode non-private, the
// private audit of whole episodes at each epsilon (the return range [0,
// top]).
func oneEpisodes(s episodic, c *Config, n, rep int, zs map[float64]float64) (outcome, error) {
	rng := rand.New(rand.NewPCG(c.Seed^uint64(n)<<32, uint64(rep)))
	eps := s.episodes(n, true, rng)
	o := outcome{n: n, rep: rep}
	opt := ope.Options{WeightBound: s.bound(), Bootstrap: c.Bootstrap, Rand: rng, RewardMin: 0, RewardMax: s.top()}
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
			est, err := ope.PrivateAuditRecords(w, g, opt, zs[e], noise.NewGaussian(rng))
			if err != nil {
				return o, err
			}
			o.ests = append(o.ests, scored{e, est.Estimator, est.Value, est.Intervals})
			continue
		}
		// TrajectoryEstimates takes the per-step reward range.
		step := opt
		step.RewardMax = s.stepTop()
		es, err := ope.TrajectoryEstimates(eps, 1, step)
		if err != nil {
			return o, err
		}
		for _, est := range es {
			o.ests = append(o.ests, scored{0, est.Estimator, est.Value, est.Intervals})
		}
	}
	return o, nil
}
