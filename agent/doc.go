// Package agent is the long-running DP learner-server of dprl: it serves
// each action of a user session from the current policy, buffers finished
// sessions, and every K sessions applies one DP-PPO update (DPPG, Algorithm 2:
// per-user clipped local updates, averaged with the fixed denominator K,
// Gaussian noise N(0, (zS/K)^2 I)), writing the new policy and its privacy
// cost to the ledger in one synced batch before serving it.
//
// # Sessions
//
// A session is pinned to the policy version it started with. Act records
// (observation, action, behaviour log-probability) and the reward of the
// previous action; End closes it with the last reward. A session that ends
// truncated — by End with terminal false, by the step limit or by the idle
// timeout — drops its last step, whose next observation is unknown, and
// bootstraps from that step's observation. A session is learned from at
// most once, only while its version is at most MaxStaleness behind the
// current one (the local update's importance ratios use the recorded
// behaviour log-probabilities), and with user ids at most one session per
// user enters an update; a user at the update or epsilon cap is still served
// but no longer learned from.
//
// # Concurrency
//
// Act and End are safe for concurrent use and never wait for an update:
// updates run on their own goroutine (Run) with a worker pool for the local
// updates, and the serving policy is swapped atomically after the release is
// durable.
package agent
