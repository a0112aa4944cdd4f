package sims

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
)

// Agent is the decision maker a Population drives: the consumer-owned
// interface that the NATS agent client satisfies without sims importing it.
// Implementations must be safe for concurrent use by several sessions.
type Agent interface {
	// Act returns the action for obs in session of user. reward is the
	// reward of the previous step (0 when first is true, the session's first
	// call). obs is owned by the caller and only valid during the call; the
	// returned Action (and its Vec) is only read until the next call.
	Act(ctx context.Context, session, user string, obs []float64, reward float64, first bool) (Action, error)
	// End closes session with the reward of its last step; terminal says
	// the environment terminated (false: truncated by the step limit).
	End(ctx context.Context, session string, reward float64, terminal bool) error
}

// PopulationConfig describes a simulated user population.
type PopulationConfig struct {
	// NewEnv builds one environment instance; each user gets its own.
	NewEnv func() Env
	// Sessions is the number of sessions Run drives (> 0).
	Sessions int
	// Workers is the number of sessions run concurrently (> 0).
	Workers int
	// ReturnProb is the probability in [0, 1] that a session belongs to an
	// already-seen user (chosen uniformly) rather than a new one.
	ReturnProb float64
	// Seed fixes the user assignment and every session's random stream.
	Seed uint64
	// Prefix starts every user and session id ("sim" if empty).
	Prefix string
	// Admit, if set, paces the run: Run calls it (from one goroutine, in
	// session order) before it starts session i, and starts no session
	// while it blocks. It should block on a channel or condition (for
	// example a policy release), never poll; it must return when ctx is
	// done. A false return admits no further session: Run lets the
	// sessions already started finish and returns nil.
	Admit func(ctx context.Context, i int) (bool, error)
	// OnError, if set, decides what a session that fails (an agent error,
	// a bad action; not ctx ending) does to the run: a nil return counts
	// the session as failed and goes on (the user's next session, if any,
	// starts with a reset of its env), an error stops Run with it. It is
	// called serialised with Run's onResult. Nil: the first failure stops
	// Run.
	OnError func(res SessionResult, err error) error
}

// Validate reports every problem of the config in one error.
func (c PopulationConfig) Validate() error {
	var errs []error
	if c.NewEnv == nil {
		errs = append(errs, errors.New("NewEnv is nil"))
	}
	if c.Sessions <= 0 {
		errs = append(errs, fmt.Errorf("Sessions %d, want > 0", c.Sessions))
	}
	if c.Workers <= 0 {
		errs = append(errs, fmt.Errorf("Workers %d, want > 0", c.Workers))
	}
	if !(c.ReturnProb >= 0 && c.ReturnProb <= 1) {
		errs = append(errs, fmt.Errorf("ReturnProb %v, want in [0, 1]", c.ReturnProb))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrPopulationConfig, err)
	}
	return nil
}

// ErrPopulationConfig marks an invalid PopulationConfig.
var ErrPopulationConfig = errors.New("sims: bad population config")

// SessionResult is the outcome of one completed session.
type SessionResult struct {
	Index      int     // session number, 0..Sessions-1
	Session    string  // session id
	User       string  // user id
	Returning  bool    // the user had an earlier session
	Return     float64 // undiscounted sum of rewards
	Length     int     // steps taken
	Terminated bool    // the env terminated (false: truncated)
}

// Population simulates users, each with its own environment instance,
// arriving for sessions. The assignment of sessions to users and each
// session's random stream depend only on the config's Seed; sessions of one
// user run one after another in session order (their env instance is
// reused), sessions of different users run concurrently.
type Population struct {
	cfg   PopulationConfig
	users []int // user of each session
	nUser int
}

// NewPopulation validates cfg and draws the session-to-user assignment.
func NewPopulation(cfg PopulationConfig) (*Population, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "sim"
	}
	p := &Population{cfg: cfg, users: make([]int, cfg.Sessions)}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	for i := range p.users {
		if p.nUser > 0 && rng.Float64() < cfg.ReturnProb {
			p.users[i] = rng.IntN(p.nUser)
		} else {
			p.users[i] = p.nUser
			p.nUser++
		}
	}
	return p, nil
}

// Users is the number of distinct users of the run.
func (p *Population) Users() int { return p.nUser }

// UserOf returns the user id of session i.
func (p *Population) UserOf(i int) string {
	return p.cfg.Prefix + "-u" + strconv.Itoa(p.users[i])
}

type popJob struct {
	i          int
	prev, done chan struct{}
	returning  bool
}

// Run drives the sessions against agent with cfg.Workers goroutines, as
// cfg.Admit admits them (all of them if Admit is nil), and calls onResult
// (serialised, possibly nil) for each completed session; the results of
// one user arrive in session order. It stops at the first error (an agent
// error or a bad action that cfg.OnError does not forgive, an Admit error)
// or when ctx is done, and returns that error.
func (p *Population) Run(ctx context.Context, agent Agent, onResult func(SessionResult)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	envs := make([]Env, p.nUser)
	lastDone := make([]chan struct{}, p.nUser)
	jobs := make(chan popJob)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range p.cfg.Workers {
		wg.Go(func() {
			for j := range jobs {
				if j.prev != nil {
					select {
					case <-j.prev:
					case <-ctx.Done():
						return
					}
				}
				u := p.users[j.i]
				if envs[u] == nil { // only this user's chain touches envs[u]
					envs[u] = p.cfg.NewEnv()
				}
				res, err := p.session(ctx, agent, envs[u], j)
				if err != nil && ctx.Err() == nil && p.cfg.OnError != nil {
					mu.Lock()
					err = p.cfg.OnError(res, err)
					mu.Unlock()
					if err == nil {
						close(j.done)
						continue
					}
				}
				if err != nil {
					cancel(err)
					return
				}
				if onResult != nil {
					mu.Lock()
					onResult(res)
					mu.Unlock()
				}
				close(j.done) // after onResult: a user's results come in order
			}
		})
	}
dispatch:
	for i := range p.cfg.Sessions {
		if p.cfg.Admit != nil {
			ok, err := p.cfg.Admit(ctx, i)
			if err != nil {
				cancel(fmt.Errorf("sims: admit session %d: %w", i, err))
				break
			}
			if !ok || ctx.Err() != nil {
				break
			}
		}
		u := p.users[i]
		j := popJob{i: i, prev: lastDone[u], done: make(chan struct{}), returning: lastDone[u] != nil}
		lastDone[u] = j.done
		select {
		case jobs <- j:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// session runs one episode of session j on env.
func (p *Population) session(ctx context.Context, agent Agent, env Env, j popJob) (SessionResult, error) {
	res := SessionResult{
		Index:     j.i,
		Session:   p.cfg.Prefix + "-s" + strconv.Itoa(j.i),
		User:      p.UserOf(j.i),
		Returning: j.returning,
	}
	rng := rand.New(rand.NewPCG(p.cfg.Seed, uint64(j.i)+1))
	obs := make([]float64, env.ObservationSpace().Dim())
	env.Reset(rng, obs)
	aspace := env.ActionSpace()
	var reward float64
	for step := 0; ; step++ {
		if err := ctx.Err(); err != nil {
			return res, context.Cause(ctx)
		}
		a, err := agent.Act(ctx, res.Session, res.User, obs, reward, step == 0)
		if err != nil {
			return res, fmt.Errorf("sims: session %s step %d: act: %w", res.Session, step, err)
		}
		if err := CheckAction(aspace, a); err != nil {
			return res, fmt.Errorf("sims: session %s step %d: %w", res.Session, step, err)
		}
		var term, trunc bool
		reward, term, trunc = env.Step(a, obs)
		res.Return += reward
		res.Length++
		if term || trunc {
			res.Terminated = term
			if err := agent.End(ctx, res.Session, reward, term); err != nil {
				return res, fmt.Errorf("sims: session %s: end: %w", res.Session, err)
			}
			return res, nil
		}
	}
}
