"""Exact one-step PLD profiles at large noise multipliers (TestPLDProfileLargeZ).

For z = 10, 20 and 50, q = 1 (the Gaussian mechanism: Balle & Wang 2018,
"Improving the Gaussian Mechanism for Differential Privacy", Theorem 8) and
q = 0.01, both directions, this prints delta(eps) in 50 digits at epsilons
spread over the range the accountant discretises (delta from near 1 down to
1e-18), each epsilon a float64 so that the Go test evaluates the same point;
and the exact epsilon of one Gaussian mechanism at z = 10, 20, 50 and a few
deltas (Theorem 8, solved by bisection in 60 digits).
The closed form is that of gen_pld_reference.py (one_step_profile), copied
here so that this script needs mpmath only.

    python3 gen_pld_profile_large_z.py > pld_profile_large_z.json
"""
import json

import mpmath as mp

mp.mp.dps = 60


def one_step_profile(q, z, direction, eps):
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


def gauss_delta(mu, eps):
    # Balle & Wang 2018, Theorem 8, with z = 1/mu.
    return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu)


def exact_gauss_eps(z, delta):
    mu, target = 1 / mp.mpf(z), mp.mpf(delta)
    lo, hi = mp.mpf(0), mp.mpf(1)
    while gauss_delta(mu, hi) > target:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if gauss_delta(mu, mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


exact = []
for z in (10, 20, 50):
    for delta in (1e-5, 1e-8, 1e-12):
        exact.append({"z": z, "delta": delta, "epsilon": mp.nstr(exact_gauss_eps(z, delta), 30)})

rows = []
for z in (10, 20, 50):
    for q in (1.0, 0.01):
        for direction in ("remove", "add"):
            for j in (-3, -1, -0.5, -0.1, 0.02, 0.1, 0.3, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 7, 8, 8.5):
                for eps in sorted({float(j) / z, float(j) / z * q}):
                    d = one_step_profile(q, z, direction, eps)
                    if not (mp.mpf("1e-19") < d < 1):
                        continue
                    rows.append({"q": q, "z": z, "direction": direction, "epsilon": eps, "delta": mp.nstr(d, 50)})
json.dump({"profile": rows, "exact_gaussian": exact}, __import__("sys").stdout, indent=1)
print()
