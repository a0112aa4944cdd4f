package demo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dprl/agent/service"
	"dprl/stream"
)

// MaxReplicas bounds Config.Replicas.
const MaxReplicas = 8

// startCluster starts the agent of sc as a cluster on this machine: three
// embedded JetStream servers (streams replicated on all three) mapping the
// session subjects onto service.DefaultPartitions partitions, a learner
// candidate with sc's settings and ledger (sc.DataDir), and replicas
// serving replicas sharing the partitions, each with its own ledger in a
// temporary directory. It returns the learner, whose ledger the demo reads
// and whose releases it evaluates, a wait until every replica serves a version, and a
// function that stops everything (the replicas, the learner, the servers)
// and removes the temporary directory.
func startCluster(ctx context.Context, sc service.ServiceConfig, replicas int) (*service.Service, func(context.Context, uint64) error, func() error, error) {
	tmp, err := os.MkdirTemp("", "dprl-demo-cluster-")
	if err != nil {
		return nil, nil, nil, err
	}
	var stops []func() error
	stop := func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		errs = append(errs, os.RemoveAll(tmp))
		return errors.Join(errs...)
	}
	fail := func(err error) (*service.Service, func(context.Context, uint64) error, func() error, error) {
		return nil, nil, nil, errors.Join(err, stop())
	}
	servers, err := stream.StartCluster("demo", 3, filepath.Join(tmp, "nats"), stream.EmbeddedOptions{Port: -1, Partitions: service.DefaultPartitions, Logger: sc.Logger})
	if err != nil {
		return fail(err)
	}
	var urls []string
	for _, s := range servers {
		stops = append(stops, func() error { s.Shutdown(); return nil })
		urls = append(urls, s.ClientURL())
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fail(err)
	}
	role := func(r, holder, dir string) service.ServiceConfig {
		c := sc
		c.NATS, c.NATSListen, c.DataDir, c.SessionLogDir = strings.Join(urls, ","), "", dir, ""
		c.Cluster = &service.Cluster{Role: r, Name: "demo", Replicas: 3, Holder: holder, LeaseTTL: 10 * time.Second, UserKey: key, Partitions: service.DefaultPartitions}
		return c
	}
	learner, err := service.StartService(ctx, role(service.RoleLearn, "learner", sc.DataDir))
	if err != nil {
		return fail(fmt.Errorf("demo: learner: %w", err))
	}
	stops = append(stops, learner.Close)
	var reps []*service.Service
	for i := range replicas {
		r, err := service.StartService(ctx, role(service.RoleServe, fmt.Sprint("replica-", i), filepath.Join(tmp, fmt.Sprint("replica", i))))
		if err != nil {
			return fail(fmt.Errorf("demo: replica %d: %w", i, err))
		}
		stops = append(stops, r.Close)
		reps = append(reps, r)
	}
	// The learner has written its entry and every replica follows it,
	// and the replicas share the partitions evenly.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		held, least, ready := 0, service.DefaultPartitions, true
		for _, r := range reps {
			st := r.Status()
			held += len(st.Cluster.Partitions)
			least = min(least, len(st.Cluster.Partitions))
			ready = ready && st.Head.Seq > 0
		}
		if held == service.DefaultPartitions && least >= 1 && ready {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("demo: the cluster is not up after two minutes (replicas hold %d of %d partitions)", held, service.DefaultPartitions))
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	// Lockstep pacing waits until every replica serves a version: a
	// replica follows the log a moment after the learner writes it.
	await := func(ctx context.Context, v uint64) error {
		for _, r := range reps {
			if err := r.Agent().AwaitVersion(ctx, v); err != nil {
				return err
			}
		}
		return nil
	}
	return learner, await, stop, nil
}
