package main

import (
	"github.com/spf13/cobra"

	"dprl/experiment"
	"dprl/internal/progress"
	"dprl/policy/sac"
)

// runTrainSAC runs non-private online SAC (experiment.RunSAC): --env (a
// continuous-action simulator), --steps, --learning-starts, --hidden,
// --batch, --lr (actor, critics and temperature), --gamma,
// --eval-episodes, --seed, --seeds, --log-episodes, --json and --plot
// apply.
func runTrainSAC(cmd *cobra.Command, a *app, f *trainFlags) error {
	fl := cmd.Flags()
	c := experiment.DefaultSAC(f.Env)
	c.Steps, c.LearningStarts, c.Batch, c.EvalEpisodes, c.EpisodeLog, c.Replays = f.Steps, f.LearningStarts, f.Batch, f.EvalEpisodes, f.EpisodeLog, f.Replays
	if fl.Changed("hidden") {
		c.Hidden = f.Hidden
	}
	if fl.Changed("lr") {
		c.LR = f.LR
	}
	if fl.Changed("gamma") {
		c.Gamma = f.Gamma
	}
	if fl.Changed("seeds") {
		c.Seeds = f.Seeds
	}
	if err := f.usage(c.Validate()); err != nil {
		return err
	}
	c.Seed = seedFlag(cmd, "seed", f.seed)
	prog := a.task("sac")
	total := int64(c.Seeds * c.Steps)
	res, err := experiment.RunSAC(cmd.Context(), c, func(run int, p sac.Progress) {
		prog.Update(progress.Report{Done: int64(run*c.Steps + p.Steps), Total: total, Unit: "steps", Fields: []progress.Field{
			progress.F("run", run+1), progress.Ff("eval_return", "%.1f", p.EvalReturn), progress.F("updates", p.Updates),
			progress.F("privacy", "none (non-private)")}})
	})
	prog.Finish()
	if err := runError(err); err != nil {
		return err
	}
	return emitTrain(a, f, res)
}
