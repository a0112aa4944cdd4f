package vw

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/profile"
	"dprl/sims"
	"dprl/stream"
	"dprl/stream/loadgen"

	"github.com/rs/zerolog"
)

// ServeSide is one server's serving measurement: the same client loop
// (one goroutine, one persistent connection) draws a user, asks for a
// decision, draws the click and sends the feedback, one request at a time.
type ServeSide struct {
	// Server names the server.
	Server string `json:"server"`
	// Requests are the decisions and feedbacks answered, RPS per second.
	Requests int     `json:"requests"`
	RPS      float64 `json:"requests_per_sec"`
	// Latency quantiles in milliseconds of the decisions, the feedbacks
	// and both.
	DecideP50Ms   float64 `json:"decide_p50_ms"`
	DecideP99Ms   float64 `json:"decide_p99_ms"`
	FeedbackP50Ms float64 `json:"feedback_p50_ms"`
	FeedbackP99Ms float64 `json:"feedback_p99_ms"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
}

// Serving compares the agent's act path with VW's daemon.
type Serving struct {
	// Seconds is how long each side was measured, in Rounds alternating
	// rounds (agent first).
	Seconds float64   `json:"seconds_each"`
	Rounds  int       `json:"rounds"`
	Agent   ServeSide `json:"agent"`
	VW      ServeSide `json:"vw"`
}

// server is one side of the serving comparison.
type server interface {
	// decide returns the item served to the user x and its probability
	// (0 when the server does not say).
	decide(x []float64) (int, float64, error)
	// feedback sends the click on the served item.
	feedback(x []float64, item int, prob, click float64) error
}

// clientLoop is the one client loop of both sides.
type clientLoop struct {
	env         *sims.Bandit
	rng         *rand.Rand
	x, probs    []float64
	decide, fdb []time.Duration
	elapsed     time.Duration
	// maxDecisions stops the loop (0: no limit).
	maxDecisions int
}

func newClientLoop(env *sims.Bandit, seed uint64) *clientLoop {
	return &clientLoop{env: env, rng: rand.New(rand.NewPCG(seed, usersStream)),
		x: make([]float64, env.Config().Dim()), probs: make([]float64, env.Config().Items)}
}

// run serves users through s for d (or until ctx ends or maxDecisions).
func (l *clientLoop) run(ctx context.Context, s server, d time.Duration) error {
	start := time.Now()
	end := start.Add(d)
	defer func() { l.elapsed += time.Since(start) }()
	for time.Now().Before(end) && (l.maxDecisions == 0 || len(l.decide) < l.maxDecisions) {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.env.DrawUser(l.rng, l.x)
		t0 := time.Now()
		a, p, err := s.decide(l.x)
		if err != nil {
			return err
		}
		t1 := time.Now()
		l.decide = append(l.decide, t1.Sub(t0))
		l.env.ClickProbsFor(l.probs, l.x)
		click := 0.0
		if l.rng.Float64() < l.probs[a] {
			click = 1
		}
		t2 := time.Now()
		if err := s.feedback(l.x, a, p, click); err != nil {
			return err
		}
		l.fdb = append(l.fdb, time.Since(t2))
	}
	return nil
}

func (l *clientLoop) side(name string) ServeSide {
	all := append(append([]time.Duration(nil), l.decide...), l.fdb...)
	n := len(all)
	dq, fq, aq := loadgen.Quantiles(l.decide, 0.5, 0.99), loadgen.Quantiles(l.fdb, 0.5, 0.99), loadgen.Quantiles(all, 0.5, 0.99)
	return ServeSide{Server: name, Requests: n, RPS: float64(n) / l.elapsed.Seconds(),
		DecideP50Ms: dq[0], DecideP99Ms: dq[1], FeedbackP50Ms: fq[0], FeedbackP99Ms: fq[1], P50Ms: aq[0], P99Ms: aq[1]}
}

// agentServer is the DP agent's act path: an act request opening a
// one-step session, and its end with the click.
type agentServer struct {
	ctx  context.Context
	c    *stream.Client
	n    int
	sess string
}

func (s *agentServer) decide(x []float64) (int, float64, error) {
	s.n++
	s.sess = fmt.Sprintf("vwbench-%d", s.n)
	a, err := s.c.Act(s.ctx, s.sess, "", x, 0, true)
	if err != nil {
		return 0, 0, fmt.Errorf("agent act: %w", err)
	}
	return a.Index, 0, nil
}

func (s *agentServer) feedback(_ []float64, _ int, _, click float64) error {
	if err := s.c.End(s.ctx, s.sess, click, true); err != nil {
		return fmt.Errorf("agent end: %w", err)
	}
	return nil
}

// vwServer is VW's daemon: the unlabelled example, then the labelled one.
type vwServer struct {
	c      *Conn
	items  int
	buf    []byte
	pmf    []float64
	rng    *rand.Rand
	scores []float64
}

func (s *vwServer) decide(x []float64) (int, float64, error) {
	var err error
	s.buf, s.pmf, err = s.c.Predict(s.buf, s.pmf, x, s.items)
	if err != nil {
		return 0, 0, err
	}
	a := Sample(s.pmf, s.rng.Float64())
	return a, s.pmf[a], nil
}

func (s *vwServer) feedback(x []float64, item int, prob, click float64) error {
	var err error
	s.buf, err = AppendExample(s.buf[:0], x, s.items, &Label{Index: item, Cost: -click, Prob: prob})
	if err != nil {
		return err
	}
	return s.c.Exchange(s.buf, 1, func(_ int, b []byte) error {
		s.scores, err = ParsePMF(s.scores, b, s.items)
		return err
	})
}

// agentSessionCap is the update size of the serving agent (K): no update
// runs while fewer sessions end, so the agent side measures serving only,
// as dprl bench serve does. The agent's loop stops before it.
const agentSessionCap = 1 << 15

// ServeConfig configures Serve.
type ServeConfig struct {
	// Bin is the VW binary and Learner the daemon's learner.
	Bin     string
	Learner Learner
	// Duration is each side's measured time, in Rounds alternating
	// rounds (agent first).
	Duration time.Duration
	Rounds   int
	Logger   zerolog.Logger
}

// Serve measures the DP agent (the bandit profile, embedded NATS, a fresh
// temporary ledger, K above the sessions of the run so that no update
// runs) against VW's daemon (cfg.Learner, learning from every feedback),
// with the same client loop on one connection each, on this machine.
func Serve(ctx context.Context, cfg ServeConfig) (Serving, error) {
	if cfg.Duration <= 0 || cfg.Rounds < 1 {
		return Serving{}, fmt.Errorf("vw: serve: duration %v and rounds %d, want > 0 and >= 1", cfg.Duration, cfg.Rounds)
	}
	spec, pc, err := profile.AgentDefaults(EnvName)
	if err != nil {
		return Serving{}, err
	}
	pc.DP.UsersPerUpdate = agentSessionCap
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		return Serving{}, err
	}
	dir, err := os.MkdirTemp("", "dprl-bench-vw-")
	if err != nil {
		return Serving{}, err
	}
	defer os.RemoveAll(dir)
	svc, err := service.StartService(ctx, service.ServiceConfig{Agent: agent.DefaultConfig(spec, pc), DataDir: dir, NATSListen: "127.0.0.1:0", Logger: cfg.Logger})
	if err != nil {
		return Serving{}, err
	}
	defer svc.Close()
	nc, err := stream.Connect(svc.NATSURL())
	if err != nil {
		return Serving{}, err
	}
	defer nc.Close()
	sc, err := stream.NewClient(nc)
	if err != nil {
		return Serving{}, err
	}
	d, err := StartDaemon(ctx, cfg.Bin, cfg.Learner.Args)
	if err != nil {
		return Serving{}, err
	}
	defer d.Close()
	vc, err := d.Dial()
	if err != nil {
		return Serving{}, err
	}
	defer vc.Close()
	items := env.Config().Items
	as := &agentServer{ctx: ctx, c: sc}
	vs := &vwServer{c: vc, items: items, rng: rand.New(rand.NewPCG(1, drawsStream))}
	// The same users on both sides.
	al, vl := newClientLoop(env, 1), newClientLoop(env, 1)
	al.maxDecisions = agentSessionCap - 1
	round := cfg.Duration / time.Duration(cfg.Rounds)
	for range cfg.Rounds {
		if err := al.run(ctx, as, round); err != nil {
			return Serving{}, fmt.Errorf("vw: serve: %w", err)
		}
		if err := vl.run(ctx, vs, round); err != nil {
			return Serving{}, fmt.Errorf("vw: serve: %w", err)
		}
	}
	if v := svc.Agent().Version(); v > 0 {
		return Serving{}, fmt.Errorf("vw: serve: the agent released version %d during the measurement, so it measured more than serving", v)
	}
	return Serving{Seconds: cfg.Duration.Seconds(), Rounds: cfg.Rounds, Agent: al.side("DP agent act path (NATS)"), VW: vl.side("VW daemon --cb_explore_adf " + strings.Join(cfg.Learner.Args, " "))}, nil
}
