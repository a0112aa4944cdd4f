package evaluate

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"dprl/ledger/accountant"
)

// WriteText writes the result as "dprl offline gtd2" prints it: the
// estimate and the guarantee it is covered by (or that it has none), then,
// under a NotCovered heading, the --non-private statistics of the private
// log when the run was asked for them.
func (o *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "method:      %s (target %s, features %s, gamma %g)\n", o.Method, o.Target, o.Features, o.Gamma)
	if o.Value != nil {
		fmt.Fprintf(&b, "value:       %.6g at the start distribution", *o.Value)
		if o.TrueValue != nil {
			fmt.Fprintf(&b, " (true %.6g)", *o.TrueValue)
		}
		fmt.Fprintln(&b)
	} else {
		fmt.Fprintln(&b, "value:       - (give --env for a public start distribution)")
	}
	if iv := o.Interval; iv != nil {
		fmt.Fprintf(&b, "interval:    [%.6g, %.6g] %g%%, %s over %d disjoint random parts of n/B = %d trajectories; covers %s\n",
			iv.Low, iv.High, 100*iv.Level, iv.Method, iv.Splits, iv.PartN, iv.Covers)
		fmt.Fprintf(&b, "parts:       %s (each part's value)\n", fmtVec(iv.PartValues))
	}
	if o.MSPBE != nil {
		fmt.Fprintf(&b, "MSPBE:       %.6g, %s\n", *o.MSPBE, o.MSPBEKind)
	} else {
		fmt.Fprintf(&b, "MSPBE:       - %s\n", o.MSPBEKind)
	}
	fmt.Fprintf(&b, "weights:     %s\n", fmtVec(o.Weights))
	if !o.Private {
		fmt.Fprintln(&b, "privacy:     NONE: this estimate is not differentially private (not charged)")
	} else {
		fmt.Fprintf(&b, "privacy:     (%s, %g)-DP per trajectory (added or removed), %s\n", accountant.FormatEpsilon(o.Epsilon), o.Delta, o.Accountant)
		if o.Method == string(GPOPE) {
			if iv := o.Interval; iv != nil {
				fmt.Fprintf(&b, "noise:       in each of %d parts: z = %.4g on clip %g, %d steps, Poisson sampling of expected batch %g of n/B = %d of the n = %d trajectories; the parts are disjoint, so the run costs one part's (parallel composition)\n",
					iv.Splits, o.NoiseMultiplier, o.Clip, o.Iters, o.Batch, iv.PartN, o.NTrajectories)
			} else {
				fmt.Fprintf(&b, "noise:       z = %.4g on clip %g, %d steps, Poisson sampling of expected batch %g of n = %d trajectories\n", o.NoiseMultiplier, o.Clip, o.Iters, o.Batch, o.NTrajectories)
			}
			fmt.Fprintf(&b, "public n:    %s\n", o.NSource)
		} else {
			fmt.Fprintf(&b, "noise:       Gaussian on a smooth sensitivity bound, from public reward bounds [%g, %g] (return range %.4g); its scale depends on the data and is not released\n", o.RewardBounds[0], o.RewardBounds[1], o.ReturnRange)
		}
		fmt.Fprintf(&b, "ledger:      entry %d; dataset spent epsilon %s", o.LedgerSeq, accountant.FormatEpsilon(o.DatasetSpent))
		if o.Seeded {
			fmt.Fprint(&b, " (seeded run)")
		}
		fmt.Fprintln(&b)
	}
	if o.Plot != "" {
		fmt.Fprintf(&b, "plot:        %s\n", o.Plot)
	}
	if np := o.NonPrivate; np != nil {
		fmt.Fprintf(&b, "\n%s (--non-private): statistics of the private log\n", np.Warning)
		fmt.Fprintf(&b, "  dataset:   %s\n", np.DatasetID)
		fmt.Fprintf(&b, "  data:      %d trajectories, %d transitions\n", np.NTrajectories, np.NTransitions)
		if np.MSPBE != nil {
			fmt.Fprintf(&b, "  MSPBE:     %.6g with the private log's moments\n", *np.MSPBE)
		} else {
			fmt.Fprintln(&b, "  MSPBE:     - (not finite with the private log's moments)")
		}
		if g := np.GPOPE; g != nil {
			fmt.Fprintf(&b, "  gradients: %d sampled, %d clipped, %d zeroed (not finite)\n", g.Sampled, g.Clipped, g.Zeroed)
		}
		if l := np.LSW; l != nil {
			fmt.Fprintf(&b, "  noise:     sigma = %.4g per weight (Psi %.4g, %d states visited)\n", l.Sigma, l.Psi, l.Visited)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtVec formats a vector with 4 significant digits per component.
func fmtVec(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'g', 4, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
