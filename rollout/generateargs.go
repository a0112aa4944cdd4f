package rollout

import (
	"errors"
	"os"

	"dprl/internal/fielderr"
	"dprl/sims"
)

// ArgFields are the fields the errors of GenerateArgs may name
// (internal/fielderr: a command renders them as its flags).
var ArgFields = fielderr.Fields{"Env", "Behavior", "Policy", "Episodes", "Out", "MaxSteps"}

// GenerateArgs are a generated log's settings as an operator gives them:
// the settings of dprl sims generate, whose flags are named as the fields
// (env, behavior, policy, episodes, out, max-steps, force). Config checks
// them; its errors name the fields at fault (*fielderr.Error, ArgFields
// and sims.ArgFields).
type GenerateArgs struct {
	// Env names the environment (required; discrete actions).
	Env string `flag:"env" usage:"environment name (see dprl sims list); discrete actions only"`
	// Behavior is the behaviour policy's spec (required; ParseBehavior),
	// Policy the reference snapshot it may refer to.
	Behavior string `flag:"behavior" usage:"behaviour policy: random, policy:FILE, greedy, epsilon-greedy:EPS or softmax:TEMP"`
	Policy   string `flag:"policy" usage:"snapshot FILE that greedy, epsilon-greedy and softmax refer to (default: the environment's built-in controller)"`
	// Episodes is the number of episodes, >= 1.
	Episodes int `flag:"episodes" usage:"number of episodes (sessions) to write"`
	// Out is the log to write (required), which must not exist unless
	// Force.
	Out   string `flag:"out" usage:"output file (dprl.sessions.v1 JSON Lines)"`
	Force bool   `flag:"force" usage:"overwrite --out if it exists"`
	// MaxSteps, if given, truncates the episodes (>= 1).
	MaxSteps int `flag:"max-steps" usage:"truncate episodes after this many steps (default: the environment's limit)"`
	// Seed, if given, is the run's seed (Config leaves the seed to the
	// caller, who draws one when it is not given).
	Seed uint64 `flag:"seed" usage:"random seed (default: drawn from the OS and reported)"`
}

// Config returns the configuration of the settings given (set reports
// whether a field was given), without a seed.
func (a GenerateArgs) Config(set func(field string) bool) (GenerateConfig, error) {
	cfg := GenerateConfig{EnvName: a.Env, BehaviorName: a.Behavior, Episodes: a.Episodes, MaxSteps: a.MaxSteps}
	env, err := sims.NewNamed(a.Env)
	if err != nil {
		return cfg, err
	}
	switch {
	case env.ActionSpace().Kind != sims.Discrete:
		return cfg, ArgFields.Errorf("{Env} %s has continuous actions; generate supports discrete actions only", a.Env)
	case a.Behavior == "":
		return cfg, ArgFields.Errorf("{Behavior} is required (random, policy:FILE, greedy, epsilon-greedy:EPS or softmax:TEMP)")
	case a.Episodes < 1:
		return cfg, ArgFields.Errorf("{Episodes} %d: want at least 1", a.Episodes)
	case a.Out == "":
		return cfg, ArgFields.Errorf("{Out} is required")
	case set("MaxSteps") && a.MaxSteps < 1:
		return cfg, ArgFields.Errorf("{MaxSteps} %d: want at least 1", a.MaxSteps)
	}
	if cfg.Behavior, err = ParseBehavior(a.Behavior, a.Policy, a.Env, env); errors.As(err, new(*ReferenceError)) {
		return cfg, ArgFields.Errorf("{Policy}: %w", err)
	} else if err != nil {
		return cfg, ArgFields.Errorf("{Behavior}: %w", err)
	}
	if _, err := os.Stat(a.Out); err == nil && !a.Force {
		return cfg, ArgFields.Errorf("{Out} %s exists (pass --force to overwrite)", a.Out)
	}
	cfg.Env = env
	return cfg, nil
}
