// Package updateq is the work queue of clipped per-session updates in a
// dprl cluster: a serving replica computes each finished session's
// clipped local update where the session's data is and publishes it; the
// learner consumes the updates, forms batches, and acknowledges them only
// after the release that used them is in the ledger of record (package
// ledger/record), so a learner that dies in between leaves them to the
// next one.
//
// A clipped update is not noised: it is the per-session data the learner's
// noise protects, inside the trust boundary. The queue's stream keeps it in
// memory only (no copy at rest on any server; a lost update is a session
// never learned from, which costs no privacy), for at most Config.MaxAge,
// and the cluster's NATS permissions must let only the learner role read
// it (serving replicas publish only).
//
// An update travels as a compact binary message (Update.AppendBinary,
// Decode): the magic "DPU1", the policy version it was computed at, a
// flag and the HMAC user key (ledger.UserKey; anonymous sessions carry
// none), the session id, and the update's values as little-endian
// float64s. The session id is also the message id, so a replica's retry
// within the stream's duplicate window queues a session once.
package updateq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"dprl/stream"
)

// magic opens every update message (format version 1).
const magic = "DPU1"

// MaxSessionID bounds the session id: protocol v1's largest configurable
// id length is the agent's; the queue accepts up to this.
const MaxSessionID = 1024

// headerLen is the fixed part of a message: magic, version, flag, user
// key, session id length, value count.
const headerLen = 4 + 8 + 1 + 32 + 2 + 4

// MaxMessageSize is the largest message of an update of values values:
// the header, the longest session id and the values, plus room for the
// message's headers (its id, the session id again). A cluster whose
// servers accept less (their max_payload) could not queue such an update.
func MaxMessageSize(values int) int {
	return headerLen + 2*MaxSessionID + 8*values + 1024
}

// Update is one session's clipped local update.
type Update struct {
	// Session is the session id (also the message id).
	Session string
	// HasUser says User is set; anonymous sessions have no user key.
	HasUser bool
	// User is the HMAC user key of the session's user (ledger.UserKey).
	User [32]byte
	// Version is the policy version the update was computed at.
	Version uint64
	// Values is the update: the policy block, then the value block.
	Values []float64
}

// AppendBinary appends u's message to b.
func (u *Update) AppendBinary(b []byte) []byte {
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint64(b, u.Version)
	flag := byte(0)
	if u.HasUser {
		flag = 1
	}
	b = append(b, flag)
	b = append(b, u.User[:]...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(u.Session)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(u.Values)))
	b = append(b, u.Session...)
	for _, v := range u.Values {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// Check reports what Decode would refuse in u before it is sent: an empty,
// over-long, non-UTF-8 or control-character session id, an anonymous
// update with a user key, more than maxValues values.
func (u *Update) Check(maxValues int) error {
	if err := checkSession(u.Session); err != nil {
		return err
	}
	if !u.HasUser && u.User != [32]byte{} {
		return errors.New("updateq: an anonymous update with a user key")
	}
	if len(u.Values) == 0 || len(u.Values) > maxValues {
		return fmt.Errorf("updateq: %d values, want 1 to %d", len(u.Values), maxValues)
	}
	return nil
}

// ErrMalformed wraps every Decode error.
var ErrMalformed = errors.New("updateq: malformed update")

// Decode decodes a message into u, reusing u.Values' capacity (it
// allocates the session id, and values beyond that capacity), and
// refuses anything AppendBinary would not write or Check would refuse:
// a wrong magic, a length that does not match, trailing bytes, a bad
// session id, an anonymous update with a key, a flag other than 0 or 1,
// more than maxValues values. Non-finite values are kept: the learner's
// aggregator counts such an update as zero, as it counts any other.
func Decode(b []byte, u *Update, maxValues int) error {
	if maxValues < 1 {
		return fmt.Errorf("%w: at most %d values", ErrMalformed, maxValues)
	}
	if len(b) < headerLen || string(b[:4]) != magic {
		return fmt.Errorf("%w: %d bytes without the DPU1 header", ErrMalformed, len(b))
	}
	version := binary.LittleEndian.Uint64(b[4:])
	flag := b[12]
	var user [32]byte
	copy(user[:], b[13:45])
	ns := int(binary.LittleEndian.Uint16(b[45:]))
	nv := int(binary.LittleEndian.Uint32(b[47:]))
	switch {
	case flag > 1:
		return fmt.Errorf("%w: user flag %d", ErrMalformed, flag)
	case flag == 0 && user != [32]byte{}:
		return fmt.Errorf("%w: an anonymous update with a user key", ErrMalformed)
	case nv < 1 || nv > maxValues:
		return fmt.Errorf("%w: %d values, want 1 to %d", ErrMalformed, nv, maxValues)
	case len(b) != headerLen+ns+8*nv:
		return fmt.Errorf("%w: %d bytes, want %d for a %d-byte session id and %d values", ErrMalformed, len(b), headerLen+ns+8*nv, ns, nv)
	}
	session, err := stream.ParseID("session", b[headerLen:headerLen+ns], idLimits)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	u.Session, u.Version, u.HasUser, u.User = session, version, flag == 1, user
	u.Values = u.Values[:0]
	for p := headerLen + ns; p < len(b); p += 8 {
		u.Values = append(u.Values, math.Float64frombits(binary.LittleEndian.Uint64(b[p:])))
	}
	return nil
}

// idLimits are protocol v1's rules for ids, up to MaxSessionID bytes.
var idLimits = stream.Limits{MaxIDLen: MaxSessionID}

// checkSession applies idLimits to s.
func checkSession(s string) error {
	_, err := stream.ParseID("session", []byte(s), idLimits)
	return err
}
