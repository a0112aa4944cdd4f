package primorl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"dprl/ledger/accountant"
	"dprl/noise"
)

// Trajectory is one training trajectory's transitions: N rows of scaled
// inputs X (N x In) and targets Y (N x Out).
type Trajectory struct {
	X, Y []float64
	N    int
}

// TDPConfig is TDP Model Ensemble Training's settings (the paper's Table 5
// for Pendulum: q = 1e-3, E = 1, B = 16, lr 1e-3, per-layer clipping).
type TDPConfig struct {
	// Q is the Poisson sampling rate of trajectories, in (0, 1].
	Q float64
	// Z is the noise multiplier, >= 0 (0: no noise, no privacy).
	Z float64
	// C is the clipping norm of a trajectory's ensemble delta, > 0.
	C float64
	// Rounds is T >= 1, fixed before the run.
	Rounds int
	// LocalEpochs E >= 1, Batch B >= 1 and LR > 0 are the local gradient
	// descent's.
	LocalEpochs, Batch int
	LR                 float64
	Clip               ClipMode
	// Denominator is the fixed denominator of the averaged delta, q n with
	// a public n; 0 means q K with K the number of training trajectories.
	Denominator float64
	// ServerLR eta and ServerMomentum beta apply the noised average g~ of
	// each round as a server optimizer does: v <- beta v + g~, theta <-
	// theta + eta v (server momentum, as in Reddi et al., "Adaptive
	// Federated Optimization", ICLR 2021, Algorithm 2 with SGD with
	// momentum as the server optimizer). They read only the released g~:
	// post-processing, no privacy cost. ServerLR 0 means 1 and
	// ServerMomentum 0 none: the paper's theta <- theta + g~.
	ServerLR, ServerMomentum float64
	// Workers is how many sampled trajectories are trained at once (0:
	// GOMAXPROCS). The result does not depend on it: every draw is made
	// in the serial algorithm's order before the local training, and the
	// clipped deltas are summed in the order of the trajectories.
	Workers int
}

// Validate reports every invalid field.
func (c TDPConfig) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("primorl: "+f, a...)) }
	if !(c.Q > 0 && c.Q <= 1) {
		bad("sampling rate q %v, must be in (0, 1]", c.Q)
	}
	if !(c.Z >= 0) || math.IsInf(c.Z, 0) {
		bad("noise multiplier z %v, must be finite and >= 0", c.Z)
	}
	if !(c.C > 0) || math.IsInf(c.C, 0) {
		bad("clipping norm C %v, must be finite and > 0", c.C)
	}
	if c.Rounds < 1 {
		bad("rounds T = %d, must be >= 1", c.Rounds)
	}
	if c.LocalEpochs < 1 || c.Batch < 1 {
		bad("local epochs %d and batch %d, must be >= 1", c.LocalEpochs, c.Batch)
	}
	if !(c.LR > 0) || math.IsInf(c.LR, 0) {
		bad("learning rate %v, must be finite and > 0", c.LR)
	}
	if c.Clip != ClipFlat && c.Clip != ClipPerLayer {
		bad("clip mode %d unknown", int(c.Clip))
	}
	if !(c.Denominator >= 0) || math.IsInf(c.Denominator, 0) {
		bad("denominator %v, must be finite and >= 0", c.Denominator)
	}
	if !(c.ServerLR >= 0) || math.IsInf(c.ServerLR, 0) {
		bad("server step size %v, must be finite and > 0 (0: 1)", c.ServerLR)
	}
	if !(c.ServerMomentum >= 0 && c.ServerMomentum < 1) {
		bad("server momentum %v, must be in [0, 1)", c.ServerMomentum)
	}
	if c.Workers < 0 {
		bad("workers %d, must be >= 0 (0: GOMAXPROCS)", c.Workers)
	}
	return errors.Join(errs...)
}

// denominator returns the averaged delta's denominator for K training
// trajectories: Denominator, or q K.
func (c TDPConfig) denominator(K int) float64 {
	if c.Denominator > 0 {
		return c.Denominator
	}
	return c.Q * float64(K)
}

// NoiseStd returns the standard deviation z C / (q K) (or z C /
// Denominator) of the noise added to every coordinate of the averaged
// delta, for K training trajectories.
func (c TDPConfig) NoiseStd(K int) float64 { return c.Z * c.C / c.denominator(K) }

// Privacy returns the trajectory-level guarantee at delta of a run with
// cfg: the PLD accountant's epsilon for the Poisson-subsampled Gaussian
// (Q, Z, Rounds), and the RDP accountant's as the cross-check. With Z = 0
// there is none (an error).
func (c TDPConfig) Privacy(delta float64) (pld, rdp accountant.Guarantee, err error) {
	if c.Z == 0 {
		return pld, rdp, errors.New("primorl: z = 0 trains without noise: no privacy guarantee")
	}
	ev := accountant.Event{Q: c.Q, Z: c.Z, Steps: c.Rounds}
	if pld, err = (accountant.PLD{}).Epsilon(delta, ev); err != nil {
		return pld, rdp, err
	}
	rdp, err = (accountant.RDP{}).Epsilon(delta, ev)
	return pld, rdp, err
}

// RoundStats describes one round: how many trajectories it sampled (the
// private data's: diagnostics only, never to be released) and their mean
// local loss.
type RoundStats struct {
	Round, Sampled int
	MeanLoss       float64
}

// Trainer runs TDP Model Ensemble Training. It holds workspaces: not safe
// for concurrent use.
type Trainer struct {
	e     *Ensemble
	cfg   TDPConfig
	gauss *noise.Gaussian
	sum   []float64
	// vel is the server momentum's v (nil without momentum).
	vel []float64
	// workers train sampled trajectories at once, each with its own
	// ensemble scratch; jobs are a round's sampled trajectories.
	workers []*localWorker
	jobs    []localJob
}

// localJob is one sampled trajectory of a round: its index and the
// minibatch orders of its local epochs, drawn before any training (epoch
// i's order is order[i N : (i+1) N]).
type localJob struct {
	k     int
	order []int
}

// localWorker holds one local training's workspaces: the clipped delta
// (local), theta (cur), a model's gradient and a minibatch.
type localWorker struct {
	e                        *Ensemble
	local, cur, grad, bx, by []float64
	loss                     float64
}

// NewTrainer returns a trainer of e with cfg, drawing the noise from
// noiseRNG (the secure generator in production).
func NewTrainer(e *Ensemble, cfg TDPConfig, noiseRNG *rand.Rand) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if noiseRNG == nil {
		return nil, errors.New("primorl: nil noise generator")
	}
	n := e.NumParams()
	t := &Trainer{e: e, cfg: cfg, gauss: noise.NewGaussian(noiseRNG), sum: make([]float64, n)}
	if cfg.ServerMomentum > 0 {
		t.vel = make([]float64, n)
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	for i := range workers {
		we := e
		if i > 0 {
			we = e.workspace()
		}
		t.workers = append(t.workers, &localWorker{e: we, local: make([]float64, n), cur: make([]float64, n), grad: make([]float64, e.per),
			bx: make([]float64, cfg.Batch*e.in), by: make([]float64, cfg.Batch*e.out)})
	}
	return t, nil
}

// Train runs cfg.Rounds rounds on data (K = len(data) trajectories, each
// with at least one transition), updating params in place; sample draws
// the Poisson subsets and the minibatch shuffles. progress, if not nil, is
// called after each round. On cancellation it returns with the context's
// error after the current round.
func (t *Trainer) Train(ctx context.Context, params []float64, data []Trajectory, sample *rand.Rand, progress func(RoundStats)) error {
	if len(params) != t.e.NumParams() {
		return fmt.Errorf("primorl: params %d, want %d", len(params), t.e.NumParams())
	}
	if len(data) == 0 {
		return errors.New("primorl: no training trajectories")
	}
	for k, d := range data {
		if d.N < 1 || len(d.X) != d.N*t.e.in || len(d.Y) != d.N*t.e.out {
			return fmt.Errorf("primorl: trajectory %d: %d transitions, X %d, Y %d values (want N >= 1, N x %d and N x %d)", k, d.N, len(d.X), len(d.Y), t.e.in, t.e.out)
		}
	}
	for r := range t.cfg.Rounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		st := t.Round(params, data, sample)
		st.Round = r + 1
		if progress != nil {
			progress(st)
		}
	}
	return nil
}

// Round runs one round of Algorithm 2 on params: Poisson sampling, the
// clipped local training of each sampled trajectory, and the noised
// average with the fixed denominator q K, applied with the server step
// size and momentum (TDPConfig.ServerLR, ServerMomentum).
func (t *Trainer) Round(params []float64, data []Trajectory, sample *rand.Rand) RoundStats {
	clear(t.sum)
	var st RoundStats
	// The draws first, in the serial algorithm's order: each
	// trajectory's inclusion, then, if included, its epochs' shuffles.
	E := t.cfg.LocalEpochs
	n := 0
	for k := range data {
		if !noise.Bernoulli(sample, t.cfg.Q) {
			continue
		}
		if n == len(t.jobs) {
			t.jobs = append(t.jobs, localJob{})
		}
		j := &t.jobs[n]
		n++
		N := data[k].N
		j.k, j.order = k, slices.Grow(j.order[:0], E*N)[:E*N]
		for i := range N {
			j.order[i] = i
		}
		for ep := range E {
			o := j.order[ep*N : (ep+1)*N]
			if ep > 0 {
				copy(o, j.order[(ep-1)*N:ep*N])
			}
			sample.Shuffle(N, func(a, b int) { o[a], o[b] = o[b], o[a] })
		}
	}
	// The local trainings, len(t.workers) at a time; the deltas summed
	// in the trajectories' order.
	W := len(t.workers)
	for c := 0; c < n; c += W {
		chunk := t.jobs[c:min(c+W, n)]
		var wg sync.WaitGroup
		for i := 1; i < len(chunk); i++ {
			wg.Go(func() { t.workers[i].train(params, data[chunk[i].k], chunk[i].order, t.cfg) })
		}
		t.workers[0].train(params, data[chunk[0].k], chunk[0].order, t.cfg)
		wg.Wait()
		for i := range chunk {
			w := t.workers[i]
			st.Sampled++
			st.MeanLoss += w.loss
			for x, v := range w.local {
				t.sum[x] += v
			}
		}
	}
	if st.Sampled > 0 {
		st.MeanLoss /= float64(st.Sampled)
	}
	inv := 1 / t.cfg.denominator(len(data))
	for i := range t.sum {
		t.sum[i] *= inv
	}
	if t.cfg.Z > 0 {
		t.gauss.Add(t.sum, t.cfg.NoiseStd(len(data)))
	}
	// Post-processing of the release t.sum.
	eta := t.cfg.ServerLR
	if eta == 0 {
		eta = 1
	}
	step := t.sum
	if t.vel != nil {
		beta := t.cfg.ServerMomentum
		for i, v := range t.sum {
			t.vel[i] = beta*t.vel[i] + v
		}
		step = t.vel
	}
	for i, v := range step {
		params[i] += eta * v // eta 1: exactly the paper's sum
	}
	return st
}

// train runs EnsClipGD on one trajectory from params: E epochs of
// minibatch gradient descent on every model, in the minibatch orders of
// order (one permutation of d's rows per epoch), the whole delta
// projected by EnsembleClip after each step. The clipped delta is left in
// w.local and the mean minibatch loss over models and steps in w.loss.
func (w *localWorker) train(params []float64, d Trajectory, order []int, cfg TDPConfig) {
	e := w.e
	clear(w.local) // the delta theta - theta_start
	cur := w.cur   // theta = params + local, rebuilt before each step
	var loss float64
	steps := 0
	for ep := range cfg.LocalEpochs {
		order := order[ep*d.N : (ep+1)*d.N]
		for b0 := 0; b0 < d.N; b0 += cfg.Batch {
			n := min(cfg.Batch, d.N-b0)
			for r := range n {
				row := order[b0+r]
				copy(w.bx[r*e.in:(r+1)*e.in], d.X[row*e.in:(row+1)*e.in])
				copy(w.by[r*e.out:(r+1)*e.out], d.Y[row*e.out:(row+1)*e.out])
			}
			for i, v := range params {
				cur[i] = v + w.local[i]
			}
			for m := range e.Models() {
				loss += e.LossGrad(cur, m, w.bx[:n*e.in], w.by[:n*e.out], n, w.grad)
				lm := e.Model(w.local, m)
				for i, g := range w.grad {
					lm[i] -= cfg.LR * g
				}
			}
			e.Clip(w.local, cfg.C, cfg.Clip)
			steps++
		}
	}
	w.loss = loss / float64(steps*e.Models())
}
