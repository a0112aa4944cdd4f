package main

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"dprl/sims"
)

// newSimsCmd returns "dprl sims": listing environments and scripted rollouts.
func newSimsCmd(a *app) *cobra.Command {
	return groupCmd("sims", "Simulated environments: list them, run scripted rollouts",
		newSimsListCmd(a), newSimsRolloutCmd(a), newSimsGenerateCmd(a), newSimsExpertsCmd(a))
}

// simsActionSpace is the JSON form of an action space.
type simsActionSpace struct {
	Kind string    `json:"kind"`
	N    int       `json:"n,omitempty"`
	Dim  int       `json:"dim,omitempty"`
	Low  []float64 `json:"low,omitempty"`
	High []float64 `json:"high,omitempty"`
}

// simsEnvInfo is one row of "dprl sims list".
type simsEnvInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	ObsDim      int             `json:"obs_dim"`
	Action      simsActionSpace `json:"action"`
	MaxSteps    int             `json:"max_steps"`
}

// String renders the space for the text listing: discrete(n) or box(dim) low..high.
func (s simsActionSpace) String() string {
	if s.Kind == "discrete" {
		return fmt.Sprintf("discrete(%d)", s.N)
	}
	return fmt.Sprintf("box(%d) %v..%v", s.Dim, s.Low, s.High)
}

func newSimsListCmd(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the environments with their spaces and step limits",
		Example: `  dprl sims list
  dprl sims list --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rows []simsEnvInfo
			for _, info := range sims.Registry() {
				env := info.New()
				as := env.ActionSpace()
				sp := simsActionSpace{Kind: as.Kind.String()}
				if as.Kind == sims.Discrete {
					sp.N = as.N
				} else {
					sp.Dim, sp.Low, sp.High = len(as.Low), as.Low, as.High
				}
				rows = append(rows, simsEnvInfo{Name: info.Name, Description: info.Description,
					ObsDim: env.ObservationSpace().Dim(), Action: sp, MaxSteps: env.MaxSteps()})
			}
			return emit(a.stdout, asJSON, rows, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tOBS DIM\tACTIONS\tMAX STEPS\tDESCRIPTION")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", r.Name, r.ObsDim, r.Action, r.MaxSteps, r.Description)
				}
				return tw.Flush()
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// simsRolloutFlags holds the flags of "dprl sims rollout".
type simsRolloutFlags struct {
	env       string
	seed      uint64
	initState string
	actions   string
	policy    string
	steps     int
	asJSON    bool
}

// simsStep is one step of a rollout as printed.
type simsStep struct {
	Obs        []float64 `json:"obs"`
	Action     any       `json:"action"` // an integer (discrete) or an array (box)
	Reward     float64   `json:"reward"`
	NextObs    []float64 `json:"next_obs"`
	Terminated bool      `json:"terminated"`
	Truncated  bool      `json:"truncated"`
}

func newSimsRolloutCmd(a *app) *cobra.Command {
	var f simsRolloutFlags
	c := &cobra.Command{
		Use:   "rollout",
		Short: "Run one episode with scripted or random actions and print every step",
		Long: `rollout resets an environment, optionally sets its internal state, and steps it
with the given actions or a uniformly random policy. It stops at termination,
truncation (the environment's step limit), the end of the action list, or after
--steps steps, and prints one record per step: obs, action, reward, next_obs,
terminated, truncated.

Actions: --actions is a comma-separated list, one entry per step. Discrete
actions are integers (--actions 0,1,1,0); box actions are numbers within the
space's bounds (--actions 0.5,-2,1.7), and a multi-dimensional box action
joins its components with colons (--actions 0.5:-1,0.2:0.3 is two steps of a
2-dimensional action).

--init-state is a JSON array with the internal state, set after the reset
(see each environment's documentation, e.g. cartpole [x, x_dot, theta,
theta_dot]; riverswim and chain take [state index]).

Randomness: the environment draws from PCG(seed, 1) and the random policy
from PCG(seed, 2) (math/rand/v2). Without --seed a seed is drawn from the
operating system and printed (text) or logged to stderr (--json), so the run
can be repeated.`,
		Example: `  dprl sims rollout --env cartpole --seed 1 --actions 0,1,0,1 --json
  dprl sims rollout --env pendulum --init-state '[3.14, 0]' --actions 2,2,-2 --json
  dprl sims rollout --env riverswim --policy random --steps 5`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimsRollout(a, cmd, &f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.env, "env", "", "environment name (see dprl sims list)")
	fl.Uint64Var(&f.seed, "seed", 0, "random seed (default: drawn from the OS and printed)")
	fl.StringVar(&f.initState, "init-state", "", "internal state after reset, as a JSON array of numbers")
	fl.StringVar(&f.actions, "actions", "", "comma-separated actions, one per step (box components joined by ':')")
	fl.StringVar(&f.policy, "policy", "", "action policy instead of --actions: random")
	fl.IntVar(&f.steps, "steps", 0, "stop after this many steps (default: no limit beyond the episode and action list)")
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON array of steps")
	return c
}

func runSimsRollout(a *app, cmd *cobra.Command, f *simsRolloutFlags) error {
	env, err := newEnvFlag(f.env)
	if err != nil {
		return err
	}
	space := env.ActionSpace()
	hasActions := cmd.Flags().Changed("actions")
	switch {
	case hasActions && f.policy != "":
		return usagef("give either --actions or --policy, not both")
	case !hasActions && f.policy == "":
		return usagef("give --actions or --policy random")
	case f.policy != "" && f.policy != "random":
		return usagef("--policy %q: want random", f.policy)
	}
	var actions []sims.Action
	if hasActions {
		if actions, err = parseActions(f.actions, space); err != nil {
			return usageError{err}
		}
	}
	if cmd.Flags().Changed("steps") && f.steps < 1 {
		return usagef("--steps %d: want at least 1", f.steps)
	}
	var initState []float64
	if cmd.Flags().Changed("init-state") {
		if initState, err = parseState(f.initState); err != nil {
			return usageError{err}
		}
	}
	seed := f.seed
	if !cmd.Flags().Changed("seed") {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("drawing a seed: %w", err)
		}
		seed = binary.LittleEndian.Uint64(b[:])
		if !f.asJSON {
			fmt.Fprintf(a.stdout, "seed: %d\n", seed)
		} else {
			a.log.Info().Uint64("seed", seed).Msg("random seed drawn; pass --seed to repeat the run")
		}
	}

	envRNG := mrand.New(mrand.NewPCG(seed, 1))
	polRNG := mrand.New(mrand.NewPCG(seed, 2))
	dim := env.ObservationSpace().Dim()
	obs := make([]float64, dim)
	env.Reset(envRNG, obs)
	if initState != nil {
		ss, ok := env.(sims.StateSetter)
		if !ok {
			return usagef("--init-state: environment %s cannot set its state", f.env)
		}
		if err := ss.SetState(initState, obs); err != nil {
			return usagef("--init-state: %w", err)
		}
	}

	limit := env.MaxSteps()
	if hasActions {
		limit = len(actions)
	}
	if f.steps > 0 {
		limit = min(limit, f.steps)
	}
	steps := []simsStep{}
	for t := 0; t < limit; t++ {
		var act sims.Action
		if hasActions {
			act = actions[t]
		} else {
			act = randomAction(polRNG, space)
		}
		st := simsStep{Obs: append([]float64(nil), obs...)}
		if space.Kind == sims.Discrete {
			st.Action = act.Index
		} else {
			st.Action = act.Vec
		}
		st.Reward, st.Terminated, st.Truncated = env.Step(act, obs)
		st.NextObs = append([]float64(nil), obs...)
		if !finite(st.Reward) || !allFinite(st.NextObs) {
			return fmt.Errorf("step %d: the state left the finite range (next_obs %v, reward %v); try a smaller --init-state", t, st.NextObs, st.Reward)
		}
		steps = append(steps, st)
		if st.Terminated || st.Truncated {
			break
		}
	}
	return emit(a.stdout, f.asJSON, steps, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STEP\tOBS\tACTION\tREWARD\tNEXT OBS\tTERMINATED\tTRUNCATED")
		for i, s := range steps {
			fmt.Fprintf(tw, "%d\t%v\t%v\t%v\t%v\t%v\t%v\n", i, s.Obs, s.Action, s.Reward, s.NextObs, s.Terminated, s.Truncated)
		}
		return tw.Flush()
	})
}

// parseActions parses --actions against an action space: comma-separated
// steps, integers for a discrete space, numbers (components joined by ':')
// within the bounds for a box.
func parseActions(s string, space sims.Space) ([]sims.Action, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--actions is empty")
	}
	fields := strings.Split(s, ",")
	out := make([]sims.Action, len(fields))
	for i, fld := range fields {
		fld = strings.TrimSpace(fld)
		var act sims.Action
		if space.Kind == sims.Discrete {
			n, err := strconv.Atoi(fld)
			if err != nil {
				return nil, fmt.Errorf("--actions: step %d: %q is not an integer action in [0, %d)", i, fld, space.N)
			}
			act.Index = n
		} else {
			comps := strings.Split(fld, ":")
			if len(comps) != len(space.Low) {
				return nil, fmt.Errorf("--actions: step %d: %q has %d components, want %d (join components with ':')", i, fld, len(comps), len(space.Low))
			}
			act.Vec = make([]float64, len(comps))
			for j, c := range comps {
				v, err := strconv.ParseFloat(strings.TrimSpace(c), 64)
				if err != nil || !finite(v) {
					return nil, fmt.Errorf("--actions: step %d: %q is not a finite number", i, c)
				}
				if v < space.Low[j] || v > space.High[j] {
					return nil, fmt.Errorf("--actions: step %d: component %d = %v outside [%v, %v]", i, j, v, space.Low[j], space.High[j])
				}
				act.Vec[j] = v
			}
		}
		if err := sims.CheckAction(space, act); err != nil {
			return nil, fmt.Errorf("--actions: step %d: %w", i, err)
		}
		out[i] = act
	}
	return out, nil
}

// parseState parses --init-state, a JSON array of numbers. It reads the
// components with strconv so that NaN and Inf are reported by name rather than
// as a JSON syntax error.
func parseState(s string) ([]float64, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return nil, fmt.Errorf("--init-state %q: want a JSON array of numbers such as [0.1, 0, -0.2]", s)
	}
	t = strings.TrimSpace(t[1 : len(t)-1])
	if t == "" {
		return []float64{}, nil
	}
	parts := strings.Split(t, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil && !math.IsInf(v, 0) {
			return nil, fmt.Errorf("--init-state: component %d: %q is not a number", i, strings.TrimSpace(p))
		}
		if !finite(v) {
			return nil, fmt.Errorf("--init-state: component %d is %v, want a finite number", i, v)
		}
		out[i] = v
	}
	return out, nil
}

// randomAction draws a uniform action from a space with finite bounds.
func randomAction(rng *mrand.Rand, space sims.Space) sims.Action {
	if space.Kind == sims.Discrete {
		return sims.Action{Index: rng.IntN(space.N)}
	}
	v := make([]float64, len(space.Low))
	for i := range v {
		v[i] = space.Low[i] + (space.High[i]-space.Low[i])*rng.Float64()
	}
	return sims.Action{Vec: v}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func allFinite(v []float64) bool {
	for _, x := range v {
		if !finite(x) {
			return false
		}
	}
	return true
}

// newEnvFlag builds the environment named by a required --env flag; a
// missing or unknown name is a usage error listing the valid ones.
func newEnvFlag(name string) (sims.Env, error) {
	if name == "" {
		return nil, usagef("--env is required (one of: %s)", strings.Join(sims.Names(), ", "))
	}
	env, err := sims.New(name)
	if err != nil {
		return nil, usagef("--env: %w", err)
	}
	return env, nil
}
