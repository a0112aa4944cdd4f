#!/usr/bin/env python3
"""Independent reference values for the accountant tests, in multi-precision.

Run: python3 gen_reference.py > reference.json   (needs only mpmath)

- log A_alpha of the Poisson-subsampled Gaussian by numerical integration of
  its definition, A_alpha = E_{x~N(0,z^2)}[((1-q) + q exp((2x-1)/(2z^2)))^alpha]
  (Mironov, Talwar & Zhang 2019, eq. (3)): a different method from the series
  the Go code sums.
- epsilon of the Gaussian mechanism from Balle & Wang 2018, Theorem 8, solved
  with 50-digit arithmetic; and the noise multiplier for a target epsilon.
"""
import json
import mpmath as mp

mp.mp.dps = 50


def log_a(q, z, alpha):
    q, z, alpha = mp.mpf(q), mp.mpf(z), mp.mpf(alpha)
    f = lambda x: mp.npdf(x, 0, z) * ((1 - q) + q * mp.exp((2 * x - 1) / (2 * z ** 2))) ** alpha
    # Split the line where the integrand's mass sits so quadrature sees it.
    pts = [-mp.inf, -20 * z, 0, mp.mpf(0.5), 20 * z + alpha, mp.inf]
    return mp.log(mp.quad(f, pts, maxdegree=10))


def delta_gauss(z, eps):
    z, eps = mp.mpf(z), mp.mpf(eps)
    return mp.ncdf(1 / (2 * z) - eps * z) - mp.exp(eps) * mp.ncdf(-1 / (2 * z) - eps * z)


def eps_gauss(z, delta):
    lo, hi = mp.mpf(0), mp.mpf(1)
    if delta_gauss(z, 0) <= delta:
        return mp.mpf(0)
    while delta_gauss(z, hi) > delta:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if delta_gauss(z, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def sigma_gauss(eps, delta):
    lo, hi = mp.mpf('1e-6'), mp.mpf(1)
    while delta_gauss(hi, eps) > delta:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if delta_gauss(mid, eps) > delta:
            lo = mid
        else:
            hi = mid
    return hi


LOGA_CASES = [
    # The parameter grid of TensorFlow Privacy's and dp_accounting's
    # test_compute_log_a_equals_mp, plus settings used by dprl.
    (1e-7, 0.1, 1.01), (1e-6, 0.1, 256), (1e-5, 0.1, 256.1), (1e-6, 1, 27),
    (1e-4, 1, 1.5), (1e-3, 1, 2), (0.01, 10, 20), (0.1, 100, 20.5),
    (0.99, 0.1, 256), (0.999, 100, 256.1),
    (0.01, 2.5, 1.5), (0.01, 2.5, 2.5), (0.01, 1.1, 8.1), (0.01, 1.1, 10.5),
    (1e-3, 0.45, 3.3), (1e-3, 0.8, 7.7), (0.05, 0.6, 4.2), (0.5, 10, 1.5),
    (0.5, 1, 1.01), (0.25, 2, 6.6), (1 / 1000, 3, 30.5), (1e-6, 100, 1.9),
]

GAUSS_CASES = [(z, d) for z in (0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 50.0)
               for d in (1e-2, 1e-5, 1e-9)]
SIGMA_CASES = [(e, d) for e in (0.1, 0.5, 1.0, 2.0, 5.0, 10.0) for d in (1e-3, 1e-5, 1e-10)]

out = {
    "log_a": [{"q": q, "z": z, "alpha": a, "log_a": float(log_a(q, z, a))} for q, z, a in LOGA_CASES],
    "gaussian_epsilon": [{"z": z, "delta": d, "epsilon": float(eps_gauss(z, d))} for z, d in GAUSS_CASES],
    "gaussian_sigma": [{"epsilon": e, "delta": d, "z": float(sigma_gauss(e, d))} for e, d in SIGMA_CASES],
}
print(json.dumps(out, indent=1))
