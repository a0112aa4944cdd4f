package accountant

import (
	"fmt"
	"math"
)

// AdvancedComposition returns the guarantee of the k-fold adaptive
// composition of (eps, delta)-DP mechanisms (Dwork & Roth 2014, Theorem 3.20):
// for every deltaPrime > 0 it is (epsTotal, k·delta + deltaPrime)-DP with
//
//	epsTotal = sqrt(2 k ln(1/deltaPrime)) eps + k eps (e^eps - 1).
func AdvancedComposition(eps, delta float64, k int, deltaPrime float64) (epsTotal, deltaTotal float64, err error) {
	if !finite(eps) || eps < 0 {
		return 0, 0, fmt.Errorf("%w: epsilon = %v, want a finite epsilon >= 0", ErrInvalid, eps)
	}
	if !finite(delta) || delta < 0 || delta >= 1 {
		return 0, 0, fmt.Errorf("%w: delta = %v, want 0 <= delta < 1", ErrInvalid, delta)
	}
	if k < 1 {
		return 0, 0, fmt.Errorf("%w: k = %d, want k >= 1", ErrInvalid, k)
	}
	if err := checkDelta(deltaPrime); err != nil {
		return 0, 0, fmt.Errorf("delta': %w", err)
	}
	kf := float64(k)
	epsTotal = math.Sqrt(2*kf*math.Log(1/deltaPrime))*eps + kf*eps*math.Expm1(eps)
	deltaTotal = kf*delta + deltaPrime
	if deltaTotal >= 1 {
		return 0, 0, fmt.Errorf("%w: total delta %v >= 1", ErrInvalid, deltaTotal)
	}
	return epsTotal * (1 + safetyPad), deltaTotal, nil
}

// SVTParams are the per-query parameters of DataRelease (Sharma et al.,
// expert-level DP offline RL, Algorithm 2; ALGORITHMS.md §3).
type SVTParams struct {
	// EpsPrime is the per-query budget eps1 / sqrt(32 T ln(2/delta1)).
	EpsPrime float64 `json:"eps_prime"`
	// DeltaPrime is delta1 / (2 T L).
	DeltaPrime float64 `json:"delta_prime"`
	// CMin is e^eps' / (e^eps' - 1), the smallest count a stable prefix needs.
	CMin float64 `json:"c_min"`
	// Theta is the threshold CMin / pMin.
	Theta float64 `json:"theta"`
	// NoisyThresholdShift is (4/eps') ln(1/delta'), added to Theta before
	// the Lap(2/eps') draw of each trajectory.
	NoisyThresholdShift float64 `json:"noisy_threshold_shift"`
	// QueryScale is 4/eps', the Laplace scale of each prefix query.
	QueryScale float64 `json:"query_scale"`
	// ThresholdScale is 2/eps', the Laplace scale of the threshold.
	ThresholdScale float64 `json:"threshold_scale"`
}

// SVTSplit computes the DataRelease budget split for a total (eps1, delta1),
// T queried trajectories, maximum trajectory length L and expert probability
// floor pMin (ALGORITHMS.md §3):
//
//	eps' = eps1 / sqrt(32 T ln(2/delta1)),  delta' = delta1 / (2 T L),
//	c_min = e^eps' / (e^eps' - 1),          theta = c_min / p_min.
func SVTSplit(eps1, delta1 float64, T, L int, pMin float64) (SVTParams, error) {
	if err := checkEpsilon(eps1); err != nil {
		return SVTParams{}, fmt.Errorf("eps1: %w", err)
	}
	if err := checkDelta(delta1); err != nil {
		return SVTParams{}, fmt.Errorf("delta1: %w", err)
	}
	if T < 1 {
		return SVTParams{}, fmt.Errorf("%w: queries T = %d, want T >= 1", ErrInvalid, T)
	}
	if L < 1 {
		return SVTParams{}, fmt.Errorf("%w: maximum length L = %d, want L >= 1", ErrInvalid, L)
	}
	if !finite(pMin) || pMin <= 0 || pMin > 1 {
		return SVTParams{}, fmt.Errorf("%w: p_min = %v, want 0 < p_min <= 1", ErrInvalid, pMin)
	}
	tf := float64(T)
	ep := eps1 / math.Sqrt(32*tf*math.Log(2/delta1))
	dp := delta1 / (2 * tf * float64(L))
	cmin := -1 / math.Expm1(-ep) // e^x/(e^x-1) = 1/(1-e^-x)
	return SVTParams{
		EpsPrime:            ep,
		DeltaPrime:          dp,
		CMin:                cmin,
		Theta:               cmin / pMin,
		NoisyThresholdShift: 4 / ep * math.Log(1/dp),
		QueryScale:          4 / ep,
		ThresholdScale:      2 / ep,
	}, nil
}
