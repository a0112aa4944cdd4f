#!/usr/bin/env python3
"""DP-SGD steps/s of Opacus on the three shapes dprl is compared on.

Opacus make_private (noise multiplier 1.0, clip 1.0, SGD lr 0.01, fixed
batches: poisson_sampling=False), float64, one thread; 64 prebuilt batches
cycled. A step is zero_grad, forward, loss, backward (per-sample gradients),
optimizer.step (per-sample clip, noise, division by the batch, SGD).
PYTHONPATH must hold the exported opacus/ and opt_einsum/ folders (docs/performance.md,
"Performance against peers"). Prints one line per shape: name steps/s.

    opacus_dpsgd.py [--seconds 3] [--shapes a,b,c]
"""
import argparse
import sys
import time
import warnings

import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
warnings.filterwarnings("ignore")

from opacus import PrivacyEngine  # noqa: E402

SHAPES = {
    "a": ("a-4-64-64-8-tanh-B16-mse", [4, 64, 64, 8], nn.Tanh, 16, False),
    "b": ("b-6-256-256-3-relu-B128-mse", [6, 256, 256, 3], nn.ReLU, 128, False),
    "c": ("c-4-64-64-2-tanh-B64-ce", [4, 64, 64, 2], nn.Tanh, 64, True),
}


def run(key, seconds):
    name, sizes, act, batch, ce = SHAPES[key]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(act())
    model = nn.Sequential(*layers)
    xs = [torch.randn(batch, sizes[0]) for _ in range(64)]
    if ce:
        ts = [torch.randint(0, sizes[-1], (batch,)) for _ in range(64)]
        crit = nn.CrossEntropyLoss()
    else:
        ts = [torch.randn(batch, sizes[-1]) for _ in range(64)]
        crit = nn.MSELoss()
    data = torch.utils.data.TensorDataset(torch.cat(xs), torch.cat(ts))
    loader = torch.utils.data.DataLoader(data, batch_size=batch)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=loader,
                                                      noise_multiplier=1.0, max_grad_norm=1.0,
                                                      poisson_sampling=False)

    def step(i):
        opt.zero_grad()
        loss = crit(model(xs[i % 64]), ts[i % 64])
        loss.backward()
        opt.step()

    for i in range(20):
        step(i)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step(n)
        n += 1
    print(name, n / (time.perf_counter() - t0), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--shapes", default="a,b,c")
    args = ap.parse_args()
    for k in args.shapes.split(","):
        run(k, args.seconds)


if __name__ == "__main__":
    sys.exit(main())
