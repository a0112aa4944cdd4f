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
// # Privacy
//
// With WithLocalDP the client clips each observation component and each
// reward to a public range and adds Gaussian noise scaled to the range's
// width before they leave the process (local DP, the analytic Gaussian
// mechanism per value; LocalDPGuarantee reports the epsilon per value, per
// step and per session), drawing from the *rand.Rand it is given;
// NewSecureRand makes a ChaCha8 generator seeded from crypto/rand.
// The server never logs ids, observations or rewards.
package stream
