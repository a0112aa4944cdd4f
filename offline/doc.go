// Package offline groups the offline modes, which run on a stored session
// log (package sessionlog) and charge the dataset's privacy budget through
// one protocol (package offline/budget):
//
//   - offline/evaluate: GPOPE (gradient-perturbed GTD2) and DP-LSW
//     off-policy evaluation, on the GTD2/LSTD core in offline/gtd2 and the
//     least-squares weighting in offline/lsw;
//   - offline/svt: the expert-level data release (sparse vector technique
//     over smoothed experts) and the expert data it is run on;
//   - offline/qlearn: discrete CQL and BCQ, trained with expert-level (or
//     trajectory-level) DP-SGD, or with selective DP-SGD on an SVT release
//     and its unstable set;
//   - offline/primorl: PriMORL, model-based offline RL whose dynamics
//     ensemble is trained with trajectory-level DP and whose SAC policy is
//     trained only in that released model;
//   - offline/policies: the behaviour and target policies the evaluations
//     read.
//
// This package holds no code.
package offline
