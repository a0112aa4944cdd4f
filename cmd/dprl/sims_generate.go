package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"time"

	"github.com/spf13/cobra"

	"dprl/offline/policies"
	"dprl/sessionlog"
	"dprl/sims"
)

// simsGenerateFlags holds the flags of "dprl sims generate".
type simsGenerateFlags struct {
	env       string
	behavior  string
	reference string
	episodes  int
	out       string
	seed      uint64
	maxSteps  int
	force     bool
	asJSON    bool
}

// simsGenerateResult is the summary of a generated log.
type simsGenerateResult struct {
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

func newSimsGenerateCmd(a *app) *cobra.Command {
	var f simsGenerateFlags
	c := &cobra.Command{
		Use:   "generate",
		Short: "Write a dprl.sessions.v1 log of episodes run by a behaviour policy",
		Long: `generate runs --episodes episodes of a discrete-action environment under a
behaviour policy and writes them as a dprl.sessions.v1 log (one session per
line), recording with every action the behaviour's probability of it (as
"logp", its logarithm, which the format accepts in place of "prob"). The log is
the input of the offline modes (dprl offline gtd2).

Behaviour policies (--behavior):
  random | uniform          every action with probability 1/N
  policy:FILE               a saved policy snapshot's own (sampled) policy
  greedy                    the reference's preferred action
  epsilon-greedy:EPS        the reference's preferred action with probability
                            1-EPS+EPS/N, any other with EPS/N
  softmax:TEMP              softmax(reference scores / TEMP)
The reference is the snapshot given with --policy FILE (its logits), else the
environment's built-in controller: chain "advance" (action 1, scores 1 for
advance and 0 for wait), mountaincar "pump" (push in the direction of the
velocity). File forms greedy:FILE, softmax:FILE:TEMP and
epsilon-greedy:FILE:EPS are accepted too.

--max-steps truncates episodes earlier than the environment's own limit;
a truncated episode records its final observation (final_obs) so that it can
be bootstrapped.

Randomness: the environment draws from PCG(seed, 1) and the behaviour from
PCG(seed, 2). Without --seed a seed is drawn from the operating system and
reported, so the log can be regenerated.`,
		Example: `  dprl sims generate --env chain --behavior random --episodes 1000 --out chain.jsonl --seed 1
  dprl sims generate --env mountaincar --behavior epsilon-greedy:0.1 --episodes 500 --out mc.jsonl
  dprl sims generate --env cartpole --behavior policy:pol.snap --episodes 100 --out cp.jsonl --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimsGenerate(a, cmd, &f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.env, "env", "", "environment name (see dprl sims list); discrete actions only")
	fl.StringVar(&f.behavior, "behavior", "", "behaviour policy: random, policy:FILE, greedy, epsilon-greedy:EPS or softmax:TEMP")
	fl.StringVar(&f.reference, "policy", "", "snapshot FILE that greedy, epsilon-greedy and softmax refer to (default: the environment's built-in controller)")
	fl.IntVar(&f.episodes, "episodes", 0, "number of episodes (sessions) to write")
	fl.StringVar(&f.out, "out", "", "output file (dprl.sessions.v1 JSON Lines)")
	fl.Uint64Var(&f.seed, "seed", 0, "random seed (default: drawn from the OS and reported)")
	fl.IntVar(&f.maxSteps, "max-steps", 0, "truncate episodes after this many steps (default: the environment's limit)")
	fl.BoolVar(&f.force, "force", false, "overwrite --out if it exists")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	return c
}

func runSimsGenerate(a *app, cmd *cobra.Command, f *simsGenerateFlags) error {
	env, err := newEnvFlag(f.env)
	if err != nil {
		return err
	}
	space := env.ActionSpace()
	if space.Kind != sims.Discrete {
		return usagef("--env %s has continuous actions; generate supports discrete actions only", f.env)
	}
	switch {
	case f.behavior == "":
		return usagef("--behavior is required (random, policy:FILE, greedy, epsilon-greedy:EPS or softmax:TEMP)")
	case f.episodes < 1:
		return usagef("--episodes %d: want at least 1", f.episodes)
	case f.out == "":
		return usagef("--out is required")
	case cmd.Flags().Changed("max-steps") && f.maxSteps < 1:
		return usagef("--max-steps %d: want at least 1", f.maxSteps)
	}
	dim := env.ObservationSpace().Dim()
	opt := policies.Options{NumActions: space.N, ObsDim: dim}
	if f.reference != "" {
		sc, err := policies.LoadSnapshot(f.reference)
		if err != nil {
			return usagef("--policy: %w", err)
		}
		opt.Reference = sc
	} else if ref, ok := policies.Builtin(f.env, dim); ok {
		opt.Reference = ref
	}
	beh, err := policies.Parse(f.behavior, opt)
	if err != nil {
		return usagef("--behavior: %w", err)
	}
	if !f.force {
		if _, err := os.Stat(f.out); err == nil {
			return usagef("--out %s exists (pass --force to overwrite)", f.out)
		}
	}
	seed := f.seed
	if !cmd.Flags().Changed("seed") {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("drawing a seed: %w", err)
		}
		seed = binary.LittleEndian.Uint64(b[:])
		a.log.Info().Uint64("seed", seed).Msg("random seed drawn; pass --seed to repeat the run")
	}
	limit := env.MaxSteps()
	if f.maxSteps > 0 {
		limit = min(limit, f.maxSteps)
	}

	file, err := os.Create(f.out)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	res, genErr := generate(a, env, beh, f.episodes, limit, seed, file)
	if err := file.Close(); genErr == nil && err != nil {
		genErr = fmt.Errorf("--out: %w", err)
	}
	if genErr != nil {
		os.Remove(f.out) // a partial log must not be mistaken for a dataset
		return genErr
	}
	res.Env, res.Behavior, res.Seed, res.Out = f.env, f.behavior, seed, f.out
	if res.DatasetID, err = sessionlog.DatasetID(f.out); err != nil {
		return err
	}
	return emit(a.stdout, f.asJSON, res, func(w io.Writer) error {
		fmt.Fprintf(w, "wrote %d episodes (%d steps, %d terminated) of %s under %s to %s\n",
			res.Episodes, res.Steps, res.Terminated, res.Env, res.Behavior, res.Out)
		fmt.Fprintf(w, "return: mean %.4g, std %.4g\n", res.MeanReturn, res.StdReturn)
		fmt.Fprintf(w, "dataset id: %s\nseed: %d\n", res.DatasetID, res.Seed)
		return nil
	})
}

// generate runs the episodes and writes them; progress goes to the log every
// few seconds.
func generate(a *app, env sims.Env, beh policies.Policy, episodes, limit int, seed uint64, out io.Writer) (simsGenerateResult, error) {
	envRNG := mrand.New(mrand.NewPCG(seed, 1))
	polRNG := mrand.New(mrand.NewPCG(seed, 2))
	dim := env.ObservationSpace().Dim()
	w := sessionlog.NewWriter(out)
	obs := make([]float64, dim)
	probs := make([]float64, beh.NumActions())
	var res simsGenerateResult
	var sum, sumSq float64
	last := time.Now()
	for ep := range episodes {
		env.Reset(envRNG, obs)
		s := sessionlog.Session{Session: fmt.Sprintf("ep%d", ep)}
		for t := 0; t < limit; t++ {
			if err := beh.Probs(probs, obs); err != nil {
				return res, fmt.Errorf("episode %d step %d: behaviour: %w", ep, t, err)
			}
			act := policies.Sample(polRNG, probs)
			st := sessionlog.Step{Obs: append([]float64(nil), obs...), Action: sims.Action{Index: act}, LogP: math.Log(probs[act])}
			var term, trunc bool
			st.Reward, term, trunc = env.Step(sims.Action{Index: act}, obs)
			s.Steps = append(s.Steps, st)
			if !finite(st.Reward) || !allFinite(obs) {
				return res, fmt.Errorf("episode %d step %d: the environment left the finite range", ep, t)
			}
			if term {
				s.Terminal = true
				break
			}
			if trunc {
				break
			}
		}
		if !s.Terminal {
			s.FinalObs = append([]float64(nil), obs...)
		} else {
			res.Terminated++
		}
		if err := w.Write(&s); err != nil {
			return res, fmt.Errorf("--out: %w", err)
		}
		r := s.Return()
		sum += r
		sumSq += r * r
		res.Steps += len(s.Steps)
		res.Episodes++
		if time.Since(last) > 3*time.Second {
			last = time.Now()
			a.log.Info().Int("episodes", res.Episodes).Int("of", episodes).Int("steps", res.Steps).Msg("generating")
		}
	}
	if err := w.Flush(); err != nil {
		return res, fmt.Errorf("--out: %w", err)
	}
	n := float64(res.Episodes)
	res.MeanReturn = sum / n
	res.StdReturn = math.Sqrt(math.Max(0, sumSq/n-res.MeanReturn*res.MeanReturn))
	if res.Episodes == 0 {
		return res, errors.New("no episodes")
	}
	return res, nil
}
