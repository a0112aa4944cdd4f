package svt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"dprl/internal/fielderr"
	"dprl/policy"
	"dprl/rollout"
	"dprl/sessionlog"
	"dprl/sims"
)

// gridSize is the number of equally spaced values per varied parameter
// (Sharma et al., App. B.1: 10 values of each of 3 parameters, 1000 settings).
const gridSize = 10

// Variation is one environment setting an expert is trained on: a cell of the
// paper's 10 x 10 x 10 grid of physical parameters (Sharma et al., App. B.1).
// Exactly one of CartPole and Acrobot is set.
type Variation struct {
	// Cell is the grid index of each varied parameter, 0..9.
	Cell [3]int `json:"cell"`
	// CartPole holds the parameters of a CartPole variation.
	CartPole *sims.CartPoleParams `json:"cartpole,omitempty"`
	// Acrobot holds the parameters of an Acrobot variation.
	Acrobot *sims.AcrobotParams `json:"acrobot,omitempty"`
}

// NewEnv returns a fresh environment with the variation's parameters.
func (v Variation) NewEnv() (sims.Env, error) {
	switch {
	case v.CartPole != nil:
		return sims.NewCartPoleWith(*v.CartPole)
	case v.Acrobot != nil:
		return sims.NewAcrobotWith(*v.Acrobot)
	}
	return nil, errors.New("svt: empty variation")
}

// linspace returns the i-th of n equally spaced values from lo to hi
// inclusive (numpy.linspace).
func linspace(lo, hi float64, i, n int) float64 {
	return lo + (hi-lo)*float64(i)/float64(n-1)
}

// gridVariation returns the variation of a grid cell (Sharma et al., App.
// B.1). CartPole: gravity in [8.75, 11.0], force magnitude in [9.0, 11.25],
// cart mass in [0.8, 1.25]. Acrobot: both link lengths in [0.8, 1.2] (the
// same length for both links), link 1 mass in [0.9, 1.1], link 2 mass in
// [0.9, 1.1].
func gridVariation(env string, cell [3]int) (Variation, error) {
	v := Variation{Cell: cell}
	switch env {
	case "cartpole":
		p := sims.DefaultCartPoleParams()
		p.Gravity = linspace(8.75, 11.0, cell[0], gridSize)
		p.ForceMag = linspace(9.0, 11.25, cell[1], gridSize)
		p.CartMass = linspace(0.8, 1.25, cell[2], gridSize)
		v.CartPole = &p
	case "acrobot":
		p := sims.DefaultAcrobotParams()
		p.Link1Length = linspace(0.8, 1.2, cell[0], gridSize)
		p.Link2Length = p.Link1Length
		p.Link1Mass = linspace(0.9, 1.1, cell[1], gridSize)
		p.Link2Mass = linspace(0.9, 1.1, cell[2], gridSize)
		v.Acrobot = &p
	default:
		return Variation{}, fmt.Errorf("svt: environment %q has no variations (want cartpole or acrobot)", env)
	}
	return v, nil
}

// PaperVariations returns m environment variations of env ("cartpole" or
// "acrobot"): the 1000 cells of the paper's grid in an order shuffled with
// rng, cycled when m > 1000 (the paper keeps 3 agents per cell for its 3000
// experts).
func PaperVariations(env string, m int, rng *rand.Rand) ([]Variation, error) {
	if m < 1 {
		return nil, fmt.Errorf("svt: %d variations, want >= 1", m)
	}
	if _, err := gridVariation(env, [3]int{}); err != nil {
		return nil, err
	}
	const cells = gridSize * gridSize * gridSize
	perm := rng.Perm(cells)
	out := make([]Variation, m)
	for j := range out {
		c := perm[j%cells]
		v, err := gridVariation(env, [3]int{c / (gridSize * gridSize), c / gridSize % gridSize, c % gridSize})
		if err != nil {
			return nil, err
		}
		out[j] = v
	}
	return out, nil
}

// GenConfig configures Generate.
type GenConfig struct {
	// Env is "cartpole" or "acrobot".
	Env string `flag:"env" default:"cartpole" usage:"environment: cartpole or acrobot"`
	// Experts is M, the number of experts, >= 1.
	Experts int `flag:"m" usage:"number of experts M >= 1 (the paper: 3000)"`
	// Trajectories is N, the trajectories logged per expert, >= 1.
	Trajectories int `flag:"trajectories" default:"20" usage:"trajectories logged per expert N >= 1 (the paper: 20)"`
	// PMin is the smoothing floor of the experts, in (0, 1/|A|].
	PMin float64 `flag:"pmin" default:"0.02" usage:"smoothing floor p_min in (0, 1/|A|] (the paper: 0.02)"`
	// Train is the (non-private) PPO configuration; its DP.Mode must be
	// policy.ModePPO.
	Train policy.Config
	// Users is the training budget, in simulated users (policy.Train), of
	// each expert trained from scratch, or of each base when Bases > 0.
	Users int `flag:"users" default:"3000" usage:"training budget per expert (per base with --bases), in simulated users"`
	// Bases, when > 0, trains that many base experts from scratch on the
	// default environment and fine-tunes base j mod Bases on expert j's
	// variation for FineTuneUsers users; 0 trains every expert from scratch
	// on its variation (the paper).
	Bases int `flag:"bases" usage:"train this many base experts on the default environment and fine-tune them per variation (0: every expert from scratch)"`
	// FineTuneUsers is the fine-tuning budget per expert (Bases > 0).
	FineTuneUsers int `flag:"finetune-users" default:"500" usage:"fine-tuning budget per expert with --bases, in simulated users"`
	// Workers is the number of experts trained at once; 0 means
	// GOMAXPROCS. The output does not depend on it.
	Workers int `flag:"workers" usage:"experts trained at once (default GOMAXPROCS; the output does not depend on it)"`
}

// Validate reports every invalid field.
func (c GenConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("svt: "+format, args...)) }
	if c.Env != "cartpole" && c.Env != "acrobot" {
		bad("env %q: want cartpole or acrobot", c.Env)
	}
	if c.Experts < 1 {
		bad("experts M = %d, want >= 1", c.Experts)
	}
	if c.Trajectories < 1 {
		bad("trajectories N = %d, want >= 1", c.Trajectories)
	}
	if !(c.PMin > 0 && c.PMin < 1) {
		bad("p_min = %v, want in (0, 1/|A|]", c.PMin)
	}
	if c.Users < 1 {
		bad("users = %d, want >= 1", c.Users)
	}
	if c.Bases < 0 || c.Bases > c.Experts {
		bad("bases = %d, want 0..M", c.Bases)
	}
	if c.Bases > 0 && c.FineTuneUsers < 1 {
		bad("fine-tune users = %d, want >= 1 with bases", c.FineTuneUsers)
	}
	if c.Workers < 0 {
		bad("workers = %d, want >= 0", c.Workers)
	}
	if c.Train.DP.Mode != policy.ModePPO {
		bad("training mode %v, want ppo (experts are trained without privacy)", c.Train.DP.Mode)
	}
	if err := c.Train.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// GenExpert describes one generated expert.
type GenExpert struct {
	// ID is the expert's id ("e<j>"), its snapshot DIR/<ID>.snap.
	ID string `json:"id"`
	// Variation is the environment setting it was trained (or fine-tuned) on.
	Variation Variation `json:"variation"`
	// Base is the base expert fine-tuned, -1 when trained from scratch.
	Base int `json:"base"`
	// TrainUsers is the expert's own training budget (from scratch or
	// fine-tuning).
	TrainUsers int `json:"train_users"`
	// MeanReturn is the mean undiscounted return of its logged trajectories
	// (smoothed policy, default environment).
	MeanReturn float64 `json:"mean_return"`
	// Steps is the number of logged transitions.
	Steps int `json:"steps"`
}

// GenProgress reports a running Generate.
type GenProgress struct {
	// Phase is "bases" (training the base experts) or "experts".
	Phase string
	// Done of Total items of the phase are complete.
	Done, Total int
	// Elapsed is the wall time since Generate started.
	Elapsed time.Duration
}

// GenResult is the outcome of Generate.
type GenResult struct {
	// Spec is the experts' policy spec (the environment's spaces).
	Spec policy.Spec
	// Experts describes every expert, in id order.
	Experts []GenExpert
	// Sessions and Steps count the logged trajectories and transitions.
	Sessions, Steps int
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// Generate builds cfg.Experts experts as Sharma et al. (App. B.1) do —
// each trained with (non-private) PPO on a variation of the environment
// (PaperVariations), then smoothed to p_min — writes expert "e<j>" to
// dir/e<j>.snap, and logs cfg.Trajectories trajectories per expert on the
// default environment with actions sampled from the smoothed expert (prob =
// the smoothed probability, expert = its id) to w, in expert order. Every
// draw derives from rng; the output does not depend on cfg.Workers.
func Generate(ctx context.Context, cfg GenConfig, dir string, w *sessionlog.Writer, rng *rand.Rand, progress func(GenProgress)) (GenResult, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return GenResult{}, err
	}
	newDefault := func() sims.Env { e, _ := sims.New(cfg.Env); return e }
	spec, err := policy.SpecOf(newDefault())
	if err != nil {
		return GenResult{}, err
	}
	if cfg.PMin*float64(spec.NumActions) > 1 {
		return GenResult{}, fmt.Errorf("svt: p_min = %v, want <= 1/|A| = 1/%d", cfg.PMin, spec.NumActions)
	}
	vars, err := PaperVariations(cfg.Env, cfg.Experts, rng)
	if err != nil {
		return GenResult{}, err
	}
	baseSeed, trainSeed, rollSeed := rng.Uint64(), rng.Uint64(), rng.Uint64()
	W := cfg.Workers
	if W <= 0 {
		W = runtime.GOMAXPROCS(0)
	}
	res := GenResult{Spec: spec, Experts: make([]GenExpert, cfg.Experts)}

	// Base experts, trained on the default environment.
	bases := make([][]float64, cfg.Bases)
	err = parallel(ctx, W, cfg.Bases, func(b int) error {
		out, err := policy.Train(ctx, newDefault, cfg.Train, policy.TrainOptions{Users: cfg.Users, Workers: 1, ContinueEpisodes: true,
			CurveEvery: cfg.Users}, rand.New(rand.NewPCG(baseSeed, uint64(b))))
		if err != nil {
			return fmt.Errorf("svt: base %d: %w", b, err)
		}
		bases[b] = out.Theta
		return nil
	}, func(done int) {
		if progress != nil {
			progress(GenProgress{Phase: "bases", Done: done, Total: cfg.Bases, Elapsed: time.Since(start)})
		}
	})
	if err != nil {
		return res, err
	}

	// Experts: train, write the snapshot, log the trajectories. Results are
	// written in expert order as they complete.
	var mu sync.Mutex
	pending := map[int][]sessionlog.Session{}
	next := 0
	var werr error
	flush := func() {
		for {
			ss, ok := pending[next]
			if !ok {
				return
			}
			delete(pending, next)
			for i := range ss {
				if werr == nil {
					werr = w.Write(&ss[i])
				}
			}
			next++
		}
	}
	err = parallel(ctx, W, cfg.Experts, func(j int) error {
		id := fmt.Sprintf("e%d", j)
		v := vars[j]
		newEnv := func() sims.Env { e, _ := v.NewEnv(); return e }
		if _, err := v.NewEnv(); err != nil {
			return fmt.Errorf("svt: expert %s: %w", id, err)
		}
		opts := policy.TrainOptions{Users: cfg.Users, Workers: 1, ContinueEpisodes: true, CurveEvery: cfg.Users}
		ge := GenExpert{ID: id, Variation: v, Base: -1, TrainUsers: cfg.Users}
		if cfg.Bases > 0 {
			ge.Base = j % cfg.Bases
			opts.Init, opts.Users, opts.CurveEvery = bases[ge.Base], cfg.FineTuneUsers, cfg.FineTuneUsers
			ge.TrainUsers = cfg.FineTuneUsers
		}
		out, err := policy.Train(ctx, newEnv, cfg.Train, opts, rand.New(rand.NewPCG(trainSeed, uint64(j))))
		if err != nil {
			return fmt.Errorf("svt: expert %s: %w", id, err)
		}
		snap, err := policy.NewSnapshot(spec, cfg.Train, uint64(out.Updates), out.Theta)
		if err != nil {
			return fmt.Errorf("svt: expert %s: %w", id, err)
		}
		if err := WriteExpert(dir, id, snap); err != nil {
			return err
		}
		ex, err := NewSmoothedExpert(id, snap, cfg.PMin)
		if err != nil {
			return err
		}
		ss, err := Rollouts(newDefault(), ex, cfg.Trajectories, rand.New(rand.NewPCG(rollSeed, uint64(j))))
		if err != nil {
			return err
		}
		var ret float64
		for i := range ss {
			ret += ss[i].Return()
			ge.Steps += len(ss[i].Steps)
		}
		ge.MeanReturn = ret / float64(len(ss))
		mu.Lock()
		res.Experts[j] = ge
		pending[j] = ss
		flush()
		mu.Unlock()
		return nil
	}, func(d int) {
		if progress != nil {
			progress(GenProgress{Phase: "experts", Done: d, Total: cfg.Experts, Elapsed: time.Since(start)})
		}
	})
	if err == nil {
		err = werr
	}
	for _, e := range res.Experts {
		res.Steps += e.Steps
	}
	res.Sessions = next * cfg.Trajectories
	res.Elapsed = time.Since(start)
	return res, err
}

// Rollouts runs n episodes of env (to termination or truncation at the
// environment's step limit) with actions sampled from the smoothed expert,
// and returns them as sessions "<id>-t<k>" with expert = id and the
// behaviour probability of each action (rollout.Episode: final_obs only for
// an episode that did not terminate). rng drives both the environment and
// the expert's draws.
func Rollouts(env sims.Env, e *SmoothedExpert, n int, rng *rand.Rand) ([]sessionlog.Session, error) {
	beh := func(_ int, obs []float64) (sims.Action, float64, error) {
		a, p := e.Sample(rng, obs)
		return sims.Action{Index: a}, math.Log(p), nil
	}
	out := make([]sessionlog.Session, n)
	for k := range out {
		s, err := rollout.Episode(env, rng, beh, env.MaxSteps(), fmt.Sprintf("%s-t%d", e.ID, k))
		if err != nil {
			return nil, fmt.Errorf("svt: expert %s trajectory %d: %w", e.ID, k, err)
		}
		s.Expert = e.ID
		out[k] = s
	}
	return out, nil
}

// parallel runs f(0..n-1) on w goroutines, stopping at the first error or
// when ctx is done; report is called (serially) after each completion.
func parallel(ctx context.Context, w, n int, f func(int) error, report func(done int)) error {
	if n == 0 {
		return nil
	}
	jobs := make(chan int)
	var (
		mu    sync.Mutex
		first error
		count int
		wg    sync.WaitGroup
	)
	for range min(w, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				err := f(j)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				count++
				if err == nil {
					report(count)
				}
				mu.Unlock()
			}
		}()
	}
	for j := 0; j < n; j++ {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// ExpertTrainConfig returns the learner configuration experts are trained
// with: non-private PPO (DP.Mode policy.ModePPO, K = 32 users per update)
// with the control defaults, 16x16 networks, E = 3 epochs, entropy
// coefficient 0.01 and no advantage standardisation. The SVT guide's (docs/offline.md)
// tables were measured with it.
func ExpertTrainConfig() policy.Config {
	cfg := policy.DefaultControlConfig()
	cfg.PPO.Hidden = []int{16, 16}
	cfg.PPO.Epochs = 3
	cfg.PPO.EntropyCoef = 0.01
	cfg.PPO.NormalizeAdvantages = false
	cfg.DP = policy.DPConfig{Mode: policy.ModePPO, UsersPerUpdate: 32}
	return cfg
}

// ManifestFormat and ManifestFile name the manifest GenerateDataset writes
// beside the expert snapshots.
const (
	ManifestFormat = "dprl.experts.v1"
	ManifestFile   = "experts.json"
)

// Manifest is DIR/experts.json: how the experts of a dataset were made.
type Manifest struct {
	Format        string      `json:"format"`
	Env           string      `json:"env"`
	PMin          float64     `json:"pmin"`
	Users         int         `json:"users"`
	Bases         int         `json:"bases"`
	FineTuneUsers int         `json:"finetune_users,omitempty"`
	Hidden        []int       `json:"hidden"`
	Seed          uint64      `json:"seed"`
	Seeded        bool        `json:"seeded"`
	Experts       []GenExpert `json:"experts"`
}

// DatasetConfig configures GenerateDataset: Generate's configuration and
// where the dataset goes.
type DatasetConfig struct {
	GenConfig
	// Dir receives the snapshots DIR/e<j>.snap and DIR/experts.json; it is
	// created if missing.
	Dir string `flag:"out-dir" usage:"directory for the expert snapshots DIR/e<j>.snap (created)"`
	// Log is the session log to write (dprl.sessions.v1), replaced if it
	// exists.
	Log string `flag:"log" usage:"session log to write (dprl.sessions.v1)"`
	// Seed is the seed of every draw; Seeded records whether the user chose
	// it (rather than the operating system).
	Seed   uint64 `flag:"seed" usage:"seed of every random draw (default: from the OS; printed in the result)"`
	Seeded bool
}

// datasetFields are the DatasetConfig fields an error may name.
var datasetFields = fielderr.Fields{"Env", "Experts", "Trajectories", "Dir", "Log", "Users", "Bases", "FineTuneUsers", "PMin", "Workers"}

// Validate reports every invalid field, as errors naming the fields
// (*fielderr.Error), joined; with none, the errors of GenConfig.Validate
// (the training configuration).
func (c DatasetConfig) Validate() error {
	var errs []error
	bad := func(cond bool, format string, args ...any) {
		if cond {
			errs = append(errs, datasetFields.Errorf(format, args...))
		}
	}
	bad(c.Env != "cartpole" && c.Env != "acrobot", "{Env} %q: want cartpole or acrobot", c.Env)
	bad(c.Experts < 1, "{Experts} %d: want >= 1", c.Experts)
	bad(c.Trajectories < 1, "{Trajectories} %d: want >= 1", c.Trajectories)
	bad(c.Dir == "", "{Dir}: required")
	bad(c.Log == "", "{Log}: required")
	bad(c.Users < 1, "{Users} %d: want >= 1", c.Users)
	bad(c.Bases < 0 || c.Bases > max(c.Experts, 0), "{Bases} %d: want 0..M", c.Bases)
	bad(c.Bases > 0 && c.FineTuneUsers < 1, "{FineTuneUsers} %d: want >= 1", c.FineTuneUsers)
	if env, err := sims.New(c.Env); err == nil && env.ActionSpace().Kind == sims.Discrete {
		n := env.ActionSpace().N
		bad(!(c.PMin > 0) || c.PMin*float64(n) > 1, "{PMin} %v: want in (0, 1/|A| = 1/%d]", c.PMin, n)
	}
	bad(c.Workers < 0, "{Workers} %d: want >= 0", c.Workers)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return c.GenConfig.Validate()
}

// DatasetSummary describes a dataset written by GenerateDataset (dprl sims
// experts). It describes simulated experts, not private data: the returns
// are printed as they are.
type DatasetSummary struct {
	Env                   string  `json:"env"`
	Experts               int     `json:"experts"`
	TrajectoriesPerExpert int     `json:"trajectories_per_expert"`
	Sessions              int     `json:"sessions"`
	Transitions           int     `json:"transitions"`
	PMin                  float64 `json:"pmin"`
	Users                 int     `json:"users"`
	Bases                 int     `json:"bases"`
	FineTuneUsers         int     `json:"finetune_users,omitempty"`
	ReturnMin             float64 `json:"return_min"`
	ReturnMedian          float64 `json:"return_median"`
	ReturnMax             float64 `json:"return_max"`
	ReturnMean            float64 `json:"return_mean"`
	Seconds               float64 `json:"seconds"`
	SecondsPerExpert      float64 `json:"seconds_per_expert"`
	Log                   string  `json:"log"`
	OutDir                string  `json:"out_dir"`
	DatasetID             string  `json:"dataset_id"`
	Seed                  uint64  `json:"seed"`
	Seeded                bool    `json:"seeded"`
}

// WriteText writes the summary as text.
func (r DatasetSummary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s experts (p_min %v) in %s, %d trajectories each: %d sessions, %d transitions\n",
		r.Experts, r.Env, r.PMin, r.OutDir, r.TrajectoriesPerExpert, r.Sessions, r.Transitions)
	if r.Bases > 0 {
		fmt.Fprintf(&b, "training: %d bases x %d users, then %d fine-tuning users per expert\n", r.Bases, r.Users, r.FineTuneUsers)
	} else {
		fmt.Fprintf(&b, "training: %d users per expert, from scratch\n", r.Users)
	}
	fmt.Fprintf(&b, "logged return per expert (smoothed, default env): min %.1f  median %.1f  max %.1f  mean %.1f\n",
		r.ReturnMin, r.ReturnMedian, r.ReturnMax, r.ReturnMean)
	fmt.Fprintf(&b, "log %s (%s)\n%.1f s (%.2f s per expert), seed %d\n", r.Log, r.DatasetID, r.Seconds, r.SecondsPerExpert, r.Seed)
	_, err := io.WriteString(w, b.String())
	return err
}

// datasetStream is the PCG stream GenerateDataset seeds its generator with
// ("dprl_ex").
const datasetStream = 0x647072_6c5f6578

// GenerateDataset runs Generate with every draw from PCG(cfg.Seed,
// "dprl_ex"), writes the snapshots and the manifest (Manifest) to cfg.Dir
// and the log to cfg.Log (synced before it is closed), and returns the
// summary with the log's dataset id and the spread of the experts' logged
// returns. progress is passed to Generate.
func GenerateDataset(ctx context.Context, cfg DatasetConfig, progress func(GenProgress)) (DatasetSummary, error) {
	if err := cfg.Validate(); err != nil {
		return DatasetSummary{}, err
	}
	res := DatasetSummary{Env: cfg.Env, Experts: cfg.Experts, TrajectoriesPerExpert: cfg.Trajectories, PMin: cfg.PMin, Users: cfg.Users,
		Bases: cfg.Bases, Log: cfg.Log, OutDir: cfg.Dir, Seed: cfg.Seed, Seeded: cfg.Seeded}
	if cfg.Bases > 0 {
		res.FineTuneUsers = cfg.FineTuneUsers
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return res, err
	}
	out, err := os.Create(cfg.Log)
	if err != nil {
		return res, err
	}
	w := sessionlog.NewWriter(out)
	gen, err := Generate(ctx, cfg.GenConfig, cfg.Dir, w, rand.New(rand.NewPCG(cfg.Seed, datasetStream)), progress)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}
	man := Manifest{Format: ManifestFormat, Env: cfg.Env, PMin: cfg.PMin, Users: cfg.Users, Bases: cfg.Bases,
		FineTuneUsers: res.FineTuneUsers, Hidden: cfg.Train.PPO.Hidden, Seed: cfg.Seed, Seeded: cfg.Seeded, Experts: gen.Experts}
	mb, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, ManifestFile), append(mb, '\n'), 0o600); err != nil {
		return res, err
	}
	if res.DatasetID, err = sessionlog.DatasetID(cfg.Log); err != nil {
		return res, err
	}
	rets := make([]float64, len(gen.Experts))
	for i, e := range gen.Experts {
		rets[i] = e.MeanReturn
		res.ReturnMean += e.MeanReturn / float64(len(rets))
	}
	slices.Sort(rets)
	res.ReturnMin, res.ReturnMedian, res.ReturnMax = rets[0], rets[len(rets)/2], rets[len(rets)-1]
	res.Sessions, res.Transitions = gen.Sessions, gen.Steps
	res.Seconds = gen.Elapsed.Seconds()
	res.SecondsPerExpert = res.Seconds / float64(cfg.Experts)
	return res, nil
}
