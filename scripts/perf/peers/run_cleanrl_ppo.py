#!/usr/bin/env python3
"""Runs CleanRL's cleanrl/ppo.py, unmodified, on one thread in float64 (or in
PyTorch's own default, float32, with --dtype float32 before the script's path).

CleanRL imports tyro and torch.utils.tensorboard, which Debian's packages lack:
this wrapper puts a small stand-in for tyro.cli (dataclass fields from
--field-name value flags) and a no-op SummaryWriter in sys.modules, limits
torch to one thread, makes float64 (or float32) the default dtype, and runs the script with
runpy. PYTHONPATH must hold the exported cleanrl/ and gymnasium/ folders
(docs/performance.md, "Performance against peers").

    run_cleanrl_ppo.py [--dtype float64|float32] PATH/TO/cleanrl/ppo.py --env-id CartPole-v1 --total-timesteps 100000 ...
"""
import dataclasses
import runpy
import sys
import types

import torch

torch.set_num_threads(1)
dtype = "float64"
if len(sys.argv) > 2 and sys.argv[1] == "--dtype":
    dtype = sys.argv[2]
    del sys.argv[1:3]
if dtype not in ("float64", "float32"):
    raise SystemExit("--dtype must be float64 or float32, not %s" % dtype)
torch.set_default_dtype(getattr(torch, dtype))


def _cli(cls):
    kw = {}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        name = args[i].lstrip("-").replace("-", "_")
        if name not in fields:
            raise SystemExit("unknown flag %s" % args[i])
        typ = fields[name].type
        raw = args[i + 1]
        if typ in (bool, "bool"):
            val = raw.lower() in ("1", "true", "yes")
        elif typ in (int, "int"):
            val = int(raw)
        elif typ in (float, "float"):
            val = float(raw)
        else:
            val = raw
        kw[name] = val
        i += 2
    return cls(**kw)


tyro = types.ModuleType("tyro")
tyro.cli = _cli
sys.modules["tyro"] = tyro


class _NoWriter:
    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        return lambda *a, **k: None


tb = types.ModuleType("torch.utils.tensorboard")
tb.SummaryWriter = _NoWriter
sys.modules["torch.utils.tensorboard"] = tb

script = sys.argv[1]
sys.argv = [script] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
