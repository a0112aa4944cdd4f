package lsw

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFirstVisit(t *testing.T) {
	trajs := []Trajectory{
		{States: []int{0, 1, 0, 2}, Rewards: []float64{0, 1, 0, 5}}, // reward 5 is clipped to 1
		{States: []int{1}, Rewards: []float64{0.5}},
	}
	g := 0.5
	f, c := FirstVisit(trajs, 4, g, 0, 1)
	// Trajectory 1 returns: from t=0: 0 + .5*1 + .25*0 + .125*1 = 0.625;
	// from t=1 (first visit of 1): 1 + .5*0 + .25*1 = 1.25; from t=3: 1.
	want := []float64{0.625, (1.25 + 0.5) / 2, 1, 0}
	wantC := []int{1, 2, 1, 0}
	for s := range want {
		if math.Abs(f[s]-want[s]) > 1e-12 || c[s] != wantC[s] {
			t.Errorf("state %d: F %v count %d, want %v %d", s, f[s], c[s], want[s], wantC[s])
		}
	}
}

func TestPsiIsSmooth(t *testing.T) {
	// Psi^(1/2) must be a beta-smooth bound: for neighbouring datasets
	// (one trajectory added: some counts up by one) sqrt(Psi(X)) <=
	// e^beta sqrt(Psi(Y)) both ways.
	rng := rand.New(rand.NewPCG(1, 1))
	w := []float64{0.1, 0.3, 0.2, 0.4, 0}
	beta := 0.05
	for range 500 {
		c := make([]int, len(w))
		c2 := make([]int, len(w))
		for s := range c {
			c[s] = rng.IntN(30)
			c2[s] = c[s]
			if rng.IntN(2) == 0 {
				c2[s]++
			}
		}
		a, b := math.Sqrt(Psi(w, c, beta)), math.Sqrt(Psi(w, c2, beta))
		if a > math.Exp(beta)*b*(1+1e-12) || b > math.Exp(beta)*a*(1+1e-12) {
			t.Fatalf("counts %v -> %v: sqrt Psi %v, %v not within e^beta", c, c2, a, b)
		}
		// Psi bounds the squared local sensitivity factor at k = 0.
		var ls float64
		for s, ws := range w {
			m := float64(max(c[s], 1))
			ls += ws / (m * m)
		}
		if Psi(w, c, beta) < ls {
			t.Fatal("Psi below the local sensitivity")
		}
	}
}

// chain returns a small on-policy chain dataset: states 0..3, advance with
// probability 1/2, reward 1 on reaching state 4 (terminal).
func chain(rng *rand.Rand, n int) []Trajectory {
	out := make([]Trajectory, n)
	for i := range out {
		s := rng.IntN(4)
		var tr Trajectory
		for len(tr.States) < 200 {
			tr.States = append(tr.States, s)
			r := 0.0
			if rng.Float64() < 0.5 {
				s++
				if s == 4 {
					r = 1
				}
			}
			tr.Rewards = append(tr.Rewards, r)
			if s == 4 {
				break
			}
		}
		out[i] = tr
	}
	return out
}

func tabularPhi(n int) [][]float64 {
	phi := make([][]float64, n)
	for s := range phi {
		phi[s] = make([]float64, n)
		phi[s][s] = 1
	}
	return phi
}

func TestNoiseScaleMatchesFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	trajs := chain(rng, 200)
	w := []float64{0.25, 0.25, 0.25, 0.25, 0} // the terminal state has weight 0
	c := Config{Epsilon: 0.5, Delta: 1e-5, Gamma: 0.9, RewardLow: 0, RewardHigh: 1, Weights: w}
	res, diag, err := EstimateWithDiagnostics(tabularPhi(5), trajs, c, rng)
	if err != nil {
		t.Fatal(err)
	}
	// By hand: alpha = 5 sqrt(2 ln(2e5)) / 0.5, beta = 0.5 / (4 (5 + ln 2e5)),
	// W = 1 / 0.1, ||(Gamma^1/2 I)^+|| = 1/sqrt(0.25) = 2.
	alpha := 5 * math.Sqrt(2*math.Log(2e5)) / 0.5
	beta := 0.5 / (4 * (5 + math.Log(2e5)))
	_, counts := FirstVisit(trajs, 5, 0.9, 0, 1)
	psi := 0.0
	for k := 0; k <= 200; k++ {
		var s float64
		for i := range 4 {
			m := float64(max(counts[i]-k, 1))
			s += 0.25 / (m * m)
		}
		psi = math.Max(psi, math.Exp(-float64(k)*beta)*s)
	}
	want := alpha * 10 * 2 * math.Sqrt(psi)
	if math.Abs(diag.Sigma-want) > 1e-9*want || math.Abs(res.PinvNorm-2) > 1e-9 {
		t.Errorf("sigma %v (pinv %v), want %v", diag.Sigma, res.PinvNorm, want)
	}
	// The terminal state's weight is 0: its weight is 0 and it stays 0.
	if diag.NonPrivate[4] != 0 {
		t.Errorf("theta[4] = %v before noise", diag.NonPrivate[4])
	}
	// The noise has that standard deviation: 2000 releases.
	var sum, sumSq float64
	const draws = 2000
	for range draws {
		r, dg, _ := EstimateWithDiagnostics(tabularPhi(5), trajs, c, rng)
		e := r.Theta[1] - dg.NonPrivate[1]
		sum += e
		sumSq += e * e
	}
	std := math.Sqrt(sumSq/draws - (sum/draws)*(sum/draws))
	if math.Abs(std/want-1) > 0.06 {
		t.Errorf("empirical noise std %v, want %v", std, want)
	}
}

func TestConvergesToNonPrivate(t *testing.T) {
	// The error of the release shrinks as epsilon grows and as data grows;
	// the non-private fit is the first-visit value of each state.
	rng := rand.New(rand.NewPCG(3, 3))
	w := []float64{0.25, 0.25, 0.25, 0.25, 0}
	errAt := func(n int, eps float64) float64 {
		trajs := chain(rng, n)
		c := Config{Epsilon: eps, Delta: 1e-5, Gamma: 0.9, RewardLow: 0, RewardHigh: 1, Weights: w}
		var e float64
		for range 20 {
			r, dg, err := EstimateWithDiagnostics(tabularPhi(5), trajs, c, rng)
			if err != nil {
				t.Fatal(err)
			}
			for k := range r.Theta {
				d := r.Theta[k] - dg.NonPrivate[k]
				e += d * d
			}
		}
		return e / 20
	}
	e1, e2, e3 := errAt(1000, 0.1), errAt(1000, 1), errAt(100000, 1)
	if !(e2 < e1/50 && e3 < e2/1000) {
		t.Errorf("squared error: n=1e3 eps=.1 %.3g, eps=1 %.3g, n=1e5 eps=1 %.3g", e1, e2, e3)
	}
	// Non-private: the true values of the half-advance chain with gamma .9:
	// V(3) = .5 (1 + .9 V(3))... solve V(s) = .5*.9 V(s) + .5 (r + .9 V(s+1)).
	trajs := chain(rng, 20000)
	_, r, _ := EstimateWithDiagnostics(tabularPhi(5), trajs, Config{Epsilon: 1, Delta: 1e-5, Gamma: 0.9, RewardLow: 0, RewardHigh: 1, Weights: w}, rng)
	v := make([]float64, 5)
	for s := 3; s >= 0; s-- {
		next, rew := v[s+1], 0.0
		if s == 3 {
			next, rew = 0, 1
		}
		v[s] = 0.5 * (rew + 0.9*next) / (1 - 0.45)
	}
	for s := range 4 {
		if math.Abs(r.NonPrivate[s]-v[s]) > 0.02 {
			t.Errorf("V(%d) = %v, want %v", s, r.NonPrivate[s], v[s])
		}
	}
}

func TestValidate(t *testing.T) {
	err := Config{Epsilon: 2, Delta: 1, Gamma: 1, RewardLow: 1, RewardHigh: 0, Weights: []float64{0, -1}}.Validate()
	for _, want := range []string{"epsilon = 2", "delta = 1", "gamma = 1", "reward range", "weight[1]", "all zero"} {
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrRange) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

func TestGrid(t *testing.T) {
	g, err := NewGrid([]float64{-1, 0}, []float64{1, 10}, 4)
	if err != nil || g.NumStates() != 16 {
		t.Fatal(g, err)
	}
	for _, c := range []struct {
		obs  []float64
		want int
	}{{[]float64{-1, 0}, 0}, {[]float64{0.9, 0}, 3}, {[]float64{-1, 9.99}, 12}, {[]float64{5, 50}, 15}, {[]float64{-0.1, 2.6}, 1 + 4}} {
		i, err := g.Index(c.obs)
		if err != nil || i != c.want {
			t.Errorf("Index(%v) = %d, %v, want %d", c.obs, i, err, c.want)
		}
		ctr := make([]float64, 2)
		g.Represent(ctr, i)
		if j, _ := g.Index(ctr); j != i {
			t.Errorf("centre %v of cell %d maps to %d", ctr, i, j)
		}
	}
	if _, err := (Tabular{N: 3}).Index([]float64{0, 0.5, 0}); err == nil {
		t.Error("non-one-hot accepted")
	}
}

func TestFirstVisitExtremeRewards(t *testing.T) {
	// One trajectory with non-finite or huge rewards: F stays finite, inside
	// the return range, and differs from its neighbour's (without that
	// trajectory) by at most W / max(c, 1) in every state.
	const g, lo, hi = 0.9, -1.0, 2.0
	w := ReturnRange(lo, hi, g)
	base := chain(rand.New(rand.NewPCG(4, 4)), 50)
	for _, r := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e308, -1e308} {
		ex := Trajectory{States: []int{0, 1, 2, 3, 1}, Rewards: []float64{r, 0, r, r, r}}
		fx, cx := FirstVisit(base, 5, g, lo, hi)
		fy, cy := FirstVisit(append(append([]Trajectory(nil), base...), ex), 5, g, lo, hi)
		for s := range fy {
			if math.IsNaN(fy[s]) || fy[s] < math.Min(0, lo)/(1-g) || fy[s] > math.Max(0, hi)/(1-g) {
				t.Errorf("reward %v: F(%d) = %v outside the return range", r, s, fy[s])
			}
			if d := math.Abs(fy[s] - fx[s]); d > w/float64(max(cx[s], cy[s], 1))*(1+1e-12) {
				t.Errorf("reward %v: F(%d) moved by %v > W/c = %v", r, s, d, w/float64(max(cx[s], 1)))
			}
			if cy[s]-cx[s] > 1 {
				t.Errorf("state %d counted %d times for one trajectory", s, cy[s]-cx[s])
			}
		}
		// The release on the extreme log is finite.
		c := Config{Epsilon: 1, Delta: 1e-5, Gamma: g, RewardLow: lo, RewardHigh: hi, Weights: []float64{1, 1, 1, 1, 0}}
		res, err := Estimate(tabularPhi(5), append(base, ex), c, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range res.Theta {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("reward %v: release %v", r, res.Theta)
			}
		}
	}
	// Malformed trajectories are refused by Estimate and skipped (never a
	// panic) by FirstVisit.
	bad := []Trajectory{{States: []int{0, 7}, Rewards: []float64{0, 0}}, {States: []int{0}, Rewards: nil}}
	for _, b := range bad {
		if _, err := Estimate(tabularPhi(5), []Trajectory{b}, Config{Epsilon: 1, Delta: 1e-5, Gamma: g, RewardLow: lo, RewardHigh: hi, Weights: []float64{1, 1, 1, 1, 1}}, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("malformed trajectory %+v accepted", b)
		}
		if _, cnt := FirstVisit([]Trajectory{b}, 5, g, lo, hi); slices.Max(cnt) != 0 {
			t.Errorf("malformed trajectory %+v counted", b)
		}
	}
}

func TestResultIsPublic(t *testing.T) {
	// Everything in the release but the noisy weights is the same for
	// neighbouring datasets (one trajectory more): the data-dependent noise
	// scale is not in it. Applied by reflection to every field, so a field
	// added later is checked too.
	rng := rand.New(rand.NewPCG(6, 6))
	x := chain(rng, 100)
	y := append(append([]Trajectory(nil), x...), Trajectory{States: []int{3}, Rewards: []float64{1}})
	c := Config{Epsilon: 1, Delta: 1e-5, Gamma: 0.9, RewardLow: 0, RewardHigh: 1, Weights: []float64{1, 1, 1, 1, 0}}
	rx, dx, err := EstimateWithDiagnostics(tabularPhi(5), x, c, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	ry, dy, err := EstimateWithDiagnostics(tabularPhi(5), y, c, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if dx.Sigma == dy.Sigma {
		t.Fatal("the neighbours' noise scales are equal: the test does not exercise the leak")
	}
	vx, vy := reflect.ValueOf(rx), reflect.ValueOf(ry)
	for i := range vx.NumField() {
		name := vx.Type().Field(i).Name
		if name == "Theta" {
			continue
		}
		if !reflect.DeepEqual(vx.Field(i).Interface(), vy.Field(i).Interface()) {
			t.Errorf("Result.%s differs between neighbouring datasets: %v vs %v", name, vx.Field(i), vy.Field(i))
		}
	}
	// And Estimate releases what EstimateWithDiagnostics releases.
	r2, err := Estimate(tabularPhi(5), x, c, rand.New(rand.NewPCG(1, 1)))
	if err != nil || !reflect.DeepEqual(r2, rx) {
		t.Errorf("Estimate %+v, EstimateWithDiagnostics %+v (%v)", r2, rx, err)
	}
}

func TestNoiseScaleRange(t *testing.T) {
	// Reward bounds so wide that sigma could leave the Gaussian sampler's
	// range are refused from public values alone, for any data.
	c := Config{Epsilon: 1, Delta: 1e-5, Gamma: 0.9, RewardLow: -1e300, RewardHigh: 1e300, Weights: []float64{1, 1, 1, 1, 0}}
	if err := c.Check(tabularPhi(5)); !errors.Is(err, ErrRange) {
		t.Errorf("Check: %v, want ErrRange", err)
	}
	for _, trajs := range [][]Trajectory{nil, chain(rand.New(rand.NewPCG(7, 7)), 50)} {
		if _, err := Estimate(tabularPhi(5), trajs, c, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrRange) {
			t.Errorf("%d trajectories: %v, want ErrRange", len(trajs), err)
		}
	}
	// Tiny bounds: sigma is raised to the sampler's floor, the release is
	// finite.
	c.RewardLow, c.RewardHigh = 0, 1e-290
	res, err := Estimate(tabularPhi(5), chain(rand.New(rand.NewPCG(7, 7)), 50), c, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("release %v", res.Theta)
		}
	}
}

// TestEstimateVisitsSameRelease checks that DP-LSW on first visits
// accumulated one trajectory at a time (a streamed log) releases bit for
// bit what Estimate releases on the trajectories in memory, with the same
// draws, and that visits accumulated for another configuration are refused.
func TestEstimateVisitsSameRelease(t *testing.T) {
	trajs := chain(rand.New(rand.NewPCG(9, 9)), 300)
	trajs = append(trajs, Trajectory{States: []int{0, 1}, Rewards: []float64{math.Inf(1), math.NaN()}})
	c := Config{Epsilon: 0.7, Delta: 1e-5, Gamma: 0.9, RewardLow: 0, RewardHigh: 1, Weights: []float64{1, 1, 1, 1, 0}}
	want, wantDiag, err := EstimateWithDiagnostics(tabularPhi(5), trajs, c, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	v := NewVisits(5, c.Gamma, c.RewardLow, c.RewardHigh)
	for _, tr := range trajs {
		if !v.Add(tr) {
			t.Fatal("a valid trajectory refused")
		}
	}
	got, gotDiag, err := EstimateVisitsWithDiagnostics(tabularPhi(5), v, c, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotDiag, wantDiag) {
		t.Errorf("streamed %+v %+v, in memory %+v %+v", got, gotDiag, want, wantDiag)
	}
	plain, err := EstimateVisits(tabularPhi(5), v, c, rand.New(rand.NewPCG(3, 4)))
	if err != nil || !reflect.DeepEqual(plain, want) {
		t.Errorf("EstimateVisits %+v %v", plain, err)
	}
	if v.Add(Trajectory{States: []int{7}, Rewards: []float64{0}}) {
		t.Error("a state outside the set accepted")
	}
	other := c
	other.Gamma = 0.8
	if _, err := EstimateVisits(tabularPhi(5), v, other, rand.New(rand.NewPCG(3, 4))); err == nil {
		t.Error("visits of another gamma accepted")
	}
}
