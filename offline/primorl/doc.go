// Package primorl is the model-learning core of PriMORL ("Private
// Model-based Offline RL", its Algorithms 1-3): an ensemble of Gaussian
// dynamics models trained on a log of trajectories with trajectory-level
// differential privacy, by TDP Model Ensemble Training.
//
// # Model
//
// N models, each an MLP with Swish hidden layers from a scaled (s, a) to
// the mean and log-variance of the scaled (s' - s, r). Inputs and targets
// are divided by public scales (Scales: the environment's observation and
// action bounds and its public reward range, never statistics of the
// data), so no normalisation statistic is computed from the private log.
// The predicted log-variance is kept in [MinLogVar, MaxLogVar] by two
// softplus bounds (as MBPO's models). The loss of a model on a minibatch is
// the mean Gaussian negative log-likelihood
//
//	sum_j 0.5 ((y_j - mu_j)^2 exp(-v_j) + v_j)
//
// plus WeightDecay/2 times the squared norm of its weight matrices.
//
// # TDP Model Ensemble Training (Algorithms 2 and 3)
//
// Each of T rounds draws U_t by including each of the K training
// trajectories independently with probability q (noise.Bernoulli: a rate
// at most q). Each sampled trajectory k starts from the current ensemble
// theta, runs E local epochs of gradient descent over minibatches of B of
// its own transitions (every model on every minibatch), and after each
// step its whole delta theta_k - theta is projected by EnsembleClip: flat
// (each model's delta to norm C/sqrt(N)) or per layer (each layer of each
// model to C/sqrt(N L)), so that ||Delta_k|| <= C. Then
//
//	theta <- theta + (1/(qK)) sum_{k in U_t} Delta_k + N(0, (z C/(qK))^2 I).
//
// # Privacy
//
// Two datasets differing in one trajectory (add/remove) change the sum by
// one clipped delta, of norm at most C, and the denominator qK is fixed, so
// each round is the Gaussian mechanism with noise multiplier z on a
// Poisson subsample of rate q; T rounds compose as the Poisson-subsampled
// Gaussian (q, z, T) (Abadi et al., "Deep Learning with Differential
// Privacy", 2016; Mironov, Talwar and Zhang, "Rényi Differential Privacy
// of the Sampled Gaussian Mechanism", 2019), priced by the ledger's PLD
// accountant with RDP as the cross-check (Privacy). T is fixed before the
// run: an early stop decided on private data would make the number of
// rounds data-dependent. The noise is exact (noise.Gaussian) and drawn
// from the generator the caller passes: the secure one in production.
// With z = 0 the training is the paper's "no privacy" ablation (clipped,
// unnoised), which has no epsilon.
//
// # Policy (Algorithm 4): post-processing
//
// SAC trains only in ModelEnv, the pessimistic MDP of the released
// ensemble. Everything it reads is the release or public knowledge of the
// environment, so whatever it does costs nothing: the paper's rollouts of
// h steps from the public start states, and this package's additions, each
// measured in docs/offline.md: rollouts that branch from states earlier
// rollouts reached (SetBranch), predictions averaged with their mirror
// images under the environment's symmetry (SetMirror), the task's own
// reward function instead of the predicted reward (SetPublicReward), one
// model per rollout (SetModelPerRollout), and the choice of the released
// checkpoint, among one or more SAC runs, by its return on whole episodes
// of the ensemble's mean dynamics (SetMeanStep; Config.Select and
// Config.Policies).
package primorl
