#!/usr/bin/env python3
"""Other libraries' intervals on the same simulated logs as dprl's coverage study.

    dprl sims ope --reps 1000 --seed 20261129 --dump-logs DUMP --json > study.json
    python3 scripts/ope/peers.py --dump DUMP --study study.json --vw-estimators SRC [--json]

reads every log dprl sims ope wrote (DUMP/n<N>-rep<R>.csv: each decision's
importance weight w and reward r) and the study's JSON (the true value, the
public weight bound, the level), and scores on each log, by coverage of the
true value and mean width:

  - Vowpal Wabbit's estimators library (pure Python; SRC is the directory
    holding its `estimators` package, i.e. its checkout's src/): the
    Cressie-Read empirical-likelihood interval (cressieread.Interval, with
    the study's weight bound), the Gaussian IPS interval (gaussian.Interval),
    the Clopper-Pearson interval (clopper_pearson.Interval) and the
    off-policy confidence sequence (cs.Interval);
  - the Open Bandit Pipeline's bootstrap as its source defines it
    (obp.utils.estimate_confidence_interval_by_bootstrap: the percentile
    interval of the means of B resamples with replacement of the
    per-decision IPS terms w r), re-implemented here in numpy with B
    resamples (--obp-resamples, default 1,000; the library's default is
    10,000).

Runs on Debian's python3 with python3-numpy and python3-scipy.
"""
import argparse
import glob
import json
import math
import os
import re
import sys

import numpy as np


def obp_bootstrap(terms, alpha, b, rng):
    """The Open Bandit Pipeline's estimate_confidence_interval_by_bootstrap."""
    n = terms.shape[0]
    means = np.empty(b)
    for i in range(b):
        means[i] = terms[rng.integers(0, n, n)].mean()
    return np.percentile(means, 100 * (alpha / 2)), np.percentile(means, 100 * (1 - alpha / 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", required=True)
    ap.add_argument("--study", required=True)
    ap.add_argument("--vw-estimators", required=True, help="directory holding the estimators package")
    ap.add_argument("--obp-resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    sys.path.insert(0, a.vw_estimators)
    from estimators.bandits import clopper_pearson, cressieread, cs, gaussian  # noqa: E402

    study = json.load(open(a.study))
    truth, bound, level = study["truth"], study["weight_bound"], study["level"]
    alpha = 1 - level
    rng = np.random.default_rng(a.seed)
    tallies = {}
    files = sorted(glob.glob(os.path.join(a.dump, "n*-rep*.csv")))
    if not files:
        sys.exit(f"no n<N>-rep<R>.csv files in {a.dump}")
    for k, path in enumerate(files):
        n = int(re.match(r"n(\d+)-rep\d+\.csv", os.path.basename(path)).group(1))
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        w, r = data[:, 0], data[:, 1]
        ivs = {
            "VW cressieread": cressieread.Interval(wmin=0, wmax=bound, rmin=0, rmax=1),
            "VW gaussian": gaussian.Interval(),
            "VW clopper_pearson": clopper_pearson.Interval(rmin=0, rmax=1),
            "VW cs": cs.Interval(rmin=0, rmax=1),
        }
        for wi, ri in zip(w.tolist(), r.tolist()):
            for iv in ivs.values():
                iv.add_example(1.0, ri, wi)
        got = {name: iv.get(alpha) for name, iv in ivs.items()}
        got["OBP bootstrap (IPS)"] = obp_bootstrap(w * r, alpha, a.obp_resamples, rng)
        for name, (lo, hi) in got.items():
            # An end the library leaves undefined (NaN, infinite) is the
            # reward range's own end.
            lo = 0.0 if not math.isfinite(lo) else lo
            hi = 1.0 if not math.isfinite(hi) else hi
            t = tallies.setdefault((n, name), [0, 0, 0.0])
            t[0] += 1
            t[1] += lo <= truth <= hi
            t[2] += min(hi, 1) - max(lo, 0)
        if sys.stderr.isatty() or (k + 1) % 500 == 0:
            print(f"{k + 1}/{len(files)} logs", file=sys.stderr)
    rows = []
    for (n, name), (c, cov, wsum) in sorted(tallies.items()):
        p = cov / c
        rows.append({"n": n, "interval": name, "logs": c, "coverage": p, "coverage_se": math.sqrt(p * (1 - p) / c), "mean_width": wsum / c})
    if a.json:
        json.dump({"truth": truth, "weight_bound": bound, "level": level, "rows": rows}, sys.stdout, indent=2)
        return
    print(f"true value {truth:.4f}, weight bound {bound:g}, nominal {level}; widths clipped to [0, 1]")
    print(f"{'n':>6}  {'interval':<22} {'coverage':>8} {'(se)':>6} {'width':>8}")
    for x in rows:
        print(f"{x['n']:>6}  {x['interval']:<22} {x['coverage']:>8.3f} {x['coverage_se']:>6.3f} {x['mean_width']:>8.4f}")


if __name__ == "__main__":
    main()
