package sims_test

import (
	"fmt"
	"math/rand/v2"

	"dprl/sims"
)

// A scripted CartPole episode from a set state: push right until the pole
// falls.
func Example() {
	env, err := sims.New("cartpole")
	if err != nil {
		panic(err)
	}
	obs := make([]float64, env.ObservationSpace().Dim())
	env.Reset(rand.New(rand.NewPCG(1, 2)), obs)
	if err := env.(sims.StateSetter).SetState([]float64{0, 0, 0, 0}, obs); err != nil {
		panic(err)
	}
	var ret float64
	for {
		r, terminated, truncated := env.Step(sims.Action{Index: 1}, obs)
		ret += r
		if terminated || truncated {
			break
		}
	}
	fmt.Printf("return %v, theta %.3f\n", ret, obs[2])
	// Output: return 9, theta -0.215
}

// The optimal expected return of one RiverSwim episode, for regret.
func ExampleRiverSwimOptimalValue() {
	v, err := sims.RiverSwimOptimalValue(0.6)
	if err != nil {
		panic(err)
	}
	fmt.Printf("V*_0(0) = %.6f\n", v)
	// Output: V*_0(0) = 3.397264
}

// The exact value of a uniformly random policy on a short chain. Next to the
// end the advance probability is 0.5, so V[2] = 0.5/(1 - 0.9*0.5) = 0.9091.
func ExampleChainConfig_ValueFunction() {
	cfg := sims.ChainConfig{States: 4, StayAdvance: 0.2, StayWait: 0.8, MaxSteps: 100}
	pi := [][]float64{{0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}, nil}
	v, err := cfg.ValueFunction(pi, 0.9)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", v)
	// Output: [0.6086 0.7438 0.9091 0.0000]
}
