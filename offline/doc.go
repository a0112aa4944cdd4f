// Package offline holds what every offline mode shares: the dprl.sessions.v1
// session-log format (JSON Lines, one trajectory per line), its strict
// streaming reader and its writer, and the content hash that identifies a
// dataset in the privacy ledger. The offline algorithms live in the
// sub-packages gtd2 (GPOPE, LSTD), lsw (DP-LSW) and svt (expert-level data
// release); policies parses the behaviour and target policies they
// evaluate.
//
// # Format
//
//	{"session":"s1","user":"u1","expert":"e7","policy_version":3,
//	 "steps":[{"obs":[0.1,0.2],"action":1,"reward":0.5,"prob":0.9}],
//	 "final_obs":[0.3,0.1],"terminal":true}
//
// "action" is an integer for a discrete action space and an array for a
// continuous one; "prob" is the behaviour policy's probability of the action
// taken (its density for continuous actions), or "logp" its logarithm —
// exactly one of the two, except in a log without behaviour probabilities
// (an SVT stable release), which only a reader with
// ReaderOptions.OptionalProb accepts (Step.NoProb). "user", "expert",
// "policy_version" and
// "final_obs" are optional. Unknown fields, wrong types (null included), a
// key repeated in an object, keys not spelt exactly (no case folding),
// invalid UTF-8, numbers beyond float64's range, inconsistent dimensions and
// probabilities outside their range are errors that name the line and the
// field: the reader is as strict as the agent's wire decoder, so a record
// means one thing to every reader.
package offline
