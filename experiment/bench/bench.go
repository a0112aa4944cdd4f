// Package bench holds dprl bench serve's measurement: the agent served on an
// embedded NATS server against the load generator (stream/loadgen). It
// lives outside package agent so that the agent does not import the load
// generator.
package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"dprl/agent"
	"dprl/agent/service"
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
