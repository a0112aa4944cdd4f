#!/usr/bin/env python3
"""dprl's float64 GEMM against numpy on OpenBLAS, one thread each, on this machine.

Runs the Go benchmark (internal/gemm BenchmarkDgemm, -cpu 1) and a numpy timing
of the same square products alternately, ROUNDS times, and prints the median
GFLOP/s of each side, their range and the ratio per round. Needs Debian's
python3-numpy and libopenblas0-pthread (and python3-threadpoolctl to name the
kernel). OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for the numpy side
only, as they slow a current OpenBLAS on some processors.

    python3 scripts/perf/gemm_vs_openblas.py [--rounds 5] [--sizes 64,512] [--json]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

NUMPY_SIDE = r"""
import sys, time, numpy as np
try:
    import threadpoolctl
    info = threadpoolctl.threadpool_info()
    print("kernel", info[0].get("internal_api"), info[0].get("version"), info[0].get("architecture"),
          "threads", info[0].get("num_threads"), file=sys.stderr)
except Exception:
    pass
for n in map(int, sys.argv[1].split(",")):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    c = np.empty((n, n))
    np.matmul(a, b, out=c)
    reps, t = 1, 0.0
    while True:  # grow the repetitions until a timing lasts >= 1 s, as go test -bench does
        t0 = time.perf_counter()
        for _ in range(reps):
            np.matmul(a, b, out=c)
        t = time.perf_counter() - t0
        if t >= 1.0:
            break
        reps = max(reps * 2, int(reps * 1.2 / max(t, 1e-9)))
    print(n, 2.0 * n**3 * reps / t / 1e9)
"""


def go_side(binary, sizes):
    pat = "Dgemm/n=(%s)/dprl$" % "|".join(map(str, sizes))
    out = subprocess.run([binary, "-test.run", "^$", "-test.bench", pat, "-test.cpu", "1",
                          "-test.benchtime", "1s"], check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"BenchmarkDgemm/n=(\d+)/dprl\s.*?([\d.]+) GFLOP/s", line)
        if m:
            res[int(m.group(1))] = float(m.group(2))
    return res


def numpy_side(sizes):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    p = subprocess.run(["/usr/bin/python3", "-c", NUMPY_SIDE, ",".join(map(str, sizes))],
                       env=env, check=True, capture_output=True, text=True)
    res = {}
    for line in p.stdout.splitlines():
        n, g = line.split()
        res[int(n)] = float(g)
    return res, p.stderr.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="64,512")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "gemm.test")
        subprocess.run(["go", "test", "-c", "-o", binary, "./internal/gemm"], cwd=root, check=True)
        kernel = subprocess.run([binary, "-test.run", "TestKernelName", "-test.v"], capture_output=True,
                                text=True).stdout
        rounds = []
        peer_kernel = ""
        for r in range(args.rounds):
            g = go_side(binary, sizes)
            npy, peer_kernel = numpy_side(sizes)
            rounds.append({"dprl": g, "numpy": npy})
            print("round %d: " % (r + 1) + ", ".join(
                "n=%d dprl %.1f numpy %.1f ratio %.2f" % (n, g[n], npy[n], g[n] / npy[n]) for n in sizes),
                file=sys.stderr, flush=True)
    summary = {"peer": peer_kernel, "rounds": rounds, "sizes": {}}
    for n in sizes:
        d = [x["dprl"][n] for x in rounds]
        p = [x["numpy"][n] for x in rounds]
        ratios = [x["dprl"][n] / x["numpy"][n] for x in rounds]
        summary["sizes"][n] = {"dprl_median": statistics.median(d), "numpy_median": statistics.median(p),
                               "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
                               "ratio_max": max(ratios)}
    m = re.search(r"kernel: (.*)", kernel)
    summary["dprl_kernel"] = m.group(1) if m else ""
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    print("dprl kernel: %s; peer: %s" % (summary["dprl_kernel"], peer_kernel))
    print("%6s %14s %14s %8s %14s" % ("n", "dprl GFLOP/s", "numpy GFLOP/s", "ratio", "ratio range"))
    for n in sizes:
        s = summary["sizes"][n]
        print("%6d %14.1f %14.1f %8.2f %7.2f-%.2f" % (n, s["dprl_median"], s["numpy_median"], s["ratio_median"],
                                                    s["ratio_min"], s["ratio_max"]))


if __name__ == "__main__":
    main()
