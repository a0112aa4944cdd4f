package svt

import (
	"fmt"
	"math"
	"os"
	"strings"

	"dprl/ledger/accountant"
)

// Reach is what a release can keep at best, computed from public inputs
// only: the configuration, the threshold it implies, the action count and
// the roster of experts (the snapshots in the experts' directory, an upper
// bound on the number M of experts in the log that the operator supplies
// and vouches is public, as gpope's --n). It never depends on the log, so
// a refusal or a warning built from it releases nothing.
//
// A prefix's count is sum_i prod_j pi_i(a_j|s_j) over the log's M experts
// (Sharma et al., Algorithm 2), and a smoothed expert gives an action at
// most pmax = 1 - (|A|-1) p_min (App. B.1), so a prefix of k steps counts
// at most Roster * pmax^k.
type Reach struct {
	// Roster is the number of expert snapshots in the experts' directory.
	Roster int `json:"roster"`
	// PMax is 1 - (|A|-1) p_min, the largest smoothed probability.
	PMax float64 `json:"pmax"`
	// MaxCount is Roster * PMax, the largest count of any prefix (one step).
	MaxCount float64 `json:"max_count"`
	// Theta is c_min / p_min; Centre is Theta + (4/eps') ln(1/delta'), the
	// centre of each trajectory's noisy threshold.
	Theta  float64 `json:"theta"`
	Centre float64 `json:"threshold_centre"`
	// Steps is the largest k <= MaxLen with Roster * PMax^k above Centre
	// (0: none): a longer prefix is kept only when the noise lifts its
	// count over the threshold.
	Steps  int `json:"steps"`
	MaxLen int `json:"max_len"`
	// FirstStep bounds the probability that a query keeps a trajectory's
	// first step when MaxCount is at most Centre (1 otherwise): P(X - Y >
	// Centre - MaxCount) for X ~ Lap(4/eps'), Y ~ Lap(2/eps') (the tail of
	// a sum of two Laplace variables, (b1^2 e^{-t/b1} - b2^2 e^{-t/b2}) /
	// (2 (b1^2 - b2^2)) with b2 = b1/2), computed for the continuous
	// Laplace: the release's discrete Laplace on its grid is close to it.
	// A utility estimate, not part of any guarantee.
	FirstStep float64 `json:"first_step_prob"`
}

// NewReach returns the reach of a release with parameters p (SVTSplit),
// L = maxLen, a roster of experts with numActions actions smoothed to pMin.
func NewReach(p accountant.SVTParams, roster, numActions, maxLen int, pMin float64) Reach {
	r := Reach{Roster: roster, PMax: 1 - float64(numActions-1)*pMin, Theta: p.Theta, Centre: p.Theta + p.NoisyThresholdShift, MaxLen: maxLen, FirstStep: 1}
	r.MaxCount = float64(roster) * r.PMax
	for c := r.MaxCount; r.Steps < maxLen && c > r.Centre; c *= r.PMax {
		r.Steps++
	}
	if t := r.Centre - r.MaxCount; t >= 0 {
		b := p.QueryScale
		r.FirstStep = 2.0/3*math.Exp(-t/b) - 1.0/6*math.Exp(-2*t/b)
	}
	return r
}

// Err refuses a release that can keep no prefix except by noise beyond
// (4/eps') ln(1/delta'): the largest count is at most Theta, so the first
// step of a trajectory is kept with probability below (2/3) delta' per
// query. It names the fields a user changes (as a *fielderr.Error).
func (r Reach) Err() error {
	if r.MaxCount > r.Theta {
		return nil
	}
	return releaseFields.Errorf("no prefix can be kept: the largest count a prefix can reach is %.4g ({Experts} holds %d snapshots, the roster bounding the M experts of the log, each giving an action probability at most 1-(|A|-1)p_min = %.4g), not above the threshold c_min/p_min = %.4g (the noisy threshold's centre is %.1f); a prefix would be kept only by noise, with probability about %.2g per query. Nothing was charged. A larger {Epsilon} or {Delta}, fewer {Queries}, or more experts lower the threshold or raise the count",
		r.MaxCount, r.Roster, r.PMax, r.Theta, r.Centre, r.FirstStep)
}

// Warning says, when the release can keep only part of what it queries,
// how much: "" when a whole trajectory of MaxLen steps can reach the
// threshold's centre.
func (r Reach) Warning() string {
	switch {
	case r.Steps >= r.MaxLen:
		return ""
	case r.Steps == 0:
		return fmt.Sprintf("svt: no prefix reaches the noisy threshold's centre %.1f (the largest count is %.4g: a roster of %d snapshots times p_max %.4g): a trajectory's first step is kept with probability about %.2g per query, so expect few or no stable prefixes for the budget charged",
			r.Centre, r.MaxCount, r.Roster, r.PMax, r.FirstStep)
	}
	return fmt.Sprintf("svt: at most %d of a trajectory's up to L = %d steps can be kept except by noise: beyond it the largest count %d * %.4g^k is below the noisy threshold's centre %.1f, so no longer prefix, and no trajectory longer than that, is likely to be kept",
		r.Steps, r.MaxLen, r.Roster, r.PMax, r.Centre)
}

// RosterSize counts the expert snapshots in dir (files DIR/<id>.snap with a
// valid id): the roster of experts, public configuration.
func RosterSize(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), SnapshotExt)
		if ok && e.Type().IsRegular() && CheckID(id) == nil {
			n++
		}
	}
	return n, nil
}
