// Package dsjson converts between Vowpal Wabbit's decision service JSON
// (DSJSON: one contextual-bandit decision a line, as `vw --dsjson` reads and
// Azure Personalizer writes) and dprl's session log (dprl.sessions.v1).
// The format is documented on the Vowpal Wabbit wiki ("DSJSON",
// https://github.com/VowpalWabbit/vowpal_wabbit/wiki/DSJSON) and defined by
// VW's JSON parser (its decision_service_interaction).
//
// # Import (Reader)
//
// Each line is one decision and becomes one session of one step, terminal:
//
//	DSJSON field          dprl
//	EventId               session id (required; 1 to 256 bytes, no control characters)
//	_labelIndex           action: the 0-based index of the chosen action
//	_label_Action         the 1-based id of the chosen action; must be _labelIndex+1 when both are given (either suffices)
//	_label_cost           reward = -cost (VW's convention: a cost is a negative reward); required
//	_label_probability    prob: the logged probability of the chosen action, in (0, 1]; required
//	a                     action ids (1-based) in ranked order: a permutation of 1..K whose first is the chosen action; checked, not kept
//	p (or _p)             the logged probabilities in the order of a: each in [0, 1], summing to 1 within 1e-3, p[0] equal to _label_probability (relative 1e-6); checked, not kept
//	c                     obs: the numeric features, by the rule below (required)
//	c._multi              per-action features: K = len(_multi) actions, their features in obs after the shared ones
//	pdrop                 fraction of events dropped before logging, in [0, 1): must be the same on every line (see below); reported, not kept
//	_skipLearn            true: the line is skipped (counted), as VW's parser skips the event; its label is not used
//	o                     outcomes of the delayed reward events: checked (an array of objects), not kept: _label_cost already is their joined cost
//	_original_label_cost  checked (a number), not kept
//	Timestamp, Version    checked (strings), not kept
//	VWState               checked (an object), not kept
//	_outcomes, c._slots, _multi[i]._slot_id   refused: "ccb/slates not supported"
//	_label_ca, pdf        refused: continuous actions (CATS) not supported
//
// Observation rule: the features of c are flattened to (path, value) pairs:
// an object member's path is its key, an array element's its index
// ("shared.f1", "obs[3]", "_multi[2].item.price"). Numbers are values as
// they are, true is 1 and false 0 (VW: a true feature has value 1, a false
// one is absent, that is 0). A string value (VW's categorical "namevalue"
// feature, or _text) is refused with its line and path: it has no numeric
// value, and a hashing or one-hot rule would have to fix a vocabulary the
// stream cannot see in advance; encode categories as numeric features
// (0/1 indicators) before importing. "_tag" members (a label, not a feature)
// are skipped; any other key starting with "_" inside c is refused as
// unknown. The shared features come first, sorted by path (array indices
// numerically), then each _multi item's, item by item, each sorted the same
// way. The first decision fixes the feature paths; every later decision
// must have exactly the same ones (an error names the first difference),
// since a session log's observations have one length. The paths are
// reported (Reader.Features) so the obs columns can be named. The number of
// actions K (len(_multi), else len(a)) is likewise the same on every line
// where it is known.
//
// pdrop: VW weights a logged event by 1/(1-pdrop) because the logger kept
// it with probability 1-pdrop (its JSON parser's apply_pdrop divides the
// example's weight by 1-pdrop and refuses pdrop = 1). A session log has no weight field. When
// pdrop is the same on every line the kept events are a uniform subsample
// of the decisions, so every per-decision mean (and so every off-policy
// estimate) is the same with or without the common weight, and the import
// is exact for them; only counts scale. A pdrop that differs between lines
// would need per-record weights the format does not carry, and is refused
// with the line number.
//
// Strictness: unknown top-level fields are errors (ReaderOptions.IgnoreUnknown
// skips them instead, still checking they are JSON without null); so are
// keys repeated in an object, wrong types, null, NaN or infinite numbers
// (not JSON, or beyond float64's range), probabilities outside their range
// and a chosen index outside the actions. Every error is a
// *sessionlog.LineError naming the line. The reader holds one line at a
// time (and the first decision's feature paths), so it does not check that
// EventIds are unique: that would hold every id, and a dataset's identity in
// the ledger does not depend on ids (sessionlog.ContentHash).
//
// # Export (Writer)
//
// A session log whose sessions have exactly one step, with a discrete
// action and a behaviour probability, is written as DSJSON, the inverse of
// the import: EventId = session id, _labelIndex = action, _label_Action =
// action+1, _label_cost = -reward, _label_probability = prob, "a" = the
// chosen action's id followed by the other ids in increasing order, and
// c = {"obs": [the observation], "_multi": K items, item k holding the one
// feature "action": {"a<k+1>": 1}} so that VW's --cb_adf sees K distinct
// actions. "p" is omitted: a session log holds the probability of the
// chosen action only. User, expert and policy version are not written. A
// multi-step session, a continuous action or a step without a probability
// is refused, naming the session; there is no flattening of trajectories.
// Importing the export with ReaderOptions.SharedOnly (the per-action
// features are then not part of obs) gives back the log's sessions.
//
// # Session log (NewRotatingWriter)
//
// The agent can log its closed sessions in DSJSON directly (dprl agent
// --session-log-format dsjson): NewRotatingWriter is sessionlog's
// RotatingWriter with LogEncoder as its encoder, so the files
// (sessions-<UTC time>.dsjson) rotate, sync and are retained as the
// dprl.sessions.v1 log's. Each session is one line, as the export writes
// it; a session that is not one terminal step with a discrete action and
// a behaviour probability is refused (sessionlog.ErrUnsupported) and
// nothing of it is written: the agent counts it as dropped.
package dsjson
