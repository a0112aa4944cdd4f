#!/usr/bin/env python3
"""Reference trajectories for the Go classic control environments.

Independent pure-Python re-statement of Gymnasium's classic control
equations (gymnasium/envs/classic_control/{cartpole,acrobot,pendulum,
mountain_car}.py), in their operation order, in float64. Writes
classic_ref.json, read by classic_test.go. Regenerate with:

    python3 classic_ref.py > classic_ref.json
"""
import json
import math

pi = math.pi


def cartpole_step(state, action):
    gravity, masscart, masspole = 9.8, 1.0, 0.1
    total_mass = masspole + masscart
    length = 0.5
    polemass_length = masspole * length
    force_mag, tau = 10.0, 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4
    x, x_dot, theta, theta_dot = state
    force = force_mag if action == 1 else -force_mag
    costheta = math.cos(theta)
    sintheta = math.sin(theta)
    temp = (force + polemass_length * theta_dot**2 * sintheta) / total_mass
    thetaacc = (gravity * sintheta - costheta * temp) / (
        length * (4.0 / 3.0 - masspole * costheta**2 / total_mass))
    xacc = temp - polemass_length * thetaacc * costheta / total_mass
    x = x + tau * x_dot
    x_dot = x_dot + tau * xacc
    theta = theta + tau * theta_dot
    theta_dot = theta_dot + tau * thetaacc
    ns = [x, x_dot, theta, theta_dot]
    term = bool(x < -x_threshold or x > x_threshold
                or theta < -theta_threshold_radians or theta > theta_threshold_radians)
    return ns, list(ns), 1.0, term


def acrobot_dsdt(s):
    m1 = m2 = l1 = 1.0
    lc1 = lc2 = 0.5
    I1 = I2 = 1.0
    g = 9.8
    a = s[-1]
    theta1, theta2, dtheta1, dtheta2 = s[0], s[1], s[2], s[3]
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * math.cos(theta2)) + I1 + I2
    d2 = m2 * (lc2**2 + l1 * lc2 * math.cos(theta2)) + I2
    phi2 = m2 * lc2 * g * math.cos(theta1 + theta2 - pi / 2.0)
    phi1 = (-m2 * l1 * lc2 * dtheta2**2 * math.sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * math.sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * math.cos(theta1 - pi / 2) + phi2)
    ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * math.sin(theta2) - phi2) / (
        m2 * lc2**2 + I2 - d2**2 / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return [dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0]


def acrobot_rk4(y0, dt):
    dt2 = dt / 2.0
    k1 = acrobot_dsdt(y0)
    k2 = acrobot_dsdt([y + dt2 * k for y, k in zip(y0, k1)])
    k3 = acrobot_dsdt([y + dt2 * k for y, k in zip(y0, k2)])
    k4 = acrobot_dsdt([y + dt * k for y, k in zip(y0, k3)])
    return [y + dt / 6.0 * (a + 2 * b + 2 * c + d)
            for y, a, b, c, d in zip(y0, k1, k2, k3, k4)][:4]


def wrap(x, m, M):
    diff = M - m
    while x > M:
        x = x - diff
    while x < m:
        x = x + diff
    return x


def bound(x, m, M):
    return min(max(x, m), M)


def acrobot_obs(s):
    return [math.cos(s[0]), math.sin(s[0]), math.cos(s[1]), math.sin(s[1]), s[2], s[3]]


def acrobot_step(state, action):
    torque = [-1.0, 0.0, +1][action]
    ns = acrobot_rk4(list(state) + [torque], 0.2)
    ns[0] = wrap(ns[0], -pi, pi)
    ns[1] = wrap(ns[1], -pi, pi)
    ns[2] = bound(ns[2], -4 * pi, 4 * pi)
    ns[3] = bound(ns[3], -9 * pi, 9 * pi)
    term = bool(-math.cos(ns[0]) - math.cos(ns[1] + ns[0]) > 1.0)
    return ns, acrobot_obs(ns), (-1.0 if not term else 0.0), term


def angle_normalize(x):
    return ((x + pi) % (2 * pi)) - pi


def pendulum_step(state, u):
    g, m, l, dt = 10.0, 1.0, 1.0, 0.05
    th, thdot = state
    u = bound(u[0], -2.0, 2.0)
    costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
    newthdot = thdot + (3 * g / (2 * l) * math.sin(th) + 3.0 / (m * l**2) * u) * dt
    newthdot = bound(newthdot, -8, 8)
    newth = th + newthdot * dt
    ns = [newth, newthdot]
    return ns, [math.cos(newth), math.sin(newth), newthdot], -costs, False


def mountaincar_step(state, action):
    position, velocity = state
    velocity += (action - 1) * 0.001 + math.cos(3 * position) * (-0.0025)
    velocity = bound(velocity, -0.07, 0.07)
    position += velocity
    position = bound(position, -1.2, 0.6)
    if position == -1.2 and velocity < 0:
        velocity = 0.0
    term = bool(position >= 0.5 and velocity >= 0)
    ns = [position, velocity]
    return ns, list(ns), -1.0, term


class LCG:
    """Tiny deterministic action generator (not an RL random source)."""

    def __init__(self, seed):
        self.x = seed

    def next(self, n):
        self.x = (self.x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.x >> 33) % n


def rollout(step, state, policy, limit):
    steps = []
    for t in range(limit):
        a = policy(t, state)
        ns, obs, r, term = step(state, a)
        steps.append({"state": list(state), "action": a, "next_state": ns,
                      "next_obs": obs, "reward": r, "terminated": term})
        state = ns
        if term:
            break
    return steps


def main():
    out = []
    g = LCG(1)
    out.append({"env": "cartpole", "name": "random",
                "steps": rollout(cartpole_step, [0.01, -0.02, 0.03, 0.04], lambda t, s: g.next(2), 500)})
    out.append({"env": "cartpole", "name": "push-right-to-failure",
                "steps": rollout(cartpole_step, [-0.03, 0.01, -0.02, 0.02], lambda t, s: 1, 500)})
    out.append({"env": "cartpole", "name": "balance",
                "steps": rollout(cartpole_step, [0.0, 0.0, 0.01, 0.0],
                                 lambda t, s: 1 if s[2] + 0.5 * s[3] > 0 else 0, 120)})
    g = LCG(2)
    out.append({"env": "acrobot", "name": "random",
                "steps": rollout(acrobot_step, [0.05, -0.03, 0.02, 0.01], lambda t, s: g.next(3), 120)})
    out.append({"env": "acrobot", "name": "pump-to-goal",
                "steps": rollout(acrobot_step, [0.0, 0.0, 0.0, 0.0],
                                 lambda t, s: 2 if s[2] > 0 else 0, 500)})
    out.append({"env": "acrobot", "name": "fast-clipped",
                "steps": rollout(acrobot_step, [3.0, -3.0, 12.0, -27.0], lambda t, s: 2, 20)})
    g = LCG(3)
    out.append({"env": "pendulum", "name": "random-torques",
                "steps": rollout(pendulum_step, [pi - 0.1, 0.5],
                                 lambda t, s: [(g.next(1001) - 500) / 100.0], 200)})
    out.append({"env": "pendulum", "name": "unwrapped-angle",
                "steps": rollout(pendulum_step, [10.0, -7.5], lambda t, s: [2.0 if s[1] > 0 else -2.0], 200)})
    out.append({"env": "mountaincar", "name": "pump",
                "steps": rollout(mountaincar_step, [-0.5, 0.0], lambda t, s: 2 if s[1] >= 0 else 0, 200)})
    out.append({"env": "mountaincar", "name": "left-wall",
                "steps": rollout(mountaincar_step, [-1.15, -0.06], lambda t, s: 0, 30)})
    g = LCG(4)
    out.append({"env": "mountaincar", "name": "random",
                "steps": rollout(mountaincar_step, [-0.45, 0.01], lambda t, s: g.next(3), 200)})
    json.dump(out, __import__("sys").stdout, indent=None, separators=(",", ":"))


main()
