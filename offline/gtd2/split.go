package gtd2

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Partition assigns each of n trajectories to one of parts disjoint parts,
// each independently and uniformly at random (rng.IntN, unbiased), and
// returns each part's trajectory indices in increasing order. The
// assignment depends on n and rng only, never on the trajectories'
// content. A part may be empty; each part's size is Binomial(n, 1/parts).
//
// Independent labels, rather than a random permutation cut into blocks of
// equal size, keep the parallel composition of sample and aggregate
// (Nissim, Raskhodnikova & Smith 2007, "Smooth sensitivity and sampling in
// private data analysis", §4) exact under add/remove adjacency: adding a
// trajectory adds it to one part and leaves every other trajectory's part
// as it was (couple the two runs' labels of the common trajectories),
// whereas blocks of a permutation would shift others across parts.
func Partition(n, parts int, rng *rand.Rand) ([][]int, error) {
	if parts < 1 || n < 0 {
		return nil, fmt.Errorf("gtd2: partition of %d trajectories into %d parts", n, parts)
	}
	out := make([][]int, parts)
	for i := range n {
		b := rng.IntN(parts)
		out[b] = append(out[b], i)
	}
	return out, nil
}

// Subset is the trajectories of a Trajectories at given indices: its
// trajectory j is the underlying trajectory Index[j]. It may be empty
// (GPOPE on an empty subset releases its noise only).
type Subset struct {
	Of    Trajectories
	Index []int
}

// Shape returns the underlying shape.
func (s Subset) Shape() (int, float64) { return s.Of.Shape() }

// NumTrajectories is len(Index).
func (s Subset) NumTrajectories() int { return len(s.Index) }

// Trajectory returns the underlying trajectory Index[i].
func (s Subset) Trajectory(i int, scratch *Trajectory) (*Trajectory, error) {
	return s.Of.Trajectory(s.Index[i], scratch)
}

// GPOPEParts runs GPOPE (with c, whose Q and Z the caller calibrated for a
// part) on each part of a Partition of ds into parts parts drawn from rng,
// in order, every draw from rng: the labels first, then part 0's run, part
// 1's, and so on. It returns each part's release.
//
// Each trajectory is in exactly one part, so by parallel composition the
// parts' releases together are (epsilon, delta)-DP for adding or removing
// one trajectory when one part's GPOPE is (GPOPE's doc states when that
// is). c.Observe is called for every step of every part, in order.
func GPOPEParts(ds Trajectories, c Config, parts int, rng *rand.Rand) ([]Result, error) {
	return gpopeParts(ds, c, parts, rng, nil)
}

// GPOPEPartsWithDiagnostics runs GPOPEParts exactly (the same draws, the
// same releases) and also returns the Diagnostics summed over the parts,
// which the privacy guarantee does NOT cover.
func GPOPEPartsWithDiagnostics(ds Trajectories, c Config, parts int, rng *rand.Rand) ([]Result, Diagnostics, error) {
	var diag Diagnostics
	res, err := gpopeParts(ds, c, parts, rng, &diag)
	return res, diag, err
}

func gpopeParts(ds Trajectories, c Config, parts int, rng *rand.Rand, diag *Diagnostics) ([]Result, error) {
	if parts < 2 {
		return nil, errors.New("gtd2: sample and aggregate needs at least 2 parts")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	idx, err := Partition(ds.NumTrajectories(), parts, rng)
	if err != nil {
		return nil, err
	}
	out := make([]Result, parts)
	for b, ix := range idx {
		if out[b], err = gpope(Subset{Of: ds, Index: ix}, c, rng, diag); err != nil {
			return nil, fmt.Errorf("part %d: %w", b+1, err)
		}
	}
	return out, nil
}
