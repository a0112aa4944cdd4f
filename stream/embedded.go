package stream

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// EmbeddedOptions describe an embedded nats-server.
type EmbeddedOptions struct {
	// Host is the listen address. The default is "127.0.0.1" (loopback).
	Host string
	// Port is the client port: -1 picks a random free port (tests),
	// 0 means the NATS default 4222.
	Port int
	// DontListen serves in-process connections only (see WithInProcess).
	DontListen bool
	// MaxPayload is the largest message the server accepts, in bytes.
	// The default (0) is the nats-server default, 1 MiB.
	MaxPayload int32
	// ReadyTimeout bounds the wait for the server to accept connections.
	// The default is 5s.
	ReadyTimeout time.Duration
	// Logger receives the server's log through an adapter. The zero value
	// logs nothing.
	Logger zerolog.Logger
	// Debug and Trace switch on the server's debug and protocol trace logs.
	Debug, Trace bool

	// TLSConfig, when not nil, makes every TCP client use TLS with this
	// configuration (the server's certificate; with ClientAuth set to
	// tls.RequireAndVerifyClientCert and ClientCAs, mutual TLS: a client
	// without a certificate from those CAs is refused). ServerTLS builds one
	// from files. In-process connections (WithInProcess) skip TLS: they never
	// leave the process.
	TLSConfig *tls.Config
	// Nkeys and Users are the accounts of the server, exactly as
	// nats-server's nkey users and user/password users (a password starting
	// with "$2a$" is a bcrypt hash), each with its own subject permissions.
	// When either is non-empty every connection must authenticate, the
	// in-process ones included; when both are empty the server is open.
	// Accounts builds them for protocol v1 (AgentPermissions,
	// ClientPermissions).
	Nkeys []*server.NkeyUser
	Users []*server.User
	// AuthTimeout is how long a new connection may take to authenticate
	// before it is closed; 0 is nats-server's default (2s, more with TLS).
	AuthTimeout time.Duration
	// MaxConn caps the connections the server holds, the in-process ones
	// included; a connection beyond it is accepted, told "maximum
	// connections exceeded" and closed at once, so it holds no file
	// descriptor. 0 is nats-server's default (65536).
	MaxConn int
	// MaxSubs caps the subscriptions of one connection; 0: no cap.
	MaxSubs int

	// ServerName names the server (a cluster needs distinct names); ""
	// lets nats-server generate one.
	ServerName string
	// JetStream, when not nil, enables JetStream on the server.
	JetStream *JetStreamOptions
	// Cluster, when not nil, makes the server a member of a cluster.
	Cluster *ClusterOptions
	// Partitions, when > 0, maps protocol v1's session subjects under
	// PartitionPrefix ("": DefaultPrefix) onto that many partitions
	// (PartitionMappings), for a cluster's serving replicas. Every server
	// of a cluster needs the same.
	Partitions      int
	PartitionPrefix string
}

// JetStreamOptions enable JetStream on an embedded server.
type JetStreamOptions struct {
	// StoreDir holds the file storage (required).
	StoreDir string
	// SyncAlways fsyncs every write before the server acknowledges it.
	// Without it nats-server syncs every two minutes, and an
	// acknowledged message is in the memory of a majority of the
	// replicas, not on their disks.
	SyncAlways bool
	// Domain is the JetStream domain ("" for none).
	Domain string
	// EncryptionKey, when not "", encrypts the file storage at rest
	// (nats-server's JetStream encryption: each stream's files, its
	// messages and metadata, under keys derived from this one) with
	// Cipher. Memory storage never reaches the disk. The key must stay the
	// same across restarts, or the streams cannot be read.
	EncryptionKey string
	// Cipher is "chacha" (ChaCha20-Poly1305, the default when "") or
	// "aes" (AES-GCM).
	Cipher string
}

// ClusterOptions make an embedded server a member of a cluster: it
// listens for routes on Host:Port and connects to Routes (the others'
// route URLs, e.g. "nats-route://127.0.0.1:6222"; the members gossip the
// rest).
type ClusterOptions struct {
	// Name is the cluster's name, the same on every member.
	Name string
	// Host and Port are the route listener; Port -1 picks a free port
	// (ClusterAddr on the started server tells which).
	Host string
	Port int
	// Routes are other members' route URLs.
	Routes []string
	// User and Password, when given, are the credentials every route must
	// present (the same on every member): without them anyone who reaches
	// the route listener can join the cluster and read every message.
	// They are added to Routes' URLs.
	User, Password string
	// TLSConfig, when not nil, encrypts every route with mutual TLS: each
	// member presents its certificate and verifies its peer's (RouteTLS
	// builds one from files). Every member needs it.
	TLSConfig *tls.Config
}

// StartEmbedded starts nats-server in-process with signal handling off
// (NoSigs) and waits until it accepts connections. The caller owns the server
// and stops it with Shutdown (nil-safe, idempotent), typically after draining
// its own connections.
func StartEmbedded(opts EmbeddedOptions) (*server.Server, error) {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 5 * time.Second
	}
	if opts.MaxPayload < 0 || opts.MaxConn < 0 || opts.MaxSubs < 0 || opts.AuthTimeout < 0 {
		return nil, fmt.Errorf("stream: embedded: MaxPayload %d, MaxConn %d, MaxSubs %d, AuthTimeout %v: want >= 0",
			opts.MaxPayload, opts.MaxConn, opts.MaxSubs, opts.AuthTimeout)
	}
	so := &server.Options{
		Host:        opts.Host,
		Port:        opts.Port,
		DontListen:  opts.DontListen,
		MaxPayload:  opts.MaxPayload,
		NoSigs:      true,
		Debug:       opts.Debug,
		Trace:       opts.Trace,
		Nkeys:       opts.Nkeys,
		Users:       opts.Users,
		AuthTimeout: opts.AuthTimeout.Seconds(),
		MaxConn:     opts.MaxConn,
		MaxSubs:     opts.MaxSubs,
		// The embedded server has no monitoring endpoint to show closed
		// connections: keep few records of them (nats-server keeps
		// 10,000, which a connection flood fills).
		MaxClosedClients: 64,
	}
	if err := clusterOptions(so, opts); err != nil {
		return nil, err
	}
	if opts.TLSConfig != nil {
		so.TLSConfig = opts.TLSConfig
		so.TLS = true
		so.TLSVerify = opts.TLSConfig.ClientAuth == tls.RequireAndVerifyClientCert
	}
	s, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("stream: embedded: %w", err)
	}
	if opts.Partitions < 0 || opts.Partitions > MaxPartitions {
		return nil, fmt.Errorf("stream: embedded: %d partitions, want 0 to %d", opts.Partitions, MaxPartitions)
	}
	if opts.Partitions > 0 {
		for src, dest := range PartitionMappings(opts.PartitionPrefix, opts.Partitions) {
			if err := s.GlobalAccount().AddMapping(src, dest); err != nil {
				return nil, fmt.Errorf("stream: embedded: mapping %s: %w", src, err)
			}
		}
	}
	fatal := make(chan fatalError, 1)
	starting := new(atomic.Bool)
	starting.Store(true)
	log := natsLogger{opts.Logger.With().Str("component", "nats-server").Logger(), fatal, starting}
	s.SetLoggerV2(log, opts.Debug, opts.Trace, false)
	go s.Start()
	// nats-server reports a listener it cannot open only in its log (and
	// ReadyForConnections waits out its whole timeout): poll, and return
	// the first fatal error it logs as soon as it does.
	for deadline := time.Now().Add(opts.ReadyTimeout); !s.ReadyForConnections(50 * time.Millisecond); {
		select {
		case f := <-fatal:
			s.Shutdown()
			var op *net.OpError
			if errors.As(f.err, &op) && op.Op == "listen" {
				port := cmp.Or(opts.Port, server.DEFAULT_PORT)
				return nil, &ListenError{Addr: net.JoinHostPort(opts.Host, strconv.Itoa(port)), Err: f.err}
			}
			return nil, fmt.Errorf("stream: embedded: %s", f.msg)
		default:
		}
		if time.Now().After(deadline) {
			s.Shutdown()
			return nil, errors.New("stream: embedded: server not ready after " + opts.ReadyTimeout.String())
		}
	}
	// Ready: a fatal error from now on is logged, and one sent while the
	// server became ready is logged now.
	starting.Store(false)
	select {
	case f := <-fatal:
		log.l.Error().Bool("fatal", true).Msg(f.msg)
	default:
	}
	return s, nil
}

// clusterOptions sets the server name, JetStream and cluster options.
func clusterOptions(so *server.Options, opts EmbeddedOptions) error {
	so.ServerName = opts.ServerName
	if js := opts.JetStream; js != nil {
		if js.StoreDir == "" {
			return errors.New("stream: embedded: JetStream needs a store directory")
		}
		so.JetStream, so.StoreDir, so.SyncAlways, so.JetStreamDomain = true, js.StoreDir, js.SyncAlways, js.Domain
		switch js.Cipher {
		case "", "chacha":
			so.JetStreamCipher = server.ChaCha
		case "aes":
			so.JetStreamCipher = server.AES
		default:
			return fmt.Errorf("stream: embedded: cipher %q: want chacha or aes", js.Cipher)
		}
		so.JetStreamKey = js.EncryptionKey
	}
	if c := opts.Cluster; c != nil {
		if c.Name == "" {
			return errors.New("stream: embedded: a cluster needs a name")
		}
		so.Cluster.Name, so.Cluster.Host, so.Cluster.Port = c.Name, cmp.Or(c.Host, "127.0.0.1"), c.Port
		if (c.User == "") != (c.Password == "") {
			return errors.New("stream: embedded: cluster route credentials need a user and a password")
		}
		so.Cluster.Username, so.Cluster.Password = c.User, c.Password
		so.Cluster.TLSConfig = c.TLSConfig
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Scheme != "nats-route" || u.Port() == "" {
				return fmt.Errorf("stream: embedded: cluster route %q: want nats-route://host:port", r)
			}
			if c.User != "" && u.User == nil {
				u.User = url.UserPassword(c.User, c.Password)
			}
			so.Routes = append(so.Routes, u)
		}
	}
	return nil
}

// ListenError is StartEmbedded's error when the server cannot listen on
// its address: the port is taken, the host is not an address of this
// machine, or binding it is not permitted. Err is the cause (errors.Is
// finds syscall.EADDRINUSE for a taken port).
type ListenError struct {
	Addr string // host:port
	Err  error
}

// Error reads "embedded NATS cannot listen on ADDR: CAUSE", the cause
// being the system's reason (e.g. "address already in use").
func (e *ListenError) Error() string {
	cause := e.Err.Error()
	if errno := syscall.Errno(0); errors.As(e.Err, &errno) {
		cause = errno.Error()
	}
	return "embedded NATS cannot listen on " + e.Addr + ": " + cause
}

// Unwrap returns the cause.
func (e *ListenError) Unwrap() error { return e.Err }

// fatalError is a fatal error nats-server logged: its message and the
// first error among its arguments.
type fatalError struct {
	msg string
	err error
}

// natsLogger adapts zerolog to server.Logger. The server's start banner and
// its shutdown notices, printed on every start and stop, are logged at debug
// level (the agent logs its own start and stop); its other notices (slow
// consumers, connections closed for a reason, subscriptions refused) at
// info, warnings and errors as such. Fatalf, while the server starts
// (starting), is sent to fatal and not logged: StartEmbedded returns it as
// its error, which its caller reports (a taken port is one line, not the
// server's line and then the caller's); later, or when fatal is full, it
// is logged at error level. The library never exits the process.
type natsLogger struct {
	l        zerolog.Logger
	fatal    chan<- fatalError
	starting *atomic.Bool
}

// lifecycleNotices are the formats, or their beginnings, of nats-server's
// start banner and shutdown notices (server.Start, Shutdown); the
// banner's indented lines (version, name, id, ...) all begin with two
// spaces.
var lifecycleNotices = []string{"  ", "Starting nats-server", "Server is ready", "Listening for client connections on ",
	"TLS available for client connections", "TLS required for client connections", "Initiating Shutdown", "Server Exiting"}

func (n natsLogger) Noticef(format string, v ...any) {
	for _, p := range lifecycleNotices {
		if strings.HasPrefix(format, p) {
			n.l.Debug().Msgf(format, v...)
			return
		}
	}
	n.l.Info().Msgf(format, v...)
}
func (n natsLogger) Warnf(format string, v ...any) { n.l.Warn().Msgf(format, v...) }
func (n natsLogger) Fatalf(format string, v ...any) {
	f := fatalError{msg: fmt.Sprintf(format, v...)}
	for _, a := range v {
		if err, ok := a.(error); ok && f.err == nil {
			f.err = err
		}
	}
	if n.starting.Load() {
		select {
		case n.fatal <- f:
			return // StartEmbedded returns it
		default:
		}
	}
	n.l.Error().Bool("fatal", true).Msg(f.msg)
}
func (n natsLogger) Errorf(format string, v ...any) { n.l.Error().Msgf(format, v...) }
func (n natsLogger) Debugf(format string, v ...any) { n.l.Debug().Msgf(format, v...) }
func (n natsLogger) Tracef(format string, v ...any) { n.l.Trace().Msgf(format, v...) }

// StartCluster starts n embedded servers with JetStream (file storage
// under dir/<name>) in one cluster named name on loopback, each routing
// to every other from the start (JetStream's meta group needs its routes
// configured), and returns them; n = 1 is one plain JetStream server. base sets everything else (client port
// -1 picks free ports). On error the servers already started are shut
// down.
func StartCluster(name string, n int, dir string, base EmbeddedOptions) ([]*server.Server, error) {
	if n < 1 {
		return nil, fmt.Errorf("stream: cluster of %d servers", n)
	}
	// Reserve the route ports: every member needs all of them at start.
	ports := make([]int, n)
	var routes []string
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("stream: cluster: reserve a route port: %w", err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i]))
	}
	var servers []*server.Server
	for i := range n {
		o := base
		o.ServerName = fmt.Sprintf("%s-%d", name, i)
		js := JetStreamOptions{StoreDir: filepath.Join(dir, o.ServerName)}
		if base.JetStream != nil {
			js.SyncAlways, js.Domain, js.EncryptionKey, js.Cipher = base.JetStream.SyncAlways, base.JetStream.Domain, base.JetStream.EncryptionKey, base.JetStream.Cipher
		}
		o.JetStream = &js
		if n > 1 { // a one-server "cluster" is a plain server: a lone member waits for peers
			o.Cluster = &ClusterOptions{Name: name, Port: ports[i], Routes: routes}
		}
		s, err := StartEmbedded(o)
		if err != nil {
			for _, s := range servers {
				s.Shutdown()
			}
			return nil, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}
