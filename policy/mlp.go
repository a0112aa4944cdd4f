package policy

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"dprl/internal/gemm"
	"dprl/internal/vecmath"
)

// Orthogonal initialisation gains, the usual PPO choices (Engstrom et al. 2020,
// "Implementation matters in deep policy gradients"; CleanRL's layer_init):
// sqrt(2) for tanh hidden layers, 0.01 for the policy's output layer (so the
// initial policy is close to uniform / zero-mean), 1 for the value output.
const (
	GainHidden    = math.Sqrt2
	GainPolicyOut = 0.01
	GainValueOut  = 1.0
)

// Activation is the nonlinearity of an MLP's hidden layers.
type Activation int

const (
	// Tanh, the default (the policy and value networks of PPO and DPPG).
	Tanh Activation = iota
	// ReLU, max(0, x), with derivative 0 at 0 (the convention of PyTorch).
	ReLU
	// Swish, x sigmoid(x) (Ramachandran, Zoph and Le, "Searching for
	// Activation Functions", 2017; SiLU), the dynamics models' activation.
	Swish
)

// String returns "tanh" or "relu".
func (a Activation) String() string {
	switch a {
	case Tanh:
		return "tanh"
	case ReLU:
		return "relu"
	case Swish:
		return "swish"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// MLP is a fully connected network with tanh (or ReLU: NewMLPActivation)
// hidden layers and a linear output layer, on float64. It owns no parameters: every method takes the flat
// parameter vector, laid out layer by layer as W_0 (Sizes[1] x Sizes[0],
// row-major), b_0, W_1, b_1, ..., so that a policy snapshot is one slice and
// the DP mechanism clips and noises one vector. Batched layers run dprl's
// packed GEMM (internal/gemm: single-threaded, deterministic, allocation-free,
// an AVX2/FMA kernel where the CPU has one) over views of the flat storage;
// a row of a batched forward does not depend on the batch. An MLP keeps
// reusable workspaces, so it is not safe for concurrent use; NewMLP is cheap.
type MLP struct {
	act   Activation
	sizes []int // layer widths: input, hidden..., output
	wOff  []int // offset of W_l in the flat vector
	bOff  []int // offset of b_l
	n     int   // number of parameters

	// Batch workspaces: acts[l] holds the input of layer l for the last
	// ForwardBatch (acts[0] is a copy of x), acts[L] the output.
	batchCap int
	batchN   int
	acts     [][]float64
	deltas   [][]float64 // gradient with respect to pre-activations / inputs, per layer
	pre      [][]float64 // Swish only: the hidden layers' pre-activations

	// Single-observation workspaces (Forward), separate from the batch cache.
	one [2][]float64
}

// NewMLP returns a network with the given layer widths: sizes[0] is the input
// dimension, sizes[len-1] the output dimension, the others tanh hidden layers.
// It returns an error unless there are at least two sizes, all positive.
func NewMLP(sizes ...int) (*MLP, error) { return NewMLPActivation(Tanh, sizes...) }

// MaxMLPParams bounds the parameters of a network MLPParams accepts (2^31:
// 16 GiB of float64, beyond any network this package trains or serves).
const MaxMLPParams = 1 << 31

// MLPParams returns the length of the flat parameter vector of a network
// with the given layer widths (weights and biases of every layer), without
// allocating anything: a decoder checks a file's sizes with it before it
// builds the network. Fewer than two sizes, a size below 1, or a total
// above MaxMLPParams (overflow included) is an error.
func MLPParams(sizes ...int) (int, error) {
	if len(sizes) < 2 {
		return 0, fmt.Errorf("policy: mlp needs at least input and output sizes, got %d sizes", len(sizes))
	}
	n := 0
	for i, s := range sizes {
		if s < 1 || s > MaxMLPParams {
			return 0, fmt.Errorf("policy: mlp sizes[%d] = %d, must be in 1..%d", i, s, MaxMLPParams)
		}
		if i == 0 {
			continue
		}
		// (in + 1) * out, both at most 2^31: the product fits in 63 bits.
		layer := (sizes[i-1] + 1) * s
		if layer > MaxMLPParams-n {
			return 0, fmt.Errorf("policy: mlp of sizes %v has more than %d parameters", sizes, MaxMLPParams)
		}
		n += layer
	}
	return n, nil
}

// NewMLPActivation is NewMLP with the given hidden activation.
func NewMLPActivation(act Activation, sizes ...int) (*MLP, error) {
	if act != Tanh && act != ReLU && act != Swish {
		return nil, fmt.Errorf("policy: mlp activation %v unknown", act)
	}
	if len(sizes) < 2 {
		return nil, fmt.Errorf("policy: mlp needs at least input and output sizes, got %v", sizes)
	}
	if _, err := MLPParams(sizes...); err != nil {
		return nil, err
	}
	m := &MLP{act: act, sizes: append([]int(nil), sizes...)}
	L := len(sizes) - 1
	m.wOff = make([]int, L)
	m.bOff = make([]int, L)
	maxW := 0
	for l := 0; l < L; l++ {
		m.wOff[l] = m.n
		m.n += sizes[l+1] * sizes[l]
		m.bOff[l] = m.n
		m.n += sizes[l+1]
	}
	for _, s := range sizes {
		maxW = max(maxW, s)
	}
	m.one[0] = make([]float64, maxW)
	m.one[1] = make([]float64, maxW)
	m.acts = make([][]float64, L+1)
	m.deltas = make([][]float64, L+1)
	return m, nil
}

// NumParams returns the length of the flat parameter vector.
func (m *MLP) NumParams() int { return m.n }

// Activation returns the hidden layers' activation.
func (m *MLP) Activation() Activation { return m.act }

// In returns the input dimension.
func (m *MLP) In() int { return m.sizes[0] }

// Out returns the output dimension.
func (m *MLP) Out() int { return m.sizes[len(m.sizes)-1] }

// Sizes returns a copy of the layer widths.
func (m *MLP) Sizes() []int { return append([]int(nil), m.sizes...) }

// Init writes an orthogonal initialisation into params: each weight matrix is
// gain times a (semi-)orthogonal matrix obtained from the QR decomposition of a
// standard Gaussian matrix (Saxe et al. 2014, with the sign correction of
// Mezzadri 2007 so the distribution is Haar), hidden layers with GainHidden,
// the output layer with outGain; biases are zero. Every draw comes from rng.
// Init allocates (it is called once per network).
func (m *MLP) Init(params []float64, rng *rand.Rand, outGain float64) {
	m.checkParams(params)
	L := len(m.sizes) - 1
	for l := 0; l < L; l++ {
		in, out := m.sizes[l], m.sizes[l+1]
		gain := GainHidden
		if l == L-1 {
			gain = outGain
		}
		orthogonal(params[m.wOff[l]:m.wOff[l]+out*in], out, in, gain, rng)
		clear(params[m.bOff[l] : m.bOff[l]+out])
	}
}

// orthogonal writes gain * Q into w (rows x cols, row-major), Q having
// orthonormal rows (rows <= cols) or orthonormal columns (rows >= cols).
func orthogonal(w []float64, rows, cols int, gain float64, rng *rand.Rand) {
	big, small := rows, cols
	if rows < cols {
		big, small = cols, rows
	}
	g := mat.NewDense(big, small, nil)
	for i := 0; i < big; i++ {
		for j := 0; j < small; j++ {
			g.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q, r mat.Dense
	qr.QTo(&q)
	qr.RTo(&r)
	for j := 0; j < small; j++ {
		s := gain
		if r.At(j, j) < 0 {
			s = -gain
		}
		for i := 0; i < big; i++ {
			v := s * q.At(i, j)
			if rows >= cols {
				w[i*cols+j] = v // W = Q[:, :cols]
			} else {
				w[j*cols+i] = v // W = Q[:, :rows]^T
			}
		}
	}
}

func (m *MLP) checkParams(params []float64) {
	if len(params) != m.n {
		panic(fmt.Sprintf("policy: mlp params length %d, want %d", len(params), m.n))
	}
}

func (m *MLP) weights(params []float64, l int) blas64.General {
	in, out := m.sizes[l], m.sizes[l+1]
	return blas64.General{Rows: out, Cols: in, Stride: in, Data: params[m.wOff[l] : m.wOff[l]+out*in]}
}

// Forward computes the network output for one observation x into dst
// (len Out()). It does not disturb the batch cache used by Backward and
// allocates nothing.
func (m *MLP) Forward(dst, params, x []float64) {
	m.checkParams(params)
	if len(x) != m.In() || len(dst) != m.Out() {
		panic(fmt.Sprintf("policy: mlp forward x %d dst %d, want %d and %d", len(x), len(dst), m.In(), m.Out()))
	}
	L := len(m.sizes) - 1
	cur := x
	for l := 0; l < L; l++ {
		out := m.sizes[l+1]
		var y []float64
		if l == L-1 {
			y = dst
		} else {
			y = m.one[l%2][:out]
		}
		copy(y, params[m.bOff[l]:m.bOff[l]+out])
		blas64.Gemv(blas.NoTrans, 1, m.weights(params, l),
			blas64.Vector{N: len(cur), Inc: 1, Data: cur}, 1,
			blas64.Vector{N: out, Inc: 1, Data: y})
		if l < L-1 {
			m.activate(y)
		}
		cur = y
	}
}

// grow makes the batch workspaces hold n rows; it allocates only when n
// exceeds every earlier batch size.
func (m *MLP) grow(n int) {
	if n <= m.batchCap {
		return
	}
	for l := range m.acts {
		m.acts[l] = make([]float64, n*m.sizes[l])
		m.deltas[l] = make([]float64, n*m.sizes[l])
	}
	if m.act == Swish {
		m.pre = make([][]float64, len(m.acts))
		for l := 1; l < len(m.acts)-1; l++ {
			m.pre[l] = make([]float64, n*m.sizes[l])
		}
	}
	m.batchCap = n
}

// Reserve grows the batch workspaces to hold n rows, so that later batches of
// at most n rows allocate nothing.
func (m *MLP) Reserve(n int) { m.grow(n) }

// ForwardBatch computes the outputs for n observations stored row-major in x
// (n*In()) into dst (n*Out()), and caches the activations for Backward.
func (m *MLP) ForwardBatch(dst, params, x []float64, n int) {
	m.checkParams(params)
	if n < 1 || len(x) != n*m.In() || len(dst) != n*m.Out() {
		panic(fmt.Sprintf("policy: mlp forward batch n %d x %d dst %d", n, len(x), len(dst)))
	}
	m.grow(n)
	m.batchN = n
	copy(m.acts[0], x)
	L := len(m.sizes) - 1
	for l := 0; l < L; l++ {
		in, out := m.sizes[l], m.sizes[l+1]
		a := m.acts[l][:n*in]
		y := m.acts[l+1][:n*out]
		b := params[m.bOff[l] : m.bOff[l]+out]
		// y = a W^T + b in one pass, the ReLU of hidden layers in the
		// products' epilogue: the bits of copying b into every row,
		// multiplying with beta 1 and a separate ReLU pass.
		relu := l < L-1 && m.act == ReLU
		gemm.DgemmBias(blas.NoTrans, blas.Trans, n, out, in, 1, a, in, m.weights(params, l).Data, in, b, relu, y, out)
		if l < L-1 && !relu {
			if m.act == Swish {
				copy(m.pre[l+1][:n*out], y)
			}
			m.activate(y)
		}
	}
	copy(dst, m.acts[L][:n*m.Out()])
}

// KeepRows restricts the cache of the last ForwardBatch to the given rows
// (indices into that batch, increasing), renumbered 0, 1, ... in that order,
// so that a following Backward or BackwardInput runs on those rows alone,
// with dOut and dx of len(rows) rows. Each row's gradients are computed as in
// the whole batch, to the bit: a row's products do not depend on the other
// rows. It allocates nothing; ForwardBatch starts a new cache.
func (m *MLP) KeepRows(rows []int) {
	prev := -1
	for _, r := range rows {
		if r <= prev || r >= m.batchN {
			panic(fmt.Sprintf("policy: mlp keep rows: row %d after %d of %d", r, prev, m.batchN))
		}
		prev = r
	}
	for l, w := range m.sizes {
		compactRows(m.acts[l], rows, w)
		if m.pre != nil && m.pre[l] != nil {
			compactRows(m.pre[l], rows, w)
		}
	}
	m.batchN = len(rows)
}

// compactRows moves rows (increasing) of width w to the front of x, in order.
func compactRows(x []float64, rows []int, w int) {
	for i, r := range rows {
		if i != r {
			copy(x[i*w:(i+1)*w], x[r*w:(r+1)*w])
		}
	}
}

// Backward writes into grad (len NumParams()) the gradient of a scalar loss
// with respect to params, given dOut (n*Out(), row-major), the gradient of the
// loss with respect to the outputs of the last ForwardBatch (which must have
// been called with the same params and n). grad is overwritten, not
// accumulated. It allocates nothing.
func (m *MLP) Backward(grad, params, dOut []float64) {
	if len(grad) != m.n {
		panic(fmt.Sprintf("policy: mlp backward grad %d, want %d", len(grad), m.n))
	}
	m.backward(grad, nil, params, dOut)
}

// BackwardInput is Backward that also writes into dx (n*In(), row-major)
// the gradient of the loss with respect to the inputs of the last
// ForwardBatch (an actor's gradient through a critic, say). With grad nil
// it computes dx alone, skipping the parameter gradient. It allocates
// nothing.
func (m *MLP) BackwardInput(grad, dx, params, dOut []float64) {
	if grad != nil && len(grad) != m.n {
		panic(fmt.Sprintf("policy: mlp backward grad %d, want %d", len(grad), m.n))
	}
	if len(dx) != m.batchN*m.In() {
		panic(fmt.Sprintf("policy: mlp backward dx %d, want %d", len(dx), m.batchN*m.In()))
	}
	m.backward(grad, dx, params, dOut)
}

func (m *MLP) backward(grad, dx, params, dOut []float64) {
	m.checkParams(params)
	n := m.batchN
	if len(dOut) != n*m.Out() {
		panic(fmt.Sprintf("policy: mlp backward dOut %d, want %d", len(dOut), n*m.Out()))
	}
	L := len(m.sizes) - 1
	copy(m.deltas[L][:n*m.Out()], dOut)
	for l := L - 1; l >= 0; l-- {
		in, out := m.sizes[l], m.sizes[l+1]
		d := m.deltas[l+1][:n*out] // dL/d(pre-activation of layer l output)
		if l < L-1 {
			m.activationGrad(d, l+1, n)
		}
		dG := blas64.General{Rows: n, Cols: out, Stride: out, Data: d}
		if grad != nil {
			// dW = d^T a
			gemmSerial(blas.Trans, blas.NoTrans, 1, dG,
				blas64.General{Rows: n, Cols: in, Stride: in, Data: m.acts[l][:n*in]}, 0,
				blas64.General{Rows: out, Cols: in, Stride: in, Data: grad[m.wOff[l] : m.wOff[l]+out*in]})
			// db = sum of the rows of d, in row order.
			vecmath.SumRows(grad[m.bOff[l]:m.bOff[l]+out], d, n)
		}
		if l > 0 || dx != nil {
			// d_in = d W
			dst := dx
			if l > 0 {
				dst = m.deltas[l][:n*in]
			}
			gemmSerial(blas.NoTrans, blas.NoTrans, 1, dG, m.weights(params, l), 0,
				blas64.General{Rows: n, Cols: in, Stride: in, Data: dst})
		}
	}
}

// FLOPs returns the floating-point operations of one ForwardBatch and one
// Backward over n rows, counting a multiply-add as two and ignoring
// activations and bias additions.
func (m *MLP) FLOPs(n int) (forward, backward float64) {
	L := len(m.sizes) - 1
	for l := 0; l < L; l++ {
		mac := float64(n * m.sizes[l] * m.sizes[l+1])
		forward += 2 * mac
		backward += 2 * mac // dW
		if l > 0 {
			backward += 2 * mac // d_in
		}
	}
	return forward, backward
}

// activate applies the hidden activation to y in place (internal/vecmath:
// tanh within 2 ulp of math.Tanh, four lanes at a time where the CPU has
// AVX2, and branch-free ReLU).
func (m *MLP) activate(y []float64) {
	switch m.act {
	case ReLU:
		vecmath.ReLU(y)
	case Swish:
		for i, v := range y {
			y[i] = v / (1 + math.Exp(-v))
		}
	default:
		vecmath.Tanh(y)
	}
}

// activationGrad multiplies d, the gradient with respect to the outputs of
// hidden layer l (its n rows of the last ForwardBatch), by the activation's
// derivative: 1 - y^2 for tanh, 1 where y > 0 (else 0) for ReLU (y the
// outputs), s (1 + x (1 - s)) with s = sigmoid(x) for Swish (x the cached
// pre-activations).
func (m *MLP) activationGrad(d []float64, l, n int) {
	y := m.acts[l][:len(d)]
	switch m.act {
	case ReLU:
		vecmath.ReLUGrad(d, y)
	case Swish:
		x := m.pre[l][:len(d)]
		for i, v := range x {
			s := 1 / (1 + math.Exp(-v))
			d[i] *= s * (1 + v*(1-s))
		}
	default:
		vecmath.TanhGrad(d, y)
	}
}
