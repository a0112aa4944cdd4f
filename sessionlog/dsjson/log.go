package dsjson

import (
	"fmt"

	"dprl/sessionlog"
)

// LogExt is the extension of a DSJSON session log's files
// (sessions-<UTC time>.dsjson).
const LogExt = ".dsjson"

// LogEncoder is the sessionlog.Encoder of an agent's DSJSON session log
// over actions discrete actions: AppendDecision, except that a session
// that did not terminate is refused as well. A DSJSON decision is a whole
// episode: such a session's final observation would be lost and it would
// read back as terminal.
func LogEncoder(actions int) sessionlog.Encoder {
	return func(b []byte, s *sessionlog.Session) ([]byte, error) {
		if !s.Terminal {
			return b, fmt.Errorf("%w: session %q: not terminal (ended by the client or a limit before the episode did): a DSJSON decision is a whole episode", ErrExport, s.Session)
		}
		return AppendDecision(b, s, actions)
	}
}

// NewRotatingWriter returns a session log that writes every session as one
// DSJSON decision over actions discrete actions (LogEncoder) to rotating
// sessions-<UTC time>.dsjson files in dir: a sessionlog.RotatingWriter
// with that encoder, so rotation by size and age, fsync on rotation and
// Close, retention and the cut back after a failed write are the
// dprl.sessions.v1 log's (opt.Encoder and opt.Ext are set here). A session
// the format cannot hold (not one terminal step with a discrete action and
// a behaviour probability) is refused with sessionlog.ErrUnsupported and
// writes nothing. What it writes, Reader with ReaderOptions.SharedOnly
// reads back as the same sessions, less their user id and policy version,
// which DSJSON has no field for.
func NewRotatingWriter(dir string, actions int, opt sessionlog.RotatingOptions) (*sessionlog.RotatingWriter, error) {
	if actions < 1 || actions > MaxActions {
		return nil, fmt.Errorf("dsjson: session log over %d actions, want 1 to %d", actions, MaxActions)
	}
	opt.Encoder, opt.Ext = LogEncoder(actions), LogExt
	return sessionlog.NewRotatingWriter(dir, opt)
}
