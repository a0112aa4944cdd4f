package gtd2

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dprl/sessionlog"
	"dprl/sims"

	"gonum.org/v1/gonum/mat"
)

// A small chain: states 0..N-1, N-1 absorbing and terminal. Action 1
// advances with probability pHi, action 0 with pLo, else stay; reward 1 on
// reaching the end.
const (
	chainN = 5
	pHi    = 0.8
	pLo    = 0.2
	gamma  = 0.9
)

var (
	mu = []float64{0.5, 0.5}
	pi = []float64{0.1, 0.9}
)

func oneHot(s int) []float64 {
	v := make([]float64, chainN)
	v[s] = 1
	return v
}

type chainTarget struct{}

func (chainTarget) Prob(_ []float64, a sims.Action) float64 { return pi[a.Index] }

func simulate(rng *rand.Rand, n int) []sessionlog.Session {
	out := make([]sessionlog.Session, n)
	for i := range out {
		s := rng.IntN(chainN - 1)
		sess := sessionlog.Session{Session: fmt.Sprint(i)}
		for t := 0; t < 200; t++ {
			a := 0
			if rng.Float64() < mu[1] {
				a = 1
			}
			p := pLo
			if a == 1 {
				p = pHi
			}
			next, r := s, 0.0
			if rng.Float64() < p {
				next = s + 1
			}
			if next == chainN-1 {
				r = 1
			}
			sess.Steps = append(sess.Steps, sessionlog.Step{Obs: oneHot(s), Action: sims.Action{Index: a}, Reward: r, LogP: math.Log(mu[a])})
			s = next
			if s == chainN-1 {
				sess.Terminal = true
				break
			}
		}
		if !sess.Terminal {
			sess.FinalObs = oneHot(s)
		}
		out[i] = sess
	}
	return out
}

// trueValues solves V = r_pi + gamma P_pi V over the non-terminal states.
func trueValues() []float64 {
	n := chainN - 1
	A := mat.NewDense(n, n, nil)
	b := mat.NewVecDense(n, nil)
	for s := 0; s < n; s++ {
		adv := pi[0]*pLo + pi[1]*pHi
		A.Set(s, s, 1-gamma*(1-adv))
		if s+1 < n {
			A.Set(s, s+1, -gamma*adv)
		} else {
			b.SetVec(s, adv) // reward 1 on reaching the terminal state
		}
	}
	var v mat.VecDense
	if err := v.SolveVec(A, b); err != nil {
		panic(err)
	}
	return append(v.RawVector().Data, 0)
}

func model() (phi [][]float64, P [][][]float64, R [][]float64, muM, piM [][]float64) {
	for s := 0; s < chainN; s++ {
		phi = append(phi, oneHot(s))
		row := make([][]float64, 2)
		rr := make([]float64, 2)
		for a, p := range []float64{pLo, pHi} {
			row[a] = make([]float64, chainN)
			if s < chainN-1 {
				row[a][s] = 1 - p
				if s+1 < chainN-1 {
					row[a][s+1] = p
				}
				if s+1 == chainN-1 {
					rr[a] = p
				}
			}
		}
		P, R = append(P, row), append(R, rr)
		muM, piM = append(muM, mu), append(piM, pi)
	}
	return
}

func TestLSTDMatchesTrueValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ds, err := Prepare(simulate(rng, 4000), Tabular{chainN}, chainTarget{}, gamma)
	if err != nil {
		t.Fatal(err)
	}
	theta, err := LSTD(ds, true, 1e-9) // the terminal state is never a phi: ridge it
	if err != nil {
		t.Fatal(err)
	}
	want := trueValues()
	for s := 0; s < chainN-1; s++ {
		if math.Abs(theta[s]-want[s]) > 0.03 {
			t.Errorf("V(%d) = %.4f, want %.4f", s, theta[s], want[s])
		}
	}
}

func TestModelMSPBEZeroAtTrueValues(t *testing.T) {
	phi, P, R, muM, piM := model()
	dist := []float64{0.3, 0.25, 0.25, 0.2, 0}
	m := ModelMoments(phi, dist, P, R, muM, piM, gamma)
	// M is singular on the unvisited terminal state: evaluate on the
	// visited block by giving it a tiny mass.
	m.M.Set(chainN-1, chainN-1, 1)
	v := trueValues()
	e, err := MSPBE(m, v)
	if err != nil || e > 1e-20 {
		t.Errorf("MSPBE at V_pi = %v, %v", e, err)
	}
	v[0] += 0.1
	if e, _ := MSPBE(m, v); e < 1e-4 {
		t.Errorf("MSPBE off V_pi = %v", e)
	}
}

func TestGPOPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ds, err := Prepare(simulate(rng, 1000), Tabular{chainN}, chainTarget{}, gamma)
	if err != nil {
		t.Fatal(err)
	}
	emp := EmpiricalMoments(ds, true)
	lstd, _ := LSTD(ds, true, 1e-9)
	base, _ := MSPBE(emp, make([]float64, chainN))
	run := func(z float64) float64 {
		res, err := GPOPE(ds, Config{Iters: 3000, StepSize: 0.5, Clip: 5, Z: z, Q: 0.05, Batch: 50}, rand.New(rand.NewPCG(5, 6)))
		if err != nil {
			t.Fatal(err)
		}
		e, _ := MSPBE(emp, res.Theta)
		return e
	}
	nonPrivate := run(0)
	if nonPrivate > 0.05*base {
		t.Errorf("non-private GTD2: MSPBE %.3g vs %.3g at theta = 0 (LSTD %v)", nonPrivate, base, lstd)
	}
	private := run(1)
	if private > 0.5*base || private < nonPrivate {
		t.Errorf("private GTD2: MSPBE %.3g (non-private %.3g, zero %.3g)", private, nonPrivate, base)
	}
}

func TestGradientMatchesMoments(t *testing.T) {
	// The per-trajectory gradient averaged with weights T_i equals the
	// moment form [-A^T y; -(b - A theta - M y)] over all transitions.
	rng := rand.New(rand.NewPCG(7, 8))
	ds, _ := Prepare(simulate(rng, 50), Tabular{chainN}, chainTarget{}, gamma)
	theta, y := []float64{0.1, -0.2, 0.3, 0.5, 0}, []float64{0.2, 0.1, -0.1, 0.4, 0.3}
	d := chainN
	sum := make([]float64, 2*d)
	g := make([]float64, 2*d)
	total := 0
	for i := range ds.Trajs {
		gradient(g, &ds.Trajs[i], theta, y, ds.Dim, ds.Gamma)
		n := ds.Trajs[i].Len()
		for k := range g {
			sum[k] += g[k] * float64(n)
		}
		total += n
	}
	m := EmpiricalMoments(ds, true)
	var aty, ath, my mat.VecDense
	aty.MulVec(m.A.T(), mat.NewVecDense(d, y))
	ath.MulVec(m.A, mat.NewVecDense(d, theta))
	my.MulVec(m.M, mat.NewVecDense(d, y))
	for k := 0; k < d; k++ {
		wantT := -aty.AtVec(k)
		wantY := -(m.B.AtVec(k) - ath.AtVec(k) - my.AtVec(k))
		if math.Abs(sum[k]/float64(total)-wantT) > 1e-12 || math.Abs(sum[d+k]/float64(total)-wantY) > 1e-12 {
			t.Fatalf("component %d: %v, %v vs %v, %v", k, sum[k]/float64(total), sum[d+k]/float64(total), wantT, wantY)
		}
	}
}

func TestFeatures(t *testing.T) {
	f, err := NewFourier(1, []float64{0}, []float64{2})
	if err != nil || f.Dim() != 2 {
		t.Fatal(err)
	}
	dst := make([]float64, 2)
	f.Phi(dst, []float64{1}) // u = 0.5: [1, cos(pi/2)]
	if dst[0] != 1 || math.Abs(dst[1]) > 1e-15 {
		t.Errorf("fourier %v", dst)
	}
	f5, _ := NewFourier(5, []float64{-1.2, -0.07}, []float64{0.6, 0.07})
	if f5.Dim() != 36 {
		t.Errorf("order 5 in 2-D: %d features", f5.Dim())
	}
	if err := (Tabular{3}).Phi(make([]float64, 3), []float64{1, 1, 0}); err == nil {
		t.Error("two-hot accepted")
	}
	if err := (Raw{2}).Phi(make([]float64, 3), []float64{1, math.NaN()}); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := NewFourier(3, []float64{1}, []float64{1}); err == nil {
		t.Error("empty box accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{}.Validate()
	for _, want := range []string{"iters", "step size", "clip", "sampling rate", "batch"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if _, err := Prepare([]sessionlog.Session{{Session: "x", Steps: []sessionlog.Step{{Obs: oneHot(0)}}}}, Tabular{chainN}, chainTarget{}, gamma); err == nil {
		t.Error("truncated session without final_obs accepted")
	}
	if _, err := Prepare([]sessionlog.Session{{Session: "x", Terminal: true, Steps: []sessionlog.Step{{Obs: oneHot(0), NoProb: true, LogP: math.NaN()}}}}, Tabular{chainN}, chainTarget{}, gamma); err == nil {
		t.Error("step without a behaviour probability accepted")
	}
	if err := (Config{Iters: 1, StepSize: 1, Clip: 1e-300, Z: 1e-300, Q: 1, Batch: 1}).Validate(); err == nil || !strings.Contains(err.Error(), "sampler") {
		t.Errorf("noise below the sampler's range: %v", err)
	}
}

func TestChainMoments(t *testing.T) {
	// The exact MSPBE of the chain is zero at the true values of the
	// target, on- and off-policy, and positive elsewhere.
	c := sims.DefaultChainConfig()
	n := c.States
	uniform, adv := make([][]float64, n), make([][]float64, n)
	for s := range n - 1 {
		uniform[s], adv[s] = []float64{0.5, 0.5}, []float64{0.1, 0.9}
	}
	v, err := c.ValueFunction(uniform, 0.9)
	uniform, adv = uniform[:n-1], adv[:n-1]
	if err != nil {
		t.Fatal(err)
	}
	for _, mu := range [][][]float64{uniform, adv} {
		m, err := ChainMoments(c, mu, uniform, Tabular{n}, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		if e, err := MSPBE(m, v); err != nil || e > 1e-20 {
			t.Errorf("MSPBE at V_pi = %v, %v", e, err)
		}
		w := append([]float64(nil), v...)
		w[3] += 0.1
		if e, _ := MSPBE(m, w); e < 1e-5 {
			t.Errorf("MSPBE off V_pi = %v", e)
		}
	}
}

func TestCheckOnPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	sessions := simulate(rng, 20)
	on, _ := Prepare(sessions, Tabular{chainN}, Uniform{N: 2}, gamma) // mu is uniform too
	if err := on.CheckOnPolicy(); err != nil {
		t.Errorf("on-policy data refused: %v", err)
	}
	off, _ := Prepare(sessions, Tabular{chainN}, chainTarget{}, gamma)
	if err := off.CheckOnPolicy(); err == nil || !strings.Contains(err.Error(), "off-policy") {
		t.Errorf("off-policy data accepted: %v", err)
	}
}

func TestClip(t *testing.T) {
	const c = 2.0
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name string
		v    []float64
		want ClipOutcome
	}{
		{"inside", []float64{1, 1}, Kept},
		{"zero", []float64{0, 0, 0}, Kept},
		{"outside", []float64{3, 4}, Clipped},
		{"NaN entry", []float64{1, nan, 0}, Zeroed},
		{"+Inf entry", []float64{inf, 0}, Zeroed},
		{"-Inf entry", []float64{1, -inf}, Zeroed},
		{"Inf and zero", []float64{inf, 0, inf}, Zeroed}, // Inf * (c/Inf) = NaN if scaled
		{"huge finite", []float64{1e300, -1e300, 1e300}, Clipped},
		{"norm overflows", []float64{math.MaxFloat64, math.MaxFloat64}, Zeroed},
		{"tiny", []float64{1e-300, 1e-310}, Kept},
		{"just above", []float64{c, 1e-8}, Clipped},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := append([]float64(nil), tc.v...)
			got := Clip(v, c)
			n := Norm(v)
			if got != tc.want || !(n <= c) {
				t.Errorf("Clip(%v) = %v with norm %v; want outcome %v and norm <= %v", tc.v, got, n, tc.want, c)
			}
			if got == Zeroed {
				for _, x := range v {
					if x != 0 {
						t.Errorf("zeroed vector %v", v)
					}
				}
			}
			// The exact norm (in big float) is within the bound too.
			if !(n <= c) {
				return
			}
			if exact := exactNorm(v); exact.Cmp(new(big.Float).SetFloat64(c)) > 0 {
				t.Errorf("exact norm %v > %v", exact, c)
			}
		})
	}
}

// exactNorm is ||v||_2 in 512-bit arithmetic.
func exactNorm(v []float64) *big.Float {
	s := new(big.Float).SetPrec(512)
	for _, x := range v {
		b := new(big.Float).SetPrec(512).SetFloat64(x)
		s.Add(s, b.Mul(b, b))
	}
	return s.Sqrt(s)
}

func TestClipBoundUnderRounding(t *testing.T) {
	// Random vectors far outside the clip: after Clip, the exact norm never
	// exceeds it.
	rng := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		v := make([]float64, 1+rng.IntN(80))
		for k := range v {
			v[k] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		c := math.Pow(10, float64(rng.IntN(10)-5)) * (1 + rng.Float64())
		Clip(v, c)
		if exactNorm(v).Cmp(new(big.Float).SetFloat64(c)) > 0 {
			t.Fatalf("exact norm %v above clip %v", exactNorm(v), c)
		}
	}
}

// extremeSession is a valid chain record with extreme values: behaviour
// log-probability logp on every step (the reader accepts any finite
// logp <= 0) and reward r.
func extremeSession(logp, r float64) sessionlog.Session {
	s := sessionlog.Session{Session: "extreme", Terminal: true}
	for st := range chainN - 1 {
		s.Steps = append(s.Steps, sessionlog.Step{Obs: oneHot(st), Action: sims.Action{Index: 1}, Reward: r, LogP: logp})
	}
	return s
}

func TestGPOPEExtremeRecord(t *testing.T) {
	// One valid record with logp = -800 (rho = +Inf) or extreme finite
	// values must not make the release non-finite, and the clipped
	// gradient sums of the neighbouring logs (with and without it) differ by
	// at most the clip, at any (theta, y).
	base := simulate(rand.New(rand.NewPCG(21, 22)), 200)
	for _, ex := range []struct {
		name    string
		logp, r float64
	}{
		{"logp -800, reward 0", -800, 0},         // rho = +Inf, Inf * 0 = NaN in the gradient
		{"logp -800, reward 1", -800, 1},         // rho = +Inf
		{"logp -700, reward 1e300", -700, 1e300}, // finite rho ~ 1e304: the gradient overflows
		{"logp -300, reward 1e100", -300, 1e100}, // finite huge gradient: clipped
		{"logp -1e-300, reward -1e308", -1e-300, -1e308},
	} {
		t.Run(ex.name, func(t *testing.T) {
			x, err := Prepare(base, Tabular{chainN}, chainTarget{}, gamma)
			if err != nil {
				t.Fatal(err)
			}
			y, err := Prepare(append(append([]sessionlog.Session(nil), base...), extremeSession(ex.logp, ex.r)), Tabular{chainN}, chainTarget{}, gamma)
			if err != nil {
				t.Fatal(err)
			}
			const c = 0.5
			d := chainN
			rng := rand.New(rand.NewPCG(23, 24))
			sx, sy, g := make([]float64, 2*d), make([]float64, 2*d), make([]float64, 2*d)
			diff := make([]float64, 2*d)
			all := func() bool { return true }
			for range 50 {
				theta, dual := make([]float64, d), make([]float64, d)
				for k := range d {
					theta[k], dual[k] = 3*rng.NormFloat64(), 3*rng.NormFloat64()
				}
				clippedSum(x, nil, sx, g, theta, dual, c, all, nil)
				clippedSum(y, nil, sy, g, theta, dual, c, all, nil)
				for k := range diff {
					diff[k] = sy[k] - sx[k]
				}
				if n := Norm(diff); !(n <= c*(1+1e-12)) {
					t.Fatalf("neighbouring clipped sums differ by %v > clip %v", n, c)
				}
			}
			// The release, with and without noise, is finite; without
			// noise and with Q = 1, one step's update is -alpha sum/Batch,
			// so the neighbours' first steps differ by at most alpha C/Batch.
			for _, z := range []float64{0, 1} {
				cfg := Config{Iters: 200, StepSize: 0.5, Clip: c, Z: z, Q: 0.1, Batch: 20}
				res, diag, err := GPOPEWithDiagnostics(y, cfg, rand.New(rand.NewPCG(1, 1)))
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range append(append([]float64(nil), res.Theta...), res.Y...) {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("z = %v: non-finite release %v %v (%+v)", z, res.Theta, res.Y, diag)
					}
				}
			}
			one := Config{Iters: 1, StepSize: 0.5, Clip: c, Q: 1, Batch: 10}
			rx, _ := GPOPE(x, one, rand.New(rand.NewPCG(1, 1)))
			ry, _ := GPOPE(y, one, rand.New(rand.NewPCG(1, 1)))
			for k := range d {
				diff[k], diff[d+k] = ry.Theta[k]-rx.Theta[k], ry.Y[k]-rx.Y[k]
			}
			if n := Norm(diff); !(n <= one.StepSize*c/one.Batch*(1+1e-12)) {
				t.Errorf("one noiseless step: neighbours differ by %v > alpha C / batch = %v", n, one.StepSize*c/one.Batch)
			}
		})
	}
}

func TestGPOPEDiagnosticsSameRelease(t *testing.T) {
	// GPOPEWithDiagnostics releases exactly what GPOPE releases, and counts
	// the extreme trajectory's gradients as zeroed.
	sessions := append(simulate(rand.New(rand.NewPCG(31, 32)), 100), extremeSession(-800, 0))
	ds, err := Prepare(sessions, Tabular{chainN}, chainTarget{}, gamma)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Iters: 100, StepSize: 0.5, Clip: 0.1, Z: 1, Q: 0.2, Batch: 20}
	a, err := GPOPE(ds, cfg, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	b, diag, err := GPOPEWithDiagnostics(ds, cfg, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Theta, b.Theta) || !slices.Equal(a.Y, b.Y) {
		t.Errorf("the diagnosed run released something else")
	}
	if diag.Sampled == 0 || diag.Zeroed == 0 || diag.Zeroed > diag.Sampled || diag.Clipped+diag.Zeroed > diag.Sampled {
		t.Errorf("diagnostics %+v", diag)
	}
}

func TestGPOPEResultHoldsOnlyTheRelease(t *testing.T) {
	// The result type carries the noised weights and nothing else: no count
	// or statistic of the data can be printed from it by mistake.
	rt := reflect.TypeOf(Result{})
	var names []string
	for i := range rt.NumField() {
		names = append(names, rt.Field(i).Name)
	}
	if !slices.Equal(names, []string{"Theta", "Y"}) {
		t.Errorf("gtd2.Result has fields %v, want only the released Theta and Y", names)
	}
}

func TestLSTDRefusesNonFinite(t *testing.T) {
	// The non-private LSTD bounds nothing: an infinite importance ratio
	// makes it fail with an error rather than return NaN weights.
	sessions := append(simulate(rand.New(rand.NewPCG(41, 42)), 50), extremeSession(-800, 1))
	ds, err := Prepare(sessions, Tabular{chainN}, chainTarget{}, gamma)
	if err != nil {
		t.Fatal(err)
	}
	if theta, err := LSTD(ds, true, 1e-6); err == nil {
		t.Errorf("LSTD returned %v", theta)
	}
}

// sliceSource serves sessions from memory, failing at index fail.
type sliceSource struct {
	ss   []sessionlog.Session
	fail int
}

func (s sliceSource) Len() int { return len(s.ss) }

func (s sliceSource) Read(i int) (sessionlog.Session, error) {
	if i == s.fail {
		return sessionlog.Session{}, errors.New("read failed")
	}
	return s.ss[i], nil
}

// TestOnDemandSameRelease checks that GPOPE on trajectories built on demand
// (holding none) releases bit for bit what it releases on the in-memory
// Dataset, with the same draws: the same weights, the same diagnostics, the
// same moments; and that a failed read stops the run with its error.
func TestOnDemandSameRelease(t *testing.T) {
	sessions := append(simulate(rand.New(rand.NewPCG(51, 52)), 200), extremeSession(-800, 0))
	for i := 0; i < len(sessions); i += 7 { // truncated sessions among terminal ones
		if s := &sessions[i]; len(s.Steps) > 2 {
			h := len(s.Steps) / 2
			s.FinalObs, s.Steps, s.Terminal = s.Steps[h].Obs, s.Steps[:h], false
		}
	}
	ds, err := Prepare(sessions, Tabular{chainN}, chainTarget{}, gamma)
	if err != nil {
		t.Fatal(err)
	}
	od, err := NewOnDemand(sliceSource{ss: sessions, fail: -1}, Tabular{chainN}, chainTarget{}, gamma)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{
		{Iters: 200, StepSize: 0.5, Clip: 0.5, Z: 1.1, Q: 0.05, Batch: 10},
		{Iters: 20, StepSize: 0.3, Diminishing: true, Clip: 1, Z: 0.7, Q: 1, Batch: 201},
	} {
		a, da, err := GPOPEWithDiagnostics(ds, cfg, rand.New(rand.NewPCG(7, 8)))
		if err != nil {
			t.Fatal(err)
		}
		b, db, err := GPOPEWithDiagnostics(od, cfg, rand.New(rand.NewPCG(7, 8)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Theta, b.Theta) || !slices.Equal(a.Y, b.Y) || da != db {
			t.Errorf("%+v: on demand %v %+v, in memory %v %+v", cfg, b.Theta, db, a.Theta, da)
		}
	}
	// MomentsSum over the trajectories built one at a time is
	// EmpiricalMoments.
	want := EmpiricalMoments(ds, true)
	ms := NewMomentsSum(chainN, gamma, true)
	var scratch Trajectory
	for i := range od.NumTrajectories() {
		tr, err := od.Trajectory(i, &scratch)
		if err != nil {
			t.Fatal(err)
		}
		ms.Add(tr)
	}
	got := ms.Moments()
	bits := func(v []float64) []uint64 { // NaN-aware: the extreme record makes A NaN
		out := make([]uint64, len(v))
		for i, x := range v {
			out[i] = math.Float64bits(x)
		}
		return out
	}
	if !slices.Equal(bits(got.A.RawMatrix().Data), bits(want.A.RawMatrix().Data)) || !slices.Equal(bits(got.M.RawMatrix().Data), bits(want.M.RawMatrix().Data)) ||
		!slices.Equal(bits(got.B.RawVector().Data), bits(want.B.RawVector().Data)) {
		t.Error("MomentsSum differs from EmpiricalMoments")
	}
	bad, _ := NewOnDemand(sliceSource{ss: sessions, fail: 3}, Tabular{chainN}, chainTarget{}, gamma)
	if _, err := GPOPE(bad, Config{Iters: 5, StepSize: 0.5, Clip: 1, Z: 1, Q: 1, Batch: 201}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "trajectory 3: read failed") {
		t.Errorf("failed read: %v", err)
	}
}
