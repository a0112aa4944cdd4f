package service

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dprl/agent"
	"dprl/ledger/record"
	"dprl/policy"
	"dprl/stream"
	"dprl/stream/updateq"
)

// The roles of dprl agent --role.
const (
	RoleAll   = "all"   // one process serves, learns and owns its ledger
	RoleServe = "serve" // a serving replica of a cluster (agent.Replica)
	RoleLearn = "learn" // a learner candidate of a cluster (agent.Learner)
)

// Cluster runs the agent as one role of a cluster over JetStream
// (ServiceConfig.Cluster; docs/privacy.md, section 13): the ledger of
// record, the writer lease and the update queue live in streams of the
// external NATS server (ServiceConfig.NATS), and every process keeps its
// own copy of the ledger in DataDir.
type Cluster struct {
	// Role is RoleServe or RoleLearn.
	Role string
	// Name names the cluster's streams (letters, digits, '-', '_').
	Name string
	// Replicas is the streams' replication factor (3 survives the loss of
	// one server; 1 for a single server).
	Replicas int
	// Holder names a learner in its writer entry (default host:pid).
	Holder string
	// LeaseTTL is the writer lease's TTL (whole seconds, >= 1 s); a
	// learner renews it every third of it.
	LeaseTTL time.Duration
	// UserKey is the user key every process of the cluster shares
	// (ledger.Options.UserKey).
	UserKey []byte
	// Partitions is the partition count of the session subjects (the NATS
	// servers' mapping, stream.PartitionMappings): a serving replica
	// serves the partitions it holds (RoleServe; 1 to
	// stream.MaxPartitions).
	Partitions int
}

// ClusterSettings are the cluster settings as an operator gives them
// (Settings.Cluster; the cluster-* flags).
type ClusterSettings struct {
	// Role (role): "all" (or ""), "serve" or "learn".
	Role string `flag:"role" usage:"all: one process serves, learns and owns its ledger; serve: a serving replica of a cluster (publishes each session's clipped update, serves the ledger of record's versions); learn: a learner candidate (the one holding the writer lease learns from the replicas' updates and writes through the ledger of record). serve and learn need --nats URL of a JetStream server or cluster (dprl nats) and --user-key"`
	// Name (cluster-name), Replicas (cluster-replicas), Holder
	// (cluster-holder) and LeaseTTL (lease-ttl) are Cluster's.
	Name     string        `flag:"cluster-name" default:"default" usage:"with --role serve or learn: the name of the cluster's streams (ledger of record, update queue, writer lease)"`
	Replicas int           `flag:"cluster-replicas" default:"3" usage:"with --role: the replication factor of the cluster's streams, 1 to 5 (3 survives the loss of one server)"`
	Holder   string        `flag:"cluster-holder" usage:"with --role learn: this learner's name in its writer entry (default host:pid)"`
	LeaseTTL time.Duration `flag:"lease-ttl" default:"10s" usage:"with --role: the TTL of the writer lease (learn) and of a replica's partitions (serve), whole seconds (renewed every third of it; a failed learner is replaced, a failed replica's partitions taken over, after it; a learner retries its renewal through a streams' leader election, 4-9 s when a server dies, and takes its key again if it expired meanwhile and no other candidate took it)"`
	// UserKeyFile (user-key) holds the shared user key: 64 hex digits.
	UserKeyFile string `flag:"user-key" usage:"with --role: a file of 64 hex digits, the user key every process of the cluster shares (one user must have one key everywhere, or the per-user caps would not hold)"`
	// Partitions (partitions) is Cluster's.
	Partitions int `flag:"partitions" usage:"with --role serve: the partition count of the session subjects, the same as every NATS server's (dprl nats --partitions); the serving replicas share the partitions, and each session's requests go to the one holding its partition"`
}

// resolve returns the Cluster of a role, nil for RoleAll.
func (c ClusterSettings) resolve(nats string, models int, fixed bool) (*Cluster, error) {
	switch c.Role {
	case "", RoleAll:
		return nil, nil
	case RoleServe, RoleLearn:
	default:
		return nil, SettingsFields.Errorf("{Role} %q: want all, serve or learn", c.Role)
	}
	switch {
	case nats == "" || nats == "embedded":
		return nil, SettingsFields.Errorf("{Role} %s needs {NATS} URL of a JetStream server or cluster (dprl nats runs one)", c.Role)
	case models > 0 || fixed:
		return nil, SettingsFields.Errorf("{Role} %s serves one learned policy: not with models or a fixed policy", c.Role)
	case c.Replicas < 1 || c.Replicas > 5:
		return nil, SettingsFields.Errorf("{ClusterReplicas} %d: want 1 to 5", c.Replicas)
	case c.LeaseTTL < time.Second || c.LeaseTTL%time.Second != 0:
		return nil, SettingsFields.Errorf("{LeaseTTL} %v: want whole seconds, at least 1s", c.LeaseTTL)
	case c.Partitions < 1 || c.Partitions > stream.MaxPartitions:
		return nil, SettingsFields.Errorf("{Partitions} %d: want 1 to %d, the same as every NATS server's (dprl nats --partitions)", c.Partitions, stream.MaxPartitions)
	case c.UserKeyFile == "":
		return nil, SettingsFields.Errorf("{Role} %s needs {UserKeyFile}: the user key every process of the cluster shares", c.Role)
	}
	b, err := os.ReadFile(c.UserKeyFile)
	if err != nil {
		return nil, SettingsFields.Errorf("{UserKeyFile}: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, SettingsFields.Errorf("{UserKeyFile} %s: want 64 hex digits (32 bytes)", c.UserKeyFile)
	}
	holder := c.Holder
	if holder == "" {
		host, _ := os.Hostname()
		holder = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	return &Cluster{Role: c.Role, Name: c.Name, Replicas: c.Replicas, Holder: holder, LeaseTTL: c.LeaseTTL, UserKey: key, Partitions: c.Partitions}, nil
}

// clusterOptions connects the agent of a cluster role to its streams.
func (s *Service) clusterOptions(ctx context.Context, opt *agent.Options) error {
	c := s.cfg.Cluster
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("agent: cluster: %w", err)
	}
	l, err := policy.NewLearner(s.cfg.Agent.Spec, s.cfg.Agent.Policy)
	if err != nil {
		return err
	}
	if need, have := updateq.MaxMessageSize(l.NumParams()), s.nc.MaxPayload(); int64(need) > have {
		return fmt.Errorf("agent: cluster: a session's update of %d parameters takes up to %d bytes, above the %d bytes the NATS servers accept: raise their maximum payload (dprl nats --max-payload; max_payload in a server's configuration, at most 64 MiB) or serve a smaller network", l.NumParams(), need, have)
	}
	qc := updateq.Config{Name: c.Name, Replicas: c.Replicas, MaxValues: l.NumParams()}
	if c.Role == RoleServe {
		// A replica reads the log and publishes to the queue; it creates
		// no stream (stream.ReplicaPermissions: a learner does).
		log, err := record.OpenReader(ctx, js, c.Name)
		if err != nil {
			return err
		}
		q, err := updateq.OpenPublisher(js, qc)
		if err != nil {
			return err
		}
		opt.Replica = &agent.Replica{Log: log, Updates: q}
		return nil
	}
	log, err := record.Open(ctx, js, record.Config{Name: c.Name, Replicas: c.Replicas})
	if err != nil {
		return err
	}
	q, err := updateq.Open(ctx, js, qc)
	if err != nil {
		return err
	}
	lease, err := record.OpenLease(ctx, js, record.LeaseConfig{Name: c.Name, Replicas: c.Replicas, TTL: c.LeaseTTL, Holder: c.Holder})
	if err != nil {
		return err
	}
	// The replicas' partition bucket: they may only bind to it.
	if _, err := record.OpenLease(ctx, js, partsBucket(c)); err != nil {
		return err
	}
	cons, err := q.Consumer(ctx, "learner", 30*time.Second)
	if err != nil {
		return err
	}
	opt.Learner = &agent.Learner{Log: log, Lease: lease, Updates: cons, Holder: c.Holder, RenewEvery: c.LeaseTTL / 3}
	return nil
}

// startPartitioner checks the servers' partition mapping and starts the
// serving replica p's partitioner (see partitioner).
func (s *Service) startPartitioner(ctx context.Context, p *Policy) error {
	if err := probePartitions(ctx, s.nc, p.prefix, s.cfg.Cluster.Partitions); err != nil {
		return err
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("agent: cluster: %w", err)
	}
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pt, err := newPartitioner(octx, js, s.cfg.Cluster, p.srv, func() bool { return p.agent.ClusterState().Following }, p.log, &p.metrics.Cluster)
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pt.run(rctx)
	}()
	p.parts = pt
	p.stopParts = func() {
		stop()
		<-done
	}
	return nil
}
