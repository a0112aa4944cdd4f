package bandit

import (
	"fmt"
	"io"

	"dprl/internal/chart"
)

// WriteText writes the measurement as a table: the reference policies, then
// each learner's expected click (mean ± std over seeds), its share of the
// non-private gain over a random item and its cumulative regret.
func (r Result) WriteText(w io.Writer) error {
	b := r.Baselines
	fmt.Fprintf(w, "%s: %d users per run, %d seeds; %s\n", r.Env, r.Users, len(r.Seeds), Scope)
	fmt.Fprintf(w, "reference policies (%d users): uniform %.4f, best fixed item (%d) %.4f, per-user oracle %.4f\n",
		b.Users, b.Uniform, b.BestArm, b.BestFixed, b.Oracle)
	fmt.Fprintf(w, "%-44s %8s %7s %6s %18s %9s %12s\n", "method", "user ε", "z", "K", "expected click", "% gain", "regret")
	row := func(name, eps, z, k string, mean, std, gain, regret float64) {
		fmt.Fprintf(w, "%-44s %8s %7s %6s %9.4f ± %6.4f %8.1f%% %12.1f\n", name, eps, z, k, mean, std, gain, regret)
	}
	ppo := 0.0
	if len(r.Methods) > 0 {
		ppo = r.Methods[0].FinalMean
	}
	gain := func(v float64) float64 { return 100 * (v - b.Uniform) / (ppo - b.Uniform) }
	n := float64(r.Users)
	row("uniform random item", "-", "-", "-", b.Uniform, 0, gain(b.Uniform), n*(b.Oracle-b.Uniform))
	row(fmt.Sprintf("best fixed item (%d)", b.BestArm), "-", "-", "-", b.BestFixed, 0, gain(b.BestFixed), n*(b.Oracle-b.BestFixed))
	for _, m := range r.Methods {
		eps := "∞"
		if m.UserEpsilon != nil {
			eps = fmt.Sprintf("%g", *m.UserEpsilon)
		}
		reg := 0.0
		if len(m.Regret) > 0 {
			reg = m.Regret[len(m.Regret)-1]
		}
		row(m.Label(), eps, fmt.Sprintf("%.3g", m.Z), fmt.Sprint(m.K), m.FinalMean, m.FinalStd, m.GainPct, reg)
	}
	_, err := fmt.Fprintf(w, "user ε at δ = %g: one session per user, at most one update each (the Gaussian mechanism of one release, analytic); regret: cumulative expected clicks lost to the per-user oracle, users in arrival order, mean over seeds\n", r.Delta)
	return err
}

// Plot draws the cumulative regret against the per-user oracle of every
// learner (mean over seeds) and of the uniform and best-fixed-item
// policies, against users in arrival order, to path (format from its
// extension).
func (r Result) Plot(path string) error {
	b := r.Baselines
	n := float64(r.Users)
	c := chart.Chart{
		Title:  fmt.Sprintf("%s: cumulative regret vs the per-user oracle (mean of %d seeds; simulation only)", r.Env, len(r.Seeds)),
		XLabel: "users (one session each, in arrival order)", YLabel: "cumulative expected regret (clicks)",
		Width: 8, Height: 5,
	}
	c.Series = append(c.Series,
		chart.Series{Label: "uniform random item", X: []float64{0, n}, Y: []float64{0, n * (b.Oracle - b.Uniform)}, Dashed: true, Color: chart.Grey},
		chart.Series{Label: fmt.Sprintf("best fixed item (%d)", b.BestArm), X: []float64{0, n}, Y: []float64{0, n * (b.Oracle - b.BestFixed)}, Dashed: true, Color: chart.Olive})
	for i, m := range r.Methods {
		s := chart.Series{Label: m.Label(), Y: m.Regret, Color: chart.Distinct(i)}
		for _, u := range m.RegretUsers {
			s.X = append(s.X, float64(u))
		}
		c.Series = append(c.Series, s)
	}
	return c.Save(path)
}
