// Package sessionlog is the dprl.sessions.v1 session log: the format the
// agent writes (one closed session a line, JSON Lines), its strict streaming
// reader and writer, the rotating writer the agent uses (it takes any
// record Encoder: package dsjson's writes DSJSON), the streaming
// index the offline modes read a log through, and the content hash that
// identifies a dataset in the privacy ledger.
//
// # Format
//
//	{"session":"s1","user":"u1","expert":"e7","policy_version":3,
//	 "steps":[{"obs":[0.1,0.2],"action":1,"reward":0.5,"prob":0.9}],
//	 "final_obs":[0.3,0.1],"terminal":false}
//
// "action" is an integer for a discrete action space and an array for a
// continuous one; "prob" is the behaviour policy's probability of the action
// taken (its density for continuous actions), or "logp" its logarithm —
// exactly one of the two, except in a log without behaviour probabilities
// (an SVT stable release), which only a reader with
// ReaderOptions.OptionalProb accepts (Step.NoProb). "user", "expert",
// "policy_version" and "final_obs" are optional. "final_obs" is the
// observation after the last step of a session that did not terminate
// (truncated, or ended by the client), which a learner bootstraps from; the
// writers in this repository omit it for a terminal session, and readers
// ignore it there (nothing follows a terminal step). Unknown fields, wrong types (null
// included), a key repeated in an object, keys not spelt exactly (no case
// folding), invalid UTF-8, numbers beyond float64's range, inconsistent
// dimensions and probabilities outside their range are errors that name the
// line and the field: the reader is as strict as the agent's wire decoder,
// so a record means one thing to every reader.
package sessionlog
