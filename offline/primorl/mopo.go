package primorl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/internal/vecmath"
	"dprl/policy/sac"
)

// PlainConfig is the non-private model training of the MOPO baseline
// ("MOPO: Model-based Offline Policy Optimization", Yu et al. 2020, as the
// PriMORL paper's Table 1 runs it): every model of the ensemble trained on
// minibatches of all the log's transitions with Adam, no clipping, no
// noise.
type PlainConfig struct {
	// Epochs is the number of passes over the transitions, >= 1.
	Epochs int `flag:"mopo-epochs" usage:"--mopo: passes over the log's transitions (Adam, batch 256, lr 1e-3)"`
	// Batch is the minibatch size, >= 1 (MOPO: 256).
	Batch int
	// LR is Adam's step size, > 0 (MOPO: 1e-3).
	LR float64
}

// DefaultPlainConfig returns MOPO's model optimiser (Adam, lr 1e-3,
// batch 256) with 3 epochs.
func DefaultPlainConfig() PlainConfig { return PlainConfig{Epochs: 3, Batch: 256, LR: 1e-3} }

// Validate reports every invalid field.
func (c PlainConfig) Validate() error {
	var errs []error
	if c.Epochs < 1 || c.Batch < 1 {
		errs = append(errs, fmt.Errorf("primorl: plain training epochs %d and batch %d: must be >= 1", c.Epochs, c.Batch))
	}
	if !(c.LR > 0) || math.IsInf(c.LR, 0) {
		errs = append(errs, fmt.Errorf("primorl: plain training step size %v: must be finite and > 0", c.LR))
	}
	return errors.Join(errs...)
}

// TrainPlain trains each model of e (params, initialised) on all the
// transitions of data: Epochs passes, each over its own shuffle (so the
// models differ by initialisation and order), minibatch Adam on the NLL
// with weight decay. It is the MOPO baseline's model, not a private
// mechanism. progress, if not nil, receives (done, total) minibatch steps.
func TrainPlain(ctx context.Context, e *Ensemble, params []float64, data []Trajectory, c PlainConfig, rng *rand.Rand, progress func(done, total int)) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if len(params) != e.NumParams() {
		return fmt.Errorf("primorl: %d parameters for an ensemble of %d", len(params), e.NumParams())
	}
	// Every transition, addressed as (trajectory, row).
	type ref struct{ k, r int32 }
	var refs []ref
	for k, d := range data {
		for r := range d.N {
			refs = append(refs, ref{int32(k), int32(r)})
		}
	}
	if len(refs) == 0 {
		return errors.New("primorl: no transition to train on")
	}
	in, out, per := e.In(), e.Out(), e.NumParams()/e.Models()
	bx, by := make([]float64, c.Batch*in), make([]float64, c.Batch*out)
	grad, m, v := make([]float64, per), make([]float64, per), make([]float64, per)
	const b1, b2, eps = 0.9, 0.999, 1e-8
	steps := (len(refs) + c.Batch - 1) / c.Batch
	total, done := e.Models()*c.Epochs*steps, 0
	for i := range e.Models() {
		clear(m)
		clear(v)
		t := 0
		theta := e.Model(params, i)
		for range c.Epochs {
			rng.Shuffle(len(refs), func(a, b int) { refs[a], refs[b] = refs[b], refs[a] })
			for b0 := 0; b0 < len(refs); b0 += c.Batch {
				if done%64 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
					if progress != nil {
						progress(done, total)
					}
				}
				n := min(c.Batch, len(refs)-b0)
				for j, rf := range refs[b0 : b0+n] {
					d := data[rf.k]
					copy(bx[j*in:(j+1)*in], d.X[int(rf.r)*in:(int(rf.r)+1)*in])
					copy(by[j*out:(j+1)*out], d.Y[int(rf.r)*out:(int(rf.r)+1)*out])
				}
				e.LossGrad(params, i, bx, by, n, grad)
				t++
				c1, c2 := 1-math.Pow(b1, float64(t)), 1-math.Pow(b2, float64(t))
				vecmath.Adam(theta, grad, m, v, vecmath.AdamParams{Beta1: b1, Beta2: b2, Step: c.LR / c1, InvSqrtC2: 1 / math.Sqrt(c2), Eps: eps})
				done++
			}
		}
	}
	if progress != nil {
		progress(total, total)
	}
	return nil
}

// maxLogged caps the logged transitions MOPO keeps for its start states
// and its batches' logged share: a uniform sample (reservoir) of at most
// this many (72 MiB for Pendulum).
const maxLogged = 1 << 20

// loggedTransitions is a uniform sample of at most max of the log's
// transitions, unscaled, in a SAC buffer.
type loggedTransitions struct {
	buf       *sac.Buffer
	seen, max int
	rng       *rand.Rand
}

func newLoggedTransitions(od, ad, max int, rng *rand.Rand) *loggedTransitions {
	b, err := sac.NewBuffer(max, od, ad)
	if err != nil {
		panic(err) // dimensions >= 1: checked by New
	}
	return &loggedTransitions{buf: b, max: max, rng: rng}
}

// add offers one transition to the reservoir (Vitter's algorithm R).
func (l *loggedTransitions) add(s, a []float64, r float64, s2 []float64, terminated bool) {
	l.seen++
	if l.seen <= l.max {
		l.buf.Add(s, a, r, s2, terminated)
		return
	}
	if j := l.rng.IntN(l.seen); j < l.max {
		l.buf.Set(j, s, a, r, s2, terminated)
	}
}
