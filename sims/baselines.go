package sims

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"text/tabwriter"
)

// BaselineConfig configures Baselines.
type BaselineConfig struct {
	// Env is a registered environment's name.
	Env string `flag:"env" usage:"environment name (see dprl sims list)"`
	// Episodes is the number of episodes per policy, >= 1.
	Episodes int `flag:"episodes" default:"1000" usage:"episodes per policy, >= 1"`
	// Seed: episode i of every policy runs the environment on PCG(Seed,
	// 2i) (the same users for every policy: common random numbers), and
	// the uniform policy draws its actions from PCG(Seed, 2i+1). Use seeds
	// that no training run evaluates on (held out).
	Seed uint64 `flag:"seed" usage:"seed of the episodes (default: drawn from the OS and printed in the result)"`
	// Grid is the number of constant values per dimension of a box action
	// space (evenly spaced from Low to High, both included), >= 2; 0 means
	// 5. At most MaxBaselineConstants constant actions in all. Ignored for
	// a discrete space, whose every action is a constant policy.
	Grid int `flag:"grid" default:"5" usage:"constant values per dimension of a box action space, >= 2"`
}

// MaxBaselineConstants bounds the constant policies Baselines evaluates (the
// grid of a box action space).
const MaxBaselineConstants = 4096

// BaselineReturn is the return of one reference policy over the episodes:
// the mean, the population standard deviation and the standard error of the
// mean (std / sqrt(episodes)).
type BaselineReturn struct {
	// Policy is "uniform" or "constant".
	Policy string `json:"policy"`
	// Action is the constant policy's action (a discrete index, or a box
	// vector); nil for the uniform policy.
	Action any     `json:"action,omitempty"`
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std"`
	StdErr float64 `json:"std_err"`
}

// Name is "uniform random" or "constant <action>".
func (b BaselineReturn) Name() string {
	if b.Policy == "uniform" {
		return "uniform random"
	}
	return "constant " + formatAction(b.Action)
}

// formatAction renders an action index or vector.
func formatAction(a any) string {
	switch v := a.(type) {
	case int:
		return strconv.Itoa(v)
	case []float64:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = strconv.FormatFloat(x, 'g', 4, 64)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprint(a)
}

// BaselineScope labels every Baselines result: returns of simulated users,
// not a release of private data.
const BaselineScope = "simulation only: returns of reference policies on simulated users (no private data, no epsilon)"

// BaselineResult holds the reference returns of an environment: the
// uniformly random policy, every constant policy, and the best of those.
type BaselineResult struct {
	Scope    string `json:"scope"`
	Env      string `json:"env"`
	Episodes int    `json:"episodes"`
	Seed     uint64 `json:"seed"`
	// Uniform is the uniformly random policy (Uniform).
	Uniform BaselineReturn `json:"uniform"`
	// BestConstant is the constant policy of the highest mean return
	// (the first of equal ones).
	BestConstant BaselineReturn `json:"best_constant"`
	// Constants are every constant policy, in action order.
	Constants []BaselineReturn `json:"constants"`
}

// Baselines evaluates the reference policies of the environment cfg.Env (a
// fresh instance per policy): the uniformly random policy and
// every constant policy (each discrete action, or the Grid points of a box),
// cfg.Episodes episodes each on the same simulated users, every episode run
// until the environment terminates or truncates it (at most its MaxSteps).
// Every draw derives from cfg.Seed. The error wraps ErrUnknownEnv for an
// unknown name, is a *NonFiniteError (naming the step) for a non-finite
// reward, and otherwise names the invalid field.
func Baselines(cfg BaselineConfig) (BaselineResult, error) {
	info, ok := Lookup(cfg.Env)
	if !ok {
		_, err := New(cfg.Env)
		return BaselineResult{}, err
	}
	return baselines(cfg.Env, info.New, cfg)
}

// baselines is Baselines on the environments newEnv returns.
func baselines(env string, newEnv func() Env, cfg BaselineConfig) (BaselineResult, error) {
	if cfg.Episodes < 1 {
		return BaselineResult{}, fmt.Errorf("sims: baselines: %d episodes, want >= 1", cfg.Episodes)
	}
	if cfg.Grid == 0 {
		cfg.Grid = 5
	}
	e := newEnv()
	if e.MaxSteps() < 1 {
		return BaselineResult{}, fmt.Errorf("sims: baselines: %s has no step limit (MaxSteps %d)", env, e.MaxSteps())
	}
	consts, err := constantActions(e.ActionSpace(), cfg.Grid)
	if err != nil {
		return BaselineResult{}, err
	}
	res := BaselineResult{Scope: BaselineScope, Env: env, Episodes: cfg.Episodes, Seed: cfg.Seed}
	if res.Uniform, err = baselineReturn(e, cfg, nil); err != nil {
		return BaselineResult{}, err
	}
	res.Uniform.Policy = "uniform"
	for i, a := range consts {
		r, err := baselineReturn(newEnv(), cfg, &a)
		if err != nil {
			return BaselineResult{}, err
		}
		r.Policy, r.Action = "constant", a.Index
		if a.Vec != nil {
			r.Action = a.Vec
		}
		res.Constants = append(res.Constants, r)
		if i == 0 || r.Mean > res.BestConstant.Mean {
			res.BestConstant = r
		}
	}
	return res, nil
}

// constantActions returns every action of a discrete space, or the grid
// points of a box (grid values per dimension, the last dimension fastest).
func constantActions(s Space, grid int) ([]Action, error) {
	if s.Kind == Discrete {
		out := make([]Action, s.N)
		for i := range out {
			out[i] = Action{Index: i}
		}
		return out, nil
	}
	if grid < 2 {
		return nil, fmt.Errorf("sims: baselines: grid %d, want >= 2", grid)
	}
	d, n := len(s.Low), 1
	for range d {
		if n *= grid; n > MaxBaselineConstants {
			return nil, fmt.Errorf("sims: baselines: %d^%d constant actions, more than %d: use a smaller grid", grid, d, MaxBaselineConstants)
		}
	}
	for i := range d {
		if math.IsInf(s.Low[i], 0) || math.IsInf(s.High[i], 0) {
			return nil, errors.New("sims: baselines: a box action space with an infinite bound has no grid")
		}
	}
	out := make([]Action, n)
	for k := range out {
		v, rest := make([]float64, d), k
		for i := d - 1; i >= 0; i-- {
			j := rest % grid
			rest /= grid
			v[i] = s.Low[i] + (s.High[i]-s.Low[i])*float64(j)/float64(grid-1)
		}
		out[k] = Action{Vec: v}
	}
	return out, nil
}

// baselineReturn runs cfg.Episodes episodes of env under the constant
// action a, or the uniform policy if a is nil.
func baselineReturn(env Env, cfg BaselineConfig, a *Action) (BaselineReturn, error) {
	obs := make([]float64, env.ObservationSpace().Dim())
	limit := env.MaxSteps()
	var sum, sumSq float64
	for i := range cfg.Episodes {
		env.Reset(rand.New(rand.NewPCG(cfg.Seed, 2*uint64(i))), obs)
		beh := func(int, []float64) (Action, float64, error) { return *a, 0, nil }
		if a == nil {
			beh = Uniform(rand.New(rand.NewPCG(cfg.Seed, 2*uint64(i)+1)), env.ActionSpace())
		}
		ret := 0.0
		for t := 0; t < limit; t++ {
			act, _, _ := beh(t, obs)
			r, term, trunc := env.Step(act, obs)
			if !finite(r) {
				return BaselineReturn{}, &NonFiniteError{Step: t, Reward: r, NextObs: append([]float64(nil), obs...)}
			}
			ret += r
			if term || trunc {
				break
			}
		}
		sum += ret
		sumSq += ret * ret
	}
	n := float64(cfg.Episodes)
	mean := sum / n
	std := math.Sqrt(max(sumSq/n-mean*mean, 0))
	return BaselineReturn{Mean: mean, Std: std, StdErr: std / math.Sqrt(n)}, nil
}

// WriteText writes the result as dprl sims baselines prints it: the uniform
// policy, the best constant policy, then every constant policy (4
// significant digits: returns range from clicks in [0, 1] to watch minutes).
func (r BaselineResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s: mean return over %d episodes per policy, seed %d (simulation only)\n", r.Env, r.Episodes, r.Seed)
	fmt.Fprintln(tw, "POLICY\tMEAN\tSTD\tSTD ERR")
	row := func(prefix string, b BaselineReturn) {
		fmt.Fprintf(tw, "%s%s\t%.4g\t%.4g\t%.4g\n", prefix, b.Name(), b.Mean, b.Std, b.StdErr)
	}
	row("", r.Uniform)
	row("best: ", r.BestConstant)
	for _, b := range r.Constants {
		row("", b)
	}
	return tw.Flush()
}
