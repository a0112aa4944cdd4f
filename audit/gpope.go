package audit

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/ledger/accountant"
	"dprl/offline/gtd2"
	"dprl/sessionlog"
	"dprl/sims"
)

// The GPOPE audit's public setting: a log of gpopeN trajectories of
// gpopeLen steps over gpopeStates one-hot states and two actions, logged by
// the uniform behaviour policy and evaluated for the uniform target, with
// GPOPE run for gpopeIters full-batch steps (q = 1).
const (
	gpopeStates = 4
	gpopeN      = 32
	gpopeLen    = 4
	gpopeIters  = 2
	gpopeGamma  = 0.9
	gpopeStep   = 0.5
	gpopeClip   = 1.0
)

// GPOPE returns the audit of GPOPE (offline/gtd2) at the noise multiplier
// that "dprl offline gtd2" calibrates for (eps, delta): the smallest z whose
// subsampled Gaussian, here with q = 1 over gpopeIters steps, the PLD
// accountant prices at eps or less. The claim is the accountant's epsilon at
// z, what the command prints, for the addition or removal of one
// trajectory.
//
// D is a fixed log of gpopeN trajectories plus the canary trajectory, D' the
// log alone; both go through gtd2.Prepare and gtd2.GPOPE, and the release
// audited is [theta; y] after the last step. Canaries: "large reward" (reward
// 1e6 at every step, a gradient far past the clip) and "rho = +Inf" (a
// behaviour log-probability of -800, which the log reader accepts and which
// makes the importance ratio pi / exp(logp) overflow to +Inf, so the
// gradient is NaN and infinite unless the clip zeroes it). The float-lattice
// test does not apply: the noisy sum is divided and scaled before release.
// The claim's mu is sqrt(gpopeIters) / z: gpopeIters Gaussian mechanisms of
// multiplier z at q = 1 (Dong, Roth & Su 2022, "Gaussian differential
// privacy", Corollary 3.3), which the PLD accountant prices. The
// projection's direction is the un-noised difference (Z = 0, the same
// code), Canary.Shift.
func GPOPE(eps, delta float64) (Target, error) {
	return gpopeTarget(eps, delta, FaultNone)
}

// gpopeTarget is GPOPE with the fault applied to gtd2.Config's Z and Clip.
func gpopeTarget(eps, delta float64, fault Fault) (Target, error) {
	ns, cs, err := fault.scales()
	if err != nil {
		return Target{}, err
	}
	acc := accountant.PLD{}
	z, err := accountant.Calibrate(acc, eps, delta, 1, gpopeIters)
	if err != nil {
		return Target{}, fmt.Errorf("audit: calibrating z: %w", err)
	}
	g, err := acc.Epsilon(delta, accountant.Event{Q: 1, Z: z, Steps: gpopeIters})
	if err != nil {
		return Target{}, fmt.Errorf("audit: %w", err)
	}
	cfg := gpopeConfig(z * ns)
	cfg.Clip *= cs
	plain := cfg
	plain.Z = 0
	t := Target{Name: fault.name(fmt.Sprintf("gpope (%d steps, q = 1)", gpopeIters)), Claim: Claim{Epsilon: g.Epsilon, Delta: delta, Mu: math.Sqrt(gpopeIters) / z}}
	background := gpopeBackground()
	canaries := 2
	if fault != FaultNone {
		canaries = 1 // the faults scale the noise and the clip: the second canary adds nothing
	}
	for _, cn := range []struct {
		name         string
		reward, logp float64
	}{{"large reward", 1e6, math.Log(0.5)}, {"rho = +Inf", 1, -800}}[:canaries] {
		canary := gpopeTrajectory("canary", cn.reward, cn.logp)
		out, err := gpopePrepare(background)
		if err != nil {
			return Target{}, err
		}
		in, err := gpopePrepare(append(append([]sessionlog.Session(nil), background...), canary))
		if err != nil {
			return Target{}, err
		}
		release := func(cfg gtd2.Config, withCanary bool, rng *rand.Rand) ([]float64, error) {
			ds := out
			if withCanary {
				ds = in
			}
			res, err := gtd2.GPOPE(ds, cfg, rng)
			if err != nil {
				return nil, err
			}
			return append(append([]float64(nil), res.Theta...), res.Y...), nil
		}
		c := Canary{Name: cn.name, Release: func(withCanary bool, rng *rand.Rand) ([]float64, error) { return release(cfg, withCanary, rng) }}
		vin, err := release(plain, true, rand.New(rand.NewPCG(0, 0)))
		if err != nil {
			return Target{}, err
		}
		vout, err := release(plain, false, rand.New(rand.NewPCG(0, 0)))
		if err != nil {
			return Target{}, err
		}
		c.Shift = shift(vin, vout)
		t.Canaries = append(t.Canaries, c)
	}
	return t, nil
}

// gpopeConfig is the configuration "dprl offline gtd2 --n 32 --batch 32"
// runs: the public n is the size of the log without the canary, every
// trajectory enters every step (q = 1), the noisy sum is divided by the
// public batch n on both sides, and the noise multiplier is z.
func gpopeConfig(z float64) gtd2.Config {
	return gtd2.Config{Iters: gpopeIters, StepSize: gpopeStep, Clip: gpopeClip, Z: z, Q: 1, Batch: gpopeN}
}

// gpopeBackground returns the fixed log: random states and actions from a
// fixed seed, rewards in [0, 1), behaviour probability 1/2.
func gpopeBackground() []sessionlog.Session {
	rng := rand.New(rand.NewPCG(0x6770, 0x6f7065))
	out := make([]sessionlog.Session, gpopeN)
	for i := range out {
		s := sessionlog.Session{Session: fmt.Sprintf("bg-%d", i), Terminal: true, Steps: make([]sessionlog.Step, gpopeLen)}
		for t := range s.Steps {
			obs := make([]float64, gpopeStates)
			obs[rng.IntN(gpopeStates)] = 1
			s.Steps[t] = sessionlog.Step{Obs: obs, Action: sims.Action{Index: rng.IntN(2)}, Reward: rng.Float64(), LogP: math.Log(0.5)}
		}
		out[i] = s
	}
	return out
}

// gpopeTrajectory returns a canary trajectory: every step in state 0, action
// 0, with the given reward and behaviour log-probability.
func gpopeTrajectory(id string, reward, logp float64) sessionlog.Session {
	s := sessionlog.Session{Session: id, Terminal: true, Steps: make([]sessionlog.Step, gpopeLen)}
	for t := range s.Steps {
		obs := make([]float64, gpopeStates)
		obs[0] = 1
		s.Steps[t] = sessionlog.Step{Obs: obs, Action: sims.Action{Index: 0}, Reward: reward, LogP: logp}
	}
	return s
}

func gpopePrepare(sessions []sessionlog.Session) (*gtd2.Dataset, error) {
	ds, err := gtd2.Prepare(sessions, gtd2.Tabular{N: gpopeStates}, gtd2.Uniform{N: 2}, gpopeGamma)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return ds, nil
}
