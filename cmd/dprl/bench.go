package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"dprl/agent"
	"dprl/stream"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
)

type benchServeResult struct {
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
}

func newBenchCmd(a *app) *cobra.Command {
	return groupCmd("bench", "Benchmarks against baselines measured in the same run", newBenchServeCmd(a))
}

func newBenchServeCmd(a *app) *cobra.Command {
	var (
		concurrency int
		dur         time.Duration
		asJSON      bool
		cpuProfile  string
		actWorkers  int
	)
	c := &cobra.Command{
		Use:   "serve [--concurrency C] [--duration D]",
		Short: "Act requests/s and latency through the full agent path vs a bare NATS echo responder",
		Long: `Starts the agent (CartPole spec, fresh temporary ledger) on an embedded NATS
server and, on the same server, a bare request-reply echo responder. C client
goroutines send act requests (sessions of 100 steps) to the agent for the
duration, then the same act bodies to the echo responder; both measured in
this run, so the ratios compare like with like. No updates run during the
agent phase (K is set above the number of sessions), so it measures serving.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if concurrency < 1 || dur <= 0 {
				return usagef("--concurrency >= 1 and --duration > 0")
			}
			spec, pc, err := envProfile("cartpole")
			if err != nil {
				return err
			}
			pc.DP.UsersPerUpdate = 1 << 20
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			dir, err := os.MkdirTemp("", "dprl-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			ac := agent.DefaultConfig(spec, pc)
			svc, err := agent.StartService(c.Context(), agent.ServiceConfig{Agent: ac, DataDir: dir, NATSListen: "127.0.0.1:0", ActWorkers: actWorkers, Logger: a.log})
			if err != nil {
				return err
			}
			defer svc.Close()
			echoConn, err := stream.Connect(svc.NATSURL())
			if err != nil {
				return err
			}
			defer echoConn.Close()
			if _, err := echoConn.QueueSubscribe("bench.echo", "echo", func(m *nats.Msg) { m.Respond(m.Data) }); err != nil {
				return err
			}
			echoConn.Flush()
			nc, err := stream.Connect(svc.NATSURL())
			if err != nil {
				return err
			}
			defer nc.Close()
			// Both sides run the same client code: each worker encodes the
			// act (and every 100th step the end) request of its current
			// session into its own buffer and sends it with a plain NATS
			// request; only the subject differs. The phases alternate in
			// rounds so that load drift on a shared machine hits both alike.
			agentSubj := [2]string{stream.DefaultPrefix + ".v1.act", stream.DefaultPrefix + ".v1.end"}
			echoSubj := [2]string{"bench.echo", "bench.echo"}
			agentSide, echoSide := newBenchSide(concurrency), newBenchSide(concurrency)
			const rounds = 4
			for r := 0; r < rounds; r++ {
				if err := agentSide.run(c.Context(), nc, agentSubj, dur/rounds, true); err != nil {
					return fmt.Errorf("bench: agent: %w", err)
				}
				if err := echoSide.run(c.Context(), nc, echoSubj, dur/rounds, false); err != nil {
					return fmt.Errorf("bench: echo: %w", err)
				}
			}
			agentRPS, echoRPS := agentSide.rps(), echoSide.rps()
			agentLat, echoLat := agentSide.latencies(), echoSide.latencies()
			aq, eq := durationQuantiles(agentLat, 0.5, 0.99), durationQuantiles(echoLat, 0.5, 0.99)
			res := benchServeResult{Concurrency: concurrency, Seconds: dur.Seconds(), AgentRPS: agentRPS, EchoRPS: echoRPS,
				AgentP50Ms: aq[0], AgentP99Ms: aq[1], EchoP50Ms: eq[0], EchoP99Ms: eq[1], RPSRatio: agentRPS / echoRPS, P99Ratio: aq[1] / eq[1]}
			return emit(a.stdout, asJSON, res, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "agent %.0f req/s (p50 %.3f ms, p99 %.3f ms); echo %.0f req/s (p50 %.3f ms, p99 %.3f ms); throughput ratio %.2f, p99 ratio %.2f (concurrency %d, %s each)\n",
					res.AgentRPS, res.AgentP50Ms, res.AgentP99Ms, res.EchoRPS, res.EchoP50Ms, res.EchoP99Ms, res.RPSRatio, res.P99Ratio, concurrency, dur)
				return err
			})
		},
	}
	c.Flags().IntVar(&concurrency, "concurrency", 16, "client goroutines")
	c.Flags().DurationVar(&dur, "duration", 5*time.Second, "how long each side is measured")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().IntVar(&actWorkers, "act-workers", 0, "the agent's concurrent act handlers (as dprl agent --act-workers); 0: one per two cores")
	c.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole benchmark (both phases) to this file (go tool pprof)")
	return c
}

// benchSide is one side of "bench serve": C workers, each driving its own
// sequence of sessions of 100 steps, with every request's latency kept.
type benchSide struct {
	workers []benchWorker
	elapsed time.Duration
}

type benchWorker struct {
	i    int64 // requests sent so far (act steps; the end is step 100)
	buf  []byte
	obs  []float64
	lat  []time.Duration
	sess string
}

func newBenchSide(c int) *benchSide {
	s := &benchSide{workers: make([]benchWorker, c)}
	for w := range s.workers {
		s.workers[w].obs = []float64{0.01, -0.02, 0.03, 0.04}
		s.workers[w].lat = make([]time.Duration, 0, 1<<16)
	}
	return s
}

// run sends requests for d; subj[0] takes acts, subj[1] ends. With check,
// a reply that is an error body fails the run.
func (s *benchSide) run(ctx context.Context, nc *nats.Conn, subj [2]string, d time.Duration, check bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		wg    sync.WaitGroup
		first atomic.Value
	)
	start := time.Now()
	for w := range s.workers {
		wg.Add(1)
		go func(w *benchWorker, id int) {
			defer wg.Done()
			for ctx.Err() == nil {
				step := w.i % 101
				if step == 0 {
					w.sess = fmt.Sprintf("bench-%d-%d", id, w.i/101)
				}
				var err error
				sub := subj[0]
				if step < 100 {
					req := stream.ActRequest{Session: w.sess, Obs: w.obs}
					if step > 0 {
						rew := 1.0
						req.Reward = &rew
					}
					w.buf, err = stream.AppendActRequest(w.buf[:0], req)
				} else {
					sub = subj[1]
					w.buf, err = stream.AppendEndRequest(w.buf[:0], stream.EndRequest{Session: w.sess, Reward: 1, Terminal: true})
				}
				if err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
				t0 := time.Now()
				m, err := nc.Request(sub, w.buf, 5*time.Second)
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

// rps is requests (acts and ends) per second over the side's rounds.
func (s *benchSide) rps() float64 {
	var n int
	for _, w := range s.workers {
		n += len(w.lat)
	}
	return float64(n) / s.elapsed.Seconds()
}

// latencies returns every request's latency.
func (s *benchSide) latencies() []time.Duration {
	var all []time.Duration
	for _, w := range s.workers {
		all = append(all, w.lat...)
	}
	return all
}

// durationQuantiles returns the qs-quantiles of d in milliseconds (d is sorted).
func durationQuantiles(d []time.Duration, qs ...float64) []float64 {
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
