package stream

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"dprl/sims"
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

// localDP is the client-side Gaussian mechanism. rng is not safe for
// concurrent use, hence mu.
type localDP struct {
	mu       sync.Mutex
	obsStd   []float64
	rewStd   float64
	rng      *rand.Rand
	obsNoisy []float64
}

// WithLocalDP switches on local differential privacy: before anything leaves
// the client, Gaussian noise of standard deviation z*obsScale[i] is added to
// observation component i and noise of standard deviation z*rewardScale to
// each reward (the course slides' LDP; a natural scale is each component's
// interquartile range). obsScale's length must be the observation length;
// scales must be finite and >= 0; z must be > 0 (there is no default noise);
// rng must not be nil — use NewSecureRand in production. The client copies
// obsScale and owns rng from then on.
func WithLocalDP(obsScale []float64, rewardScale float64, z float64, rng *rand.Rand) ClientOption {
	return func(c *Client) error {
		var errs []error
		if len(obsScale) == 0 {
			errs = append(errs, errors.New("obsScale empty"))
		}
		for i, s := range obsScale {
			if !(s >= 0) || math.IsInf(s, 0) {
				errs = append(errs, fmt.Errorf("obsScale[%d] = %v not finite and >= 0", i, s))
			}
		}
		if !(rewardScale >= 0) || math.IsInf(rewardScale, 0) {
			errs = append(errs, fmt.Errorf("rewardScale %v not finite and >= 0", rewardScale))
		}
		if !(z > 0) || math.IsInf(z, 0) {
			errs = append(errs, fmt.Errorf("z %v not finite and > 0", z))
		}
		if rng == nil {
			errs = append(errs, errors.New("nil rng"))
		}
		if len(errs) > 0 {
			return fmt.Errorf("stream: WithLocalDP: %w", errors.Join(errs...))
		}
		d := &localDP{obsStd: make([]float64, len(obsScale)), rewStd: z * rewardScale, rng: rng}
		for i, s := range obsScale {
			d.obsStd[i] = z * s
		}
		c.ldp = d
		return nil
	}
}

// NewSecureRand returns a *rand.Rand drawing from ChaCha8 seeded with 32
// bytes from crypto/rand: the source for production noise. The result is not
// safe for concurrent use.
func NewSecureRand() (*rand.Rand, error) {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("stream: seed: %w", err)
	}
	return rand.New(rand.NewChaCha8(seed)), nil
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

func (c *Client) request(ctx context.Context, subj string, body []byte) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	m, err := c.nc.RequestWithContext(ctx, subj, body)
	if err != nil {
		return nil, fmt.Errorf("stream: %s: %w", subj, err)
	}
	return m.Data, nil
}

// Act sends one step of a session and returns the action to take. reward is
// the reward of the previous action and is not sent when first is true. With
// local DP on, obs and reward are noised before encoding. Error replies are
// returned as *Error; transport failures (timeout, no responders) wrap the
// nats.go or context error.
func (c *Client) Act(ctx context.Context, session, user string, obs []float64, reward float64, first bool) (sims.Action, error) {
	req := ActRequest{Session: session, User: user, Obs: obs}
	if !first {
		req.Reward = &reward
	}
	body, err := c.encodeAct(req)
	if err != nil {
		return sims.Action{}, err
	}
	data, err := c.request(ctx, actSubject(c.prefix), body)
	if err != nil {
		return sims.Action{}, err
	}
	rep, err := DecodeActReply(data)
	if err != nil {
		return sims.Action{}, err
	}
	return rep.Action, nil
}

func (c *Client) encodeAct(req ActRequest) ([]byte, error) {
	d := c.ldp
	if d == nil {
		return AppendActRequest(nil, req)
	}
	if len(req.Obs) != len(d.obsStd) {
		return nil, Errorf(CodeObsDim, "obs: want %d elements (local DP scales), got %d", len(d.obsStd), len(req.Obs))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.obsNoisy = d.obsNoisy[:0]
	for i, x := range req.Obs {
		d.obsNoisy = append(d.obsNoisy, x+d.obsStd[i]*d.rng.NormFloat64())
	}
	req.Obs = d.obsNoisy
	if req.Reward != nil {
		r := *req.Reward + d.rewStd*d.rng.NormFloat64()
		req.Reward = &r
	}
	return AppendActRequest(nil, req)
}

// End ends a session with its last reward (noised under local DP) and
// whether it ended in a terminal state. An error reply is returned as *Error.
func (c *Client) End(ctx context.Context, session string, reward float64, terminal bool) error {
	_, err := c.EndDetail(ctx, session, reward, terminal)
	return err
}

// EndDetail is End returning the agent's reply (whether the session was used).
func (c *Client) EndDetail(ctx context.Context, session string, reward float64, terminal bool) (EndReply, error) {
	if d := c.ldp; d != nil {
		d.mu.Lock()
		reward += d.rewStd * d.rng.NormFloat64()
		d.mu.Unlock()
	}
	body, err := AppendEndRequest(nil, EndRequest{Session: session, Reward: reward, Terminal: terminal})
	if err != nil {
		return EndReply{}, err
	}
	data, err := c.request(ctx, endSubject(c.prefix), body)
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
