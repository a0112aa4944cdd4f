package bandmf

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"dprl/ledger/accountant/bandsens"
	"dprl/noise"
)

// Stream generates the releases of the banded mechanism one at a time
// (Kalinin and Lampert, "Banded Square Root Matrix Factorization for
// Differentially Private Model Training"). Release t takes x_t, releases
//
//	y_t = sum_{j=0}^{b-1} c_j x_{t-j} + N(0, sigma^2 I)
//
// through the exact sampler of package noise, and returns
// g~_t = (y_t - sum_{j=1}^{b-1} c_j g~_{t-j}) / c_0, that is g~ = C^{-1} y
// (post-processing of the releases). A release is pending until Commit; an
// uncommitted one leaves the state as it was. The state, the last b - 1
// pairs (x, g~), is as secret as the data. Why: docs/privacy.md, section 3.
// A Stream is not safe for concurrent use.
type Stream struct {
	coef  []float64
	n     int
	sigma float64
	gauss *noise.Gaussian
	// xs[i], gs[i]: ring of the last b-1 committed (x, g~); the newest is at
	// (head - 1) mod (b - 1); filled of them are valid.
	xs, gs       [][]float64
	head, filled int
	// The pending release.
	px, pg  []float64
	pending bool
	// releases counts the committed releases of the stream.
	releases uint64
}

// NewStream returns a stream of the factor coef over vectors of n values
// with noise sigma per coordinate (sigma = 0: no noise, g~ = x; a
// non-private mode), drawing from rng (non-nil when sigma > 0).
func NewStream(coef []float64, n int, sigma float64, rng *rand.Rand) (*Stream, error) {
	if err := bandsens.CheckCoefficients(coef); err != nil {
		return nil, err
	}
	b := len(coef)
	if n < 1 || 2*(b-1) > bandsens.MaxStateFloats/n {
		return nil, fmt.Errorf("bandmf: stream of %d bands over %d values keeps 2 x %d x %d values, at most %d", b, n, b-1, n, bandsens.MaxStateFloats)
	}
	if !(sigma >= 0) {
		return nil, fmt.Errorf("bandmf: noise %v, want >= 0", sigma)
	}
	s := &Stream{coef: coef, n: n, sigma: sigma, px: make([]float64, n), pg: make([]float64, n)}
	if sigma > 0 {
		if rng == nil {
			return nil, errors.New("bandmf: nil noise source")
		}
		s.gauss = noise.NewGaussian(rng)
	}
	s.xs, s.gs = make([][]float64, b-1), make([][]float64, b-1)
	for i := range s.xs {
		s.xs[i], s.gs[i] = make([]float64, n), make([]float64, n)
	}
	return s, nil
}

// Bands returns b.
func (s *Stream) Bands() int { return len(s.coef) }

// Releases returns the number of committed releases of the stream.
func (s *Stream) Releases() uint64 { return s.releases }

// back returns the committed (x, g~) of the release j >= 1 back, or nil if
// the stream has fewer.
func (s *Stream) back(j int) (x, g []float64) {
	if j > s.filled {
		return nil, nil
	}
	L := len(s.xs)
	i := ((s.head-j)%L + L) % L
	return s.xs[i], s.gs[i]
}

// Release computes the next release from x (len n; not retained) into out
// (len n) and holds it pending (see Stream). A pending release not yet
// committed is discarded first. It allocates nothing.
func (s *Stream) Release(x, out []float64) {
	if len(x) != s.n || len(out) != s.n {
		panic(fmt.Sprintf("bandmf: release of %d values into %d, want %d", len(x), len(out), s.n))
	}
	s.pending = false
	copy(s.px, x)
	y := s.pg // y_t, then g~_t in place
	for i, v := range x {
		y[i] = s.coef[0] * v
	}
	for j := 1; j < len(s.coef); j++ {
		xj, _ := s.back(j)
		if xj == nil {
			break
		}
		cj := s.coef[j]
		for i, v := range xj {
			y[i] += cj * v
		}
	}
	if s.sigma > 0 {
		s.gauss.Add(y, s.sigma)
	}
	for j := 1; j < len(s.coef); j++ {
		_, gj := s.back(j)
		if gj == nil {
			break
		}
		cj := s.coef[j]
		for i, v := range gj {
			y[i] -= cj * v
		}
	}
	if c0 := s.coef[0]; c0 != 1 {
		for i := range y {
			y[i] /= c0
		}
	}
	copy(out, y)
	s.pending = true
}

// Pending returns the pending release's x and g~ (the Stream's slices,
// valid until the next Release or Commit), or ok false.
func (s *Stream) Pending() (x, g []float64, ok bool) {
	if !s.pending {
		return nil, nil, false
	}
	return s.px, s.pg, true
}

// Commit adds the pending release to the state; it does nothing without
// one.
func (s *Stream) Commit() {
	if !s.pending {
		return
	}
	s.pending = false
	s.releases++
	if len(s.xs) == 0 {
		return
	}
	copy(s.xs[s.head], s.px)
	copy(s.gs[s.head], s.pg)
	s.head = (s.head + 1) % len(s.xs)
	s.filled = min(s.filled+1, len(s.xs))
}

// State returns copies of the committed (x, g~) of the last min(b - 1,
// releases) releases, oldest first.
func (s *Stream) State() (xs, gs [][]float64) {
	for j := s.filled; j >= 1; j-- {
		x, g := s.back(j)
		xs = append(xs, append([]float64(nil), x...))
		gs = append(gs, append([]float64(nil), g...))
	}
	return xs, gs
}

// Restore replaces the state by the given (x, g~) of the last releases,
// oldest first (at most b - 1 of them, each of n values), as State
// returned them, and sets the count of committed releases; a pending
// release is discarded. Restoring what State returned continues the
// stream exactly.
func (s *Stream) Restore(xs, gs [][]float64, releases uint64) error {
	if len(xs) != len(gs) || len(xs) > len(s.xs) || uint64(len(xs)) > releases {
		return fmt.Errorf("bandmf: restore %d inputs and %d outputs of %d releases into a stream of %d bands", len(xs), len(gs), releases, len(s.coef))
	}
	for i := range xs {
		if len(xs[i]) != s.n || len(gs[i]) != s.n {
			return fmt.Errorf("bandmf: restore: release %d holds %d and %d values, want %d", i, len(xs[i]), len(gs[i]), s.n)
		}
	}
	if len(s.xs) > 0 && uint64(len(xs)) < min(releases, uint64(len(s.xs))) {
		return fmt.Errorf("bandmf: restore: %d releases but the state of only %d of the last %d", releases, len(xs), len(s.xs))
	}
	s.pending = false
	s.head, s.filled = 0, 0
	for i := range xs {
		copy(s.xs[s.head], xs[i])
		copy(s.gs[s.head], gs[i])
		if len(s.xs) > 0 {
			s.head = (s.head + 1) % len(s.xs)
		}
		s.filled++
	}
	s.releases = releases
	return nil
}

// Reset starts a new stream: the state is emptied.
func (s *Stream) Reset() {
	s.pending = false
	s.head, s.filled, s.releases = 0, 0, 0
}
