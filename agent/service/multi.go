package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"dprl/agent"
	"dprl/internal/buildinfo"
	"dprl/ledger"
	"dprl/sessionlog"
	"dprl/sessionlog/dsjson"
	"dprl/stream"
)

// Policy is one policy a Service serves: its agent, its ledger and its
// subjects. A single-policy service has one, named ""; a multi-policy one
// has one per model (ServiceConfig.Models).
type Policy struct {
	name, prefix string
	cfg          agent.Config
	dir          string
	init         bool
	head         *ledger.HeadRef
	logDir       string
	logFormat    string // ServiceConfig.SessionLogFormat
	logWriter    io.Writer
	log          zerolog.Logger
	env          string // the simulator named by --env, if any

	store      *ledger.Store
	agent      *agent.Agent
	srv        *stream.Server
	metrics    *agent.Metrics
	sessionLog *sessionlog.RotatingWriter
	fresh      *freshDir // the directory before this start, when it held no ledger
	cancel     context.CancelFunc
	runDone    chan struct{}
	runErr     error
	// parts is a serving replica's partitioner (nil otherwise).
	parts *partitioner
	// stopParts stops a serving replica's partitioner (nil otherwise),
	// which gives its partitions up before it returns.
	stopParts func()
}

// Name is the model's name ("" in single-policy mode).
func (p *Policy) Name() string { return p.name }

// Prefix is the subject prefix the policy is served under: the service's,
// followed by "." and the name in multi-policy mode.
func (p *Policy) Prefix() string { return p.prefix }

// Agent is the policy's agent.
func (p *Policy) Agent() *agent.Agent { return p.agent }

// Store is the policy's ledger.
func (p *Policy) Store() *ledger.Store { return p.store }

// Config is the policy's agent configuration.
func (p *Policy) Config() agent.Config { return p.cfg }

// DataDir is the directory of the policy's ledger.
func (p *Policy) DataDir() string { return p.dir }

// Status returns the policy's public summary and its ledger head.
func (p *Policy) Status() ModelStatus {
	h, _ := p.store.Head()
	return ModelStatus{Name: p.name, Prefix: p.prefix, Stats: p.agent.Stats(), Head: h}
}

// Policies are the policies the service serves, in the order given.
func (s *Service) Policies() []*Policy { return s.policies }

// ModelStatus is one policy's entry in /status's models array: only public
// values, as Status.
type ModelStatus struct {
	Name   string `json:"name"`
	Prefix string `json:"prefix"`
	agent.Stats
	Head ledger.Head `json:"ledger_head"`
}

// MultiStatus is what /status serves in multi-policy mode.
type MultiStatus struct {
	Models []ModelStatus  `json:"models"`
	Build  buildinfo.Info `json:"build"`
}

// ModelStatuses returns every policy's status.
func (s *Service) ModelStatuses() []ModelStatus {
	st := make([]ModelStatus, len(s.policies))
	for i, p := range s.policies {
		st[i] = p.Status()
	}
	return st
}

// statusView is /status: Status with one policy, MultiStatus with models.
func (s *Service) statusView() any {
	if len(s.cfg.Models) == 0 {
		return s.Status()
	}
	return MultiStatus{Models: s.ModelStatuses(), Build: buildinfo.Get()}
}

// policyError is an error of one model's policy.
type policyError struct {
	name, dir string
	err       error
}

func (e *policyError) Error() string { return fmt.Sprintf("model %q: %v", e.name, e.err) }
func (e *policyError) Unwrap() error { return e.err }

// wrap names the model in err (single-policy errors are returned as they
// are).
func (p *Policy) wrap(err error) error {
	if err == nil || p.name == "" {
		return err
	}
	return &policyError{name: p.name, dir: p.dir, err: err}
}

// LedgerDirOf names the ledger directory a StartService error is about:
// "model NAME's directory DIR" when it is one model's, else dflt (e.g.
// "--data DIR").
func LedgerDirOf(err error, dflt string) string {
	if pe := (*policyError)(nil); errors.As(err, &pe) {
		return fmt.Sprintf("model %q's directory %s", pe.name, pe.dir)
	}
	return dflt
}

// newPolicies returns the policies c describes, not yet started. With
// Models, the names must be valid and unique, the single-policy fields
// zero, and DataDir must not hold a single-policy ledger: its users'
// budgets would be left behind by ledgers started afresh in models/.
func (c ServiceConfig) newPolicies() ([]*Policy, error) {
	prefix := cmp.Or(c.Prefix, stream.DefaultPrefix)
	if len(c.Models) == 0 {
		if err := checkSessionLogFormat(c.SessionLogFormat, c.EnvSpec, c.Agent.Spec); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		return []*Policy{{prefix: prefix, cfg: c.Agent, dir: c.DataDir, init: c.InitLedger, head: c.ExpectHead, logDir: c.SessionLogDir,
			logFormat: c.SessionLogFormat, logWriter: c.SessionLogWriter, log: c.Logger, env: c.EnvSpec, runDone: make(chan struct{})}}, nil
	}
	if c.InitLedger || c.ExpectHead != nil || c.SessionLogDir != "" || c.SessionLogFormat != "" || c.SessionLogWriter != nil || c.EnvSpec != "" || !reflect.ValueOf(c.Agent).IsZero() {
		return nil, errors.New("agent: with Models, the agent configuration, InitLedger, ExpectHead, EnvSpec and the session log are each model's (ModelConfig)")
	}
	if c.DataDir == "" {
		return nil, errors.New("agent: no data directory")
	}
	switch ok, err := ledger.Exists(c.DataDir); {
	case err != nil:
		return nil, fmt.Errorf("agent: %w", err)
	case ok:
		return nil, fmt.Errorf("agent: %s holds a single-policy ledger; with models each model's ledger is in %s: move it to the directory of the model that continues it to keep its users' budgets, or use another data directory",
			c.DataDir, filepath.Join(c.DataDir, ModelsDir, "NAME"))
	}
	ps := make([]*Policy, 0, len(c.Models))
	seen := map[string]bool{}
	for i, m := range c.Models {
		if err := ValidModelName(m.Name); err != nil {
			return nil, fmt.Errorf("agent: model %d: %w", i+1, err)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("agent: model %q given twice", m.Name)
		}
		seen[m.Name] = true
		if err := checkSessionLogFormat(m.SessionLogFormat, m.EnvSpec, m.Agent.Spec); err != nil {
			return nil, fmt.Errorf("agent: model %q: %w", m.Name, err)
		}
		ps = append(ps, &Policy{name: m.Name, prefix: prefix + "." + m.Name, cfg: m.Agent, dir: filepath.Join(c.DataDir, ModelsDir, m.Name),
			init: m.InitLedger, head: m.ExpectHead, logDir: m.SessionLogDir, logFormat: m.SessionLogFormat, log: c.Logger.With().Str("model", m.Name).Logger(), env: m.EnvSpec, runDone: make(chan struct{})})
	}
	return ps, nil
}

// registerer is where p's metrics register: reg, labelled model=NAME in
// multi-policy mode.
func (p *Policy) registerer(reg *prometheus.Registry) prometheus.Registerer {
	if p.name != "" {
		return prometheus.WrapRegistererWith(prometheus.Labels{"model": p.name}, reg)
	}
	return reg
}

// openPolicy opens p's ledger and session log and creates its agent (on
// the metrics StartService made).
func (s *Service) openPolicy(p *Policy) error {
	var err error
	if p.fresh, err = snapshotDir(p.dir); err != nil {
		return err
	}
	// Open refuses a damaged ledger (ErrCorrupt, with what it found): it
	// checks the store against its head file and user key and verifies it.
	// LiveView: dprl ledger show and dprl report read it while it serves.
	lo := ledger.Options{Logger: p.log, ExpectHead: p.head, Init: p.init, LiveView: true}
	if s.cfg.Cluster != nil {
		lo.UserKey = s.cfg.Cluster.UserKey
	}
	if s.cfg.ledgerOptions != nil {
		s.cfg.ledgerOptions(&lo)
	}
	if p.store, err = ledger.Open(p.dir, lo); err != nil {
		return err
	}
	var slog agent.SessionLog
	dsj := p.logFormat == SessionLogDSJSON
	switch {
	case p.logDir != "" && dsj:
		if p.sessionLog, err = dsjson.NewRotatingWriter(p.logDir, p.cfg.Spec.NumActions, sessionlog.RotatingOptions{}); err != nil {
			return err
		}
		slog = p.sessionLog
	case p.logDir != "":
		if p.sessionLog, err = sessionlog.NewRotatingWriter(p.logDir, sessionlog.RotatingOptions{}); err != nil {
			return err
		}
		slog = p.sessionLog
	case p.logWriter != nil && dsj:
		slog = &flushingLog{w: p.logWriter, enc: dsjson.LogEncoder(p.cfg.Spec.NumActions)}
	case p.logWriter != nil:
		slog = &flushingLog{w: p.logWriter, enc: sessionlog.AppendSession}
	}
	opt := agent.Options{Logger: p.log, Metrics: p.metrics, SessionLog: slog, SessionLogQueue: s.cfg.SessionLogQueue, SessionLogQueueBytes: s.cfg.SessionLogQueueBytes}
	opt.OnRelease = func(r agent.Release) {
		if s.nc == nil {
			return
		}
		if err := stream.PublishPolicy(s.nc, p.prefix, stream.PolicyAnnouncement{Version: r.Version, Epsilon: r.Epsilon, Delta: r.Delta}); err != nil {
			p.log.Warn().Err(err).Msg("policy announcement not published")
		}
	}
	if s.cfg.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.clusterOptions(ctx, &opt); err != nil {
			return err
		}
	}
	if s.cfg.agentOptions != nil {
		s.cfg.agentOptions(&opt)
	}
	p.agent, err = agent.New(p.cfg, p.store, opt)
	return err
}

// subscriptions returns the prefix of the agent's subject permissions on
// the embedded server and the act workers to provision subscriptions for:
// prefix itself with one policy; with models prefix.* (each model's subjects
// are prefix.NAME.v1.*, NAME one token) and the act and end subscriptions of
// every model, less the end subscription NATSSecurity.embedded counts.
func (s *Service) subscriptions(prefix string, actWorkers int) (string, int) {
	if len(s.cfg.Models) == 0 {
		return prefix, actWorkers
	}
	return prefix + ".*", len(s.policies)*(actWorkers+1) - 1
}

// partitionsServed reports a serving replica of a partitioned cluster that
// serves no session partition yet (before it follows the log's first
// version, or while every partition is held by others): /readyz is then
// not ready, since no session reaches it.
func (s *Service) partitionsServed() error {
	c := s.cfg.Cluster
	if c == nil || c.Role != RoleServe || c.Partitions == 0 {
		return nil
	}
	for _, p := range s.policies {
		if p.parts != nil && p.parts.settled.Load() && p.srv != nil && len(p.srv.ServedPartitions()) > 0 {
			return nil
		}
	}
	return errors.New("serving no session partition yet, or about to give some up to another replica")
}

// updatersRunning reports an updater that stopped, or whose releases are
// paused on a full disk (readiness).
func (s *Service) updatersRunning() error {
	for _, p := range s.policies {
		select {
		case <-p.runDone:
			if p.name == "" {
				return errors.New("the updater stopped")
			}
			return fmt.Errorf("the updater of model %q stopped", p.name)
		default:
		}
		if err := p.agent.Blocked(); err != nil {
			if p.name == "" {
				return fmt.Errorf("releases are paused: %w", err)
			}
			return fmt.Errorf("releases of model %q are paused: %w", p.name, err)
		}
	}
	return nil
}

// freshDir is a policy's directory as it was before this start, when it
// held no ledger: root, when set, is the outermost directory that did not
// exist (created by this start); else before lists the names it held.
type freshDir struct {
	dir, root string
	before    map[string]bool
}

func snapshotDir(dir string) (*freshDir, error) {
	if ok, err := ledger.Exists(dir); err != nil || ok {
		return nil, err
	}
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		root := filepath.Clean(dir)
		for {
			parent := filepath.Dir(root)
			if parent == root {
				break
			}
			if _, err := os.Stat(parent); err == nil || !errors.Is(err, fs.ErrNotExist) {
				break
			}
			root = parent
		}
		return &freshDir{dir: dir, root: root}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	f := &freshDir{dir: dir, before: map[string]bool{}}
	for _, n := range names {
		f.before[n.Name()] = true
	}
	return f, nil
}

// freshLedgers are the ledgers a failed start created: those of
// directories that held none before it and whose store still has no entry
// and no release. Nothing was learned or charged in them, so removing
// them loses nothing, and a later start is not refused for a
// half-initialised directory. It reads the stores: call it before Close.
func (s *Service) freshLedgers() []*freshDir {
	var fresh []*freshDir
	var kept []string
	for _, p := range s.policies {
		if p.store == nil {
			continue
		}
		if h, err := p.store.Head(); p.fresh != nil && err == nil && h.Seq == 0 && h.Version == 0 {
			fresh = append(fresh, p.fresh)
			continue
		}
		kept = append(kept, p.dir)
	}
	for _, f := range fresh {
		for _, k := range kept {
			if f.root != "" && strings.HasPrefix(filepath.Clean(k)+string(filepath.Separator), filepath.Clean(f.root)+string(filepath.Separator)) {
				f.root = f.dir // never remove a kept ledger with an outer directory
			}
		}
	}
	return fresh
}

// removeFresh removes what a failed start created in fresh's directories.
func removeFresh(fresh []*freshDir) {
	for _, f := range fresh {
		if f.root != "" {
			os.RemoveAll(f.root)
			continue
		}
		names, err := os.ReadDir(f.dir)
		if err != nil {
			continue
		}
		for _, n := range names {
			if !f.before[n.Name()] {
				os.RemoveAll(filepath.Join(f.dir, n.Name()))
			}
		}
	}
}
