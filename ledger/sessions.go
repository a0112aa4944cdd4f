package ledger

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Sessions used by releases.
//
// In a cluster, a clipped session update reaches the learner through a
// work queue that redelivers what was not acknowledged, and the learner
// acknowledges only after the release that used it is in the ledger of
// record: a learner that dies in between leaves updates that a release
// already used. A release may therefore record the keys of the sessions
// it used (Release.Sessions, Entry.Sessions), and the ledger refuses a
// session a release already used (ErrSessionUsed), so that every session
// enters at most one release whatever is redelivered. A single agent
// process, whose sessions cannot be redelivered, records none.

// ErrSessionUsed is returned by Release when a session in it entered an
// earlier release. It wraps ErrInvalid.
var ErrSessionUsed = fmt.Errorf("%w: session already used by a release", ErrInvalid)

// prefSession is the session index: session key -> the version whose
// release used it.
var prefSession = []byte("x/")

// SessionKey identifies a session in the ledger: HMAC-SHA256, under the
// store's secret, of the session id with a prefix that separates it from
// user keys.
type SessionKey [32]byte

// String returns the key in hex.
func (k SessionKey) String() string { return hex.EncodeToString(k[:]) }

// MarshalText encodes the key in hex.
func (k SessionKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a hex key.
func (k *SessionKey) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(k) {
		return fmt.Errorf("%w: session key of %d hex digits", ErrInvalid, len(b))
	}
	_, err := hex.Decode(k[:], b)
	return err
}

// Session returns the ledger key of a session id.
func (s *Store) Session(id string) SessionKey {
	m := hmac.New(sha256.New, s.userKey)
	m.Write([]byte("session\x00"))
	m.Write([]byte(id))
	var k SessionKey
	copy(k[:], m.Sum(nil))
	return k
}

func sessionKey(k SessionKey) []byte { return append(append([]byte(nil), prefSession...), k[:]...) }

// SessionUsed returns the version whose release used session k, if any.
func (s *Store) SessionUsed(k SessionKey) (uint64, bool, error) {
	b, err := s.get(sessionKey(k))
	if err != nil || b == nil {
		return 0, false, err
	}
	if len(b) != 8 {
		return 0, false, fmt.Errorf("%w: session index value of %d bytes", ErrCorrupt, len(b))
	}
	return binary.BigEndian.Uint64(b), true, nil
}

// putSessions indexes a release's sessions in b, refusing one used twice
// in it or by an earlier release.
func (s *Store) putSessions(b *pebble.Batch, sessions []SessionKey, version uint64) error {
	seen := make(map[SessionKey]bool, len(sessions))
	for _, k := range sessions {
		if seen[k] {
			return fmt.Errorf("%w: session %.12s twice in one release", ErrInvalid, k)
		}
		seen[k] = true
		if v, ok, err := s.SessionUsed(k); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: session %.12s was used by the release of version %d", ErrSessionUsed, k, v)
		}
		if err := b.Set(sessionKey(k), be64(nil, version), nil); err != nil {
			return err
		}
	}
	return nil
}

// verifySessions compares the session index with the sessions the
// releases recorded (used: key -> version), and reports a session two
// releases used (found while replaying).
func (s *Store) verifySessions(used map[SessionKey]uint64, problem func(string, ...any)) error {
	stored := 0
	err := s.scan(prefSession, prefixEnd(prefSession), func(key, v []byte) error {
		stored++
		var k SessionKey
		if len(key) != len(prefSession)+len(k) || len(v) != 8 {
			problem("session index: a malformed key or value (%d, %d bytes)", len(key), len(v))
			return nil
		}
		copy(k[:], key[len(prefSession):])
		if want, ok := used[k]; !ok || want != binary.BigEndian.Uint64(v) {
			problem("session index: session %.12s at version %d, which no release records", k, binary.BigEndian.Uint64(v))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if stored != len(used) {
		problem("session index: %d sessions, the releases record %d", stored, len(used))
	}
	return nil
}
