package demo

import (
	"context"

	"dprl/agent/service"
)

// MaxReplicas bounds Config.Replicas.
const MaxReplicas = 8

// startCluster starts the agent of sc as a cluster in this process
// (service.StartLocalCluster): three embedded JetStream servers, a
// learner candidate with sc's settings and ledger (sc.DataDir), and
// replicas serving replicas sharing the session partitions. It returns
// the learner, whose ledger the demo reads and whose releases it
// evaluates, a wait until every replica serves a version (lockstep
// pacing: a replica follows the log a moment after the learner writes
// it), and a function that stops everything.
func startCluster(ctx context.Context, sc service.ServiceConfig, replicas int) (*service.Service, func(context.Context, uint64) error, func() error, error) {
	c, err := service.StartLocalCluster(ctx, service.LocalClusterConfig{Base: sc, LearnerDir: sc.DataDir, Servers: 3, Replicas: replicas, Name: "demo"})
	if err != nil {
		return nil, nil, nil, err
	}
	await := func(ctx context.Context, v uint64) error {
		for _, r := range c.Replicas {
			if err := r.Agent().AwaitVersion(ctx, v); err != nil {
				return err
			}
		}
		return nil
	}
	return c.Learner, await, c.Close, nil
}
