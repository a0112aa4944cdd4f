package testutil

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// ReformatLog rewrites each line of the JSON Lines file at src through a
// map, so that keys come in another order and numbers are spelt by
// encoding/json, with sep between members, " : " after keys (string
// values must hold no comma or colon) and CRLF line ends, and writes it to
// dst: the same records in other bytes. It returns dst.
func ReformatLog(tb testing.TB, src, dst, sep string) string {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			tb.Fatal(err)
		}
		enc, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		out.WriteString(strings.ReplaceAll(strings.ReplaceAll(string(enc), ",", sep), ":", " : ") + "\r\n")
	}
	if err := os.WriteFile(dst, []byte(out.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return dst
}
