// Package loadgen is the load generator of dprl bench serve: client
// workers that each drive their own sequence of sessions of 100 act
// requests and an end (wire protocol v1 bodies, encoded into a per-worker
// buffer and sent as plain NATS requests), with every request's latency
// kept. Compare measures the agent against a bare echo responder on the
// same server with the same client code, only the subjects differing, so
// that the ratios compare like with like; the agent (and its server) are
// the caller's.
//
// The requests carry a fixed synthetic observation and reward: the load
// holds no user data.
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"dprl/stream"

	"github.com/nats-io/nats.go"
)

// SessionSteps is the number of act requests of a session; its end is
// request SessionSteps.
const SessionSteps = 100

// requestTimeout bounds one request.
const requestTimeout = 5 * time.Second

// Subjects are where a side sends act and end requests.
type Subjects struct {
	Act, End string
	// Session sends each request on its session's subject, Act or End
	// followed by "." and stream.SessionToken(session), as stream.Client
	// does (what a cluster's partition mapping routes on).
	Session bool
}

// AgentSubjects are the agent's act and end subjects under prefix.
func AgentSubjects(prefix string) Subjects {
	return Subjects{Act: prefix + ".v1.act", End: prefix + ".v1.end"}
}

// Echo subscribes a bare request-reply responder to subject on nc (queue
// group "echo"): each request is answered with its own body. It flushes nc
// so the server knows the subscription on return.
func Echo(nc *nats.Conn, subject string) (*nats.Subscription, error) {
	sub, err := nc.QueueSubscribe(subject, "echo", func(m *nats.Msg) { m.Respond(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("loadgen: echo: %w", err)
	}
	if err := nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("loadgen: echo: %w", err)
	}
	return sub, nil
}

// Side is one side of a comparison: its workers and the time they ran. Its
// sessions continue from one Run to the next.
type Side struct {
	workers []worker
	elapsed time.Duration
}

type worker struct {
	i    int64 // requests sent so far (act steps; the end is step SessionSteps)
	buf  []byte
	obs  []float64
	lat  []time.Duration
	sess string
	// act and end are the session's subjects.
	act, end string
}

// NewSide returns a side of concurrency workers.
func NewSide(concurrency int) *Side {
	s := &Side{workers: make([]worker, concurrency)}
	for w := range s.workers {
		s.workers[w].obs = []float64{0.01, -0.02, 0.03, 0.04}
		s.workers[w].lat = make([]time.Duration, 0, 1<<16)
	}
	return s
}

// Run sends requests on nc for d (or until ctx ends), each worker one at a
// time. With check, a reply that is an error body fails the run; the first
// error of any worker is returned.
func (s *Side) Run(ctx context.Context, nc *nats.Conn, subj Subjects, d time.Duration, check bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		wg    sync.WaitGroup
		first atomic.Value
	)
	start := time.Now()
	for w := range s.workers {
		wg.Add(1)
		go func(w *worker, id int) {
			defer wg.Done()
			for ctx.Err() == nil {
				step := w.i % (SessionSteps + 1)
				if step == 0 || w.act == "" {
					w.sess = fmt.Sprintf("bench-%d-%d", id, w.i/(SessionSteps+1))
					w.act, w.end = subj.Act, subj.End
					if subj.Session {
						tok := stream.SessionToken(w.sess)
						w.act, w.end = subj.Act+"."+tok, subj.End+"."+tok
					}
				}
				var err error
				sub := w.act
				if step < SessionSteps {
					req := stream.ActRequest{Session: w.sess, Obs: w.obs}
					if step > 0 {
						rew := 1.0
						req.Reward = &rew
					}
					w.buf, err = stream.AppendActRequest(w.buf[:0], req)
				} else {
					sub = w.end
					w.buf, err = stream.AppendEndRequest(w.buf[:0], stream.EndRequest{Session: w.sess, Reward: 1, Terminal: true})
				}
				if err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
				t0 := time.Now()
				m, err := nc.Request(sub, w.buf, requestTimeout)
				if err == nil && check && bytes.HasPrefix(m.Data, []byte(`{"error"`)) {
					err = fmt.Errorf("error reply: %s", m.Data)
				}
				if err != nil {
					if ctx.Err() == nil {
						first.CompareAndSwap(nil, err)
					}
					return
				}
				w.lat = append(w.lat, time.Since(t0))
				w.i++
			}
		}(&s.workers[w], w)
	}
	wg.Wait()
	s.elapsed += time.Since(start)
	if e := first.Load(); e != nil {
		return e.(error)
	}
	return nil
}

// Requests is the number of requests answered (acts and ends) over the
// side's runs.
func (s *Side) Requests() int {
	var n int
	for _, w := range s.workers {
		n += len(w.lat)
	}
	return n
}

// RPS is requests answered per second over the side's runs.
func (s *Side) RPS() float64 {
	return float64(s.Requests()) / s.elapsed.Seconds()
}

// Latencies returns every answered request's latency.
func (s *Side) Latencies() []time.Duration {
	var all []time.Duration
	for _, w := range s.workers {
		all = append(all, w.lat...)
	}
	return all
}

// Quantiles sorts d and returns its qs-quantiles in milliseconds (all 0
// for no latency).
func Quantiles(d []time.Duration, qs ...float64) []float64 {
	slices.Sort(d)
	out := make([]float64, len(qs))
	if len(d) == 0 {
		return out
	}
	for i, q := range qs {
		out[i] = float64(d[min(len(d)-1, int(q*float64(len(d))))].Nanoseconds()) / 1e6
	}
	return out
}

// EchoSubject is the subject of Compare's echo responder.
const EchoSubject = "bench.echo"

// Config is a comparison of the agent with an echo responder.
type Config struct {
	// URL is the NATS server of the agent; Prefix is the agent's subject
	// prefix.
	URL, Prefix string
	// Concurrency is the number of workers of each side (>= 1).
	Concurrency int
	// Duration is how long each side is measured in all (> 0), in Rounds
	// alternating rounds of Duration/Rounds (>= 1).
	Duration time.Duration
	Rounds   int
	// SessionSubjects sends both sides' requests on session subjects
	// (Subjects.Session): needed by a cluster's serving replicas.
	SessionSubjects bool
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Prefix == "" {
		errs = append(errs, errors.New("loadgen: empty prefix"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("loadgen: concurrency %d, want >= 1", c.Concurrency))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("loadgen: duration %v, want > 0", c.Duration))
	}
	if c.Rounds < 1 {
		errs = append(errs, fmt.Errorf("loadgen: rounds %d, want >= 1", c.Rounds))
	}
	return errors.Join(errs...)
}

// Result is a comparison's outcome: requests per second and latency
// quantiles of each side, and their ratios.
type Result struct {
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"seconds_each"`
	AgentRPS    float64 `json:"agent_rps"`
	EchoRPS     float64 `json:"echo_rps"`
	AgentP50Ms  float64 `json:"agent_p50_ms"`
	AgentP99Ms  float64 `json:"agent_p99_ms"`
	EchoP50Ms   float64 `json:"echo_p50_ms"`
	EchoP99Ms   float64 `json:"echo_p99_ms"`
	RPSRatio    float64 `json:"rps_ratio"`
	P99Ratio    float64 `json:"p99_ratio"`
	// Each is how long each side was measured (Seconds, for the text).
	Each time.Duration `json:"-"`
}

// WriteText writes the result as one line.
func (r Result) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "agent %.0f req/s (p50 %.3f ms, p99 %.3f ms); echo %.0f req/s (p50 %.3f ms, p99 %.3f ms); throughput ratio %.2f, p99 ratio %.2f (concurrency %d, %s each)\n",
		r.AgentRPS, r.AgentP50Ms, r.AgentP99Ms, r.EchoRPS, r.EchoP50Ms, r.EchoP99Ms, r.RPSRatio, r.P99Ratio, r.Concurrency, r.Each)
	return err
}

// Compare measures the agent at cfg.URL against a bare echo responder
// (Echo, on EchoSubject) that it runs on its own connection to the same
// server; both sides share one client connection and the same client code.
// The rounds alternate, agent first, so that load drift on a shared machine
// hits both alike. Only the agent's replies are checked for error bodies.
func Compare(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	echoConn, err := stream.Connect(cfg.URL)
	if err != nil {
		return Result{}, err
	}
	defer echoConn.Close()
	for _, subj := range []string{EchoSubject, EchoSubject + ".*"} {
		if _, err := Echo(echoConn, subj); err != nil {
			return Result{}, err
		}
	}
	nc, err := stream.Connect(cfg.URL)
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	agentSubj, echoSubj := AgentSubjects(cfg.Prefix), Subjects{Act: EchoSubject, End: EchoSubject}
	agentSubj.Session, echoSubj.Session = cfg.SessionSubjects, cfg.SessionSubjects
	agentSide, echoSide := NewSide(cfg.Concurrency), NewSide(cfg.Concurrency)
	round := cfg.Duration / time.Duration(cfg.Rounds)
	for range cfg.Rounds {
		if err := agentSide.Run(ctx, nc, agentSubj, round, true); err != nil {
			return Result{}, fmt.Errorf("bench: agent: %w", err)
		}
		if err := echoSide.Run(ctx, nc, echoSubj, round, false); err != nil {
			return Result{}, fmt.Errorf("bench: echo: %w", err)
		}
	}
	agentRPS, echoRPS := agentSide.RPS(), echoSide.RPS()
	aq, eq := Quantiles(agentSide.Latencies(), 0.5, 0.99), Quantiles(echoSide.Latencies(), 0.5, 0.99)
	return Result{Concurrency: cfg.Concurrency, Seconds: cfg.Duration.Seconds(), AgentRPS: agentRPS, EchoRPS: echoRPS,
		AgentP50Ms: aq[0], AgentP99Ms: aq[1], EchoP50Ms: eq[0], EchoP99Ms: eq[1], RPSRatio: agentRPS / echoRPS, P99Ratio: aq[1] / eq[1],
		Each: cfg.Duration}, nil
}
