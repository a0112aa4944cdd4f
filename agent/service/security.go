package service

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"dprl/stream"
)

// DefaultNATSMaxConn is the embedded server's default cap on client
// connections (the agent's own is not counted). Clients are backends that
// multiplex many sessions on one connection, so a thousand is generous; it
// is lowered to fit the process's open-file limit (see NATSSecurity.MaxConn).
const DefaultNATSMaxConn = 1000

// DefaultNATSMaxSubs is the embedded server's default cap on the
// subscriptions of one connection: a client needs two (its reply inbox and
// the policy announcements), the agent one per act worker and one for end.
const DefaultNATSMaxSubs = 256

// fdReserve is the number of file descriptors kept for everything but
// NATS connections: the ledger's files, session logs, the HTTP server.
const fdReserve = 1024

// fitsFDs reports whether maxConn client connections fit the open-file
// limit: each may hold a descriptor; a connection beyond the cap holds one
// while nats-server accepts, refuses and closes it (a goroutine per
// accepted connection: under local floods of 19,500 to 19,990 connections
// against a cap of 1000, 20 to 2,200 more were open at once); and the agent
// keeps fdReserve for its own files. So the cap may take at most half of
// what is left after the reserve. This is a margin, not a bound: the
// descriptors of connections being refused grow with the rate of the flood,
// which only a firewall in front limits.
func fitsFDs(maxConn, limit int) bool { return limit <= 0 || 2*maxConn+fdReserve <= limit }

// NATSSecurity secures the embedded NATS server (ServiceConfig.NATS
// "embedded"; an external server is secured by its own configuration, see
// docs/agent.md, "Securing NATS").
//
// With Clients set, every connection must authenticate and each identity
// gets only its role's subject permissions (stream.Accounts): the agent alone
// subscribes to act and end and publishes policy announcements; a client
// publishes act and end requests and subscribes to its own inbox and the
// announcements; nobody subscribes to ">". Without Clients the server is open:
// any process that reaches it can read every observation and user id, answer
// act requests and forge announcements, so StartService refuses to listen
// anywhere but on loopback (or in-process only) unless Insecure is set.
type NATSSecurity struct {
	// Clients are the identities allowed to use the agent
	// (stream.LoadClients reads them from a file).
	Clients []stream.ClientIdentity
	// AgentKey is the agent's own nkey user key pair. nil: a fresh one for
	// each start, held in memory only — the server and the agent are one
	// process, so nobody else ever needs it.
	AgentKey nkeys.KeyPair
	// TLS, when set, is the server's TLS configuration: every TCP client
	// must use TLS (stream.ServerTLS; with a client CA, mutual TLS).
	TLS *tls.Config
	// MaxConn caps client connections; beyond it a connection is refused
	// at once and its file descriptor closed. The open-file limit must be
	// at least twice the cap plus 1024 (connections being refused hold a
	// descriptor for a moment; the agent's own files). 0:
	// DefaultNATSMaxConn, lowered to fit the limit; a value set explicitly
	// that does not fit is an error.
	MaxConn int
	// MaxSubs caps the subscriptions of one connection. 0: the larger of
	// DefaultNATSMaxSubs and the agent's act workers plus 8.
	MaxSubs int
	// Insecure allows listening on a non-loopback address without Clients
	// or without TLS. The server then says so in its log at warning level.
	Insecure bool
}

// Check reports whether the security settings may serve on listen (the
// embedded server's host:port, "" for in-process only): off loopback they
// need client identities and TLS, unless Insecure.
func (c NATSSecurity) Check(listen string) error {
	if err := c.checkCaps(); err != nil {
		return err
	}
	if listen == "" || c.Insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("agent: nats listen %q: %w", listen, err)
	}
	if stream.IsLoopbackHost(host) {
		return nil
	}
	var missing []string
	if len(c.Clients) == 0 {
		missing = append(missing, "client identities (anyone reaching the port could read every observation and user id, answer act requests and forge policy announcements)")
	}
	if c.TLS == nil {
		missing = append(missing, "TLS (observations and user ids would cross the network in plain text)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("agent: nats: listening on %s (not loopback) without %s", listen, joinAnd(missing))
	}
	return nil
}

func joinAnd(s []string) string {
	if len(s) == 2 {
		return s[0] + " and without " + s[1]
	}
	return s[0]
}

// embedded fills the security options of eo for prefix and returns the
// options of the agent's own in-process connection and a one-line
// description of the server's security for logs and status.
func (c NATSSecurity) embedded(eo *stream.EmbeddedOptions, prefix string, actWorkers int, log zerolog.Logger) ([]stream.Option, string, error) {
	listen := ""
	if !eo.DontListen {
		listen = net.JoinHostPort(eo.Host, strconv.Itoa(eo.Port))
	}
	if err := c.Check(listen); err != nil {
		return nil, "", fmt.Errorf("%w (NATSSecurity.Insecure allows it)", err)
	}
	maxConn, maxSubs, err := c.caps(actWorkers)
	if err != nil {
		return nil, "", err
	}
	eo.MaxConn, eo.MaxSubs, eo.TLSConfig = maxConn+1, maxSubs, c.TLS // +1: the agent's in-process connection
	desc := fmt.Sprintf("max %d client connections, %d subscriptions each", maxConn, maxSubs)
	switch {
	case c.TLS == nil:
		desc += ", no TLS"
	case c.TLS.ClientAuth == tls.RequireAndVerifyClientCert:
		desc += ", mutual TLS"
	default:
		desc += ", TLS"
	}
	if len(c.Clients) == 0 {
		if c.AgentKey != nil {
			return nil, "", errors.New("agent: nats: an agent key without client identities: the server would be open and the key unused")
		}
		where, ev := "loopback only", log.Warn()
		switch {
		case listen == "":
			where = "in-process connections only"
		case !stream.IsLoopbackHost(eo.Host):
			where, ev = "INSECURE: listening on "+eo.Host, log.Error().Bool("insecure", true)
		}
		desc = "open (" + where + "): no authentication, anyone who reaches it reads observations and user ids; " + desc
		ev.Str("nats_security", desc).Msg("embedded NATS server is open (see docs/agent.md, Securing NATS)")
		return nil, desc, nil
	}
	kp := c.AgentKey
	if kp == nil {
		if kp, err = nkeys.CreateUser(); err != nil {
			return nil, "", fmt.Errorf("agent: nats: agent key: %w", err)
		}
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, "", fmt.Errorf("agent: nats: agent key: %w", err)
	}
	if eo.Nkeys, eo.Users, err = stream.Accounts(prefix, pub, c.Clients); err != nil {
		return nil, "", err
	}
	desc = fmt.Sprintf("authenticated: %d client identities with protocol permissions; %s", len(c.Clients), desc)
	if c.TLS == nil && listen != "" && !stream.IsLoopbackHost(eo.Host) {
		log.Error().Bool("insecure", true).Str("nats_security", desc).Msg("embedded NATS server without TLS off loopback: traffic is plain text")
	}
	return []stream.Option{stream.WithNKeyPair(kp)}, desc, nil
}

// checkCaps checks the ranges of MaxConn and MaxSubs.
func (c NATSSecurity) checkCaps() error {
	if c.MaxConn < 0 || c.MaxSubs < 0 || c.MaxConn > maxNATSCap || c.MaxSubs > maxNATSCap {
		return fmt.Errorf("agent: nats: max connections %d, max subscriptions %d: want >= 0 (0: the default) and <= %d", c.MaxConn, c.MaxSubs, maxNATSCap)
	}
	return nil
}

// maxNATSCap bounds MaxConn and MaxSubs: 2^20 connections would need an
// open-file limit above two million.
const maxNATSCap = 1 << 20

// caps returns the embedded server's caps for actWorkers act workers:
// MaxConn (0: DefaultNATSMaxConn, lowered to fit the open-file limit) and
// MaxSubs (0: DefaultNATSMaxSubs, or more for the agent's own
// subscriptions), or why the ones set cannot serve.
func (c NATSSecurity) caps(actWorkers int) (maxConn, maxSubs int, err error) {
	limit, err := fdLimit()
	if err != nil {
		return 0, 0, fmt.Errorf("agent: nats: %w", err)
	}
	return c.capsFor(actWorkers, limit)
}

// minDefaultConn is the smallest cap the default is lowered to: below it
// the agent refuses to start rather than serve a handful of clients.
const minDefaultConn = 16

// capsFor is caps under the open-file limit limit (0: unlimited).
func (c NATSSecurity) capsFor(actWorkers, limit int) (maxConn, maxSubs int, err error) {
	maxConn = c.MaxConn
	switch {
	case maxConn == 0:
		maxConn = DefaultNATSMaxConn
		if !fitsFDs(maxConn, limit) {
			maxConn = (limit - fdReserve) / 2
		}
		if maxConn < minDefaultConn {
			return 0, 0, fmt.Errorf("agent: nats: the open-file limit is %d, below the %d the agent needs for its smallest default cap of %d connections (twice the cap, for connections being refused, plus %d for the agent's files): raise the limit (ulimit -n)",
				limit, 2*minDefaultConn+fdReserve, minDefaultConn, fdReserve)
		}
	case !fitsFDs(maxConn, limit):
		return 0, 0, fmt.Errorf("agent: nats: a cap of %d connections needs an open-file limit of at least %d (twice the cap, for connections being refused, plus %d for the agent's files), the limit is %d: lower the cap or raise the limit",
			maxConn, 2*maxConn+fdReserve, fdReserve, limit)
	}
	need := actWorkers + 8
	maxSubs = c.MaxSubs
	switch {
	case maxSubs == 0:
		maxSubs = max(DefaultNATSMaxSubs, need)
	case maxSubs < need:
		return 0, 0, fmt.Errorf("agent: nats: max subscriptions %d per connection: the agent's own connection needs %d (act workers + 8)", maxSubs, need)
	}
	return maxConn, maxSubs, nil
}

// NATSSecurityMode describes the embedded server's security in one line ("" for
// an external server).
func (s *Service) NATSSecurityMode() string { return s.natsSecurity }
