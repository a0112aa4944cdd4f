package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"dprl/agent"
	"dprl/internal/buildinfo"
	"dprl/ledger"
	"dprl/sessionlog"
	"dprl/stream"
)

// ServiceConfig configures a complete agent service: ledger, agent, NATS
// transport and the ops HTTP server.
type ServiceConfig struct {
	Agent agent.Config
	// DataDir holds the ledger.
	DataDir string
	// InitLedger allows creating a new ledger in a DataDir that exists, is
	// not empty and holds none (ledger.Options.Init).
	InitLedger bool
	// ExpectHead, when set, refuses to start unless the ledger holds this
	// entry: a head the operator recorded outside the data directory
	// (dprl ledger head), the one check that catches an older copy of the
	// whole directory restored.
	ExpectHead *ledger.HeadRef
	// NATS is "embedded" (or empty) to run nats-server in-process, or the
	// URL of an external server.
	NATS string
	// NATSListen is the embedded server's host:port; port 0 picks one, ""
	// serves in-process connections only.
	NATSListen string
	// ConnectOptions apply to an external server (TLS, credentials, nkey).
	ConnectOptions []stream.Option
	// NATSSecurity secures the embedded server: client identities and
	// their permissions, TLS, connection caps. The zero value is an open
	// server, allowed on loopback (or in-process) only.
	NATSSecurity NATSSecurity
	// Prefix is the subject prefix (default "dprl").
	Prefix string
	// Limits bound wire messages; zero fields take stream's defaults.
	Limits stream.Limits
	// SessionLogDir, when set, receives every closed session as rotating
	// dprl.sessions.v1 files (64 MiB or 1 hour per file, fsynced on
	// rotation, all files kept), or DSJSON ones (SessionLogFormat).
	SessionLogDir string
	// SessionLogWriter, when set (and SessionLogDir is not), receives every
	// closed session as dprl.sessions.v1 lines, flushed after each session.
	SessionLogWriter io.Writer
	// SessionLogFormat is the session log's format: SessionLogV1 (or "")
	// or SessionLogDSJSON, one DSJSON decision a line, in
	// sessions-<UTC time>.dsjson files (dsjson.NewRotatingWriter) or to
	// SessionLogWriter. DSJSON holds only sessions of one terminal step
	// with a discrete action: it is refused at start for continuous
	// actions and for an EnvSpec whose episodes are longer than one step,
	// and any other session it cannot hold is dropped from the log and
	// counted (dprl_session_log_dropped_total{reason="unsupported"}).
	SessionLogFormat string
	// SessionLogQueue and SessionLogQueueBytes bound the queue between the
	// request path and the session log's writer (Options.SessionLogQueue);
	// 0 takes the defaults. Sessions that do not fit are dropped from the
	// log and counted in dprl_session_log_dropped_total.
	SessionLogQueue      int
	SessionLogQueueBytes int64
	// ActWorkers is the number of act subscriptions served concurrently
	// (stream.ServerConfig.ActWorkers); 0 means DefaultActWorkers().
	ActWorkers int
	// Backups schedules online backups of the ledger (of each model's, in
	// Backups.Dir/NAME); the zero value takes none.
	Backups Backups
	// HTTPAddr serves /healthz, /readyz, /metrics, /status and the status
	// page at / ("": none).
	HTTPAddr string
	// ShutdownGrace bounds how long Close keeps answering requests with
	// shutting_down before it drains the subscriptions (see Close); 0
	// means DefaultShutdownGrace, a negative value none.
	ShutdownGrace time.Duration
	// EnvSpec names the simulator the policy's spaces came from (dprl
	// agent --env), if any: the status page then shows the
	// simulated learning curve of the released versions (with Models,
	// ModelConfig.EnvSpec).
	EnvSpec string
	// Logger receives the service's logs.
	Logger zerolog.Logger
	// Models, when not empty, serve one policy per model (multi-policy
	// mode, see ModelConfig): each has its ledger in DataDir/models/NAME
	// and its subjects under Prefix.NAME; Agent, InitLedger, ExpectHead,
	// SessionLogDir, SessionLogFormat and SessionLogWriter must then be
	// zero.
	Models []ModelConfig
	// Cluster, when set, runs the agent as one role of a cluster
	// (cluster.go); nil is one process doing everything.
	Cluster *Cluster

	// ledgerOptions, when set (tests), adjusts the ledgers' options: a
	// testutil.FullFS as their file system injects a full disk.
	ledgerOptions func(*ledger.Options)
	// agentOptions, when set (tests), adjusts each agent's options (a
	// hook before each release).
	agentOptions func(*agent.Options)
}

// Service is a running agent service.
type Service struct {
	cfg          ServiceConfig
	policies     []*Policy // one, or one per model
	ns           *server.Server
	nc           *nats.Conn
	ops          *OpsServer
	reg          *prometheus.Registry
	natsURL      string
	natsSecurity string        // the embedded server's security ("" external)
	runDone      chan struct{} // closed when the first updater stops
	doneOnce     sync.Once
	stopOnce     sync.Once
	stopErr      error
	backups      backupRunner
	page         *statusPage // nil without an ops server
}

// DefaultShutdownGrace is the longest Close answers shutting_down before
// it drains the subscriptions, when ServiceConfig.ShutdownGrace is 0.
const DefaultShutdownGrace = 2 * time.Second

// shutdownQuiet is how long no request may have arrived, once every
// session open at the shutdown was told, before Close drains: far longer
// than a request takes to cross NATS, so none is under way.
const shutdownQuiet = 100 * time.Millisecond

// StartService binds the ops server's address, starts the embedded NATS
// server (or connects to the external one), then opens the ledger, starts
// the agent and its updater and starts serving (with Models, one ledger,
// agent and set of subjects per model, on one NATS connection). A data
// directory in use, or a taken address, is reported at once, before any
// ledger is opened or created, naming the setting to change. On error
// everything started is stopped again, and a ledger this start created is
// removed again while it holds no entry (see freshLedgers). ctx bounds the
// start only (its values reach the handlers): once started, the service
// runs until Close, which stops it in order.
func StartService(ctx context.Context, cfg ServiceConfig) (s *Service, err error) {
	s = &Service{cfg: cfg, reg: prometheus.NewRegistry(), runDone: make(chan struct{})}
	if s.policies, err = cfg.newPolicies(); err != nil {
		return nil, err
	}
	if err := cfg.Backups.Validate(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			fresh := s.freshLedgers() // before Close: it reads their heads
			s.Close()
			removeFresh(fresh)
			s = nil
		}
	}()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The listeners and NATS come first: a taken address (or an external
	// server that cannot be reached) fails the start before a ledger is
	// opened, let alone created. A data directory in use by another agent
	// is said first: its port is likely the one taken.
	if err := s.checkDataDirs(); err != nil {
		return s, err
	}
	var opsLn net.Listener
	if cfg.HTTPAddr != "" {
		if opsLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return s, listenError("the ops HTTP server", cfg.HTTPAddr, "HTTPAddr", err)
		}
		defer func() {
			if s.ops == nil { // not handed over: the start failed
				opsLn.Close()
			}
		}()
	}
	if err := s.connectNATS(); err != nil {
		return s, err
	}
	for _, p := range s.policies {
		if err = s.openPolicy(p); err != nil {
			return s, p.wrap(err)
		}
	}
	if err := s.runPolicies(ctx); err != nil {
		return s, err
	}
	if opsLn != nil {
		s.serveOps(opsLn)
	}
	s.startBackups()
	return s, nil
}

// checkDataDirs is StartService's first step: it checks that no other
// agent holds a policy's data directory and registers each policy's
// metrics (before the connection's events can use them).
func (s *Service) checkDataDirs() error {
	for _, p := range s.policies {
		if err := ledger.CheckUnlocked(p.dir); err != nil {
			return p.wrap(err)
		}
		p.metrics = agent.NewMetrics(p.registerer(s.reg))
		if c := s.cfg.Cluster; c != nil {
			p.metrics.RegisterCluster(p.registerer(s.reg), c.Role == RoleLearn)
		}
		if f := p.cfg.Fixed; f != nil {
			p.registerer(s.reg).MustRegister(f.Collectors()...)
		}
	}
	return nil
}

// connectionEvents logs the NATS connection's changes and drives the
// policies' dprl_nats_connected gauge. Readiness follows the connection:
// /readyz asks it at each request.
func (s *Service) connectionEvents() stream.Option {
	policies := s.policies // not s: the callback may run after a failed start set it to nil
	return stream.WithConnectionEvents(s.cfg.Logger, func(up bool) {
		for _, p := range policies {
			if up {
				p.metrics.NATSConnected.Set(1)
			} else {
				p.metrics.NATSConnected.Set(0)
			}
		}
	})
}

// connectNATS starts the embedded NATS server and connects to it in
// process, or connects to the external server ServiceConfig.NATS.
func (s *Service) connectNATS() (err error) {
	cfg, events := s.cfg, s.connectionEvents()
	if cfg.NATS != "" && cfg.NATS != "embedded" {
		s.natsURL = cfg.NATS
		s.nc, err = stream.Connect(cfg.NATS, append([]stream.Option{stream.WithName("dprl-agent"), events}, cfg.ConnectOptions...)...)
		return err
	}
	agentOpts, err := s.startEmbedded()
	if err != nil {
		return err
	}
	// The in-process connection authenticates as the agent; the
	// ConnectOptions are for an external server.
	s.nc, err = stream.Connect("", append([]stream.Option{stream.WithInProcess(s.ns), stream.WithName("dprl-agent"), events}, agentOpts...)...)
	return err
}

// startEmbedded starts the embedded NATS server, secured for the agent's
// subscriptions, and returns the agent's options to connect to it.
func (s *Service) startEmbedded() ([]stream.Option, error) {
	cfg := s.cfg
	eo := stream.EmbeddedOptions{Logger: cfg.Logger, DontListen: cfg.NATSListen == ""}
	if cfg.NATSListen != "" {
		host, port, err := embeddedListen(cfg.NATSListen)
		if err != nil {
			return nil, err
		}
		eo.Host, eo.Port = host, port
	}
	prefix := cmp.Or(cfg.Prefix, stream.DefaultPrefix)
	permPrefix, subs := s.subscriptions(prefix, cmp.Or(cfg.ActWorkers, DefaultActWorkers()))
	var agentOpts []stream.Option
	var err error
	if agentOpts, s.natsSecurity, err = cfg.NATSSecurity.embedded(&eo, permPrefix, subs, cfg.Logger); err != nil {
		return nil, err
	}
	if s.ns, err = stream.StartEmbedded(eo); err != nil {
		if le := (*stream.ListenError)(nil); errors.As(err, &le) {
			err = listenError("embedded NATS", le.Addr, "NATSListen", le.Err)
		}
		return nil, err
	}
	if !eo.DontListen {
		s.natsURL = s.ns.ClientURL()
	}
	return agentOpts, nil
}

// embeddedListen splits the embedded server's listen address HOST:PORT;
// port 0 is nats-server's "random port", -1.
func embeddedListen(listen string) (host string, port int, err error) {
	host, ps, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("agent: nats listen %q: %w", listen, err)
	}
	if port, err = strconv.Atoi(ps); err != nil {
		return "", 0, fmt.Errorf("agent: nats listen %q: %w", listen, err)
	}
	if port == 0 {
		port = -1 // nats-server's "random port"
	}
	return host, port, nil
}

// runPolicies starts each opened policy's updater and serves its subjects
// on the NATS connection; ctx's values reach the handlers.
func (s *Service) runPolicies(ctx context.Context) (err error) {
	cfg := s.cfg
	anyDone, doneOnce := s.runDone, &s.doneOnce
	for _, p := range s.policies {
		if s.nc.IsConnected() {
			p.metrics.NATSConnected.Set(1)
		}
		runCtx, cancel := context.WithCancel(context.Background())
		p.cancel = cancel
		go func() {
			p.runErr = p.agent.Run(runCtx)
			close(p.runDone) // before anyDone: Err reads the policies' errors
			doneOnce.Do(func() { close(anyDone) })
		}()
		if s.cfg.Cluster != nil && s.cfg.Cluster.Role == RoleLearn {
			continue // a learner serves no sessions: it learns from the replicas'
		}
		sc := stream.ServerConfig{Prefix: p.prefix, ObsDim: p.cfg.Spec.ObsDim, Limits: cfg.Limits, Logger: p.log, ActWorkers: cmp.Or(cfg.ActWorkers, DefaultActWorkers()),
			OnErrorReply: p.metrics.ObserveErrorReply, OnNoReply: p.metrics.ObserveNoReply}
		if s.cfg.Cluster != nil {
			sc.Partitions = s.cfg.Cluster.Partitions
		}
		if p.srv, err = stream.Serve(context.WithoutCancel(ctx), s.nc, Handler{p.agent}, sc); err != nil {
			return p.wrap(err)
		}
		if sc.Partitions > 0 {
			if err := s.startPartitioner(ctx, p); err != nil {
				return p.wrap(err)
			}
		}
	}
	return nil
}

// serveOps hands opsLn to the ops server, with its readiness check and the
// status page, and marks it ready.
func (s *Service) serveOps(opsLn net.Listener) {
	s.ops = ServeOps(opsLn, s.reg, s.statusView)
	s.ops.SetReadyCheck(func() error {
		if !s.nc.IsConnected() {
			return errors.New("the NATS connection is down (" + s.nc.Status().String() + ")")
		}
		if err := s.partitionsServed(); err != nil {
			return err
		}
		return s.updatersRunning()
	})
	s.page = newStatusPage(s)
	s.ops.Handle("GET /{$}", s.page)
	s.ops.SetReady(true)
}

// Agent is the running agent (in multi-policy mode the first model's; see
// Policies).
func (s *Service) Agent() *agent.Agent { return s.policies[0].agent }

// Store is the ledger (in multi-policy mode the first model's; see
// Policies).
func (s *Service) Store() *ledger.Store { return s.policies[0].store }

// NATSURL is the URL clients use ("" for an in-process-only server).
func (s *Service) NATSURL() string { return s.natsURL }

// Embedded is the embedded NATS server, or nil.
func (s *Service) Embedded() *server.Server { return s.ns }

// OpsAddr is the ops server's address, or "".
func (s *Service) OpsAddr() string {
	if s.ops == nil {
		return ""
	}
	return s.ops.Addr()
}

// Done is closed when the updater stops (in multi-policy mode, the first
// of the models' updaters); Err then says why.
func (s *Service) Done() <-chan struct{} { return s.runDone }

// Err is the error of the updaters that stopped, after Done is closed (nil
// on a clean stop).
func (s *Service) Err() error {
	select {
	case <-s.runDone:
	default:
		return nil
	}
	var errs []error
	for _, p := range s.policies {
		select {
		case <-p.runDone:
			if p.runErr != nil {
				errs = append(errs, p.wrap(p.runErr))
			}
		default:
		}
	}
	return errors.Join(errs...)
}

// Status is what /status serves.
type Status struct {
	agent.Stats
	Head  ledger.Head    `json:"ledger_head"`
	Build buildinfo.Info `json:"build"`
	// Cluster is the process's role in a cluster (absent for role all).
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

// ClusterStatus is a cluster role's part of /status. Nothing in it
// depends on users' data: which partitions a replica serves depends only
// on which replicas are up.
type ClusterStatus struct {
	// Role is "serve" or "learn"; Name is the cluster's.
	Role string `json:"role"`
	Name string `json:"name"`
	// Partitions are the session partitions a serving replica serves now,
	// of PartitionCount.
	Partitions     []int `json:"partitions,omitempty"`
	PartitionCount int   `json:"partition_count,omitempty"`
	// LogSeq is the position of the ledger of record this process's
	// ledger holds up to: the log position it follows (both roles).
	LogSeq uint64 `json:"log_seq"`
	// A learner's: Holder is its own name (its writer entries carry it),
	// LeaseHeld whether it holds the writer lease now, and LeaseHolder
	// the holder as it last saw the lease (itself while it holds it; ""
	// when it saw none).
	Holder      string `json:"holder,omitempty"`
	LeaseHeld   *bool  `json:"lease_held,omitempty"`
	LeaseHolder string `json:"lease_holder,omitempty"`
}

// Status returns the agent's summary and the ledger head (in multi-policy
// mode the first model's; see ModelStatuses).
func (s *Service) Status() Status {
	p := s.policies[0]
	h, _ := p.store.Head()
	st := Status{Stats: p.agent.Stats(), Head: h, Build: buildinfo.Get()}
	if c := s.cfg.Cluster; c != nil {
		cs := p.agent.ClusterState()
		st.Cluster = &ClusterStatus{Role: c.Role, Name: c.Name, LogSeq: cs.LogSeq}
		if c.Role == RoleServe && p.srv != nil {
			st.Cluster.Partitions, st.Cluster.PartitionCount = p.srv.ServedPartitions(), c.Partitions
		}
		if c.Role == RoleLearn {
			st.Cluster.Holder, st.Cluster.LeaseHeld, st.Cluster.LeaseHolder = c.Holder, &cs.LeaseHeld, cs.LeaseHolder
		}
	}
	return st
}

// Close shuts the service down in order, so that every request that
// reaches the agent is answered:
//
//  1. /readyz turns 503 and the agent stops admitting work: from now on
//     every act and end request is answered with the wire code
//     shutting_down (Agent.Shutdown). Open sessions are abandoned: neither
//     learned from nor logged.
//  2. Grace: the subscriptions stay up, answering shutting_down, until
//     every session open at step 1 has had a request answered so and then
//     no request has arrived for 100 ms, or until ShutdownGrace (default
//     DefaultShutdownGrace, 2 s) has passed, whichever comes first. A
//     client thus learns of the shutdown from a coded reply, not from
//     "no responders" (which NATS answers once no subscription is left)
//     or a timeout; an idle agent skips most of the wait.
//  3. The subscriptions drain: requests already received are answered
//     (shutting_down); requests published after the drain get "no
//     responders" from NATS.
//  4. The updater stops after finishing any update in flight (a release
//     is one atomic ledger batch: it is written whole or not at all).
//  5. The ops server stops.
//  6. The NATS connection and the embedded server close.
//  7. The session log's writer writes every session still queued and the
//     log is synced and closed.
//  8. The ledger closes.
//
// The shutdown is not announced on <prefix>.v1.policy: protocol v1 defines
// that subject's body as a release (version, epsilon, delta; strict
// decoding rejects any other field), so an announcement would need a
// protocol change. With models, each step is taken for every model before
// the next (the grace period is shared). It is idempotent.
func (s *Service) Close() error {
	if s == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		var errs []error
		if s.ops != nil {
			s.ops.SetReady(false)
		}
		for _, p := range s.policies {
			if p.agent != nil {
				p.agent.Shutdown()
			}
		}
		if grace := cmp.Or(s.cfg.ShutdownGrace, DefaultShutdownGrace); grace > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			for _, p := range s.policies {
				if p.srv != nil && !p.agent.AwaitShutdownNotice(ctx, min(shutdownQuiet, grace)) {
					p.log.Warn().Int("sessions_not_told", p.agent.Untold()).Dur("grace", grace).Msg("shutdown: grace period over before every open session was answered shutting_down")
				}
			}
			cancel()
		}
		for _, p := range s.policies {
			if p.stopParts != nil {
				p.stopParts()
			}
			if p.srv != nil {
				errs = append(errs, p.srv.Stop())
			}
		}
		for _, p := range s.policies {
			if p.cancel != nil {
				p.cancel()
				<-p.runDone
				errs = append(errs, p.wrap(p.runErr))
			}
		}
		if s.ops != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, s.ops.Shutdown(ctx))
			cancel()
		}
		if s.nc != nil {
			s.nc.Close()
		}
		if s.ns != nil {
			s.ns.Shutdown()
			s.ns.WaitForShutdown()
		}
		for _, p := range s.policies {
			if p.agent != nil {
				p.agent.CloseSessionLog() // writes what is queued
			}
			if p.sessionLog != nil {
				errs = append(errs, p.sessionLog.Close())
			}
		}
		s.stopBackups()
		if s.page != nil {
			s.page.close() // its workers read the ledgers
		}
		for _, p := range s.policies {
			if p.store != nil {
				errs = append(errs, p.store.Close())
			}
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

// listenError is the error of a listener of what that cannot listen on
// addr: the system's reason (e.g. "address already in use") and the
// setting (field) to change; it wraps the cause.
func listenError(what, addr, field string, err error) error {
	cause := err.Error()
	if errno := syscall.Errno(0); errors.As(err, &errno) {
		cause = errno.Error()
	}
	return SettingsFields.Wrap(&causeError{msg: fmt.Sprintf("%s cannot listen on %s: %s; pick another {%s}", what, addr, cause, field), cause: err})
}

// causeError is a message that wraps a cause it already tells.
type causeError struct {
	msg   string
	cause error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.cause }

// flushingLog writes each session's record (of enc) to w as one write; a
// session enc refuses is an error wrapping sessionlog.ErrUnsupported, as
// from a RotatingWriter.
type flushingLog struct {
	w   io.Writer
	enc sessionlog.Encoder
	buf []byte
}

func (l *flushingLog) Write(s *sessionlog.Session) error {
	b, err := l.enc(l.buf[:0], s)
	if err != nil {
		return fmt.Errorf("%w: %w", sessionlog.ErrUnsupported, err)
	}
	l.buf = b
	_, err = l.w.Write(b)
	return err
}

// DefaultActWorkers is the number of concurrent act handlers when none is
// configured: one per two cores. Serving one action takes a few
// microseconds, far less than NATS spends moving the request and its reply,
// so more handlers than that only add goroutine hand-offs: on 2 cores, one
// handler reached 0.80-1.00x a bare echo responder's throughput where four
// reached 0.79-0.88x, with a lower p99 (dprl bench serve, docs/agent.md).
func DefaultActWorkers() int {
	return max(1, runtime.GOMAXPROCS(0)/2)
}

// Run runs the service of cfg as dprl agent does: it starts it
// (StartService), writes its announcement to w (Announce), serves until
// ctx is done or the service stops by itself, then closes it. It returns
// the error of the start, or of the run, or else of Close.
func Run(ctx context.Context, cfg ServiceConfig, w io.Writer) error {
	svc, err := StartService(ctx, cfg)
	if err != nil {
		return err
	}
	if err := svc.Announce(w); err != nil {
		svc.Close()
		return err
	}
	select {
	case <-ctx.Done():
	case <-svc.Done():
	}
	runErr := svc.Err()
	err = svc.Close()
	cfg.Logger.Info().Msg("agent stopped")
	if runErr != nil {
		return runErr
	}
	return err
}
