package sessionlog

import (
	"bytes"
	"testing"
)

// TestWriterIDsAreJSON writes ids the reader accepts but strconv.Quote
// spells in Go syntax only (\U escapes for non-printable runes above
// U+FFFF), and reads them back: every record the Writer writes must be JSON
// the strict reader reads as the session written.
func TestWriterIDsAreJSON(t *testing.T) {
	for _, id := range []string{"tag\U000E0001", "a\u2028b", `q"uo\te`, "é<&>", "\U0001F600", "zw\u200bsp"} {
		var b bytes.Buffer
		w := NewWriter(&b)
		s := Session{Session: id, User: id, Expert: id, Steps: []Step{{Obs: []float64{1}, Reward: 1, LogP: -1}}, Terminal: true}
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		got, err := readAll(t, b.String(), Spec{})
		if err != nil {
			t.Errorf("id %q: written as %s: %v", id, b.String(), err)
			continue
		}
		if got[0].Session != id || got[0].User != id || got[0].Expert != id {
			t.Errorf("id %q read back as %q, %q, %q", id, got[0].Session, got[0].User, got[0].Expert)
		}
	}
	var b bytes.Buffer
	w := NewWriter(&b)
	bad := Session{Session: "x\xffy", Steps: []Step{{Obs: []float64{1}, Reward: 1, LogP: -1}}, Terminal: true}
	if err := w.Write(&bad); err == nil {
		t.Errorf("invalid UTF-8 id written: %s", b.String())
	}
}
