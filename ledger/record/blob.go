package record

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dprl/internal/jsonstrict"
	"dprl/ledger"
)

// A log message larger than the servers accept (their max_payload, 1 MiB
// by default: a policy of about 30,000 parameters, whose snapshot and
// released update travel with its entry) leaves its snapshot and update in
// the ledger's blob stream: "DPRL_BLOBS_" + Name on subject "dprl.blobs." +
// Name, configured as the log's stream (file storage, its replicas, no
// deletes, no purges, every message kept). The writer publishes the
// payload there first, in chunks that fit, each under a message id derived
// from the entry's hash (a retry stores a chunk once), then appends the
// entry with a reference: the chunks' sequence numbers, the payload's size
// and its SHA-256. Readers fetch the chunks by sequence and check the size
// and digest before they decode it. The entry's own hash chain is
// unchanged; the ledger checks the snapshot against the digest its entry
// records, as for an inline one.
//
// Chunks of an append that was fenced stay in the blob stream unreferenced:
// they hold a release that never landed (noised, but never published to a
// replica). They cost space only.

// blobRef is an entry's reference to its payload in the blob stream.
type blobRef struct {
	Seqs   []uint64 `json:"seqs"`
	Size   int      `json:"size"`
	SHA256 string   `json:"sha256"`
}

// blobPayload is what a blob holds: an entry's snapshot and update.
type blobPayload struct {
	Snapshot []byte    `json:"snapshot,omitempty"`
	Update   []float64 `json:"update,omitempty"`
}

// messageHeadroom is what a message's headers (its id, the expected
// sequence) may take beside its data within the maximum payload.
const messageHeadroom = 4 << 10

// maxBlob bounds a blob's size: 1 GiB, far above any policy dprl serves,
// so that a corrupt reference cannot make a reader fetch without end.
const maxBlob = 1 << 30

// maxData is the largest message data the log publishes: the connection's
// maximum payload less the headers' room.
func (l *Log) maxData() int {
	return max(int(l.js.Conn().MaxPayload())-messageHeadroom, 1024)
}

// blobStreamConfig is the blob stream's configuration for cfg.
func blobStreamConfig(cfg Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        "DPRL_BLOBS_" + cfg.Name,
		Description: "dprl ledger of record " + cfg.Name + ": snapshots and updates of entries too large for one message",
		Subjects:    []string{"dprl.blobs." + cfg.Name},
		Retention:   jetstream.LimitsPolicy,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		Discard:     jetstream.DiscardNew,
		DenyDelete:  true,
		DenyPurge:   true,
	}
}

// encodeMessage returns the log message of e: inline if it fits in one
// message, else with its snapshot and update in the blob stream.
func (l *Log) encodeMessage(ctx context.Context, e ledger.Entry, snapshot []byte, update []float64) ([]byte, error) {
	b, err := json.Marshal(message{Entry: e, Snapshot: snapshot, Update: update})
	if err != nil {
		return nil, fmt.Errorf("record: encode entry %d: %w", e.Seq, err)
	}
	limit := l.maxData()
	if len(b) <= limit {
		return b, nil
	}
	payload, err := json.Marshal(blobPayload{Snapshot: snapshot, Update: update})
	if err != nil {
		return nil, fmt.Errorf("record: encode entry %d: %w", e.Seq, err)
	}
	if len(payload) > maxBlob {
		return nil, fmt.Errorf("record: entry %d: a snapshot and update of %d bytes, above the log's %d", e.Seq, len(payload), maxBlob)
	}
	ref, err := l.putBlob(ctx, e.Hash, payload, limit)
	if err != nil {
		return nil, fmt.Errorf("record: entry %d: %w", e.Seq, err)
	}
	return json.Marshal(message{Entry: e, Blob: ref})
}

// putBlob publishes payload to the blob stream in chunks of at most
// chunk bytes, chunk i under message id id + "/" + i, retrying what may
// not have reached the stream until ctx ends.
func (l *Log) putBlob(ctx context.Context, id string, payload []byte, chunk int) (*blobRef, error) {
	sum := sha256.Sum256(payload)
	ref := &blobRef{Size: len(payload), SHA256: hex.EncodeToString(sum[:])}
	for i := 0; len(payload) > 0; i++ {
		n := min(chunk, len(payload))
		seq, err := l.publishChunk(ctx, fmt.Sprintf("%s/%d", id, i), payload[:n])
		if err != nil {
			return nil, err
		}
		ref.Seqs = append(ref.Seqs, seq)
		payload = payload[n:]
	}
	return ref, nil
}

// publishChunk publishes one chunk and returns its sequence number (the
// original one for a duplicate of an earlier attempt).
func (l *Log) publishChunk(ctx context.Context, id string, data []byte) (uint64, error) {
	var seq uint64
	err := retry(ctx, "store a blob chunk", func(actx context.Context) error {
		ack, err := l.js.Publish(actx, l.blobSubject, data, jetstream.WithMsgID(id))
		if err == nil {
			seq = ack.Sequence
		}
		return err
	})
	return seq, err
}

// retry calls attempt, each call bounded by attemptTimeout, until it
// succeeds, fails with an error that is not retryable, or ctx ends.
func retry(ctx context.Context, what string, attempt func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := attempt(actx)
		cancel()
		switch {
		case err == nil:
			return nil
		case !retryable(err):
			return fmt.Errorf("record: %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("record: %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// decodeMessage decodes the log message at position pos, fetching its
// snapshot and update from the blob stream if it refers to them.
func (l *Log) decodeMessage(ctx context.Context, pos uint64, data []byte) (message, error) {
	var msg message
	if err := jsonstrict.Decode(data, &msg); err != nil {
		return message{}, fmt.Errorf("record: position %d: %w", pos, err)
	}
	if msg.Blob == nil {
		return msg, nil
	}
	if len(msg.Snapshot) > 0 || len(msg.Update) > 0 {
		return message{}, fmt.Errorf("record: position %d carries a snapshot both inline and in a blob", pos)
	}
	p, err := l.getBlob(ctx, msg.Blob)
	if err != nil {
		return message{}, fmt.Errorf("record: position %d: %w", pos, err)
	}
	msg.Snapshot, msg.Update, msg.Blob = p.Snapshot, p.Update, nil
	return msg, nil
}

// ErrBlob is returned when an entry's blob is missing or does not match
// its reference.
var ErrBlob = errors.New("record: an entry's blob does not match its reference")

// getBlob fetches and checks the payload ref refers to.
func (l *Log) getBlob(ctx context.Context, ref *blobRef) (blobPayload, error) {
	if ref.Size < 0 || ref.Size > maxBlob || len(ref.Seqs) == 0 || len(ref.Seqs) > ref.Size+1 {
		return blobPayload{}, fmt.Errorf("%w: %d chunks of %d bytes", ErrBlob, len(ref.Seqs), ref.Size)
	}
	buf := make([]byte, 0, ref.Size)
	for _, seq := range ref.Seqs {
		m, err := l.getChunk(ctx, seq)
		if err != nil {
			return blobPayload{}, err
		}
		if m.Subject != l.blobSubject || len(buf)+len(m.Data) > ref.Size {
			return blobPayload{}, fmt.Errorf("%w: chunk %d", ErrBlob, seq)
		}
		buf = append(buf, m.Data...)
	}
	sum := sha256.Sum256(buf)
	if len(buf) != ref.Size || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return blobPayload{}, fmt.Errorf("%w: %d bytes, SHA-256 %.12s, want %d bytes, %.12s", ErrBlob, len(buf), hex.EncodeToString(sum[:]), ref.Size, ref.SHA256)
	}
	var p blobPayload
	if err := jsonstrict.Decode(bytes.Clone(buf), &p); err != nil {
		return blobPayload{}, fmt.Errorf("%w: %v", ErrBlob, err)
	}
	return p, nil
}

// getChunk returns the blob stream's message seq, binding to the stream
// the first time and retrying what may succeed until ctx ends.
func (l *Log) getChunk(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	var m *jetstream.RawStreamMsg
	err := retry(ctx, fmt.Sprintf("read blob chunk %d", seq), func(actx context.Context) error {
		st, err := l.blobStream(actx)
		if err == nil {
			m, err = st.GetMsg(actx, seq)
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("%w: chunk %d is missing", ErrBlob, seq)
		}
		return err
	})
	return m, err
}

// blobStream returns the blob stream, binding to it the first time.
func (l *Log) blobStream(ctx context.Context) (jetstream.Stream, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.blobs != nil {
		return l.blobs, nil
	}
	st, err := l.js.Stream(ctx, l.blobName)
	if err != nil {
		return nil, err
	}
	l.blobs = st
	return st, nil
}
