// Package sac is Soft Actor-Critic (Haarnoja, Zhou, Abbeel and Levine,
// "Soft Actor-Critic: Off-Policy Maximum Entropy Deep Reinforcement Learning
// with a Stochastic Actor", ICML 2018, and "Soft Actor-Critic Algorithms and
// Applications", 2018, for the automatic temperature) for continuous
// actions, on float64 with dprl's MLPs and GEMM: a tanh-squashed diagonal
// Gaussian actor, twin Q critics with Polyak-averaged targets, and the
// temperature alpha tuned towards a target entropy.
//
// It serves two purposes. Online (Train) it is a learner in its own right
// and the behaviour that writes the mixed-quality session logs of offline
// RL. Offline, PriMORL ("Private Model-based Offline RL") trains it only on
// rollouts of a privately trained dynamics model: the private data never
// reaches SAC, so its policy is post-processing of the model's release.
// Either way SAC itself is not differentially private: its replay buffer
// holds raw transitions.
//
// The update (Agent.Update) follows Spinning Up's pseudo-code, which the
// PriMORL paper's Algorithm 4 cites: for a minibatch of B transitions,
//
//	y = r + gamma (1 - terminated) (min_i Q'_i(s', a') - alpha log pi(a'|s')), a' ~ pi(s'),
//	L_Q = sum_i mean (Q_i(s, a) - y)^2,
//	L_pi = mean (alpha log pi(a~|s) - min_i Q_i(s, a~)), a~ = tanh(mu + sigma eps) (reparameterised),
//	L_alpha = mean (-alpha (log pi(a~|s) + H_target)), a gradient step on log alpha,
//	theta'_i <- tau theta_i + (1 - tau) theta'_i.
//
// log pi is the density of the squashed action tanh(u) in [-1, 1]^A, before
// its affine map to the action box (Spinning Up's convention: the target
// entropy is measured there), with log(1 - tanh(u)^2) = 2 (log 2 - u -
// softplus(-2u)); the actor's log standard deviation is squashed into
// [LogStdMin, LogStdMax] by tanh (as CleanRL's SAC). Every random draw comes
// from a *rand.Rand passed in; updates allocate nothing.
package sac
