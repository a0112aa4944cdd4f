package stream

import (
	"dprl/noise"

	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"dprl/internal/rng"
	"dprl/space"
)

// ClientOption configures a Client.
type ClientOption func(*Client) error

// Client is the Go SDK of protocol v1: what a simulated or real user
// population uses to reach an agent. It satisfies the sims.Agent interface.
// It is safe for concurrent use.
type Client struct {
	nc      *nats.Conn
	prefix  string
	timeout time.Duration
	ldp     *localDP
}

// WithPrefix sets the subject prefix. The default is DefaultPrefix.
func WithPrefix(prefix string) ClientOption {
	return func(c *Client) error {
		if prefix == "" {
			return errors.New("stream: WithPrefix: empty prefix")
		}
		c.prefix = prefix
		return nil
	}
}

// WithTimeout sets the timeout of a call whose context has no deadline.
// The default is 5s.
func WithTimeout(d time.Duration) ClientOption {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("stream: WithTimeout: %v <= 0", d)
		}
		c.timeout = d
		return nil
	}
}

// LocalDP configures the client-side Gaussian mechanism of WithLocalDP.
// Every bound is public: fix it from the environment's specification, never
// from users' data.
type LocalDP struct {
	// ObsLow and ObsHigh bound each observation component: before it is
	// noised, component i is clipped to [ObsLow[i], ObsHigh[i]]. Finite,
	// ObsLow[i] <= ObsHigh[i]; a zero-width component is sent as its bound,
	// noiselessly, and leaks nothing.
	ObsLow, ObsHigh []float64
	// RewardLow and RewardHigh bound each reward likewise.
	RewardLow, RewardHigh float64
	// Z is the noise multiplier: a value whose range has width w = high -
	// low receives Gaussian noise of standard deviation Z w. Finite, > 0.
	Z float64
	// Delta is the delta at which the guarantee is reported
	// (accountant.NewLocalGaussian), in (0, 1).
	Delta float64
}

// localDP is the client-side Gaussian mechanism. rng is not safe for
// concurrent use, hence mu.
type localDP struct {
	mu       sync.Mutex
	obsLow   []float64
	obsHigh  []float64
	obsStd   []float64
	rewLow   float64
	rewHigh  float64
	rewStd   float64
	rng      *rand.Rand
	gauss    *noise.Gaussian // draws from rng
	one      [1]float64
	obsNoisy []float64
	cfg      LocalDP // a copy, for Client.LocalDP
	values   int     // noised values per step
}

// noisy returns x + N(0, std^2) from the exact sampler (package noise: the
// value is exactly a Gaussian mechanism's output rounded to a grid fixed by
// std): the only place the client samples noise (d.mu held).
func (d *localDP) noisy(x, std float64) float64 {
	if std == 0 {
		return x
	}
	d.one[0] = x
	d.gauss.Add(d.one[:], std)
	return d.one[0]
}

// reward clips and noises one reward (d.mu held).
func (d *localDP) reward(r float64) float64 {
	return d.noisy(min(max(r, d.rewLow), d.rewHigh), d.rewStd)
}

// WithLocalDP switches on local differential privacy (the course slides'
// LDP, bounded): before anything leaves the client, each observation
// component and each reward is clipped to its public range and receives
// Gaussian noise of standard deviation cfg.Z times the range's width, so
// that each value is (epsilon, delta)-DP with the epsilon
// accountant.NewLocalGaussian computes from Client.LocalDP. A NaN or ±Inf value is refused (CodeNonFinite), not clipped.
// rng must not be nil — use NewSecureRand in production. The client copies
// cfg's slices and owns rng from then on.
func WithLocalDP(cfg LocalDP, rng *rand.Rand) ClientOption {
	return func(c *Client) error {
		var errs []error
		if len(cfg.ObsLow) == 0 || len(cfg.ObsLow) != len(cfg.ObsHigh) {
			errs = append(errs, fmt.Errorf("observation bounds: %d low, %d high, want the same non-zero length", len(cfg.ObsLow), len(cfg.ObsHigh)))
		} else {
			for i := range cfg.ObsLow {
				if lo, hi := cfg.ObsLow[i], cfg.ObsHigh[i]; !finiteRange(lo, hi) {
					errs = append(errs, fmt.Errorf("observation %d: range [%v, %v], want finite low <= high", i, lo, hi))
				}
			}
		}
		if !finiteRange(cfg.RewardLow, cfg.RewardHigh) {
			errs = append(errs, fmt.Errorf("reward range [%v, %v], want finite low <= high", cfg.RewardLow, cfg.RewardHigh))
		}
		if !(cfg.Z > 0) || math.IsInf(cfg.Z, 0) {
			errs = append(errs, fmt.Errorf("z %v not finite and > 0", cfg.Z))
		}
		if !(cfg.Delta > 0 && cfg.Delta < 1) {
			errs = append(errs, fmt.Errorf("delta %v, want 0 < delta < 1", cfg.Delta))
		}
		if rng == nil {
			errs = append(errs, errors.New("nil rng"))
		}
		if len(errs) > 0 {
			return fmt.Errorf("stream: WithLocalDP: %w", errors.Join(errs...))
		}
		n := len(cfg.ObsLow)
		d := &localDP{obsLow: append([]float64(nil), cfg.ObsLow...), obsHigh: append([]float64(nil), cfg.ObsHigh...),
			obsStd: make([]float64, n), rewLow: cfg.RewardLow, rewHigh: cfg.RewardHigh, rng: rng}
		d.gauss = noise.NewGaussian(rng)
		values := 0
		for i := range n {
			w := d.obsHigh[i] - d.obsLow[i]
			d.obsStd[i] = cfg.Z * w
			if w > 0 {
				values++
			}
		}
		if w := d.rewHigh - d.rewLow; w > 0 {
			d.rewStd = cfg.Z * w
			values++
		}
		for i, std := range append(append([]float64(nil), d.obsStd...), d.rewStd) {
			if math.IsInf(std, 0) {
				return fmt.Errorf("stream: WithLocalDP: value %d: noise standard deviation z x width overflows", i)
			}
		}
		d.cfg = LocalDP{ObsLow: append([]float64(nil), d.obsLow...), ObsHigh: append([]float64(nil), d.obsHigh...),
			RewardLow: cfg.RewardLow, RewardHigh: cfg.RewardHigh, Z: cfg.Z, Delta: cfg.Delta}
		d.values = values
		c.ldp = d
		return nil
	}
}

func finiteRange(lo, hi float64) bool {
	return !math.IsNaN(lo) && !math.IsNaN(hi) && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) && lo <= hi
}

// LocalDP returns the client's local DP setting (a copy) and the number of
// values it noises per step (observation components and reward of non-zero
// width; zero-width ones are sent as their bound and leak nothing), and
// false when WithLocalDP is off. Its guarantee is
// accountant.NewLocalGaussian(cfg.Z, cfg.Delta, valuesPerStep), which also
// says what the guarantee does not cover: the client sends the session's
// shape (its length, the terminal flag of End, the ids, the requests'
// timing and every action) as it is.
func (c *Client) LocalDP() (cfg LocalDP, valuesPerStep int, ok bool) {
	if c.ldp == nil {
		return LocalDP{}, 0, false
	}
	d := c.ldp
	cfg = d.cfg
	cfg.ObsLow, cfg.ObsHigh = append([]float64(nil), d.cfg.ObsLow...), append([]float64(nil), d.cfg.ObsHigh...)
	return cfg, d.values, true
}

// NewSecureRand returns a *rand.Rand drawing from ChaCha8 seeded with 32
// bytes from crypto/rand: the source for production noise. The result is not
// safe for concurrent use. The error is always nil (crypto/rand does not
// fail since Go 1.24); it stays for compatibility.
func NewSecureRand() (*rand.Rand, error) {
	return rng.Secure(), nil
}

// NewClient returns a client on nc. It starts nothing.
func NewClient(nc *nats.Conn, opts ...ClientOption) (*Client, error) {
	if nc == nil {
		return nil, errors.New("stream: NewClient: nil connection")
	}
	c := &Client{nc: nc, prefix: DefaultPrefix, timeout: 5 * time.Second}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// request sends body on op's session subject (see SessionToken), so that
// every request of one session reaches the process holding it; errors
// name op's plain subject, never the session.
func (c *Client) request(ctx context.Context, op, session string, body []byte) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	m, err := c.nc.RequestWithContext(ctx, sessionSubject(c.prefix, op, session), body)
	if err != nil {
		return nil, fmt.Errorf("stream: %s.v1.%s: %w", c.prefix, op, err)
	}
	return m.Data, nil
}

// Act sends one step of a session and returns the action to take. reward is
// the reward of the previous action and is not sent when first is true. With
// local DP on, obs and reward are clipped to their ranges and noised before
// encoding. Error replies are
// returned as *Error; transport failures (timeout, no responders) wrap the
// nats.go or context error.
func (c *Client) Act(ctx context.Context, session, user string, obs []float64, reward float64, first bool) (space.Action, error) {
	req := ActRequest{Session: session, User: user, Obs: obs}
	if !first {
		req.Reward = &reward
	}
	body, err := c.encodeAct(req)
	if err != nil {
		return space.Action{}, err
	}
	data, err := c.request(ctx, "act", session, body)
	if err != nil {
		return space.Action{}, err
	}
	rep, err := DecodeActReply(data)
	if err != nil {
		return space.Action{}, err
	}
	return rep.Action, nil
}

func (c *Client) encodeAct(req ActRequest) ([]byte, error) {
	d := c.ldp
	if d == nil {
		return AppendActRequest(nil, req)
	}
	if len(req.Obs) != len(d.obsStd) {
		return nil, Errorf(CodeObsDim, "obs: want %d elements (local DP bounds), got %d", len(d.obsStd), len(req.Obs))
	}
	for i, x := range req.Obs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, Errorf(CodeNonFinite, "obs[%d] = %v", i, x)
		}
	}
	if req.Reward != nil && (math.IsNaN(*req.Reward) || math.IsInf(*req.Reward, 0)) {
		return nil, Errorf(CodeNonFinite, "reward = %v", *req.Reward)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.obsNoisy = d.obsNoisy[:0]
	for i, x := range req.Obs {
		d.obsNoisy = append(d.obsNoisy, d.noisy(min(max(x, d.obsLow[i]), d.obsHigh[i]), d.obsStd[i]))
	}
	req.Obs = d.obsNoisy
	if req.Reward != nil {
		r := d.reward(*req.Reward)
		req.Reward = &r
	}
	return AppendActRequest(nil, req)
}

// End ends a session with its last reward (clipped and noised under local
// DP) and
// whether it ended in a terminal state. An error reply is returned as *Error.
// It does not name the session's user: the agent accepts that for a session
// opened with a user id only from the connection that opened it; EndAs
// names the user and works from any connection.
func (c *Client) End(ctx context.Context, session string, reward float64, terminal bool) error {
	_, err := c.EndAs(ctx, session, "", reward, terminal)
	return err
}

// EndDetail is End returning the agent's reply (whether the session was used).
func (c *Client) EndDetail(ctx context.Context, session string, reward float64, terminal bool) (EndReply, error) {
	return c.EndAs(ctx, session, "", reward, terminal)
}

// EndAs is EndDetail naming the user the session was opened with ("" for
// an anonymous session): the agent binds each session to its user and
// answers unknown_session to an end naming another.
func (c *Client) EndAs(ctx context.Context, session, user string, reward float64, terminal bool) (EndReply, error) {
	if d := c.ldp; d != nil {
		if math.IsNaN(reward) || math.IsInf(reward, 0) {
			return EndReply{}, Errorf(CodeNonFinite, "reward = %v", reward)
		}
		d.mu.Lock()
		reward = d.reward(reward)
		d.mu.Unlock()
	}
	body, err := AppendEndRequest(nil, EndRequest{Session: session, User: user, Reward: reward, Terminal: terminal})
	if err != nil {
		return EndReply{}, err
	}
	data, err := c.request(ctx, "end", session, body)
	if err != nil {
		return EndReply{}, err
	}
	return DecodeEndReply(data)
}

// WatchPolicy calls fn with every valid policy announcement (invalid ones
// are ignored) until the returned subscription is unsubscribed or drained.
// fn runs on the subscription's goroutine, one call at a time.
func (c *Client) WatchPolicy(fn func(PolicyAnnouncement)) (*nats.Subscription, error) {
	sub, err := c.nc.Subscribe(policySubject(c.prefix), func(m *nats.Msg) {
		if p, err := DecodePolicy(m.Data, Limits{}); err == nil {
			fn(p)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("stream: watch policy: %w", err)
	}
	return sub, nil
}
