package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"dprl/internal/rng"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/policy/lincb"
	"dprl/policy/qnet"
	"dprl/policy/sac"
	"dprl/sessionlog"
	"dprl/space"
	"dprl/stream/updateq"

	"github.com/rs/zerolog"
)

// Lines a client can cause (a failing session log, ledger reads at
// session close) are rate-limited: at most logBurst per logPeriod.
const (
	logBurst  = 10
	logPeriod = time.Minute
)

// Errors returned by Act and End; the transport maps them to wire codes.
var (
	ErrObsDim         = errors.New("agent: wrong observation length")
	ErrNonFinite      = errors.New("agent: non-finite value")
	ErrUnknownSession = errors.New("agent: unknown session")
	ErrBadRequest     = errors.New("agent: bad request")
	ErrSessionLimit   = errors.New("agent: too many open sessions")
	ErrStepLimit      = errors.New("agent: session step limit reached")
	ErrMemoryLimit    = errors.New("agent: session memory budget spent")
	ErrShuttingDown   = errors.New("agent: shutting down")
)

// version is one released policy; theta is never modified after release.
// With the linear contextual bandit, theta holds its released statistics
// and lin the model fitted from them.
type version struct {
	num   uint64
	theta []float64
	// avg is the served moving average of the iterates (Config.AverageDecay),
	// nil when the agent does not average or has released nothing since it
	// started to.
	avg []float64
	lin *lincb.Model
}

// served returns the parameters the policy serves: the average when there
// is one, else the iterate.
func (v *version) served() []float64 {
	if v.avg != nil {
		return v.avg
	}
	return v.theta
}

// Release describes a policy release, for announcements.
type Release struct {
	Version      uint64  `json:"version"`
	Epsilon      float64 `json:"epsilon"`
	Delta        float64 `json:"delta"`
	Participants int     `json:"participants"`
}

// Options are the agent's optional collaborators.
type Options struct {
	// Logger receives log lines; the zero value discards them.
	Logger zerolog.Logger
	// OnRelease is called after each durable release (from the updater
	// goroutine); the transport publishes it.
	OnRelease func(Release)
	// Metrics receives the agent's counters; nil keeps them internal only.
	Metrics *Metrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SessionLog, when set, receives every closed session (with behaviour
	// log-probabilities), for the offline modes: in the dprl.sessions.v1
	// format, or in one that holds only some sessions (a DSJSON log holds
	// one-step decisions), whose Write refuses the others with
	// sessionlog.ErrUnsupported; those are counted as dropped (reason
	// "unsupported"). Raw sessions are sensitive: the log directory must be
	// protected like the data it came from. The agent writes it from a
	// goroutine of its own through a bounded queue: a record that does
	// not fit is dropped and counted (dprl_session_log_dropped_total),
	// never waited for, so a slow log cannot delay a reply; call
	// CloseSessionLog to write what is queued before closing the log.
	SessionLog SessionLog
	// SessionLogQueue and SessionLogQueueBytes bound the session-log
	// queue in records and in bytes of copied session data; 0 means
	// DefaultSessionLogQueue and DefaultSessionLogQueueBytes.
	SessionLogQueue      int
	SessionLogQueueBytes int64
	// Learner, when set, runs the agent as a cluster's learner (cluster.go):
	// it learns from the update queue and writes through the ledger of
	// record; Act and End are not used.
	Learner *Learner
	// Replica, when set, runs the agent as a cluster's serving replica
	// (replica.go): it publishes each session's clipped update and serves
	// the ledger of record's versions.
	Replica *Replica
	// BeforeRelease, when set (tests), runs on the updater goroutine after
	// a round's noise is drawn and before its release is written to the
	// ledger: the crash tests kill the process there.
	BeforeRelease func()
}

// Agent is the learner-server. Create it with New, run its updater with Run,
// and serve with Act and End.
type Agent struct {
	cfg     Config
	lin     lincb.Config // cfg.LinCBConfig(), the linear contextual bandit's schedule
	store   *ledger.Store
	log     zerolog.Logger
	noisy   zerolog.Logger // for lines a client can cause: rate-limited
	opt     Options
	now     func() time.Time
	m       *Metrics
	epsilon float64 // per-session epsilon of one update (analytic)

	current atomic.Pointer[version]
	table   sessionTable
	lim     limits
	mem     atomic.Int64 // bytes charged to the session memory budget
	serving sync.Pool    // *servingCtx

	queue   fairQueue
	blocked atomic.Pointer[error] // why releases are paused (diskfull.go)
	closing atomic.Bool
	notice  shutdownNotice
	logq    *logQueue // nil without a session log

	seedBase uint64 // the configured seed; used only when seeded
	seeded   bool
	// randMu guards randCount, which numbers the generators made for each
	// purpose: a purpose's n-th stream is the same whatever other
	// purposes drew before it (a serving context made early does not
	// shift the noise stream).
	randMu    sync.Mutex
	randCount map[string]uint64
	updates   atomic.Int64
	// guar is the guarantee read from the ledger (LedgerGuarantee): set
	// by New, replaced by the updater goroutine after each release, read
	// by Stats and the status page.
	guar atomic.Pointer[Guarantee]
	cl   clusterState // a cluster role's lease and log position (cluster.go)
	// verMu guards verCh, closed (and replaced on the next wait) when the
	// version served changes: AwaitVersion waits on it.
	verMu sync.Mutex
	verCh chan struct{}
}

// servingCtx is a per-goroutine serving context: the learner's actor,
// or the fixed policy's (Config.Fixed), and a generator.
type servingCtx struct {
	actor *policy.Actor
	fixed *sac.Actor
	q     *qnet.Policy
	rng   *rand.Rand
	act   []float64
	pmf   []float64 // the linear contextual bandit's action probabilities
}

// finished is a closed session waiting for an update.
type finished struct {
	ver   uint64
	key   queueKey
	tr    policy.Trajectory
	at    time.Time
	bytes int64             // charged to the memory budget until the session leaves the learner
	q     *queued           // a cluster learner's update (tr unused), nil for a served session
	sess  ledger.SessionKey // a replica's session key (Options.Replica)
}

// New opens the agent on a ledger: it fixes (or checks) the policy spec and
// loads the last released policy, or initialises version 0.
func New(cfg Config, store *ledger.Store, opt Options) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.LinCB != nil && (opt.Learner != nil || opt.Replica != nil) {
		return nil, agentError("the linear contextual bandit runs in one process, not as a cluster role")
	}
	if cfg.LinCB != nil {
		l := *cfg.LinCB // the agent's own copy
		cfg.LinCB = &l
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics(nil)
	}
	eps, err := accountant.GaussianEpsilon(cfg.Policy.DP.NoiseMultiplier, cfg.Delta)
	if err != nil {
		return nil, fmt.Errorf("agent: per-session epsilon: %w", err)
	}
	if cfg.Fixed != nil {
		eps = 0 // a fixed policy is served, never learned: no update, no epsilon
	}
	a := &Agent{cfg: cfg, lin: cfg.LinCBConfig(), store: store, log: opt.Logger.With().Str("component", "agent").Logger(), opt: opt, now: opt.Now,
		m: opt.Metrics, epsilon: eps,
		lim: limits{open: cfg.MaxOpenSessions, perUser: cfg.MaxSessionsPerUser, perConn: cfg.MaxSessionsPerConnection}}
	a.noisy = a.log.Sample(&zerolog.BurstSampler{Burst: logBurst, Period: logPeriod})
	a.table.init()
	K := cfg.maxBatch()
	a.queue.init(4*K+1024, cfg.MaxQueuedPerUser, K, a.m.LearnerQueue)
	a.seedBase, a.seeded = cfg.Seed, cfg.Seed != 0
	// The linear contextual bandit's ledger says so in its spec: a ledger
	// of one learner is never resumed by the other.
	learner := ""
	if cfg.LinCB != nil {
		learner = "lincb"
	}
	specJSON, err := json.Marshal(struct {
		Spec    policy.Spec `json:"spec"`
		Hidden  []int       `json:"hidden"`
		Learner string      `json:"learner,omitempty"`
	}{cfg.Spec, cfg.Policy.PPO.Hidden, learner})
	if err != nil {
		return nil, err
	}
	if cfg.Fixed != nil {
		// Serving a release writes nothing to the ledger: no spec, no
		// version 0 of a DP-PPO policy that is not served.
		a.storeVersion(&version{num: 0})
	} else {
		if err := store.InitSpec(specJSON, nil); err != nil {
			return nil, err
		}
		if err := a.loadPolicy(); err != nil {
			return nil, err
		}
	}
	if err := a.initGauges(); err != nil {
		return nil, err
	}
	a.serving.New = func() any {
		if cfg.Fixed != nil && cfg.Fixed.Q != nil {
			q, err := cfg.Fixed.Q.NewPolicy()
			if err != nil {
				panic(err) // the snapshot was parsed, and its sizes checked, by the same code
			}
			return &servingCtx{q: q, rng: a.newRand("serve")}
		}
		if cfg.Fixed != nil {
			return &servingCtx{fixed: cfg.Fixed.Actor.Clone(), rng: a.newRand("serve"), act: make([]float64, cfg.Spec.ActionDim)}
		}
		if cfg.LinCB != nil {
			return &servingCtx{rng: a.newRand("serve"), pmf: make([]float64, cfg.Spec.NumActions)}
		}
		act, err := policy.NewActorFor(cfg.Spec, cfg.Policy.PPO)
		if err != nil {
			panic(err) // the spec was validated above
		}
		return &servingCtx{actor: act, rng: a.newRand("serve"), act: make([]float64, max(cfg.Spec.ActionDim, 1))}
	}
	if opt.SessionLog != nil {
		a.logq = newLogQueue(cmp.Or(opt.SessionLogQueue, DefaultSessionLogQueue), cmp.Or(opt.SessionLogQueueBytes, DefaultSessionLogQueueBytes), a.m.SessionLogQueue)
		go a.writeSessionLog()
	}
	return a, nil
}

// writeSessionLog is the session log's one writer: it writes the queued
// records in order until the queue is closed and empty.
func (a *Agent) writeSessionLog() {
	defer close(a.logq.done)
	for {
		it, ok := a.logq.pop()
		if !ok {
			return
		}
		switch err := a.opt.SessionLog.Write(it.rec); {
		case err == nil:
		case errors.Is(err, sessionlog.ErrUnsupported):
			a.m.SessionLogDropped.WithLabelValues("unsupported").Inc()
			// Not err: it names the session, and the agent's own logs
			// carry no session's data.
			a.noisy.Warn().Msg("session log: closed session not logged: the log's format cannot hold it (a DSJSON log takes sessions of one terminal step with a discrete action; see dprl_session_log_dropped_total{reason=\"unsupported\"})")
		case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
			a.m.SessionLogDropped.WithLabelValues("write_failed").Inc()
			a.noisy.Error().Err(err).Msg("session log write failed: the disk is full; session not logged (the log goes on once space is freed; releases are not affected unless the ledger's disk is full too)")
		default:
			a.m.SessionLogDropped.WithLabelValues("write_failed").Inc()
			a.noisy.Error().Err(err).Msg("session log write failed: session not logged")
		}
		a.logq.written(it)
	}
}

// CloseSessionLog stops logging sessions and returns once every session
// queued for the log has been written (Options.SessionLog is then the
// caller's to close). Sessions closed afterwards are not logged; they are
// counted as dropped (reason "closed"). Call it after the agent stopped
// serving (Shutdown, the transport drained, Run returned). It does nothing
// without a session log, and is idempotent.
func (a *Agent) CloseSessionLog() {
	if a.logq != nil {
		a.logq.close()
	}
}

// newRand returns a generator for one purpose: a secure one (rng.Secure),
// or, when the agent is seeded, the stream of the seed, the purpose and a
// per-call counter (rng.Seeded), so that no two generators share a stream.
func (a *Agent) newRand(purpose string) *rand.Rand {
	if a.seeded {
		a.randMu.Lock()
		if a.randCount == nil {
			a.randCount = map[string]uint64{}
		}
		a.randCount[purpose]++
		n := a.randCount[purpose]
		a.randMu.Unlock()
		return rng.Seeded(a.seedBase, fmt.Sprintf("agent %s #%d", purpose, n))
	}
	return rng.Secure()
}

// loadPolicy serves the last released version, or initialises version 0.
func (a *Agent) loadPolicy() error {
	h, err := a.store.Head()
	if err != nil {
		return err
	}
	b, err := a.store.Snapshot(h.Version)
	if errors.Is(err, ledger.ErrNotFound) && h.Version == 0 {
		var theta []float64
		if a.cfg.LinCB != nil {
			// Nothing released: every statistic zero, every action
			// served with probability 1/A.
			c := a.cfg.LinCBConfig()
			theta = make([]float64, c.Actions*c.Stride())
		} else {
			l, err := policy.NewLearner(a.cfg.Spec, a.cfg.Policy)
			if err != nil {
				return err
			}
			theta = make([]float64, l.NumParams())
			l.Init(theta, a.newRand("init"))
		}
		snap, err := encodeSnapshot(a.cfg, 0, theta, nil)
		if err != nil {
			return err
		}
		if err := a.store.SetInitial(snap); err != nil {
			return err
		}
		lin, err := linModel(a.cfg, 0, theta)
		if err != nil {
			return err
		}
		a.storeVersion(&version{num: 0, theta: theta, lin: lin})
		a.log.Info().Msg("initialised policy version 0")
		return nil
	}
	if err != nil {
		return err
	}
	v, theta, avg, err := decodeSnapshot(a.cfg, b)
	if err != nil {
		return fmt.Errorf("%w: snapshot of version %d: %v", ledger.ErrCorrupt, h.Version, err)
	}
	if v != h.Version {
		return fmt.Errorf("%w: snapshot says version %d, head %d", ledger.ErrCorrupt, v, h.Version)
	}
	lin, err := linModel(a.cfg, v, theta)
	if err != nil {
		return fmt.Errorf("%w: snapshot of version %d: %v", ledger.ErrCorrupt, h.Version, err)
	}
	a.storeVersion(&version{num: v, theta: theta, avg: avg, lin: lin})
	a.log.Info().Uint64("version", v).Msg("resumed from the ledger")
	return nil
}

// initGauges sets the gauges of the policy version, the ledger's releases,
// the per-session guarantee and the worst user's epsilon (one scan of the
// ledger's user states).
func (a *Agent) initGauges() error {
	v := a.current.Load().num
	a.m.PolicyVersion.Set(float64(v))
	a.m.LedgerReleases.Set(float64(v)) // versions 1..v were released
	g, err := a.cfg.LedgerGuarantee(a.store)
	if err != nil {
		return err
	}
	a.setGuarantee(&g)
	if a.cfg.Fixed != nil {
		// No release is made: the served policy's guarantee is its
		// training's. The ledger's releases and users are still shown.
		h, err := a.store.Head()
		if err != nil {
			return fmt.Errorf("agent: read the ledger head: %w", err)
		}
		a.m.LedgerReleases.Set(float64(h.Version))
		a.m.SessionEpsilon.Set(0)
		a.m.SessionDelta.Set(0)
	}
	return nil
}

// setGuarantee publishes g: Guarantee and Stats read it, and the gauges
// dprl_session_epsilon and dprl_session_delta (the worst release, the
// ledger's or one made now) and dprl_user_epsilon_max (the ledger's worst
// user) show it.
func (a *Agent) setGuarantee(g *Guarantee) {
	a.guar.Store(g)
	a.m.SessionEpsilon.Set(g.Epsilon)
	a.m.SessionDelta.Set(g.Delta)
	a.m.UserEpsilonMax.Set(g.WorstUser)
}

// noteUsers adds a release to the guarantee after it was written: its
// per-session epsilon and its users' counters, read back from the ledger
// (a user's epsilon only grows, so the worst user is one of them or
// unchanged).
func (a *Agent) noteUsers(users []ledger.UserKey) {
	g := *a.guar.Load()
	g.addRelease(a.epsilon, a.cfg.Delta)
	for _, u := range users {
		st, err := a.store.UserState(u)
		if err != nil {
			a.log.Warn().Err(err).Msg("user state after a release: the guarantee shown (dprl_user_epsilon_max, the per-user bound) not updated")
			return
		}
		a.cfg.addUser(&g, st)
	}
	ng, err := a.cfg.finish(g)
	if err != nil {
		a.log.Warn().Err(err).Msg("guarantee after a release: not updated")
		return
	}
	a.setGuarantee(&ng)
}

// logRelease logs version v's release at info level with public figures
// only: the version, this release's per-session epsilon and delta (a
// function of z and delta, fixed before any session was seen) and the
// per-session guarantee so far (the worst release, each as public). No
// value that depends on the sessions (participants, returns, the users'
// counters) is in it: /metrics and the ledger hold those, labelled.
func (a *Agent) logRelease(v uint64) {
	g := a.Guarantee()
	a.log.Info().Uint64("version", v).Float64("release_epsilon", a.epsilon).Float64("delta", a.cfg.Delta).
		Float64("epsilon_per_session", g.Epsilon).Float64("delta_per_session", g.Delta).
		Msgf(ReleaseMessage+" %d: (epsilon %s, delta %g)-DP per session", v, accountant.FormatEpsilon(g.Epsilon), g.Delta)
}

// ReleaseMessage begins the message of the log line of each release
// (a driver that shows releases otherwise, the demo's progress line,
// drops those lines with a zerolog hook).
const ReleaseMessage = "released policy version"

// Epsilon is the per-session epsilon at Delta of one update made now, at
// the current noise multiplier: what each release is charged. What the
// agent prints is Guarantee's, which also covers the ledger's releases.
func (a *Agent) Epsilon() float64 { return a.epsilon }

// Guarantee is the agent's guarantee as read from its ledger and kept up
// to date after each release (see Guarantee).
func (a *Agent) Guarantee() Guarantee { return *a.guar.Load() }

// Metrics returns the counters the agent updates (Options.Metrics, or
// its own when none was given).
func (a *Agent) Metrics() *Metrics { return a.m }

// SessionMemory is the number of bytes of the session memory budget
// (Config.SessionMemoryBytes) charged now (operational, as the
// dprl_session_memory_bytes gauge).
func (a *Agent) SessionMemory() int64 { return a.mem.Load() }

// Version is the version being served to new sessions.
func (a *Agent) Version() uint64 { return a.current.Load().num }

// ActResult is the reply to Act.
type ActResult struct {
	Action  space.Action
	Version uint64
	Step    int
}

// Act serves one step of a session: it validates the observation, records
// the reward of the previous action (hasReward must be false exactly on a
// session's first step; the reward is clipped to the public reward bound),
// samples the action from the session's policy version and records it. It
// never waits for an update. A session is named by its id and the user id
// it was opened with: a request with another user id does not reach it.
func (a *Agent) Act(sessionID, user string, obs []float64, reward float64, hasReward bool) (ActResult, error) {
	return a.ActFrom("", sessionID, user, obs, reward, hasReward)
}

// ActFrom is Act for a request that arrived over a connection: origin is
// the connection's identity (stream.ReplyOrigin), counted against
// MaxSessionsPerConnection when a session opens. "" is an in-process call,
// which that limit does not count.
func (a *Agent) ActFrom(origin, sessionID, user string, obs []float64, reward float64, hasReward bool) (ActResult, error) {
	start := a.now()
	res, err := a.act(origin, sessionID, user, obs, reward, hasReward)
	a.m.observeAct(a.now().Sub(start), err)
	return res, err
}

// clipReward clips a finite reward to the public bound.
func (a *Agent) clipReward(r float64) float64 {
	return min(max(r, a.cfg.RewardLow), a.cfg.RewardHigh)
}

func (a *Agent) act(origin, sessionID, user string, obs []float64, reward float64, hasReward bool) (ActResult, error) {
	if a.closing.Load() {
		a.refused(origin, a.table.get(sessionKey{user, sessionID}))
		return ActResult{}, ErrShuttingDown
	}
	if len(obs) != a.cfg.Spec.ObsDim {
		return ActResult{}, fmt.Errorf("%w: %d values, want %d", ErrObsDim, len(obs), a.cfg.Spec.ObsDim)
	}
	for i, v := range obs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ActResult{}, fmt.Errorf("%w: obs[%d] = %v", ErrNonFinite, i, v)
		}
	}
	if hasReward {
		if math.IsNaN(reward) || math.IsInf(reward, 0) {
			return ActResult{}, fmt.Errorf("%w: reward = %v", ErrNonFinite, reward)
		}
		reward = a.clipReward(reward)
	}
	now := a.now()
	initCap := min(initialStepCapacity, a.cfg.MaxStepsPerSession)
	initBytes := sessionOverhead(sessionID, user, origin) + a.stepBytes(initCap)
	if a.seeded {
		initBytes += seededSessionBytes
	}
	s, created, err := a.table.getOrCreate(sessionKey{user, sessionID}, origin, hasReward, a.lim,
		func() bool { return a.charge(initBytes) },
		func() *session { return a.newSession(sessionID, user, origin, now, initCap, initBytes) })
	if err != nil {
		return ActResult{}, err
	}
	if created {
		a.m.SessionsOpened.Inc()
		a.m.SessionsOpen.Inc()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ActResult{}, unknownSession(sessionID)
	}
	if !created {
		if !hasReward {
			return ActResult{}, fmt.Errorf("%w: session %q continues without the reward of its previous action", ErrBadRequest, sessionID)
		}
		s.rewards = append(s.rewards, reward)
		if s.steps() >= a.cfg.MaxStepsPerSession {
			// Close as truncated, bootstrapping from this observation.
			s.obs = append(s.obs, obs...)
			a.closeLocked(s, false)
			return ActResult{}, fmt.Errorf("%w: %d steps", ErrStepLimit, a.cfg.MaxStepsPerSession)
		}
		if s.steps() == s.capSteps {
			if err := a.growLocked(s); err != nil {
				// The reward and this observation fit (the storage has room
				// for capSteps rewards and capSteps+1 observations): close
				// as truncated, as at the step limit.
				s.obs = append(s.obs, obs...)
				a.closeLocked(s, false)
				return ActResult{}, err
			}
		}
	}
	srv := a.serving.Get().(*servingCtx)
	defer a.serving.Put(srv)
	gen := srv.rng
	if s.rng != nil {
		gen = s.rng // seeded: the session's own stream
	}
	s.obs = append(s.obs, obs...)
	res := ActResult{Version: s.ver.num}
	if a.cfg.Spec.Kind == policy.ActionDiscrete {
		var act int
		var logp float64 // a greedy fixed policy takes its action with probability 1
		switch {
		case srv.q != nil:
			act = srv.q.Act(obs)
		case s.ver.lin != nil:
			// Inverse-gap weighting over the released model: post-processing
			// of the release and of this user's own observation.
			s.ver.lin.Probs(srv.pmf, obs)
			act = lincb.Sample(srv.pmf, gen.Float64())
			logp = math.Log(srv.pmf[act])
		default:
			act, logp = srv.actor.ActDiscrete(gen, s.ver.served(), obs)
		}
		s.actions = append(s.actions, act)
		s.logp = append(s.logp, logp)
		res.Action.Index = act
	} else {
		var logp float64
		if srv.fixed != nil {
			logp = srv.fixed.Act(srv.act, gen, obs)
		} else {
			logp = srv.actor.ActContinuous(srv.act, gen, s.ver.served(), obs)
		}
		n := len(s.cont)
		s.cont = append(s.cont, srv.act[:a.cfg.Spec.ActionDim]...)
		s.logp = append(s.logp, logp)
		res.Action.Vec = s.cont[n:len(s.cont):len(s.cont)]
	}
	s.touch(now)
	res.Step = s.steps()
	return res, nil
}

// initialStepCapacity is the step storage a new session gets (it doubles
// as the session grows).
const initialStepCapacity = 8

// stepBytes is the memory of step storage for c steps: c+1 observations,
// c actions, log-probabilities and rewards, 8 bytes per value, in four
// allocations (allocBytes each).
func (a *Agent) stepBytes(c int) int64 {
	ad := 1 // one int per discrete action
	if a.cfg.Spec.Kind != policy.ActionDiscrete {
		ad = a.cfg.Spec.ActionDim
	}
	return allocBytes(8*int64((c+1)*a.cfg.Spec.ObsDim)) + allocBytes(8*int64(c*ad)) + 2*allocBytes(8*int64(c))
}

// allocBytes bounds the heap the Go allocator takes for one object of n
// bytes, n >= 64: up to 32 KiB, objects are rounded up to a size class,
// at most a quarter more for these sizes; larger ones to whole 8 KiB pages.
func allocBytes(n int64) int64 {
	if n <= 32<<10 {
		return n + n/4
	}
	return (n + 8191) &^ 8191
}

// charge takes n bytes from the session memory budget, or reports false
// and takes nothing when they do not fit.
func (a *Agent) charge(n int64) bool {
	if a.mem.Add(n) > a.cfg.SessionMemoryBytes {
		a.mem.Add(-n)
		return false
	}
	a.m.SessionMemory.Add(float64(n))
	return true
}

// uncharge returns n bytes to the session memory budget.
func (a *Agent) uncharge(n int64) {
	a.mem.Add(-n)
	a.m.SessionMemory.Sub(float64(n))
}

// growLocked doubles a session's step storage (s.mu held), up to
// MaxStepsPerSession, charging the memory budget before allocating.
func (a *Agent) growLocked(s *session) error {
	c := min(2*s.capSteps, a.cfg.MaxStepsPerSession)
	delta := a.stepBytes(c) - a.stepBytes(s.capSteps)
	if !a.charge(delta) {
		return fmt.Errorf("%w: session closed as truncated at %d steps", ErrMemoryLimit, s.steps())
	}
	s.bytes += delta
	s.capSteps = c
	od := a.cfg.Spec.ObsDim
	s.obs = regrow(s.obs, (c+1)*od)
	if a.cfg.Spec.Kind == policy.ActionDiscrete {
		s.actions = regrow(s.actions, c)
	} else {
		s.cont = regrow(s.cont, c*a.cfg.Spec.ActionDim)
	}
	s.logp = regrow(s.logp, c)
	s.rewards = regrow(s.rewards, c)
	return nil
}

// regrow returns x copied into new storage of capacity n.
func regrow[T any](x []T, n int) []T {
	y := make([]T, len(x), n)
	copy(y, x)
	return y
}

func (a *Agent) newSession(id, user, origin string, now time.Time, c int, bytes int64) *session {
	od := a.cfg.Spec.ObsDim
	s := &session{id: id, user: user, origin: origin, ver: a.current.Load(), opened: now.UnixNano(), capSteps: c, bytes: bytes,
		obs: make([]float64, 0, (c+1)*od), logp: make([]float64, 0, c), rewards: make([]float64, 0, c)}
	if a.cfg.Spec.Kind == policy.ActionDiscrete {
		s.actions = make([]int, 0, c)
	} else {
		s.cont = make([]float64, 0, c*a.cfg.Spec.ActionDim)
	}
	if user != "" {
		s.userKey, s.hasUser = a.store.User(user), true
	}
	if a.seeded {
		// The session's actions come from its own stream, whatever
		// serving context serves it: a seeded run serves every session
		// the same actions however sessions interleave.
		s.rng = rng.Seeded(a.seedBase, "agent serve session "+user+"\x00"+id)
	}
	s.touch(now)
	return s
}

// EndResult is the reply to End.
type EndResult struct {
	Used   bool
	Reason string
}

// End closes a session with the reward of its last action (clipped to the
// public reward bound). user must be the user id the session was opened
// with ("" for an anonymous session); otherwise the session is unknown.
// Used reports whether the session was queued for learning, and Reason why
// not (with a fixed policy, never: reason fixed_policy). Neither depends on
// the user's history: a queued session of a user at a per-user cap is set
// aside later, when a batch is formed, and only the operator's metric
// (dprl_sessions_discarded_total) says so (see closeLocked).
func (a *Agent) End(sessionID, user string, reward float64, terminal bool) (EndResult, error) {
	return a.EndFrom("", sessionID, user, reward, terminal)
}

// EndFrom is End for a request that arrived over a connection (origin as
// in ActFrom). An end request that names no user (protocol v1 clients
// before the user field) also finds a session opened with a user id, but
// only from the connection that opened it, and only when that connection
// has one open session of that id.
func (a *Agent) EndFrom(origin, sessionID, user string, reward float64, terminal bool) (EndResult, error) {
	if a.closing.Load() {
		a.refused(origin, a.table.getForEnd(sessionID, user, origin))
		return EndResult{}, ErrShuttingDown
	}
	if math.IsNaN(reward) || math.IsInf(reward, 0) {
		return EndResult{}, fmt.Errorf("%w: reward = %v", ErrNonFinite, reward)
	}
	reward = a.clipReward(reward)
	s := a.table.getForEnd(sessionID, user, origin)
	if s == nil {
		return EndResult{}, unknownSession(sessionID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return EndResult{}, unknownSession(sessionID)
	}
	s.rewards = append(s.rewards, reward)
	used, reason := a.closeLocked(s, terminal)
	return EndResult{Used: used, Reason: reason}, nil
}

// closeLocked closes a session (s.mu held) and queues its trajectory. A
// truncated session bootstraps from the observation after its last rewarded
// step; when that observation is unknown (End without a next observation),
// the last step is dropped.
//
// Whether a closed session is queued depends only on when it closed (its
// policy version's staleness, the queues' room) and on its user's caps and
// queue (or its connection's, when anonymous), never on its content: a
// session left with no usable step (truncated after one step) is queued
// with an empty trajectory, whose local update is the zero vector, rather
// than dropped, so that its length decides neither which sessions share
// its update nor what the agent counts or reports.
//
// Nor does it depend on the user's history: the per-user caps (update
// cap, epsilon cap, bandmf separation) are applied by batch formation
// (updater.fill) alone, which sets a capped user's session aside and
// counts it by reason in dprl_sessions_discarded_total, for the operator.
// End's reply ("queued" or a scheduling reason) is therefore the same for
// a user who took part in earlier updates as for one never seen; were
// the caps checked here, the reply would tell any client that names a
// user id whether that user took part (a membership oracle).
// closeLocked does no I/O (no ledger read, no log write) under the
// session's mutex.
func (a *Agent) closeLocked(s *session, terminal bool) (bool, string) {
	s.closed = true
	a.table.remove(s)
	a.m.SessionsClosed.Inc()
	a.m.SessionsOpen.Dec()
	if a.logq != nil {
		a.logSession(s, terminal)
	}
	if a.cfg.Fixed != nil {
		// A fixed policy learns nothing: the session's memory goes back
		// to the budget at once (the log took a copy).
		a.uncharge(s.bytes)
		s.bytes = 0
		return a.discard(reasonFixedPolicy)
	}
	od := a.cfg.Spec.ObsDim
	tr := policy.Trajectory{Terminal: terminal}
	T := len(s.rewards)
	nObs := len(s.obs) / od
	if !terminal && nObs <= T {
		T-- // the next observation of the last action is unknown: drop it
	}
	if T >= 1 { // else: an empty trajectory, a zero local update
		if terminal {
			tr.FinalObs = make([]float64, od)
		} else {
			tr.FinalObs = s.obs[T*od : (T+1)*od]
		}
		tr.Obs, tr.Rewards, tr.LogProbs = s.obs[:T*od], s.rewards[:T], s.logp[:T]
		if a.cfg.Spec.Kind == policy.ActionDiscrete {
			tr.Actions = s.actions[:T]
		} else {
			tr.ContActions = s.cont[:T*a.cfg.Spec.ActionDim]
		}
	}
	f := finished{ver: s.ver.num, key: queueKey{user: s.userKey, hasUser: s.hasUser}, tr: tr, at: a.now(), bytes: s.bytes}
	if !s.hasUser {
		f.key.origin = s.origin // anonymous sessions queue per connection
	}
	if a.opt.Replica != nil {
		// The session's key names its update in the queue and its
		// release: the user (or, anonymous, the connection) and the id.
		f.sess = a.store.Session(s.user + "\x00" + s.origin + "\x00" + s.id)
		if s.hasUser {
			f.sess = a.store.Session(s.user + "\x00" + s.id)
		}
	}
	if cur := a.current.Load().num; cur-s.ver.num > a.cfg.MaxStaleness {
		return a.setAside(&f, reasonStale)
	}
	if ok, why := a.queue.push(f); !ok {
		return a.setAside(&f, why)
	}
	a.m.SessionsQueued.Inc()
	return true, ""
}

// setAside drops a finished session that will not be learned from: its
// memory goes back to the budget and the reason is counted; it returns
// false and the reason's text for the client.
func (a *Agent) setAside(f *finished, reason discardReason) (bool, string) {
	a.uncharge(f.bytes)
	f.bytes = 0
	if f.q != nil {
		// A learner's update that will not be used leaves the queue.
		go func(m *updateq.Msg) { _ = m.Ack(context.Background()) }(f.q.msg)
		a.m.Cluster.UpdatesDropped.WithLabelValues(updateDropReason(reason)).Inc()
	}
	return a.discard(reason)
}

// logSession queues a closed session (s.mu held) for the session log,
// following the log's final_obs rule (package sessionlog): a terminal
// session is logged with every step whose reward arrived and no final_obs;
// a session that did not terminate is logged with final_obs, the
// observation after its last logged step. When the client ended it without
// sending that observation (an end that is not terminal: a step limit of
// its own, or a user who left), its last step cannot be bootstrapped and is
// left out, its observation becoming final_obs, as the learner does
// (closeLocked); a session left with no step is not logged. The record
// holds copies of the session's data (the writer runs after s.mu is
// released, while the learner reads the session's storage); a record that
// does not fit the queue is dropped and counted (see logQueue).
func (a *Agent) logSession(s *session, terminal bool) {
	od := a.cfg.Spec.ObsDim
	T := len(s.rewards)
	nObs := min(len(s.obs)/od, T+1)
	if terminal {
		nObs = T
	} else {
		T = min(T, nObs-1) // without the observation after the last action, that step is left out
	}
	if T <= 0 {
		return
	}
	obs := slices.Clone(s.obs[:nObs*od])
	rewards, logp := slices.Clone(s.rewards[:T]), slices.Clone(s.logp[:T])
	var actions []int
	var cont []float64
	bytes := int64(8*(len(obs)+2*T)) + int64(T)*int64(unsafe.Sizeof(sessionlog.Step{})) + int64(unsafe.Sizeof(sessionlog.Session{})) + int64(len(s.id)+len(s.user))
	if a.cfg.Spec.Kind == policy.ActionDiscrete {
		actions = slices.Clone(s.actions[:T])
		bytes += int64(8 * T)
	} else {
		cont = slices.Clone(s.cont[:T*a.cfg.Spec.ActionDim])
		bytes += int64(8 * len(cont))
	}
	out := &sessionlog.Session{Session: s.id, User: s.user, Steps: make([]sessionlog.Step, T), Terminal: terminal}
	if a.cfg.Fixed == nil { // a fixed policy has no version of the agent's
		ver := s.ver.num
		out.PolicyVersion = &ver
	}
	for t := 0; t < T; t++ {
		st := &out.Steps[t]
		st.Obs, st.Reward, st.LogP = obs[t*od:(t+1)*od:(t+1)*od], rewards[t], logp[t]
		if actions != nil {
			st.Action.Index = actions[t]
		} else {
			ad := a.cfg.Spec.ActionDim
			st.Action.Vec = cont[t*ad : (t+1)*ad : (t+1)*ad]
		}
	}
	if !terminal {
		out.FinalObs = obs[T*od : (T+1)*od]
	}
	if why, ok := a.logq.push(logItem{rec: out, bytes: bytes}); !ok {
		a.m.SessionLogDropped.WithLabelValues(why).Inc()
		a.noisy.Warn().Str("reason", why).Msg("session log: closed session dropped, not logged (see dprl_session_log_dropped_total)")
	}
}

func (a *Agent) discard(reason discardReason) (bool, string) {
	a.m.SessionsDiscarded.WithLabelValues(reason.label()).Inc()
	return false, reason.text()
}

// userEligible checks a user's caps against the ledger for the release of
// version next; when the user is not eligible it says why. With bandmf
// noise a user also waits Band releases between two of theirs (the
// participation pattern its sensitivity is computed for; the ledger
// refuses a release that breaks it).
func (a *Agent) userEligible(k ledger.UserKey, next uint64) (bool, discardReason) {
	band := uint64(a.cfg.Policy.DP.Band)
	if a.cfg.MaxUpdatesPerUser == 0 && a.cfg.UserEpsilon == 0 && band <= 1 {
		return true, 0
	}
	st, err := a.store.UserState(k)
	if err != nil {
		a.noisy.Error().Err(err).Msg("user state")
		return false, reasonLedgerUnavailable
	}
	if a.cfg.MaxUpdatesPerUser > 0 && st.Updates >= a.cfg.MaxUpdatesPerUser {
		return false, reasonUserUpdateCap
	}
	if band > 1 && st.Updates > 0 && (next <= st.LastVersion || next-st.LastVersion < band) {
		return false, reasonUserSeparation
	}
	if a.cfg.UserEpsilon > 0 {
		eps, err := st.EpsilonAfter(a.cfg.Policy.DP.NoiseMultiplier, a.cfg.Delta)
		if err != nil || eps > a.cfg.UserEpsilon {
			return false, reasonUserEpsilonCap
		}
	}
	return true, 0
}

// Stats is what the agent reports about itself (served on /status). Every
// field is public or a release: the policy version and the number of
// releases (each release is announced), and the per-session privacy
// parameters. Nothing here is a function of sessions' content (returns,
// rewards, observations, lengths) or a count of sessions: operational
// counters are Prometheus metrics (see Metrics), for the operator only.
type Stats struct {
	// Version is the policy version served to new sessions.
	Version uint64 `json:"version"`
	// Updates is the number of releases made by this process.
	Updates int64 `json:"updates"`
	// Epsilon and Delta: each release, those in the ledger (at the
	// settings they were made with) and those made now, is (Epsilon,
	// Delta)-DP for one session (analytic Gaussian mechanism): the worst
	// of them (Guarantee). Both 0 when a fixed policy is served (no
	// release is made).
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// NextEpsilon is the per-session epsilon, at the agent's delta, of a
	// release made now (the current noise multiplier); below Epsilon when
	// the ledger holds releases made at a smaller one. 0 with a fixed
	// policy.
	NextEpsilon float64 `json:"next_release_epsilon,omitempty"`
	// FixedPolicy identifies the fixed policy served (FixedPolicy.ID),
	// "" when the agent learns; Version is then 0.
	FixedPolicy string `json:"fixed_policy,omitempty"`
	// FixedProvenance is the fixed policy's guarantee, as its snapshot
	// records it (nil when the agent learns).
	FixedProvenance *FixedProvenance `json:"fixed_policy_provenance,omitempty"`
}

// FixedProvenance is a served snapshot's provenance on /status: a
// private offline release at (Epsilon, Delta) per Unit, charged by the
// ledger entry LedgerSeq of the ledger its run wrote, or not private.
// Label says it in words (FixedPolicy.Label).
type FixedProvenance struct {
	Private bool `json:"private"`
	// Epsilon is rounded up to 4 significant digits.
	Epsilon   float64 `json:"epsilon,omitempty"`
	Delta     float64 `json:"delta,omitempty"`
	Unit      string  `json:"unit,omitempty"`
	LedgerSeq uint64  `json:"ledger_seq,omitempty"`
	Label     string  `json:"label"`
}

// Status is f's provenance as /status and the status page show it
// (FixedProvenance, the epsilon rounded up).
func (f *FixedPolicy) Status() *FixedProvenance {
	p := &FixedProvenance{Private: f.Private(), Label: f.Label()}
	if p.Private {
		pr := f.Provenance
		p.Epsilon, p.Delta, p.Unit, p.LedgerSeq = accountant.CeilEpsilon(pr.Epsilon), pr.Delta, string(pr.Unit), pr.LedgerSeq
	}
	return p
}

// Stats returns the current summary.
func (a *Agent) Stats() Stats {
	g := a.Guarantee()
	st := Stats{Version: a.Version(), Updates: a.updates.Load(), Epsilon: g.Epsilon, Delta: g.Delta, NextEpsilon: a.epsilon}
	if a.cfg.Fixed != nil {
		st.Epsilon, st.Delta, st.NextEpsilon, st.FixedPolicy, st.FixedProvenance = 0, 0, 0, a.cfg.Fixed.ID(), a.cfg.Fixed.Status()
	}
	return st
}

// Run runs the updater and the idle sweeper until ctx is done. An update in
// flight when ctx ends is completed (its release is one atomic batch) before
// Run returns. With a fixed policy (Config.Fixed) only the sweeper runs.
func (a *Agent) Run(ctx context.Context) error {
	if a.cfg.Fixed != nil {
		return a.runFixed(ctx)
	}
	if a.opt.Learner != nil {
		return a.runLearner(ctx)
	}
	if a.opt.Replica != nil {
		return a.runReplica(ctx)
	}
	return a.runUpdater(ctx, nil)
}

// runUpdater is Run's loop: the updater, the flush and the idle sweeper,
// until ctx ends or stop reports an error.
func (a *Agent) runUpdater(ctx context.Context, stop <-chan error) error {
	workers := a.cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	u, err := newUpdater(a, workers)
	if err != nil {
		return err
	}
	flush := time.NewTicker(max(a.cfg.FlushTimeout/4, 10*time.Millisecond))
	defer flush.Stop()
	sweep := time.NewTicker(max(min(a.cfg.IdleTimeout, a.cfg.MaxSessionLifetime)/4, 10*time.Millisecond))
	defer sweep.Stop()
	probe := time.NewTicker(probeMin) // while releases are paused (diskfull.go)
	defer probe.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-stop:
			return err
		case <-a.queue.wake:
			if err := u.step(); err != nil {
				return err
			}
		case <-flush.C:
			if err := u.flush(); err != nil {
				return err
			}
		case <-sweep.C:
			a.sweep()
		case <-probe.C:
			if a.blocked.Load() != nil {
				if err := u.step(); err != nil {
					return err
				}
			}
		}
	}
}

// sweep closes, as truncated, the sessions idle for longer than
// IdleTimeout and those open for longer than MaxSessionLifetime.
func (a *Agent) sweep() {
	now := a.now()
	idleCut, lifeCut := now.Add(-a.cfg.IdleTimeout).UnixNano(), now.Add(-a.cfg.MaxSessionLifetime).UnixNano()
	for _, s := range a.table.expired(idleCut, lifeCut) {
		s.mu.Lock()
		if !s.closed {
			switch {
			case s.opened < lifeCut:
				a.m.SessionsExpired.Inc()
				a.closeLocked(s, false)
			case s.lastSeen.Load() < idleCut:
				a.m.SessionsIdle.Inc()
				a.closeLocked(s, false)
			}
		}
		s.mu.Unlock()
	}
}

// localUpdateKey is the key of the generator of a seeded agent's local
// update of the session in batch slot slot of the release of version.
func (a *Agent) localUpdateKey(version uint64, slot int) [32]byte {
	return rng.Key(a.seedBase, fmt.Sprintf("agent local-update v%d slot %d", version, slot))
}

// randWrap holds a worker's generator; seeded, c is its source, rekeyed
// for every local update (updater.local).
type randWrap struct {
	r *rand.Rand
	c *rand.ChaCha8
}

// K is the number of sessions per update.
func (a *Agent) K() int {
	if a.cfg.LinCB != nil {
		// The linear contextual bandit's next block: its public size.
		return a.lin.BlockSize(int(a.current.Load().num))
	}
	return a.cfg.Policy.DP.UsersPerUpdate
}

// storeVersion serves v and wakes AwaitVersion's waiters.
func (a *Agent) storeVersion(v *version) {
	a.current.Store(v)
	a.verMu.Lock()
	if a.verCh != nil {
		close(a.verCh)
		a.verCh = nil
	}
	a.verMu.Unlock()
}

// AwaitVersion blocks until the agent serves version v or a later one, or
// until ctx ends (it then returns ctx.Err()). A serving replica's version
// follows the ledger of record a moment after the learner releases.
func (a *Agent) AwaitVersion(ctx context.Context, v uint64) error {
	for {
		a.verMu.Lock()
		if a.verCh == nil {
			a.verCh = make(chan struct{})
		}
		ch := a.verCh
		a.verMu.Unlock()
		if a.current.Load().num >= v {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
