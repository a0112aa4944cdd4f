package audit

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"dprl/ledger/accountant"
)

// MuLowerBound returns the lower bound on mu that a test with false
// positive rate at most fpr and false negative rate at most fnr implies for
// a mechanism that is mu-Gaussian-DP: such a mechanism has, for every test,
// FNR >= Phi(Phi^-1(1 - FPR) - mu) (Dong, Roth & Su 2022, "Gaussian
// differential privacy", Definition 2.6 and Eq. (2.2), the trade-off
// function G_mu), so
//
//	mu >= Phi^-1(1 - fpr) - Phi^-1(fnr),
//
// the bound Nasr et al. 2023 ("Tight auditing of differentially private
// machine learning", Section 5) audit with. The expression is symmetric in
// the two rates, and it only grows as the rates shrink, so upper bounds on
// the rates give a lower bound on mu. It returns 0 when the expression is
// not positive, and subtracts a relative 1e-9 for the quantiles' rounding.
func MuLowerBound(fpr, fnr float64) float64 {
	if !(fpr < 1) || !(fnr < 1) || fpr < 0 || fnr < 0 {
		return 0
	}
	n := distuv.UnitNormal
	mu := n.Quantile(1-fpr) - n.Quantile(fnr)
	if math.IsNaN(mu) || !(mu > 0) {
		return 0
	}
	return mu * (1 - 1e-9)
}

// GDPEpsilon returns the epsilon at delta of mu-Gaussian-DP: that of the
// Gaussian mechanism with sensitivity 1 and noise multiplier 1 / mu (Dong,
// Roth & Su 2022, Corollary 2.13; Balle & Wang 2018, "Improving the
// Gaussian mechanism for differential privacy", Theorem 8). It is 0 for mu
// = 0 and +Inf for an infinite mu.
func GDPEpsilon(mu, delta float64) float64 {
	switch {
	case !(mu > 0):
		return 0
	case math.IsInf(mu, 1):
		return math.Inf(1)
	}
	e, err := accountant.GaussianEpsilon(1/mu, delta)
	if err != nil {
		return math.Inf(1)
	}
	return e
}
