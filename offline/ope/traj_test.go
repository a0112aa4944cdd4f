package ope

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dprl/sims"
)

// riverswimLog runs n RiverSwim episodes (p = 0.6, 20 steps, rewards in
// [0, 1]) under a logger that swims right with probability pl, recording
// the target's probability pt of each action taken.
func riverswimLog(t testing.TB, n int, pl, pt float64, rng *rand.Rand) []Trajectory {
	t.Helper()
	return riverswimSteps(t, n, pl, pt, false, rng)
}

// riverswimSteps is riverswimLog, with, when full, each step's action,
// one-hot state (Obs) and the target's distribution (Targets).
func riverswimSteps(t testing.TB, n int, pl, pt float64, full bool, rng *rand.Rand) []Trajectory {
	t.Helper()
	env, err := sims.NewRiverSwim(0.6)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float64, sims.RiverSwimStates)
	out := make([]Trajectory, n)
	for i := range out {
		env.Reset(rng, obs)
		for {
			a, p, q := 0, 1-pl, 1-pt
			if rng.Float64() < pl {
				a, p, q = 1, pl, pt
			}
			st := Step{Prob: p, Target: q}
			if full {
				st.Action, st.Obs, st.Targets = a, slices.Clone(obs), []float64{1 - pt, pt}
			}
			r, term, trunc := env.Step(sims.Action{Index: a}, obs)
			st.Reward = r
			out[i] = append(out[i], st)
			if term || trunc {
				break
			}
		}
	}
	return out
}

// riverswimValue is the target's mean return over episodes episodes.
func riverswimValue(t testing.TB, episodes int, pt float64, rng *rand.Rand) float64 {
	s := 0.0
	for _, tr := range riverswimLog(t, episodes, pt, pt, rng) {
		for _, st := range tr {
			s += st.Reward
		}
	}
	return s / float64(episodes)
}

// TestTrajectoryCoverage measures, over 200 logs of 500 RiverSwim episodes
// (logger: right with probability 0.6; target: 0.75; products of ratios up
// to 1.25^20 = 87), the coverage of PDIS's and PDWIS's Wald and bootstrap
// intervals, and checks PDIS's unbiasedness. The large products come with
// the large rewards (the far bank is reached by swimming right), so all
// four undercover at this n (measured 0.81 to 0.84): the floors only catch
// a broken interval.
func TestTrajectoryCoverage(t *testing.T) {
	reps, boot := 200, 200
	if raceEnabled || testing.Short() {
		reps, boot = 40, 50 // the race detector slows the bootstrap tenfold
	}
	const pl, pt, n = 0.6, 0.75, 500
	truth := riverswimValue(t, 200_000, pt, rand.New(rand.NewPCG(9, 9)))
	rng := rand.New(rand.NewPCG(10, 10))
	type key struct{ est, m string }
	cover, width := map[key]int{}, map[key]float64{}
	var sum, sum2 float64
	for range reps {
		es, err := TrajectoryEstimates(riverswimLog(t, n, pl, pt, rng), 1, Options{Bootstrap: boot, Rand: rng})
		if err != nil {
			t.Fatal(err)
		}
		sum += es[1].Value // PDIS
		sum2 += es[1].Value * es[1].Value
		for _, e := range es {
			for _, iv := range e.Intervals {
				k := key{e.Estimator, iv.Method}
				if iv.Lo <= truth && truth <= iv.Hi {
					cover[k]++
				}
				width[k] += iv.Width()
			}
		}
	}
	for k, c := range cover {
		t.Logf("%-5s %-21s coverage %.3f mean width %.4f (truth %.4f)", k.est, k.m, float64(c)/float64(reps), width[k]/float64(reps), truth)
	}
	m := sum / float64(reps)
	se := math.Sqrt(max(0, sum2/float64(reps)-m*m) / float64(reps))
	t.Logf("PDIS mean %.4f, truth %.4f, se %.4f", m, truth, se)
	if math.Abs(m-truth) > 4*se+0.01 {
		t.Errorf("PDIS mean %.4f over %d logs, truth %.4f: more than 4 se (%.4f) away", m, reps, truth, se)
	}
	// Empirical likelihood on whole episodes holds its level here.
	if c := float64(cover[key{EstTrajEL, MethodEL}]) / float64(reps); c < 0.93 {
		t.Errorf("episode EL coverage %.3f, want >= 0.93", c)
	}
	for _, k := range []key{{EstPDIS, MethodWald}, {EstPDWIS, MethodWald}, {EstPDIS, MethodBootstrap}, {EstPDWIS, MethodBootstrap}} {
		if c := float64(cover[k]) / float64(reps); c < 0.7 {
			t.Errorf("%s %s coverage %.3f, want >= 0.7", k.est, k.m, c)
		}
	}
}

// TestTrajectoryBadInput: empty logs, empty trajectories, bad
// probabilities and rewards outside the range are refused, naming the
// trajectory and step.
func TestTrajectoryBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	ok := Step{Reward: 0.5, Prob: 0.5, Target: 0.5}
	for name, c := range map[string]struct {
		ts    []Trajectory
		gamma float64
		want  string
	}{
		"none":         {nil, 1, "no trajectories"},
		"empty":        {[]Trajectory{{ok}, {}}, 1, "trajectory 1 has no steps"},
		"prob 0":       {[]Trajectory{{ok, {Reward: 0, Prob: 0, Target: 1}}}, 1, "trajectory 0 step 1: logging probability 0"},
		"target 2":     {[]Trajectory{{{Reward: 0, Prob: 0.5, Target: 2}}}, 1, "target probability 2"},
		"reward 3":     {[]Trajectory{{{Reward: 3, Prob: 0.5, Target: 0.5}}}, 1, "reward 3 outside"},
		"reward NaN":   {[]Trajectory{{{Reward: math.NaN(), Prob: 0.5, Target: 0.5}}}, 1, "reward NaN outside"},
		"discount 1.5": {[]Trajectory{{ok}}, 1.5, "discount 1.5"},
	} {
		_, err := TrajectoryEstimates(c.ts, c.gamma, Options{Rand: rng})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// On-policy: every weight 1, PDIS and PDWIS are the mean return.
	es, err := TrajectoryEstimates([]Trajectory{{ok, ok}, {{Reward: 1, Prob: 0.5, Target: 0.5}}}, 1, Options{Rand: rng, Bootstrap: -1})
	if err != nil || math.Abs(es[1].Value-1) > 1e-12 || math.Abs(es[2].Value-1) > 1e-12 {
		t.Errorf("on-policy: %+v %v", es, err)
	}
}
