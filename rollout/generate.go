package rollout

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"dprl/offline/policies"
	"dprl/sessionlog"
	"dprl/sims"
)

// GenerateConfig configures Generate.
type GenerateConfig struct {
	// Env is the environment the episodes run in; its actions must be
	// discrete. EnvName is its registry name, recorded in the result.
	Env     sims.Env
	EnvName string
	// Behavior is the behaviour policy the actions are sampled from; its
	// action count must be the environment's. BehaviorName is its spec as
	// the user gave it, recorded in the result.
	Behavior     policies.Policy
	BehaviorName string
	// Episodes is the number of episodes (sessions), >= 1.
	Episodes int
	// MaxSteps, if > 0, truncates episodes after that many steps when the
	// environment's own limit is longer.
	MaxSteps int
	// Seed: the environment draws from PCG(Seed, 1), the behaviour from
	// PCG(Seed, 2) (math/rand/v2).
	Seed uint64
}

// Validate reports every invalid field.
func (c GenerateConfig) Validate() error {
	var errs []error
	if c.Env == nil {
		errs = append(errs, errors.New("rollout: no environment"))
	} else if sp := c.Env.ActionSpace(); sp.Kind != sims.Discrete {
		errs = append(errs, fmt.Errorf("rollout: environment %s has continuous actions; generate supports discrete actions only", c.EnvName))
	} else if c.Behavior == nil || c.Behavior.NumActions() != sp.N {
		errs = append(errs, fmt.Errorf("rollout: the behaviour policy must have the environment's %d actions", sp.N))
	}
	if c.Episodes < 1 {
		errs = append(errs, fmt.Errorf("rollout: %d episodes, want >= 1", c.Episodes))
	}
	if c.MaxSteps < 0 {
		errs = append(errs, fmt.Errorf("rollout: max steps %d, want >= 0", c.MaxSteps))
	}
	return errors.Join(errs...)
}

// GenerateResult summarises a generated log. Its statistics describe
// simulated data, not private data: they are printed as they are.
type GenerateResult struct {
	Env        string  `json:"env"`
	Behavior   string  `json:"behavior"`
	Episodes   int     `json:"episodes"`
	Steps      int     `json:"steps"`
	Terminated int     `json:"terminated"`
	MeanReturn float64 `json:"mean_return"`
	StdReturn  float64 `json:"std_return"`
	Seed       uint64  `json:"seed"`
	Out        string  `json:"out"`
	DatasetID  string  `json:"dataset_id"`
}

// WriteText writes the summary as text.
func (r GenerateResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "wrote %d episodes (%d steps, %d terminated) of %s under %s to %s\nreturn: mean %.4g, std %.4g\ndataset id: %s\nseed: %d\n",
		r.Episodes, r.Steps, r.Terminated, r.Env, r.Behavior, r.Out, r.MeanReturn, r.StdReturn, r.DatasetID, r.Seed)
	return err
}

// OutputError marks a failure to write the log (as opposed to a failure of
// an episode); its message is the underlying error's.
type OutputError struct{ Err error }

// Error returns the underlying error's message.
func (e *OutputError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *OutputError) Unwrap() error { return e.Err }

// Generate runs cfg.Episodes episodes ("ep0", "ep1", ...) under the
// behaviour and writes them to w as a dprl.sessions.v1 log (Episode, so the
// final_obs rule of the package holds), each step with the log of the
// behaviour's probability of its action. progress, if not nil, is called
// after every episode with the episodes and steps written so far. An
// episode's failure is returned as "episode <k> step <t>: ..."; a write
// failure as an *OutputError.
func Generate(cfg GenerateConfig, w io.Writer, progress func(episodes, steps int)) (GenerateResult, error) {
	res := GenerateResult{Env: cfg.EnvName, Behavior: cfg.BehaviorName, Seed: cfg.Seed}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	envRNG := rand.New(rand.NewPCG(cfg.Seed, 1))
	beh := Sampled(cfg.Behavior, rand.New(rand.NewPCG(cfg.Seed, 2)))
	limit := cfg.Env.MaxSteps()
	if cfg.MaxSteps > 0 {
		limit = min(limit, cfg.MaxSteps)
	}
	lw := sessionlog.NewWriter(w)
	var sum, sumSq float64
	for ep := range cfg.Episodes {
		s, err := Episode(cfg.Env, envRNG, beh, limit, fmt.Sprintf("ep%d", ep))
		if err != nil {
			return res, fmt.Errorf("episode %d %w", ep, err)
		}
		if s.Terminal {
			res.Terminated++
		}
		if err := lw.Write(&s); err != nil {
			return res, &OutputError{err}
		}
		r := s.Return()
		sum += r
		sumSq += r * r
		res.Steps += len(s.Steps)
		res.Episodes++
		if progress != nil {
			progress(res.Episodes, res.Steps)
		}
	}
	if err := lw.Flush(); err != nil {
		return res, &OutputError{err}
	}
	n := float64(res.Episodes)
	res.MeanReturn = sum / n
	res.StdReturn = math.Sqrt(math.Max(0, sumSq/n-res.MeanReturn*res.MeanReturn))
	return res, nil
}

// GenerateFile runs Generate into a new file at path (replacing one that
// exists), removes the file if the run fails (a partial log must not be
// mistaken for a dataset), and records path and the log's dataset id in the
// result. Failures to create, write or close the file are *OutputError.
func GenerateFile(cfg GenerateConfig, path string, progress func(episodes, steps int)) (GenerateResult, error) {
	f, err := os.Create(path)
	if err != nil {
		return GenerateResult{}, &OutputError{err}
	}
	res, err := Generate(cfg, f, progress)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &OutputError{cerr}
	}
	if err != nil {
		os.Remove(path)
		return res, err
	}
	res.Out = path
	if res.DatasetID, err = sessionlog.DatasetID(path); err != nil {
		return res, err
	}
	return res, nil
}

// ReferenceError marks a reference snapshot that could not be loaded (as
// opposed to a bad behaviour spec); its message is the underlying error's.
type ReferenceError struct{ Err error }

// Error returns the underlying error's message.
func (e *ReferenceError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ReferenceError) Unwrap() error { return e.Err }

// ParseBehavior builds the behaviour policy spec (see package
// offline/policies) for env, the environment registered as envName. The
// reference that greedy, epsilon-greedy and softmax without a file refer to
// is the snapshot at referenceFile if given (a load failure is a
// *ReferenceError), else the environment's built-in controller if it has
// one (chain, mountaincar).
func ParseBehavior(spec, referenceFile, envName string, env sims.Env) (policies.Policy, error) {
	dim := env.ObservationSpace().Dim()
	opt := policies.Options{NumActions: env.ActionSpace().N, ObsDim: dim}
	if referenceFile != "" {
		ref, err := policies.LoadSnapshot(referenceFile)
		if err != nil {
			return nil, &ReferenceError{err}
		}
		opt.Reference = ref
	} else if ref, ok := policies.Builtin(envName, dim); ok {
		opt.Reference = ref
	}
	return policies.Parse(spec, opt)
}
