package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"dprl/internal/progress"
	"dprl/sims"
	"dprl/stream"
)

// ReplayConfig is a replay: simulated users against a running agent.
type ReplayConfig struct {
	// URL is the agent's NATS server, Prefix its subject prefix
	// (stream.DefaultPrefix unless the agent changed it), Options the
	// connection's credentials (stream.ClientFiles).
	URL, Prefix string
	Options     []stream.Option
	// Env is the simulator the users play, Users the number of sessions,
	// Concurrency the sessions played at the same time, Returning the
	// probability that a session comes from an earlier user.
	Env                string
	Users, Concurrency int
	Returning          float64
	// Seed seeds the simulated users; 0: a random seed.
	Seed uint64
	// OnSessionError, if not nil, is told of each failed session; a failed
	// session is counted and the run goes on.
	OnSessionError func(session string, err error)
	// StartProgress, if not nil, is called when the users start with a
	// function returning the run's progress at any moment; Replay calls
	// the function it returns once the users have finished.
	StartProgress func(progress func() ReplayProgress) (stop func())
}

// Validate reports the first problem, in the order dprl replay has always
// checked them: the counts, the returning probability, the environment
// (sims.New's error).
func (c ReplayConfig) Validate() error {
	if c.Users < 1 || c.Concurrency < 1 {
		return Fields.Errorf("{Users} and {Concurrency} must be >= 1")
	}
	if err := validReturning(c.Returning); err != nil {
		return err
	}
	_, err := sims.New(c.Env)
	return err
}

// ReplayResult is the summary of a replay.
type ReplayResult struct {
	Env        string  `json:"env"`
	Users      int64   `json:"users"`
	Acts       int64   `json:"acts"`
	Seconds    float64 `json:"seconds"`
	ActsPerSec float64 `json:"acts_per_second"`
	P50Ms      float64 `json:"act_p50_ms"`
	P99Ms      float64 `json:"act_p99_ms"`
	Errors     int64   `json:"errors"`
	// SimUsersCurve is the simulated users' own mean return per tenth of the
	// run, measured by the users (simulation only: not released by the
	// agent, not covered by its guarantee).
	SimUsersCurve []float64 `json:"sim_users_curve"`
	LastVersion   uint64    `json:"last_version"`
}

// WriteText writes the summary for people, the users' own curve labelled
// simulation-only.
func (r ReplayResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d sessions, %d acts in %.1f s: %.0f acts/s, act p50 %.3f ms, p99 %.3f ms, %d errors, policy version %d\n",
		r.Users, r.Acts, r.Seconds, r.ActsPerSec, r.P50Ms, r.P99Ms, r.Errors, r.LastVersion)
	fmt.Fprint(w, "simulation only: the simulated users' own mean return per tenth of the run (measured by the users, not released by the agent):")
	for _, v := range r.SimUsersCurve {
		fmt.Fprintf(w, " %.1f", v)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// ReplayProgress is a running replay's progress.
type ReplayProgress struct {
	Played   int64 // sessions finished (failed ones included)
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
// cfg.Env, cfg.Concurrency at a time. When ctx ends first it reports the
// sessions played so far; other errors of the run are returned.
func Replay(ctx context.Context, cfg ReplayConfig) (ReplayResult, error) {
	if err := cfg.Validate(); err != nil {
		return ReplayResult{}, err
	}
	nc, err := stream.Connect(cfg.URL, append([]stream.Option{stream.WithName("dprl-replay")}, cfg.Options...)...)
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
	)
	pop, err := sims.NewPopulation(sims.PopulationConfig{
		NewEnv:     func() sims.Env { e, _ := sims.New(cfg.Env); return e }, // checked by Validate
		Sessions:   cfg.Users,
		Workers:    cfg.Concurrency,
		ReturnProb: cfg.Returning,
		Seed:       master,
		Prefix:     fmt.Sprintf("replay-%d", master),
		OnError: func(r sims.SessionResult, err error) error {
			// A failed session is counted and the run goes on.
			played.Add(1)
			errs.Add(1)
			if cfg.OnSessionError != nil {
				cfg.OnSessionError(r.Session, err)
			}
			return nil
		},
	})
	if err != nil {
		return ReplayResult{}, err
	}
	start := time.Now()
	stop := func() {}
	if cfg.StartProgress != nil {
		stop = cfg.StartProgress(func() ReplayProgress {
			return ReplayProgress{Played: played.Load(), Users: cfg.Users, Errors: errs.Load(), Version: lastVer.Load(), ActP99Ms: lat.quantiles(0.99)[0]}
		})
	}
	runErr := pop.Run(ctx, timedAgent{Agent: client, lat: &lat}, func(r sims.SessionResult) {
		returns[r.Index] = r.Return // serialised with OnError, read after Run
		played.Add(1)
	})
	stop()
	if runErr != nil && ctx.Err() == nil {
		return ReplayResult{}, runErr
	}
	// Interrupted: report the sessions played so far.
	secs := time.Since(start).Seconds()
	q := lat.quantiles(0.5, 0.99)
	n := lat.count()
	res := ReplayResult{Env: cfg.Env, Users: played.Load(), Acts: n, Seconds: secs, ActsPerSec: float64(n) / secs,
		P50Ms: q[0], P99Ms: q[1], Errors: errs.Load(), LastVersion: lastVer.Load()}
	users := cfg.Users
	for d := 0; d < 10; d++ {
		lo, hi := d*users/10, (d+1)*users/10
		var s float64
		for _, r := range returns[lo:hi] {
			s += r
		}
		res.SimUsersCurve = append(res.SimUsersCurve, s/float64(max(hi-lo, 1)))
	}
	return res, nil
}
