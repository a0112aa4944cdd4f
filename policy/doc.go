// Package policy holds the learning core of dprl's DP policy gradient (DPPG:
// Rio et al., "Differentially Private Policy Gradient"): tanh MLPs over a flat parameter vector,
// categorical and diagonal Gaussian action heads, Adam, GAE(lambda), the
// per-user PPO local update (Algorithm 3) and the DP aggregation of K clipped
// local updates with Gaussian noise (Algorithm 2). Train runs the whole of
// Algorithm 2 in process against simulated users (package sims); Snapshot is
// the versioned, checksummed binary form of a released policy.
//
// # Privacy
//
// The learner state is one joint vector theta = [policy params; value params].
// A user's local update g_u = theta_u - theta is projected block-wise onto
// ||g_pi|| <= S_pi and ||g_v|| <= S_v with S_pi^2 + S_v^2 = S^2, so ||g_u|| <= S
// and one Gaussian mechanism N(0, (zS/K)^2 I) covers the policy and the critic.
// Adam's moments are reset from the noised global update at each iteration and
// every user's local update in an iteration starts from the same optimizer
// state, so no raw information passes from one user to another.
//
// # DP-SGD baselines
//
// TrainDPSGD runs the DP-SGD baselines (DP-SGD, Abadi et al. 2016, "Deep
// Learning with Differential Privacy", applied to RL as in Doulazmi & Odonnat
// 2023, "Differential privacy in reinforcement learning"): REINFORCE
// (privacy unit: one episode, each used once, so one analytic Gaussian
// mechanism per episode) and DQN (privacy unit: one transition, Poisson
// minibatches from the replay buffer, composed with the PLD accountant, the
// RDP accountant kept as a cross-check).
// Per-unit gradients are clipped by GhostClipper, which computes per-unit
// norms from layer activations and back-propagated signals (Goodfellow 2015)
// and the clipped sum in a second, scaled pass, never materialising per-unit
// gradients.
//
// # Conventions
//
// Kernels are dst-first and allocation-free once their workspaces have grown;
// they panic on dimension mismatch (programmer error). Configuration is
// validated at construction. Every random draw comes from a *rand.Rand passed
// in. Types holding workspaces (MLP, Learner, Aggregator) are not safe for
// concurrent use.
package policy
