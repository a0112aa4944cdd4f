// Package agent is the long-running DP learner-server of dprl: it serves
// each action of a user session from the current policy, buffers finished
// sessions, and every K sessions applies one DP-PPO update (DPPG, Algorithm 2:
// per-user clipped local updates, averaged with the fixed denominator K,
// Gaussian noise N(0, (zS/K)^2 I)), writing the new policy and its privacy
// cost to the ledger in one synced batch before serving it.
//
// This package is the serving core; package agent/service is the
// operator shell that resolves the operator's settings, runs the process
// (NATS and its security, the wire protocol's handler, the ops server,
// models, backups) and drives the core (see its package doc for the line
// between the two).
//
// With a fixed policy (Config.Fixed, dprl agent --serve-policy) it serves
// a released SAC actor instead and never learns: sessions are served,
// limited and logged as below, but none is queued, no update is made and
// nothing is written to the ledger; serving a DP release is
// post-processing and spends no budget (see FixedPolicy).
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
// Batch membership never depends on a session's content: a closed session
// is queued unless it is stale, the queue is full or its user is at a cap
// (its timing and its user id), and every queued session of a batch takes
// part in the update. A session with no usable step (truncated after one
// step) or whose local update fails (a non-finite value, such as a return
// that overflows) contributes the zero vector, within the sensitivity
// bound, and is counted and charged like any other.
//
// # Admission
//
// A session is named by its session id and the user id that opened it: a
// request naming another user does not reach it and gets the reply a
// session that never existed gets. The agent bounds what clients can hold:
// open sessions in all, per user and per connection (the requester's inbox
// prefix, stream.ReplyOrigin), steps per session, a session's idle time
// and lifetime, and the memory of all steps held (Config). Finished
// sessions wait in one bounded queue per user (anonymous sessions: per
// connection) and batches take the queues' heads in turn, one session per
// user, so one user's flood takes one place per update. Every reward is
// clipped to the public reward bound on arrival.
//
// # What the agent serves and logs
//
// Released, with the epsilon of one session beside it: every policy
// version (the ledger entry, the snapshot and the dprl.v1.policy
// announcement) and every action served. /status serves only public values:
// the policy version, the number of releases, the per-session epsilon and
// delta, and the ledger head. No served or logged value is computed from
// sessions' content (observations, actions, rewards, returns, lengths,
// gradient norms, whether a local update failed): polling /status around
// each End recovers nothing of a session.
//
// The status page (GET / on the ops server of agent/service; package
// agent/statuspage renders it) shows these values and the operational ones
// below, each panel labelled a release covered by the guarantee (with its
// epsilon and delta) or operational: the policy version, releases over time
// and the users' composed epsilons against the cap, read from the ledger;
// sessions by outcome and act latency, read from the Prometheus registry;
// and, when service.ServiceConfig.EnvSpec names a simulator, the learning
// curve of the released versions on that public simulator (post-processing
// of the releases; the agent releases no noised return, so there is no
// other learning curve). The curve is computed by one background goroutine
// while the page is viewed, at most about 40 versions of 20 episodes each,
// cached per version, with a fixed seed per version.
//
// /metrics and the logs are operational, for the operator only; they carry
// no epsilon and are not differentially private. The metrics count protocol
// events as they happen — requests and their latency, refusals by wire
// error code, sessions opened, closed and open, sessions queued or set
// aside for a scheduling reason (staleness, a full queue, user caps),
// releases — exact counts that the operator, who runs the transport and
// sees every message in the clear, could make anyway, and which polled
// around one session can reveal its timing and number of steps. So the ops
// server must be reachable by the operator only (bind it to loopback or an
// operator network), like NATS and the session logs; none of its values may
// be shown to users or published.
//
// # Local DP on the client
//
// stream.WithLocalDP is bounded and accounted: each observation component
// and each reward is clipped to a public range and receives Gaussian noise
// of standard deviation z times the range's width, so each value is
// (epsilon, delta)-DP by the analytic Gaussian mechanism at multiplier z,
// one step (d components and a reward) at multiplier z/sqrt(d+1), and a
// session of T steps at z/sqrt(T(d+1)) (accountant.LocalGaussian). That
// protection holds against the agent itself; it composes with, and does not
// replace, the agent's per-session guarantee on its releases, which the
// agent computes from its own clipping and noise whatever the client did.
//
// # Concurrency
//
// Act and End are safe for concurrent use and never wait for an update:
// updates run on their own goroutine (Run) with a worker pool for the local
// updates, and the serving policy is swapped atomically after the release is
// durable.
package agent
