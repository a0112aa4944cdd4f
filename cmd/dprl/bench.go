package main

import (
	"os"
	"runtime/pprof"
	"time"

	"dprl/experiment/bench"

	"github.com/spf13/cobra"
)

func newBenchCmd(a *app) *cobra.Command {
	return groupCmd("bench", "Benchmarks against baselines measured in the same run", newBenchServeCmd(a), newBenchVWCmd(a))
}

func newBenchServeCmd(a *app) *cobra.Command {
	var (
		concurrency int
		dur         time.Duration
		cpuProfile  string
		actWorkers  int
		replicas    int
	)
	c := &cobra.Command{
		Use:   "serve [--concurrency C] [--duration D]",
		Short: "Act requests/s and latency through the full agent path vs a bare NATS echo responder",
		RunE: func(c *cobra.Command, _ []string) error {
			if concurrency < 1 || dur <= 0 || actWorkers < 0 || replicas < 0 {
				return usagef("want --concurrency >= 1, --duration > 0, --act-workers >= 0 and --replicas >= 0")
			}
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
			if replicas > 0 {
				res, err := bench.ServeCluster(c.Context(), bench.ClusterConfig{Replicas: replicas, Concurrency: concurrency, Duration: dur, ActWorkers: actWorkers, Logger: a.log})
				return emit(a, res, err)
			}
			res, err := bench.Serve(c.Context(), bench.ServeConfig{Concurrency: concurrency, Duration: dur, ActWorkers: actWorkers, Logger: a.log})
			return emit(a, res, err)
		},
	}
	c.Flags().IntVar(&concurrency, "concurrency", 16, "client goroutines")
	c.Flags().DurationVar(&dur, "duration", 5*time.Second, "how long each side is measured")
	c.Flags().Bool("json", false, "print the result as JSON")
	c.Flags().IntVar(&actWorkers, "act-workers", 0, "the agent's concurrent act handlers (as dprl agent --act-workers); 0: one per two cores")
	c.Flags().IntVar(&replicas, "replicas", 0, "measure a cluster instead: this many serving replicas (--role serve) and a learner on one embedded JetStream server with the partition mapping, in this process (0: the single agent)")
	c.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole benchmark (both phases) to this file (go tool pprof)")
	return c
}
