package vw

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"dprl/experiment"
	"dprl/experiment/bandit"
	"dprl/internal/fielderr"
	"dprl/sims"
)

// Learner is one VW configuration measured as a peer: its arguments after
// --cb_explore_adf.
type Learner struct {
	// Name labels the learner in tables ("" : its arguments).
	Name string `json:"name"`
	// Args are VW's arguments, for example --squarecb -q UA.
	Args []string `json:"args"`
}

// Label is the learner's name, or its arguments without one.
func (l Learner) Label() string {
	if l.Name != "" {
		return l.Name
	}
	return fmt.Sprintf("VW --cb_explore_adf %s", strings.Join(l.Args, " "))
}

// Validate reports a learner without arguments or with an argument the
// driver sets itself (the daemon, its port and children, the reduction,
// an input file, test-only mode).
func (l Learner) Validate() error {
	if len(l.Args) == 0 {
		return errors.New("vw: learner without arguments, want VW arguments such as --squarecb -q UA")
	}
	for _, a := range l.Args {
		switch a {
		case "--daemon", "--port", "--num_children", "--foreground", "--cb_explore_adf", "-d", "--data", "-t", "--testonly":
			return fmt.Errorf("vw: learner argument %s is set by the driver", a)
		}
	}
	return nil
}

// learnerFields are the fields the errors of ParseLearners name.
var learnerFields = fielderr.Fields{"Learners"}

// ParseLearners returns the learners of args, each one learner's VW
// arguments in one string ("--squarecb -q UA"). The error, of the first
// string without arguments or of an invalid learner (Validate), names the
// field Learners (a *fielderr.Error).
func ParseLearners(args []string) ([]Learner, error) {
	var ls []Learner
	for _, a := range args {
		l := Learner{Args: strings.Fields(a)}
		if len(l.Args) == 0 {
			return nil, learnerFields.Errorf("{Learners} %q: want VW arguments, such as \"--squarecb -q UA\"", a)
		}
		if err := l.Validate(); err != nil {
			return nil, learnerFields.Errorf("{Learners} %q: %v", a, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// DefaultLearners are SquareCB and epsilon-greedy (0.05, VW's default
// cb_type mtr), both with the user x item interactions (-q UA).
func DefaultLearners() []Learner {
	return []Learner{
		{Args: []string{"--squarecb", "-q", "UA"}},
		{Args: []string{"--epsilon", "0.05", "-q", "UA"}},
	}
}

// SeedRun is one learner's run on one seed.
type SeedRun struct {
	Seed uint64 `json:"seed"`
	// OnlineClick is the mean over the run's users of the exact expected
	// click of the PMF that served each: sum_a pmf(a) P(click | x, a).
	OnlineClick float64 `json:"online_click"`
	// Regret is the cumulative expected regret against the per-user
	// oracle: the sum over users of max_a P(click | x, a) minus the
	// served PMF's expected click.
	Regret float64 `json:"regret"`
	// HeldOut is the final model's PMF scored exactly on the held-out
	// users (bandit.HeldOutEvaluator), and HeldOutGreedy its most
	// probable item's.
	HeldOut       float64 `json:"held_out"`
	HeldOutGreedy float64 `json:"held_out_greedy"`
	// UsersPerSec is the users served and learned from per second of the
	// online phase (driver and daemon on the same machine).
	UsersPerSec float64 `json:"users_per_sec"`
	// RegretUsers and RegretCurve are the cumulative regret after each
	// step of users.
	RegretUsers []int     `json:"-"`
	RegretCurve []float64 `json:"-"`
}

// LearnerResult is one learner over the seeds.
type LearnerResult struct {
	Learner
	Runs []SeedRun `json:"runs"`
	// Means and standard deviations over the seeds of the runs' values.
	OnlineMean  float64 `json:"online_click_mean"`
	OnlineStd   float64 `json:"online_click_std"`
	RegretMean  float64 `json:"regret_mean"`
	RegretStd   float64 `json:"regret_std"`
	HeldOutMean float64 `json:"held_out_mean"`
	HeldOutStd  float64 `json:"held_out_std"`
	GreedyMean  float64 `json:"held_out_greedy_mean"`
	GreedyStd   float64 `json:"held_out_greedy_std"`
	// RegretUsers and Regret are the mean cumulative regret curve.
	RegretUsers []int     `json:"regret_users"`
	Regret      []float64 `json:"regret"`
}

// EnvName is the simulator's registered name.
const EnvName = bandit.EnvName

// Stream identifiers of a run's generators: the users (the same for every
// learner on a seed) and the item and click draws.
const (
	usersStream = 0x7677_7573657273 // "vw" "users"
	drawsStream = 0x7677_64726177   // "vw" "draw"
)

// RunSeed runs learner on users users drawn from env with seed, over a
// fresh daemon of the binary bin, and scores its final model on ev.
func RunSeed(ctx context.Context, bin string, l Learner, env *sims.Bandit, users int, seed uint64, ev *bandit.Evaluator) (SeedRun, error) {
	d, err := StartDaemon(ctx, bin, l.Args)
	if err != nil {
		return SeedRun{}, err
	}
	defer d.Close()
	c, err := d.Dial()
	if err != nil {
		return SeedRun{}, err
	}
	defer c.Close()
	items := env.Config().Items
	userRNG := rand.New(rand.NewPCG(seed, usersStream))
	drawRNG := rand.New(rand.NewPCG(seed, drawsStream))
	x := make([]float64, env.Config().Dim())
	probs := make([]float64, items)
	pmf := make([]float64, items)
	var req, pending []byte
	every := max(1, users/100)
	r := SeedRun{Seed: seed, RegretUsers: []int{0}, RegretCurve: []float64{0}}
	online := 0.0
	start := time.Now()
	for t := range users {
		if t%1024 == 0 && ctx.Err() != nil {
			return r, ctx.Err()
		}
		env.DrawUser(userRNG, x)
		// The previous user's labelled example and this user's, in one
		// write: VW learns from the first before it predicts the second.
		req = append(req[:0], pending...)
		req, err = AppendExample(req, x, items, nil)
		if err != nil {
			return r, err
		}
		n := 1
		if len(pending) > 0 {
			n = 2
		}
		err = c.Exchange(req, n, func(i int, b []byte) error {
			var err error
			pmf, err = ParsePMF(pmf, b, items)
			return err
		})
		if err != nil {
			return r, fmt.Errorf("user %d: %w", t, err)
		}
		env.ClickProbsFor(probs, x)
		exp, best := 0.0, 0.0
		for a, p := range probs {
			exp += pmf[a] * p
			best = max(best, p)
		}
		online += exp
		r.Regret += best - exp
		if (t+1)%every == 0 || t+1 == users {
			r.RegretUsers = append(r.RegretUsers, t+1)
			r.RegretCurve = append(r.RegretCurve, r.Regret)
		}
		a := Sample(pmf, drawRNG.Float64())
		click := 0.0
		if drawRNG.Float64() < probs[a] {
			click = 1
		}
		pending, err = AppendExample(pending[:0], x, items, &Label{Index: a, Cost: -click, Prob: pmf[a]})
		if err != nil {
			return r, err
		}
	}
	if err := c.Exchange(pending, 1, func(_ int, b []byte) error {
		_, err := ParsePMF(pmf, b, items)
		return err
	}); err != nil {
		return r, fmt.Errorf("last user: %w", err)
	}
	r.UsersPerSec = float64(users) / time.Since(start).Seconds()
	r.OnlineClick = online / float64(users)
	// VW does not learn from unlabelled examples: the held-out users see
	// the final model.
	var cache [][]float64
	var evalErr error
	r.HeldOut = ev.ValueOf(func(dst, x []float64) {
		if evalErr == nil {
			req, pmf, evalErr = c.Predict(req, pmf, x, items)
		}
		if evalErr != nil {
			clear(dst)
			return
		}
		copy(dst, pmf)
		cache = append(cache, append([]float64(nil), pmf...))
	})
	if evalErr != nil {
		return r, fmt.Errorf("held-out users: %w", evalErr)
	}
	i := 0
	r.HeldOutGreedy = ev.ValueOf(func(dst, _ []float64) {
		clear(dst)
		best := 0
		for a, p := range cache[i] {
			if p > cache[i][best] {
				best = a
			}
		}
		dst[best] = 1
		i++
	})
	return r, nil
}

// RunLearner runs learner on every seed and summarises the runs.
func RunLearner(ctx context.Context, bin string, l Learner, env *sims.Bandit, users int, seeds []uint64, ev *bandit.Evaluator, log func(string)) (LearnerResult, error) {
	res := LearnerResult{Learner: l}
	if len(seeds) == 0 || users < 1 {
		return res, fmt.Errorf("vw: %s: %d seeds and %d users, want >= 1 each", l.Label(), len(seeds), users)
	}
	if err := l.Validate(); err != nil {
		return res, err
	}
	for _, s := range seeds {
		r, err := RunSeed(ctx, bin, l, env, users, s, ev)
		if err != nil {
			return res, fmt.Errorf("vw: %s seed %d: %w", l.Label(), s, err)
		}
		if log != nil {
			log(fmt.Sprintf("%s, seed %d: online expected click %.4f, regret %.1f, held-out %.4f (simulation only, non-private)", l.Label(), s, r.OnlineClick, r.Regret, r.HeldOut))
		}
		res.Runs = append(res.Runs, r)
	}
	var on, reg, ho, gr []float64
	for _, r := range res.Runs {
		on, reg, ho, gr = append(on, r.OnlineClick), append(reg, r.Regret), append(ho, r.HeldOut), append(gr, r.HeldOutGreedy)
	}
	res.OnlineMean, res.OnlineStd = experiment.MeanStd(on)
	res.RegretMean, res.RegretStd = experiment.MeanStd(reg)
	res.HeldOutMean, res.HeldOutStd = experiment.MeanStd(ho)
	res.GreedyMean, res.GreedyStd = experiment.MeanStd(gr)
	res.RegretUsers = res.Runs[0].RegretUsers
	res.Regret = make([]float64, len(res.RegretUsers))
	for _, r := range res.Runs {
		for i := range res.Regret {
			res.Regret[i] += r.RegretCurve[i] / float64(len(res.Runs))
		}
	}
	return res, nil
}
