// Command modeldrift compares released PriMORL Pendulum models (files of
// dprl offline primorl --save-model) with the simulator's exact dynamics:
// for each model file, over a grid of angles (every 10 degrees), speeds (-8
// to 8) and torques (-2 to 2), the ensemble's mean predicted change of the
// speed minus the simulator's, by region of the angle, as the model is
// released and averaged with its mirror image (--mirror). It reads only
// the released models and the public simulator.
//
//	go run ./scripts/modeldrift s1.model s2.model ...
package main

import (
	"fmt"
	"math"
	"os"

	"dprl/offline/primorl"
	"dprl/sims"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: modeldrift MODEL...")
		os.Exit(2)
	}
	sc, err := primorl.PublicScales("pendulum")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("speed drift per step, model minus simulator (rad/s): mean (rms) over the grid")
	fmt.Printf("%-24s %-8s %-20s %-20s\n", "model", "region", "as released", "mirrored")
	for _, file := range os.Args[1:] {
		if err := drift(file, sc); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			os.Exit(1)
		}
	}
}

// drift prints file's speed drift by region (top: |angle| < 0.8 rad,
// bottom: > 2.3, mid: between).
func drift(file string, sc primorl.Scales) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	m, err := primorl.LoadModel(b)
	if err != nil {
		return err
	}
	if m.Env != "pendulum" {
		return fmt.Errorf("a model of %s, not pendulum", m.Env)
	}
	e, N := m.Ensemble, m.Ensemble.Models()
	env := sims.NewPendulum()
	obs, next, real := make([]float64, 3), make([]float64, 3), make([]float64, 3)
	x, mx := make([]float64, 4), make([]float64, 4)
	mean, lv := make([]float64, 4), make([]float64, 4)
	// speed returns the ensemble's mean predicted next speed at input in
	// from observation o.
	speed := func(in, o []float64) float64 {
		var v float64
		for i := range N {
			e.Predict(m.Params, i, in, 1, mean, lv)
			sc.Decode(next, o, mean)
			v += next[2] / float64(N)
		}
		return v
	}
	var sum, sq [3][2]float64
	var n [3]float64
	for it := range 36 {
		th := -math.Pi + float64(it)*math.Pi/18
		reg := 1
		if math.Abs(th) < 0.8 {
			reg = 0
		} else if math.Abs(th) > 2.3 {
			reg = 2
		}
		for td := -8.0; td <= 8; td++ {
			for u := -2.0; u <= 2; u++ {
				if err := env.SetState([]float64{th, td}, obs); err != nil {
					return err
				}
				copy(real, obs)
				env.Step(sims.Action{Vec: []float64{u}}, real)
				for k, v := range append(obs[:3:3], u) {
					x[k] = v / sc.In[k]
					mx[k] = sc.Mirror[k] * x[k]
				}
				mobs := []float64{obs[0] * sc.Mirror[0], obs[1] * sc.Mirror[1], obs[2] * sc.Mirror[2]}
				plain := speed(x, obs)
				// The mirror image of the prediction at the mirrored input.
				mirrored := 0.5 * (plain + sc.Mirror[2]*speed(mx, mobs))
				for k, p := range []float64{plain, mirrored} {
					d := p - real[2]
					sum[reg][k] += d
					sq[reg][k] += d * d
				}
				n[reg]++
			}
		}
	}
	for r, name := range []string{"top", "mid", "bottom"} {
		fmt.Printf("%-24s %-8s %+.3f (%.3f)       %+.3f (%.3f)\n", file, name,
			sum[r][0]/n[r], math.Sqrt(sq[r][0]/n[r]), sum[r][1]/n[r], math.Sqrt(sq[r][1]/n[r]))
	}
	return nil
}
