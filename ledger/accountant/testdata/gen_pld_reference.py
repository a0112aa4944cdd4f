#!/usr/bin/env python3
"""Held-out reference values for the PLD accountant (TestPLDAgainstReference).

Run (Debian's packages; PyPI is not needed):

  apt-get install python3-numpy python3-scipy python3-mpmath python3-attr python3-absl
  PYTHONPATH=/path/to/differential-privacy/python/dp_accounting \\
      /usr/bin/python3 gen_pld_reference.py > pld_reference.json

where /path/to/differential-privacy is a checkout of Google's
differential-privacy repository (dp_accounting; the table was generated at
commit b5b0286 of its main branch). dp_accounting's own requirement dm-tree
is not needed: nothing in its accountants imports it.

Each row gives, for a Poisson-subsampled Gaussian mechanism with sampling
rate q and noise multiplier z composed over `steps` steps, at `delta`:

- dp_epsilon: dp_accounting's PLD accountant (PLDAccountant, add-or-remove
  adjacency, pessimistic connect-the-dots discretisation at its default
  interval 1e-4), the value the Go accountant must match to 0.5%;
- rdp_epsilon: dp_accounting's RDP accountant, for the report;
- exact_epsilon (q = 1 only): the exact epsilon of the composition, the
  analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8) at z/sqrt(steps)
  (Dong, Roth & Su 2019, Corollary 3.3), solved with 50-digit mpmath: no
  accountant may report less;
- independent_epsilon (q < 1, steps 1 or 2): our own check, with no code in
  common with either accountant: the hockey-stick divergence of the exact
  pair, integrated numerically with mpmath (30 digits), maximised over the
  two directions and solved for epsilon by bisection. For one step it
  integrates (p(x) - e^eps q(x))_+ directly; for two steps it integrates
  E_{x~P}[delta_1(eps - L(x))] (the hockey-stick divergence of a product
  pair, conditioning on the first output) with the closed-form one-step
  profile. The true epsilon: no accountant may report less.

The "profile" section gives the exact one-step profiles delta(eps) of both
directions at a few points, in 50 digits, for the accuracy the Go code
assumes of its profile evaluation (profileTol).
"""
import json
import math
import sys
import time

import mpmath as mp

import dp_accounting as dpa
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant


def dp_pld(q, z, steps, delta):
    acc = pld_privacy_accountant.PLDAccountant()
    if q == 1:
        acc.compose(dpa.GaussianDpEvent(z), steps)
    else:
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
    return acc.get_epsilon(delta)


def dp_rdp(q, z, steps, delta):
    acc = rdp_privacy_accountant.RdpAccountant()
    if q == 1:
        acc.compose(dpa.GaussianDpEvent(z), steps)
    else:
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
    return acc.get_epsilon(delta)


# --- exact Gaussian (q = 1) -------------------------------------------------

def gauss_delta(mu, eps):
    # Balle & Wang 2018, Theorem 8, with z = 1/mu.
    return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu)


def bisect_eps(delta_fn, target, hi=1, iters=100):
    target = mp.mpf(target)
    if delta_fn(mp.mpf(0)) <= target:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mp.mpf(hi)
    while delta_fn(hi) > target:
        lo, hi = hi, 2 * hi
    for _ in range(iters):
        mid = (lo + hi) / 2
        if delta_fn(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def exact_gauss_eps(z, steps, delta):
    with mp.workdps(50):
        mu = mp.sqrt(steps) / mp.mpf(z)
        return bisect_eps(lambda e: gauss_delta(mu, e), delta, iters=200)


# --- independent check (q < 1) ---------------------------------------------

def pdfs(q, z):
    q, z = mp.mpf(q), mp.mpf(z)
    n0 = lambda x: mp.npdf(x, 0, z)
    n1 = lambda x: mp.npdf(x, 1, z)
    mix = lambda x: (1 - q) * n0(x) + q * n1(x)
    # direction -> (upper p, lower q): remove = (mixture, N(0)), add = (N(0), mixture)
    return {"remove": (mix, n0), "add": (n0, mix)}


def hockey_direct(p, qq, eps, z):
    # integral of (p - e^eps q)_+ over the line. p/q is monotone in x, so
    # the positive part is a half-line: find the crossing, integrate there.
    f = lambda x: p(x) - mp.exp(eps) * qq(x)
    z = mp.mpf(z)
    lo, hi = -60 * z - 10, 60 * z + 10
    flo, fhi = f(lo), f(hi)
    if flo <= 0 and fhi <= 0:
        return mp.mpf(0)
    if flo > 0 and fhi > 0:
        return mp.quad(f, [-mp.inf, 0, 1, mp.inf])
    # The crossing, by bisection.
    a, b = lo, hi
    for _ in range(200):
        m = (a + b) / 2
        if (f(m) > 0) == (flo > 0):
            a = m
        else:
            b = m
    c = (a + b) / 2
    if flo > 0:
        return mp.quad(f, [-mp.inf, c - 40 * z, c - z, c])
    return mp.quad(f, [c, c + z, c + 40 * z, mp.inf])


def one_step_profile(q, z, direction, eps):
    # Closed form (Section "delta" of pld.go, derived independently here):
    q, z, eps = mp.mpf(q), mp.mpf(z), mp.mpf(eps)
    sf = lambda x: mp.ncdf(-x)
    if direction == "remove":
        if q < 1 and eps <= mp.log(1 - q):
            return 1 - mp.exp(eps)
        A = mp.exp(eps) - (1 - q)
        t = z ** 2 * mp.log(A / q) + mp.mpf(1) / 2
        return q * sf((t - 1) / z) - A * sf(t / z)
    if q < 1 and eps >= -mp.log(1 - q):
        return mp.mpf(0)
    B = mp.exp(-eps) - (1 - q)
    s = z ** 2 * mp.log(B / q) + mp.mpf(1) / 2
    return (1 - (1 - q) * mp.exp(eps)) * mp.ncdf(s / z) - q * mp.exp(eps) * mp.ncdf((s - 1) / z)


def loss(q, z, direction, x):
    q, z = mp.mpf(q), mp.mpf(z)
    l = mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * z ** 2)))
    return l if direction == "remove" else -l


def independent_eps(q, z, steps, delta):
    with mp.workdps(30):
        best = mp.mpf(0)
        for direction, (p, qq) in pdfs(q, z).items():
            if steps == 1:
                fn = lambda e: hockey_direct(p, qq, e, z)
            else:
                def fn(e, p=p, direction=direction):
                    g = lambda x: p(x) * one_step_profile(q, z, direction, e - loss(q, z, direction, x))
                    zz = mp.mpf(z)
                    return mp.quad(g, [-mp.inf, -10 * zz, -3 * zz, 0, 1, 3 * zz + 1, 10 * zz + 1, mp.inf])
            e = bisect_eps(fn, delta, iters=45)
            best = max(best, e)
        return best


ROWS = [
    # (q, z, steps, delta)
    (1, 0.5, 1, 1e-5), (1, 0.8, 10, 1e-6), (1, 1, 1, 1e-5), (1, 1, 100, 1e-5),
    (1, 2, 10, 1e-6), (1, 2, 1000, 1e-5), (1, 5, 1, 1e-5), (1, 5, 100, 1e-6),
    (1, 5, 10000, 1e-5),
    (0.1, 0.8, 1, 1e-5), (0.1, 0.8, 100, 1e-5), (0.1, 1, 10, 1e-6),
    (0.1, 1, 1000, 1e-5), (0.1, 2, 100, 1e-5), (0.1, 2, 10000, 1e-6),
    (0.1, 5, 1000, 1e-5), (0.1, 5, 10000, 1e-5),
    (0.01, 0.5, 100, 1e-5), (0.01, 0.8, 1000, 1e-6), (0.01, 0.8, 10000, 1e-5),
    (0.01, 1, 1, 1e-5), (0.01, 1, 100, 1e-6), (0.01, 1, 1000, 1e-5),
    (0.01, 1, 10000, 1e-5), (0.01, 1, 10000, 1e-6), (0.01, 2, 1000, 1e-5),
    (0.01, 2, 10000, 1e-6), (0.01, 5, 10000, 1e-5),
    (0.001, 0.5, 1000, 1e-5), (0.001, 0.5, 10000, 1e-6), (0.001, 0.8, 100, 1e-5),
    (0.001, 0.8, 10000, 1e-5), (0.001, 1, 1000, 1e-6), (0.001, 1, 10000, 1e-5),
    (0.001, 2, 10000, 1e-5),
    # Independent checks (few steps, numerical integration).
    (0.1, 1, 1, 1e-5), (0.1, 1, 2, 1e-5), (0.01, 0.5, 2, 1e-5),
    (0.1, 0.5, 2, 1e-6), (0.001, 0.5, 1, 1e-6),
]

PROFILE = [(q, z, d, e) for q, z in [(0.01, 1), (0.001, 0.5), (0.1, 2), (1, 1), (1, 0.2)]
           for d in ("remove", "add") for e in (-3, -0.5, -0.01, 0, 0.004, 0.05, 0.5, 2, 5)]


def main():
    rows = []
    for q, z, steps, delta in ROWS:
        t0 = time.time()
        row = {"q": q, "z": z, "steps": steps, "delta": delta,
               "dp_epsilon": dp_pld(q, z, steps, delta),
               "rdp_epsilon": dp_rdp(q, z, steps, delta)}
        if q == 1:
            row["exact_epsilon"] = float(exact_gauss_eps(z, steps, delta))
        elif steps <= 2:
            row["independent_epsilon"] = float(independent_eps(q, z, steps, delta))
        print(f"{row} ({time.time() - t0:.1f}s)", file=sys.stderr)
        rows.append(row)
    prof = []
    with mp.workdps(50):
        for q, z, d, e in PROFILE:
            v = one_step_profile(q, z, d, e)
            prof.append({"q": q, "z": z, "direction": d, "epsilon": e, "delta": float(v)})
    json.dump({"rows": rows, "profile": prof}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
