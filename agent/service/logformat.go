package service

import (
	"dprl/policy"
	"dprl/sessionlog"
	"dprl/sessionlog/dsjson"
	"dprl/sims"
)

// The session log's formats (ServiceConfig.SessionLogFormat, dprl agent
// --session-log-format).
const (
	// SessionLogV1 is dprl.sessions.v1, every closed session (the default).
	SessionLogV1 = sessionlog.FormatV1
	// SessionLogDSJSON is Vowpal Wabbit's DSJSON, one decision a line
	// (package dsjson): for one-step contextual-bandit sessions only.
	SessionLogDSJSON = "dsjson"
)

// checkSessionLogFormat checks a policy's session-log format: a known one
// and, for DSJSON, a policy whose sessions it can hold: discrete actions
// (within dsjson.MaxActions) and, when its simulator is named (env), one
// whose episodes are one step. A policy without a simulator may still get
// longer sessions; the log drops and counts those.
func checkSessionLogFormat(format, env string, spec policy.Spec) error {
	switch format {
	case "", SessionLogV1:
		return nil
	case SessionLogDSJSON:
	default:
		return SettingsFields.Errorf("{SessionLogFormat} %q: want %s (every session, the default) or %s (one-step decisions)", format, SessionLogV1, SessionLogDSJSON)
	}
	if spec.Kind != policy.ActionDiscrete {
		return SettingsFields.Errorf("{SessionLogFormat} %s with continuous actions: a DSJSON decision's action is one of a discrete set; log these sessions as %s", format, SessionLogV1)
	}
	if spec.NumActions > dsjson.MaxActions {
		return SettingsFields.Errorf("{SessionLogFormat} %s with %d actions: every DSJSON line lists its actions, at most %d", format, spec.NumActions, dsjson.MaxActions)
	}
	if env == "" {
		return nil
	}
	e, err := sims.New(env)
	if err != nil {
		return nil // refused where the spec is resolved, with the valid names
	}
	if n := e.MaxSteps(); n != 1 {
		return SettingsFields.Errorf("{SessionLogFormat} %s with {EnvSpec} %s: its sessions last up to %d steps, and a DSJSON line is one decision (a one-step session, as in the bandit simulator); log them as %s", format, env, n, SessionLogV1)
	}
	return nil
}
