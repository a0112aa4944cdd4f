package vw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"dprl/experiment/bandit"
	"dprl/internal/chart"
	"dprl/sims"

	"github.com/rs/zerolog"
)

// Config is dprl bench vw: dprl's learners (Bandit: PPO, DPPG and the DP
// agent over NATS, as dprl sims bandit) and VW's on the same seeds, users
// per run and held-out users, and optionally the serving comparison.
type Config struct {
	// Bandit configures dprl's learners and the shared settings (Users,
	// Seeds, HeldOut, BaselineUsers).
	Bandit bandit.Config
	// NoDPRL skips dprl's learners (only VW's rows and the references).
	NoDPRL bool `flag:"no-dprl" usage:"skip dprl's learners (VW's rows and the references only)"`
	// Bin is the VW binary.
	Bin string `flag:"vw" usage:"the Vowpal Wabbit binary (vw, 9.x) (required)"`
	// Learners are VW's learners (>= 1).
	Learners []Learner
	// ServeDuration is each side's time in the serving comparison (0:
	// none), with the first learner's daemon, in ServeRounds rounds.
	ServeDuration time.Duration `flag:"serve" usage:"time of each side in the serving comparison (the agent's act path vs VW's daemon with the first --learner); 0: skip it" default:"4s"`
	ServeRounds   int           `flag:"serve-rounds" usage:"alternating rounds of the serving comparison" default:"4"`
	Logger        zerolog.Logger
	// Log, if not nil, receives one line per finished run.
	Log func(string)
}

// Validate reports every problem of the config.
func (c Config) Validate() error {
	var errs []error
	if c.Bin == "" {
		errs = append(errs, errors.New("vw: no VW binary"))
	}
	if len(c.Learners) == 0 {
		errs = append(errs, errors.New("vw: no VW learner"))
	}
	for _, l := range c.Learners {
		if err := l.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ServeDuration < 0 || (c.ServeDuration > 0 && c.ServeRounds < 1) {
		errs = append(errs, fmt.Errorf("vw: serve duration %v and rounds %d, want >= 0 and >= 1", c.ServeDuration, c.ServeRounds))
	}
	if err := c.Bandit.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Scope labels every result.
const Scope = "simulation only: exact expected clicks on the public simulator; VW's rows are non-private (no guarantee covers them), dprl's private rows carry their user-level epsilon"

// Result is dprl bench vw's outcome.
type Result struct {
	Scope string `json:"scope"`
	// VWVersion is the first line the binary's --version prints.
	VWVersion string `json:"vw_version"`
	// DPRL holds the references and dprl's learners (bandit.Run; no
	// methods with NoDPRL).
	DPRL bandit.Result `json:"dprl"`
	// VW holds VW's learners.
	VW []LearnerResult `json:"vw"`
	// Serving is the serving comparison (nil: not measured).
	Serving *Serving `json:"serving,omitempty"`
}

// Version runs bin --version and returns the first line of its output
// (for example "9.11.2 (git commit: )").
func Version(ctx context.Context, bin string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("vw: %s --version: %w: %s", bin, err, clip(out.Bytes()))
	}
	v, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	return strings.TrimSpace(v), nil
}

// Run performs the measurement: the serving comparison first (so that a
// failure there is cheap), then VW's learners, then dprl's.
func Run(ctx context.Context, c Config) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	ver, err := Version(ctx, c.Bin)
	if err != nil {
		return Result{}, err
	}
	res := Result{Scope: Scope, VWVersion: ver}
	if c.ServeDuration > 0 {
		s, err := Serve(ctx, ServeConfig{Bin: c.Bin, Learner: c.Learners[0], Duration: c.ServeDuration, Rounds: c.ServeRounds, Logger: c.Logger})
		if err != nil {
			return res, err
		}
		res.Serving = &s
	}
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		return res, err
	}
	ev, err := bandit.HeldOutEvaluator(env, c.Bandit.HeldOut)
	if err != nil {
		return res, err
	}
	for _, l := range c.Learners {
		lr, err := RunLearner(ctx, c.Bin, l, env, c.Bandit.Users, c.Bandit.Seeds, ev, c.Log)
		if err != nil {
			return res, err
		}
		res.VW = append(res.VW, lr)
	}
	if c.NoDPRL {
		res.DPRL = bandit.Result{Scope: bandit.Scope, Env: bandit.EnvName, Users: c.Bandit.Users, Seeds: c.Bandit.Seeds,
			Baselines: bandit.ReferenceBaselines(env, c.Bandit.BaselineUsers), HeldOutOracle: ev.Oracle()}
		return res, nil
	}
	bc := c.Bandit
	bc.Log = c.Log
	res.DPRL, err = bandit.Run(ctx, bc)
	return res, err
}

// WriteText writes one table: the references, dprl's learners and VW's,
// each with its online expected click (mean over the run's users of the
// expected click of what served them), its final policy's expected click
// on the held-out users and its cumulative regret; then the serving
// comparison.
func (r Result) WriteText(w io.Writer) error {
	d := r.DPRL
	b := d.Baselines
	n := float64(d.Users)
	fmt.Fprintf(w, "%s: %d users per run, seeds %v; %s\n", d.Env, d.Users, d.Seeds, Scope)
	fmt.Fprintf(w, "VW: %s\n", r.VWVersion)
	fmt.Fprintf(w, "%-58s %6s %18s %18s %18s\n", "method", "user ε", "online click", "held-out click", "regret")
	row := func(name, eps string, on, onStd, ho, hoStd, reg, regStd float64) {
		fmt.Fprintf(w, "%-58s %6s %9.4f ± %6.4f %9.4f ± %6.4f %9.0f ± %6.0f\n", name, eps, on, onStd, ho, hoStd, reg, regStd)
	}
	row("uniform random item", "-", b.Uniform, 0, b.Uniform, 0, n*(b.Oracle-b.Uniform), 0)
	row(fmt.Sprintf("best fixed item (%d)", b.BestArm), "-", b.BestFixed, 0, b.BestFixed, 0, n*(b.Oracle-b.BestFixed), 0)
	for _, m := range d.Methods {
		eps := "∞"
		if m.UserEpsilon != nil {
			eps = fmt.Sprintf("%g", *m.UserEpsilon)
		}
		reg := 0.0
		if len(m.Regret) > 0 {
			reg = m.Regret[len(m.Regret)-1]
		}
		// The mean value of the versions that served the users, against
		// the held-out oracle (bandit.Method.Regret).
		fmt.Fprintf(w, "%-58s %6s %9.4f %8s %9.4f ± %6.4f %9.0f %8s\n", m.Label(), eps, d.HeldOutOracle-reg/n, "", m.FinalMean, m.FinalStd, reg, "")
	}
	for _, l := range r.VW {
		row(l.Label()+" (non-private)", "∞", l.OnlineMean, l.OnlineStd, l.HeldOutMean, l.HeldOutStd, l.RegretMean, l.RegretStd)
	}
	fmt.Fprintf(w, "per-user oracle: %.4f on the references' users, %.4f on the held-out users\n", b.Oracle, d.HeldOutOracle)
	if len(d.Methods) > 0 {
		fmt.Fprintf(w, "user ε at δ = %g: one session per user, each in one release (DPPG's update, the linear bandit's block)\n", d.Delta)
	}
	for _, l := range r.VW {
		fmt.Fprintf(w, "%s: held-out click of its most probable item %.4f ± %.4f; %.0f users/s served and learned\n", l.Label(), l.GreedyMean, l.GreedyStd, meanRate(l.Runs))
	}
	fmt.Fprintf(w, "online click: dprl's rows, the held-out oracle minus regret/users (each policy version scored on the held-out users); VW's, the exact expected click of the PMF that served each user; regret: cumulative expected clicks lost to the per-user oracle; ± is the std over seeds\n")
	if s := r.Serving; s != nil {
		for _, x := range []ServeSide{s.Agent, s.VW} {
			fmt.Fprintf(w, "serving, %s: %.0f req/s; decision p50 %.3f ms, p99 %.3f ms; feedback p50 %.3f ms, p99 %.3f ms; all p50 %.3f ms, p99 %.3f ms\n",
				x.Server, x.RPS, x.DecideP50Ms, x.DecideP99Ms, x.FeedbackP50Ms, x.FeedbackP99Ms, x.P50Ms, x.P99Ms)
		}
		fmt.Fprintf(w, "serving: one client goroutine and one persistent connection per side, the same loop and users, %g s each in %d alternating rounds, on this machine\n", s.Seconds, s.Rounds)
	}
	return nil
}

func meanRate(runs []SeedRun) float64 {
	s := 0.0
	for _, r := range runs {
		s += r.UsersPerSec
	}
	return s / float64(max(1, len(runs)))
}

// Plot draws the cumulative regret against the per-user oracle of every
// learner, dprl's and VW's (mean over seeds), and of the uniform and
// best-fixed-item policies, against users in arrival order, to path
// (format from its extension).
func (r Result) Plot(path string) error {
	d := r.DPRL
	b := d.Baselines
	n := float64(d.Users)
	c := chart.Chart{
		Title:  fmt.Sprintf("%s: cumulative regret vs the per-user oracle, VW beside dprl (mean of %d seeds; simulation only)", d.Env, len(d.Seeds)),
		XLabel: "users (one session each, in arrival order)", YLabel: "cumulative expected regret (clicks)",
		Width: 8, Height: 5,
	}
	// The references grey and olive, then every learner, dprl's and VW's,
	// in its own colour.
	c.Series = append(c.Series,
		chart.Series{Label: "uniform random item", X: []float64{0, n}, Y: []float64{0, n * (b.Oracle - b.Uniform)}, Dashed: true, Color: chart.Grey},
		chart.Series{Label: fmt.Sprintf("best fixed item (%d)", b.BestArm), X: []float64{0, n}, Y: []float64{0, n * (b.Oracle - b.BestFixed)}, Dashed: true, Color: chart.Olive})
	curve := func(label string, users []int, regret []float64, col chart.Color) {
		s := chart.Series{Label: label, Y: regret, Color: col}
		for _, u := range users {
			s.X = append(s.X, float64(u))
		}
		c.Series = append(c.Series, s)
	}
	for i, m := range d.Methods {
		curve(m.Label(), m.RegretUsers, m.Regret, chart.Distinct(i))
	}
	for i, l := range r.VW {
		curve(l.Label()+" (non-private)", l.RegretUsers, l.Regret, chart.Distinct(len(d.Methods)+i))
	}
	return c.Save(path)
}
