// Package bench holds dprl bench serve's measurement: the agent served on an
// embedded NATS server against the load generator (stream/loadgen). It
// lives outside package agent so that the agent does not import the load
// generator.
package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/internal/fielderr"
	"dprl/profile"
	"dprl/stream"
	"dprl/stream/loadgen"

	"github.com/rs/zerolog"
)

// ServeConfig configures Serve (dprl bench serve).
type ServeConfig struct {
	// Concurrency client goroutines send act requests for Duration.
	Concurrency int
	Duration    time.Duration
	// ActWorkers is the agent's (service.ServiceConfig.ActWorkers).
	ActWorkers int
	Logger     zerolog.Logger
}

// Serve measures serving: it starts the agent (CartPole spec, a fresh
// temporary ledger, K above the number of sessions so that no update
// runs) on an embedded NATS server and compares it with a bare echo
// responder on the same server (loadgen.Compare, 4 rounds).
func Serve(ctx context.Context, cfg ServeConfig) (loadgen.Result, error) {
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		return loadgen.Result{}, err
	}
	// No update: K, the largest the exact sampler allows (2^15), is above
	// the sessions of a run (3.3 M acts in sessions of 100), and K
	// sessions fit the session memory (agent.Config.Validate).
	pc.DP.UsersPerUpdate = 1 << 15
	dir, err := os.MkdirTemp("", "dprl-bench-")
	if err != nil {
		return loadgen.Result{}, err
	}
	defer os.RemoveAll(dir)
	svc, err := service.StartService(ctx, service.ServiceConfig{Agent: agent.DefaultConfig(spec, pc), DataDir: dir, NATSListen: "127.0.0.1:0", ActWorkers: cfg.ActWorkers, Logger: cfg.Logger})
	if err != nil {
		return loadgen.Result{}, err
	}
	defer svc.Close()
	res, err := loadgen.Compare(ctx, loadgen.Config{URL: svc.NATSURL(), Prefix: stream.DefaultPrefix, Concurrency: cfg.Concurrency, Duration: cfg.Duration, Rounds: 4})
	if err == nil && svc.Agent().Version() > 0 {
		err = fmt.Errorf("agent: bench serve: an update ran during the measurement (more than %d sessions finished), so the agent side measured more than serving: shorten --duration", pc.DP.UsersPerUpdate)
	}
	return res, err
}

// ClusterConfig configures ServeCluster (dprl bench serve --replicas).
type ClusterConfig struct {
	// Replicas serving replicas (>= 1) serve Concurrency client
	// goroutines for Duration; ActWorkers is each replica's.
	Replicas    int
	Concurrency int
	Duration    time.Duration
	ActWorkers  int
	Logger      zerolog.Logger
}

// ServeCluster measures serving by a cluster's replicas on this machine:
// one embedded JetStream server with the partition mapping
// (stream.PartitionMappings, service.DefaultPartitions), a learner
// candidate (K above the sessions of a run, so that no release runs) and
// Replicas serving replicas sharing the partitions, all in this process,
// against a bare echo responder on the same server (loadgen.Compare with
// session subjects). The replicas compute and publish each finished
// session's clipped update, as in production; on one machine they share
// its cores, so more replicas measure the cost of routing and partitions,
// not the gain of more machines.
func ServeCluster(ctx context.Context, cfg ClusterConfig) (loadgen.Result, error) {
	if cfg.Replicas < 1 {
		return loadgen.Result{}, fmt.Errorf("bench: %d replicas, want >= 1", cfg.Replicas)
	}
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		return loadgen.Result{}, err
	}
	pc.DP.UsersPerUpdate = 1 << 15 // no release (see Serve)
	c, err := service.StartLocalCluster(ctx, service.LocalClusterConfig{Base: service.ServiceConfig{Agent: agent.DefaultConfig(spec, pc), ActWorkers: cfg.ActWorkers, Logger: cfg.Logger},
		Servers: 1, Replicas: cfg.Replicas, Name: "bench"})
	if err != nil {
		return loadgen.Result{}, err
	}
	defer c.Close()
	return loadgen.Compare(ctx, loadgen.Config{URL: c.URL, Prefix: stream.DefaultPrefix, Concurrency: cfg.Concurrency, Duration: cfg.Duration, Rounds: 4, SessionSubjects: true})
}

// Args are dprl bench serve's settings, one field per flag: Replicas
// serving replicas (ServeCluster), or the single agent (Serve) for 0, and
// the file of a CPU profile of the whole benchmark ("" for none).
type Args struct {
	Concurrency int           `flag:"concurrency" default:"16" usage:"client goroutines"`
	Duration    time.Duration `flag:"duration" default:"5s" usage:"how long each side is measured"`
	ActWorkers  int           `flag:"act-workers" usage:"the agent's concurrent act handlers (as dprl agent --act-workers); 0: one per two cores"`
	Replicas    int           `flag:"replicas" usage:"measure a cluster instead: this many serving replicas (--role serve) and a learner on one embedded JetStream server with the partition mapping, in this process (0: the single agent)"`
	CPUProfile  string        `flag:"cpuprofile" usage:"write a CPU profile of the whole benchmark (both phases) to this file (go tool pprof)"`
}

// argFields are the fields the errors of Args name.
var argFields = fielderr.Fields{"Concurrency", "Duration", "ActWorkers", "Replicas"}

// Run checks a (its error names the fields, a *fielderr.Error) and runs
// Serve, or ServeCluster for Replicas >= 1, profiling the CPU to
// CPUProfile if set.
func (a Args) Run(ctx context.Context, log zerolog.Logger) (loadgen.Result, error) {
	if a.Concurrency < 1 || a.Duration <= 0 || a.ActWorkers < 0 || a.Replicas < 0 {
		return loadgen.Result{}, argFields.Errorf("want {Concurrency} >= 1, {Duration} > 0, {ActWorkers} >= 0 and {Replicas} >= 0")
	}
	if a.CPUProfile != "" {
		f, err := os.Create(a.CPUProfile)
		if err != nil {
			return loadgen.Result{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return loadgen.Result{}, err
		}
		defer pprof.StopCPUProfile()
	}
	if a.Replicas > 0 {
		return ServeCluster(ctx, ClusterConfig{Replicas: a.Replicas, Concurrency: a.Concurrency, Duration: a.Duration, ActWorkers: a.ActWorkers, Logger: log})
	}
	return Serve(ctx, ServeConfig{Concurrency: a.Concurrency, Duration: a.Duration, ActWorkers: a.ActWorkers, Logger: log})
}
