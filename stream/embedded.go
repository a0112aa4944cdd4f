package stream

import (
	"crypto/tls"
	"errors"
	"fmt"
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
	if opts.TLSConfig != nil {
		so.TLSConfig = opts.TLSConfig
		so.TLS = true
		so.TLSVerify = opts.TLSConfig.ClientAuth == tls.RequireAndVerifyClientCert
	}
	s, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("stream: embedded: %w", err)
	}
	s.SetLoggerV2(natsLogger{opts.Logger.With().Str("component", "nats-server").Logger()}, opts.Debug, opts.Trace, false)
	go s.Start()
	if !s.ReadyForConnections(opts.ReadyTimeout) {
		s.Shutdown()
		return nil, errors.New("stream: embedded: server not ready after " + opts.ReadyTimeout.String())
	}
	return s, nil
}

// natsLogger adapts zerolog to server.Logger. Fatalf is logged at error
// level: the library never exits the process.
type natsLogger struct{ l zerolog.Logger }

func (n natsLogger) Noticef(format string, v ...any) { n.l.Info().Msgf(format, v...) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn().Msgf(format, v...) }
func (n natsLogger) Fatalf(format string, v ...any) {
	n.l.Error().Bool("fatal", true).Msgf(format, v...)
}
func (n natsLogger) Errorf(format string, v ...any) { n.l.Error().Msgf(format, v...) }
func (n natsLogger) Debugf(format string, v ...any) { n.l.Debug().Msgf(format, v...) }
func (n natsLogger) Tracef(format string, v ...any) { n.l.Trace().Msgf(format, v...) }
