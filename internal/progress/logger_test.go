package progress

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		name, level, format string
		wantErr             string
		json                bool // a JSON line is written at info
	}{
		{"json info", "info", "json", "", true},
		{"upper case level", "INFO", "json", "", true},
		{"auto off a terminal is json", "debug", "auto", "", true},
		{"console", "info", "console", "", false},
		{"disabled", "disabled", "json", "", false},
		{"empty level", "", "json", "--log-level", false},
		{"bad level", "loud", "json", "--log-level \"loud\"", false},
		{"bad format", "info", "xml", "--log-format \"xml\"", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := NewLogger(&buf, tc.level, tc.format)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Msg("hello")
			var rec map[string]any
			isJSON := json.Unmarshal(buf.Bytes(), &rec) == nil && rec["message"] == "hello"
			if isJSON != tc.json {
				t.Errorf("output %q: JSON %v, want %v", buf.String(), isJSON, tc.json)
			}
			if tc.format == "console" && !strings.Contains(buf.String(), "hello") {
				t.Errorf("console output %q", buf.String())
			}
		})
	}
}
