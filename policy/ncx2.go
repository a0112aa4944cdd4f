package policy

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"
)

// NoncentralChi2CDF returns P(X <= x) for X ~ chi^2(k, lambda), the
// noncentral chi-square with k degrees of freedom and noncentrality lambda,
// as the Poisson mixture of central chi-squares
//
//	P(X <= x) = sum_j e^(-lambda/2) (lambda/2)^j / j! · P(k/2 + j, x/2)
//
// (Johnson, Kotz & Balakrishnan, Continuous Univariate Distributions vol. 2,
// eq. 29.2), P the regularised lower incomplete gamma function. The sum runs
// outward from the Poisson mode until the remaining Poisson mass is below
// 1e-17.
func NoncentralChi2CDF(x float64, k int, lambda float64) (float64, error) {
	if k < 1 || !(lambda >= 0) || math.IsInf(lambda, 0) || math.IsNaN(x) {
		return 0, fmt.Errorf("policy: noncentral chi-square with k = %d, lambda = %v at x = %v", k, lambda, x)
	}
	if x <= 0 {
		return 0, nil
	}
	if math.IsInf(x, 1) {
		return 1, nil
	}
	h := lambda / 2
	if h == 0 {
		return mathext.GammaIncReg(float64(k)/2, x/2), nil
	}
	mode := math.Floor(h)
	logw := func(j float64) float64 {
		lg, _ := math.Lgamma(j + 1)
		return -h + j*math.Log(h) - lg
	}
	var sum, mass float64
	for j := mode; j >= 0; j-- {
		w := math.Exp(logw(j))
		sum += w * mathext.GammaIncReg(float64(k)/2+j, x/2)
		mass += w
		if w < 1e-20 {
			break
		}
	}
	for j := mode + 1; 1-mass > 1e-17; j++ {
		w := math.Exp(logw(j))
		sum += w * mathext.GammaIncReg(float64(k)/2+j, x/2)
		mass += w
		if w < 1e-20 && j > h {
			break
		}
	}
	return math.Min(1, sum), nil
}

// NoncentralChi2Quantile returns the p-quantile of chi^2(k, lambda) by
// bisection on the CDF, to a relative 1e-12.
func NoncentralChi2Quantile(p float64, k int, lambda float64) (float64, error) {
	if !(p > 0 && p < 1) {
		return 0, fmt.Errorf("policy: quantile order %v, want 0 < p < 1", p)
	}
	if _, err := NoncentralChi2CDF(1, k, lambda); err != nil {
		return 0, err
	}
	mean := float64(k) + lambda
	lo, hi := 0.0, mean+10*math.Sqrt(2*(float64(k)+2*lambda))+10
	for {
		c, _ := NoncentralChi2CDF(hi, k, lambda)
		if c >= p {
			break
		}
		lo, hi = hi, 2*hi
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := (lo + hi) / 2
		if c, _ := NoncentralChi2CDF(mid, k, lambda); c >= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
