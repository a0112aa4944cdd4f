#!/usr/bin/env python3
"""SAC updates per second in PyTorch: the peer of dprl's policy/sac.

The update is CleanRL's sac_continuous_action.py written out (ReLU MLPs,
tanh-squashed Gaussian actor with log-std squashed to [-5, 2], twin critics
with Polyak targets, automatic temperature, Adam 3e-4), with one actor and
one temperature step per critic step, as dprl's: sample a minibatch of 256
from a replay buffer of 10,000 random transitions of Pendulum's dimensions
(3 observations, 1 action in [-2, 2]), then the update. float64 (or
PyTorch's own default, float32, with --dtype float32), one thread.
Prints one line per network size: name updates/s.

    torch_sac.py [--seconds 5] [--hidden 256,256 64,64] [--dtype float64|float32]
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

LOG_STD_MIN, LOG_STD_MAX = -5, 2


def mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Actor(nn.Module):
    def __init__(self, obs, act, hidden, low, high):
        super().__init__()
        self.net = mlp([obs] + hidden + [2 * act])
        self.act = act
        self.register_buffer("scale", torch.tensor((high - low) / 2.0))
        self.register_buffer("bias", torch.tensor((high + low) / 2.0))

    def get_action(self, x):
        out = self.net(x)
        mean, log_std = out[:, :self.act], torch.tanh(out[:, self.act:])
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)
        std = log_std.exp()
        normal = torch.distributions.Normal(mean, std)
        x_t = normal.rsample()
        y_t = torch.tanh(x_t)
        action = y_t * self.scale + self.bias
        log_prob = normal.log_prob(x_t)
        log_prob -= torch.log(self.scale * (1 - y_t.pow(2)) + 1e-6)
        return action, log_prob.sum(1, keepdim=True)


def run(hidden, seconds):
    obs, act, B, gamma, tau = 3, 1, 256, 0.99, 0.005
    actor = Actor(obs, act, hidden, -2.0, 2.0)
    q1, q2 = mlp([obs + act] + hidden + [1]), mlp([obs + act] + hidden + [1])
    q1t, q2t = mlp([obs + act] + hidden + [1]), mlp([obs + act] + hidden + [1])
    q1t.load_state_dict(q1.state_dict())
    q2t.load_state_dict(q2.state_dict())
    q_opt = torch.optim.Adam(list(q1.parameters()) + list(q2.parameters()), lr=3e-4)
    a_opt = torch.optim.Adam(actor.parameters(), lr=3e-4)
    log_alpha = torch.zeros(1, requires_grad=True)
    al_opt = torch.optim.Adam([log_alpha], lr=3e-4)
    target_entropy = -float(act)
    N = 10000
    S, A, R, S2, D = torch.randn(N, obs), 4 * torch.rand(N, act) - 2, -torch.rand(N, 1), torch.randn(N, obs), torch.zeros(N, 1)

    def update():
        idx = torch.randint(0, N, (B,))
        s, a, r, s2, d = S[idx], A[idx], R[idx], S2[idx], D[idx]
        alpha = log_alpha.exp().detach()
        with torch.no_grad():
            a2, logp2 = actor.get_action(s2)
            qn = torch.min(q1t(torch.cat([s2, a2], 1)), q2t(torch.cat([s2, a2], 1))) - alpha * logp2
            y = r + gamma * (1 - d) * qn
        qf = F.mse_loss(q1(torch.cat([s, a], 1)), y) + F.mse_loss(q2(torch.cat([s, a], 1)), y)
        q_opt.zero_grad()
        qf.backward()
        q_opt.step()
        pi, logp = actor.get_action(s)
        qpi = torch.min(q1(torch.cat([s, pi], 1)), q2(torch.cat([s, pi], 1)))
        actor_loss = (alpha * logp - qpi).mean()
        a_opt.zero_grad()
        actor_loss.backward()
        a_opt.step()
        alpha_loss = (-log_alpha.exp() * (logp.detach() + target_entropy)).mean()
        al_opt.zero_grad()
        alpha_loss.backward()
        al_opt.step()
        with torch.no_grad():
            for p, pt in zip(list(q1.parameters()) + list(q2.parameters()), list(q1t.parameters()) + list(q2t.parameters())):
                pt.data.mul_(1 - tau).add_(tau * p.data)

    for _ in range(5):
        update()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        update()
        n += 1
    print("%dx%d-B256" % tuple(hidden), n / (time.perf_counter() - t0), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--hidden", nargs="*", default=["256,256", "64,64"])
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = ap.parse_args()
    torch.set_default_dtype(getattr(torch, args.dtype))
    for h in args.hidden:
        run([int(x) for x in h.split(",")], args.seconds)


if __name__ == "__main__":
    main()
