package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"

	"dprl/agent/service"
	"dprl/stream"
)

// natsFlags are dprl nats's settings.
type natsFlags struct {
	listen, store, name, cluster, clusterListen, domain string
	routes                                              []string
	syncAlways, insecure                                bool
	partitions                                          int
	prefix                                              string
}

func newNATSCmd(a *app) *cobra.Command {
	var f natsFlags
	c := &cobra.Command{
		Use:   "nats",
		Short: "run a NATS server with JetStream: a node of the cluster dprl agent --role uses",
		Long:  helpText("nats"),
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runNATS(cmd, a, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:4222", "host:port of the client listener")
	fl.StringVar(&f.store, "store", "", "directory of JetStream's file storage (required)")
	fl.StringVar(&f.name, "name", "", "the server's name, distinct in a cluster (default: generated)")
	fl.StringVar(&f.cluster, "cluster", "", "the cluster's name, the same on every node (none: a single server)")
	fl.StringVar(&f.clusterListen, "cluster-listen", "127.0.0.1:6222", "with --cluster: host:port of the route listener")
	fl.StringSliceVar(&f.routes, "routes", nil, "with --cluster: every node's route URL, nats-route://HOST:PORT, comma-separated (this node's own is ignored)")
	fl.BoolVar(&f.syncAlways, "sync-always", false, "fsync every write before acknowledging it (an acknowledged ledger entry is then on the disks of a majority; without it, in their memory, synced every two minutes)")
	fl.StringVar(&f.domain, "domain", "", "JetStream domain (none by default)")
	fl.IntVar(&f.partitions, "partitions", service.DefaultPartitions, "map the session subjects onto this many partitions, which the serving replicas (dprl agent --role serve --partitions, the same number) share: every node of a cluster needs the same; 0 maps nothing")
	fl.StringVar(&f.prefix, "prefix", stream.DefaultPrefix, "the subject prefix of the partitioned session subjects (the agents' --prefix)")
	fl.BoolVar(&f.insecure, "insecure-nats", false, "allow listening off loopback: the server has no authentication yet, so anyone who reaches it can read the cluster's streams, clipped per-session updates included")
	return c
}

// listenAt parses flag's HOST:PORT (stream.CheckListenAddr) and reports
// whether it is off loopback.
func listenAt(flag, addr string) (host string, port int, off bool, err error) {
	if err := stream.CheckListenAddr(addr); err != nil {
		return "", 0, false, usagef("--%s %v", flag, err)
	}
	host, ps, _ := net.SplitHostPort(addr)
	port, _ = strconv.Atoi(ps)
	return host, port, !stream.IsLoopbackHost(host), nil
}

func runNATS(cmd *cobra.Command, a *app, f natsFlags) error {
	if f.store == "" {
		return usagef("--store: give JetStream's storage directory")
	}
	if f.partitions < 0 || f.partitions > stream.MaxPartitions {
		return usagef("--partitions %d: want 0 to %d", f.partitions, stream.MaxPartitions)
	}
	o := stream.EmbeddedOptions{ServerName: f.name, Logger: a.log, JetStream: &stream.JetStreamOptions{StoreDir: f.store, SyncAlways: f.syncAlways, Domain: f.domain},
		Partitions: f.partitions, PartitionPrefix: f.prefix}
	var off, offCluster bool
	var err error
	if o.Host, o.Port, off, err = listenAt("listen", f.listen); err != nil {
		return err
	}
	if f.cluster != "" {
		c := &stream.ClusterOptions{Name: f.cluster, Routes: f.routes}
		if c.Host, c.Port, offCluster, err = listenAt("cluster-listen", f.clusterListen); err != nil {
			return err
		}
		o.Cluster, off = c, off || offCluster
	} else if len(f.routes) > 0 {
		return usagef("--routes needs --cluster")
	}
	if off && !f.insecure {
		return usagef("a listener off loopback needs --insecure-nats: this server has no authentication yet")
	}
	s, err := stream.StartEmbedded(o)
	if err != nil {
		return err
	}
	defer s.Shutdown()
	ev := a.log.Info().Str("url", s.ClientURL()).Str("store", f.store).Bool("sync_always", f.syncAlways).Int("partitions", f.partitions)
	if f.cluster != "" {
		ev = ev.Str("cluster", f.cluster).Str("routes", fmt.Sprint(f.routes))
	}
	ev.Msg("nats: serving with JetStream; stop with SIGINT or SIGTERM")
	<-cmd.Context().Done()
	return nil
}
