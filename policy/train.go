package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"dprl/ledger/accountant"
	"dprl/sims"

	"gonum.org/v1/gonum/floats"
)

// SpecOf returns the policy Spec matching env's observation and action
// spaces. The observation space must be a box; a discrete action space gives a
// categorical policy, a box a diagonal Gaussian one.
func SpecOf(env sims.Env) (Spec, error) {
	obsSpace, as := env.ObservationSpace(), env.ActionSpace()
	if obsSpace.Kind != sims.Box {
		return Spec{}, fmt.Errorf("policy: observation space is %v, want a box", obsSpace.Kind)
	}
	s := Spec{ObsDim: obsSpace.Dim()}
	switch as.Kind {
	case sims.Discrete:
		s.Kind, s.NumActions = ActionDiscrete, as.N
	case sims.Box:
		s.Kind, s.ActionDim = ActionContinuous, as.Dim()
	default:
		return Spec{}, fmt.Errorf("policy: action space kind %v", as.Kind)
	}
	return s, s.Validate()
}

// TrainOptions configures an in-process training run (Train).
type TrainOptions struct {
	// Users is the number of simulated users, each contributing one
	// trajectory to one update, >= 1. The last batch may hold fewer than K
	// users; it is released with the fixed denominator K.
	Users int
	// Workers is the number of goroutines computing the local updates of a
	// batch, each with its own Learner and environment. 0 means
	// runtime.GOMAXPROCS(0). The result does not depend on it.
	Workers int
	// CurveEvery is the number of users between two points of the learning
	// curve. 0 means about 50 points over the run. It is rounded up to a
	// multiple of K, so that points fall between updates.
	CurveEvery int
	// CurveEpisodes is the number of evaluation episodes per curve point
	// (actions sampled from the policy, as Evaluate). 0 means 5.
	CurveEpisodes int
	// ContinueEpisodes makes user slot i of every batch (i < K) continue the
	// episode the same slot's previous user left unfinished, as a vectorised
	// PPO implementation does with K environments: a user's trajectory is
	// then the next segment of at most T steps of a running episode (ending
	// early when the episode ends), so long episodes are seen beyond their
	// first T steps. false: every user starts a fresh episode.
	//
	// Privacy unit: with ContinueEpisodes one episode is up to
	// EpisodeSegments users in consecutive releases, so the guarantee per
	// episode is weaker than per user (EpisodeSensitivity). Train ends every
	// episode at the environment's MaxSteps (truncated), whatever the
	// environment reports, so that bound holds by construction; in ModeDP it
	// refuses an environment without a finite MaxSteps.
	ContinueEpisodes bool
	// AnnealServerLR decays the server step size linearly over the run, as
	// CleanRL's PPO anneals its learning rate: update i of n (from 0) uses
	// eta (1 - i/n), n = ceil(Users/K). The schedule is public, so the
	// released updates keep their guarantee (post-processing); it damps the
	// random walk of the noise once the policy has converged.
	AnnealServerLR bool
	// Init, if non-nil, is the starting joint parameter vector [policy;
	// value] (fine-tuning a trained policy, e.g. a Snapshot's Theta); its
	// length must be the Learner's NumParams. nil: a fresh random
	// initialisation from rng. The draws from rng are the same either way.
	Init []float64
	// AverageDecay, if in (0, 1), makes Train also keep an exponential
	// moving average of the released parameters (Polyak averaging of the
	// iterates): after the first update avg = theta_1, then avg <- beta avg
	// + (1 - beta) theta_i after update i, beta = AverageDecay. The average
	// is a function of released updates only, so it has the same guarantee
	// (post-processing); it damps the random walk the noise adds to a
	// converged policy. Result.Average holds it, and the learning curve
	// evaluates it instead of theta. 0 disables it.
	AverageDecay float64
	// Diagnostics records Result.Diagnostics, one entry per update:
	// statistics of the simulated users' raw data, not covered by the
	// privacy guarantee (simulation only).
	Diagnostics bool
	// Progress, if non-nil, is called on the calling goroutine after every
	// update. It must be quick; throttle output in it.
	Progress func(Progress)
	// OnRelease, if non-nil, is called on the calling goroutine once
	// before the first update (0 updates, 0 users, the initial parameters)
	// and after every update, with the number of updates and users so far
	// and the parameters that serve the next batch (read only, valid
	// during the call): post-processing of the releases; an evaluation in
	// it is simulation only.
	OnRelease func(updates, users int, theta []float64)
}

// Progress is a snapshot of a running Train, passed to TrainOptions.Progress.
type Progress struct {
	Users   int           // users processed so far
	Updates int           // releases (DP updates) so far
	Steps   int64         // environment steps taken by users so far
	Elapsed time.Duration // wall time since Train started
	// RecentReturn is the mean return of the most recent learning-curve
	// point (NaN before the first).
	RecentReturn float64
}

// CurvePoint is one point of the learning curve: the mean and standard
// deviation of the undiscounted return of the policy after Users users.
type CurvePoint struct {
	Users  int     `json:"users"`
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std"`
	Update int     `json:"update"`
}

// Result is the outcome of Train.
type Result struct {
	Spec  Spec
	Theta []float64 // final joint parameters [policy; value]
	// Average is the moving average of the released parameters
	// (TrainOptions.AverageDecay), nil when averaging is off or no update
	// was released.
	Average []float64
	// Users, Updates and Steps count what was processed (fewer than asked
	// if the context was cancelled).
	Users, Updates int
	Steps          int64
	// Skipped counts users whose local update was not finite; each was
	// aggregated as the zero vector in its place among the K (within the
	// sensitivity bound; Round). It is a statistic of the simulated users'
	// data (simulation only).
	Skipped int
	Curve   []CurvePoint
	Elapsed time.Duration
	// Diagnostics has one entry per update if TrainOptions.Diagnostics.
	// They are computed from raw user data (the exact noise, un-noised
	// clipped fractions, returns): simulation only, not covered by the
	// privacy guarantee.
	Diagnostics []UpdateDiag
}

// DiagnosticsScope is the value of UpdateDiag.Scope: every record says
// what it is, wherever it is copied to.
const DiagnosticsScope = "simulation only: not covered by the privacy guarantee (statistics of the simulated users' raw data and of the exact noise)"

// UpdateDiag describes one update of Train: the means over its users of
// their LocalStats, the norms of the two blocks of the averaged clipped
// update (1/K) sum g_u (the signal) and of the noise added to it. These are
// statistics of the users' raw data and of the exact noise, which no
// release may carry: Train runs on simulators only, and each record is
// labelled so (Scope).
type UpdateDiag struct {
	// Scope is always DiagnosticsScope.
	Scope      string  `json:"scope"`
	Users      int     `json:"users"` // users processed after this update
	AdvMean    float64 `json:"adv_mean"`
	AdvAbs     float64 `json:"adv_abs"`
	ReturnMean float64 `json:"return_mean"` // mean value target
	ValueLoss  float64 `json:"value_loss"`  // mean 0.5 (V - R)^2 before the epochs
	Entropy    float64 `json:"entropy"`
	PolicyNorm float64 `json:"policy_norm"` // mean norm of the users' policy blocks
	ValueNorm  float64 `json:"value_norm"`
	// PolicyClipped and ValueClipped are the fractions of users whose
	// update lies on the block's clipping sphere.
	PolicyClipped float64 `json:"policy_clipped"`
	ValueClipped  float64 `json:"value_clipped"`
	SignalPolicy  float64 `json:"signal_policy"`
	SignalValue   float64 `json:"signal_value"`
	NoisePolicy   float64 `json:"noise_policy"`
	NoiseValue    float64 `json:"noise_value"`
}

// lockstepUsers is the most users a worker rolls out side by side, with one
// batched forward of the policy per step (trainWorker.rollout): enough rows
// to fill the GEMM's register tiles, few enough that the trajectories stay
// small (16 sessions of recsys's 400 steps hold about 3 MB).
const lockstepUsers = 16

// trainWorker owns everything one goroutine needs for its users: a learner,
// an actor, and one lane (environment, generator, trajectory) per user it
// rolls out side by side.
type trainWorker struct {
	learner *Learner
	actor   *Actor
	newEnv  func() sims.Env
	spec    Spec
	lanes   []*lane
	T       int
	steps   int64
	err     error
	// The chunk of slots rolled out last (lanes[i] holds slots[i]'s
	// trajectory) and how many of them have had their local update.
	slots []int
	done  int
	// Step buffers of the active lanes: observations, actions, log-probs.
	obs    []float64
	acts   []int
	cacts  []float64
	logps  []float64
	rngs   []*rand.Rand
	active []int
	// sums of the LocalStats fields since the last diagnose
	statSum [5]float64
	statN   int
}

// lane is one user of a lockstep rollout: its generator PCG(seed, u) (the
// environment's transitions, the actions, then its local update's
// minibatch shuffles, in that order as if it ran alone), its environment
// (or its slot's, with ContinueEpisodes) and its trajectory.
type lane struct {
	pcg *rand.PCG
	rng *rand.Rand
	own sims.Env     // the lane's environment for fresh episodes
	env sims.Env     // the one stepped: own, or the slot's
	es  *episodeSlot // the slot of ContinueEpisodes, or nil
	tr  Trajectory   // full-length buffers
	act sims.Action
	// the rollout's outcome: steps taken, whether the episode terminated or
	// ended (terminated, truncated or at the slot's limit)
	t               int
	terminal, ended bool
}

// episodeSlot is one running episode of ContinueEpisodes: its own
// environment, the generator it keeps for its transitions, and the current
// observation.
type episodeSlot struct {
	env     sims.Env
	rng     *rand.Rand
	obs     []float64
	running bool
	// steps counts the running episode's steps; at limit (the
	// environment's MaxSteps, 0: none) Train ends the episode.
	steps, limit int
}

// Train runs DPPG (Algorithm 2; PPO when cfg.DP.Mode is ModePPO) in process
// against opts.Users simulated users. Each user u runs the current policy for
// at most T = cfg.PPO.StepsPerUser steps of one episode, a fresh one or, with
// opts.ContinueEpisodes, the one its batch slot left running: its trajectory
// ends early, terminal, when the episode terminates, and is otherwise
// truncated (bootstrapped from V) after T steps or at the environment's step
// limit. A user's data enters exactly one update (an episode, with
// ContinueEpisodes, up to EpisodeSegments users' in consecutive updates:
// EpisodePrivacy). Its local update (Algorithm 3)
// is computed from the policy version of its batch; every K users the
// batch's Round releases g~ = (1/K) sum g_u + N(0, (zS/K)^2 I), theta <- theta +
// eta g~, and every learner's Adam moments are reset from g~. A user whose
// local update is not finite contributes the zero vector in its place among
// the K (Round's rule, the same as the agent's).
//
// Every random draw derives from rng: the initialisation, the noise source,
// the learning-curve evaluations, the continuing episodes' environment
// generators and one seed from which user u's own generator (environment and
// action sampling, minibatch shuffles) is derived as PCG(seed, u). The result is
// therefore a function of rng's state alone, whatever Workers is and however
// goroutines are scheduled (updates are summed in user order).
//
// Simulation only: the noise comes from rng, so a seeded run is not a
// production release. On context cancellation Train returns what it has
// with the context's error.
func Train(ctx context.Context, newEnv func() sims.Env, cfg Config, opts TrainOptions, rng *rand.Rand) (Result, error) {
	start := time.Now()
	if newEnv == nil || rng == nil {
		return Result{}, errors.New("policy: train: nil environment factory or rng")
	}
	if opts.Users < 1 {
		return Result{}, fmt.Errorf("policy: train: users = %d, must be >= 1", opts.Users)
	}
	if d := opts.AverageDecay; !(d >= 0 && d < 1) {
		return Result{}, fmt.Errorf("policy: train: average decay = %v, must be in [0, 1)", d)
	}
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	env0 := newEnv()
	spec, err := SpecOf(env0)
	if err != nil {
		return Result{}, err
	}
	if cfg.DP.Mode == ModeDP {
		if _, err := EpisodeSegments(env0.MaxSteps(), cfg.PPO.StepsPerUser, opts.ContinueEpisodes); err != nil {
			return Result{}, err
		}
	}
	K := cfg.DP.UsersPerUpdate
	W := opts.Workers
	if W <= 0 {
		W = runtime.GOMAXPROCS(0)
	}
	W = min(W, K)
	curveEvery := opts.CurveEvery
	if curveEvery <= 0 {
		curveEvery = max(1, opts.Users/50)
	}
	curveEvery = (curveEvery + K - 1) / K * K
	curveEpisodes := opts.CurveEpisodes
	if curveEpisodes <= 0 {
		curveEpisodes = 5
	}

	initSeed, noiseSeed, userSeed, evalSeed := rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()
	workers := make([]*trainWorker, W)
	for i := range workers {
		l, err := NewLearner(spec, cfg)
		if err != nil {
			return Result{}, err
		}
		a, err := NewActorFor(spec, cfg.PPO)
		if err != nil {
			return Result{}, err
		}
		workers[i] = &trainWorker{learner: l, actor: a, newEnv: newEnv, spec: spec, T: cfg.PPO.StepsPerUser}
	}
	l0 := workers[0].learner
	n, nPi := l0.NumParams(), l0.NumPolicyParams()
	theta := make([]float64, n)
	l0.Init(theta, rand.New(rand.NewPCG(initSeed, 0)))
	if opts.Init != nil {
		if len(opts.Init) != n {
			return Result{}, fmt.Errorf("policy: train: init has %d parameters, want %d", len(opts.Init), n)
		}
		copy(theta, opts.Init)
	}
	learners := make([]*Learner, W)
	for i, w := range workers {
		learners[i] = w.learner
	}
	round, err := NewRound(cfg.DP, learners, rand.New(rand.NewPCG(noiseSeed, 0)))
	if err != nil {
		return Result{}, err
	}
	evalEnv := newEnv()
	evalActor, err := NewActorFor(spec, cfg.PPO)
	if err != nil {
		return Result{}, err
	}
	var slots []*episodeSlot
	if opts.ContinueEpisodes {
		slots = make([]*episodeSlot, K)
		for i := range slots {
			e := newEnv()
			slots[i] = &episodeSlot{env: e, rng: rand.New(rand.NewPCG(userSeed^0x5107, uint64(i))), obs: make([]float64, spec.ObsDim), limit: max(e.MaxSteps(), 0)}
		}
	}

	res := Result{Spec: spec}
	recent := math.NaN()
	var avg []float64
	released := theta // what the learning curve evaluates
	if opts.AverageDecay > 0 {
		avg = make([]float64, n)
	}
	addPoint := func() {
		m, s := Evaluate(evalEnv, evalActor, released, curveEpisodes, rand.New(rand.NewPCG(evalSeed, uint64(res.Updates))))
		res.Curve = append(res.Curve, CurvePoint{Users: res.Users, Mean: m, Std: s, Update: res.Updates})
		recent = m
	}
	addPoint()
	if opts.OnRelease != nil {
		opts.OnRelease(0, 0, theta)
	}
	totalUpdates := (opts.Users + K - 1) / K
	var ctxErr error
	for res.Users < opts.Users {
		if ctxErr = ctx.Err(); ctxErr != nil {
			break
		}
		batch := min(K, opts.Users-res.Users)
		first := res.Users
		// A failed local update (not finite) contributes the zero vector
		// and keeps its place among the K (Round); an error that is not a
		// function of the user's data (w.err) stops the run.
		stride := min(W, batch) // Round.Run's workers for this batch
		gTilde, err := round.Run(batch, func(wi, slot int, gu []float64) error {
			w := workers[wi]
			if w.done == len(w.slots) || w.slots[w.done] != slot {
				// Round.Run hands worker wi the slots wi, wi+stride,
				// ... in order: roll out its next lockstepUsers of them.
				w.slots = w.slots[:0]
				for s := slot; s < batch && len(w.slots) < lockstepUsers; s += stride {
					w.slots = append(w.slots, s)
				}
				w.rollout(theta, uint64(first), userSeed, slots)
			}
			ok := w.update(gu, theta)
			if !ok {
				return ErrNonFinite
			}
			return nil
		})
		for _, w := range workers {
			if w.err != nil {
				return res, w.err
			}
		}
		if err != nil {
			return res, err
		}
		for slot := range batch {
			if _, failed := round.Local(slot); failed {
				res.Skipped++
			}
		}
		if opts.Diagnostics {
			res.Diagnostics = append(res.Diagnostics, diagnose(workers, round, batch, gTilde, K, nPi, res.Users+batch, cfg.DP))
		}
		eta := cfg.PPO.ServerLR
		if opts.AnnealServerLR {
			eta *= 1 - float64(res.Updates)/float64(totalUpdates)
		}
		ApplyUpdate(theta, gTilde, eta)
		if avg != nil {
			if res.Updates == 0 {
				copy(avg, theta)
				released = avg
			} else {
				floats.Scale(opts.AverageDecay, avg)
				floats.AddScaled(avg, 1-opts.AverageDecay, theta)
			}
		}
		round.Commit()
		res.Users += batch
		res.Updates++
		res.Steps = 0
		for _, w := range workers {
			res.Steps += w.steps
		}
		if res.Users%curveEvery == 0 || res.Users == opts.Users {
			addPoint()
		}
		if opts.OnRelease != nil {
			opts.OnRelease(res.Updates, res.Users, theta)
		}
		if opts.Progress != nil {
			opts.Progress(Progress{Users: res.Users, Updates: res.Updates, Steps: res.Steps, Elapsed: time.Since(start), RecentReturn: recent})
		}
	}
	res.Theta = theta
	if avg != nil && res.Updates > 0 {
		res.Average = avg
	}
	res.Elapsed = time.Since(start)
	return res, ctxErr
}

// diagnose summarises one update for TrainOptions.Diagnostics and resets the
// workers' sums of LocalStats.
func diagnose(workers []*trainWorker, round *Round, batch int, gTilde []float64, K, nPi, users int, dp DPConfig) UpdateDiag {
	d := UpdateDiag{Scope: DiagnosticsScope, Users: users}
	n := len(gTilde)
	sPi, sV := dp.clipNorms()
	mean := make([]float64, n)
	for u := range batch {
		g, failed := round.Local(u)
		if failed {
			continue
		}
		var a, b float64
		for i, v := range g {
			mean[i] += v / float64(K)
			if i < nPi {
				a += v * v
			} else {
				b += v * v
			}
		}
		a, b = math.Sqrt(a), math.Sqrt(b)
		d.PolicyNorm += a / float64(batch)
		d.ValueNorm += b / float64(batch)
		if a >= sPi*(1-1e-9) {
			d.PolicyClipped += 1 / float64(batch)
		}
		if b >= sV*(1-1e-9) {
			d.ValueClipped += 1 / float64(batch)
		}
	}
	var sp, sv, np, nv float64
	for i := range mean {
		e := gTilde[i] - mean[i]
		if i < nPi {
			sp += mean[i] * mean[i]
			np += e * e
		} else {
			sv += mean[i] * mean[i]
			nv += e * e
		}
	}
	d.SignalPolicy, d.SignalValue, d.NoisePolicy, d.NoiseValue = math.Sqrt(sp), math.Sqrt(sv), math.Sqrt(np), math.Sqrt(nv)
	var sum [5]float64
	cnt := 0
	for _, w := range workers {
		for i, v := range w.statSum {
			sum[i] += v
		}
		cnt += w.statN
		w.statSum, w.statN = [5]float64{}, 0
	}
	if cnt > 0 {
		f := 1 / float64(cnt)
		d.AdvMean, d.AdvAbs, d.ReturnMean, d.ValueLoss, d.Entropy = f*sum[0], f*sum[1], f*sum[2], f*sum[3], f*sum[4]
	}
	return d
}

// lane returns lane i, creating it (an environment from newEnv and
// full-length trajectory buffers) on first use.
func (w *trainWorker) lane(i int) *lane {
	for len(w.lanes) <= i {
		spec, T := w.spec, w.T
		pcg := rand.NewPCG(0, 0)
		l := &lane{pcg: pcg, rng: rand.New(pcg), own: w.newEnv()}
		l.tr = Trajectory{
			Obs:      make([]float64, (T+1)*spec.ObsDim),
			Rewards:  make([]float64, T),
			LogProbs: make([]float64, T),
		}
		if spec.Kind == ActionDiscrete {
			l.tr.Actions = make([]int, T)
		} else {
			l.tr.ContActions = make([]float64, T*spec.ActionDim)
			l.act.Vec = make([]float64, spec.ActionDim)
		}
		w.lanes = append(w.lanes, l)
	}
	return w.lanes[i]
}

// rollout runs the users of w.slots (user first+slot, generator
// PCG(seed, user)) side by side under theta: each for at most T steps of a
// fresh episode or, with slots (ContinueEpisodes), of its slot's running
// episode, with one batched forward of the policy per step over the users
// still running. Each user draws from its own generator in the order it
// would alone, and a row of the batched forward does not depend on the
// others, so every trajectory is the one the user would have on its own:
// the run does not depend on how users are grouped (Workers).
func (w *trainWorker) rollout(theta []float64, first, seed uint64, slots []*episodeSlot) {
	spec, T := w.spec, w.T
	od := spec.ObsDim
	n := len(w.slots)
	w.done = 0
	if cap(w.rngs) < n {
		w.obs = make([]float64, n*od)
		w.acts = make([]int, n)
		w.cacts = make([]float64, n*max(spec.ActionDim, 1))
		w.logps = make([]float64, n)
		w.rngs = make([]*rand.Rand, n)
		w.active = make([]int, n)
	}
	active := w.active[:0]
	for i, slot := range w.slots {
		l := w.lane(i)
		l.pcg.Seed(seed, first+uint64(slot))
		l.t, l.terminal, l.ended, l.es = 0, false, false, nil
		obs := l.tr.Obs[:od]
		l.env = l.own
		if slots == nil {
			l.env.Reset(l.rng, obs)
		} else {
			es := slots[slot]
			l.es, l.env = es, es.env
			if !es.running {
				es.env.Reset(es.rng, es.obs)
				es.running, es.steps = true, 0
			}
			copy(obs, es.obs)
		}
		active = append(active, i)
	}
	for t := 0; t < T && len(active) > 0; t++ {
		na := len(active)
		for r, i := range active {
			copy(w.obs[r*od:(r+1)*od], w.lanes[i].tr.Obs[t*od:(t+1)*od])
			w.rngs[r] = w.lanes[i].rng
		}
		if spec.Kind == ActionDiscrete {
			w.actor.ActDiscreteBatch(w.rngs[:na], theta, w.obs[:na*od], w.acts[:na], w.logps[:na])
		} else {
			w.actor.ActContinuousBatch(w.cacts[:na*spec.ActionDim], w.rngs[:na], theta, w.obs[:na*od], w.logps[:na])
		}
		still := active[:0]
		for r, i := range active {
			l := w.lanes[i]
			full := l.tr
			if spec.Kind == ActionDiscrete {
				full.Actions[t] = w.acts[r]
				l.act.Index = w.acts[r]
			} else {
				a := full.ContActions[t*spec.ActionDim : (t+1)*spec.ActionDim]
				copy(a, w.cacts[r*spec.ActionDim:(r+1)*spec.ActionDim])
				copy(l.act.Vec, a)
			}
			full.LogProbs[t] = w.logps[r]
			cur, next := full.Obs[t*od:(t+1)*od], full.Obs[(t+1)*od:(t+2)*od]
			copy(next, cur)
			rew, term, trunc := l.env.Step(l.act, next)
			full.Rewards[t] = rew
			l.t = t + 1
			if es := l.es; es != nil {
				// The episode ends at MaxSteps whatever the environment
				// says: EpisodeSegments relies on it.
				es.steps++
				trunc = trunc || (es.limit > 0 && es.steps >= es.limit)
			}
			if term || trunc {
				l.terminal, l.ended = term, true
				continue
			}
			still = append(still, i)
		}
		active = still
	}
	for i := range w.slots {
		l := w.lanes[i]
		w.steps += int64(l.t)
		if es := l.es; es != nil {
			es.running = !l.ended
			copy(es.obs, l.tr.Obs[l.t*od:(l.t+1)*od])
		}
	}
}

// update computes the local update of the next rolled-out user of the
// chunk into gu. It reports false if the update was not finite; other
// errors are kept in w.err.
func (w *trainWorker) update(gu, theta []float64) bool {
	l := w.lanes[w.done]
	w.done++
	spec := w.spec
	od := spec.ObsDim
	t := l.t
	full := l.tr
	tr := Trajectory{
		Obs:      full.Obs[:t*od],
		Rewards:  full.Rewards[:t],
		LogProbs: full.LogProbs[:t],
		FinalObs: full.Obs[t*od : (t+1)*od],
		Terminal: l.terminal,
	}
	if spec.Kind == ActionDiscrete {
		tr.Actions = full.Actions[:t]
	} else {
		tr.ContActions = full.ContActions[:t*spec.ActionDim]
	}
	err := w.learner.LocalUpdate(gu, theta, &tr, l.rng)
	st := &w.learner.stats
	w.statSum[0] += st.AdvMean
	w.statSum[1] += st.AdvAbs
	w.statSum[2] += st.ReturnMean
	w.statSum[3] += st.ValueLoss
	w.statSum[4] += st.Entropy
	w.statN++
	if errors.Is(err, ErrNonFinite) {
		return false
	}
	if err != nil {
		w.err = err
		return false
	}
	return true
}

// EpisodeSegments returns m, the most users of Train that hold steps of one
// episode. It follows from Train's code:
//
//   - fresh episodes (continueEpisodes false): each user resets the
//     environment and runs at most T = stepsPerUser steps, so an episode is
//     one user (m = 1), truncated after T steps;
//   - continuing episodes: slot i's user runs at most T steps of the slot's
//     episode, and a slot resets its environment only at the first step of
//     a user whose predecessor ended the episode. An episode therefore
//     starts at a user's first step, steps kT+1 .. (k+1)T are its (k+1)-th
//     user's, and Train ends it at the environment's MaxSteps (episodeSlot),
//     so it spans at most m = ceil(maxEpisodeSteps / T) users. An
//     environment without a finite MaxSteps (< 1) is an error: one episode
//     could then enter every release.
//
// Those m users are slot i's users of consecutive batches, and Train
// releases each batch in one release, so the episode enters at most m
// consecutive releases with one clipped update in each: the participation
// pattern EpisodePrivacy prices.
func EpisodeSegments(maxEpisodeSteps, stepsPerUser int, continueEpisodes bool) (int, error) {
	if stepsPerUser < 1 {
		return 0, fmt.Errorf("policy: episode segments: steps per user %d, want >= 1", stepsPerUser)
	}
	if !continueEpisodes {
		return 1, nil
	}
	if maxEpisodeSteps < 1 {
		return 0, fmt.Errorf("policy: continuing episodes need a finite episode length, the environment has MaxSteps %d: one episode could enter every release; start every user on a fresh episode", maxEpisodeSteps)
	}
	return (maxEpisodeSteps + stepsPerUser - 1) / stepsPerUser, nil
}

// EpisodePrivacy is the privacy of one episode in a run of Train, which may
// be weaker than that of one user: with continuing episodes an episode is
// up to Segments users in consecutive releases (EpisodeSegments).
type EpisodePrivacy struct {
	// Noise is the noise of the releases (DPConfig.Noise).
	Noise Noise
	// Segments is EpisodeSegments: the most users one episode is split into.
	Segments int
	// Releases is the most releases one episode enters: Segments, capped at
	// the run's ceil(Users / K) releases.
	Releases int
	// Sensitivity is the L2 sensitivity of one episode's updates in units of
	// one user's, the sensitivity the noise is calibrated for:
	// DPConfig.WindowSensitivity(Releases). It is sqrt(Releases) for
	// independent noise and 1 when Releases is 1.
	Sensitivity float64
}

// TrainEpisodePrivacy returns the EpisodePrivacy of Train(newEnv, cfg, opts)
// for an environment with the given MaxSteps (the same for every instance).
func TrainEpisodePrivacy(cfg Config, opts TrainOptions, maxEpisodeSteps int) (EpisodePrivacy, error) {
	if opts.Users < 1 || cfg.DP.UsersPerUpdate < 1 {
		return EpisodePrivacy{}, fmt.Errorf("policy: episode privacy: %d users, K = %d, want both >= 1", opts.Users, cfg.DP.UsersPerUpdate)
	}
	m, err := EpisodeSegments(maxEpisodeSteps, cfg.PPO.StepsPerUser, opts.ContinueEpisodes)
	if err != nil {
		return EpisodePrivacy{}, err
	}
	releases := (opts.Users + cfg.DP.UsersPerUpdate - 1) / cfg.DP.UsersPerUpdate
	ep := EpisodePrivacy{Noise: cfg.DP.Noise, Segments: m, Releases: min(m, releases)}
	if ep.Sensitivity, err = cfg.DP.WindowSensitivity(m, releases); err != nil {
		return EpisodePrivacy{}, err
	}
	return ep, nil
}

// Event returns the accountant event of one episode when every release has
// noise multiplier z: the Releases-fold composition of the Gaussian
// mechanism of multiplier z for independent noise (Dong, Roth and Su 2022,
// Cor. 3.3), one Gaussian mechanism of multiplier z / Sensitivity for
// correlated noise (Choquette-Choo et al. 2023, "Multi-Epoch Matrix
// Factorization Mechanisms for Private Machine Learning", Cor. 2.1 and
// Thm. 2.2; see DPConfig.WindowSensitivity).
func (e EpisodePrivacy) Event(z float64) accountant.Event {
	if e.fresh() {
		return accountant.Event{Q: 1, Z: z, Steps: e.Releases}
	}
	return accountant.Gaussian(z / e.Sensitivity)
}

// fresh reports whether the noise is fresh in every release
// (Mechanism.Fresh): an episode's releases then compose; an unknown kind
// (which Train refuses) counts as correlated, one Gaussian mechanism of
// z / Sensitivity, the bound that holds for every kind.
func (e EpisodePrivacy) fresh() bool {
	m, err := e.Noise.Mechanism()
	return err == nil && m.Fresh()
}

// Guarantees returns the exact analytic-Gaussian guarantees (Balle and
// Wang 2018, "Improving the Gaussian Mechanism for Differential Privacy",
// Thm. 8; accountant.Analytic) at noise multiplier z and delta of one
// episode (Event(z), the privacy unit) and of one segment (one user, in one
// release: the Gaussian mechanism of multiplier z).
func (e EpisodePrivacy) Guarantees(z, delta float64) (episode, segment accountant.Guarantee, err error) {
	if segment, err = (accountant.Analytic{}).Epsilon(delta, accountant.Gaussian(z)); err != nil {
		return episode, segment, err
	}
	if episode, err = (accountant.Analytic{}).Epsilon(delta, e.Event(z)); err != nil {
		return episode, segment, err
	}
	return episode, segment, nil
}

// Calibrate returns the smallest noise multiplier z (rounded up) whose
// per-episode epsilon at delta (Guarantees) is at most target: the
// Releases-fold composition is calibrated for independent noise, one
// Gaussian mechanism scaled by Sensitivity for correlated noise. The result
// is checked against the exact accountant and stepped up past any rounding,
// so it never exceeds target.
func (e EpisodePrivacy) Calibrate(target, delta float64) (float64, error) {
	steps := 1
	if e.fresh() {
		steps = e.Releases
	}
	z, err := accountant.Calibrate(accountant.Analytic{}, target, delta, 1, steps)
	if err != nil {
		return 0, err
	}
	if !e.fresh() {
		z *= e.Sensitivity
	}
	// z * rho / rho may round below the calibrated value: step up to the
	// first z whose epsilon is within the target.
	for range 64 {
		g, err := accountant.Analytic{}.Epsilon(delta, e.Event(z))
		if err != nil {
			return 0, err
		}
		if g.Epsilon <= target {
			return z, nil
		}
		z = math.Nextafter(z, math.Inf(1))
	}
	return 0, fmt.Errorf("policy: no noise multiplier reaches epsilon %v per episode", target)
}

// Evaluate runs episodes full episodes of env under the policy block of theta,
// sampling actions from the policy (the DPPG paper's protocol: 20 episodes),
// and returns the mean and the population standard deviation of the
// undiscounted returns. Every draw comes from rng. It panics if episodes < 1.
func Evaluate(env sims.Env, actor *Actor, theta []float64, episodes int, rng *rand.Rand) (mean, std float64) {
	if episodes < 1 {
		panic("policy: evaluate: episodes < 1")
	}
	spec := actor.spec
	obs := make([]float64, spec.ObsDim)
	var act sims.Action
	if spec.Kind == ActionContinuous {
		act.Vec = make([]float64, spec.ActionDim)
	}
	var sum, sumSq float64
	for range episodes {
		env.Reset(rng, obs)
		ret := 0.0
		for {
			if spec.Kind == ActionDiscrete {
				act.Index, _ = actor.ActDiscrete(rng, theta, obs)
			} else {
				actor.ActContinuous(act.Vec, rng, theta, obs)
			}
			r, term, trunc := env.Step(act, obs)
			ret += r
			if term || trunc {
				break
			}
		}
		sum += ret
		sumSq += ret * ret
	}
	mean = sum / float64(episodes)
	v := sumSq/float64(episodes) - mean*mean
	return mean, math.Sqrt(max(v, 0))
}
