package ope

import (
	"fmt"
	"math"
	"slices"
)

// Names of the trajectory estimators.
const (
	EstPDIS  = "PDIS"
	EstPDWIS = "PDWIS"
	// EstTrajEL is the empirical-likelihood estimate on whole episodes
	// (trajectory-wise weights).
	EstTrajEL = "EL-episode"
)

// Step is one logged step of a trajectory: its reward, the logging
// probability of the action taken and the target's probability of it.
type Step struct {
	Reward float64
	Prob   float64 // in (0, 1]
	Target float64 // in [0, 1]
}

// Trajectory is one logged episode, in order.
type Trajectory []Step

// trajTerms are the per-trajectory, per-step products gamma^t rho_{i,t}
// r_{i,t} and rho_{i,t}, rho_{i,t} = prod_{s <= t} pi_s / mu_s, laid out
// [i][t] for t < T, the longest trajectory's length: past its end a
// trajectory earns 0 and keeps its last rho (an ended episode is an
// absorbing state of reward 0), so that every t averages over all n.
type trajTerms struct {
	n, T  int
	gamma float64
	rr    [][]float64 // gamma^t rho r
	rho   [][]float64 // rho
	ret   []float64   // each episode's discounted return sum_t gamma^t r
}

// prepareTrajectories validates the trajectories and computes the terms.
func prepareTrajectories(ts []Trajectory, gamma float64, o Options) (*trajTerms, error) {
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: no trajectories", ErrInput)
	}
	if !(gamma >= 0 && gamma <= 1) {
		return nil, fmt.Errorf("%w: discount %v, want in [0, 1]", ErrInput, gamma)
	}
	tt := &trajTerms{n: len(ts), gamma: gamma, rr: make([][]float64, len(ts)), rho: make([][]float64, len(ts)), ret: make([]float64, len(ts))}
	for _, tr := range ts {
		tt.T = max(tt.T, len(tr))
	}
	for i, tr := range ts {
		if len(tr) == 0 {
			return nil, fmt.Errorf("%w: trajectory %d has no steps", ErrInput, i)
		}
		rho, disc := 1.0, 1.0
		tt.rr[i], tt.rho[i] = make([]float64, tt.T), make([]float64, tt.T)
		for t, s := range tr {
			switch {
			case !(s.Prob > 0 && s.Prob <= 1):
				return nil, fmt.Errorf("%w: trajectory %d step %d: logging probability %v, want in (0, 1]", ErrInput, i, t, s.Prob)
			case !(s.Target >= 0 && s.Target <= 1):
				return nil, fmt.Errorf("%w: trajectory %d step %d: target probability %v, want in [0, 1]", ErrInput, i, t, s.Target)
			case !finite(s.Reward) || s.Reward < o.RewardMin || s.Reward > o.RewardMax:
				return nil, fmt.Errorf("%w: trajectory %d step %d: reward %v outside the declared range [%v, %v]", ErrInput, i, t, s.Reward, o.RewardMin, o.RewardMax)
			}
			rho *= s.Target / s.Prob
			tt.rho[i][t] = rho
			tt.rr[i][t] = disc * rho * s.Reward
			tt.ret[i] += disc * s.Reward
			disc *= gamma
		}
		for t := len(tr); t < tt.T; t++ {
			tt.rho[i][t] = rho
		}
	}
	return tt, nil
}

// pdis is per-decision importance sampling over the trajectories idx (with
// repetition: a bootstrap resample), V = (1/n) sum_i sum_t gamma^t
// rho_{i,t} r_{i,t} (Precup, Sutton & Singh 2000, "Eligibility Traces for
// Off-Policy Policy Evaluation", the per-decision estimator).
func (tt *trajTerms) pdis(idx []int) float64 {
	s := 0.0
	for _, i := range idx {
		for _, v := range tt.rr[i] {
			s += v
		}
	}
	return s / float64(len(idx))
}

// pdwis is the weighted per-decision estimator, V = sum_t gamma^t
// (sum_i rho_{i,t} r_{i,t}) / (sum_i rho_{i,t}), a trajectory past its end
// earning 0 at t with its last rho (Mahmood, van Hasselt & Sutton 2014, "Weighted
// importance sampling for off-policy learning with linear function
// approximation"; Thomas 2015, "Safe Reinforcement Learning", Section 3.6,
// per-decision WIS). num and den are scratch of length T.
func (tt *trajTerms) pdwis(idx []int, num, den []float64) float64 {
	clear(num)
	clear(den)
	for _, i := range idx {
		for t, v := range tt.rr[i] {
			num[t] += v
			den[t] += tt.rho[i][t]
		}
	}
	v := 0.0
	for t := range num {
		if den[t] > 0 {
			v += num[t] / den[t]
		}
	}
	return v
}

// influence returns each trajectory's influence term of PDWIS (delta
// method): sum_t (gamma^t rho_{i,t} r_{i,t} - V_t rho_{i,t}) / mean_i
// rho_{i,t}, V_t = num_t / den_t, so that Var(V) ~ Var(psi) / n.
func (tt *trajTerms) pdwisInfluence() []float64 {
	all := make([]int, tt.n)
	for i := range all {
		all[i] = i
	}
	num, den := make([]float64, tt.T), make([]float64, tt.T)
	tt.pdwis(all, num, den)
	psi := make([]float64, tt.n)
	for i := range psi {
		for t, v := range tt.rr[i] {
			if den[t] > 0 {
				mean := den[t] / float64(tt.n)
				psi[i] += (v - num[t]/den[t]*tt.rho[i][t]) / mean
			}
		}
	}
	return psi
}

// TrajectoryEstimates estimates the target's discounted return per episode
// from logged trajectories: PDIS and PDWIS, each with its Wald interval (PDIS
// on its per-trajectory terms, PDWIS on its delta-method influence terms)
// and, unless Options.Bootstrap is negative, the percentile bootstrap over
// trajectories. Rewards must lie in the declared range. Non-private, like
// Evaluate.
func TrajectoryEstimates(ts []Trajectory, gamma float64, opt Options) ([]Estimate, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	tt, err := prepareTrajectories(ts, gamma, o)
	if err != nil {
		return nil, err
	}
	all := make([]int, tt.n)
	for i := range all {
		all[i] = i
	}
	num, den := make([]float64, tt.T), make([]float64, tt.T)
	per := make([]float64, tt.n)
	for i := range per {
		for _, v := range tt.rr[i] {
			per[i] += v
		}
	}
	z := zQuantile(o.Level)
	waldOf := func(v float64, psi []float64) Interval {
		_, s2 := meanVar(psi)
		h := z * math.Sqrt(s2/float64(tt.n))
		return Interval{Method: MethodWald, Level: o.Level, Lo: v - h, Hi: v + h}
	}
	pdis := Estimate{Estimator: EstPDIS, Value: tt.pdis(all)}
	pdis.Intervals = append(pdis.Intervals, waldOf(pdis.Value, per))
	pdwis := Estimate{Estimator: EstPDWIS, Value: tt.pdwis(all, num, den)}
	pdwis.Intervals = append(pdwis.Intervals, waldOf(pdwis.Value, tt.pdwisInfluence()))
	if o.Bootstrap > 0 {
		a, b := make([]float64, o.Bootstrap), make([]float64, o.Bootstrap)
		idx := make([]int, tt.n)
		for k := range a {
			for i := range idx {
				idx[i] = o.Rand.IntN(tt.n)
			}
			a[k], b[k] = tt.pdis(idx), tt.pdwis(idx, num, den)
		}
		alpha := 1 - o.Level
		for _, e := range []struct {
			est  *Estimate
			vals []float64
		}{{&pdis, a}, {&pdwis, b}} {
			slices.Sort(e.vals)
			e.est.Intervals = append(e.est.Intervals, Interval{Method: MethodBootstrap, Level: o.Level, Lo: quantile(e.vals, alpha/2), Hi: quantile(e.vals, 1-alpha/2)})
		}
	}
	el, err := tt.episodeEL(o)
	if err != nil {
		return nil, err
	}
	return []Estimate{el, pdis, pdwis}, nil
}

// episodeEL is the empirical-likelihood interval (elInterval) applied to
// whole episodes: the weight of episode i is its full product rho_{i,T_i}
// (E[rho] = 1 when the logger covers the target), its outcome the
// discounted return G_i, mapped to [0, 1] by the public return range
// [rmin, rmax] x sum_{t<T} gamma^t (T the longest episode). The weights'
// upper bound is Options.WeightBound (for episodes: a bound on the
// product of the ratios), raised to the largest product in the log when
// one exceeds it (then noted).
func (tt *trajTerms) episodeEL(o Options) (Estimate, error) {
	disc, g := 0.0, 1.0
	for range tt.T {
		disc += g
		g *= tt.gamma
	}
	lo, span := o.RewardMin*disc, (o.RewardMax-o.RewardMin)*disc
	var m Moments
	wmax, meanR := o.WeightBound, 0.0
	for i := range tt.n {
		w := tt.rho[i][tt.T-1] // padded: the episode's full product
		r := min(1, max(0, (tt.ret[i]-lo)/span))
		m.add(w, r)
		meanR += r
		wmax = max(wmax, w)
	}
	meanR /= m.N
	note := ""
	if wmax > o.WeightBound {
		note = fmt.Sprintf("the episodes' weight bound is the log's largest product %.4g (no public bound of at least that was given)", wmax)
	}
	if !(wmax > 1) {
		wmax = 2
	}
	e, err := elInterval(m, meanR, 0, wmax, 0, 1, o.Level)
	if err != nil {
		return Estimate{}, err
	}
	scale := func(v float64) float64 { return lo + span*v }
	iv := e.Intervals[0]
	iv.Lo, iv.Hi, iv.Note = scale(iv.Lo), scale(iv.Hi), note
	return Estimate{Estimator: EstTrajEL, Value: scale(e.Value), Intervals: []Interval{iv}}, nil
}
