package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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
// BenchmarkDPSGDPeer (Opacus's losses, SGD and activations; docs/performance.md,
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

// jointNet is one network of the joint clipping tests: its clipper,
// parameters, a batch of n rows, the loss's output gradient and the
// gradient JointClippedSum writes.
type jointNet struct {
	m          *MLP
	g          *GhostClipper
	n          int
	p, x, y    []float64
	dOut, grad []float64
}

func newJointNet(tb testing.TB, rng *rand.Rand, act Activation, n int, sizes ...int) *jointNet {
	tb.Helper()
	m, err := NewMLPActivation(act, sizes...)
	if err != nil {
		tb.Fatal(err)
	}
	nt := &jointNet{m: m, g: NewGhostClipper(m), n: n, p: make([]float64, m.NumParams()),
		x: randSlice(rng, n*m.In(), 1), y: make([]float64, n*m.Out()),
		dOut: randSlice(rng, n*m.Out(), 1), grad: make([]float64, m.NumParams())}
	m.Init(nt.p, rng, 1)
	return nt
}

// part runs the batch forward pass the clipper reads and returns the
// network's JointPart.
func (nt *jointNet) part() JointPart {
	nt.m.ForwardBatch(nt.y, nt.p, nt.x, nt.n)
	return JointPart{Clipper: nt.g, Grad: nt.grad, Params: nt.p, DOut: nt.dOut}
}

// unitGrads materialises each unit's gradient as the sum of its rows'
// gradients, each from MLP.Backward after a one-row ForwardBatch (it
// overwrites the batch cache: call part again before clipping).
func (nt *jointNet) unitGrads(bounds []int) [][]float64 {
	m := nt.m
	in, out := m.In(), m.Out()
	U := nt.g.units(bounds, nt.n)
	y := make([]float64, out)
	row := make([]float64, m.NumParams())
	refs := make([][]float64, U)
	for u := range U {
		refs[u] = make([]float64, m.NumParams())
		r0, r1 := unitRows(bounds, u)
		for i := r0; i < r1; i++ {
			m.ForwardBatch(y, nt.p, nt.x[i*in:(i+1)*in], 1)
			m.Backward(row, nt.p, nt.dOut[i*out:(i+1)*out])
			floats.Add(refs[u], row)
		}
	}
	return refs
}

// jointNorm is the norm of unit u's materialised gradient concatenated
// over the networks.
func jointNorm(refs [][][]float64, u int) float64 {
	s := 0.0
	for _, r := range refs {
		s += floats.Dot(r[u], r[u])
	}
	return math.Sqrt(s)
}

// closeRel reports whether got is within tol of want, relative to want's
// largest element.
func closeRel(got, want []float64, tol float64) bool {
	return floats.Distance(got, want, math.Inf(1)) <= tol*floats.Norm(want, math.Inf(1))
}

// TestJointClippedSum checks the joint clipping of two networks of
// different shapes and activations on the same rows against their
// materialised per-unit gradients: one factor per unit from the norm of the
// concatenated gradient, the clipped sum in each network, the certified
// bound, a non-finite value in either network (or an overflowing joint
// norm) zeroing the unit in both, and one part agreeing with ClippedSum bit
// for bit.
func TestJointClippedSum(t *testing.T) {
	const n = 10
	for _, tc := range []struct {
		name   string
		bounds []int
	}{
		{"rows", nil},
		{"units", []int{0, 1, 4, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := testRNG(t)
			nets := []*jointNet{
				newJointNet(t, rng, Tanh, n, 3, 5, 2),
				newJointNet(t, rng, ReLU, n, 3, 4, 4, 2),
			}
			refs := [][][]float64{nets[0].unitGrads(tc.bounds), nets[1].unitGrads(tc.bounds)}
			U := len(refs[0])
			med := 0.0
			for u := range U {
				med += jointNorm(refs, u) / float64(U)
			}
			parts := make([]JointPart, len(nets))
			joint := func(clip float64) int {
				for i, nt := range nets {
					parts[i] = nt.part()
				}
				return JointClippedSum(parts, tc.bounds, clip)
			}

			t.Run("sums", func(t *testing.T) {
				for _, clip := range []float64{med / 3, med, 10 * med} {
					want := [][]float64{make([]float64, len(nets[0].grad)), make([]float64, len(nets[1].grad))}
					nClip := 0
					for u := range U {
						f := 1.0
						if nr := jointNorm(refs, u); nr > clip {
							f, nClip = clip/nr, nClip+1
						}
						floats.AddScaled(want[0], f, refs[0][u])
						floats.AddScaled(want[1], f, refs[1][u])
					}
					if c := joint(clip); c != nClip {
						t.Errorf("clip %g: %d clipped, want %d", clip, c, nClip)
					}
					for i, nt := range nets {
						if !closeRel(nt.grad, want[i], 1e-10) {
							t.Errorf("clip %g network %d: off by %g", clip, i, floats.Distance(nt.grad, want[i], math.Inf(1)))
						}
						for u := range U {
							if got, want := nt.g.LastNorm(u), floats.Norm(refs[i][u], 2); math.Abs(got-want) > 1e-10*want {
								t.Errorf("clip %g network %d unit %d: LastNorm %g, want %g", clip, i, u, got, want)
							}
						}
						if nf := nt.g.LastNonFinite(); nf != 0 {
							t.Errorf("clip %g network %d: %d non-finite units", clip, i, nf)
						}
					}
				}
			})

			t.Run("bound", func(t *testing.T) {
				for _, clip := range []float64{med / 3, med} {
					joint(clip)
					for u := range U {
						f := nets[0].g.fac[u]
						if f1 := nets[1].g.fac[u]; f1 != f {
							t.Fatalf("clip %g unit %d: factors %v and %v differ", clip, u, f, f1)
						}
						// Certified: the factor times the joint norm it was
						// computed from, in floating point.
						if nr := math.Sqrt(nets[0].g.sq[u] + nets[1].g.sq[u]); f*nr > clip {
							t.Errorf("clip %g unit %d: f %v * joint norm %v > clip", clip, u, f, nr)
						}
						// Recomputed from the materialised gradients.
						nr := jointNorm(refs, u)
						if f*nr > clip*(1+1e-12) {
							t.Errorf("clip %g unit %d: clipped joint norm %v > clip", clip, u, f*nr)
						}
						if nr > clip*(1+1e-12) && f == 1 {
							t.Errorf("clip %g unit %d: joint norm %v not clipped", clip, u, nr)
						}
					}
				}
			})

			// Each case makes unit 1 non-finite (rows [r0, r1)); with a clip
			// that clips nothing, every network's sum is that of the other
			// units.
			const bad = 1
			r0, r1 := unitRows(tc.bounds, bad)
			for _, nf := range []struct {
				name   string
				inject func()
			}{
				{"nan-dout-second", func() { nets[1].dOut[r0*2] = math.NaN() }},
				{"inf-input-first", func() { nets[0].x[r0*3+1] = math.Inf(-1) }},
				// With several rows, the second network's squared norm is
				// finite (zero): only the flag zeroes the unit in the first.
				{"nan-input-zero-dout-second", func() {
					nets[1].x[(r1-1)*3] = math.NaN()
					clear(nets[1].dOut[r0*2 : r1*2])
				}},
				{"joint-overflow", func() {
					// Each network's squared norm about 1e308, finite;
					// their sum overflows.
					for i, nt := range nets {
						floats.Scale(1e154/floats.Norm(refs[i][bad], 2), nt.dOut[r0*2:r1*2])
					}
				}},
			} {
				t.Run(nf.name, func(t *testing.T) {
					saved := make([][2][]float64, len(nets))
					for i, nt := range nets {
						saved[i] = [2][]float64{slices.Clone(nt.x), slices.Clone(nt.dOut)}
					}
					defer func() {
						for i, nt := range nets {
							copy(nt.x, saved[i][0])
							copy(nt.dOut, saved[i][1])
						}
					}()
					nf.inject()
					joint(1e9)
					for i, nt := range nets {
						want := make([]float64, len(nt.grad))
						for u := range U {
							if u != bad {
								floats.Add(want, refs[i][u])
							}
						}
						if !closeRel(nt.grad, want, 1e-10) {
							t.Errorf("network %d: off by %g", i, floats.Distance(nt.grad, want, math.Inf(1)))
						}
						if c := nt.g.LastNonFinite(); c != 1 {
							t.Errorf("network %d: %d non-finite units, want 1", i, c)
						}
						if nf.name == "joint-overflow" && math.IsInf(nt.g.LastNorm(bad), 0) {
							t.Errorf("network %d: own norm of unit %d overflowed: the case does not test the joint norm", i, bad)
						}
					}
				})
			}

			t.Run("one-part", func(t *testing.T) {
				for i, nt := range nets {
					for _, nan := range []bool{false, true} {
						dOut := nt.dOut
						if nan { // unit 0 non-finite
							dOut = slices.Clone(nt.dOut)
							dOut[0] = math.NaN()
						}
						for _, clip := range []float64{med / 3, med, 10 * med} {
							a, b := make([]float64, len(nt.grad)), make([]float64, len(nt.grad))
							ga, gb := NewGhostClipper(nt.m), NewGhostClipper(nt.m)
							nt.m.ForwardBatch(nt.y, nt.p, nt.x, n)
							ca := ga.ClippedSum(a, nt.p, dOut, tc.bounds, clip)
							nt.m.ForwardBatch(nt.y, nt.p, nt.x, n)
							cb := JointClippedSum([]JointPart{{Clipper: gb, Grad: b, Params: nt.p, DOut: dOut}}, tc.bounds, clip)
							if ca != cb || !slices.Equal(a, b) {
								t.Errorf("network %d nan %v clip %g: one part differs from ClippedSum", i, nan, clip)
							}
							if na, nb := ga.LastNonFinite(), gb.LastNonFinite(); na != nb || (na > 0) != nan {
								t.Errorf("network %d nan %v clip %g: %d and %d non-finite units", i, nan, clip, na, nb)
							}
							for u := range U {
								if x, y := ga.LastNorm(u), gb.LastNorm(u); x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
									t.Errorf("network %d nan %v clip %g unit %d: LastNorm %v and %v", i, nan, clip, u, x, y)
								}
							}
						}
					}
				}
			})
		})
	}
}

func TestJointClippedSumPanics(t *testing.T) {
	rng := testRNG(t)
	a := newJointNet(t, rng, Tanh, 6, 3, 5, 2)
	b := newJointNet(t, rng, ReLU, 6, 3, 4, 4, 2)
	short := newJointNet(t, rng, ReLU, 5, 3, 4, 4, 2)
	for _, tc := range []struct {
		name  string
		parts func() []JointPart
		clip  float64
		want  string
	}{
		{"no-part", func() []JointPart { return nil }, 1, "no part"},
		{"no-clipper", func() []JointPart { return []JointPart{a.part(), {}} }, 1, "part 1 has no clipper"},
		{"rows", func() []JointPart { return []JointPart{a.part(), short.part()} }, 1, "part 1 has 5 rows, part 0 has 6"},
		{"same-clipper", func() []JointPart { return []JointPart{a.part(), b.part(), a.part()} }, 1, "parts 0 and 2 share a network"},
		{"same-network", func() []JointPart {
			p := b.part()
			p.Clipper = NewGhostClipper(b.m)
			return []JointPart{a.part(), b.part(), p}
		}, 1, "parts 1 and 2 share a network"},
		{"grad", func() []JointPart {
			p := b.part()
			p.Grad = p.Grad[1:]
			return []JointPart{a.part(), p}
		}, 1, "grad"},
		{"clip", func() []JointPart { return []JointPart{a.part(), b.part()} }, math.NaN(), "clip norm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := tc.parts()
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("panic %v, want one containing %q", r, tc.want)
				}
			}()
			JointClippedSum(parts, nil, tc.clip)
		})
	}
}

func TestJointClippedSumAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	rng := testRNG(t)
	for _, bounds := range [][]int{nil, {0, 3, 4, 16, 32}} {
		nets := []*jointNet{newJointNet(t, rng, ReLU, 32, 4, 64, 64, 2), newJointNet(t, rng, Tanh, 32, 4, 32, 2)}
		parts := []JointPart{nets[0].part(), nets[1].part()}
		JointClippedSum(parts, bounds, 0.1)
		if a := testing.AllocsPerRun(5, func() { JointClippedSum(parts, bounds, 0.1) }); a != 0 {
			t.Errorf("bounds %v: %v allocs, want 0", bounds, a)
		}
	}
}

// BenchmarkJointClippedSum measures the joint clipped sum of two ReLU
// 4-256-256-2 networks (discrete BCQ's Q and imitation networks) over 128
// one-row units and, in the same run, two separate ClippedSum calls (the
// same passes with a factor per network). The batch is forwarded once:
// both sums recompute the back-propagation from the cached activations.
func BenchmarkJointClippedSum(b *testing.B) {
	const n = 128
	rng := rand.New(rand.NewPCG(1, 2))
	nets := []*jointNet{newJointNet(b, rng, ReLU, n, 4, 256, 256, 2), newJointNet(b, rng, ReLU, n, 4, 256, 256, 2)}
	parts := []JointPart{nets[0].part(), nets[1].part()}
	b.Run("joint", func(b *testing.B) {
		JointClippedSum(parts, nil, 0.1)
		b.ReportAllocs()
		for b.Loop() {
			JointClippedSum(parts, nil, 0.1)
		}
	})
	b.Run("separate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, nt := range nets {
				nt.g.ClippedSum(nt.grad, nt.p, nt.dOut, nil, 0.1)
			}
		}
	})
}
