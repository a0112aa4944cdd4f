// Package bandit measures the contextual-bandit personalization task
// (sims.Bandit) end to end: the exact baselines (a uniformly random item,
// the best fixed item, the per-user oracle), non-private PPO and DPPG at a
// user-level epsilon trained in process, the linear contextual bandit of
// package lincb (private and not) in process, and the DP agent serving the task
// over NATS (dprl demo), each scored exactly and with its cumulative
// regret against the per-user oracle. It is dprl sims bandit.
//
// Every value it reports is simulation only: computed on the public
// simulator's exact click probabilities and on released policies (the
// users' own sessions are not read), never served by an agent. The epsilon
// beside a DP method is its user-level guarantee: each simulated user has
// one session and enters at most one release, so it is the Gaussian
// mechanism's epsilon of one release (analytic Gaussian; Balle and Wang
// 2018, "Improving the Gaussian Mechanism for Differential Privacy").
package bandit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/experiment"
	"dprl/experiment/demo"
	"dprl/ledger"
	"dprl/policy"
	"dprl/policy/lincb"
	"dprl/profile"
	"dprl/sims"
)

// EnvName is the registered name of the task.
const EnvName = "bandit"

// Evaluator scores discrete policies on the bandit exactly: the expected
// click per session, sum_a pi(a | x) P(click | x, a), averaged over a fixed
// set of held-out users (sims.BanditUsers: Monte Carlo over users only; no
// click is drawn).
type Evaluator struct {
	users  *sims.BanditUsers
	oracle float64
}

// NewEvaluator draws users held-out users from rng with env's feature
// distribution and stores their exact click probabilities.
func NewEvaluator(env *sims.Bandit, users int, rng *rand.Rand) (*Evaluator, error) {
	u, err := env.HeldOut(users, rng)
	if err != nil {
		return nil, fmt.Errorf("bandit: %w", err)
	}
	return &Evaluator{users: u, oracle: u.Baselines().Oracle}, nil
}

// HeldOutEvaluator is the evaluator of Run: users held-out users drawn
// from a stream of their own, disjoint from every run's, so that every
// learner measured against Run's results (dprl bench vw) is scored on the
// same users.
func HeldOutEvaluator(env *sims.Bandit, users int) (*Evaluator, error) {
	return NewEvaluator(env, users, rand.New(rand.NewPCG(0xba5e, 2)))
}

// ReferenceBaselines are Run's reference policies: users users drawn from
// a stream of their own, disjoint from every run's and from the held-out
// users.
func ReferenceBaselines(env *sims.Bandit, users int) sims.BanditBaselines {
	return env.Baselines(users, rand.New(rand.NewPCG(0xba5e, 1)))
}

// Oracle is the expected click of the per-user optimum on the held-out
// users.
func (e *Evaluator) Oracle() float64 { return e.oracle }

// Value is the exact expected click of the policy theta (served by actor)
// on the held-out users.
func (e *Evaluator) Value(actor *policy.Actor, theta []float64) float64 {
	return e.users.Value(func(dst, x []float64) { actor.Probs(dst, theta, x) })
}

// ValueOf is the exact expected click on the held-out users of the policy
// whose item probabilities for a user x probs writes into dst (len Items;
// it must not keep x). It is called once per held-out user, in a fixed
// order.
func (e *Evaluator) ValueOf(probs func(dst, x []float64)) float64 {
	return e.users.Value(probs)
}

// Config is a measurement: Users simulated users per run, one run per seed
// for non-private PPO and for DPPG at each user-level epsilon in process,
// and, with Demo, the DP agent over NATS at each epsilon.
type Config struct {
	// Users is the number of simulated users (sessions) per run, >= 1.
	Users int `flag:"users" usage:"simulated users (one session each) per run" default:"50000"`
	// Seeds are the seeds of the runs (one run per seed and method).
	Seeds []uint64
	// UserEpsilons are the user-level epsilons of the DP runs, each > 0,
	// at Delta.
	UserEpsilons []float64 `flag:"user-epsilon" usage:"user-level epsilons of the private learners at --delta (comma-separated)"`
	// Delta is the delta of every user-level epsilon, in (0, 1); 0 means
	// the agent's (agent.DefaultConfig: 1e-5).
	Delta float64 `flag:"delta" usage:"delta of every user-level epsilon, in (0, 1) (default the agent's, 1e-5)"`
	// HeldOut is the number of held-out users of the exact evaluation
	// and BaselineUsers that of the baselines, each >= 1.
	HeldOut       int `flag:"held-out" usage:"held-out users of the exact evaluation of every policy version" default:"20000"`
	BaselineUsers int `flag:"baseline-users" usage:"users averaged over for the reference policies" default:"1000000"`
	// Demo also runs the DP agent over NATS (dprl demo) at each epsilon.
	Demo bool
	// Workers is the number of goroutines of the in-process local updates
	// (0: GOMAXPROCS); the result does not depend on it.
	Workers int `flag:"workers" usage:"goroutines of the in-process local updates (default GOMAXPROCS; the result does not depend on it)"`
	// Log, if not nil, receives one line per finished run.
	Log func(string)
}

// Validate reports every problem of the config.
func (c Config) Validate() error {
	var errs []error
	if c.Users < 1 {
		errs = append(errs, fmt.Errorf("bandit: users %d, want >= 1", c.Users))
	}
	if len(c.Seeds) == 0 {
		errs = append(errs, errors.New("bandit: no seeds"))
	}
	for _, e := range c.UserEpsilons {
		if !(e > 0) || math.IsInf(e, 1) {
			errs = append(errs, fmt.Errorf("bandit: user epsilon %v, want finite and > 0", e))
		}
	}
	if c.Delta != 0 && !(c.Delta > 0 && c.Delta < 1) {
		errs = append(errs, fmt.Errorf("bandit: delta %v, want in (0, 1)", c.Delta))
	}
	if c.HeldOut < 1 || c.BaselineUsers < 1 {
		errs = append(errs, fmt.Errorf("bandit: held-out users %d and baseline users %d, want >= 1", c.HeldOut, c.BaselineUsers))
	}
	return errors.Join(errs...)
}

// Scope labels every result.
const Scope = "simulation only: exact expected clicks on the public simulator's held-out users, of released policies and reference policies; nothing here is served by an agent"

// Result is a measurement's outcome.
type Result struct {
	Scope string `json:"scope"`
	Env   string `json:"env"`
	Users int    `json:"users"`
	// Delta is the delta of every epsilon.
	Delta float64  `json:"delta"`
	Seeds []uint64 `json:"seeds"`
	// Baselines are the reference policies' expected clicks.
	Baselines sims.BanditBaselines `json:"baselines"`
	// HeldOutOracle is the oracle on the held-out users, against which
	// the methods' regret is measured.
	HeldOutOracle float64 `json:"held_out_oracle"`
	// Methods are the learners: non-private PPO first, the non-private
	// linear contextual bandit, then at each epsilon DPPG and the linear
	// bandit in process and the agent over NATS learning each.
	Methods []Method `json:"methods"`
}

// Method is one learner over the seeds.
type Method struct {
	// Name is "ppo" (non-private), "dppg" (in process), "lincb" (the
	// linear contextual bandit of package lincb, in process, private or
	// not), "agent" (the DP agent over NATS, dprl demo) or "agent-lincb"
	// (the agent learning the linear contextual bandit).
	Name string `json:"name"`
	// UserEpsilon is the user-level epsilon at Result.Delta (nil:
	// non-private), Z the noise multiplier and K the users per update
	// (lincb: of its first block; the blocks grow).
	UserEpsilon *float64 `json:"user_epsilon"`
	Z           float64  `json:"z"`
	K           int      `json:"k"`
	// Final are the final policies' expected clicks, one per seed, with
	// their mean and standard deviation over seeds.
	Final     []float64 `json:"final"`
	FinalMean float64   `json:"final_mean"`
	FinalStd  float64   `json:"final_std"`
	// GainPct is 100 (FinalMean - uniform) / (ppo's FinalMean - uniform):
	// the share of the non-private reward gain over a random item.
	GainPct float64 `json:"gain_pct_of_nonprivate"`
	// RegretUsers and Regret are the cumulative expected regret against the
	// per-user oracle after each batch of users (in arrival order), mean
	// over seeds: each user served by policy version b adds Oracle -
	// Value(version b).
	RegretUsers []int     `json:"regret_users"`
	Regret      []float64 `json:"regret"`
}

// Label names the method for tables and legends.
func (m Method) Label() string {
	switch {
	case m.Name == "lincb" && m.UserEpsilon == nil:
		return "linear SquareCB (non-private)"
	case m.Name == "lincb":
		return fmt.Sprintf("DP linear SquareCB in process, user ε = %g", *m.UserEpsilon)
	case m.UserEpsilon == nil:
		return "PPO (non-private)"
	case m.Name == "agent":
		return fmt.Sprintf("DP agent over NATS, user ε = %g", *m.UserEpsilon)
	case m.Name == "agent-lincb":
		return fmt.Sprintf("DP agent over NATS, linear SquareCB, user ε = %g", *m.UserEpsilon)
	}
	return fmt.Sprintf("DPPG in process, user ε = %g", *m.UserEpsilon)
}

// run is one seed's outcome.
type run struct {
	final  float64
	users  []int
	regret []float64
}

// Run performs the measurement.
func Run(ctx context.Context, c Config) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	prof, err := profile.Get(EnvName)
	if err != nil {
		return Result{}, err
	}
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		return Result{}, err
	}
	delta := c.Delta
	if delta == 0 {
		delta = agent.DefaultConfig(prof.Spec, prof.Learner).Delta
	}
	c.Delta = delta
	res := Result{Scope: Scope, Env: EnvName, Users: c.Users, Delta: delta, Seeds: c.Seeds,
		Baselines: ReferenceBaselines(env, c.BaselineUsers)}
	ev, err := HeldOutEvaluator(env, c.HeldOut)
	if err != nil {
		return Result{}, err
	}
	res.HeldOutOracle = ev.Oracle()
	actor, err := policy.NewActorFor(prof.Spec, prof.Learner.PPO)
	if err != nil {
		return Result{}, err
	}
	type spec struct {
		name string
		eps  *float64
	}
	specs := []spec{{name: "ppo"}, {name: "lincb"}}
	for _, e := range c.UserEpsilons {
		specs = append(specs, spec{"dppg", &e}, spec{"lincb", &e})
		if c.Demo {
			specs = append(specs, spec{"agent", &e}, spec{"agent-lincb", &e})
		}
	}
	for _, s := range specs {
		m := Method{Name: s.name, UserEpsilon: s.eps}
		var runs []run
		for _, seed := range c.Seeds {
			var r run
			switch s.name {
			case "agent", "agent-lincb":
				r, m.Z, m.K, err = runDemo(ctx, prof, *s.eps, s.name == "agent-lincb", c, seed, ev, actor)
			case "lincb":
				r, m.Z, m.K, err = runLinCB(ctx, env, s.eps, delta, c.Users, seed, ev)
			default:
				r, m.Z, m.K, err = runInProcess(ctx, s.eps, c, seed, ev, actor)
			}
			if err != nil {
				return res, fmt.Errorf("bandit: %s seed %d: %w", m.Label(), seed, err)
			}
			if c.Log != nil {
				c.Log(fmt.Sprintf("%s, seed %d: expected click %.4f (simulation only)", m.Label(), seed, r.final))
			}
			runs = append(runs, r)
		}
		m.summarise(runs)
		res.Methods = append(res.Methods, m)
	}
	uni, ppo := res.Baselines.Uniform, res.Methods[0].FinalMean
	for i := range res.Methods {
		res.Methods[i].GainPct = 100 * (res.Methods[i].FinalMean - uni) / (ppo - uni)
	}
	return res, nil
}

// regretTracker accumulates the cumulative expected regret of the users in
// arrival order from the value of each policy version and the users it
// served.
type regretTracker struct {
	oracle float64
	run
}

// served records that the policy of expected click value served the users
// from the last point up to users.
func (t *regretTracker) served(users int, value float64) {
	if len(t.users) == 0 {
		t.users, t.regret = []int{0}, []float64{0}
	}
	last := len(t.users) - 1
	t.users = append(t.users, users)
	t.regret = append(t.regret, t.regret[last]+float64(users-t.users[last])*(t.oracle-value))
}

// runInProcess trains one seed in process (dprl train's DPPG at user-level
// epsilon eps, or non-private PPO for a nil eps, with the profile's
// learner) and scores every policy version.
func runInProcess(ctx context.Context, eps *float64, c Config, seed uint64, ev *Evaluator, actor *policy.Actor) (run, float64, int, error) {
	t := experiment.Train{Env: EnvName, Method: experiment.MethodPPO, Epsilon: eps, Users: c.Users, Workers: c.Workers,
		EvalEpisodes: 1, FreshEpisodes: true, Seeded: true}
	if eps != nil {
		t.Method = experiment.MethodDPPG
	}
	t.Delta = c.Delta
	plan, err := t.Plan()
	if err != nil {
		return run{}, 0, 0, err
	}
	// One session per user, one step per session: the per-episode epsilon
	// of the plan is the user-level one.
	if eps != nil && !(plan.Epsilon <= *eps) {
		return run{}, 0, 0, fmt.Errorf("plan epsilon %v above the target %v", plan.Epsilon, *eps)
	}
	tr := regretTracker{oracle: ev.Oracle()}
	cur := 0.0
	_, err = policy.Train(ctx, plan.NewEnv, plan.Config, policy.TrainOptions{
		Users: c.Users, Workers: c.Workers, CurveEvery: c.Users, CurveEpisodes: 1,
		OnRelease: func(updates, users int, theta []float64) {
			if updates > 0 {
				tr.served(users, cur)
			}
			cur = ev.Value(actor, theta)
		},
	}, rand.New(rand.NewPCG(seed, 0x62616e646974))) // "bandit"
	tr.final = cur
	return tr.run, plan.Config.DP.NoiseMultiplier, plan.Config.DP.UsersPerUpdate, err
}

// runDemo runs dprl demo on the bandit (embedded NATS, the DP agent with a
// fresh ledger in a temporary directory, lockstep users who never return,
// at most one update per user, z derived from the user-level epsilon eps)
// and scores every released version from the ledger: in lockstep the users
// of update b are served by version b.
func runDemo(ctx context.Context, prof profile.Profile, eps float64, linear bool, c Config, seed uint64, ev *Evaluator, actor *policy.Actor) (run, float64, int, error) {
	dir, err := os.MkdirTemp("", "dprl-bandit-demo-")
	if err != nil {
		return run{}, 0, 0, err
	}
	defer os.RemoveAll(dir)
	dc := demo.Config{Env: EnvName, Users: c.Users, Concurrency: 16, Seed: seed, Pace: demo.PaceLockstep,
		EvalEvery: math.MaxInt32, EvalEpisodes: 1, UserEpsilon: eps, MaxUpdatesPerUser: 1, Delta: c.Delta}
	if linear {
		dc.Learner = "lincb"
	}
	ac, err := dc.AgentConfig(prof)
	if err != nil {
		return run{}, 0, 0, err
	}
	res, err := demo.Run(ctx, service.ServiceConfig{Agent: ac, DataDir: dir, NATS: "embedded", NATSListen: "127.0.0.1:0"}, dc)
	if err != nil {
		return run{}, 0, 0, err
	}
	if res.UserBound == nil || !(*res.UserBound <= eps) {
		return run{}, 0, 0, fmt.Errorf("the agent's user-level bound %v, want <= %v", res.UserBound, eps)
	}
	K := res.K
	r, err := scoreLedger(dir, ac, int(res.Users), K, ev, actor)
	return r, res.Z, K, err
}

// scoreLedger scores every policy version in the ledger at dir (versions 0
// to the last): in lockstep, version b served update b's users, b K to
// min((b+1) K, users) - 1 (the linear contextual bandit: its block b).
func scoreLedger(dir string, ac agent.Config, users, K int, ev *Evaluator, actor *policy.Actor) (run, error) {
	before := func(b int) int { return b * K }
	if ac.LinCB != nil {
		before = ac.LinCBConfig().UsersBefore
	}
	s, err := ledger.Open(dir, ledger.Options{ReadOnly: true, MustExist: true})
	if err != nil {
		return run{}, err
	}
	defer s.Close()
	tr := regretTracker{oracle: ev.Oracle()}
	for v := uint64(0); ; v++ {
		b, err := s.Snapshot(v)
		if errors.Is(err, ledger.ErrNotFound) {
			break
		}
		if err != nil {
			return run{}, err
		}
		if lincb.IsSnapshot(b) {
			s, err := lincb.UnmarshalSnapshot(b)
			if err != nil {
				return run{}, err
			}
			m, err := s.Model()
			if err != nil {
				return run{}, err
			}
			tr.final = ev.ValueOf(m.Probs)
		} else {
			snap, err := policy.UnmarshalSnapshot(b)
			if err != nil {
				return run{}, err
			}
			if err := snap.CheckCompatible(ac.Spec, ac.Policy.PPO.Hidden); err != nil {
				return run{}, err
			}
			tr.final = ev.Value(actor, snap.Served())
		}
		if start := before(int(v)); start < users {
			tr.served(min(before(int(v)+1), users), tr.final)
		}
	}
	return tr.run, nil
}

// summarise sets the method's final values and mean regret curve.
func (m *Method) summarise(runs []run) {
	for _, r := range runs {
		m.Final = append(m.Final, r.final)
	}
	m.FinalMean, m.FinalStd = experiment.MeanStd(m.Final)
	n := len(runs[0].users)
	for _, r := range runs {
		n = min(n, len(r.users))
	}
	m.RegretUsers = append([]int(nil), runs[0].users[:n]...)
	m.Regret = make([]float64, n)
	for _, r := range runs {
		for i := range n {
			m.Regret[i] += r.regret[i] / float64(len(runs))
		}
	}
}
