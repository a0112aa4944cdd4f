package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dprl/agent/service"
	"dprl/cmd/dprl/cliflags"
	"dprl/stream"
)

func newNATSCmd(a *app) *cobra.Command {
	var f stream.NodeConfig
	var fl *cliflags.Flags
	c := &cobra.Command{
		Use:   "nats",
		Short: "run a NATS server with JetStream: a node of the cluster dprl agent --role uses",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runNATS(cmd, a, fl, f) },
	}
	fl = cliflags.New(c.Flags(), &f)
	fl.StringVar(&f.Listen, "listen", "127.0.0.1:4222", "host:port of the client listener")
	fl.StringVar(&f.Store, "store", "", "directory of JetStream's file storage (required)")
	fl.StringVar(&f.Name, "name", "", "the server's name, distinct in a cluster (default: generated)")
	fl.StringVar(&f.Cluster, "cluster", "", "the cluster's name, the same on every node (none: a single server)")
	fl.StringVar(&f.ClusterListen, "cluster-listen", "127.0.0.1:6222", "with --cluster: host:port of the route listener")
	fl.StringSliceVar(&f.Routes, "routes", nil, "with --cluster: every node's route URL, nats-route://HOST:PORT, comma-separated (this node's own is ignored)")
	fl.BoolVar(&f.SyncAlways, "sync-always", false, "fsync every write before acknowledging it (an acknowledged ledger entry is then on the disks of a majority; without it, in their memory, synced every two minutes)")
	fl.StringVar(&f.Domain, "domain", "", "JetStream domain (none by default)")
	fl.IntVar(&f.MaxPayload, "max-payload", 0, "the largest message the node accepts, in bytes (0: nats-server's 1 MiB; at most 64 MiB, the same on every node): a cluster's serving replicas publish each session's update in one message (8 bytes per policy parameter), so a larger network needs more")
	fl.IntVar(&f.Partitions, "partitions", service.DefaultPartitions, "map the session subjects onto this many partitions, which the serving replicas (dprl agent --role serve --partitions, the same number) share: every node of a cluster needs the same; 0 maps nothing")
	fl.StringVar(&f.Prefix, "prefix", stream.DefaultPrefix, "the subject prefix of the partitioned session subjects (the agents' --prefix)")
	fl.StringVar(&f.Auth, "auth", "", "JSON file naming the identities of each role (learners, replicas, clients, operators): every connection must authenticate, and each gets only its role's subjects (only learners read the clipped per-session updates)")
	fl.StringVar(&f.TLSCert, "tls-cert", "", "certificate file (PEM) of the client listener: clients must use TLS")
	fl.StringVar(&f.TLSKey, "tls-key", "", "key file (PEM) of --tls-cert")
	fl.StringVar(&f.TLSClientCA, "tls-client-ca", "", "with --tls-cert: CA file (PEM); every client must present a certificate it signed (mutual TLS)")
	fl.StringVar(&f.RoutePasswordFile, "route-password-file", "", "with --cluster: a file holding the password every route must present (the same on every node); without it anyone who reaches the route listener can join the cluster")
	fl.StringVar(&f.RouteTLSCert, "route-tls-cert", "", "with --cluster: this node's certificate (PEM, for server and client authentication) for mutual TLS on the routes; every node needs one")
	fl.StringVar(&f.RouteTLSKey, "route-tls-key", "", "key file (PEM) of --route-tls-cert")
	fl.StringVar(&f.RouteTLSCA, "route-tls-ca", "", "CA file (PEM) that signed every node's --route-tls-cert: a route from a node without one is refused")
	fl.StringVar(&f.EncryptionKey, "encryption-key", "", "file holding the key (at least 32 characters, e.g. 64 hex digits) that encrypts JetStream's file storage at rest; the same key at every start")
	fl.StringVar(&f.Cipher, "cipher", "chacha", "with --encryption-key: chacha (ChaCha20-Poly1305) or aes (AES-GCM)")
	fl.BoolVar(&f.Insecure, "insecure-nats", false, "allow a listener off loopback without its protection: the client listener without --auth and --tls-cert, the route listener without --route-tls-* and --route-password-file; anyone who reaches it could read the cluster's streams, clipped per-session updates included")
	return c
}

func runNATS(cmd *cobra.Command, a *app, fl *cliflags.Flags, f stream.NodeConfig) error {
	o, err := f.Options()
	if err != nil {
		return usageError{fl.Rename(err)}
	}
	o.Logger = a.log
	s, err := stream.StartEmbedded(o)
	if err != nil {
		return err
	}
	defer s.Shutdown()
	ev := a.log.Info().Str("url", s.ClientURL()).Str("store", f.Store).Bool("sync_always", f.SyncAlways).Int("partitions", f.Partitions).
		Bool("auth", f.Auth != "").Bool("tls", f.TLSCert != "").Bool("encrypted", f.EncryptionKey != "")
	if f.Cluster != "" {
		ev = ev.Str("cluster", f.Cluster).Str("routes", fmt.Sprint(f.Routes))
	}
	ev.Msg("nats: serving with JetStream; stop with SIGINT or SIGTERM")
	<-cmd.Context().Done()
	return nil
}
