package record

import (
	"context"
	"errors"
	"fmt"

	"dprl/ledger"
)

// message is one message of the log: a ledger entry and, for a release,
// the snapshot it paid for and the released update g~ (public: the
// policy's step, which serving replicas need to start their local updates
// where the learner's would). Position n of the log holds entry n of the
// ledger.
type message struct {
	Entry    ledger.Entry `json:"entry"`
	Snapshot []byte       `json:"snapshot,omitempty"`
	Update   []float64    `json:"update,omitempty"`
	// Blob refers to the snapshot and update in the blob stream, for an
	// entry too large for one message (blob.go).
	Blob *blobRef `json:"blob,omitempty"`
}

// Release is a release (or a writer entry, with the snapshot of the
// version its writer continues from) read from the log (Sync's callback).
type Release struct {
	Entry    ledger.Entry
	Snapshot []byte
	Update   []float64
}

// AppendEntry appends e, the next entry of a ledger (as ReleaseWith or
// AppendWriter hands it over before committing), with its snapshot and
// released update (nil for an entry without them) at position e.Seq, under the id e.Hash (which
// names its contents and its place in the chain). ErrFenced means another
// writer's entry holds the position: the ledger must catch up (Sync) before
// it writes again.
func (l *Log) AppendEntry(ctx context.Context, e ledger.Entry, snapshot []byte, update []float64) error {
	if e.Seq == 0 || e.Hash == "" {
		return fmt.Errorf("record: entry without a sequence number or hash")
	}
	b, err := l.encodeMessage(ctx, e, snapshot, update)
	if err != nil {
		return err
	}
	if _, err := l.Append(ctx, e.Seq-1, e.Hash, b); err != nil {
		return err
	}
	return nil
}

// Sync applies to s every entry of the log past s's head (ledger.Store.Apply)
// and returns how many it applied, calling onRelease (if not nil) with
// each release and each writer entry applied, in order. An entry that does not apply (it does
// not chain onto s, or its contents do not hash to what its writer
// recorded) stops it with the error: s then disagrees with the ledger of
// record and must not write.
func Sync(ctx context.Context, l *Log, s *ledger.Store, onRelease func(Release)) (int, error) {
	h, err := s.Head()
	if err != nil {
		return 0, err
	}
	last, err := l.Last(ctx)
	if err != nil {
		return 0, err
	}
	if last < h.Seq {
		// The log no longer holds this ledger's last entries: it lost
		// them (a majority of servers lost power before they synced).
		return 0, fmt.Errorf("%w: the ledger has %d entries, the log %d", ErrDiverged, h.Seq, last)
	}
	n := 0
	err = l.readTo(ctx, h.Seq+1, last, func(m Entry) error {
		msg, err := l.decodeMessage(ctx, m.Position, m.Data)
		if err != nil {
			return err
		}
		if msg.Entry.Seq != m.Position || msg.Entry.Hash != m.ID {
			return fmt.Errorf("record: position %d holds entry %d under id %.12s (hash %.12s)", m.Position, msg.Entry.Seq, m.ID, msg.Entry.Hash)
		}
		if _, err := s.Apply(msg.Entry, msg.Snapshot); err != nil {
			return fmt.Errorf("record: apply position %d: %w", m.Position, err)
		}
		n++
		if onRelease != nil && (msg.Entry.Kind == ledger.KindRelease || msg.Entry.Kind == ledger.KindWriter) {
			onRelease(Release{Entry: msg.Entry, Snapshot: msg.Snapshot, Update: msg.Update})
		}
		return nil
	})
	return n, err
}

// ErrDiverged is returned by Check when the ledger holds an entry the
// log does not.
var ErrDiverged = errors.New("record: the ledger and the ledger of record differ")

// Check compares s with the log: every entry of s must be the log's entry
// at its position (the same hash), and the log may only be ahead. It
// returns how far ahead the log is (0: s is up to date).
func Check(ctx context.Context, l *Log, s *ledger.Store) (ahead uint64, err error) {
	last, err := l.Last(ctx)
	if err != nil {
		return 0, err
	}
	h, err := s.Head()
	if err != nil {
		return 0, err
	}
	if h.Seq > last {
		return 0, fmt.Errorf("%w: the ledger has %d entries, the log %d", ErrDiverged, h.Seq, last)
	}
	var mine []string
	if err := s.Entries(func(e ledger.Entry) error {
		mine = append(mine, e.Hash)
		return nil
	}); err != nil {
		return 0, err
	}
	if len(mine) == 0 {
		return last, nil
	}
	err = l.Read(ctx, 1, func(m Entry) error {
		if m.Position > uint64(len(mine)) {
			return errStop
		}
		if want := mine[m.Position-1]; m.ID != want {
			return fmt.Errorf("%w: entry %d has hash %.12s in the ledger, %.12s in the log", ErrDiverged, m.Position, want, m.ID)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, err
	}
	return last - h.Seq, nil
}

// errStop ends a Read early.
var errStop = errors.New("stop")

// Entry returns the release or writer entry at position pos with its
// snapshot and update (ErrNotRelease for an entry of another kind).
func (l *Log) Entry(ctx context.Context, pos uint64) (Release, error) {
	m, err := l.get(ctx, pos)
	if err != nil {
		return Release{}, err
	}
	msg, err := l.decodeMessage(ctx, pos, m.Data)
	if err != nil {
		return Release{}, err
	}
	if msg.Entry.Seq != pos {
		return Release{}, fmt.Errorf("record: position %d holds entry %d", pos, msg.Entry.Seq)
	}
	if msg.Entry.Kind != ledger.KindRelease && msg.Entry.Kind != ledger.KindWriter {
		return Release{}, fmt.Errorf("%w: position %d is a %s entry", ErrNotRelease, pos, msg.Entry.Kind)
	}
	return Release{Entry: msg.Entry, Snapshot: msg.Snapshot, Update: msg.Update}, nil
}

// ErrNotRelease is returned by Entry for an entry that is neither a
// release nor a writer entry.
var ErrNotRelease = errors.New("record: not a release or writer entry")
