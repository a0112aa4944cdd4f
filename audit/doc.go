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
// maximises a lower bound below; on the held-out half it counts the rule's
// false positives (releases of D' called D) and false negatives. The tests:
//
//   - projection: the release projected on the difference of the mean
//     releases of D and D' on the calibration half (the optimal test when the
//     noise is Gaussian, isotropic and the release a shifted mean; the DPPG
//     and bandmf harnesses post-process correlated noise into that form);
//   - white-box projection: the release projected on the canary's
//     un-noised shift (canaries that give it);
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
// the rule was fixed before they were drawn.
//
// # Gaussian-DP bounds: the power to see a 2x error
//
// The largest epsilon bound a run can report is about log(Runs / 12) (no
// error among Runs / 2 held-out releases per side, at the Bonferroni
// level), and a Gaussian mechanism's epsilon at delta = 1e-5 lives in tails
// a few thousand releases do not reach: at a claim of epsilon 1 and 10,000
// runs, a copy with half the noise (true epsilon 2.15) shows 0.6 to 0.9, so
// the epsilon bound alone cannot vouch that the noise is not off by two.
// Every mechanism audited here claims more than (epsilon, delta): its
// accounting says that a canary's participation is the Gaussian mechanism
// of multiplier z (or k of them at q = 1), that is mu-Gaussian-DP with mu =
// 1 / z (sqrt(k) / z) (Dong, Roth & Su 2022, "Gaussian differential
// privacy"), and the printed (epsilon, delta) is a point of that curve
// (Claim.Mu). A mu-GDP mechanism has FNR >= Phi(Phi^-1(1 - FPR) - mu) for
// every test, so
//
//	mu >= Phi^-1(1 - FPR_ub) - Phi^-1(FNR_ub)
//
// (MuLowerBound; the Gaussian-DP auditing of Nasr et al. 2023, "Tight
// auditing of differentially private machine learning"). This bound lives at
// moderate error rates, which a few thousand releases measure well: it
// refutes the claim's mu when the noise is halved or the sensitivity
// doubled (mu doubles), at the default epsilon 1 and 10,000 runs, and at
// epsilon 4 and 600 runs in the tests. A mu above the claimed one refutes
// the Gaussian accounting the printed epsilon rests on; the report also
// gives the epsilon at delta of the bounding mu (GDPEpsilonLB). Each test's
// rule is fitted twice on the calibration half, once for each criterion,
// and all the resulting bounds are taken at level (1 - Confidence) / (2 m)
// for m the number of (test, criterion) pairs over all canaries of the
// target (Bonferroni), so that every bound of the target holds together
// with probability at least Confidence.
//
// The white-box projection test projects the release on the canary's
// un-noised shift (Canary.Shift: the mechanism's own code run without
// noise, or with noise far below every value), so that its direction
// carries no noise; the projection on the calibration means loses power in
// proportion to the release's dimension.
//
// # What is audited
//
// Through their real code paths, each at a claim calibrated by the
// accountant the command uses: DPPG's server step (DPPG: policy.Aggregator
// with independent, tree and square-root noise), the same aggregator with
// banded noise (bandmf, the agent's correlated noise), GPOPE (offline/gtd2,
// q = 1), one DP-SGD step of "dprl offline learn" (Learn: qlearn.Learner's
// DPStep at q = 1) and one round of "dprl offline primorl"'s private
// ensemble training (PriMORL: primorl.Trainer at q = 1). Each of them is
// also audited with every Fault (noise / 2, sensitivity x 2), set through
// the parameters the real code path already takes (the noise multiplier,
// the clip norm): every one must be flagged. The copies of the aggregation
// step with one Defect each (Mutant) show the tests' power against the
// defects the real code once had or could regress to (no noise, unclipped,
// NaN pass-through, float-lattice noise).
//
// Not audited: the sparse vector technique (offline/svt: one trajectory's
// release is AboveThreshold at eps' = eps1 / sqrt(32 T ln(2 / delta1)),
// composed over T trajectories by advanced composition, so even at T = 1
// and delta1 = 1e-5 one run reveals at most eps1 / 20 of the eps1 printed,
// and a 2x error in its noise stays far below the claim; an audit with the
// power to see it must target eps' and the discrete stable-length release,
// a harness of its own not written yet), DP-LSW (offline/lsw), Poisson subsampling (q < 1: the audits
// run every mechanism at q = 1, whose guarantee is the Gaussian one),
// several steps of learn and primorl, and the agent end to end (sessions
// through the HTTP or NATS transport, local PPO updates and the ledger);
// only the aggregation those paths share.
//
// RunSuite runs a Suite ("dprl audit") from a SuiteConfig, each target with
// its own ChaCha8 generator keyed by the seed and the target's name
// (TargetKey), so that a target's numbers do not depend on which others run,
// and times each target.
package audit
