package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"dprl/internal/progress"
	"dprl/sims"
	"dprl/stream"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// ReplayConfig is a replay: simulated users against a running agent.
type ReplayConfig struct {
	// URL is the agent's NATS server, Prefix its subject prefix
	// (stream.DefaultPrefix unless the agent changed it), Credentials the
	// connection's credentials as files (read by Validate and Replay) and
	// Options further connection options.
	URL         string `flag:"nats" default:"nats://127.0.0.1:4222" usage:"URL of the NATS server the agent listens on"`
	Prefix      string `flag:"prefix" usage:"subject prefix"`
	Credentials stream.ClientFiles
	Options     []stream.Option
	// Env is the simulator the users play, Users the number of sessions,
	// Concurrency the sessions played at the same time, Returning the
	// probability that a session comes from an earlier user.
	Env         string  `flag:"env" default:"cartpole" usage:"environment the users play"`
	Users       int     `flag:"users" default:"1000" usage:"number of sessions"`
	Concurrency int     `flag:"concurrency" default:"16" usage:"sessions at the same time"`
	Returning   float64 `flag:"returning" usage:"probability that a session comes from a returning user"`
	// Seed seeds the simulated users; 0: a random seed.
	Seed uint64 `flag:"seed" usage:"seed of the simulated users (0: random)"`
	// GiveUp stops the run when the agent has answered no request for this
	// long (no reply at all: "no responders", timeouts; an error reply is
	// an answer); 0 or less: never. dprl replay's default is
	// DefaultGiveUp. While the last request went
	// unanswered, one session is started per second, as a probe, instead
	// of a worker's worth.
	GiveUp time.Duration `flag:"give-up" usage:"stop when the agent has answered no request for this long (0: never)"`
	// Rate paces the run: at most Rate sessions start per second (session
	// i no earlier than i/Rate seconds after the first); 0 starts them as
	// fast as Concurrency allows. A paced run arrives as real users do, so
	// fewer sessions end after the policy they started with was replaced
	// (the agent sets such stale sessions aside).
	Rate float64 `flag:"rate" usage:"start at most this many sessions per second, as real users arrive (0: as fast as --concurrency allows; at full speed sessions often end after a new release and are set aside as stale)"`
	// Logger receives a warning per failed session, at most
	// sessionLogBurst per sessionLogPeriod (the summary counts them all).
	Logger zerolog.Logger
	// OnSessionError, if not nil, is told of each failed session; a failed
	// session is counted and the run goes on, unless the agent answered
	// shutting_down: then the run stops (see Replay).
	OnSessionError func(session string, err error)
	// StartProgress, if not nil, is called when the users start with a
	// function returning the run's progress at any moment; Replay calls
	// the function it returns once the users have finished.
	StartProgress func(progress func() ReplayProgress) (stop func())
}

// DefaultGiveUp is dprl replay's ReplayConfig.GiveUp.
const DefaultGiveUp = 30 * time.Second

// Validate reports the first problem, in the order dprl replay has always
// checked them: the counts, the returning probability, the environment
// (sims.New's error), then the credentials (stream.ClientFiles.Options:
// it reads the password file).
func (c ReplayConfig) Validate() error {
	_, err := c.options()
	return err
}

// options validates c and returns its connection options.
func (c ReplayConfig) options() ([]stream.Option, error) {
	if c.Users < 1 || c.Concurrency < 1 {
		return nil, Fields.Errorf("{Users} and {Concurrency} must be >= 1")
	}
	if !(c.Rate >= 0) || math.IsInf(c.Rate, 0) {
		return nil, Fields.Errorf("{Rate} %v: want sessions per second >= 0 (0: as fast as {Concurrency} allows)", c.Rate)
	}
	if err := validReturning(c.Returning); err != nil {
		return nil, err
	}
	if _, err := sims.New(c.Env); err != nil {
		return nil, err
	}
	opts, err := c.Credentials.Options()
	if err != nil {
		return nil, err
	}
	return append(append([]stream.Option{stream.WithName("dprl-replay")}, opts...), c.Options...), nil
}

// Failed sessions are logged at most sessionLogBurst times per
// sessionLogPeriod: an agent that went away fails every session.
const (
	sessionLogBurst  = 10
	sessionLogPeriod = 10 * time.Second
)

// refusedHint names the likely cause of an agent that never answers when
// the server refused the client's requests: a secured server answers a
// publish the client's identity may not make with a permissions violation
// (logged on the server, delivered to the client only as its connection's
// last error), so the requests simply time out.
func refusedHint(last error) string {
	if !errors.Is(last, nats.ErrPermissionViolation) {
		return ""
	}
	return fmt.Sprintf("the server refused this client's requests: %v; likely --nats-identity is missing or is not this client's entry in the agent's --nats-clients (a client's replies come to its own inbox _INBOX.NAME)", last)
}

// pace waits until at, or until ctx ends.
func pace(ctx context.Context, at time.Time) {
	d := time.Until(at)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// probeEvery paces the sessions started while the agent answers nothing.
const probeEvery = time.Second

// ErrAgentUnreachable is the cause of a replay stopped by its give-up
// rule: the agent answered no request for ReplayConfig.GiveUp.
var ErrAgentUnreachable = errors.New("agent unreachable")

// StoppedError is the error of a replay that stopped before playing every
// session, returned beside the partial summary: interrupted (its context
// ended; Err is the context's cause), the agent shutting down (Err is the
// agent's shutting_down reply: errors.Is(err, stream.ErrShuttingDown)) or
// unreachable (errors.Is(err, ErrAgentUnreachable)).
type StoppedError struct {
	// Reason is ReplayResult.Stopped: "replay interrupted", "agent
	// shutting down" or "agent unreachable: no reply for D".
	Reason string
	// Played of Users sessions were played (failed ones included).
	Played, Users int64
	Err           error
}

// Error is one line: the reason and the sessions played.
func (e *StoppedError) Error() string {
	return fmt.Sprintf("%s; %d of %d sessions played", e.Reason, e.Played, e.Users)
}

// Unwrap returns the cause.
func (e *StoppedError) Unwrap() error { return e.Err }

// SessionsFailedError is the error of a replay that played every session
// but some failed (refused by the agent, or unanswered): the summary is
// complete, the run is not a success.
type SessionsFailedError struct {
	// Failed of Played sessions failed.
	Failed, Played int64
}

// Error says how many sessions failed.
func (e *SessionsFailedError) Error() string {
	return fmt.Sprintf("%d of %d sessions failed (see the log for their errors)", e.Failed, e.Played)
}

// ReplayResult is the summary of a replay, complete or partial.
type ReplayResult struct {
	Env string `json:"env"`
	// Users is the number of sessions played (failed ones included) of
	// Planned.
	Users      int64   `json:"users"`
	Planned    int64   `json:"users_planned"`
	Acts       int64   `json:"acts"`
	Seconds    float64 `json:"seconds"`
	ActsPerSec float64 `json:"acts_per_second"`
	P50Ms      float64 `json:"act_p50_ms"`
	P99Ms      float64 `json:"act_p99_ms"`
	Errors     int64   `json:"errors"`
	// SimUsersCurve is the simulated users' own mean return per tenth of the
	// run (sessions in order), measured by the users (simulation only: not
	// released by the agent, not covered by its guarantee): the mean over
	// the tenth's sessions that completed, nil (JSON null, "-" in the text)
	// for a tenth none of whose sessions completed, such as the tenths a
	// stopped run never reached.
	SimUsersCurve []*float64 `json:"sim_users_curve"`
	LastVersion   uint64     `json:"last_version"`
	// Stopped says why the run stopped before playing every session
	// (StoppedError.Reason); absent when it did not.
	Stopped string `json:"stopped,omitempty"`
}

// WriteText writes the summary for people, the users' own curve labelled
// simulation-only; a stopped run's first line says why and how far it got.
func (r ReplayResult) WriteText(w io.Writer) error {
	if r.Stopped != "" {
		fmt.Fprintf(w, "%s: %d of %d sessions played\n", r.Stopped, r.Users, r.Planned)
	}
	p50, p99 := "-", "-" // no act answered: no latency to show
	if r.Acts > 0 {
		p50, p99 = fmt.Sprintf("%.3f ms", r.P50Ms), fmt.Sprintf("%.3f ms", r.P99Ms)
	}
	fmt.Fprintf(w, "%d sessions, %d acts in %.1f s: %.0f acts/s, act p50 %s, p99 %s, %d errors, policy version %d\n",
		r.Users, r.Acts, r.Seconds, r.ActsPerSec, p50, p99, r.Errors, r.LastVersion)
	fmt.Fprint(w, "simulation only: the simulated users' own mean return per tenth of the run (measured by the users, not released by the agent; -: no session of that tenth completed):")
	for _, v := range r.SimUsersCurve {
		if v == nil {
			fmt.Fprint(w, " -")
		} else {
			fmt.Fprintf(w, " %.1f", *v)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// ReplayProgress is a running replay's progress.
type ReplayProgress struct {
	Played   int64 // sessions finished (failed ones included), each counted once: at most Users
	Users    int
	Errors   int64
	Version  uint64 // the last policy version announced
	ActP99Ms float64
}

// Report is the progress report: sessions played of Users, errors, the
// last policy version announced and the act p99.
func (p ReplayProgress) Report() progress.Report {
	return progress.Report{Done: p.Played, Total: int64(p.Users), Unit: "users", Fields: []progress.Field{
		progress.F("errors", p.Errors), progress.F("policy_version", p.Version), progress.Ff("act_p99_ms", "%.2f", p.ActP99Ms)}}
}

// String is the progress line.
func (p ReplayProgress) String() string {
	return fmt.Sprintf("users %d/%d  errors %d  policy version %d  act p99 %.2f ms", p.Played, p.Users, p.Errors, p.Version, p.ActP99Ms)
}

// Replay connects to the agent at cfg.URL and plays cfg.Users sessions of
// cfg.Env, cfg.Concurrency at a time. A run that stops early returns its
// partial summary with a *StoppedError: when ctx ends (interrupted), at
// the first shutting_down reply (the agent is stopping: the sessions under
// way are abandoned and no new one starts), or when the agent answered no
// request for cfg.GiveUp (unreachable). Other errors of the run are
// returned alone.
func Replay(ctx context.Context, cfg ReplayConfig) (ReplayResult, error) {
	opts, err := cfg.options()
	if err != nil {
		return ReplayResult{}, err
	}
	// The server's asynchronous errors (a permissions violation on every
	// request of a client the server refuses) go to the log, sampled, not
	// to stderr once each; the give-up reason names the last one.
	srvWarn := cfg.Logger.Sample(&zerolog.BurstSampler{Burst: sessionLogBurst, Period: sessionLogPeriod})
	opts = append([]stream.Option{stream.WithNATSOption(nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		srvWarn.Warn().Err(err).Msg("nats: the server reported an error")
	}))}, opts...)
	nc, err := stream.Connect(cfg.URL, opts...)
	if err != nil {
		return ReplayResult{}, err
	}
	defer nc.Close()
	client, err := stream.NewClient(nc, stream.WithPrefix(cfg.Prefix))
	if err != nil {
		return ReplayResult{}, err
	}
	var lastVer atomic.Uint64
	if sub, err := client.WatchPolicy(func(p stream.PolicyAnnouncement) { lastVer.Store(p.Version) }); err == nil {
		defer sub.Unsubscribe()
	}
	master := cfg.Seed
	if master == 0 {
		master = rand.Uint64()
	}
	var (
		played, errs atomic.Int64
		lat          latencies
		returns      = make([]float64, cfg.Users)
		completed    = make([]bool, cfg.Users)
		reach        = newReachability()
		warn         = cfg.Logger.Sample(&zerolog.BurstSampler{Burst: sessionLogBurst, Period: sessionLogPeriod})
	)
	paceStart := time.Now()
	pop, err := sims.NewPopulation(sims.PopulationConfig{
		NewEnv:     func() sims.Env { e, _ := sims.New(cfg.Env); return e }, // checked by Validate
		Sessions:   cfg.Users,
		Workers:    cfg.Concurrency,
		ReturnProb: cfg.Returning,
		Seed:       master,
		Prefix:     fmt.Sprintf("replay-%d", master),
		Admit: func(ctx context.Context, i int) (bool, error) {
			reach.admit(ctx)
			if cfg.Rate > 0 {
				pace(ctx, paceStart.Add(time.Duration(float64(i)/cfg.Rate*float64(time.Second))))
			}
			return ctx.Err() == nil, nil
		},
		OnError: func(r sims.SessionResult, err error) error {
			// A failed session is counted once; the run goes on unless
			// the agent is stopping.
			played.Add(1)
			errs.Add(1)
			warn.Warn().Err(err).Str("session", r.Session).Msg("session failed")
			if cfg.OnSessionError != nil {
				cfg.OnSessionError(r.Session, err)
			}
			if errors.Is(err, stream.ErrShuttingDown) {
				return &StoppedError{Reason: "agent shutting down", Err: err}
			}
			return nil
		},
	})
	if err != nil {
		return ReplayResult{}, err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.GiveUp > 0 {
		go reach.giveUp(runCtx, cfg.GiveUp, cancel, func() string { return refusedHint(nc.LastError()) })
	}
	start := time.Now()
	stop := func() {}
	if cfg.StartProgress != nil {
		stop = cfg.StartProgress(func() ReplayProgress {
			return ReplayProgress{Played: played.Load(), Users: cfg.Users, Errors: errs.Load(), Version: lastVer.Load(), ActP99Ms: lat.quantiles(0.99)[0]}
		})
	}
	runErr := pop.Run(runCtx, reachAgent{Agent: timedAgent{Agent: client, lat: &lat}, r: reach}, func(r sims.SessionResult) {
		returns[r.Index], completed[r.Index] = r.Return, true // serialised with OnError, read after Run
		played.Add(1)
	})
	stop()
	var stopped *StoppedError
	switch {
	case runErr == nil:
	case errors.As(runErr, &stopped):
	case ctx.Err() != nil:
		stopped = &StoppedError{Reason: "replay interrupted", Err: context.Cause(ctx)}
	default:
		return ReplayResult{}, runErr
	}
	secs := time.Since(start).Seconds()
	q := lat.quantiles(0.5, 0.99)
	n := lat.count()
	res := ReplayResult{Env: cfg.Env, Users: played.Load(), Planned: int64(cfg.Users), Acts: n, Seconds: secs, ActsPerSec: float64(n) / secs,
		P50Ms: q[0], P99Ms: q[1], Errors: errs.Load(), LastVersion: lastVer.Load(), SimUsersCurve: tenths(returns, completed)}
	if stopped == nil {
		if res.Errors > 0 {
			return res, &SessionsFailedError{Failed: res.Errors, Played: res.Users}
		}
		return res, nil
	}
	stopped.Played, stopped.Users = res.Users, res.Planned
	res.Stopped = stopped.Reason
	return res, stopped
}

// tenths returns the mean of the completed sessions' returns in each tenth
// of the run, nil for a tenth with none.
func tenths(returns []float64, completed []bool) []*float64 {
	out := make([]*float64, 10)
	users := len(returns)
	for d := range out {
		var s float64
		var k int
		for i := d * users / 10; i < (d+1)*users/10; i++ {
			if completed[i] {
				s += returns[i]
				k++
			}
		}
		if k > 0 {
			m := s / float64(k)
			out[d] = &m
		}
	}
	return out
}

// reachability follows whether the agent answers: the time of its last
// reply (any reply: an action, an end, an error reply) and whether the
// last request that finished got none (NATS "no responders", a timeout, a
// lost connection).
type reachability struct {
	start   time.Time
	last    atomic.Int64 // nanoseconds after start of the last reply
	down    atomic.Bool
	replied *releaseSignal // notified at each reply
}

func newReachability() *reachability {
	return &reachability{start: time.Now(), replied: newReleaseSignal()}
}

// observe records the outcome of a request that ended with err (nil: a
// reply). A request cut short by ctx says nothing of the agent.
func (r *reachability) observe(ctx context.Context, err error) {
	var coded *stream.Error
	switch {
	case err == nil || errors.As(err, &coded):
		r.last.Store(int64(time.Since(r.start)))
		if r.down.Swap(false) {
			r.replied.notify()
		}
	case ctx.Err() == nil:
		r.down.Store(true)
	}
}

// admit returns when a session may start: at once while the agent answers;
// otherwise after probeEvery, or at its next reply (to a session under
// way), or when ctx ends.
func (r *reachability) admit(ctx context.Context) {
	if !r.down.Load() {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, probeEvery)
	defer cancel()
	_ = r.replied.wait(pctx, func() bool { return !r.down.Load() })
}

// giveUp cancels the run with ErrAgentUnreachable once no reply has come
// for d; it returns when ctx ends.
//
// hint, when it returns a non-empty text, is added to the reason: what the
// connection last heard from the server that explains the silence.
func (r *reachability) giveUp(ctx context.Context, d time.Duration, cancel context.CancelCauseFunc, hint func() string) {
	for {
		wait := d - (time.Since(r.start) - time.Duration(r.last.Load()))
		if wait <= 0 {
			reason := fmt.Sprintf("%v: no reply for %v", ErrAgentUnreachable, d)
			if h := hint(); h != "" {
				reason += " (" + h + ")"
			}
			cancel(&StoppedError{Reason: reason, Err: ErrAgentUnreachable})
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// reachAgent is a sims.Agent that tells r the outcome of every request.
type reachAgent struct {
	sims.Agent
	r *reachability
}

// Act asks the agent for an action.
func (a reachAgent) Act(ctx context.Context, session, user string, obs []float64, reward float64, first bool) (sims.Action, error) {
	act, err := a.Agent.Act(ctx, session, user, obs, reward, first)
	a.r.observe(ctx, err)
	return act, err
}

// End ends a session.
func (a reachAgent) End(ctx context.Context, session string, reward float64, terminal bool) error {
	err := a.Agent.End(ctx, session, reward, terminal)
	a.r.observe(ctx, err)
	return err
}
