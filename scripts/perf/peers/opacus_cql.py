#!/usr/bin/env python3
"""Steps/s of one DP-SGD step of discrete CQL in Opacus: the peer of dprl's
offline/qlearn BenchmarkDPStepCQL (and of BenchmarkStepCQL without DP).

The step, as dprl's: Q-network 4-256-256-2 ReLU (CartPole's sizes), a target
network (a deepcopy of Q) forward on the next states without gradient, the
CQL(H) loss per transition

    1/2 (Q(s,a) - y)^2 + alpha (logsumexp_a' Q(s,a') - Q(s,a)),
    y = r + gamma (1 - done) max_a' Qtarget(s',a'),    alpha 1, gamma 0.99,

averaged over the batch; per-sample gradients (Opacus's hooks), each clipped
to C = 1, Gaussian noise N(0, C^2) (noise multiplier 1), division by the
expected batch size 128, Adam (lr 1e-3, eps 1e-8), then a Polyak update of
the target (tau 0.05). Opacus's GradSampleModule and DPOptimizer (what
PrivacyEngine.make_private builds, with expected_batch_size 128) on fixed
batches (dprl samples its batch by Poisson sampling of 3,000 units and
gathers it, which is timed there and not here), 64 prebuilt batches of 128 random transitions
(4-dim observations, actions in {0, 1}, rewards 1, one in seven terminal)
cycled. float64 (or PyTorch's own default, float32, with --dtype float32),
one thread. PYTHONPATH must hold the exported opacus/ and
opt_einsum/ folders (docs/performance.md, "Performance against peers").

Variants (one line each, "name steps/s"):
  dp           Opacus's default noise (one torch.normal per coordinate)
  dp-secure    PrivacyEngine(secure_mode=True): needs torchcsprng; when it is
               missing the line is left out and a "#" line says why
  dp-4normal   secure_mode's noise (four normals per coordinate, the
               floating-point attack's fix) from torch's default generator:
               secure_mode's arithmetic without the CSPRNG, an upper bound on
               its speed
  plain        the same step without DP (mean loss, backward, Adam, Polyak)
and "params N", the Q-network's parameter count.

    opacus_cql.py [--seconds 5] [--variants dp,dp-secure,dp-4normal,plain] [--dtype float64|float32]
"""
import argparse
import copy
import sys
import time
import warnings

import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
warnings.filterwarnings("ignore")

from opacus import GradSampleModule, PrivacyEngine  # noqa: E402
from opacus.optimizers import DPOptimizer  # noqa: E402

OBS, ACTIONS, HIDDEN, BATCH = 4, 2, [256, 256], 128
GAMMA, ALPHA, TAU, LR = 0.99, 1.0, 0.05, 1e-3
NBATCHES = 64


def qnet():
    sizes = [OBS] + HIDDEN + [ACTIONS]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def batches():
    g = torch.Generator().manual_seed(8)
    out = []
    for _ in range(NBATCHES):
        out.append((torch.randn(BATCH, OBS, generator=g),
                    torch.randint(0, ACTIONS, (BATCH, 1), generator=g),
                    torch.ones(BATCH),
                    (torch.rand(BATCH, generator=g) < 1 / 7).to(torch.get_default_dtype()),
                    torch.randn(BATCH, OBS, generator=g)))
    return out


def build(variant):
    """Returns (step, params) for the variant, or (None, reason)."""
    torch.manual_seed(0)
    q = qnet()
    target = copy.deepcopy(q)
    for p in target.parameters():
        p.requires_grad_(False)
    params = sum(p.numel() for p in q.parameters())
    opt = torch.optim.Adam(q.parameters(), lr=LR, eps=1e-8)
    if variant != "plain":
        generator = None
        if variant == "dp-secure":
            try:
                generator = PrivacyEngine(secure_mode=True).secure_rng
            except ImportError as e:
                return None, str(e).split("!")[0]
        # What PrivacyEngine.make_private builds (hooks, flat clipping, mean
        # reduction), with the expected batch size set to 128 (make_private
        # derives it from a loader's length: 3000 // ceil(3000 / 128) = 125).
        q = GradSampleModule(q, loss_reduction="mean")
        opt = DPOptimizer(opt, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=BATCH,
                          loss_reduction="mean", generator=generator, secure_mode=variant != "dp")
    online = [p for p in q.parameters()]
    offline = [p for p in target.parameters()]
    data = batches()

    def step(i):
        obs, act, rew, done, nxt = data[i % NBATCHES]
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            y = rew + GAMMA * (1 - done) * target(nxt).max(1).values
        qs = q(obs)
        qa = qs.gather(1, act).squeeze(1)
        loss = (0.5 * (qa - y) ** 2 + ALPHA * (torch.logsumexp(qs, 1) - qa)).mean()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for t, p in zip(offline, online):
                t.lerp_(p, TAU)  # t += tau (p - t)

    return step, params


def measure(step, seconds):
    for i in range(20):
        step(i)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step(n)
        n += 1
    return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--variants", default="dp,dp-secure,dp-4normal,plain")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = ap.parse_args()
    torch.set_default_dtype(getattr(torch, args.dtype))
    params = None
    for v in args.variants.split(","):
        step, info = build(v)
        if step is None:
            print("# %s skipped: %s" % (v, info), flush=True)
            continue
        params = info
        print(v, measure(step, args.seconds), flush=True)
    if params is not None:
        print("params", params, flush=True)


if __name__ == "__main__":
    sys.exit(main())
