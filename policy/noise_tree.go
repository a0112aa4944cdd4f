package policy

import (
	"math"
	"math/bits"
	"math/rand/v2"

	"dprl/noise"
)

// NoiseTree is the binary tree mechanism (Chan, Shi and Song 2011,
// "Private and Continual Release of Statistics"; DP-FTRL, Kairouz et al.
// 2021, "Practical and Private (Deep) Learning without Sampling or
// Shuffling"): the parameters carry at most floor(log2 N) + 1 draws of std
// z sqrt(floor(log2 N) + 1) S / K, N the horizon.
const NoiseTree Noise = 1

func init() { register(NoiseTree, treeNoise{}) }

type treeNoise struct{}

func (treeNoise) Name() string  { return "tree" }
func (treeNoise) Online() bool  { return false }
func (treeNoise) Horizon() bool { return true }
func (treeNoise) Fresh() bool   { return false }

func (treeNoise) CheckParams(c DPConfig) []error { return append(horizonRange(c), noBand(c)...) }

// Factor is sqrt(L), L = floor(log2 N) + 1, the most tree nodes one release
// enters.
func (treeNoise) Factor(c DPConfig) float64 { return math.Sqrt(float64(treeLevels(c.Horizon))) }

// GridRows is 1: every node is its own Gaussian mechanism.
func (treeNoise) GridRows(DPConfig) int { return 1 }

// RoundingExtra: a node adds the sum of at most 2^(L-1) means in at most L
// additions each, (L+1) 2^L.
func (treeNoise) RoundingExtra(c DPConfig) float64 {
	L := float64(treeLevels(c.Horizon))
	return (L + 1) * math.Exp2(L)
}

func (treeNoise) Separation(DPConfig) int { return 0 }

func (treeNoise) WindowSensitivity(c DPConfig, M, releases int) (float64, error) {
	return horizonWindowSensitivity(c, M, releases, func(N, M, starts int) []float64 {
		return windowNormsSq(N, M, starts, func(a, l int) float64 { return float64(treePieceSq(N, a, l)) })
	})
}

func (treeNoise) UserSensitivity(DPConfig, int) (float64, error) { return 0, errNotOnline(NoiseTree) }

func (treeNoise) NewNoise(c DPConfig, n int, std float64, rng *rand.Rand) (ReleaseNoise, error) {
	L := treeLevels(c.Horizon)
	s := &treeState{horizon: c.Horizon, std: std, exact: make([][]float64, L), noisy: make([][]float64, L)}
	for h := range L {
		s.exact[h], s.noisy[h] = make([]float64, n), make([]float64, n)
	}
	if rng != nil {
		s.gauss = noise.NewGaussian(rng)
	}
	return s, nil
}

func (treeNoise) Entry(DPConfig, int, uint64) (EntryNoise, error) {
	return EntryNoise{}, errNotOnline(NoiseTree)
}

func (treeNoise) Describe(DPConfig, int) string { return "" }

// treeLevels returns bits.Len(n) = floor(log2 n) + 1 for n >= 1: the most
// dyadic nodes [k 2^h + 1, (k+1) 2^h] with end <= n that contain one leaf.
func treeLevels(n int) int { return bits.Len(uint(max(n, 1))) }

// treePieceSq returns ||C 1_[a, a+l)||^2 for the tree block of horizon N:
// the sum over released dyadic nodes of (leaves of the node in [a, a+l))^2.
func treePieceSq(N, a, l int) int64 {
	var ss int64
	for h := range treeLevels(N) {
		size := 1 << h
		for k := a >> h; k <= (a+l-1)>>h; k++ {
			lo, hi := k*size, (k+1)*size
			if hi > N {
				break // not released in this horizon (nor any node to its right)
			}
			o := int64(min(hi, a+l) - max(lo, a))
			ss += o * o
		}
	}
	return ss
}

// treeState is the tree's noise over one horizon: t counts its releases;
// exact[h] is the exact sum of the open level-h node, noisy[h] the released
// value of the level-h node in the current prefix (zero when bit h of t is
// clear).
type treeState struct {
	horizon      int
	std          float64
	gauss        *noise.Gaussian
	t            int
	exact, noisy [][]float64
}

// Release: leaf t = s.t+1 closes the level-h node, h = trailing zeros of
// t, whose exact sum is the leaf plus the open nodes below h; that node is
// noised once, and the release is noisy[h] - sum_{j<h} noisy[j] (the levels
// below h leave the prefix, level h joins it).
func (s *treeState) Release(x, out []float64) {
	s.t++
	h := bits.TrailingZeros(uint(s.t))
	top, ntop := s.exact[h], s.noisy[h]
	for i, v := range x {
		for j := range h {
			v += s.exact[j][i]
		}
		top[i] = v
	}
	copy(ntop, top)
	if s.std > 0 {
		s.gauss.Add(ntop, s.std) // the node's release
	}
	for i := range out {
		g := ntop[i]
		for j := range h {
			g -= s.noisy[j][i]
		}
		out[i] = g
	}
	for j := range h {
		clear(s.exact[j])
		clear(s.noisy[j])
	}
	if s.t == s.horizon {
		for h := range s.exact {
			clear(s.exact[h])
			clear(s.noisy[h])
		}
		s.t = 0
	}
}

func (*treeState) Commit() {}
