package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

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
	maxPayload                                          int32
	prefix                                              string
	auth, tlsCert, tlsKey, tlsClientCA                  string
	routePasswordFile, encryptionKey, cipher            string
	routeTLSCert, routeTLSKey, routeTLSCA               string
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
	fl.Int32Var(&f.maxPayload, "max-payload", 0, "the largest message the node accepts, in bytes (0: nats-server's 1 MiB; at most 64 MiB, the same on every node): a cluster's serving replicas publish each session's update in one message (8 bytes per policy parameter), so a larger network needs more")
	fl.IntVar(&f.partitions, "partitions", service.DefaultPartitions, "map the session subjects onto this many partitions, which the serving replicas (dprl agent --role serve --partitions, the same number) share: every node of a cluster needs the same; 0 maps nothing")
	fl.StringVar(&f.prefix, "prefix", stream.DefaultPrefix, "the subject prefix of the partitioned session subjects (the agents' --prefix)")
	fl.StringVar(&f.auth, "auth", "", "JSON file naming the identities of each role (learners, replicas, clients, operators): every connection must authenticate, and each gets only its role's subjects (only learners read the clipped per-session updates)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "certificate file (PEM) of the client listener: clients must use TLS")
	fl.StringVar(&f.tlsKey, "tls-key", "", "key file (PEM) of --tls-cert")
	fl.StringVar(&f.tlsClientCA, "tls-client-ca", "", "with --tls-cert: CA file (PEM); every client must present a certificate it signed (mutual TLS)")
	fl.StringVar(&f.routePasswordFile, "route-password-file", "", "with --cluster: a file holding the password every route must present (the same on every node); without it anyone who reaches the route listener can join the cluster")
	fl.StringVar(&f.routeTLSCert, "route-tls-cert", "", "with --cluster: this node's certificate (PEM, for server and client authentication) for mutual TLS on the routes; every node needs one")
	fl.StringVar(&f.routeTLSKey, "route-tls-key", "", "key file (PEM) of --route-tls-cert")
	fl.StringVar(&f.routeTLSCA, "route-tls-ca", "", "CA file (PEM) that signed every node's --route-tls-cert: a route from a node without one is refused")
	fl.StringVar(&f.encryptionKey, "encryption-key", "", "file holding the key (at least 32 characters, e.g. 64 hex digits) that encrypts JetStream's file storage at rest; the same key at every start")
	fl.StringVar(&f.cipher, "cipher", "chacha", "with --encryption-key: chacha (ChaCha20-Poly1305) or aes (AES-GCM)")
	fl.BoolVar(&f.insecure, "insecure-nats", false, "allow a listener off loopback without its protection: the client listener without --auth and --tls-cert, the route listener without --route-tls-* and --route-password-file; anyone who reaches it could read the cluster's streams, clipped per-session updates included")
	return c
}

// readSecret returns the content of file without its trailing line break,
// refusing one shorter than min characters.
func readSecret(flag, file string, min int) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usagef("--%s: %v", flag, err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if len(s) < min {
		return "", usagef("--%s %s: %d characters, want at least %d", flag, file, len(s), min)
	}
	return s, nil
}

// natsSecurity sets the server's accounts (--auth), TLS, route
// credentials and TLS, and encryption at rest in o, and reports whether
// the client listener (accounts and TLS) and the route listener (route
// credentials and TLS) are protected enough to leave loopback.
func natsSecurity(f natsFlags, o *stream.EmbeddedOptions) (clients, routes bool, err error) {
	if f.auth != "" {
		a, err := stream.LoadClusterAuth(f.auth)
		if err != nil {
			return false, false, usagef("--auth: %v", err)
		}
		if o.Nkeys, o.Users, err = stream.ClusterAccounts(a); err != nil {
			return false, false, usagef("--auth: %v", err)
		}
	}
	if (f.tlsCert == "") != (f.tlsKey == "") || f.tlsClientCA != "" && f.tlsCert == "" {
		return false, false, usagef("--tls-cert and --tls-key go together; --tls-client-ca needs them")
	}
	if f.tlsCert != "" {
		cfg, err := stream.ServerTLS(f.tlsCert, f.tlsKey, f.tlsClientCA)
		if err != nil {
			return false, false, usagef("--tls-cert: %v", err)
		}
		o.TLSConfig = cfg
	}
	if (f.routePasswordFile != "" || f.routeTLSCert != "" || f.routeTLSKey != "" || f.routeTLSCA != "") && o.Cluster == nil {
		return false, false, usagef("--route-password-file and --route-tls-* need --cluster")
	}
	if f.routePasswordFile != "" {
		pw, err := readSecret("route-password-file", f.routePasswordFile, 16)
		if err != nil {
			return false, false, err
		}
		o.Cluster.User, o.Cluster.Password = "dprl-route", pw
	}
	if f.routeTLSCert != "" || f.routeTLSKey != "" || f.routeTLSCA != "" {
		if f.routeTLSCert == "" || f.routeTLSKey == "" || f.routeTLSCA == "" {
			return false, false, usagef("--route-tls-cert, --route-tls-key and --route-tls-ca go together")
		}
		if o.Cluster.TLSConfig, err = stream.RouteTLS(f.routeTLSCert, f.routeTLSKey, f.routeTLSCA); err != nil {
			return false, false, usagef("--route-tls-cert: %v", err)
		}
	}
	if f.encryptionKey != "" {
		key, err := readSecret("encryption-key", f.encryptionKey, 32)
		if err != nil {
			return false, false, err
		}
		if f.cipher != "chacha" && f.cipher != "aes" {
			return false, false, usagef("--cipher %q: want chacha or aes", f.cipher)
		}
		o.JetStream.EncryptionKey, o.JetStream.Cipher = key, f.cipher
	}
	return f.auth != "" && f.tlsCert != "", f.routePasswordFile != "" && f.routeTLSCert != "", nil
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
	if f.maxPayload < 0 || f.maxPayload > 64<<20 {
		return usagef("--max-payload %d: want 0 (nats-server's 1 MiB) to 64 MiB", f.maxPayload)
	}
	o := stream.EmbeddedOptions{ServerName: f.name, Logger: a.log, MaxPayload: f.maxPayload, JetStream: &stream.JetStreamOptions{StoreDir: f.store, SyncAlways: f.syncAlways, Domain: f.domain},
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
		o.Cluster = c
	} else if len(f.routes) > 0 {
		return usagef("--routes needs --cluster")
	}
	clients, routes, err := natsSecurity(f, &o)
	if err != nil {
		return err
	}
	switch {
	case off && !clients && !f.insecure:
		return usagef("--listen off loopback needs --auth and --tls-cert/--tls-key (or --insecure-nats): anyone who reaches it could read the cluster's streams, clipped per-session updates included")
	case offCluster && !routes && !f.insecure:
		return usagef("--cluster-listen off loopback needs --route-tls-* and --route-password-file (or --insecure-nats): routes carry every message, clipped per-session updates included")
	}
	s, err := stream.StartEmbedded(o)
	if err != nil {
		return err
	}
	defer s.Shutdown()
	ev := a.log.Info().Str("url", s.ClientURL()).Str("store", f.store).Bool("sync_always", f.syncAlways).Int("partitions", f.partitions).
		Bool("auth", f.auth != "").Bool("tls", f.tlsCert != "").Bool("encrypted", f.encryptionKey != "")
	if f.cluster != "" {
		ev = ev.Str("cluster", f.cluster).Str("routes", fmt.Sprint(f.routes))
	}
	ev.Msg("nats: serving with JetStream; stop with SIGINT or SIGTERM")
	<-cmd.Context().Done()
	return nil
}
