package sims

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
)

// dosingMealsJSON (dosing_meals_v0.json, beside this file) is the meal
// disturbance vector d[k], k = 0..144, on the 10-minute grid over 24 h, of
// the Diabetic-v0 environment of the strongio/dosing-rl-gym repository (the
// Dosing task of "Differentially Private Policy Gradient").
//
//go:embed dosing_meals_v0.json
var dosingMealsJSON []byte

// Expanded Bergman minimal model parameters (strongio/dosing-rl-gym,
// Diabetic env; the DPPG paper's Dosing task).
const (
	dosingGb   = 291.0
	dosingP1   = 0.0317
	dosingP2   = 0.0123
	dosingSi   = 0.029
	dosingKe   = 0.09
	dosingKabs = 0.012
	dosingKemp = 0.18
	dosingF    = 0.8
	dosingVg   = 12.0

	// DosingPoints is the number of points of the 24 h time grid.
	DosingPoints = 145
	// DosingMaxSteps is the agent's step limit (one internal step at reset).
	DosingMaxSteps = 143
	// DosingMaxDose is the upper bound of the insulin action (mU/min).
	DosingMaxDose = 10.0
	dosingDt      = 24.0 / (DosingPoints - 1) // hours
	// Tolerances verified in TestDosingAccuracy: G within 1e-8 relative of a
	// run at rtol 1e-13 over a whole episode.
	dosingRTol = 1e-10
	dosingATol = 1e-10
)

// dosingRHS is the expanded Bergman model, time in hours (every derivative
// multiplied by 60), state [G, X, I, S1, S2, Ggut], insulin u, meal d:
//
//	dG    = -p1 (G - gb) - si X G + f kabs/vg Ggut + f/vg d
//	dX    = p2 (I - X)
//	dI    = -ke I + u
//	dS1   = u - kemp S1
//	dS2   = -kemp (S2 - S1)
//	dGgut = kemp S2 - kabs Ggut
func dosingRHS(dy, y []float64, u, d float64) {
	G, X, I, S1, S2, Ggut := y[0], y[1], y[2], y[3], y[4], y[5]
	dy[0] = 60 * (-dosingP1*(G-dosingGb) - dosingSi*X*G + dosingF*dosingKabs/dosingVg*Ggut + dosingF/dosingVg*d)
	dy[1] = 60 * (dosingP2 * (I - X))
	dy[2] = 60 * (-dosingKe*I + u)
	dy[3] = 60 * (u - dosingKemp*S1)
	dy[4] = 60 * (-dosingKemp * (S2 - S1))
	dy[5] = 60 * (dosingKemp*S2 - dosingKabs*Ggut)
}

// Dosing is the DPPG paper's Dosing task (strongio dosing-rl-gym
// "Diabetic"): an insulin pump controlling blood glucose over 24 h on a
// 10-minute grid. Variant 0 (dosing-0) uses the fixed meal vector of
// Diabetic-v0 and a reset dose of 3.0; variant 1 (dosing-1) draws a
// patient's meals and a reset dose in {0..6} at every Reset.
//
// Action: Box of dimension 1, insulin u in [0, 10] mU/min; Step clips u into
// that range (a NaN action panics). Observation (9): [G, X, I, S1, S2, Ggut]
// at t_{k+1}, the meal d[k+1], G at t_k, and d[k], where the step integrated
// [t_k, t_{k+1}] with dose u_k and meal d[k+1]. Reward on the post-step G:
// 1 - tanh(0.1 |G - 80| / 0.7)^2, or -1 when G < 65 or G > 105. The episode
// never terminates; it is truncated after 143 agent steps.
type Dosing struct {
	variant int
	meals0  [DosingPoints]float64
	meals   [DosingPoints]float64
	hat     [11][11]float64 // Savitzky-Golay projection (dosing-1 meals)
	y       [6]float64
	k       int // grid index of the current state
	steps   int
	u, d    float64
	rng     *rand.Rand
	ode     *DOPRI5
	rhs     ODEFunc
	low     []float64
	high    []float64
	oLow    []float64
	oHigh   []float64
}

// NewDosing returns the Dosing task; variant is 0 (dosing-0) or 1
// (dosing-1). It panics on another variant.
func NewDosing(variant int) *Dosing {
	if variant != 0 && variant != 1 {
		panic(fmt.Sprintf("sims: Dosing variant %d, want 0 or 1", variant))
	}
	e := &Dosing{variant: variant, ode: NewDOPRI5(6, dosingRTol, dosingATol)}
	var doc struct {
		Meals []float64 `json:"meal_vector_v0"`
	}
	if err := json.Unmarshal(dosingMealsJSON, &doc); err != nil || len(doc.Meals) != DosingPoints {
		panic(fmt.Sprintf("sims: embedded dosing meal vector is broken: %v (%d values)", err, len(doc.Meals)))
	}
	copy(e.meals0[:], doc.Meals)
	e.hat = savgolHat()
	e.rhs = func(dy []float64, _ float64, y []float64) { dosingRHS(dy, y, e.u, e.d) }
	e.low, e.high = []float64{0}, []float64{DosingMaxDose}
	e.oLow, e.oHigh = make([]float64, 9), make([]float64, 9)
	for i := range e.oLow {
		e.oLow[i], e.oHigh[i] = math.Inf(-1), math.Inf(1)
	}
	return e
}

// ObservationSpace is an unbounded box of dimension 9.
func (e *Dosing) ObservationSpace() Space { return Space{Kind: Box, Low: e.oLow, High: e.oHigh} }

// ActionSpace is the box [0, 10] of dimension 1.
func (e *Dosing) ActionSpace() Space { return Space{Kind: Box, Low: e.low, High: e.high} }

// MaxSteps is 143.
func (e *Dosing) MaxSteps() int { return DosingMaxSteps }

// Meals returns the meal vector d[0..144] of the current episode (shared;
// do not modify).
func (e *Dosing) Meals() []float64 { return e.meals[:] }

// Reset draws G ~ U(65, 105), X, I ~ N(33.33, 5), S1, S2 ~ N(25, 5), Ggut ~
// N(250, 5) (the reference's order of draws), then for variant 1 the
// first dose in {0, ..., 6}, the steady meal level U(800, 1200) and the
// meals (dosingRandomMeals), then
// takes one internal step with dose 3.0 (variant 0) or a uniform dose in
// {0, ..., 6} (variant 1), and writes the observation.
func (e *Dosing) Reset(rng *rand.Rand, obs []float64) {
	e.rng = rng
	e.ode.H = 0
	e.y[0] = 65 + 40*rng.Float64()
	e.y[1] = 33.33 + 5*rng.NormFloat64()
	e.y[2] = 33.33 + 5*rng.NormFloat64()
	e.y[3] = 25 + 5*rng.NormFloat64()
	e.y[4] = 25 + 5*rng.NormFloat64()
	e.y[5] = 250 + 5*rng.NormFloat64()
	dose := 3.0
	if e.variant == 0 {
		e.meals = e.meals0
	} else {
		dose = float64(rng.IntN(7))
		dosingRandomMeals(&e.meals, &e.hat, rng, 800+400*rng.Float64())
	}
	e.k, e.steps = 0, 0
	e.advance(dose, obs)
}

// dosingRandomMeals draws a Dosing-1 meal vector as strongio
// dosing-rl-gym's get_meal_data (10-minute grid, 6 points per hour):
// the steady level int(steady) everywhere, then each of 6 meals
// (breakfast, snack, lunch, snack, dinner, snack) with probability
// (0.95, 0.2, 0.95, 0.2, 0.95, 0.2) at grid time round(truncated normal
// with mean (7, 9.5, 12, 15, 18, 21)*6+1, sd 10, bounds (5, 9, 11, 14, 16.5,
// 20)*6+1 and (9, 10, 13, 16, 29.5, 22)*6+1), capped at 143, replaced by the
// amount max(round(N((2500, 1250, 2800, 1250, 2800, 1250), (100, 50, 100,
// 50, 100, 50))), 0); then scipy's savgol_filter(window 11, order 3,
// mode "interp") and a floor at steady. The truncated normal is drawn by
// rejection (the same distribution, not numpy's random stream).
func dosingRandomMeals(m *[DosingPoints]float64, hat *[11][11]float64, rng *rand.Rand, steady float64) {
	prob := [6]float64{0.95, 0.2, 0.95, 0.2, 0.95, 0.2}
	lb := [6]float64{5, 9, 11, 14, 16.5, 20}
	ub := [6]float64{9, 10, 13, 16, 29.5, 22}
	mu := [6]float64{7, 9.5, 12, 15, 18, 21}
	amu := [6]float64{2500, 1250, 2800, 1250, 2800, 1250}
	asd := [6]float64{100, 50, 100, 50, 100, 50}
	var raw [DosingPoints]float64
	for i := range raw {
		raw[i] = math.Trunc(steady)
	}
	for i := range 6 {
		if !(rng.Float64() < prob[i]) {
			continue
		}
		lo, hi, mean := lb[i]*6+1, ub[i]*6+1, mu[i]*6+1
		var tm float64
		for {
			tm = mean + 10*rng.NormFloat64()
			if tm >= lo && tm <= hi {
				break
			}
		}
		at := min(int(math.RoundToEven(tm)), DosingPoints-2)
		raw[at] = max(math.RoundToEven(amu[i]+asd[i]*rng.NormFloat64()), 0)
	}
	savgol11x3(m, &raw, hat)
	for i := range m {
		m[i] = max(m[i], steady)
	}
}

// savgolHat returns the 11x11 least-squares projection onto cubics over
// x = 0..10: row i evaluates the fitted cubic at x = i. Row 5 holds the
// Savitzky-Golay smoothing coefficients (-36, 9, 44, 69, 84, 89, ...)/429.
func savgolHat() (h [11][11]float64) {
	// Normal equations: (A^T A) c = A^T e_j for each unit vector, A_{x,p} = (x-5)^p.
	var ata [4][4]float64
	for x := range 11 {
		for p := range 4 {
			for q := range 4 {
				ata[p][q] += math.Pow(float64(x-5), float64(p+q))
			}
		}
	}
	// Invert ata by Gauss-Jordan (symmetric positive definite, 4x4).
	var inv [4][4]float64
	a := ata
	for i := range 4 {
		inv[i][i] = 1
	}
	for c := range 4 {
		piv := a[c][c]
		for k := range 4 {
			a[c][k] /= piv
			inv[c][k] /= piv
		}
		for r := range 4 {
			if r != c {
				f := a[r][c]
				for k := range 4 {
					a[r][k] -= f * a[c][k]
					inv[r][k] -= f * inv[c][k]
				}
			}
		}
	}
	for i := range 11 {
		for j := range 11 {
			var v float64
			for p := range 4 {
				for q := range 4 {
					v += math.Pow(float64(i-5), float64(p)) * inv[p][q] * math.Pow(float64(j-5), float64(q))
				}
			}
			h[i][j] = v
		}
	}
	return h
}

// savgol11x3 is scipy.signal.savgol_filter(x, 11, 3) with the default
// mode "interp": interior points use the centred window, the first and
// last 5 points the cubic fitted to the first or last 11 points.
func savgol11x3(dst, x *[DosingPoints]float64, hat *[11][11]float64) {
	const n = DosingPoints
	for i := range n {
		var row *[11]float64
		start := i - 5
		switch {
		case i < 5:
			row, start = &hat[i], 0
		case i >= n-5:
			row, start = &hat[i-(n-11)], n-11
		default:
			row = &hat[5]
		}
		var v float64
		for j := range 11 {
			v += row[j] * x[start+j]
		}
		dst[i] = v
	}
}

// advance integrates [t_k, t_{k+1}] with dose u and meal d[k+1] and writes
// the observation.
func (e *Dosing) advance(u float64, obs []float64) {
	if len(obs) != 9 {
		panic(fmt.Sprintf("sims: Dosing observation needs length 9, got %d", len(obs)))
	}
	gPrev := e.y[0]
	e.u, e.d = u, e.meals[e.k+1]
	t0 := float64(e.k) * dosingDt
	if err := e.ode.Integrate(e.rhs, t0, t0+dosingDt, e.y[:]); err != nil {
		panic(err) // unreachable for the model's bounded inputs
	}
	e.k++
	copy(obs, e.y[:])
	obs[6] = e.meals[e.k]
	obs[7] = gPrev
	obs[8] = e.meals[e.k-1]
}

// DosingReward is the reward of a post-step glucose G: -1 outside
// [65, 105], else 1 - tanh(0.1 |G - 80| / 0.7)^2.
func DosingReward(G float64) float64 {
	if G < 65 || G > 105 {
		return -1
	}
	t := math.Tanh(0.1 * math.Abs(G-80) / 0.7)
	return 1 - t*t
}

// Step applies the insulin dose a.Vec[0] clipped to [0, 10].
func (e *Dosing) Step(a Action, obs []float64) (float64, bool, bool) {
	if len(a.Vec) != 1 || a.Vec[0] != a.Vec[0] {
		panic(fmt.Sprintf("sims: Dosing action must be one finite dose, got %v", a.Vec))
	}
	if e.k+1 >= DosingPoints {
		panic("sims: Dosing stepped past the end of the episode; call Reset")
	}
	u := min(max(a.Vec[0], 0), DosingMaxDose)
	e.advance(u, obs)
	e.steps++
	return DosingReward(e.y[0]), false, e.steps >= DosingMaxSteps
}

// SetState sets [G, X, I, S1, S2, Ggut] at the current grid point.
func (e *Dosing) SetState(state, obs []float64) error {
	if len(state) != 6 {
		return fmt.Errorf("sims: Dosing state needs 6 values, got %d", len(state))
	}
	for i, v := range state {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("sims: Dosing state[%d] is %v", i, v)
		}
	}
	copy(e.y[:], state)
	copy(obs, e.y[:])
	obs[6] = e.meals[e.k]
	obs[7] = e.y[0]
	if e.k > 0 {
		obs[8] = e.meals[e.k-1]
	}
	return nil
}
