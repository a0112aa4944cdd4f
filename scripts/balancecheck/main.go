// Command balancecheck compares a released PriMORL cart-pole Balance model
// (a file of dprl offline primorl --save-model) with the simulator, and
// rates policies (files of --out) in it the ways a run could:
//
//   - the model's linearisation at the upright rest state, model by model
//     and for the ensemble's mean, beside the simulator's: how much one
//     step changes the cart's and the pole's speeds per unit of lean and of
//     control (a controller tuned to a model whose pole falls more slowly
//     than the real one is too gentle on the real system);
//   - each policy's mean return over 20 whole episodes of the model
//     (mirrored, the task's public reward, no penalty) with a model and a
//     Gaussian draw at every step, with one model per episode, and on the
//     ensemble's mean dynamics (dprl offline primorl --select), and on one
//     model's mean dynamics per episode, beside its return on the
//     simulator from the same start states.
//
// It reads only the released model, the policies and the public simulator.
//
//	go run ./scripts/balancecheck bal.model [policy.snap ...]
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"dprl/offline/primorl"
	"dprl/policy/sac"
	"dprl/sims"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: balancecheck MODEL [POLICY...]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "balancecheck:", err)
		os.Exit(1)
	}
}

func run(modelFile string, policies []string) error {
	b, err := os.ReadFile(modelFile)
	if err != nil {
		return err
	}
	m, err := primorl.LoadModel(b)
	if err != nil {
		return err
	}
	if m.Env != "cartpole-balance" {
		return fmt.Errorf("%s: a model of %s, not cartpole-balance", modelFile, m.Env)
	}
	sc, err := primorl.PublicScales(m.Env)
	if err != nil {
		return err
	}
	linearisation(m, sc)
	if len(policies) == 0 {
		return nil
	}
	fmt.Println("\nmean return over 20 whole episodes (1,000 steps; mirrored model, public reward, no penalty)")
	fmt.Printf("%-28s %12s %12s %12s %12s %10s\n", "policy", "draw a step", "one model", "mean model", "one's mean", "simulator")
	for _, f := range policies {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		act, err := sac.LoadActor(b)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		fmt.Printf("%-28s", f)
		for mode := range 4 {
			me, err := primorl.NewModelEnv(sims.NewDMCCartPole(false), m.Ensemble, m.Params, sc, primorl.MPD, 0, 1000)
			if err == nil {
				err = me.SetMirror(true)
			}
			if err == nil {
				err = me.SetPublicReward(true)
			}
			if err != nil {
				return err
			}
			me.SetModelPerRollout(mode == 1 || mode == 3)
			me.SetMeanStep(mode >= 2)
			fmt.Printf(" %12.1f", meanReturn(me, act))
		}
		fmt.Printf(" %10.1f\n", meanReturn(sims.NewDMCCartPole(false), act))
	}
	return nil
}

// meanReturn is act's deterministic mean return over 20 episodes of env,
// episode i reset (and, in a model, stepped) from the generator seeded i.
func meanReturn(env sims.Env, act *sac.Actor) float64 {
	obs := make([]float64, 5)
	a := sims.Action{Vec: make([]float64, 1)}
	var tot float64
	const n = 20
	for ep := range n {
		env.Reset(rand.New(rand.NewPCG(uint64(ep), 77)), obs)
		for range env.MaxSteps() {
			act.ActDeterministic(a.Vec, obs)
			r, term, trunc := env.Step(a, obs)
			tot += r
			if term || trunc {
				break
			}
		}
	}
	return tot / n
}

// linearisation prints d(speed change)/d(lean) and d(speed change)/d(control)
// at the upright rest state: each model's (mirrored), the ensemble mean's
// and the simulator's, by finite differences (0.05 rad, 0.5 control).
func linearisation(m *primorl.Model, sc primorl.Scales) {
	e, N := m.Ensemble, m.Ensemble.Models()
	x, mx := make([]float64, 6), make([]float64, 6)
	mean, lv, mm, ml := make([]float64, 6), make([]float64, 6), make([]float64, 6), make([]float64, 6)
	// change returns the predicted one-step change of the cart's and the
	// pole's speeds at lean th and control u, by model k (-1: the mean).
	change := func(th, u float64, k int) (dxd, dthd float64) {
		obs := []float64{0, math.Cos(th), math.Sin(th), 0, 0}
		for i, v := range obs {
			x[i] = v / sc.In[i]
		}
		x[5] = u / sc.In[5]
		for i := range x {
			mx[i] = sc.Mirror[i] * x[i]
		}
		lo, hi := k, k+1
		if k < 0 {
			lo, hi = 0, N
		}
		for i := lo; i < hi; i++ {
			e.Predict(m.Params, i, x, 1, mean, lv)
			e.Predict(m.Params, i, mx, 1, mm, ml)
			dxd += 0.5 * (mean[3] + sc.Mirror[3]*mm[3]) * sc.Out[3] / float64(hi-lo)
			dthd += 0.5 * (mean[4] + sc.Mirror[4]*mm[4]) * sc.Out[4] / float64(hi-lo)
		}
		return dxd, dthd
	}
	sim := func(th, u float64) (dxd, dthd float64) {
		env := sims.NewDMCCartPole(false)
		obs := make([]float64, 5)
		if err := env.SetState([]float64{0, th, 0, 0}, obs); err != nil {
			panic(err)
		}
		env.Step(sims.Action{Vec: []float64{u}}, obs)
		return obs[3], obs[4]
	}
	const h, du = 0.05, 0.5
	fmt.Println("one step's change of speed at the upright rest state, per radian of lean and per unit of control")
	fmt.Printf("%-10s %14s %14s %14s %14s\n", "", "pole / lean", "cart / lean", "pole / control", "cart / control")
	row := func(name string, f func(th, u float64) (float64, float64)) {
		x0, t0 := f(0, 0)
		xl, tl := f(h, 0)
		xu, tu := f(0, du)
		fmt.Printf("%-10s %14.4f %14.4f %14.4f %14.4f\n", name, (tl-t0)/h, (xl-x0)/h, (tu-t0)/du, (xu-x0)/du)
	}
	for k := range N {
		row(fmt.Sprintf("model %d", k), func(th, u float64) (float64, float64) { return change(th, u, k) })
	}
	row("mean", func(th, u float64) (float64, float64) { return change(th, u, -1) })
	row("simulator", sim)
}
