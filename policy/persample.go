package policy

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// GhostClipper computes the clipped sum of per-unit gradients of an MLP,
// sum_u min(1, C/||g_u||) g_u (DP-SGD, Abadi et al. 2016, "Deep Learning
// with Differential Privacy", Algorithm 1), without materialising the g_u:
// norms by the (mixed) ghost-norm trick, the sum by a second, row-scaled
// backward pass (docs/privacy.md, section 6). A unit (one transition, one
// episode) is a run of consecutive rows of the last ForwardBatch. It
// allocates nothing in steady state and is not safe for concurrent use.
type GhostClipper struct {
	m         *MLP
	sq        []float64 // squared norm per unit
	fac       []float64 // clip factor per unit
	bad       []bool    // unit with a non-finite value (zero contribution)
	runs      []int     // row ranges [r0, r1) of consecutive finite units
	nonFinite int       // units zeroed by the last ClippedSum
	scratch   []float64 // materialised layer gradient or two Gram matrices
}

// NewGhostClipper returns a clipper for the network m. It must be used with
// m's own ForwardBatch: it reads the activations that call cached.
func NewGhostClipper(m *MLP) *GhostClipper {
	return &GhostClipper{m: m}
}

// units returns the number of units and checks bounds: nil means one unit
// per row, otherwise bounds are ascending row offsets with bounds[0] = 0 and
// bounds[len-1] = n, unit u being rows [bounds[u], bounds[u+1]).
func (g *GhostClipper) units(bounds []int, n int) int {
	if bounds == nil {
		return n
	}
	if len(bounds) < 2 || bounds[0] != 0 || bounds[len(bounds)-1] != n {
		panic(fmt.Sprintf("policy: ghost clipper bounds %v do not cover %d rows", bounds, n))
	}
	for u := 1; u < len(bounds); u++ {
		if bounds[u] <= bounds[u-1] {
			panic(fmt.Sprintf("policy: ghost clipper bounds not increasing at %d", u))
		}
	}
	return len(bounds) - 1
}

func unitRows(bounds []int, u int) (int, int) {
	if bounds == nil {
		return u, u + 1
	}
	return bounds[u], bounds[u+1]
}

// backpropDeltas back-propagates dOut through the last ForwardBatch, leaving
// in m.deltas[l+1] the gradient with respect to the pre-activations of layer
// l's output for every layer. It computes no parameter gradient.
func (m *MLP) backpropDeltas(params, dOut []float64) {
	m.checkParams(params)
	n := m.batchN
	if len(dOut) != n*m.Out() {
		panic(fmt.Sprintf("policy: mlp backprop dOut %d, want %d", len(dOut), n*m.Out()))
	}
	L := len(m.sizes) - 1
	copy(m.deltas[L][:n*m.Out()], dOut)
	for l := L - 1; l >= 0; l-- {
		in, out := m.sizes[l], m.sizes[l+1]
		d := m.deltas[l+1][:n*out]
		if l < L-1 {
			m.activationGrad(d, l+1, n)
		}
		if l > 0 {
			gemmSerial(blas.NoTrans, blas.NoTrans, 1,
				blas64.General{Rows: n, Cols: out, Stride: out, Data: d},
				m.weights(params, l), 0,
				blas64.General{Rows: n, Cols: in, Stride: in, Data: m.deltas[l][:n*in]})
		}
	}
}

func (g *GhostClipper) grow(units int) {
	if len(g.sq) < units {
		g.sq = make([]float64, units)
		g.fac = make([]float64, units)
		g.bad = make([]bool, units)
		g.runs = make([]int, 0, 2*units)
	}
}

func (g *GhostClipper) scratchOf(n int) []float64 {
	if len(g.scratch) < n {
		g.scratch = make([]float64, n)
	}
	return g.scratch[:n]
}

// sqNorms runs pass 1 and fills g.sq[:U] with the squared gradient norm of
// each unit.
func (g *GhostClipper) sqNorms(params, dOut []float64, bounds []int) int {
	m := g.m
	n := m.batchN
	U := g.units(bounds, n)
	g.grow(U)
	m.backpropDeltas(params, dOut)
	sq := g.sq[:U]
	clear(sq)
	L := len(m.sizes) - 1
	for l := 0; l < L; l++ {
		in, out := m.sizes[l], m.sizes[l+1]
		A, D := m.acts[l][:n*in], m.deltas[l+1][:n*out]
		for u := 0; u < U; u++ {
			r0, r1 := unitRows(bounds, u)
			T := r1 - r0
			switch {
			case T == 1:
				sq[u] += dot(D[r0*out:r1*out], D[r0*out:r1*out]) * (dot(A[r0*in:r1*in], A[r0*in:r1*in]) + 1)
			case T*(in+out) < in*out: // ghost norm from the two Gram matrices
				s := g.scratchOf(2 * T * T)
				ga, gd := s[:T*T], s[T*T:]
				gemmSerial(blas.NoTrans, blas.Trans, 1,
					blas64.General{Rows: T, Cols: in, Stride: in, Data: A[r0*in : r1*in]},
					blas64.General{Rows: T, Cols: in, Stride: in, Data: A[r0*in : r1*in]}, 0,
					blas64.General{Rows: T, Cols: T, Stride: T, Data: ga})
				gemmSerial(blas.NoTrans, blas.Trans, 1,
					blas64.General{Rows: T, Cols: out, Stride: out, Data: D[r0*out : r1*out]},
					blas64.General{Rows: T, Cols: out, Stride: out, Data: D[r0*out : r1*out]}, 0,
					blas64.General{Rows: T, Cols: T, Stride: T, Data: gd})
				acc := 0.0
				for i, v := range gd {
					acc += v * (ga[i] + 1)
				}
				sq[u] += acc
			default: // materialise this layer's gradient D^T A of the unit
				w := g.scratchOf(out*in + out)
				gemmSerial(blas.Trans, blas.NoTrans, 1,
					blas64.General{Rows: T, Cols: out, Stride: out, Data: D[r0*out : r1*out]},
					blas64.General{Rows: T, Cols: in, Stride: in, Data: A[r0*in : r1*in]}, 0,
					blas64.General{Rows: out, Cols: in, Stride: in, Data: w[:out*in]})
				db := w[out*in:]
				clear(db)
				for t := r0; t < r1; t++ {
					for o, v := range D[t*out : (t+1)*out] {
						db[o] += v
					}
				}
				sq[u] += dot(w, w)
			}
		}
	}
	return U
}

func dot(x, y []float64) float64 {
	return blas64.Dot(blas64.Vector{N: len(x), Inc: 1, Data: x}, blas64.Vector{N: len(y), Inc: 1, Data: y[:len(x)]})
}

// Norms writes into dst the L2 norm of each unit's gradient with respect to
// params, for the loss whose gradient with respect to the outputs of the last
// ForwardBatch (same params) is dOut (rows x Out(), row-major). bounds gives
// the units: nil for one unit per row, otherwise ascending row offsets
// starting at 0 and ending at the batch size. len(dst) must be the number of
// units. It allocates nothing once its workspaces have grown.
func (g *GhostClipper) Norms(dst, params, dOut []float64, bounds []int) {
	U := g.sqNorms(params, dOut, bounds)
	if len(dst) != U {
		panic(fmt.Sprintf("policy: ghost clipper norms dst %d, want %d units", len(dst), U))
	}
	for u, s := range g.sq[:U] {
		dst[u] = math.Sqrt(s)
	}
}

// ClippedSum writes into grad (len NumParams(), overwritten) the sum over
// units of the unit gradients, each scaled by min(1, clip/||g_u||) so that
// its norm is at most clip > 0; the arguments are as for Norms. It returns
// the number of units whose norm exceeded clip (a diagnostic of the private
// data: never release it).
//
// A unit with a NaN or ±Inf anywhere in its rows (input, activations,
// back-propagated gradients) or whose squared norm is not finite (NaN, or a
// norm above about 1.3e154, whose square overflows) contributes the zero
// vector: its rows are left out of the sums entirely, since 0 * NaN = NaN
// would otherwise poison the whole gradient. LastNonFinite counts them.
//
// Rounding. The factor f_u = clip/||g_u|| is lowered by ulps until f_u
// ||g_u|| <= clip in floating point, so the scaled norm never rounds above
// clip. ||g_u|| itself is a floating-point evaluation of the norm formulas
// above (relative error of the order of the number of summed terms times
// 2^-53 for a one-row unit; larger only when a multi-row unit's rows nearly
// cancel, where the norm is far below its rows' norms): the bound holds to
// that rounding, as in every DP-SGD implementation that does not
// materialise per-unit gradients. A materialised vector is clipped exactly
// by Clip. The per-unit norms stay available through LastNorm until the next
// call. It allocates nothing once its workspaces have grown.
func (g *GhostClipper) ClippedSum(grad, params, dOut []float64, bounds []int, clip float64) (clipped int) {
	checkClip(clip)
	g.checkGrad(grad)
	U := g.sqNorms(params, dOut, bounds)
	g.markNonFinite(bounds, U)
	clipped = clipFactors(g.fac[:U], g.bad[:U], g.sq[:U], clip)
	g.countNonFinite(U)
	g.scaledSum(grad, bounds, U)
	return clipped
}

// JointPart is one network of a JointClippedSum: its clipper (after the
// network's ForwardBatch), the gradient to write, its parameters and the
// loss's gradient with respect to its outputs.
type JointPart struct {
	Clipper            *GhostClipper
	Grad, Params, DOut []float64
}

// JointClippedSum is ClippedSum for units whose gradient spans several
// networks trained on the same rows (discrete BCQ's Q-network and imitation
// network): unit u gets one factor f_u = min(1, clip/||g_u||), ||g_u|| the
// norm of its gradients concatenated over the parts (f_u lowered by ulps as
// in ClippedSum), applied in every part, and each part's Grad receives its
// share of the clipped sum. A unit with a non-finite value in any part, or
// a non-finite joint squared norm, is the zero vector in every part. The
// parts must be distinct networks forwarded on the same rows, split into
// units by bounds; it panics otherwise. It returns the number of units
// clipped. Afterwards each clipper's LastNorm is the unit's norm in its own
// network and LastNonFinite counts the units zeroed (the same in every
// part). parts may be reused between calls; it allocates nothing once the
// workspaces have grown.
func JointClippedSum(parts []JointPart, bounds []int, clip float64) (clipped int) {
	checkClip(clip)
	checkParts(parts)
	var U int
	for _, p := range parts {
		p.Clipper.checkGrad(p.Grad)
		U = p.Clipper.sqNorms(p.Params, p.DOut, bounds)
		p.Clipper.markNonFinite(bounds, U)
	}
	// The joint squared norms, then the factors, go into the first part's
	// factor workspace and the joint flags into its flags; every part's
	// own squared norms stay in its sq for LastNorm.
	g0 := parts[0].Clipper
	joint, bad := g0.fac[:U], g0.bad[:U]
	copy(joint, g0.sq[:U])
	for _, p := range parts[1:] {
		for u, v := range p.Clipper.sq[:U] {
			joint[u] += v
			bad[u] = bad[u] || p.Clipper.bad[u]
		}
	}
	clipped = clipFactors(joint, bad, joint, clip)
	for _, p := range parts {
		g := p.Clipper
		if g != g0 {
			copy(g.fac[:U], joint)
			copy(g.bad[:U], bad)
		}
		g.countNonFinite(U)
		g.scaledSum(p.Grad, bounds, U)
	}
	return clipped
}

// checkParts panics unless parts is a non-empty list of distinct networks
// forwarded on the same number of rows. Two parts on one network would
// overwrite each other's cached back-propagation.
func checkParts(parts []JointPart) {
	if len(parts) == 0 {
		panic("policy: joint clipped sum of no part")
	}
	for i, p := range parts {
		if p.Clipper == nil {
			panic(fmt.Sprintf("policy: joint clipped sum: part %d has no clipper", i))
		}
		if n, n0 := p.Clipper.m.batchN, parts[0].Clipper.m.batchN; n != n0 {
			panic(fmt.Sprintf("policy: joint clipped sum: part %d has %d rows, part 0 has %d", i, n, n0))
		}
		for j := range i {
			if parts[j].Clipper.m == p.Clipper.m {
				panic(fmt.Sprintf("policy: joint clipped sum: parts %d and %d share a network", j, i))
			}
		}
	}
}

// checkClip panics on a clip norm that is not finite and positive.
func checkClip(clip float64) {
	if !(clip > 0) || math.IsInf(clip, 0) {
		panic(fmt.Sprintf("policy: ghost clipper clip norm %v, must be finite and > 0", clip))
	}
}

// checkGrad panics on a gradient of the wrong length.
func (g *GhostClipper) checkGrad(grad []float64) {
	if len(grad) != g.m.n {
		panic(fmt.Sprintf("policy: ghost clipper grad %d, want %d", len(grad), g.m.n))
	}
}

// markNonFinite sets g.bad[u] for the units with a NaN or ±Inf in their
// rows' inputs, activations or back-propagated gradients.
func (g *GhostClipper) markNonFinite(bounds []int, U int) {
	m := g.m
	n := m.batchN
	bad := g.bad[:U]
	clear(bad)
	for l := 0; l < len(m.sizes)-1; l++ {
		in, out := m.sizes[l], m.sizes[l+1]
		A, D := m.acts[l][:n*in], m.deltas[l+1][:n*out]
		for u := 0; u < U; u++ {
			r0, r1 := unitRows(bounds, u)
			bad[u] = bad[u] || !allFinite(A[r0*in:r1*in]) || !allFinite(D[r0*out:r1*out])
		}
	}
}

// clipFactors writes into fac the clip factor of each unit from its squared
// norm sq (fac may be sq): 0 for a unit marked bad or whose squared norm is
// not finite (then marked bad), 1 at or below clip, else clip/||g|| lowered
// by ulps until f ||g|| <= clip. It returns the number of units clipped.
func clipFactors(fac []float64, bad []bool, sq []float64, clip float64) (clipped int) {
	for u, s := range sq {
		if bad[u] || math.IsNaN(s) || math.IsInf(s, 0) {
			bad[u] = true
			fac[u] = 0
			continue
		}
		fac[u] = 1
		if nrm := math.Sqrt(s); nrm > clip {
			f := clip / nrm
			for f*nrm > clip {
				f = math.Nextafter(f, 0)
			}
			fac[u] = f
			clipped++
		}
	}
	return clipped
}

// countNonFinite records the number of units marked bad.
func (g *GhostClipper) countNonFinite(U int) {
	g.nonFinite = 0
	for _, b := range g.bad[:U] {
		if b {
			g.nonFinite++
		}
	}
}

// scaledSum runs pass 2: grad = sum over the finite units of fac[u] times
// their gradient, from the cached activations and deltas of the last
// sqNorms.
func (g *GhostClipper) scaledSum(grad []float64, bounds []int, U int) {
	m := g.m
	n := m.batchN
	L := len(m.sizes) - 1
	fac, bad := g.fac[:U], g.bad[:U]
	// Row ranges of consecutive finite units: pass 2 sums over these only.
	runs := g.runs[:0]
	for u := 0; u < U; u++ {
		if bad[u] {
			continue
		}
		r0, r1 := unitRows(bounds, u)
		if k := len(runs); k > 0 && runs[k-1] == r0 {
			runs[k-1] = r1
		} else {
			runs = append(runs, r0, r1)
		}
	}
	g.runs = runs
	for l := 0; l < L; l++ {
		in, out := m.sizes[l], m.sizes[l+1]
		D := m.deltas[l+1][:n*out]
		for u := 0; u < U; u++ {
			if f := fac[u]; f != 1 && !bad[u] {
				r0, r1 := unitRows(bounds, u)
				for i := r0 * out; i < r1*out; i++ {
					D[i] *= f
				}
			}
		}
		w := grad[m.wOff[l] : m.wOff[l]+out*in]
		db := grad[m.bOff[l] : m.bOff[l]+out]
		clear(db)
		if len(runs) == 0 {
			clear(w)
		}
		for k := 0; k < len(runs); k += 2 {
			r0, r1 := runs[k], runs[k+1]
			beta := 1.0
			if k == 0 {
				beta = 0
			}
			gemmSerial(blas.Trans, blas.NoTrans, 1,
				blas64.General{Rows: r1 - r0, Cols: out, Stride: out, Data: D[r0*out : r1*out]},
				blas64.General{Rows: r1 - r0, Cols: in, Stride: in, Data: m.acts[l][r0*in : r1*in]}, beta,
				blas64.General{Rows: out, Cols: in, Stride: in, Data: w})
			for i := r0; i < r1; i++ {
				for o, v := range D[i*out : (i+1)*out] {
					db[o] += v
				}
			}
		}
	}
}

// LastNonFinite returns the number of units that the last ClippedSum or
// JointClippedSum counted as the zero vector because of a NaN or ±Inf (after
// a joint call, in any part or in the joint norm: the same count in every
// part). It is a diagnostic of the private data: never release it.
func (g *GhostClipper) LastNonFinite() int { return g.nonFinite }

// allFinite reports whether no element of x is NaN or ±Inf.
func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// LastNorm returns the gradient norm of unit u computed by the last Norms,
// ClippedSum or JointClippedSum call (before clipping; after a joint call,
// the norm in this clipper's network alone).
func (g *GhostClipper) LastNorm(u int) float64 { return math.Sqrt(g.sq[u]) }
