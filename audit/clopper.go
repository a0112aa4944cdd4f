package audit

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearsonUpper returns the one-sided Clopper-Pearson upper confidence
// bound on a binomial proportion p after k successes in n trials: the
// smallest u with P(Binomial(n, u) <= k) <= alpha, which is the
// (1 - alpha)-quantile of Beta(k + 1, n - k) for k < n, and 1 for k = n
// (Clopper & Pearson 1934, "The use of confidence or fiducial limits
// illustrated in the case of the binomial"). P(p > u) <= alpha whatever p is.
//
// For k = 0 it is 1 - alpha^(1/n) exactly; otherwise the quantile comes from
// gonum's regularized incomplete beta inverse, raised by a relative 1e-9 and
// then, if need be, until the beta CDF reaches 1 - alpha, so that numerical
// error cannot make the bound smaller than it is (a smaller bound would
// overstate the epsilon lower bound built on it).
func ClopperPearsonUpper(k, n int, alpha float64) (float64, error) {
	if n < 1 || k < 0 || k > n {
		return 0, fmt.Errorf("audit: Clopper-Pearson bound of %d successes in %d trials", k, n)
	}
	if !(alpha > 0 && alpha < 1) {
		return 0, fmt.Errorf("audit: Clopper-Pearson level alpha = %v, want 0 < alpha < 1", alpha)
	}
	switch k {
	case n:
		return 1, nil
	case 0:
		// P(Binomial(n, u) = 0) = (1 - u)^n = alpha.
		u := -math.Expm1(math.Log(alpha) / float64(n))
		return math.Min(1, u*(1+1e-12)), nil
	}
	b := distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}
	u := b.Quantile(1 - alpha)
	if math.IsNaN(u) {
		return 0, fmt.Errorf("audit: Clopper-Pearson bound of %d in %d at alpha %v did not converge", k, n, alpha)
	}
	u = math.Min(1, u*(1+1e-9))
	for step := 1e-9; b.CDF(u) < 1-alpha && u < 1; step *= 2 {
		u = math.Min(1, u+step)
	}
	return u, nil
}
