package evaluate

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// IntervalMethod names gpope's interval in the output.
const IntervalMethod = "subsample-and-aggregate t"

// IntervalCovers says what gpope's interval covers, in the output.
const IntervalCovers = "the value GPOPE converges to on a part's n_b trajectories (the mean of its start value over data and noise at that size); any bias of the linear features, of the clip or of too few steps is not inside it"

// Interval is gpope's interval for the value at the public start
// distribution by sample and aggregate (Nissim, Raskhodnikova & Smith 2007,
// "Smooth sensitivity and sampling in private data analysis", §4): the log
// is split into Splits disjoint parts at random, GPOPE runs on each (its
// noise calibrated for a part's public size PartN), and the parts' start
// values v_b are aggregated by the Student-t interval
// mean ± t_{B-1}(1 - (1-Level)/2) s / sqrt(B). Every field is a private
// release (the v_b) or post-processing of them and of public inputs.
type Interval struct {
	Method string  `json:"method"`
	Level  float64 `json:"level"`
	Splits int     `json:"splits"`
	// PartN is the public n_b = floor(n / B) each part's sampling rate
	// batch/n_b is computed from.
	PartN int     `json:"n_per_part"`
	Mean  float64 `json:"mean"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	// PartValues are the B parts' start values v_b, in part order.
	PartValues []float64 `json:"part_values"`
	Covers     string    `json:"covers"`
}

// TInterval returns the mean of v and its two-sided Student-t interval at
// level: mean ± t_{B-1}(1 - (1-level)/2) s / sqrt(B), with s the sample
// standard deviation (divisor B-1) of the B = len(v) values (Student 1908;
// exact when the v_b are i.i.d. normal, and asymptotically valid for i.i.d.
// v_b of finite variance). It needs B >= 2 and 0 < level < 1.
func TInterval(v []float64, level float64) (mean, low, high float64, err error) {
	b := len(v)
	if b < 2 {
		return 0, 0, 0, errors.New("a t interval needs at least 2 values")
	}
	if !(level > 0 && level < 1) {
		return 0, 0, 0, errors.New("a t interval's level must be in (0, 1)")
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(b)
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	s := math.Sqrt(ss / float64(b-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(b - 1)}.Quantile(1 - (1-level)/2)
	h := t * s / math.Sqrt(float64(b))
	return mean, mean - h, mean + h, nil
}
