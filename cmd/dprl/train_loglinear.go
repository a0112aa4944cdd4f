package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/sims"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// algoLogLinear names log-linear DPPG on RiverSwim (Rio et al., App. C.2.2).
const algoLogLinear = "dppg-loglinear"

// riverMDP adapts sims' RiverSwim tables to policy.TabularMDP.
type riverMDP struct{ sims.Tabular }

func (riverMDP) Horizon() int                    { return sims.RiverSwimHorizon }
func (riverMDP) Start() int                      { return 0 }
func (m riverMDP) Transition(s, a int) []float64 { return m.P[s][a] }
func (m riverMDP) Reward(s, a int) float64       { return m.R[s][a] }

// logLinearRun is one (epsilon, trust region) configuration of the grid: the
// cumulative expected regret after every episode, averaged over seeds.
type logLinearRun struct {
	Epsilon    float64   `json:"epsilon"` // total per episode, policy and baseline composed
	Z          float64   `json:"z"`       // noise multiplier of each block
	Region     string    `json:"region"`
	Seeds      []uint64  `json:"seeds"`
	Final      []float64 `json:"final_regret"` // cumulative regret of each seed
	FinalValue []float64 `json:"final_value"`  // value of each seed's last policy
	Mean       []float64 `json:"mean_regret"`  // cumulative regret per episode, mean over seeds
}

// logLinearResult is the output of dprl train --algo dppg-loglinear.
type logLinearResult struct {
	Env       string         `json:"env"`
	Method    string         `json:"method"`
	P         float64        `json:"p"`
	Optimal   float64        `json:"optimal_value"`
	Episodes  int            `json:"episodes"`
	Delta     float64        `json:"delta"`
	ClipAtLR0 bool           `json:"clip_at_lr0"`
	Alpha     float64        `json:"alpha"`
	InitRight float64        `json:"init_right"` // starting logit gap right - left in every state
	Runs      []logLinearRun `json:"runs"`
}

// runTrainLogLinear runs log-linear DPPG (Table 2) on RiverSwim for every
// epsilon in --eps and trust region in --region over --seeds seeds, and
// reports the cumulative expected regret sum_k (V* - V^{pi_k}) (exact values
// from the model). The two blocks of an update (policy and linear baseline)
// are noised with the same z, calibrated with the analytic accountant so that
// their composition is at most the requested epsilon.
func runTrainLogLinear(cmd *cobra.Command, a *app, f *trainFlags) error {
	var p float64
	switch f.env {
	case "riverswim":
		p = 0.6
	case "riverswim-0.9":
		p = 0.9
	default:
		return usagef("train: --algo %s needs --env riverswim or riverswim-0.9, got %q", algoLogLinear, f.env)
	}
	var errs []string
	if f.episodes < 1 {
		errs = append(errs, fmt.Sprintf("--episodes %d: must be >= 1", f.episodes))
	}
	if !cmd.Flags().Changed("seeds") {
		f.seeds = 5
	} else if f.seeds < 1 {
		errs = append(errs, fmt.Sprintf("--seeds %d: must be >= 1", f.seeds))
	}
	if !(f.delta > 0 && f.delta < 1) {
		errs = append(errs, fmt.Sprintf("--delta %v: must be in (0, 1)", f.delta))
	}
	if math.IsNaN(f.initRight) || math.IsInf(f.initRight, 0) {
		errs = append(errs, fmt.Sprintf("--init-right %v: must be finite", f.initRight))
	}
	if !(f.alpha > 0) || math.IsInf(f.alpha, 0) {
		errs = append(errs, fmt.Sprintf("--alpha %v: the trust region size must be finite and > 0", f.alpha))
	}
	regions := make([]policy.TrustRegion, len(f.regions))
	for i, r := range f.regions {
		switch r {
		case "l2":
			regions[i] = policy.RegionL2
		case "kl":
			regions[i] = policy.RegionKL
		case "l2-markov":
			regions[i] = policy.RegionL2Markov
		default:
			errs = append(errs, fmt.Sprintf("--region %q: want l2, kl or l2-markov", r))
		}
	}
	zs := make([]float64, len(f.epsilons))
	for i, eps := range f.epsilons {
		z, err := accountant.Calibrate(accountant.Analytic{}, eps, f.delta, 1, 2)
		if err != nil {
			errs = append(errs, fmt.Sprintf("--eps %v: %v", eps, err))
		}
		zs[i] = z
	}
	if len(errs) > 0 {
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	seed, err := seedFlag(cmd, "seed", f.seed)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	tab, err := sims.RiverSwimModel(p)
	if err != nil {
		return err
	}
	m := riverMDP{tab}
	res := logLinearResult{Env: f.env, Method: algoLogLinear, P: p, Optimal: policy.OptimalTabular(m), Episodes: f.episodes, Delta: f.delta, ClipAtLR0: f.clipAtLR0, Alpha: f.alpha, InitRight: f.initRight}
	for i, z := range zs {
		g, err := accountant.Analytic{}.Epsilon(f.delta, accountant.Gaussian(z), accountant.Gaussian(z))
		if err != nil {
			return err
		}
		for j, region := range regions {
			run := logLinearRun{Epsilon: g.Epsilon, Z: z, Region: f.regions[j], Mean: make([]float64, f.episodes)}
			for s := range f.seeds {
				cfg := policy.DefaultLogLinearConfig()
				cfg.Z, cfg.Region, cfg.ClipAtLR0, cfg.Alpha = z, region, f.clipAtLR0, f.alpha
				l, err := policy.NewLogLinearLearner(m.NumStates(), m.NumActions(), cfg)
				if err != nil {
					return usageError{err}
				}
				// Start from the policy with logit gap theta(s, right) -
				// theta(s, left) = InitRight in every state (0: uniform, the
				// paper's start; the right-everywhere policy is optimal).
				for st := range m.NumStates() {
					l.Policy.Theta[st*2+1], l.Policy.Theta[st*2] = f.initRight/2, -f.initRight/2
				}
				sd := seed + uint64(s)
				rng := rand.New(rand.NewPCG(sd, uint64(1000*i+j)))
				var ep policy.Episode
				cum := 0.0
				for k := range f.episodes {
					cum += res.Optimal - policy.EvaluateTabular(m, l.Policy.Probs)
					run.Mean[k] += cum / float64(f.seeds)
					l.Policy.Rollout(m, rng, &ep)
					if _, err := l.Update(m, &ep, rng); err != nil {
						return fmt.Errorf("train: %w", err)
					}
				}
				run.Seeds = append(run.Seeds, sd)
				run.Final = append(run.Final, cum)
				run.FinalValue = append(run.FinalValue, policy.EvaluateTabular(m, l.Policy.Probs))
			}
			res.Runs = append(res.Runs, run)
		}
	}
	if f.plot != "" {
		if err := writeRegretPNG(f.plot, res); err != nil {
			return fmt.Errorf("train: --plot: %w", err)
		}
	}
	return emit(a.stdout, f.json, res, res.text)
}

func (r logLinearResult) text(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%s %s (p = %g, optimal value %.3f, %d episodes, delta %g, alpha %g, start logit gap %g, S at %s):\n", r.Env, r.Method, r.P, r.Optimal, r.Episodes, r.Delta, r.Alpha, r.InitRight, map[bool]string{false: "the current eta", true: "eta_0"}[r.ClipAtLR0]); err != nil {
		return err
	}
	for _, run := range r.Runs {
		n := len(run.Mean)
		// Regret slope (per episode) over the first and the last tenth.
		tenth := max(1, n/10)
		first := run.Mean[tenth-1] / float64(tenth)
		last := (run.Mean[n-1] - run.Mean[n-1-tenth]) / float64(tenth)
		mean, std := meanStd(run.Final)
		if _, err := fmt.Fprintf(w, "  epsilon %.3g (z = %.3f) %-3s cumulative regret %.1f ± %.1f over %d seeds; regret per episode first 10%% %.3f, last 10%% %.3f; final values %s\n",
			run.Epsilon, run.Z, run.Region, mean, std, len(run.Final), first, last, formatFloats(run.FinalValue)); err != nil {
			return err
		}
	}
	return nil
}

func meanStd(x []float64) (mean, std float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		std += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(std / float64(len(x)))
}

func formatFloats(x []float64) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(s, " ")
}

// writeRegretPNG plots the mean cumulative regret of every run against the
// episode number.
func writeRegretPNG(path string, r logLinearResult) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, log-linear DPPG (p = %g, mean of %d seeds)", r.Env, r.P, len(r.Runs[0].Final))
	p.X.Label.Text = "episodes"
	p.Y.Label.Text = "cumulative regret"
	colors := []plotColor{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}}
	p.Add(plotter.NewGrid())
	for i, run := range r.Runs {
		xy := make(plotter.XYs, len(run.Mean))
		for k, v := range run.Mean {
			xy[k] = plotter.XY{X: float64(k + 1), Y: v}
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		line.Color = colors[i%len(colors)]
		line.Width = vg.Points(1.5)
		if run.Epsilon < 2 {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("DPPG-%s, ε = %.2g", strings.ToUpper(run.Region), run.Epsilon), line)
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}
