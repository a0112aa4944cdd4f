package experiment

import (
	"context"
	"errors"
	"io"

	"dprl/internal/atomicfile"
	"dprl/internal/chart"
	"dprl/internal/progress"
	"dprl/policy"
	"dprl/policy/sac"
)

// TrainReport is the result of a dprl train run, printed as text or JSON.
type TrainReport interface {
	WriteText(w io.Writer) error
}

// TrainHooks are the callbacks of TrainArgs.Run: Task (required) starts
// the progress task of a run ("training" or "sac"); Evaluated and Point
// are TrainArgsHooks'.
type TrainHooks struct {
	Task      func(what string) *progress.Task
	Evaluated func(TrainResult)
	Point     func(SweepPoint)
}

// TrainErrorKind says what caused a *TrainError and, for the settings,
// the order in which a command lists the messages of its joined errors.
type TrainErrorKind int

// The kinds of a *TrainError.
const (
	SettingsAsGiven TrainErrorKind = iota // the settings, the messages in Err's order
	SettingsByField                       // the settings, the messages in the order of TrainArgs' fields
	SettingsSorted                        // the settings, the messages sorted as rendered
	LearnerRejected                       // a configuration the learner rejects (ConfigError's Err)
	RunFailed                             // the run failed; Err names no flags a command renders
	RunFailedNamed                        // the run failed; Err's fields are rendered as flags
)

// TrainError is an error of TrainArgs.Run: Err, with its kind.
type TrainError struct {
	Err  error
	Kind TrainErrorKind
}

// Error returns Err's message.
func (e *TrainError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *TrainError) Unwrap() error { return e.Err }

// trainError returns err as a *TrainError of kind, or nil for a nil err.
func trainError(err error, kind TrainErrorKind) error {
	if err == nil {
		return nil
	}
	return &TrainError{err, kind}
}

// ranWith is the error of a run: a *ConfigError's Err is
// LearnerRejected, any other RunFailed.
func ranWith(err error) error {
	if cerr := (*ConfigError)(nil); errors.As(err, &cerr) {
		return trainError(cerr.Err, LearnerRejected)
	}
	return trainError(err, RunFailed)
}

// Run refuses the settings Algo would ignore (Inapplicable) and a Plot of
// no known format, then runs Algo: DPSGD, LogLinear (writing its trace to
// Diag, if given), SAC, or the dppg or ppo plan of Train once per seed
// (RunSeeds) or over Zs (Sweep); it draws the figure to Plot, if given.
// Every error is a *TrainError.
func (a TrainArgs) Run(ctx context.Context, set func(string) bool, hooks TrainHooks) (TrainReport, error) {
	if err := a.Inapplicable(set); err != nil {
		return nil, trainError(err, SettingsSorted)
	}
	if _, err := chart.FormatOf(a.Plot); a.Plot != "" && err != nil {
		return nil, trainError(fields.Errorf("{Plot}: %v", err), SettingsAsGiven)
	}
	switch a.Algo {
	case policy.AlgoDPSGDReinforce, policy.AlgoDPSGDDQN:
		c := a.DPSGD(set)
		if err := c.Validate(); err != nil {
			return nil, trainError(err, SettingsByField)
		}
		res, err := RunDPSGD(ctx, c, nil)
		if err != nil {
			return nil, ranWith(err)
		}
		return res, nil
	case LogLinearMethod:
		c, err := a.LogLinear(set)
		if err != nil {
			return nil, trainError(err, SettingsAsGiven)
		}
		prog := hooks.Task("training")
		res, err := RunLogLinear(ctx, c, prog.Counter(c.TotalEpisodes(), "episodes"))
		prog.Finish()
		if cerr := (*ConfigError)(nil); errors.As(err, &cerr) {
			return nil, trainError(cerr.Err, SettingsAsGiven)
		} else if err != nil {
			return nil, trainError(err, RunFailed)
		}
		if a.Diag != "" {
			if err := atomicfile.Write(a.Diag, 0o644, res.WriteTrace); err != nil {
				return nil, trainError(fields.Errorf("{Diag}: %w", err), RunFailedNamed)
			}
		}
		return a.plotted(res, nil)
	case MethodSAC:
		c := a.SAC(set)
		if err := c.Validate(); err != nil {
			return nil, trainError(err, SettingsByField)
		}
		prog := hooks.Task("sac")
		res, err := RunSAC(ctx, c, func(run int, p sac.Progress) {
			prog.Update(progress.Report{Done: int64(run*c.Steps + p.Steps), Total: int64(c.Seeds * c.Steps), Unit: "steps", Fields: []progress.Field{
				progress.F("run", run+1), progress.Ff("eval_return", "%.1f", p.EvalReturn), progress.F("updates", p.Updates),
				progress.F("privacy", "none (non-private)")}})
		})
		prog.Finish()
		return a.plotted(res, ranWith(err))
	}
	return a.runPlan(ctx, set, hooks)
}

// runPlan runs the dppg or ppo plan of Train: once per seed, or over Zs.
func (a TrainArgs) runPlan(ctx context.Context, set func(string) bool, hooks TrainHooks) (TrainReport, error) {
	t, perr := a.Train(set)
	plan, err := t.Plan()
	if cerr := (*ConfigError)(nil); errors.As(err, &cerr) { // a combination the learner rejects
		if perr == nil {
			return nil, trainError(cerr.Err, LearnerRejected)
		}
		err = nil // reported once the settings parse
	}
	if err := errors.Join(perr, err); err != nil {
		return nil, trainError(err, SettingsByField)
	}
	n, err := a.Runs(set)
	if err != nil {
		return nil, trainError(err, SettingsAsGiven)
	}
	if err := a.SweepErrors(set); set("Zs") && err != nil {
		return nil, trainError(err, SettingsSorted)
	}
	prog := hooks.Task("training")
	if set("Zs") {
		res, err := a.Sweep(ctx, plan, n, set, TrainArgsHooks{Task: prog, Point: hooks.Point})
		prog.Finish()
		return a.plotted(res, ranWith(err))
	}
	res, err := a.RunSeeds(ctx, plan, n, set, TrainArgsHooks{Task: prog, Evaluated: hooks.Evaluated})
	prog.Finish()
	return a.plotted(res, trainError(err, RunFailedNamed))
}

// plotted draws res to Plot, if given, and returns it; or returns err, if
// not nil.
func (a TrainArgs) plotted(res TrainOutput, err error) (TrainReport, error) {
	if err != nil {
		return nil, err
	}
	if a.Plot != "" {
		if err := res.Plot(a.Plot); err != nil {
			return nil, trainError(fields.Errorf("{Plot}: %w", err), RunFailedNamed)
		}
	}
	return res, nil
}
