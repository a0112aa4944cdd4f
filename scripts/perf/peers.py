#!/usr/bin/env python3
"""dprl against its peers on this machine: same-run ratios, one thread each.

    python3 scripts/perf/peers.py gemm  [--rounds 5]   # internal/gemm vs numpy/OpenBLAS, n = 64 and 512
    python3 scripts/perf/peers.py ppo   [--rounds 3]   # dprl PPO vs CleanRL ppo.py, CartPole env steps/s
    python3 scripts/perf/peers.py dpsgd [--rounds 3]   # dprl DP-SGD vs Opacus 1.4 (glibc defaults and tuned)
    python3 scripts/perf/peers.py sac   [--rounds 3]   # dprl SAC updates/s vs the same update in PyTorch
    python3 scripts/perf/peers.py cql   [--rounds 3]   # dprl DP-SGD CQL step vs Opacus 1.4 (default and tuned)
    add --json for machine-readable output, --peers DIR for the exported peer sources,
    --noise float|exact|both (dpsgd: dprl's noise; Opacus always adds float noise),
    --dtype float64|float32|both (ppo, sac and cql's plain step: the peer's dtype;
    dprl computes in float64), --openblas-coretype NAME (the peers' OpenBLAS kernel,
    e.g. Cooperlake or SkylakeX where OpenBLAS does not know the CPU and falls back
    to Prescott; default: OpenBLAS's own choice)

The two sides run alternately (A B A B ...), each round after waiting for the
machine to be idle (/proc/stat); the result is the median of each side, the
range, and the median of the per-round ratios. The Go side is a `go test
-bench` binary built once, run with -test.cpu 1; the peers run on Debian's
python3 with OMP/OpenBLAS limited to one thread (torch.set_num_threads(1)).
Peer setup: docs/performance.md, "Performance against peers".
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"
TUNED = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296:glibc.malloc.top_pad=268435456"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def busy_fraction(interval=0.5):
    def read():
        with open("/proc/stat") as f:
            v = list(map(int, f.readline().split()[1:]))
        return v[3] + v[4], sum(v)
    i0, t0 = read()
    time.sleep(interval)
    i1, t1 = read()
    return 1 - (i1 - i0) / max(t1 - t0, 1)


def wait_idle(limit=0.1, patience=30):
    for _ in range(patience):
        b = busy_fraction()
        if b < limit:
            return b
    log("warning: machine still %.0f%% busy; measuring anyway" % (100 * b))
    return b


CORETYPE = None  # --openblas-coretype


def peer_env(peers):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=peers)
    # Older OpenBLAS builds need these on some CPUs; they slow a current one.
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    if CORETYPE:
        env["OPENBLAS_CORETYPE"] = CORETYPE
    return env


def go_bench(binary, pattern, metric, benchtime="1s"):
    out = subprocess.run([binary, "-test.run", "^$", "-test.bench", pattern, "-test.cpu", "1",
                          "-test.benchtime", benchtime], check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"Benchmark(\S+)\s.*?([\d.]+) " + re.escape(metric), line)
        if m:
            res[m.group(1)] = float(m.group(2))
    if not res:
        raise SystemExit("no %s in benchmark output:\n%s" % (metric, out))
    return res


def build(pkg, tmp):
    binary = os.path.join(tmp, os.path.basename(pkg) + ".test")
    subprocess.run(["go", "test", "-c", "-o", binary, "./" + pkg], cwd=ROOT, check=True)
    return binary


NUMPY_GEMM = r"""
import sys, time, numpy as np
for n in map(int, sys.argv[1].split(",")):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    c = np.empty((n, n))
    np.matmul(a, b, out=c)
    reps = 1
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

PEER_INFO = r"""
import threadpoolctl, numpy
i = threadpoolctl.threadpool_info()[0]
print("numpy %s on %s %s (%s kernels), %s thread(s)" % (numpy.__version__, i["internal_api"], i["version"], i.get("architecture"), i["num_threads"]))
"""


def gemm(args, tmp):
    sizes = [64, 512]
    binary = build("internal/gemm", tmp)
    kernel = subprocess.run([binary, "-test.run", "TestKernelName", "-test.v"], capture_output=True, text=True).stdout
    m = re.search(r"kernel: (.*)", kernel)
    env = peer_env(args.peers)
    info = subprocess.run([PY, "-c", PEER_INFO], env=env, capture_output=True, text=True).stdout.strip()
    rounds = []
    for r in range(args.rounds):
        wait_idle()
        g = go_bench(binary, "Dgemm/n=(64|512)/dprl$", "GFLOP/s")
        dprl = {n: g["Dgemm/n=%d/dprl" % n] for n in sizes}
        out = subprocess.run([PY, "-c", NUMPY_GEMM, ",".join(map(str, sizes))], env=env, check=True,
                             capture_output=True, text=True).stdout
        peer = {int(l.split()[0]): float(l.split()[1]) for l in out.splitlines()}
        rounds.append({"n=%d" % n: (dprl[n], peer[n]) for n in sizes})
        log("round %d: %s" % (r + 1, rounds[-1]))
    return {"what": "float64 GEMM, GFLOP/s (C = A B, n x n)", "dprl": "internal/gemm, kernel " + (m.group(1) if m else "?"),
            "peer": info, "rounds": rounds}


def dtypes(args):
    """The peer's dtypes to measure, float64 first."""
    return ["float64", "float32"] if args.dtype == "both" else [args.dtype]


def dtype_label(dt):
    """The suffix of a row measured with the peer in dt ("" for float64, the rows' old names)."""
    return "" if dt == "float64" else " (peer float32)"


def ppo(args, tmp):
    binary = build("policy", tmp)
    script = os.path.join(args.peers, "cleanrl", "ppo.py")
    runner = os.path.join(ROOT, "scripts", "perf", "peers", "run_cleanrl_ppo.py")
    env = peer_env(args.peers)
    rounds = []
    for r in range(args.rounds):
        wait_idle()
        g = go_bench(binary, "TrainPPO/", "env-steps/s", "3x")
        row = {}
        for dt in dtypes(args):
            out = subprocess.run([PY, runner, "--dtype", dt, script, "--env-id", "CartPole-v1", "--total-timesteps",
                                  str(args.timesteps), "--cuda", "false"], env=env, check=True, capture_output=True,
                                 text=True).stdout
            sps = [int(x) for x in re.findall(r"SPS: (\d+)", out)]
            peer = float(sps[-1])
            row["64x64-E4" + dtype_label(dt)] = (g["TrainPPO/64x64-E4"], peer)
            row["16x16-E3 (dprl default) vs 64x64-E4" + dtype_label(dt)] = (g["TrainPPO/16x16-E3"], peer)
        rounds.append(row)
        log("round %d: %s" % (r + 1, rounds[-1]))
    return {"what": "PPO on CartPole, environment steps/s end to end",
            "dprl": "policy BenchmarkTrainPPO (800 users of 64 steps, K = 8, one worker)",
            "peer": "CleanRL ppo.py (unmodified; 4 envs x 128 steps, 4 epochs, 4 minibatches, 64x64 tanh), "
                    "%s, %d timesteps, its final SPS" % (" and ".join(dtypes(args)), args.timesteps), "rounds": rounds}


def dpsgd(args, tmp):
    binary = build("policy", tmp)
    script = os.path.join(ROOT, "scripts", "perf", "peers", "opacus_dpsgd.py")
    rounds = []
    for r in range(args.rounds):
        wait_idle()
        g = go_bench(binary, "DPSGDPeer/", "steps/s")
        peers = {}
        for label, extra in (("default", {}), ("tuned", {"GLIBC_TUNABLES": TUNED})):
            env = dict(peer_env(args.peers), **extra)
            out = subprocess.run([PY, script, "--seconds", "3"], env=env, check=True, capture_output=True, text=True).stdout
            peers[label] = {l.split()[0]: float(l.split()[1]) for l in out.splitlines()}
        row = {}
        for name, v in g.items():
            # DPSGDPeer/<shape>/noise=<float|exact>
            _, shape, nz = name.split("/")
            nz = nz.split("=", 1)[1]
            if args.noise not in ("both", nz):
                continue
            best = max(peers["default"][shape], peers["tuned"][shape])
            row[shape + (", float noise" if nz == "float" else ", dprl exact noise vs Opacus float")] = (v, best)
        rounds.append(row)
        log("round %d: %s (Opacus default allocator: %s)" % (r + 1, row, peers["default"]))
    return {"what": "DP-SGD steps/s (forward, backward, per-sample clip, noise, SGD)",
            "dprl": "policy BenchmarkDPSGDPeer (ghost clipping; noise=float: floating-point normals from a PCG, as "
                    "Opacus adds; noise=exact: the exact discrete Gaussian sampler dprl's learners use, from ChaCha8)",
            "peer": "Opacus 1.4.0 on torch %s, float64, the faster of glibc's default allocator and the tuned one (%s)"
                    % (torch_version(args.peers), TUNED), "rounds": rounds}


def sac_peer(args, tmp):
    binary = build("policy/sac", tmp)
    script = os.path.join(ROOT, "scripts", "perf", "peers", "torch_sac.py")
    rounds = []
    for r in range(args.rounds):
        wait_idle()
        g = go_bench(binary, "Update/", "updates/s", "3s")
        row = {}
        for dt in dtypes(args):
            out = subprocess.run([PY, script, "--seconds", "5", "--dtype", dt], env=peer_env(args.peers), check=True,
                                 capture_output=True, text=True).stdout
            peer = {l.split()[0]: float(l.split()[1]) for l in out.splitlines()}
            row.update({k + dtype_label(dt): (g["Update/" + k], peer[k]) for k in peer})
        rounds.append(row)
        log("round %d: %s" % (r + 1, rounds[-1]))
    return {"what": "SAC updates/s (minibatch of 256 from a replay buffer, twin critics, actor, temperature, Polyak), "
                    "Pendulum's dimensions",
            "dprl": "policy/sac BenchmarkUpdate",
            "peer": "scripts/perf/peers/torch_sac.py (CleanRL's SAC update written out) on torch %s, %s"
                    % (torch_version(args.peers), " and ".join(dtypes(args))), "rounds": rounds}


def cql(args, tmp):
    binary = build("offline/qlearn", tmp)
    noise_bin = build("noise", tmp)
    script = os.path.join(ROOT, "scripts", "perf", "peers", "opacus_cql.py")
    rounds, detail = [], []
    skipped = set()
    for r in range(args.rounds):
        busy = wait_idle()
        g = go_bench(binary, "^Benchmark(DPStepCQL|StepCQL)$", "ns/op", "3s")
        dprl = {k: 1e9 / v for k, v in g.items()}
        peers = {}
        for label, extra in (("default", {}), ("tuned", {"GLIBC_TUNABLES": TUNED})):
            env = dict(peer_env(args.peers), **extra)
            out = subprocess.run([PY, script, "--seconds", "5"], env=env, check=True, capture_output=True,
                                 text=True).stdout
            peers[label] = {}
            for l in out.splitlines():
                if l.startswith("#"):
                    skipped.add(l[1:].strip())
                else:
                    peers[label][l.split()[0]] = float(l.split()[1])
            if "float32" in dtypes(args):
                out = subprocess.run([PY, script, "--seconds", "5", "--variants", "plain", "--dtype", "float32"],
                                     env=env, check=True, capture_output=True, text=True).stdout
                for l in out.splitlines():
                    if l.startswith("plain "):
                        peers[label]["plain-float32"] = float(l.split()[1])
        params = int(peers["default"].pop("params"))
        peers["tuned"].pop("params")
        best = {k: max(peers["default"][k], peers["tuned"][k]) for k in peers["default"]}
        # The exact sampler's cost per coordinate in the same round, and what
        # it comes to on the Q-network's parameters.
        # (BenchmarkNoise's sigmas 0.5 and 1.5 bracket this step's sigma 1;
        # the larger cost of each is taken.)
        nz = go_bench(noise_bin, "^BenchmarkNoise$/^(exact|float)$/^sigma=(0.5|1.5)$", "ns/op")
        exact = max(v for k, v in nz.items() if k.startswith("Noise/exact/")) / 1024
        flt = max(v for k, v in nz.items() if k.startswith("Noise/float/")) / 1024
        row = {"DP step: dprl (exact noise) vs Opacus": (dprl["DPStepCQL"], best["dp"])}
        if "dp-secure" in best:
            row["DP step: dprl vs Opacus secure_mode"] = (dprl["DPStepCQL"], best["dp-secure"])
        row["DP step: dprl vs Opacus, secure_mode's 4 normals, no CSPRNG"] = (dprl["DPStepCQL"], best["dp-4normal"])
        if "float64" in dtypes(args):
            row["plain step: dprl vs PyTorch"] = (dprl["StepCQL"], best["plain"])
        if "plain-float32" in best:
            row["plain step: dprl vs PyTorch" + dtype_label("float32")] = (dprl["StepCQL"], best["plain-float32"])
        rounds.append(row)
        detail.append({"busy_before": round(busy, 3), "dprl_steps_per_s": dprl, "opacus_default_allocator": peers["default"],
                       "opacus_tuned_allocator": peers["tuned"], "params": params,
                       "noise_ns_per_coordinate": {"exact": exact, "float NormFloat64": flt},
                       "exact_noise_ms_per_step": exact * params / 1e6,
                       "exact_noise_share_of_dp_step": exact * params / g["DPStepCQL"]})
        log("round %d: %s\n  %s" % (r + 1, row, detail[-1]))
    return {"what": "discrete CQL steps/s, Q-network 4-256-256-2 ReLU, batch 128, target network, Adam, Polyak",
            "dprl": "offline/qlearn BenchmarkDPStepCQL (Poisson sampling of 3,000 units at q = 128/3000, ghost "
                    "clipping to 1, exact discrete Gaussian noise sigma 1, / 128) and BenchmarkStepCQL (no DP)",
            "peer": "scripts/perf/peers/opacus_cql.py: Opacus 1.4.0 GradSampleModule + DPOptimizer (noise 1.0, clip "
                    "1.0, expected batch 128, Adam) on torch %s, float64 (the plain step also in %s), fixed batches of "
                    "128, the faster of glibc's default allocator and the tuned one (%s)"
                    % (torch_version(args.peers), " and ".join(dtypes(args)), TUNED),
            "skipped": sorted(skipped), "rounds": rounds, "detail": detail}


def torch_version(peers):
    return subprocess.run([PY, "-c", "import torch; print(torch.__version__)"], env=peer_env(peers),
                          capture_output=True, text=True).stdout.strip()


def summarise(res):
    rows = {}
    for rd in res["rounds"]:
        for k, (d, p) in rd.items():
            rows.setdefault(k, []).append((d, p))
    res["summary"] = {}
    for k, v in rows.items():
        d, p = [x[0] for x in v], [x[1] for x in v]
        ratios = [x[0] / x[1] for x in v]
        res["summary"][k] = {"dprl_median": statistics.median(d), "dprl_range": [min(d), max(d)],
                             "peer_median": statistics.median(p), "peer_range": [min(p), max(p)],
                             "ratio_median": statistics.median(ratios), "ratio_range": [min(ratios), max(ratios)]}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["gemm", "ppo", "dpsgd", "sac", "cql"])
    ap.add_argument("--rounds", type=int, default=0, help="alternating rounds (default: 5 for gemm, 3 otherwise)")
    ap.add_argument("--peers", default=os.environ.get("DPRL_PEERS", "/work/peers"),
                    help="folder holding the exported cleanrl/, gymnasium/, opacus/ and opt_einsum/ (env DPRL_PEERS)")
    ap.add_argument("--timesteps", type=int, default=50000, help="CleanRL's --total-timesteps (ppo)")
    ap.add_argument("--noise", choices=["float", "exact", "both"], default="both",
                    help="dpsgd: dprl's noise, floating-point normals as Opacus adds or the exact sampler dprl ships "
                         "(Opacus always adds float noise)")
    ap.add_argument("--dtype", choices=["float64", "float32", "both"], default="float64",
                    help="ppo, sac and cql's plain step: the peer's dtype (float32 is PyTorch's default; dprl and the "
                         "DP rows stay float64)")
    ap.add_argument("--openblas-coretype", default=None,
                    help="OPENBLAS_CORETYPE for the peers (default: unset, OpenBLAS's own choice)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    global CORETYPE
    CORETYPE = args.openblas_coretype
    if args.rounds <= 0:
        args.rounds = 5 if args.what == "gemm" else 3
    with tempfile.TemporaryDirectory() as tmp:
        res = summarise({"gemm": gemm, "ppo": ppo, "dpsgd": dpsgd, "sac": sac_peer, "cql": cql}[args.what](args, tmp))
    res["cpu"] = cpu_model()
    res["openblas_coretype"] = CORETYPE or "OpenBLAS's own choice"
    # What picks dprl's kernels (GODEBUG=cpu.avx512f=off runs the AVX2 ones
    # on an AVX-512 CPU) and the code measured.
    res["godebug"] = os.environ.get("GODEBUG", "")
    res["dprl_commit"] = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                        capture_output=True, text=True).stdout.strip()
    if args.json:
        print(json.dumps(res, indent=1))
        return
    print("%s; %s rounds, alternating; CPU: %s" % (res["what"], len(res["rounds"]), res["cpu"]))
    print("dprl: %s\npeer: %s" % (res["dprl"], res["peer"]))
    w = max(40, max(len(k) for k in res["summary"]))
    print("%-*s %12s %12s %7s %13s" % (w, "", "dprl", "peer", "ratio", "ratio range"))
    for k, s in res["summary"].items():
        print("%-*s %12.1f %12.1f %7.2f %6.2f-%.2f" % (w, k, s["dprl_median"], s["peer_median"], s["ratio_median"],
                                                       s["ratio_range"][0], s["ratio_range"][1]))


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


if __name__ == "__main__":
    main()
