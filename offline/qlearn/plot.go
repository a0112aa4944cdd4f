package qlearn

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"

	"dprl/internal/chart"
	"dprl/internal/jsonstrict"
	"dprl/ledger/accountant"
	"dprl/sims"
)

// ReadResult reads a Result written by dprl offline learn --json.
func ReadResult(path string) (Result, error) {
	var r Result
	if err := jsonstrict.ReadFile(path, &r); err != nil {
		return Result{}, err
	}
	if r.Env == "" || r.Algo == "" || r.Mode == "" {
		return Result{}, fmt.Errorf("%s: not a dprl offline learn result", path)
	}
	return r, nil
}

// RandomReturn is the mean return of the uniformly random policy on env
// over episodes episodes (seeded: a public reference, no data).
func RandomReturn(env string, episodes int, seed uint64) (float64, error) {
	e, err := sims.New(env)
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x7a6e))
	obs := make([]float64, e.ObservationSpace().Dim())
	n := e.ActionSpace().N
	var s float64
	for range episodes {
		e.Reset(rng, obs)
		for {
			r, term, trunc := e.Step(sims.Action{Index: rng.IntN(n)}, obs)
			s += r
			if term || trunc {
				break
			}
		}
	}
	return s / float64(episodes), nil
}

// SummarizeFiles reads the results of dprl offline learn in paths
// (ReadResult) and summarises them (Summarize), each env's normalised by
// the random policy's return (RandomReturn over 1000 episodes, seed 1).
// An env without a simulator is an error naming the file of its first
// result.
func SummarizeFiles(paths []string) (Groups, error) {
	results := make([]Result, len(paths))
	for i, path := range paths {
		r, err := ReadResult(path)
		if err != nil {
			return nil, err
		}
		results[i] = r
	}
	random := map[string]float64{}
	for i, r := range results {
		if _, ok := random[r.Env]; !ok {
			ret, err := RandomReturn(r.Env, 1000, 1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", paths[i], err)
			}
			random[r.Env] = ret
		}
	}
	return Summarize(results, random), nil
}

// Group is one configuration's runs (seeds): env, learner, mode and the
// dataset's total epsilon (the SVT release's and the learner's for a
// selective run), with the mean and spread of the runs' returns (the
// paper's metric, Result.LastReturn) and of the normalised returns (0: the random policy, 1: the mean of the
// non-private runs of the same env and learner).
type Group struct {
	Env     string  `json:"env"`
	Algo    Algo    `json:"algo"`
	Mode    string  `json:"mode"`
	Epsilon float64 `json:"epsilon,omitempty"`
	Runs    int     `json:"runs"`
	Return  float64 `json:"mean_return"`
	Std     float64 `json:"std_return"`
	// Normalised and NormStd are the normalised mean and standard
	// deviation (NaN without a non-private reference).
	Normalised float64 `json:"normalised"`
	NormStd    float64 `json:"normalised_std"`
	Random     float64 `json:"random_return"`
}

// Groups are the configurations of a set of results.
type Groups []Group

// Summarize groups results by env, learner, mode and total epsilon
// (rounded to 0.01), and normalises each by the random policy's return
// (random, by env) and the non-private runs' mean.
func Summarize(rs []Result, random map[string]float64) Groups {
	type key struct {
		env  string
		algo Algo
		mode string
		eps  float64
	}
	runs := map[key][]float64{}
	for _, r := range rs {
		k := key{r.Env, r.Algo, r.Mode, 0}
		if r.Private {
			k.eps = accountant.Ceil(r.DatasetSpent, 3) // grouped rounded up, as printed
		}
		v := r.Return
		if len(r.Curve) > 0 {
			v = lastReturn(r.Curve, r.Steps)
		}
		runs[k] = append(runs[k], v)
	}
	var gs Groups
	for k, v := range runs {
		g := Group{Env: k.env, Algo: k.algo, Mode: k.mode, Epsilon: k.eps, Runs: len(v), Random: random[k.env]}
		g.Return, g.Std = meanStd(v)
		g.Normalised, g.NormStd = math.NaN(), math.NaN()
		if ref, ok := runs[key{k.env, k.algo, "non-private", 0}]; ok {
			top, _ := meanStd(ref)
			if d := top - g.Random; d != 0 {
				norm := make([]float64, len(v))
				for i, x := range v {
					norm[i] = (x - g.Random) / d
				}
				g.Normalised, g.NormStd = meanStd(norm)
			}
		}
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b Group) int {
		return cmp.Or(cmp.Compare(a.Env, b.Env), cmp.Compare(a.Algo, b.Algo), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Epsilon, b.Epsilon))
	})
	return gs
}

// meanStd returns the mean and sample standard deviation of v (0 for one
// value).
func meanStd(v []float64) (mean, std float64) {
	mean, std = stat.MeanStdDev(v, nil)
	if len(v) == 1 {
		std = 0
	}
	return mean, std
}

// WriteText writes one line per configuration.
func (gs Groups) WriteText(w io.Writer) error {
	for _, g := range gs {
		eps := "-"
		if g.Epsilon > 0 {
			eps = accountant.FormatEpsilon(g.Epsilon)
		}
		if _, err := fmt.Fprintf(w, "%-9s %-4s %-12s epsilon %-5s %d runs: return %8.1f ± %6.1f  normalised %.2f ± %.2f (random %.1f)\n",
			g.Env, g.Algo, g.Mode, eps, g.Runs, g.Return, g.Std, g.Normalised, g.NormStd, g.Random); err != nil {
			return err
		}
	}
	return nil
}

// Plot draws the normalised return against the dataset's total epsilon,
// one series per env, learner and private mode, with ±1 std bars over
// seeds, and the non-private reference at 1.
func (gs Groups) Plot(path string) error {
	series := map[string]*chart.Series{}
	var order []string
	var xs []float64
	for _, g := range gs {
		if g.Epsilon == 0 || math.IsNaN(g.Normalised) {
			continue
		}
		name := fmt.Sprintf("%s %s, %s", g.Env, g.Algo, g.Mode)
		s, ok := series[name]
		if !ok {
			s = &chart.Series{Label: name, SpreadLabel: "", Points: true}
			series[name] = s
			order = append(order, name)
		}
		s.X, s.Y, s.YErr = append(s.X, g.Epsilon), append(s.Y, g.Normalised), append(s.YErr, g.NormStd)
		xs = append(xs, g.Epsilon)
	}
	if len(order) == 0 {
		return fmt.Errorf("qlearn: no private result with a non-private reference to plot")
	}
	c := chart.Chart{Title: "expert-level DP offline RL: normalised return (0 random, 1 non-private)", XLabel: "epsilon (dataset total, per expert)", YLabel: "normalised return"}
	for i, n := range order {
		s := *series[n]
		if i == 0 {
			s.SpreadLabel = "± 1 std over seeds"
		}
		s.Dashed = slices.Contains([]string{"dp-sgd"}, modeOf(n))
		c.Series = append(c.Series, s)
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	// Room above the data for the legend (one line per series).
	top := 1.0
	for _, s := range c.Series {
		for i, y := range s.Y {
			top = max(top, y+s.YErr[i])
		}
	}
	c.YMin, c.YMax = min(0, -0.05*top), top*(1.15+0.12*float64(len(c.Series)+2))
	c.Series = append(c.Series, chart.Series{Label: "non-private", X: []float64{lo, hi}, Y: []float64{1, 1}, Color: chart.Color{R: 0x60, G: 0x60, B: 0x60, A: 0xff}, Dashed: true})
	return c.Save(path)
}

// modeOf returns the mode at the end of a series name.
func modeOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == ' ' {
			return name[i+1:]
		}
	}
	return name
}
