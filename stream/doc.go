// Package stream is dprl's NATS transport: wire protocol v1, its strict
// codecs and validation, a server helper that serves a Handler, an embedded
// nats-server, connection options and the Go client SDK.
//
// # Protocol v1
//
// JSON bodies under a configurable prefix (default "dprl"):
//
//	subject            kind                          body                                          reply
//	<p>.v1.act         request, queue group "dprl"   {"session":"s1","user":"u1","obs":[..],       {"action":1,"version":17,"step":3}
//	                                                  "reward":r}  (reward absent on first step)   (continuous: "action":[..])
//	<p>.v1.end         request                       {"session":"s1","user":"u1","reward":r,       {"ok":true,"used":true} or
//	                                                  "terminal":true}  (user as on act, optional)  {"ok":true,"used":false,"reason":".."}
//	<p>.v1.policy      published on each release     {"version":18,"epsilon":e,"delta":d}          —
//
// Every failure is a reply {"error":{"code":"...","message":"..."}}, never a
// silent drop. A request without a reply subject gets no reply: the server
// counts it (ServerConfig.OnNoReply) and does not handle an act request,
// whose action nobody would receive. Codes are stable and come from one registry (see Codes and the
// Code constants); *Error.Is compares codes, so
// errors.Is(err, stream.ErrObsDim) holds for an error received over the wire.
//
// An agent that stops answers every act and end request with the code
// shutting_down (errors.Is(err, stream.ErrShuttingDown)) for a short grace
// period before it unsubscribes; requests published after that get NATS's
// "no responders" (nats.ErrNoResponders), or time out if the agent died.
// Protocol v1 does not announce a shutdown on <p>.v1.policy, whose body is
// a release.
//
// # Decoding
//
// Requests are decoded by a strict hand-written reader (no reflection):
// unknown fields, duplicate fields, wrong types (null included), missing
// required fields (session and obs for act; session, reward and terminal
// for end), trailing data, wrong observation length, numbers that overflow
// float64 (1e400), bodies over Limits.MaxMessageBytes, and ids that are empty,
// too long, not UTF-8 or contain control characters are all rejected with a
// code. Field names are case-sensitive. Replies are decoded leniently
// (unknown fields ignored) so a v1 client works with a newer agent.
//
// # Security
//
// On an open NATS server anyone who connects can subscribe to ">" and read
// every observation and user id, join the act queue group and answer
// requests with actions of their choosing, and publish fake policy
// announcements. A secured server authenticates every connection (nkeys, or
// users and passwords; TLS, optionally mutual) and gives each identity only
// its role's subjects:
//
//	identity   publish                                subscribe
//	agent      <p>.v1.policy; each request's reply    <p>.v1.act (queue "dprl"), <p>.v1.end
//	           subject, once (response permission)
//	client C   <p>.v1.act[.*], <p>.v1.end[.*]         <p>.v1.policy, _INBOX.C.>
//
// Accounts builds these accounts for the embedded server (EmbeddedOptions
// Nkeys, Users, TLSConfig, MaxConn, MaxSubs); AgentPermissions and
// ClientPermissions are the same permissions for an external server's
// configuration. A client makes its requests with its own inbox prefix
// (WithInbox), the only inbox it may read, and authenticates with WithNKey,
// WithNKeyPair, WithUserPassword or WithCredentials. A server never handles
// a request whose reply subject is under its own prefix: its answer would be
// published there under the agent's identity (e.g. as a fake
// announcement).
//
// A cluster's server (dprl agent --role, dprl nats --auth) has four roles:
// ClusterAccounts builds their accounts with LearnerPermissions,
// ReplicaPermissions, ClientPermissions and OperatorPermissions. Only
// learners may read the update queue (clipped, un-noised per-session
// updates) or create a stream; replicas publish to the queue and read the
// ledger of record (each function says who may read what, and why).
//
// # Privacy
//
// With WithLocalDP the client clips each observation component and each
// reward to a public range and adds Gaussian noise scaled to the range's
// width before they leave the process (local DP, the analytic Gaussian
// mechanism per value; accountant.NewLocalGaussian of Client.LocalDP reports the epsilon per value, per
// step and per session), drawing from the *rand.Rand it is given;
// NewSecureRand makes a ChaCha8 generator seeded from crypto/rand.
// The server never logs ids, observations or rewards.
package stream
