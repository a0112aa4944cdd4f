// Package rollout turns simulated episodes into dprl.sessions.v1 session
// records: Episode runs one episode of a sims.Env under a behaviour and
// returns it as a sessionlog.Session, and Session is the one conversion from
// steps to a record, so every log generated in this repository (dprl sims
// generate, the expert logs of dprl sims experts) follows the same final_obs
// rule. Generate writes a log of episodes under an offline behaviour policy.
//
// The final_obs rule (see package sessionlog): a session that did not
// terminate (truncated by the environment's step limit or a shorter one)
// records the observation after its last step as final_obs, which a learner
// bootstraps from; a terminal session records none, since nothing follows a
// terminal step.
package rollout

import (
	"math"
	"math/rand/v2"

	"dprl/offline/policies"
	"dprl/sessionlog"
	"dprl/sims"
)

// Session returns the record of an episode's steps with id: each step's
// observation, action, reward and behaviour log-probability, terminal when
// the last step terminated the episode, and final_obs (that step's next
// observation) otherwise. The record shares the steps' slices.
func Session(id string, steps sims.Steps) sessionlog.Session {
	s := sessionlog.Session{Session: id, Steps: make([]sessionlog.Step, len(steps))}
	for i, st := range steps {
		s.Steps[i] = sessionlog.Step{Obs: st.Obs, Action: st.Action, Reward: st.Reward, LogP: st.LogP}
	}
	if n := len(steps); n > 0 {
		if steps[n-1].Terminated {
			s.Terminal = true
		} else {
			s.FinalObs = steps[n-1].NextObs
		}
	}
	return s
}

// Episode resets env with rng, runs one episode of at most limit (>= 1)
// steps under beh (sims.Episode), and returns it as the session id
// (Session). Errors are those of sims.Run: a behaviour error or a
// *sims.NonFiniteError, naming the step.
func Episode(env sims.Env, rng *rand.Rand, beh sims.Behavior, limit int, id string) (sessionlog.Session, error) {
	steps, err := sims.Episode(env, rng, beh, limit)
	if err != nil {
		return sessionlog.Session{}, err
	}
	return Session(id, steps), nil
}

// Sampled returns the behaviour that samples the discrete policy p with rng:
// the action drawn from p(.|obs) and the log of its probability.
func Sampled(p policies.Policy, rng *rand.Rand) sims.Behavior {
	probs := make([]float64, p.NumActions())
	return func(_ int, obs []float64) (sims.Action, float64, error) {
		if err := p.Probs(probs, obs); err != nil {
			return sims.Action{}, 0, err
		}
		a := policies.Sample(rng, probs)
		return sims.Action{Index: a}, math.Log(probs[a]), nil
	}
}
