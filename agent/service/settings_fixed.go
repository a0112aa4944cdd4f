package service

import (
	"math"
	"os"
	"strconv"
	"strings"

	"dprl/agent"
	"dprl/policy"
	"dprl/sims"
)

// learningSettings are the Settings fields that configure the learner,
// which a fixed policy does not run (ServePolicy refuses them).
var learningSettings = []string{"Z", "Clip", "K", "SessionEpsilon", "Noise", "Band", "Delta", "UserEpsilon", "MaxUpdatesPerUser", "MaxQueuedPerUser", "FlushTimeout"}

// fixedPolicy reads ServePolicy, refusing the settings that do not apply
// to a fixed policy (the learner's, and Models).
func (s Settings) fixedPolicy() (*agent.FixedPolicy, error) {
	if len(s.Models) > 0 {
		return nil, SettingsFields.Errorf("{ServePolicy} serves one fixed policy: it does not apply with models")
	}
	nonZero := map[string]bool{"Z": s.Z != 0, "Clip": s.Clip != 0, "K": s.K != 0, "SessionEpsilon": s.SessionEpsilon != 0,
		"Noise": s.Noise != "" && s.Noise != policy.NoiseIndependent.String(), "Band": s.Band != 0, "UserEpsilon": s.UserEpsilon != 0, "MaxUpdatesPerUser": s.MaxUpdatesPerUser != 0}
	var given []string
	for _, f := range learningSettings {
		if s.given(f, nonZero[f]) {
			given = append(given, "{"+f+"}")
		}
	}
	if len(given) > 0 {
		verb := "does"
		if len(given) > 1 {
			verb = "do"
		}
		return nil, SettingsFields.Errorf("%s: %s not apply with {ServePolicy}: a fixed policy never learns, so the learner's settings have no effect (serving a policy spends no budget)", strings.Join(given, ", "), verb)
	}
	b, err := os.ReadFile(s.ServePolicy)
	if err != nil {
		return nil, SettingsFields.Errorf("{ServePolicy}: %w", err)
	}
	f, err := agent.DecodeFixedPolicy(b, s.ServePolicy)
	if err != nil {
		return nil, SettingsFields.Errorf("{ServePolicy} %s: %w (%s)", s.ServePolicy, err, agent.FixedPolicyKinds)
	}
	switch {
	case !f.Private() && !s.ServeNonPrivate:
		return nil, SettingsFields.Errorf("{ServePolicy} %s is %s: refused; give {ServeNonPrivate} to serve it anyway, labelled NOT private", s.ServePolicy, f.Label())
	case f.Private() && s.ServeNonPrivate:
		return nil, SettingsFields.Errorf("{ServeNonPrivate}: {ServePolicy} %s is %s: the flag is for a snapshot that is not private", s.ServePolicy, f.Label())
	}
	f.ServeNonPrivate = s.ServeNonPrivate
	return f, nil
}

// checkFixed refuses a fixed policy that cannot serve spec, naming the
// setting that gave the spec.
func (s Settings) checkFixed(f *agent.FixedPolicy, spec policy.Spec) error {
	from := "{ObsDim} " + strconv.Itoa(s.ObsDim)
	switch {
	case s.EnvSpec != "":
		from = "{EnvSpec} " + s.EnvSpec
	case spec.Kind == policy.ActionDiscrete:
		from = "{Actions} " + strconv.Itoa(s.Actions)
	}
	if f.Q != nil {
		switch {
		case spec.Kind != policy.ActionDiscrete:
			return SettingsFields.Errorf("{ServePolicy} %s is a Q-network policy, whose actions are discrete: %s has continuous actions and cannot be served by it", f.Source, from)
		case f.Q.ObsDim != spec.ObsDim || f.Q.Actions != spec.NumActions:
			return SettingsFields.Errorf("{ServePolicy} %s takes %d observation values and chooses among %d actions, %s has %d and %d: serve it with the simulator or {ObsDim} and {Actions} it was trained for",
				f.Source, f.Q.ObsDim, f.Q.Actions, from, spec.ObsDim, spec.NumActions)
		case s.EnvSpec != "" && f.Q.Env != "" && f.Q.Env != s.EnvSpec:
			return SettingsFields.Errorf("{ServePolicy} %s was trained and evaluated on %s, not %s", f.Source, f.Q.Env, from)
		}
		return nil
	}
	switch {
	case spec.Kind != policy.ActionContinuous:
		return SettingsFields.Errorf("{ServePolicy} %s is a SAC actor, whose actions are continuous: %s has %d discrete actions and cannot be served by it", f.Source, from, spec.NumActions)
	case f.Actor.ObsDim() != spec.ObsDim || f.Actor.ActDim() != spec.ActionDim:
		return SettingsFields.Errorf("{ServePolicy} %s takes %d observation values and gives %d action values, %s has %d and %d: serve it with the simulator or {ObsDim} it was trained for",
			f.Source, f.Actor.ObsDim(), f.Actor.ActDim(), from, spec.ObsDim, spec.ActionDim)
	case s.EnvSpec != "":
		// A SAC actor's box is its simulator's action space (sac.Train):
		// another box means another simulator, whatever the dimensions.
		env, err := sims.New(s.EnvSpec)
		if err != nil {
			return SettingsFields.Errorf("{EnvSpec}: %w", err)
		}
		as := env.ActionSpace()
		low, high := f.Actor.Box()
		for j := range low {
			if !nearlyEqual(low[j], as.Low[j]) || !nearlyEqual(high[j], as.High[j]) {
				return SettingsFields.Errorf("{ServePolicy} %s acts in the box %v to %v, %s's actions are in %v to %v: it was trained for another simulator",
					f.Source, low, high, from, as.Low, as.High)
			}
		}
	}
	return nil
}

// nearlyEqual reports whether a and b agree to a relative 1e-9 (the box is
// stored as its scale and centre, which round).
func nearlyEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b)) }
