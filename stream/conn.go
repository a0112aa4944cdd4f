package stream

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// Option configures Connect.
type Option func(*connOptions) error

type connOptions struct {
	nats     []nats.Option
	maxRecon int
	initial  time.Duration
	maxWait  time.Duration
	name     string
	events   *connEvents
}

// connEvents logs a connection's state changes and reports them.
type connEvents struct {
	log      zerolog.Logger
	onChange func(connected bool)
}

// WithTLS connects with TLS, trusting caFile (may be "" to use the system
// roots) and, when certFile is not "", presenting the client certificate
// certFile/keyFile.
func WithTLS(caFile, certFile, keyFile string) Option {
	return func(o *connOptions) error {
		if (certFile == "") != (keyFile == "") {
			return errors.New("stream: WithTLS: certFile and keyFile go together")
		}
		if caFile != "" {
			o.nats = append(o.nats, nats.RootCAs(caFile))
		}
		if certFile != "" {
			o.nats = append(o.nats, nats.ClientCert(certFile, keyFile))
		}
		if caFile == "" && certFile == "" {
			o.nats = append(o.nats, nats.Secure())
		}
		return nil
	}
}

// WithCredentials authenticates with a NATS credentials (JWT + seed) file.
func WithCredentials(file string) Option {
	return func(o *connOptions) error {
		if file == "" {
			return errors.New("stream: WithCredentials: empty file")
		}
		o.nats = append(o.nats, nats.UserCredentials(file))
		return nil
	}
}

// WithNKey authenticates with the NKey seed in seedFile.
func WithNKey(seedFile string) Option {
	return func(o *connOptions) error {
		opt, err := nats.NkeyOptionFromSeed(seedFile)
		if err != nil {
			return fmt.Errorf("stream: WithNKey: %w", err)
		}
		o.nats = append(o.nats, opt)
		return nil
	}
}

// WithName names the connection (shown in the server's monitoring).
// The default is "dprl".
func WithName(name string) Option {
	return func(o *connOptions) error { o.name = name; return nil }
}

// WithReconnect sets reconnection: up to max attempts (-1: forever, the
// default) with exponential back-off from initial (default 100ms) doubling up
// to maxWait (default 5s), each delay jittered by up to ±25%.
func WithReconnect(max int, initial, maxWait time.Duration) Option {
	return func(o *connOptions) error {
		if initial <= 0 || maxWait < initial {
			return fmt.Errorf("stream: WithReconnect: need 0 < initial (%v) <= maxWait (%v)", initial, maxWait)
		}
		o.maxRecon, o.initial, o.maxWait = max, initial, maxWait
		return nil
	}
}

// WithConnectionEvents logs every change of the connection's state
// (disconnected with the cause, reconnected with the server's URL, closed)
// to log at warn (disconnect, close) or info (reconnect), logs the
// server's asynchronous errors (a permission violation, a slow consumer)
// at warn, and calls
// onChange (if not nil) with the new state; the calls are serialised by
// nats.go's callback goroutine. Readiness checks should still ask the
// connection itself (nats.Conn.IsConnected): the callbacks run after the
// state changed.
func WithConnectionEvents(log zerolog.Logger, onChange func(connected bool)) Option {
	return func(o *connOptions) error {
		o.events = &connEvents{log: log, onChange: onChange}
		return nil
	}
}

// WithInProcess connects to an embedded server without TCP; p is typically
// the *server.Server returned by StartEmbedded. url is then ignored.
func WithInProcess(p nats.InProcessConnProvider) Option {
	return func(o *connOptions) error {
		if p == nil {
			return errors.New("stream: WithInProcess: nil server")
		}
		o.nats = append(o.nats, nats.InProcessServer(p))
		return nil
	}
}

// WithNATSOption passes a raw nats.go option through, for what the options
// above do not cover.
func WithNATSOption(opt nats.Option) Option {
	return func(o *connOptions) error { o.nats = append(o.nats, opt); return nil }
}

// backoff returns the delay before reconnect attempt n (1-based).
func backoff(n int, initial, maxWait time.Duration, u float64) time.Duration {
	d := maxWait
	if n < 1 {
		n = 1
	}
	if n <= 30 {
		if x := initial << (n - 1); x > 0 && x < maxWait {
			d = x
		}
	}
	return time.Duration(float64(d) * (0.75 + 0.5*u))
}

// Connect connects to the NATS server at url (nats.DefaultURL if "").
func Connect(url string, opts ...Option) (*nats.Conn, error) {
	o := connOptions{maxRecon: -1, initial: 100 * time.Millisecond, maxWait: 5 * time.Second, name: "dprl"}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if url == "" {
		url = nats.DefaultURL
	}
	rng, err := NewSecureRand()
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	delay := func(attempts int) time.Duration {
		mu.Lock()
		u := rng.Float64()
		mu.Unlock()
		return backoff(attempts, o.initial, o.maxWait, u)
	}
	nopts := append([]nats.Option{
		nats.Name(o.name),
		nats.MaxReconnects(o.maxRecon),
		nats.CustomReconnectDelay(delay),
	}, o.nats...)
	if ev := o.events; ev != nil {
		change := func(up bool) {
			if ev.onChange != nil {
				ev.onChange(up)
			}
		}
		nopts = append(nopts,
			nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
				if c.IsClosed() || c.IsDraining() {
					// A clean close also disconnects: it reconnects to
					// nothing (ClosedHandler logs the close).
					change(false)
					return
				}
				e := ev.log.Warn()
				if err != nil {
					e = e.Str("cause", err.Error())
				}
				e.Msg("nats: disconnected; reconnecting")
				change(false)
			}),
			nats.ReconnectHandler(func(c *nats.Conn) {
				ev.log.Info().Str("server", c.ConnectedUrlRedacted()).Msg("nats: reconnected")
				change(true)
			}),
			nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
				// A refused publish or subscription (a permission), a slow
				// consumer: nats.go would print it to stderr unformatted.
				e := ev.log.Warn().Str("cause", err.Error())
				if sub != nil {
					e = e.Str("subject", sub.Subject)
				}
				e.Msg("nats: asynchronous error")
			}),
			nats.ClosedHandler(func(c *nats.Conn) {
				if err := c.LastError(); err != nil {
					ev.log.Warn().Str("cause", err.Error()).Msg("nats: connection closed")
				} else {
					ev.log.Info().Msg("nats: connection closed")
				}
				change(false)
			}))
	}
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("stream: connect: %w", err)
	}
	return nc, nil
}
