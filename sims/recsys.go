package sims

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// RecSysConfig sizes the recommendation simulator. The defaults are
// RecSim's interest-evolution defaults (google-research/recsim,
// recsim/environments/interest_evolution.py, UtilityModelUserSampler,
// UtilityModelVideoSampler, IEvUserModel; recsim/choice_model.py,
// MultinomialProportionalChoiceModel).
type RecSysConfig struct {
	// Topics is the number of topics T (>= 2). Default 20.
	Topics int
	// SlateSize is the number of documents shown per step (>= 1). Default 2.
	SlateSize int
	// TimeBudget is the user's session budget in minutes (> 0). Default 200.
	TimeBudget float64
	// VideoLength is every document's length in minutes (> 0). Default 4.
	VideoLength float64
	// StepPenalty is the budget a no-click step costs (>= 0). Default 0.5.
	StepPenalty float64
	// NoClickMass is the no-click score before normalisation (> -1):
	// its choice weight is NoClickMass + 1. Default 1.
	NoClickMass float64
	// BudgetAlpha scales the budget refund watch time * quality. Default
	// 0.9/3.4.
	BudgetAlpha float64
	// InterestAlpha is the interest step at zero interest (the y intercept
	// of RecSim's alpha line, x intercept 1). Default 0.3.
	InterestAlpha float64
	// MaxQuality is the largest topic mean quality; topic means are
	// linspace(-MaxQuality, 0, floor(0.7 T)) then linspace(0, MaxQuality,
	// T - floor(0.7 T)). Default 3.
	MaxQuality float64
	// QualityStd is the standard deviation of a document's quality around
	// its topic mean (>= 0). Default 0.1.
	QualityStd float64
	// Decay in [0, 1) discounts the observed engagement history per step.
	// Default 0.8.
	Decay float64
	// MaxSteps is the step limit (> 0). Default 400.
	MaxSteps int
}

// DefaultRecSysConfig returns RecSim's interest-evolution defaults.
func DefaultRecSysConfig() RecSysConfig {
	return RecSysConfig{
		Topics: 20, SlateSize: 2, TimeBudget: 200, VideoLength: 4, StepPenalty: 0.5,
		NoClickMass: 1, BudgetAlpha: 0.9 / 3.4, InterestAlpha: 0.3, MaxQuality: 3,
		QualityStd: 0.1, Decay: 0.8, MaxSteps: 400,
	}
}

// ErrRecSysConfig marks an invalid RecSysConfig.
var ErrRecSysConfig = errors.New("sims: bad recsys config")

// Validate reports every problem of the config in one error.
func (c RecSysConfig) Validate() error {
	var errs []error
	bad := func(cond bool, format string, args ...any) {
		if cond {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	bad(c.Topics < 2, "Topics %d, want >= 2", c.Topics)
	bad(c.SlateSize < 1, "SlateSize %d, want >= 1", c.SlateSize)
	bad(!(c.TimeBudget > 0), "TimeBudget %v, want > 0", c.TimeBudget)
	bad(!(c.VideoLength > 0), "VideoLength %v, want > 0", c.VideoLength)
	bad(!(c.StepPenalty >= 0), "StepPenalty %v, want >= 0", c.StepPenalty)
	bad(!(c.NoClickMass > -1), "NoClickMass %v, want > -1", c.NoClickMass)
	bad(!(c.BudgetAlpha >= 0), "BudgetAlpha %v, want >= 0", c.BudgetAlpha)
	bad(!(c.InterestAlpha >= 0 && c.InterestAlpha <= 1), "InterestAlpha %v, want in [0, 1]", c.InterestAlpha)
	bad(!(c.MaxQuality >= 0), "MaxQuality %v, want >= 0", c.MaxQuality)
	bad(!(c.QualityStd >= 0), "QualityStd %v, want >= 0", c.QualityStd)
	bad(!(c.Decay >= 0 && c.Decay < 1), "Decay %v, want in [0, 1)", c.Decay)
	bad(c.MaxSteps < 1, "MaxSteps %d, want >= 1", c.MaxSteps)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrRecSysConfig, err)
	}
	return nil
}

// RecSys is a recommendation user simulator with RecSim's interest-evolution
// mechanics. A user has latent interests u in [-1, 1]^T drawn uniformly at
// Reset and a time budget. The action is a topic c: the recommender shows a
// slate of SlateSize fresh documents of topic c, each with quality ~
// N(mean_c, QualityStd²). The user picks one document or none by the
// multinomial proportional choice model: document i has weight <u, f_i> + 1
// = u_c + 1 and no click has weight NoClickMass + 1. On a click the watch
// time min(budget, VideoLength) is the reward; the budget falls by watch
// time and rises by BudgetAlpha * watch time * quality; interest u_c moves
// by alpha (1 - u_c) with alpha = InterestAlpha (1 - |u_c|), up with
// probability (u_c + 1)/2, else down, clipped to [-1, 1]. No click costs
// StepPenalty and rewards 0. The episode terminates when the budget is <= 0
// and is truncated at MaxSteps.
//
// The observation is what a production recommender logs, never u
// (dimension 2T + 4). Per topic c, from the decayed counts of clicks and of
// impressions (slates shown), h <- Decay h + (1 if this step): the smoothed
// click rate (clicks_c + 1) / (impressions_c + 2), and the impressions
// scaled by 1 - Decay into [0, 1]. Then the session context: the elapsed
// fraction of the step limit, whether the last step was a click (0/1), the
// last watch time divided by VideoLength, and the remaining session time
// predicted from the responses, divided by TimeBudget: TimeBudget minus the
// session's minutes (watch time, plus StepPenalty per slate without a
// click) plus BudgetAlpha times the quality-weighted watch minutes (RecSim's
// responses report each watch time and the clicked document's quality; the
// refund rule is the user model's, public). Under this simulator the
// prediction is the user's remaining time budget exactly. The learner needs
// it: a topic's quality never changes the immediate reward, its value shows
// only as a longer session hundreds of steps later, and a critic that
// cannot see the remaining time cannot bootstrap it.
type RecSys struct {
	cfg     RecSysConfig
	means   []float64
	u       []float64
	clicks  []float64
	imps    []float64
	budget  float64
	steps   int
	lastWT  float64
	lastClk float64
	rng     *rand.Rand
	oLow    []float64
	oHigh   []float64
}

// NewRecSys validates cfg and builds the simulator.
func NewRecSys(cfg RecSysConfig) (*RecSys, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	T := cfg.Topics
	e := &RecSys{cfg: cfg, means: recsysTopicMeans(T, cfg.MaxQuality),
		u: make([]float64, T), clicks: make([]float64, T), imps: make([]float64, T)}
	n := 2*T + 4
	e.oLow, e.oHigh = make([]float64, n), make([]float64, n)
	for i := range 2*T + 3 {
		e.oHigh[i] = 1
	}
	// The remaining time: a click on a document of quality q changes it by
	// wt (BudgetAlpha q - 1), wt <= VideoLength; q is within 8 standard
	// deviations of MaxQuality but for a probability below 1e-15 per
	// document (the box is only what the agent clips to).
	qHi := cfg.MaxQuality + 8*cfg.QualityStd
	up := max(0, cfg.VideoLength*(cfg.BudgetAlpha*qHi-1))
	e.oLow[2*T+3] = -(cfg.StepPenalty + cfg.VideoLength*(1+cfg.BudgetAlpha*qHi)) / cfg.TimeBudget
	e.oHigh[2*T+3] = 1 + float64(cfg.MaxSteps)*up/cfg.TimeBudget
	return e, nil
}

// recsysTopicMeans is RecSim's UtilityModelVideoSampler cluster means:
// concat(linspace(-max, 0, floor(0.7 T)), linspace(0, max, rest)).
func recsysTopicMeans(T int, maxQ float64) []float64 {
	nt := int(float64(T) * 0.7)
	m := make([]float64, 0, T)
	m = linspaceAppend(m, -maxQ, 0, nt)
	return linspaceAppend(m, 0, maxQ, T-nt)
}

// linspaceAppend appends numpy's linspace(a, b, n).
func linspaceAppend(dst []float64, a, b float64, n int) []float64 {
	if n == 1 {
		return append(dst, a)
	}
	for i := range n {
		dst = append(dst, a+(b-a)*float64(i)/float64(n-1))
	}
	return dst
}

// TopicMeans returns the mean document quality of each topic (shared; do
// not modify).
func (e *RecSys) TopicMeans() []float64 { return e.means }

// Interests returns the user's latent interests (shared; for tests and
// analysis, never part of the observation).
func (e *RecSys) Interests() []float64 { return e.u }

// Budget returns the user's remaining time budget.
func (e *RecSys) Budget() float64 { return e.budget }

// ObservationSpace is the box of dimension 2T+4 described on RecSys.
func (e *RecSys) ObservationSpace() Space { return Space{Kind: Box, Low: e.oLow, High: e.oHigh} }

// ActionSpace is discrete over the T topics.
func (e *RecSys) ActionSpace() Space { return Space{Kind: Discrete, N: e.cfg.Topics} }

// MaxSteps is cfg.MaxSteps.
func (e *RecSys) MaxSteps() int { return e.cfg.MaxSteps }

// Reset draws a new user: u ~ U(-1, 1)^T, the full budget, empty history.
func (e *RecSys) Reset(rng *rand.Rand, obs []float64) {
	e.rng = rng
	for i := range e.u {
		e.u[i] = 2*rng.Float64() - 1
		e.clicks[i], e.imps[i] = 0, 0
	}
	e.budget = e.cfg.TimeBudget
	e.steps = 0
	e.lastWT, e.lastClk = 0, 0
	e.observe(obs)
}

// ClickProb is the probability that the user clicks some document of a
// slate of topic c: S (u_c + 1) / (S (u_c + 1) + NoClickMass + 1).
func (e *RecSys) ClickProb(c int) float64 {
	w := float64(e.cfg.SlateSize) * (e.u[c] + 1)
	return w / (w + e.cfg.NoClickMass + 1)
}

// Step shows a slate of topic a.Index.
func (e *RecSys) Step(a Action, obs []float64) (float64, bool, bool) {
	T := e.cfg.Topics
	c := a.Index
	if c < 0 || c >= T || a.Vec != nil {
		panic(fmt.Sprintf("sims: RecSys action %d outside [0, %d)", c, T))
	}
	// Slate qualities are drawn for every document (as RecSim samples each
	// candidate), then the choice: docs share weight u_c + 1.
	var qClicked float64
	S := e.cfg.SlateSize
	w := e.u[c] + 1
	total := float64(S)*w + e.cfg.NoClickMass + 1
	x := e.rng.Float64() * total
	pick := S // no click
	if x < float64(S)*w {
		pick = min(int(x/w), S-1)
	}
	for i := range S {
		q := e.means[c] + e.cfg.QualityStd*e.rng.NormFloat64()
		if i == pick {
			qClicked = q
		}
	}
	for i := range T {
		e.clicks[i] *= e.cfg.Decay
		e.imps[i] *= e.cfg.Decay
	}
	e.imps[c]++
	var reward float64
	if pick < S {
		wt := min(e.budget, e.cfg.VideoLength)
		reward = wt
		e.updateInterest(c, e.rng.Float64())
		e.budget += -wt + e.cfg.BudgetAlpha*wt*qClicked
		e.clicks[c]++
		e.lastClk, e.lastWT = 1, wt
	} else {
		e.budget -= e.cfg.StepPenalty
		e.lastClk, e.lastWT = 0, 0
	}
	e.steps++
	e.observe(obs)
	return reward, e.budget <= 0, e.steps >= e.cfg.MaxSteps
}

// updateInterest is IEvUserModel.update_state's interest step for a click
// on topic c with a uniform draw flip.
func (e *RecSys) updateInterest(c int, flip float64) {
	uc := e.u[c]
	alpha := e.cfg.InterestAlpha * (1 - math.Abs(uc))
	upd := alpha * (1 - uc)
	if flip < (uc+1)/2 {
		uc += upd
	} else {
		uc -= upd
	}
	e.u[c] = min(max(uc, -1), 1)
}

func (e *RecSys) observe(obs []float64) {
	T := e.cfg.Topics
	if len(obs) != 2*T+4 {
		panic(fmt.Sprintf("sims: RecSys observation needs length %d, got %d", 2*T+4, len(obs)))
	}
	for c := range T {
		obs[c] = (e.clicks[c] + 1) / (e.imps[c] + 2)
		obs[T+c] = e.imps[c] * (1 - e.cfg.Decay)
	}
	obs[2*T] = float64(e.steps) / float64(e.cfg.MaxSteps)
	obs[2*T+1] = e.lastClk
	obs[2*T+2] = e.lastWT / e.cfg.VideoLength
	obs[2*T+3] = e.budget / e.cfg.TimeBudget
}
