package experiment

import (
	"context"
	"errors"
	"slices"
	"testing"

	"dprl/internal/progress"
)

// TestTrainRunErrorKinds: every refusal of TrainArgs.Run is a *TrainError
// whose kind says how a command lists it, and nothing runs.
func TestTrainRunErrorKinds(t *testing.T) {
	base := TrainArgs{Env: "cartpole", Algo: MethodDPPG, Users: 32, Delta: 1e-5, EvalEpisodes: 1, Episodes: 5}
	for _, tc := range []struct {
		name string
		edit func(*TrainArgs)
		set  []string
		want TrainErrorKind
	}{
		{"inapplicable", func(a *TrainArgs) { a.Algo = MethodPPO; a.Noise = "tree" }, []string{"Noise"}, SettingsSorted},
		{"plot format", func(a *TrainArgs) { a.Plot = "x.xyz" }, nil, SettingsAsGiven},
		{"dpsgd", func(a *TrainArgs) { a.Algo = "dpsgd-reinforce"; a.Z = -1 }, []string{"Z"}, SettingsByField},
		{"sac", func(a *TrainArgs) { a.Algo = MethodSAC; a.Env = "pendulum"; a.Steps = 0 }, nil, SettingsByField},
		{"loglinear env", func(a *TrainArgs) { a.Algo = LogLinearMethod }, nil, SettingsAsGiven},
		{"train", func(a *TrainArgs) { a.K = 0 }, []string{"K"}, SettingsByField},
		{"seeds", func(a *TrainArgs) { a.Seeds = 0 }, []string{"Seeds"}, SettingsAsGiven},
		{"sweep", func(a *TrainArgs) { a.Zs, a.Z = []float64{1}, 1 }, []string{"Zs", "Z"}, SettingsSorted},
	} {
		a := base
		tc.edit(&a)
		res, err := a.Run(context.Background(), func(f string) bool { return slices.Contains(tc.set, f) }, TrainHooks{
			Task: func(string) *progress.Task { t.Fatalf("%s: a run started", tc.name); return nil },
		})
		var te *TrainError
		if !errors.As(err, &te) || te.Kind != tc.want || res != nil {
			t.Errorf("%s: %v, %#v, want a *TrainError of kind %d", tc.name, res, err, tc.want)
		}
	}
}
