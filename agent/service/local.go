package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dprl/stream"
)

// LocalClusterConfig describes a cluster run in one process
// (StartLocalCluster): for simulations and benchmarks on one machine.
type LocalClusterConfig struct {
	// Base is every role's configuration: its agent, limits and logger
	// (its NATS, data directory and cluster fields are set per role).
	Base ServiceConfig
	// LearnerDir is the learner's data directory ("": a temporary one).
	LearnerDir string
	// Servers embedded JetStream servers (1 or 3; the streams are
	// replicated on all of them) and Replicas serving replicas (>= 1).
	Servers, Replicas int
	// Name names the cluster's streams.
	Name string
}

// LocalCluster is a cluster running in this process: its servers, one
// learner and its serving replicas, sharing DefaultPartitions session
// partitions and a fresh random user key.
type LocalCluster struct {
	Learner  *Service
	Replicas []*Service
	// URL is the servers' client URLs, comma-separated.
	URL   string
	stops []func() error
	tmp   string
}

// StartLocalCluster starts cfg's cluster and waits (at most two minutes)
// until the learner has written its entry, every replica follows it and
// holds a partition, and every partition is held.
func StartLocalCluster(ctx context.Context, cfg LocalClusterConfig) (_ *LocalCluster, err error) {
	if cfg.Servers != 1 && cfg.Servers != 3 || cfg.Replicas < 1 {
		return nil, fmt.Errorf("agent: local cluster: %d servers and %d replicas, want 1 or 3 and >= 1", cfg.Servers, cfg.Replicas)
	}
	c := &LocalCluster{}
	if c.tmp, err = os.MkdirTemp("", "dprl-cluster-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	servers, err := stream.StartCluster(cfg.Name, cfg.Servers, filepath.Join(c.tmp, "nats"), stream.EmbeddedOptions{Port: -1, Partitions: DefaultPartitions, Logger: cfg.Base.Logger})
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, s := range servers {
		c.stops = append(c.stops, func() error { s.Shutdown(); return nil })
		urls = append(urls, s.ClientURL())
	}
	c.URL = strings.Join(urls, ",")
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	start := func(role, holder, dir string) (*Service, error) {
		sc := cfg.Base
		sc.NATS, sc.NATSListen, sc.DataDir, sc.SessionLogDir, sc.SessionLogWriter = c.URL, "", dir, "", nil
		sc.Cluster = &Cluster{Role: role, Name: cfg.Name, Replicas: cfg.Servers, Holder: holder, LeaseTTL: 10 * time.Second, UserKey: key, Partitions: DefaultPartitions}
		s, err := StartService(ctx, sc)
		if err != nil {
			return nil, fmt.Errorf("agent: local cluster: %s: %w", holder, err)
		}
		c.stops = append(c.stops, s.Close)
		return s, nil
	}
	if c.Learner, err = start(RoleLearn, "learner", cmp.Or(cfg.LearnerDir, filepath.Join(c.tmp, "learner"))); err != nil {
		return nil, err
	}
	for i := range cfg.Replicas {
		r, err := start(RoleServe, fmt.Sprint("replica-", i), filepath.Join(c.tmp, fmt.Sprint("replica", i)))
		if err != nil {
			return nil, err
		}
		c.Replicas = append(c.Replicas, r)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		// Up once every partition is held, each replica holds at least
		// one and none more than its fair share (one holding more is
		// about to hand some over, leaving them unserved a moment: the
		// first requests on them would find no responders), and every
		// replica follows the log.
		held, least, most, following := 0, DefaultPartitions, 0, true
		for _, r := range c.Replicas {
			st := r.Status()
			held += len(st.Cluster.Partitions)
			least = min(least, len(st.Cluster.Partitions))
			most = max(most, len(st.Cluster.Partitions))
			following = following && r.Agent().ClusterState().Following
		}
		fair := (DefaultPartitions + len(c.Replicas) - 1) / len(c.Replicas)
		if held == DefaultPartitions && least >= 1 && most <= fair && following {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("agent: local cluster: not up after two minutes (the replicas hold %d of %d partitions)", held, DefaultPartitions)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops the replicas, the learner and the servers, in that order,
// and removes the temporary directories.
func (c *LocalCluster) Close() error {
	var errs []error
	for i := len(c.stops) - 1; i >= 0; i-- {
		errs = append(errs, c.stops[i]())
	}
	c.stops = nil
	if c.tmp != "" {
		errs = append(errs, os.RemoveAll(c.tmp))
	}
	return errors.Join(errs...)
}
