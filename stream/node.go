package stream

import (
	"net"
	"os"
	"strconv"
	"strings"

	"dprl/internal/fielderr"
)

// NodeConfig is a NATS server with JetStream as an operator gives it: the
// settings of dprl nats, whose flags are named beside each field. Options
// checks them and builds the server's EmbeddedOptions; its errors name the
// fields at fault (*fielderr.Error, NodeFields), which the command renders
// as its flags.
type NodeConfig struct {
	// Listen is the client listener's HOST:PORT (listen).
	Listen string `flag:"listen" default:"127.0.0.1:4222" usage:"host:port of the client listener"`
	// Store is JetStream's file storage directory (store; required).
	Store string `flag:"store" usage:"directory of JetStream's file storage (required)"`
	// Name is the server's name, distinct in a cluster (name; "":
	// generated).
	Name string `flag:"name" usage:"the server's name, distinct in a cluster (default: generated)"`
	// Cluster is the cluster's name (cluster; "": a single server), with
	// its route listener ClusterListen (cluster-listen) and the members'
	// route URLs Routes (routes).
	Cluster       string   `flag:"cluster" usage:"the cluster's name, the same on every node (none: a single server)"`
	ClusterListen string   `flag:"cluster-listen" default:"127.0.0.1:6222" usage:"with --cluster: host:port of the route listener"`
	Routes        []string `flag:"routes" usage:"with --cluster: every node's route URL, nats-route://HOST:PORT, comma-separated (this node's own is ignored)"`
	// SyncAlways and Domain are JetStreamOptions' (sync-always, domain).
	SyncAlways bool   `flag:"sync-always" usage:"fsync every write before acknowledging it (an acknowledged ledger entry is then on the disks of a majority; without it, in their memory, synced every two minutes)"`
	Domain     string `flag:"domain" usage:"JetStream domain (none by default)"`
	// MaxPayload is the largest message the server accepts, 0 (nats-server's
	// 1 MiB) to 64 MiB (max-payload): a cluster's replicas publish each
	// session's update in one message.
	MaxPayload int `flag:"max-payload" usage:"the largest message the node accepts, in bytes (0: nats-server's 1 MiB; at most 64 MiB, the same on every node): a cluster's serving replicas publish each session's update in one message (8 bytes per policy parameter), so a larger network needs more"`
	// Partitions maps the session subjects under Prefix onto this many
	// partitions, 0 to MaxPartitions (partitions, prefix; 0 maps nothing).
	Partitions int    `flag:"partitions" usage:"map the session subjects onto this many partitions, which the serving replicas (dprl agent --role serve --partitions, the same number) share: every node of a cluster needs the same; 0 maps nothing"`
	Prefix     string `flag:"prefix" usage:"the subject prefix of the partitioned session subjects (the agents' --prefix)"`
	// Auth is the ClusterAuth file of the roles' identities (auth).
	Auth string `flag:"auth" usage:"JSON file naming the identities of each role (learners, replicas, clients, operators): every connection must authenticate, and each gets only its role's subjects (only learners read the clipped per-session updates)"`
	// TLSCert and TLSKey are the client listener's certificate and key,
	// given together; TLSClientCA, with them, makes TLS mutual (tls-cert,
	// tls-key, tls-client-ca).
	TLSCert     string `flag:"tls-cert" usage:"certificate file (PEM) of the client listener: clients must use TLS"`
	TLSKey      string `flag:"tls-key" usage:"key file (PEM) of --tls-cert"`
	TLSClientCA string `flag:"tls-client-ca" usage:"with --tls-cert: CA file (PEM); every client must present a certificate it signed (mutual TLS)"`
	// RoutePasswordFile holds the routes' password, at least 16
	// characters (route-password-file); RouteTLSCert, RouteTLSKey and
	// RouteTLSCA, given together, make the routes mutual TLS
	// (route-tls-cert, route-tls-key, route-tls-ca). Both need Cluster.
	RoutePasswordFile string `flag:"route-password-file" usage:"with --cluster: a file holding the password every route must present (the same on every node); without it anyone who reaches the route listener can join the cluster"`
	RouteTLSCert      string `flag:"route-tls-cert" usage:"with --cluster: this node's certificate (PEM, for server and client authentication) for mutual TLS on the routes; every node needs one"`
	RouteTLSKey       string `flag:"route-tls-key" usage:"key file (PEM) of --route-tls-cert"`
	RouteTLSCA        string `flag:"route-tls-ca" usage:"CA file (PEM) that signed every node's --route-tls-cert: a route from a node without one is refused"`
	// EncryptionKey is a file holding the storage's encryption key, at
	// least 32 characters, with Cipher "chacha" or "aes"
	// (encryption-key, cipher).
	EncryptionKey string `flag:"encryption-key" usage:"file holding the key (at least 32 characters, e.g. 64 hex digits) that encrypts JetStream's file storage at rest; the same key at every start"`
	Cipher        string `flag:"cipher" default:"chacha" usage:"with --encryption-key: chacha (ChaCha20-Poly1305) or aes (AES-GCM)"`
	// Insecure allows a listener off loopback without its protection
	// (insecure-nats): the client listener without Auth and TLSCert, the
	// route listener without route TLS and RoutePasswordFile.
	Insecure bool `flag:"insecure-nats" usage:"allow a listener off loopback without its protection: the client listener without --auth and --tls-cert, the route listener without --route-tls-* and --route-password-file; anyone who reaches it could read the cluster's streams, clipped per-session updates included"`
}

// NodeFields are the fields the errors of NodeConfig may name.
var NodeFields = fielderr.Fields{"Listen", "Store", "MaxPayload", "Cluster", "ClusterListen", "Routes", "Partitions", "Auth", "TLSCert", "TLSKey",
	"TLSClientCA", "RoutePasswordFile", "RouteTLSCert", "RouteTLSKey", "RouteTLSCA", "EncryptionKey", "Cipher", "Insecure"}

// Options checks c and returns the options of its server (no Logger). It
// reads the auth, TLS, route password and encryption key files; a file
// that cannot be read or does not parse is an error naming its field, as
// is a listener off loopback without its protection (unless Insecure).
func (c NodeConfig) Options() (EmbeddedOptions, error) {
	var o EmbeddedOptions
	if c.Store == "" {
		return o, NodeFields.Errorf("{Store}: give JetStream's storage directory")
	}
	if c.Partitions < 0 || c.Partitions > MaxPartitions {
		return o, NodeFields.Errorf("{Partitions} %d: want 0 to %d", c.Partitions, MaxPartitions)
	}
	if c.MaxPayload < 0 || c.MaxPayload > 64<<20 {
		return o, NodeFields.Errorf("{MaxPayload} %d: want 0 (nats-server's 1 MiB) to 64 MiB", c.MaxPayload)
	}
	o = EmbeddedOptions{ServerName: c.Name, MaxPayload: int32(c.MaxPayload), JetStream: &JetStreamOptions{StoreDir: c.Store, SyncAlways: c.SyncAlways, Domain: c.Domain},
		Partitions: c.Partitions, PartitionPrefix: c.Prefix}
	var off, offCluster bool
	var err error
	if o.Host, o.Port, off, err = listenAt("Listen", c.Listen); err != nil {
		return o, err
	}
	if c.Cluster != "" {
		cl := &ClusterOptions{Name: c.Cluster, Routes: c.Routes}
		if cl.Host, cl.Port, offCluster, err = listenAt("ClusterListen", c.ClusterListen); err != nil {
			return o, err
		}
		o.Cluster = cl
	} else if len(c.Routes) > 0 {
		return o, NodeFields.Errorf("{Routes} needs {Cluster}")
	}
	clients, routes, err := c.security(&o)
	if err != nil {
		return o, err
	}
	switch {
	case off && !clients && !c.Insecure:
		return o, NodeFields.Errorf("{Listen} off loopback needs {Auth} and {TLSCert}/{TLSKey} (or {Insecure}): anyone who reaches it could read the cluster's streams, clipped per-session updates included")
	case offCluster && !routes && !c.Insecure:
		return o, NodeFields.Errorf("{ClusterListen} off loopback needs --route-tls-* and {RoutePasswordFile} (or {Insecure}): routes carry every message, clipped per-session updates included")
	}
	return o, nil
}

// security sets the server's accounts (Auth), TLS, route credentials and
// TLS, and encryption at rest in o, and reports whether the client
// listener (accounts and TLS) and the route listener (route credentials
// and TLS) are protected enough to leave loopback.
func (c NodeConfig) security(o *EmbeddedOptions) (clients, routes bool, err error) {
	if c.Auth != "" {
		a, err := LoadClusterAuth(c.Auth)
		if err != nil {
			return false, false, NodeFields.Errorf("{Auth}: %v", err)
		}
		if o.Nkeys, o.Users, err = ClusterAccounts(a); err != nil {
			return false, false, NodeFields.Errorf("{Auth}: %v", err)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") || c.TLSClientCA != "" && c.TLSCert == "" {
		return false, false, NodeFields.Errorf("{TLSCert} and {TLSKey} go together; {TLSClientCA} needs them")
	}
	if c.TLSCert != "" {
		cfg, err := ServerTLS(c.TLSCert, c.TLSKey, c.TLSClientCA)
		if err != nil {
			return false, false, NodeFields.Errorf("{TLSCert}: %v", err)
		}
		o.TLSConfig = cfg
	}
	routeTLS := c.RouteTLSCert != "" || c.RouteTLSKey != "" || c.RouteTLSCA != ""
	if (c.RoutePasswordFile != "" || routeTLS) && o.Cluster == nil {
		return false, false, NodeFields.Errorf("{RoutePasswordFile} and --route-tls-* need {Cluster}")
	}
	if c.RoutePasswordFile != "" {
		pw, err := readSecret("RoutePasswordFile", c.RoutePasswordFile, 16)
		if err != nil {
			return false, false, err
		}
		o.Cluster.User, o.Cluster.Password = "dprl-route", pw
	}
	if routeTLS {
		if c.RouteTLSCert == "" || c.RouteTLSKey == "" || c.RouteTLSCA == "" {
			return false, false, NodeFields.Errorf("{RouteTLSCert}, {RouteTLSKey} and {RouteTLSCA} go together")
		}
		if o.Cluster.TLSConfig, err = RouteTLS(c.RouteTLSCert, c.RouteTLSKey, c.RouteTLSCA); err != nil {
			return false, false, NodeFields.Errorf("{RouteTLSCert}: %v", err)
		}
	}
	if c.EncryptionKey != "" {
		key, err := readSecret("EncryptionKey", c.EncryptionKey, 32)
		if err != nil {
			return false, false, err
		}
		if c.Cipher != "chacha" && c.Cipher != "aes" {
			return false, false, NodeFields.Errorf("{Cipher} %q: want chacha or aes", c.Cipher)
		}
		o.JetStream.EncryptionKey, o.JetStream.Cipher = key, c.Cipher
	}
	return c.Auth != "" && c.TLSCert != "", c.RoutePasswordFile != "" && c.RouteTLSCert != "", nil
}

// readSecret returns the content of file (the setting field) without its
// trailing line break, refusing one shorter than min characters.
func readSecret(field, file string, min int) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", NodeFields.Errorf("{%s}: %v", field, err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if len(s) < min {
		return "", NodeFields.Errorf("{%s} %s: %d characters, want at least %d", field, file, len(s), min)
	}
	return s, nil
}

// listenAt parses the HOST:PORT addr of field (CheckListenAddr) and
// reports whether it is off loopback.
func listenAt(field, addr string) (host string, port int, off bool, err error) {
	if err := CheckListenAddr(addr); err != nil {
		return "", 0, false, NodeFields.Errorf("{%s} %v", field, err)
	}
	host, ps, _ := net.SplitHostPort(addr)
	port, _ = strconv.Atoi(ps)
	return host, port, !IsLoopbackHost(host), nil
}
