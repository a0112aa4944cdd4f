package lincb

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dprl/ledger/accountant"
	"dprl/noise"
)

func testConfig() Config { return DefaultConfig(3, 4, 2) }

func TestConfigValidate(t *testing.T) {
	if err := testConfig().Validate(); err != nil {
		t.Fatalf("default: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"one action", func(c *Config) { c.Actions = 1 }, "actions 1"},
		{"no dim", func(c *Config) { c.Dim = 0 }, "dim 0"},
		{"clip", func(c *Config) { c.FeatureClip = math.NaN() }, "feature clip"},
		{"range", func(c *Config) { c.RewardLow, c.RewardHigh = 1, 1 }, "reward range"},
		{"gram", func(c *Config) { c.GramWeight = 0 }, "gram weight"},
		{"block", func(c *Config) { c.FirstBlock = 0 }, "first block"},
		{"growth", func(c *Config) { c.Growth = 0.5 }, "growth"},
		{"gamma", func(c *Config) { c.Gamma = math.Inf(1) }, "gamma"},
		{"noise", func(c *Config) { c.NoiseMultiplier = -1 }, "noise multiplier"},
	} {
		c := testConfig()
		tc.mod(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrConfig naming %q", tc.name, err, tc.want)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
}

// One record's contribution stays within the sensitivity whatever it
// holds, and an invalid record contributes nothing.
func TestContributionBounded(t *testing.T) {
	c := testConfig()
	c.GramWeight = 0.7
	u := make([]float64, c.Stride())
	phi := make([]float64, c.Dim)
	r := rand.New(rand.NewPCG(1, 2))
	huge := []float64{1e308, -1e308, 1e-308, 3}
	for i := range 20000 {
		x := make([]float64, c.Dim)
		for j := range x {
			switch i % 4 {
			case 0:
				x[j] = r.NormFloat64()
			case 1:
				x[j] = r.NormFloat64() * 1e150
			case 2:
				x[j] = huge[r.IntN(len(huge))]
			default:
				x[j] = math.Ldexp(r.Float64(), r.IntN(2000)-1000)
			}
		}
		y := []float64{0, 1, -1e300, 1e300, r.Float64()}[i%5]
		if !c.Contribution(u, x, i%c.Actions, y, phi) {
			t.Fatalf("x %v y %v refused", x, y)
		}
		if n := math.Sqrt(sumSquares(u)); !(n <= c.Sensitivity()*(1+1e-12)) {
			t.Fatalf("x %v y %v: contribution norm %v above %v", x, y, n, c.Sensitivity())
		}
	}
	for _, tc := range []struct {
		name string
		x    []float64
		a    int
		y    float64
	}{
		{"NaN feature", []float64{math.NaN(), 0, 0, 0}, 0, 1},
		{"infinite feature", []float64{0, math.Inf(-1), 0, 0}, 0, 1},
		{"short", []float64{1, 2}, 0, 1},
		{"NaN reward", []float64{1, 2, 3, 4}, 0, math.NaN()},
		{"action", []float64{1, 2, 3, 4}, 3, 1},
		{"negative action", []float64{1, 2, 3, 4}, -1, 1},
	} {
		u[0] = 7
		if c.Contribution(u, tc.x, tc.a, tc.y, phi) || sumSquares(u) != 0 {
			t.Errorf("%s: used, or a non-zero contribution %v", tc.name, u)
		}
	}
}

// Without noise the learner recovers a linear reward model exactly.
func TestRecoversLinearModel(t *testing.T) {
	c := testConfig()
	c.RewardLow, c.RewardHigh = -2, 4
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	truth := make([]float64, c.Actions*c.Dim)
	for i := range truth {
		truth[i] = 0.5 * r.NormFloat64()
	}
	x := make([]float64, c.Dim)
	for range c.FirstBlock {
		for j := range x {
			x[j] = r.Float64() - 0.5 // norm <= 1 < clip 2: phi = x/2
		}
		a := r.IntN(c.Actions)
		s := 0.0
		for j, v := range x {
			s += truth[a*c.Dim+j] * v / 2
		}
		if !l.Observe(x, a, 1+3*s) { // mid 1, half 3
			t.Fatal("record refused")
		}
	}
	if !l.Full() {
		t.Fatalf("block not full after %d users of %d", l.InBlock(), l.BlockSize())
	}
	if n, err := l.Release(nil); err != nil || n != c.FirstBlock {
		t.Fatalf("release: %d users, %v", n, err)
	}
	for a := range c.Actions {
		for j, v := range l.Model().Theta(a) {
			if math.Abs(v-truth[a*c.Dim+j]) > 1e-6 {
				t.Errorf("theta[%d][%d] = %v, want %v", a, j, v, truth[a*c.Dim+j])
			}
		}
	}
	pred := make([]float64, c.Actions)
	l.Model().Predict(pred, x)
	for a := range pred {
		s := 0.0
		for j, v := range x {
			s += truth[a*c.Dim+j] * v / 2
		}
		if math.Abs(pred[a]-(1+3*s)) > 1e-6 {
			t.Errorf("prediction %d: %v, want %v", a, pred[a], 1+3*s)
		}
	}
}

// The blocks follow the public schedule.
func TestSchedule(t *testing.T) {
	c := testConfig()
	c.FirstBlock, c.Growth, c.MaxBlock = 10, 1.5, 30
	l, _ := New(c)
	var got []int
	for range 6 {
		got = append(got, l.BlockSize())
		n, err := l.Release(nil)
		if err != nil || n != got[len(got)-1] {
			t.Fatalf("release %d users, %v", n, err)
		}
	}
	want := []int{10, 15, 22, 30, 30, 30}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("block sizes %v, want %v", got, want)
		}
	}
	if l.Blocks() != 6 || l.Users() != 137 {
		t.Errorf("%d blocks, %d users; want 6, 137", l.Blocks(), l.Users())
	}
	if g := l.Model().Gamma(); math.Abs(g-c.Gamma*math.Sqrt(137)) > 1e-9 {
		t.Errorf("gamma %v, want %v", g, c.Gamma*math.Sqrt(137))
	}
}

// A private release adds noise of standard deviation z Delta to every
// coordinate, from the exact sampler; a private release without a
// generator is refused.
func TestReleaseNoise(t *testing.T) {
	c := DefaultConfig(10, 8, 1)
	c.NoiseMultiplier = 2
	l, _ := New(c)
	if _, err := l.Release(nil); err == nil {
		t.Fatal("a private release without a noise generator was accepted")
	}
	g := noise.NewGaussian(rand.New(rand.NewPCG(5, 6)))
	const releases = 20
	for range releases {
		if _, err := l.Release(g); err != nil {
			t.Fatal(err)
		}
	}
	// The released sum of 20 noisy zero blocks: variance 20 sigma^2 per
	// coordinate, 4400 coordinates; the sample std is within 5% with
	// overwhelming probability.
	n, s := float64(len(l.released)), 0.0
	for _, v := range l.released {
		s += v * v
	}
	std, want := math.Sqrt(s/n), math.Sqrt(releases)*c.Sigma()
	if math.Abs(std/want-1) > 0.05 {
		t.Errorf("noise std %v, want %v", std, want)
	}
	if want := 2 * math.Sqrt2; math.Abs(c.Sigma()-want) > 1e-12 {
		t.Errorf("sigma %v, want %v", c.Sigma(), want)
	}
}

func TestEpsilon(t *testing.T) {
	z, err := NoiseFor(1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	c := testConfig()
	c.NoiseMultiplier = z
	eps, err := c.Epsilon(1e-5)
	if err != nil || !(eps <= 1) || eps < 0.999 {
		t.Errorf("epsilon %v (%v), want just below 1", eps, err)
	}
	if e, _ := accountant.GaussianEpsilon(z, 1e-5); e != eps {
		t.Errorf("epsilon %v, the analytic Gaussian's %v", eps, e)
	}
	c.NoiseMultiplier = 0
	if e, err := c.Epsilon(1e-5); err != nil || !math.IsInf(e, 1) {
		t.Errorf("non-private epsilon %v, %v; want +Inf", e, err)
	}
}

func TestProbs(t *testing.T) {
	c := testConfig()
	l, _ := New(c)
	p := make([]float64, c.Actions)
	x := []float64{0.3, -0.2, 0.1, 0.9}
	l.Model().Probs(p, x)
	for _, v := range p {
		if math.Abs(v-1.0/3) > 1e-15 {
			t.Fatalf("before any release %v, want uniform", p)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range c.FirstBlock {
		x[0] = 1 // an intercept; the norm stays below the clip
		for j := 1; j < len(x); j++ {
			x[j] = r.Float64() - 0.5
		}
		a := r.IntN(c.Actions)
		l.Observe(x, a, float64(a)/2) // action 2 is best everywhere
	}
	if _, err := l.Release(nil); err != nil {
		t.Fatal(err)
	}
	x = []float64{1, -0.2, 0.1, 0.4}
	l.Model().Probs(p, x)
	sum := 0.0
	for _, v := range p {
		sum += v
		if !(v >= 0) {
			t.Fatalf("probabilities %v", p)
		}
	}
	if math.Abs(sum-1) > 1e-12 || !(p[2] > 0.9) || !(p[0] < p[1]) {
		t.Errorf("probabilities %v: want action 2 most probable, 0 least, sum 1", p)
	}
	gamma := l.Model().Gamma()
	if want := 1 / (3 + gamma*1); math.Abs(p[0]-want) > 1e-6 {
		t.Errorf("p[0] = %v, want 1/(A + gamma gap) = %v", p[0], want)
	}
	l.Model().Probs(p, []float64{math.NaN(), 0, 0, 0})
	if math.Abs(p[0]-1.0/3) > 1e-15 || math.Abs(p[2]-1.0/3) > 1e-15 {
		t.Errorf("invalid features: %v, want uniform", p)
	}
	if n := testing.AllocsPerRun(100, func() { l.Model().Probs(p, x) }); n != 0 {
		t.Errorf("Probs allocates %v per call", n)
	}
	if n := testing.AllocsPerRun(100, func() { l.Observe(x, 1, 1) }); n != 0 {
		t.Errorf("Observe allocates %v per call", n)
	}
}

func BenchmarkProbs(b *testing.B) {
	c := DefaultConfig(10, 8, math.Sqrt(3))
	l, _ := New(c)
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float64, 8)
	for range c.FirstBlock {
		for j := range x {
			x[j] = r.Float64()
		}
		l.Observe(x, r.IntN(10), float64(r.IntN(2)))
	}
	l.Release(nil)
	p := make([]float64, 10)
	b.ReportAllocs()
	for b.Loop() {
		l.Model().Probs(p, x)
	}
}

func BenchmarkObserve(b *testing.B) {
	l, _ := New(DefaultConfig(10, 8, math.Sqrt(3)))
	x := []float64{1, 0, 0, 0, 1, 0.3, -0.5, 0.2}
	b.ReportAllocs()
	for b.Loop() {
		l.Observe(x, 3, 1)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	c := DefaultConfig(3, 4, 2)
	c.NoiseMultiplier = 1.5
	l, _ := New(c)
	r := rand.New(rand.NewPCG(9, 9))
	g := noise.NewGaussian(rand.New(rand.NewPCG(10, 10)))
	x := make([]float64, 4)
	for range 2 {
		for range c.FirstBlock {
			for j := range x {
				x[j] = r.NormFloat64()
			}
			l.Observe(x, r.IntN(3), float64(r.IntN(2)))
		}
		if _, err := l.Release(g); err != nil {
			t.Fatal(err)
		}
	}
	b, err := MarshalSnapshot(Snapshot{Version: 7, Config: c, Blocks: l.Blocks(), Users: l.Users(), Stats: l.released})
	if err != nil {
		t.Fatal(err)
	}
	if !IsSnapshot(b) {
		t.Fatalf("IsSnapshot(%.60s) false", b)
	}
	s, err := UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Model()
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := make([]float64, 3), make([]float64, 3)
	for range 100 {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		m.Probs(p1, x)
		l.Model().Probs(p2, x)
		for a := range p1 {
			if p1[a] != p2[a] {
				t.Fatalf("decoded model serves %v, the learner's %v", p1, p2)
			}
		}
	}
	for _, bad := range []struct{ name, from, to string }{
		{"format", SnapshotFormat, "dprl.lincb.v0"},
		{"unknown field", `"blocks":`, `"extra":1,"blocks":`},
		{"blocks above version", `"version":7`, `"version":1`},
		{"config", `"actions":3`, `"actions":1`},
		{"stats length", `"stats":[`, `"stats":[1,`},
	} {
		nb := bytes.Replace(b, []byte(bad.from), []byte(bad.to), 1)
		if _, err := UnmarshalSnapshot(nb); !errors.Is(err, ErrSnapshot) {
			t.Errorf("%s: %v, want ErrSnapshot", bad.name, err)
		}
	}
}

func FuzzUnmarshalSnapshot(f *testing.F) {
	c := DefaultConfig(2, 1, 1)
	b, _ := MarshalSnapshot(Snapshot{Version: 1, Config: c, Blocks: 1, Users: 5, Stats: make([]float64, 4)})
	f.Add(b)
	f.Add([]byte(`{"format":"dprl.lincb.v1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := UnmarshalSnapshot(b)
		if err != nil {
			return
		}
		if _, err := s.Model(); err != nil {
			t.Fatalf("a valid snapshot's model: %v", err)
		}
		if _, err := MarshalSnapshot(s); err != nil {
			t.Fatalf("a decoded snapshot does not encode: %v", err)
		}
	})
}

// BlockSize, UsersBefore and BlockOf agree with the schedule the learner
// follows.
func TestScheduleFunctions(t *testing.T) {
	for _, c := range []Config{
		{FirstBlock: 1000, Growth: 1.3},
		{FirstBlock: 10, Growth: 1.5, MaxBlock: 30},
		{FirstBlock: 7, Growth: 1},
		{FirstBlock: 1, Growth: 1.2, MaxBlock: 5},
	} {
		users := 0
		for k := range 40 {
			if got := c.UsersBefore(k); got != users {
				t.Fatalf("%+v: UsersBefore(%d) = %d, want %d", c, k, got, users)
			}
			n := c.BlockSize(k)
			for _, u := range []int{users, users + n/2, users + n - 1} {
				if got := c.BlockOf(u); got != k {
					t.Fatalf("%+v: BlockOf(%d) = %d, want %d", c, u, got, k)
				}
			}
			users += n
		}
	}
}
