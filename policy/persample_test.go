package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
)

// refUnitGrads computes each unit's gradient explicitly: one full Backward
// per unit with dOut masked to the unit's rows (the loss is a sum over rows,
// so this is exactly the unit's gradient).
func refUnitGrads(m *MLP, params, dOut []float64, bounds []int) [][]float64 {
	n := m.batchN
	var out [][]float64
	U := n
	if bounds != nil {
		U = len(bounds) - 1
	}
	masked := make([]float64, len(dOut))
	for u := 0; u < U; u++ {
		r0, r1 := unitRows(bounds, u)
		clear(masked)
		copy(masked[r0*m.Out():r1*m.Out()], dOut[r0*m.Out():r1*m.Out()])
		g := make([]float64, m.NumParams())
		m.Backward(g, params, masked)
		out = append(out, g)
	}
	return out
}

func TestGhostClipperMatchesPerUnitGradients(t *testing.T) {
	rng := testRNG(t)
	for _, tc := range []struct {
		name   string
		sizes  []int
		n      int
		bounds []int
		act    Activation
	}{
		{"rows", []int{4, 16, 8, 3}, 9, nil, Tanh},
		{"units", []int{4, 16, 8, 3}, 10, []int{0, 1, 4, 10}, Tanh},
		{"wide-gram", []int{6, 64, 64, 3}, 12, []int{0, 2, 5, 12}, Tanh},
		{"long-materialise", []int{3, 5, 2}, 40, []int{0, 1, 39, 40}, Tanh},
		{"relu-rows", []int{6, 32, 32, 3}, 9, nil, ReLU},
		{"relu-units", []int{4, 16, 8, 3}, 10, []int{0, 1, 4, 10}, ReLU},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMLPActivation(tc.act, tc.sizes...)
			if err != nil {
				t.Fatal(err)
			}
			p := make([]float64, m.NumParams())
			m.Init(p, rng, 1)
			x := randSlice(rng, tc.n*m.In(), 1)
			y := make([]float64, tc.n*m.Out())
			m.ForwardBatch(y, p, x, tc.n)
			dOut := randSlice(rng, len(y), 1)
			ref := refUnitGrads(m, p, dOut, tc.bounds)
			g := NewGhostClipper(m)
			norms := make([]float64, len(ref))
			m.ForwardBatch(y, p, x, tc.n)
			g.Norms(norms, p, dOut, tc.bounds)
			med := 0.0
			for u, r := range ref {
				want := floats.Norm(r, 2)
				med += want / float64(len(ref))
				if math.Abs(norms[u]-want) > 1e-10*(1+want) {
					t.Errorf("unit %d: norm %.15g, want %.15g", u, norms[u], want)
				}
			}
			for _, clip := range []float64{med / 2, med, 10 * med} {
				want := make([]float64, m.NumParams())
				nClip := 0
				for _, r := range ref {
					f := 1.0
					if nr := floats.Norm(r, 2); nr > clip {
						f = clip / nr
						nClip++
					}
					floats.AddScaled(want, f, r)
				}
				got := make([]float64, m.NumParams())
				m.ForwardBatch(y, p, x, tc.n)
				if c := g.ClippedSum(got, p, dOut, tc.bounds, clip); c != nClip {
					t.Errorf("clip %g: %d clipped, want %d", clip, c, nClip)
				}
				if d := floats.Distance(got, want, math.Inf(1)); d > 1e-10*(1+floats.Norm(want, math.Inf(1))) {
					t.Errorf("clip %g: clipped sum off by %g", clip, d)
				}
			}
		})
	}
}

// TestGhostClipperFiniteDifferences checks a unit's norm against the norm of
// its finite-difference gradient (independent of every backward kernel).
func TestGhostClipperFiniteDifferences(t *testing.T) {
	rng := testRNG(t)
	m := mustMLP(t, 3, 7, 2)
	p := make([]float64, m.NumParams())
	m.Init(p, rng, 1)
	n := 5
	x := randSlice(rng, n*3, 1)
	w := randSlice(rng, n*2, 1) // loss = sum_i w_i . y_i
	bounds := []int{0, 2, 5}
	y := make([]float64, n*2)
	one := make([]float64, 2)
	loss := func(q []float64, r0, r1 int) float64 {
		s := 0.0
		for i := r0; i < r1; i++ {
			m.Forward(one, q, x[i*3:(i+1)*3])
			s += w[2*i]*one[0] + w[2*i+1]*one[1]
		}
		return s
	}
	g := NewGhostClipper(m)
	norms := make([]float64, 2)
	m.ForwardBatch(y, p, x, n)
	g.Norms(norms, p, w, bounds)
	for u := 0; u < 2; u++ {
		fd := make([]float64, len(p))
		q := append([]float64(nil), p...)
		for j := range q {
			h := 1e-6
			q[j] = p[j] + h
			lp := loss(q, bounds[u], bounds[u+1])
			q[j] = p[j] - h
			lm := loss(q, bounds[u], bounds[u+1])
			q[j] = p[j]
			fd[j] = (lp - lm) / (2 * h)
		}
		if want := floats.Norm(fd, 2); math.Abs(norms[u]-want) > 1e-6*(1+want) {
			t.Errorf("unit %d: norm %g, finite differences %g", u, norms[u], want)
		}
	}
}

func TestGhostClipperAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	rng := testRNG(t)
	for _, sizes := range [][]int{{4, 64, 64, 2}, {6, 256, 256, 3}} {
		s := newDPStepBench(t, rng, sizes, 32)
		s.step(false)
		if a := testing.AllocsPerRun(5, func() { s.step(false) }); a != 0 {
			t.Errorf("%v: DP-SGD step %v allocs, want 0", sizes, a)
		}
	}
}

// dpStepBench is one DP-SGD optimiser step on a synthetic categorical
// policy-gradient loss: forward, loss gradient, per-sample clipping (ghost or
// naive), Gaussian noise, averaging, Adam.
type dpStepBench struct {
	m       *MLP
	g       *GhostClipper
	adam    *Adam
	rng     *rand.Rand
	p, grad []float64
	x, y    []float64
	dOut    []float64
	acts    []int
	adv     []float64
	n       int
	clip, z float64
	// naive workspace: one materialised per-sample gradient.
	per []float64
}

func newDPStepBench(tb testing.TB, rng *rand.Rand, sizes []int, n int) *dpStepBench {
	m := mustMLP(tb, sizes...)
	s := &dpStepBench{m: m, g: NewGhostClipper(m), rng: rng, n: n, clip: 1, z: 1}
	s.p = make([]float64, m.NumParams())
	m.Init(s.p, rng, GainPolicyOut)
	s.grad = make([]float64, m.NumParams())
	s.per = make([]float64, m.NumParams())
	s.x = randSlice(rng, n*m.In(), 1)
	s.y = make([]float64, n*m.Out())
	s.dOut = make([]float64, n*m.Out())
	s.adv = randSlice(rng, n, 1)
	s.acts = make([]int, n)
	for i := range s.acts {
		s.acts[i] = rng.IntN(m.Out())
	}
	var err error
	if s.adam, err = NewAdam(m.NumParams(), DefaultAdamConfig()); err != nil {
		tb.Fatal(err)
	}
	m.Reserve(n)
	return s
}

func (s *dpStepBench) step(naive bool) {
	m, k := s.m, s.m.Out()
	m.ForwardBatch(s.y, s.p, s.x, s.n)
	head := Categorical{N: k}
	clear(s.dOut)
	for i := 0; i < s.n; i++ {
		// minimise -adv * log pi(a|s)
		head.AddGrad(s.dOut[i*k:(i+1)*k], s.y[i*k:(i+1)*k], s.acts[i], -s.adv[i], 0)
	}
	if naive {
		s.naiveClippedSum()
	} else {
		s.g.ClippedSum(s.grad, s.p, s.dOut, nil, s.clip)
	}
	sd := s.z * s.clip
	inv := 1 / float64(s.n)
	for i := range s.grad {
		s.grad[i] = (s.grad[i] + sd*s.rng.NormFloat64()) * inv
	}
	s.adam.Step(s.p, s.grad)
}

// naiveClippedSum is the baseline that materialises every per-sample
// gradient (as Opacus's hooks do): one batched backward for the deltas, then
// for each row its full gradient d_i a_i^T, its norm, and a scaled add.
func (s *dpStepBench) naiveClippedSum() {
	m := s.m
	m.backpropDeltas(s.p, s.dOut)
	clear(s.grad)
	L := len(m.sizes) - 1
	for i := 0; i < s.n; i++ {
		for l := 0; l < L; l++ {
			in, out := m.sizes[l], m.sizes[l+1]
			d := m.deltas[l+1][i*out : (i+1)*out]
			a := m.acts[l][i*in : (i+1)*in]
			w := blas64.General{Rows: out, Cols: in, Stride: in, Data: s.per[m.wOff[l] : m.wOff[l]+out*in]}
			clear(w.Data)
			blas64.Ger(1, blas64.Vector{N: out, Inc: 1, Data: d}, blas64.Vector{N: in, Inc: 1, Data: a}, w)
			copy(s.per[m.bOff[l]:m.bOff[l]+out], d)
		}
		f := 1.0
		if nr := blas64.Nrm2(blas64.Vector{N: len(s.per), Inc: 1, Data: s.per}); nr > s.clip {
			f = s.clip / nr
		}
		blas64.Axpy(f, blas64.Vector{N: len(s.per), Inc: 1, Data: s.per}, blas64.Vector{N: len(s.grad), Inc: 1, Data: s.grad})
	}
}

func TestNaiveBaselineAgrees(t *testing.T) {
	rng := testRNG(t)
	s := newDPStepBench(t, rng, []int{4, 16, 16, 2}, 8)
	s.clip = 0.05
	s.m.ForwardBatch(s.y, s.p, s.x, s.n)
	head := Categorical{N: 2}
	for i := 0; i < s.n; i++ {
		head.AddGrad(s.dOut[i*2:(i+1)*2], s.y[i*2:(i+1)*2], s.acts[i], -s.adv[i], 0)
	}
	s.naiveClippedSum()
	naive := append([]float64(nil), s.grad...)
	s.m.ForwardBatch(s.y, s.p, s.x, s.n)
	s.g.ClippedSum(s.grad, s.p, s.dOut, nil, s.clip)
	if d := floats.Distance(naive, s.grad, math.Inf(1)); d > 1e-12 {
		t.Fatalf("naive and ghost clipped sums differ by %g", d)
	}
}

// BenchmarkDPSGDStep measures optimiser steps/s of the DP-SGD update
// (forward, per-sample clip, noise, Adam) with ghost clipping and, in the same
// run, with the naive materialising baseline. The comparison with Opacus is
// BenchmarkDPSGDPeer (Opacus's losses, SGD and activations; README,
// "Performance against peers").
func BenchmarkDPSGDStep(b *testing.B) {
	for _, c := range []struct {
		sizes []int
		n     int
	}{{[]int{6, 256, 256, 3}, 128}, {[]int{4, 64, 64, 2}, 64}} {
		// Interleaved: each iteration times one ghost and one naive step, so
		// the reported speed-up is immune to load drifting between runs.
		b.Run(fmt.Sprintf("%s/B%d/speedup", netName(c.sizes), c.n), func(b *testing.B) {
			sg := newDPStepBench(b, rand.New(rand.NewPCG(1, 2)), c.sizes, c.n)
			sn := newDPStepBench(b, rand.New(rand.NewPCG(1, 2)), c.sizes, c.n)
			sg.step(false)
			sn.step(true)
			var tg, tn time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				sg.step(false)
				t1 := time.Now()
				sn.step(true)
				tg += t1.Sub(t0)
				tn += time.Since(t1)
			}
			b.ReportMetric(float64(b.N)/tg.Seconds(), "ghost-steps/s")
			b.ReportMetric(float64(b.N)/tn.Seconds(), "naive-steps/s")
			b.ReportMetric(tn.Seconds()/tg.Seconds(), "speedup")
		})
		for _, naive := range []bool{false, true} {
			kind := "ghost"
			if naive {
				kind = "naive"
			}
			b.Run(fmt.Sprintf("%s/B%d/%s", netName(c.sizes), c.n, kind), func(b *testing.B) {
				s := newDPStepBench(b, rand.New(rand.NewPCG(1, 2)), c.sizes, c.n)
				s.step(naive)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					s.step(naive)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}

// netName writes layer widths as 6-256-256-3.
func netName(sizes []int) string {
	s := ""
	for i, w := range sizes {
		if i > 0 {
			s += "-"
		}
		s += fmt.Sprint(w)
	}
	return s
}

// BenchmarkGhostClipEpisodes measures the clipped sum over episode units (the
// REINFORCE privacy unit): 16 episodes of 32 steps on a 4-64-64-2 network,
// ghost clipping against materialising each episode's gradient.
func BenchmarkGhostClipEpisodes(b *testing.B) {
	const units, T = 16, 32
	rng := rand.New(rand.NewPCG(1, 2))
	m := mustMLP(b, 4, 64, 64, 2)
	p := make([]float64, m.NumParams())
	m.Init(p, rng, GainPolicyOut)
	n := units * T
	x := randSlice(rng, n*4, 1)
	y := make([]float64, n*2)
	dOut := randSlice(rng, n*2, 1)
	bounds := make([]int, units+1)
	for u := range bounds {
		bounds[u] = u * T
	}
	grad := make([]float64, m.NumParams())
	per := make([]float64, m.NumParams())
	g := NewGhostClipper(m)
	b.Run("ghost", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.ForwardBatch(y, p, x, n)
			g.ClippedSum(grad, p, dOut, bounds, 1)
		}
	})
	b.Run("naive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.ForwardBatch(y, p, x, n)
			m.backpropDeltas(p, dOut)
			clear(grad)
			for u := 0; u < units; u++ {
				r0, r1 := bounds[u], bounds[u+1]
				for l := 0; l < len(m.sizes)-1; l++ {
					in, out := m.sizes[l], m.sizes[l+1]
					D := m.deltas[l+1][r0*out : r1*out]
					gemmSerial(blas.Trans, blas.NoTrans, 1,
						blas64.General{Rows: T, Cols: out, Stride: out, Data: D},
						blas64.General{Rows: T, Cols: in, Stride: in, Data: m.acts[l][r0*in : r1*in]}, 0,
						blas64.General{Rows: out, Cols: in, Stride: in, Data: per[m.wOff[l] : m.wOff[l]+out*in]})
					db := per[m.bOff[l] : m.bOff[l]+out]
					clear(db)
					for t := 0; t < T; t++ {
						for o, v := range D[t*out : (t+1)*out] {
							db[o] += v
						}
					}
				}
				f := 1.0
				if nr := blas64.Nrm2(blas64.Vector{N: len(per), Inc: 1, Data: per}); nr > 1 {
					f = 1 / nr
				}
				blas64.Axpy(f, blas64.Vector{N: len(per), Inc: 1, Data: per}, blas64.Vector{N: len(grad), Inc: 1, Data: grad})
			}
		}
	})
}

// TestJointClippedSum checks the joint clipping of two networks on the
// same rows against materialised per-unit gradients: one factor per unit
// from the concatenated norm, the clipped sum in each part, a non-finite
// value in one part zeroing the unit in both, and one part agreeing with
// ClippedSum bit for bit.
func TestJointClippedSum(t *testing.T) {
	rng := testRNG(t)
	type net struct {
		m       *MLP
		p, x, y []float64
		dOut    []float64
	}
	const n = 10
	for _, bounds := range [][]int{nil, {0, 1, 4, 10}} {
		var nets []*net
		for _, tc := range []struct {
			act   Activation
			sizes []int
		}{{Tanh, []int{3, 5, 2}}, {ReLU, []int{3, 4, 4, 2}}} {
			m, err := NewMLPActivation(tc.act, tc.sizes...)
			if err != nil {
				t.Fatal(err)
			}
			nt := &net{m: m, p: make([]float64, m.NumParams()), x: randSlice(rng, n*3, 1), y: make([]float64, n*2)}
			m.Init(nt.p, rng, 1)
			m.ForwardBatch(nt.y, nt.p, nt.x, n)
			nt.dOut = randSlice(rng, n*2, 1)
			nets = append(nets, nt)
		}
		refs := [][][]float64{refUnitGrads(nets[0].m, nets[0].p, nets[0].dOut, bounds), refUnitGrads(nets[1].m, nets[1].p, nets[1].dOut, bounds)}
		U := len(refs[0])
		med := 0.0
		for u := range U {
			med += math.Hypot(floats.Norm(refs[0][u], 2), floats.Norm(refs[1][u], 2)) / float64(U)
		}
		clippers := []*GhostClipper{NewGhostClipper(nets[0].m), NewGhostClipper(nets[1].m)}
		for _, clip := range []float64{med / 3, med, 10 * med} {
			want := [][]float64{make([]float64, nets[0].m.NumParams()), make([]float64, nets[1].m.NumParams())}
			nClip := 0
			for u := range U {
				f := 1.0
				if nr := math.Hypot(floats.Norm(refs[0][u], 2), floats.Norm(refs[1][u], 2)); nr > clip {
					f, nClip = clip/nr, nClip+1
				}
				floats.AddScaled(want[0], f, refs[0][u])
				floats.AddScaled(want[1], f, refs[1][u])
			}
			parts := make([]JointPart, 2)
			for i, nt := range nets {
				nt.m.ForwardBatch(nt.y, nt.p, nt.x, n)
				parts[i] = JointPart{Clipper: clippers[i], Grad: make([]float64, nt.m.NumParams()), Params: nt.p, DOut: nt.dOut}
			}
			if c := JointClippedSum(parts, bounds, clip); c != nClip {
				t.Errorf("clip %g: %d clipped, want %d", clip, c, nClip)
			}
			for i := range parts {
				if d := floats.Distance(parts[i].Grad, want[i], math.Inf(1)); d > 1e-10*(1+floats.Norm(want[i], math.Inf(1))) {
					t.Errorf("bounds %v clip %g part %d: off by %g", bounds, clip, i, d)
				}
			}
		}
		// A NaN in the second network's output gradient of unit 0 zeroes
		// unit 0 in both parts.
		nets[1].dOut[0] = math.NaN()
		parts := make([]JointPart, 2)
		for i, nt := range nets {
			nt.m.ForwardBatch(nt.y, nt.p, nt.x, n)
			parts[i] = JointPart{Clipper: clippers[i], Grad: make([]float64, nt.m.NumParams()), Params: nt.p, DOut: nt.dOut}
		}
		JointClippedSum(parts, bounds, 1e9)
		for i := range parts {
			want := make([]float64, len(parts[i].Grad))
			for u := 1; u < U; u++ {
				floats.Add(want, refs[i][u])
			}
			if d := floats.Distance(parts[i].Grad, want, math.Inf(1)); d > 1e-10*(1+floats.Norm(want, math.Inf(1))) {
				t.Errorf("bounds %v: part %d with unit 0 non-finite: off by %g", bounds, i, d)
			}
			if clippers[i].LastNonFinite() != 1 {
				t.Errorf("part %d: %d non-finite units, want 1", i, clippers[i].LastNonFinite())
			}
		}
		nets[1].dOut[0] = 0.5
		// One part is ClippedSum exactly.
		nt := nets[0]
		a, b := make([]float64, nt.m.NumParams()), make([]float64, nt.m.NumParams())
		nt.m.ForwardBatch(nt.y, nt.p, nt.x, n)
		NewGhostClipper(nt.m).ClippedSum(a, nt.p, nt.dOut, bounds, med/2)
		nt.m.ForwardBatch(nt.y, nt.p, nt.x, n)
		JointClippedSum([]JointPart{{Clipper: NewGhostClipper(nt.m), Grad: b, Params: nt.p, DOut: nt.dOut}}, bounds, med/2)
		if !slices.Equal(a, b) {
			t.Errorf("bounds %v: one part differs from ClippedSum", bounds)
		}
	}
}
