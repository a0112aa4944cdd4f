package primorl

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"dprl/sims"
)

func smallEnsemble(t testing.TB, n int) *Ensemble {
	t.Helper()
	cfg := DefaultModelConfig()
	cfg.Ensemble = n
	cfg.Hidden = []int{8, 8}
	cfg.WeightDecay = 1e-3
	e, err := NewEnsemble(cfg, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestLossGradient checks the NLL's gradient (log-variance bounds and
// weight decay included) against central finite differences.
func TestLossGradient(t *testing.T) {
	e := smallEnsemble(t, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	p := make([]float64, e.NumParams())
	e.Init(p, rng)
	for i := range p {
		p[i] += 0.2 * rng.NormFloat64()
	}
	const n = 5
	x, y := make([]float64, n*4), make([]float64, n*4)
	for i := range x {
		x[i], y[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	grad := make([]float64, e.per)
	e.LossGrad(p, 1, x, y, n, grad)
	m := e.Model(p, 1)
	const h = 1e-6
	for i := range m {
		orig := m[i]
		m[i] = orig + h
		fp := e.LossGrad(p, 1, x, y, n, nil)
		m[i] = orig - h
		fm := e.LossGrad(p, 1, x, y, n, nil)
		m[i] = orig
		fd := (fp - fm) / (2 * h)
		if math.Abs(fd-grad[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
			t.Fatalf("d loss/d theta[%d] = %.10g, finite difference %.10g", i, grad[i], fd)
		}
	}
}

// TestLogVarBounds: the bounded log-variance stays inside its bounds.
func TestLogVarBounds(t *testing.T) {
	e := smallEnsemble(t, 1)
	for _, raw := range []float64{-1e6, -50, -10, 0, 0.5, 10, 1e6} {
		v, dv := e.logVar(raw)
		hi := e.cfg.MaxLogVar + math.Log1p(math.Exp(e.cfg.MinLogVar-e.cfg.MaxLogVar))
		if !(v >= e.cfg.MinLogVar && v <= hi+1e-12) || !(dv >= 0 && dv <= 1) {
			t.Fatalf("raw %v: log-variance %v (d %v), want in [%v, %v]", raw, v, dv, e.cfg.MinLogVar, e.cfg.MaxLogVar)
		}
	}
}

// TestEnsembleClip: in both modes the clipped delta's norm is at most C,
// each model (flat) or layer (per layer) within its share, a small delta
// is unchanged and a non-finite one becomes zero.
func TestEnsembleClip(t *testing.T) {
	e := smallEnsemble(t, 3)
	rng := rand.New(rand.NewPCG(3, 4))
	const C = 0.7
	for _, mode := range []ClipMode{ClipFlat, ClipPerLayer} {
		for trial := range 50 {
			d := make([]float64, e.NumParams())
			scale := math.Pow(10, float64(trial%6)-3)
			for i := range d {
				d[i] = scale * rng.NormFloat64()
			}
			orig := append([]float64(nil), d...)
			e.Clip(d, C, mode)
			if nrm := norm(d); nrm > C {
				t.Fatalf("%v, scale %g: norm %v > C = %v", mode, scale, nrm, C)
			}
			N, L := float64(e.Models()), float64(e.Layers())
			for i := range e.Models() {
				m := e.Model(d, i)
				if mode == ClipFlat && norm(m) > C/math.Sqrt(N) {
					t.Fatalf("flat: model %d norm %v > C/sqrt(N)", i, norm(m))
				}
				for _, l := range e.layers {
					if mode == ClipPerLayer && norm(m[l[0]:l[1]]) > C/math.Sqrt(N*L) {
						t.Fatalf("per-layer: model %d layer norm %v > C/sqrt(NL)", i, norm(m[l[0]:l[1]]))
					}
				}
			}
			if norm(orig) < C/math.Sqrt(float64(e.Models()*e.Layers()))/10 {
				for i := range d {
					if d[i] != orig[i] {
						t.Fatalf("%v: a delta inside every bound was changed", mode)
					}
				}
			}
		}
		d := make([]float64, e.NumParams())
		d[3] = math.NaN()
		d[e.per+1] = 5
		e.Clip(d, C, mode)
		if norm(d) > C || math.IsNaN(norm(d)) {
			t.Fatalf("%v: a NaN delta left norm %v", mode, norm(d))
		}
	}
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func randomData(rng *rand.Rand, K, n int) []Trajectory {
	data := make([]Trajectory, K)
	for k := range data {
		d := Trajectory{N: n, X: make([]float64, n*4), Y: make([]float64, n*4)}
		for i := range d.X {
			d.X[i], d.Y[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		data[k] = d
	}
	return data
}

// TestNoiseStd: a round that samples no trajectory moves the parameters by
// the noise alone, N(0, (z C / (q K))^2) per coordinate: a chi-square test
// of its variance.
func TestNoiseStd(t *testing.T) {
	e := smallEnsemble(t, 3)
	cfg := TDPConfig{Q: 1e-7, Z: 1.3, C: 0.5, Rounds: 1, LocalEpochs: 1, Batch: 4, LR: 1e-3, Clip: ClipPerLayer}
	tr, err := NewTrainer(e, cfg, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	const K = 20
	data := randomData(rand.New(rand.NewPCG(7, 8)), K, 3)
	p := make([]float64, e.NumParams())
	st := tr.Round(p, data, rand.New(rand.NewPCG(9, 10)))
	if st.Sampled != 0 {
		t.Fatalf("sampled %d trajectories at q = 1e-7", st.Sampled)
	}
	sigma := 1.3 * 0.5 / (1e-7 * K)
	var ss float64
	for _, v := range p {
		ss += (v / sigma) * (v / sigma)
	}
	n := float64(len(p))
	chi := distuv.ChiSquared{K: n}
	if lo, hi := chi.Quantile(1e-4), chi.Quantile(1-1e-4); ss < lo || ss > hi {
		t.Fatalf("sum of squares %v over %d coordinates, outside the chi-square's [%v, %v]", ss, len(p), lo, hi)
	}
}

// TestServerOptimizer: the server step size and momentum apply the rounds'
// noised averages g~ exactly as v <- beta v + g~, theta <- theta + eta v.
// With q so small that no trajectory is sampled, g~ is the noise alone, the
// same draws whatever the parameters, so a run with eta and beta can be
// checked against the averages of the paper's update (eta 1, beta 0).
func TestServerOptimizer(t *testing.T) {
	e := smallEnsemble(t, 2)
	data := randomData(rand.New(rand.NewPCG(7, 8)), 20, 3)
	const rounds = 4
	run := func(eta, beta float64) [][]float64 {
		cfg := TDPConfig{Q: 1e-9, Z: 1.1, C: 0.5, Rounds: rounds, LocalEpochs: 1, Batch: 4, LR: 1e-3, Clip: ClipFlat,
			ServerLR: eta, ServerMomentum: beta}
		tr, err := NewTrainer(e, cfg, rand.New(rand.NewPCG(5, 6)))
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float64, e.NumParams())
		sample := rand.New(rand.NewPCG(9, 10))
		var after [][]float64
		for range rounds {
			if st := tr.Round(p, data, sample); st.Sampled != 0 {
				t.Fatalf("sampled %d trajectories at q = 1e-9", st.Sampled)
			}
			after = append(after, append([]float64(nil), p...))
		}
		return after
	}
	paper, zero := run(1, 0), run(0, 0) // ServerLR 0 means 1
	g := make([][]float64, rounds)      // the rounds' noised averages
	for r := range rounds {
		g[r] = make([]float64, len(paper[r]))
		for i, v := range paper[r] {
			prev := 0.0
			if r > 0 {
				prev = paper[r-1][i]
			}
			g[r][i] = v - prev
			if zero[r][i] != v {
				t.Fatalf("round %d: ServerLR 0 gives %v at %d, 1 gives %v", r, zero[r][i], i, v)
			}
		}
	}
	for _, c := range []struct{ eta, beta float64 }{{2.5, 0}, {1, 0.9}, {0.5, 0.5}} {
		got := run(c.eta, c.beta)
		want := make([]float64, len(g[0]))
		vel := make([]float64, len(g[0]))
		for r := range rounds {
			for i := range want {
				vel[i] = c.beta*vel[i] + g[r][i]
				want[i] += c.eta * vel[i]
				if d := math.Abs(got[r][i] - want[i]); d > 1e-9*(1+math.Abs(want[i])) {
					t.Fatalf("eta %v beta %v, round %d, coordinate %d: %v, want %v", c.eta, c.beta, r, i, got[r][i], want[i])
				}
			}
		}
	}
	for _, bad := range []TDPConfig{{ServerLR: -1}, {ServerLR: math.Inf(1)}, {ServerMomentum: 1}, {ServerMomentum: -0.1}, {ServerMomentum: math.NaN()}} {
		bad.Q, bad.Z, bad.C, bad.Rounds, bad.LocalEpochs, bad.Batch, bad.LR = 0.1, 1, 1, 1, 1, 1, 1e-3
		if bad.Validate() == nil {
			t.Fatalf("server lr %v momentum %v accepted", bad.ServerLR, bad.ServerMomentum)
		}
	}
}

// TestTrainWorkers: the local trainings run on any number of workers give
// the serial algorithm's result to the bit (parameters and round
// statistics), with several local epochs (each epoch's order shuffles the
// previous one's), server momentum and noise.
func TestTrainWorkers(t *testing.T) {
	e := smallEnsemble(t, 3)
	data := randomData(rand.New(rand.NewPCG(7, 8)), 20, 7)
	data[3] = Trajectory{N: 1, X: data[3].X[:4], Y: data[3].Y[:4]} // a one-transition trajectory
	run := func(workers int) ([]float64, []RoundStats) {
		cfg := TDPConfig{Q: 0.4, Z: 0.7, C: 0.5, Rounds: 5, LocalEpochs: 2, Batch: 3, LR: 1e-2, Clip: ClipFlat, ServerLR: 1.5,
			ServerMomentum: 0.5, Workers: workers}
		tr, err := NewTrainer(e, cfg, rand.New(rand.NewPCG(5, 6)))
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float64, e.NumParams())
		e.Init(p, rand.New(rand.NewPCG(1, 2)))
		var sts []RoundStats
		if err := tr.Train(context.Background(), p, data, rand.New(rand.NewPCG(9, 10)), func(s RoundStats) { sts = append(sts, s) }); err != nil {
			t.Fatal(err)
		}
		return p, sts
	}
	p1, s1 := run(1)
	for _, w := range []int{2, 5, 0} {
		p, s := run(w)
		if !slices.Equal(p, p1) || !slices.Equal(s, s1) {
			t.Fatalf("%d workers: parameters or round statistics differ from one worker's (%v against %v)", w, s, s1)
		}
	}
	if s1[0].Sampled == 0 {
		t.Fatal("no trajectory sampled: the test checks nothing")
	}
}

// TestPoissonSampling: the number of trajectories a round samples follows
// Binomial(K, q): a chi-square goodness-of-fit test over many rounds.
func TestPoissonSampling(t *testing.T) {
	cfg := DefaultModelConfig()
	cfg.Ensemble, cfg.Hidden = 1, []int{2}
	e, err := NewEnsemble(cfg, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	const K, q = 40, 0.15
	rounds := 3000
	if raceEnabled {
		rounds = 800
	}
	tr, err := NewTrainer(e, TDPConfig{Q: q, Z: 0, C: 1, Rounds: rounds, LocalEpochs: 1, Batch: 1, LR: 1e-3}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	data := randomData(rand.New(rand.NewPCG(2, 2)), K, 1)
	p := make([]float64, e.NumParams())
	counts := make([]float64, K+1)
	if err := tr.Train(context.Background(), p, data, rand.New(rand.NewPCG(3, 3)), func(s RoundStats) { counts[s.Sampled]++ }); err != nil {
		t.Fatal(err)
	}
	bin := distuv.Binomial{N: K, P: q}
	// Bins: <= 2, 3, ..., 10, >= 11 (expected counts above 5).
	var chi2 float64
	bins := 0
	for lo := 0; lo <= K; {
		hi := lo
		if lo == 0 {
			hi = 2
		}
		if lo == 11 {
			hi = K
		}
		var obs, exp float64
		for k := lo; k <= hi; k++ {
			obs += counts[k]
			exp += float64(rounds) * bin.Prob(float64(k))
		}
		chi2 += (obs - exp) * (obs - exp) / exp
		bins++
		lo = hi + 1
	}
	if crit := (distuv.ChiSquared{K: float64(bins - 1)}).Quantile(1 - 1e-4); chi2 > crit {
		t.Fatalf("chi-square %v over %d bins > %v: sample sizes %v", chi2, bins, crit, counts)
	}
}

// pendulumData rolls out uniformly random torques on Pendulum and returns
// its transitions as trajectories, scaled by the public bounds.
func pendulumData(rng *rand.Rand, episodes int) []Trajectory {
	env := sims.NewPendulum()
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16.3}}
	var data []Trajectory
	obs, next := make([]float64, 3), make([]float64, 3)
	act := sims.Action{Vec: make([]float64, 1)}
	for range episodes {
		env.Reset(rng, obs)
		var d Trajectory
		for {
			act.Vec[0] = 4*rng.Float64() - 2
			copy(next, obs)
			r, term, trunc := env.Step(act, next)
			d.X, d.Y = sc.Encode(d.X, d.Y, obs, act.Vec, next, r)
			d.N++
			copy(obs, next)
			if term || trunc {
				break
			}
		}
		data = append(data, d)
	}
	return data
}

// pendulumEnsemble returns the default ensemble with 2 x 32 models for
// Pendulum's scaled (s, a) -> (s' - s, r), initialised from rng.
func pendulumEnsemble(t *testing.T, rng *rand.Rand) (*Ensemble, []float64) {
	t.Helper()
	cfg := DefaultModelConfig()
	cfg.Hidden = []int{32, 32}
	e, err := NewEnsemble(cfg, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, e.NumParams())
	e.Init(p, rng)
	return e, p
}

// TestLearnsPendulum: without noise (z = 0, clipped) the ensemble learns
// Pendulum's dynamics from random-torque episodes: the held-out mean
// squared error of every model's mean falls below a tenth of the targets'
// variance.
func TestLearnsPendulum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	train, test := pendulumData(rng, 20), pendulumData(rng, 5)
	e, p := pendulumEnsemble(t, rng)
	rounds := 30
	if raceEnabled {
		rounds = 5
	}
	tr, err := NewTrainer(e, TDPConfig{Q: 1, Z: 0, C: 10, Rounds: rounds, LocalEpochs: 3, Batch: 16, LR: 1e-2, Clip: ClipFlat}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// The targets' variance on the test episodes.
	var sm, sv, cnt float64
	for _, d := range test {
		for _, y := range d.Y {
			sm += y
			cnt++
		}
	}
	sm /= cnt
	for _, d := range test {
		for _, y := range d.Y {
			sv += (y - sm) * (y - sm) / cnt
		}
	}
	mse := func() (worst, variance float64) { return heldOutMSE(e, p, test), sv }
	before, variance := mse()
	if err := tr.Train(context.Background(), p, train, rng, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := mse()
	t.Logf("held-out mse of the worst model: %.4g before, %.4g after %d rounds (target variance %.4g)", before, after, rounds, variance)
	if !raceEnabled && !(after < variance/10) {
		t.Fatalf("mse %v after training, want < %v", after, variance/10)
	}
	if !(after < before) {
		t.Fatalf("mse did not fall: %v -> %v", before, after)
	}
}

func TestScales(t *testing.T) {
	sc := Scales{In: []float64{2, 4, 8}, Out: []float64{2, 4, 10}}
	if err := sc.Validate(2, 1); err != nil {
		t.Fatal(err)
	}
	if (Scales{In: []float64{1, 0, 1}, Out: []float64{1, 1, 1}}).Validate(2, 1) == nil || sc.Validate(3, 1) == nil {
		t.Fatal("a zero scale or wrong lengths accepted")
	}
	obs, act, next := []float64{1, 2}, []float64{4}, []float64{3, 6}
	x, y := sc.Encode(nil, nil, obs, act, next, -5)
	if want := []float64{0.5, 0.5, 0.5}; !equal(x, want) {
		t.Fatalf("x = %v, want %v", x, want)
	}
	if want := []float64{1, 1, -0.5}; !equal(y, want) {
		t.Fatalf("y = %v, want %v", y, want)
	}
	got := make([]float64, 2)
	if r := sc.Decode(got, obs, y); r != -5 || !equal(got, next) {
		t.Fatalf("decode: %v %v, want %v -5", got, r, next)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPrivacyAndValidate(t *testing.T) {
	cfg := TDPConfig{Q: 1e-3, Z: 1, C: 1, Rounds: 1000, LocalEpochs: 1, Batch: 16, LR: 1e-3, Clip: ClipPerLayer}
	pld, rdp, err := cfg.Privacy(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !(pld.Epsilon > 0 && pld.Epsilon <= rdp.Epsilon) {
		t.Fatalf("pld %v, rdp %v: want 0 < pld <= rdp", pld.Epsilon, rdp.Epsilon)
	}
	cfg.Z = 0
	if _, _, err := cfg.Privacy(1e-5); err == nil {
		t.Fatal("z = 0 has an epsilon")
	}
	for _, bad := range []TDPConfig{{}, {Q: 2, Z: -1, C: 0, Rounds: 0, LocalEpochs: 0, Batch: 0, LR: 0, Clip: 9}} {
		if bad.Validate() == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
}
