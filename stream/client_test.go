package stream

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLocalDPNoise(t *testing.T) {
	const seed = 42 // tests use a fixed seed; production uses NewSecureRand
	rng := rand.New(rand.NewPCG(seed, 0))
	scale := []float64{1, 3, 0}
	const z, rscale = 2.0, 0.5
	c := &Client{}
	if err := WithLocalDP(scale, rscale, z, rng)(c); err != nil {
		t.Fatal(err)
	}
	obs := []float64{10, -5, 7}
	reward := 1.0
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
			d := r.Obs[i] - obs[i]
			sum[i] += d
			sum2[i] += d * d
		}
		d := *r.Reward - reward
		sum[3] += d
		sum2[3] += d * d
	}
	if obs[0] != 10 {
		t.Fatal("caller's observation modified")
	}
	wantStd := []float64{z * scale[0], z * scale[1], 0, z * rscale}
	for i, w := range wantStd {
		mean := sum[i] / n
		std := math.Sqrt(sum2[i]/n - mean*mean)
		// mean: 5 standard errors; std: 5% (its standard error is ~0.7%).
		if math.Abs(mean) > 5*w/math.Sqrt(n)+1e-12 || math.Abs(std-w) > 0.05*w+1e-12 {
			t.Errorf("component %d: noise mean %.4f std %.4f, want 0 and %.4f", i, mean, std, w)
		}
	}
}

func TestLocalDPFirstStepAndEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := &Client{}
	if err := WithLocalDP([]float64{1}, 1, 1, rng)(c); err != nil {
		t.Fatal(err)
	}
	b, err := c.encodeAct(ActRequest{Session: "s", User: "u", Obs: []float64{0}})
	if err != nil || strings.Contains(string(b), "reward") {
		t.Fatalf("%s %v", b, err)
	}
	if _, err := c.encodeAct(ActRequest{Session: "s", User: "u", Obs: []float64{0, 1}}); err == nil {
		t.Fatal("obs length differing from the scales accepted")
	}
}

func TestWithLocalDPValidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, opt := range map[string]ClientOption{
		"no scales":  WithLocalDP(nil, 1, 1, rng),
		"neg scale":  WithLocalDP([]float64{-1}, 1, 1, rng),
		"nan scale":  WithLocalDP([]float64{math.NaN()}, 1, 1, rng),
		"inf reward": WithLocalDP([]float64{1}, math.Inf(1), 1, rng),
		"zero z":     WithLocalDP([]float64{1}, 1, 0, rng),
		"nil rng":    WithLocalDP([]float64{1}, 1, 1, nil),
	} {
		if err := opt(&Client{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
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
