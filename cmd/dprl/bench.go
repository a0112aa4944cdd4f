package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
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
			dir, err := os.MkdirTemp("", "dprl-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			ac := agent.DefaultConfig(spec, pc)
			svc, err := agent.StartService(c.Context(), agent.ServiceConfig{Agent: ac, DataDir: dir, NATSListen: "127.0.0.1:0", Logger: a.log})
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
			client, _ := stream.NewClient(nc)
			body, _ := stream.AppendActRequest(nil, stream.ActRequest{Session: "echo-session", User: "u", Obs: []float64{0.01, -0.02, 0.03, 0.04}})
			run := func(do func(w int, i int64, rng *rand.Rand) error) (float64, *latencies, error) {
				lat := &latencies{}
				var (
					n     atomic.Int64
					wg    sync.WaitGroup
					first atomic.Value
				)
				ctx, cancel := context.WithTimeout(c.Context(), dur)
				defer cancel()
				start := time.Now()
				for w := 0; w < concurrency; w++ {
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(w), 1))
						for i := int64(0); ctx.Err() == nil; i++ {
							t0 := time.Now()
							if err := do(w, i, rng); err != nil {
								if ctx.Err() == nil {
									first.CompareAndSwap(nil, err)
								}
								return
							}
							lat.add(time.Since(t0))
							n.Add(1)
						}
					}(w)
				}
				wg.Wait()
				if e := first.Load(); e != nil {
					return 0, lat, e.(error)
				}
				return float64(n.Load()) / time.Since(start).Seconds(), lat, nil
			}
			obs := make([][]float64, concurrency)
			for i := range obs {
				obs[i] = []float64{0.01, -0.02, 0.03, 0.04}
			}
			agentRPS, agentLat, err := run(func(w int, i int64, rng *rand.Rand) error {
				sess := fmt.Sprintf("bench-%d-%d", w, i/100)
				step := i % 100
				ctx := context.Background()
				if _, err := client.Act(ctx, sess, "", obs[w], 1, step == 0); err != nil {
					return err
				}
				if step == 99 {
					return client.End(ctx, sess, 1, true)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("bench: agent: %w", err)
			}
			echoRPS, echoLat, err := run(func(int, int64, *rand.Rand) error {
				_, err := nc.Request("bench.echo", body, 5*time.Second)
				return err
			})
			if err != nil {
				return fmt.Errorf("bench: echo: %w", err)
			}
			aq, eq := agentLat.quantiles(0.5, 0.99), echoLat.quantiles(0.5, 0.99)
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
	return c
}
