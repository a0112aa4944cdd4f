package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"dprl/noise"
)

// peerShape is one of the DP-SGD shapes measured against Opacus (docs/performance.md,
// "Performance against peers"): an MLP, a batch size and a loss.
type peerShape struct {
	name  string
	sizes []int
	act   Activation
	batch int
	ce    bool // cross-entropy on random classes; else MSE on random targets
}

var dpsgdPeerShapes = []peerShape{
	{"a-4-64-64-8-tanh-B16-mse", []int{4, 64, 64, 8}, Tanh, 16, false},
	{"b-6-256-256-3-relu-B128-mse", []int{6, 256, 256, 3}, ReLU, 128, false},
	{"c-4-64-64-2-tanh-B64-ce", []int{4, 64, 64, 2}, Tanh, 64, true},
}

// peerStep is Opacus's DP-SGD step on prebuilt batches: forward, the loss
// gradient, the per-sample clipped sum (ghost clipping), Gaussian noise of
// standard deviation z C, division by the batch size and a plain SGD step.
// The noise is either floating-point normals from a seeded PCG, as Opacus
// draws them from torch's generator (exact == nil), or dprl's exact sampler
// on the path its learners use (addNoiseAndScale with a noise.Gaussian
// drawing from a ChaCha8 stream, as the production paths key one).
type peerStep struct {
	s       peerShape
	m       *MLP
	g       *GhostClipper
	p, grad []float64
	y, dOut []float64
	xs, ts  [][]float64 // 64 prebuilt batches: inputs and targets (class indices for CE)
	rng     *rand.Rand
	exact   *noise.Gaussian
	i       int
}

// newPeerStep builds the step for shape s, with dprl's exact noise when
// exact is set and floating-point normals otherwise.
func newPeerStep(tb testing.TB, s peerShape, exact bool) *peerStep {
	rng := rand.New(rand.NewPCG(1, 2))
	m, err := NewMLPActivation(s.act, s.sizes...)
	if err != nil {
		tb.Fatal(err)
	}
	ps := &peerStep{s: s, m: m, g: NewGhostClipper(m), rng: rng}
	if exact {
		ps.exact = noise.NewGaussian(rand.New(rand.NewChaCha8([32]byte{1, 2})))
	}
	ps.p = make([]float64, m.NumParams())
	m.Init(ps.p, rng, 1)
	ps.grad = make([]float64, m.NumParams())
	ps.y = make([]float64, s.batch*m.Out())
	ps.dOut = make([]float64, s.batch*m.Out())
	for range 64 {
		ps.xs = append(ps.xs, randSlice(rng, s.batch*m.In(), 1))
		if s.ce {
			t := make([]float64, s.batch)
			for i := range t {
				t[i] = float64(rng.IntN(m.Out()))
			}
			ps.ts = append(ps.ts, t)
		} else {
			ps.ts = append(ps.ts, randSlice(rng, s.batch*m.Out(), 1))
		}
	}
	m.Reserve(s.batch)
	return ps
}

func (ps *peerStep) step() {
	const lr, clip, z = 0.01, 1.0, 1.0
	m, n, k := ps.m, ps.s.batch, ps.m.Out()
	x, t := ps.xs[ps.i%64], ps.ts[ps.i%64]
	ps.i++
	m.ForwardBatch(ps.y, ps.p, x, n)
	// Per-sample losses (the clipped unit is one sample): MSE averaged over
	// outputs, or cross-entropy of the softmax.
	for i := range n {
		y, d := ps.y[i*k:(i+1)*k], ps.dOut[i*k:(i+1)*k]
		if ps.s.ce {
			mx := y[0]
			for _, v := range y {
				mx = max(mx, v)
			}
			var z float64
			for j, v := range y {
				d[j] = math.Exp(v - mx)
				z += d[j]
			}
			for j := range d {
				d[j] /= z
			}
			d[int(t[i])]--
			continue
		}
		for j := range d {
			d[j] = 2 * (y[j] - t[i*k+j]) / float64(k)
		}
	}
	ps.g.ClippedSum(ps.grad, ps.p, ps.dOut, nil, clip)
	inv := 1 / float64(n)
	if ps.exact != nil {
		addNoiseAndScale(ps.grad, z*clip, inv, ps.exact)
		for i, g := range ps.grad {
			ps.p[i] -= lr * g
		}
		return
	}
	for i, g := range ps.grad {
		ps.p[i] -= lr * (g + z*clip*ps.rng.NormFloat64()) * inv
	}
}

// peerNoises are the two noises of the Opacus comparison: Opacus's own
// (floating-point normals) and the exact sampler dprl ships.
var peerNoises = []struct {
	name  string
	exact bool
}{{"float", false}, {"exact", true}}

// BenchmarkDPSGDPeer measures DP-SGD steps/s on the three shapes of the
// Opacus comparison (scripts/perf/peers.py dpsgd runs both sides), with
// floating-point noise as Opacus adds (noise=float) and with the exact
// sampler dprl's learners use (noise=exact). Run with -cpu 1.
func BenchmarkDPSGDPeer(b *testing.B) {
	for _, s := range dpsgdPeerShapes {
		for _, nz := range peerNoises {
			b.Run(s.name+"/noise="+nz.name, func(b *testing.B) {
				ps := newPeerStep(b, s, nz.exact)
				ps.step()
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					ps.step()
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}

// TestDPSGDPeerStepAllocs: the benchmarked step allocates nothing and keeps
// the parameters finite.
func TestDPSGDPeerStepAllocs(t *testing.T) {
	for _, s := range dpsgdPeerShapes {
		for _, nz := range peerNoises {
			ps := newPeerStep(t, s, nz.exact)
			ps.step()
			if !raceEnabled {
				if a := testing.AllocsPerRun(5, ps.step); a != 0 {
					t.Errorf("%s, %s noise: %v allocations per step, want 0", s.name, nz.name, a)
				}
			}
			for _, v := range ps.p {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s, %s noise: parameters not finite", s.name, nz.name)
				}
			}
		}
	}
}
