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
// Action, Obs and Targets are optional (their zero values mean "not
// given"); the doubly robust estimators (DR and WDR) need Targets at every
// step, and fit their model of the target's action values on Obs.
type Step struct {
	Reward float64
	Prob   float64 // in (0, 1]
	// Target is the target's probability of the action taken, in [0, 1].
	// With Targets given it must equal Targets[Action] (within 1e-9), or
	// be 0, which takes Targets[Action].
	Target float64
	// Action is the index of the action taken, in [0, len(Targets)) when
	// Targets is given.
	Action int
	// Obs are the state's public features, finite, of the same length at
	// every step of every trajectory (nil: none).
	Obs []float64
	// Targets is the target's probability of every action at this state
	// (entries in [0, 1], summing to 1 within 1e-9; the same number of
	// actions at every step). nil: not given.
	Targets []float64
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
	ts    []Trajectory
	// obsDim and actions are the steps' common len(Obs) and len(Targets);
	// drSkip says why DR and WDR cannot be computed ("" when they can:
	// every step carries Targets).
	obsDim, actions int
	drSkip          string
	rr              [][]float64 // gamma^t rho r
	rho             [][]float64 // rho
	ret             []float64   // each episode's discounted return sum_t gamma^t r
}

// prepareTrajectories validates the trajectories and computes the terms.
func prepareTrajectories(ts []Trajectory, gamma float64, o Options) (*trajTerms, error) {
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: no trajectories", ErrInput)
	}
	if !(gamma >= 0 && gamma <= 1) {
		return nil, fmt.Errorf("%w: discount %v, want in [0, 1]", ErrInput, gamma)
	}
	tt := &trajTerms{n: len(ts), gamma: gamma, ts: ts, rr: make([][]float64, len(ts)), rho: make([][]float64, len(ts)), ret: make([]float64, len(ts)), obsDim: -1}
	for _, tr := range ts {
		tt.T = max(tt.T, len(tr))
	}
	if err := tt.checkStates(); err != nil {
		return nil, err
	}
	for i, tr := range ts {
		if len(tr) == 0 {
			return nil, fmt.Errorf("%w: trajectory %d has no steps", ErrInput, i)
		}
		rho, disc := 1.0, 1.0
		tt.rr[i], tt.rho[i] = make([]float64, tt.T), make([]float64, tt.T)
		for t, s := range tr {
			if s.Target == 0 && len(s.Targets) > 0 {
				s.Target = s.Targets[s.Action] // checked by checkStates
			}
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

// checkStates validates the optional Action, Obs and Targets of every
// step and sets obsDim, actions and drSkip.
func (tt *trajTerms) checkStates() error {
	for i, tr := range tt.ts {
		for t, s := range tr {
			at := func(format string, args ...any) error {
				return fmt.Errorf("%w: trajectory %d step %d: %s", ErrInput, i, t, fmt.Sprintf(format, args...))
			}
			if tt.obsDim < 0 {
				tt.obsDim = len(s.Obs)
			}
			if len(s.Obs) != tt.obsDim {
				return at("%d observation features, want %d as in the first step", len(s.Obs), tt.obsDim)
			}
			for j, v := range s.Obs {
				if !finite(v) {
					return at("observation feature %d is %v, want finite", j, v)
				}
			}
			if s.Action < 0 {
				return at("action %d, want >= 0", s.Action)
			}
			if len(s.Targets) == 0 {
				if tt.drSkip == "" {
					tt.drSkip = fmt.Sprintf("DR and WDR not computed: trajectory %d step %d does not give the target's probability of every action (Step.Targets)", i, t)
				}
				continue
			}
			if tt.actions == 0 {
				tt.actions = len(s.Targets)
			}
			if len(s.Targets) != tt.actions {
				return at("target probabilities of %d actions, want %d as in the first step giving them", len(s.Targets), tt.actions)
			}
			sum := 0.0
			for a, p := range s.Targets {
				if !(p >= 0 && p <= 1) {
					return at("target probability %v of action %d, want in [0, 1]", p, a)
				}
				sum += p
			}
			if math.Abs(sum-1) > 1e-9 {
				return at("target probabilities sum to %v, want 1 (within 1e-9)", sum)
			}
			if s.Action >= len(s.Targets) {
				return at("action %d outside the %d actions of Targets", s.Action, len(s.Targets))
			}
			if s.Target != 0 && math.Abs(s.Target-s.Targets[s.Action]) > 1e-9 {
				return at("target probability %v of the action taken, but Targets[%d] = %v", s.Target, s.Action, s.Targets[s.Action])
			}
		}
	}
	tt.obsDim = max(tt.obsDim, 0)
	return nil
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

// TrajectoryResult is the trajectory estimates and what was left out.
type TrajectoryResult struct {
	Estimates []Estimate `json:"estimates"`
	// Notes say which estimators were not computed and why.
	Notes []string `json:"notes,omitempty"`
}

// TrajectoryEstimates estimates the target's discounted return per
// episode from logged trajectories: EL-episode, PDIS, PDWIS and, when
// every step gives Targets, DR-episode and WDR-episode (see
// Trajectories, which also says when they were left out).
func TrajectoryEstimates(ts []Trajectory, gamma float64, opt Options) ([]Estimate, error) {
	r, err := Trajectories(ts, gamma, opt)
	if err != nil {
		return nil, err
	}
	return r.Estimates, nil
}

// Trajectories estimates the target's discounted return per episode from
// logged trajectories, in this order: EL-episode (episodeEL), PDIS and
// PDWIS, each with its Wald interval (PDIS on its per-trajectory terms,
// PDWIS on its delta-method influence terms) and, unless
// Options.Bootstrap is negative, the percentile bootstrap over
// trajectories; then, when every step gives the target's probability of
// every action (Step.Targets), the doubly robust DR-episode (Jiang & Li
// 2016) and WDR-episode (Thomas & Brunskill 2016), with their action-value
// model fitted by fitted-Q evaluation on the steps' Obs and cross-fitted
// over Options.Folds folds of trajectories, their Wald intervals (DR on
// its per-trajectory terms, WDR on its delta-method influence terms) and
// the percentile bootstrap over trajectories with the cross-fitted model
// held fixed (noted). Without Targets at every step DR and WDR are left
// out and a note says so. Rewards must lie in the declared range.
// Non-private, like Evaluate.
func Trajectories(ts []Trajectory, gamma float64, opt Options) (*TrajectoryResult, error) {
	return trajectories(ts, gamma, opt, nil)
}

// trajectories is Trajectories with, for tests, the action-value model q
// in place of the cross-fitted one (nil: cross-fitted).
func trajectories(ts []Trajectory, gamma float64, opt Options, q qModel) (*TrajectoryResult, error) {
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
	res := &TrajectoryResult{}
	type boot struct {
		est  *Estimate
		vals []float64
		note string
	}
	var boots []boot
	ests := []*Estimate{&pdis, &pdwis}
	var d *drTerms
	var drPer []float64
	var nx, dx, ny, dy []float64
	var dr, wdr Estimate
	if tt.drSkip == "" {
		if q == nil {
			q = tt.crossFitQ(o)
		}
		d = tt.drTerms(q)
		drPer = d.perTrajectory()
		nx, dx, ny, dy = make([]float64, tt.T), make([]float64, tt.T), make([]float64, tt.T), make([]float64, tt.T)
		dr = Estimate{Estimator: EstTrajDR, Value: drMean(drPer, all)}
		dr.Intervals = append(dr.Intervals, waldOf(dr.Value, drPer))
		wdr = Estimate{Estimator: EstTrajWDR, Value: d.wdr(all, nx, dx, ny, dy)}
		wdr.Intervals = append(wdr.Intervals, waldOf(wdr.Value, d.wdrInfluence()))
		ests = append(ests, &dr, &wdr)
	} else {
		res.Notes = append(res.Notes, tt.drSkip)
	}
	if o.Bootstrap > 0 {
		for k, e := range ests {
			note := ""
			if k >= 2 {
				note = TrajDRNote
			}
			boots = append(boots, boot{e, make([]float64, o.Bootstrap), note})
		}
		idx := make([]int, tt.n)
		for k := range o.Bootstrap {
			for i := range idx {
				idx[i] = o.Rand.IntN(tt.n)
			}
			boots[0].vals[k], boots[1].vals[k] = tt.pdis(idx), tt.pdwis(idx, num, den)
			if d != nil {
				boots[2].vals[k], boots[3].vals[k] = drMean(drPer, idx), d.wdr(idx, nx, dx, ny, dy)
			}
		}
		alpha := 1 - o.Level
		for _, b := range boots {
			slices.Sort(b.vals)
			b.est.Intervals = append(b.est.Intervals, Interval{Method: MethodBootstrap, Level: o.Level, Lo: quantile(b.vals, alpha/2), Hi: quantile(b.vals, 1-alpha/2), Note: b.note})
		}
	}
	el, err := tt.episodeEL(o)
	if err != nil {
		return nil, err
	}
	res.Estimates = []Estimate{el, pdis, pdwis}
	if d != nil {
		res.Estimates = append(res.Estimates, dr, wdr)
	}
	return res, nil
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
