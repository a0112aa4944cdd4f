package ledger

import (
	"fmt"
	"io"
)

// EndStreamResult is what Store.EndNoiseStream did to the ledger in Dir
// (dprl ledger end-stream).
type EndStreamResult struct {
	Dir string `json:"dir"`
	// EndedAt is the version the noise stream ended at; 0: there was no
	// stream state to end.
	EndedAt uint64 `json:"ended_at"`
}

// WriteText says whether a stream ended.
func (r EndStreamResult) WriteText(w io.Writer) error {
	if r.EndedAt == 0 {
		_, err := fmt.Fprintf(w, "%s: no banded noise stream to end (the next release starts a new stream, or has none)\n", r.Dir)
		return err
	}
	_, err := fmt.Fprintf(w, "%s: the banded noise stream ended at version %d; the next release starts a new stream\n", r.Dir, r.EndedAt)
	return err
}
