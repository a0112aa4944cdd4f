package stream

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"dprl/ledger/accountant"
)

func TestLocalDPNoise(t *testing.T) {
	const seed = 42 // tests use a fixed seed; production uses NewSecureRand
	rng := rand.New(rand.NewPCG(seed, 0))
	const z = 2.0
	cfg := LocalDP{ObsLow: []float64{-10, -5, 7}, ObsHigh: []float64{10, 1, 7}, RewardLow: 0, RewardHigh: 0.5, Z: z, Delta: 1e-5}
	c := &Client{}
	if err := WithLocalDP(cfg, rng)(c); err != nil {
		t.Fatal(err)
	}
	// Component 1 lies above its range and the reward below: both are
	// clipped before the noise; component 2 has zero width: no noise.
	obs := []float64{3, 4, 7}
	reward := -1.0
	clipped := []float64{3, 1, 7, 0}
	const n = 20000
	var sum, sum2 [4]float64
	for range n {
		b, err := c.encodeAct(ActRequest{Session: "s", User: "u", Obs: obs, Reward: &reward})
		if err != nil {
			t.Fatal(err)
		}
		r, err := DecodeAct(b, Limits{}, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i := range obs {
			d := r.Obs[i] - clipped[i]
			sum[i] += d
			sum2[i] += d * d
		}
		d := *r.Reward - clipped[3]
		sum[3] += d
		sum2[3] += d * d
	}
	if obs[1] != 4 || reward != -1 {
		t.Fatal("caller's values modified")
	}
	wantStd := []float64{z * 20, z * 6, 0, z * 0.5}
	for i, w := range wantStd {
		mean := sum[i] / n
		std := math.Sqrt(sum2[i]/n - mean*mean)
		// mean: 5 standard errors; std: 5% (its standard error is ~0.7%).
		if math.Abs(mean) > 5*w/math.Sqrt(n)+1e-12 || math.Abs(std-w) > 0.05*w+1e-12 {
			t.Errorf("component %d: noise mean %.4f std %.4f around the clipped value, want 0 and %.4f", i, mean, std, w)
		}
	}
}

// TestLocalDPSetting checks what the client reports for its guarantee: a
// copy of its setting and the number of noised values per step (zero-width
// values do not count), from which accountant.NewLocalGaussian computes the
// epsilons (tested in package accountant).
func TestLocalDPSetting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := &Client{}
	if _, _, ok := c.LocalDP(); ok {
		t.Fatal("local DP reported when off")
	}
	cfg := LocalDP{ObsLow: []float64{-1, -1, 0, -2}, ObsHigh: []float64{1, 1, 0, 2}, RewardLow: 0, RewardHigh: 1, Z: 4, Delta: 1e-5}
	if err := WithLocalDP(cfg, rng)(c); err != nil {
		t.Fatal(err)
	}
	got, values, ok := c.LocalDP()
	if !ok || !reflect.DeepEqual(got, cfg) || values != 4 {
		t.Fatalf("LocalDP() = %+v, %d, %v, want %+v, 4 (3 observation components of non-zero width and the reward), true", got, values, ok, cfg)
	}
	got.ObsLow[0] = 5
	if again, _, _ := c.LocalDP(); again.ObsLow[0] != -1 {
		t.Error("LocalDP returns the client's own slices")
	}
	g, err := accountant.NewLocalGaussian(got.Z, got.Delta, values)
	if err != nil {
		t.Fatal(err)
	}
	want, err := accountant.GaussianEpsilon(4/math.Sqrt(4), 1e-5)
	if err != nil || g.PerStepEpsilon != want {
		t.Errorf("per step %v, want %v (%v)", g.PerStepEpsilon, want, err)
	}
}

func TestLocalDPFirstStepAndEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := &Client{}
	if err := WithLocalDP(LocalDP{ObsLow: []float64{-1}, ObsHigh: []float64{1}, RewardHigh: 1, Z: 1, Delta: 1e-5}, rng)(c); err != nil {
		t.Fatal(err)
	}
	b, err := c.encodeAct(ActRequest{Session: "s", User: "u", Obs: []float64{0}})
	if err != nil || strings.Contains(string(b), "reward") {
		t.Fatalf("%s %v", b, err)
	}
	if _, err := c.encodeAct(ActRequest{Session: "s", User: "u", Obs: []float64{0, 1}}); err == nil {
		t.Fatal("obs length differing from the bounds accepted")
	}
	// Non-finite values are refused, not clipped into range.
	inf := math.Inf(1)
	for _, req := range []ActRequest{
		{Session: "s", User: "u", Obs: []float64{math.NaN()}},
		{Session: "s", User: "u", Obs: []float64{inf}},
		{Session: "s", User: "u", Obs: []float64{0}, Reward: &inf},
	} {
		if _, err := c.encodeAct(req); !errors.Is(err, ErrNonFinite) {
			t.Errorf("%+v: %v, want ErrNonFinite", req, err)
		}
	}
	if _, err := c.EndDetail(context.Background(), "s", math.Inf(-1), true); !errors.Is(err, ErrNonFinite) {
		t.Errorf("End with -Inf: %v, want ErrNonFinite", err)
	}
}

func TestWithLocalDPValidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ok := LocalDP{ObsLow: []float64{-1}, ObsHigh: []float64{1}, RewardLow: 0, RewardHigh: 1, Z: 1, Delta: 1e-5}
	if err := WithLocalDP(ok, rng)(&Client{}); err != nil {
		t.Fatal(err)
	}
	with := func(f func(*LocalDP)) LocalDP {
		c := ok
		c.ObsLow, c.ObsHigh = append([]float64(nil), ok.ObsLow...), append([]float64(nil), ok.ObsHigh...)
		f(&c)
		return c
	}
	for name, cfg := range map[string]LocalDP{
		"no bounds":         with(func(c *LocalDP) { c.ObsLow, c.ObsHigh = nil, nil }),
		"lengths differ":    with(func(c *LocalDP) { c.ObsHigh = []float64{1, 2} }),
		"inverted obs":      with(func(c *LocalDP) { c.ObsLow[0] = 2 }),
		"NaN obs bound":     with(func(c *LocalDP) { c.ObsHigh[0] = math.NaN() }),
		"Inf obs bound":     with(func(c *LocalDP) { c.ObsLow[0] = math.Inf(-1) }),
		"inverted reward":   with(func(c *LocalDP) { c.RewardLow = 2 }),
		"Inf reward":        with(func(c *LocalDP) { c.RewardHigh = math.Inf(1) }),
		"zero z":            with(func(c *LocalDP) { c.Z = 0 }),
		"Inf z":             with(func(c *LocalDP) { c.Z = math.Inf(1) }),
		"zero delta":        with(func(c *LocalDP) { c.Delta = 0 }),
		"delta 1":           with(func(c *LocalDP) { c.Delta = 1 }),
		"overflowing noise": with(func(c *LocalDP) { c.ObsLow[0], c.ObsHigh[0], c.Z = -math.MaxFloat64, math.MaxFloat64, 2 }),
	} {
		if err := WithLocalDP(cfg, rng)(&Client{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := WithLocalDP(ok, nil)(&Client{}); err == nil {
		t.Error("nil rng accepted")
	}
}

func TestNewSecureRand(t *testing.T) {
	a, err := NewSecureRand()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSecureRand()
	if a.Uint64() == b.Uint64() {
		t.Fatal("two secure generators agree")
	}
}

func TestNewClientValidates(t *testing.T) {
	if _, err := NewClient(nil); err == nil {
		t.Fatal("nil conn accepted")
	}
	s := runServer(t, 0)
	nc := connect(t, s)
	if _, err := NewClient(nc, WithTimeout(0)); err == nil {
		t.Fatal("zero timeout accepted")
	}
	if _, err := NewClient(nc, WithPrefix("")); err == nil {
		t.Fatal("empty prefix accepted")
	}
	c, _ := NewClient(nc)
	if err := c.End(context.Background(), "s", math.NaN(), true); err == nil {
		t.Fatal("NaN reward sent")
	}
}

// TestClientShuttingDown: an agent's shutting_down reply reaches the
// client's caller as a typed error, on act and on end alike, told apart
// from other codes and from a transport failure.
func TestClientShuttingDown(t *testing.T) {
	stopping := func() error { return Errorf(CodeShuttingDown, "agent: shutting down") }
	nc, _ := serve(t, HandlerFuncs{
		ActFunc: func(context.Context, ActRequest) (ActReply, error) { return ActReply{}, stopping() },
		EndFunc: func(context.Context, EndRequest) (EndReply, error) { return EndReply{}, stopping() },
	}, Limits{})
	c, err := NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	_, actErr := c.Act(context.Background(), "s", "u", []float64{1, 2, 3}, 0, true)
	_, endErr := c.EndAs(context.Background(), "s", "u", 1, true)
	for _, err := range []error{actErr, endErr} {
		var e *Error
		if !errors.Is(err, ErrShuttingDown) || errors.Is(err, ErrInternal) || !errors.As(err, &e) || e.Code != CodeShuttingDown {
			t.Errorf("%v: want a *Error with code shutting_down", err)
		}
	}
}
