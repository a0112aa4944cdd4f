// Package audit is an empirical privacy auditor: it runs a mechanism many
// times on a pair of neighbouring inputs and reports a lower bound on its
// epsilon that holds with a stated confidence. A lower bound above the
// epsilon a mechanism claims proves the claim false (with that confidence);
// one below it proves nothing, but an auditor that flags deliberately broken
// variants of the same code (Mutant) shows the tests have the power to see
// the defects that matter.
//
// # Method
//
// A Target is a mechanism with its claimed (epsilon, delta) and a list of
// canaries; each Canary is a pair of neighbouring inputs, D with the canary
// and D' without it, run through the mechanism's real code path (white box:
// the auditor builds the inputs and, where it helps, knows the un-noised
// values). Run releases Runs times on each side and splits the releases in
// two halves. On the calibration half it fits, for every test, the
// threshold rule "the release came from D iff score >= t" (or <= t) that
// maximises the lower bound below; on the held-out half it counts the rule's
// false positives (releases of D' called D) and false negatives. The tests:
//
//   - projection: the release projected on the difference of the mean
//     releases of D and D' on the calibration half (the optimal test when the
//     noise is Gaussian, isotropic and the release a shifted mean; the DPPG
//     harness post-processes correlated noise into that form);
//   - non-finite: whether any coordinate is NaN or infinite;
//   - float-lattice: whether the release fits, on the lattice of Go's
//     ziggurat normal sampler, the un-noised value of D rather than that of
//     D' (ZigguratLattice; canaries that give the un-noised values).
//
// Every mechanism that is (epsilon, delta)-DP has, for every test, false
// positive and false negative rates with FPR + e^epsilon FNR >= 1 - delta and
// FNR + e^epsilon FPR >= 1 - delta (Kairouz, Oh & Viswanath 2015, "The
// composition theorem for differential privacy", Theorem 2.1), so one-sided
// upper bounds on the two rates give
//
//	epsilon >= max(log((1 - delta - FNR_ub) / FPR_ub), log((1 - delta - FPR_ub) / FNR_ub))
//
// (EpsilonLowerBound; the auditing recipe of Jagielski, Ullman & Oprea 2020,
// "Auditing differentially private machine learning: how private is private
// SGD?", and Nasr et al. 2021, "Adversary instantiation: lower bounds for
// differentially private machine learning"). The bounds are Clopper-Pearson
// (ClopperPearsonUpper) on the held-out counts, which are binomial because
// the rule was fixed before they were drawn. Each is taken at level
// (1 - Confidence) / (2 m) for m the number of tests over all canaries of
// the target (Bonferroni), so that every bound of the target, and hence the
// reported maximum, holds together with probability at least Confidence.
//
// The largest bound a run can report is about log(Runs / 2) (no error at all
// among Runs / 2 held-out releases per side), so a claim can only be shown
// false if it is below that ceiling; the real mechanisms' bounds, for
// Gaussian mechanisms whose epsilon at small delta lives in tails a few
// thousand releases do not reach, sit far below their claims.
//
// # What is audited
//
// DPPG's server step (DPPG: policy.Aggregator with independent, tree and
// square-root noise), GPOPE (GPOPE: offline/gtd2), and the mutants of the
// aggregation step (Mutant). Not audited: the sparse vector technique
// (offline/svt), DP-LSW (offline/lsw), subsampled GPOPE (q < 1), and the
// agent end to end (sessions through the HTTP or NATS transport, local PPO
// updates and the ledger); only the aggregation those paths share.
//
// RunSuite runs a Suite ("dprl audit") from a SuiteConfig, each target with
// its own ChaCha8 generator keyed by the seed and the target's name
// (TargetKey), so that a target's numbers do not depend on which others run.
package audit
