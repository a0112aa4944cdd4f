package profile

import (
	"strings"
	"testing"
)

// TestTrainDefaultsHelp: the list is wrapped to the width (a single flag
// longer than a line aside), states the values most environments share
// once, and names environments with the same differences together.
func TestTrainDefaultsHelp(t *testing.T) {
	text := TrainDefaultsHelp(80)
	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[0], "  most environments: --z 1 --K 32 --clip 0.2") {
		t.Errorf("first line %q", lines[0])
	}
	for _, l := range lines {
		if len(l) > 80 && strings.Count(strings.TrimSpace(l), " --") > 0 {
			t.Errorf("line of %d characters: %q", len(l), l)
		}
	}
	for _, want := range []string{"\n  cartpole: --steps-per-user 500 --gae-lambda 0.98", "\n  dosing-0, dosing-1: --z 0.1 --K 8", "--adv-norm --moment-reset paper"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "pendulum") {
		t.Errorf("pendulum has the common defaults, listed anyway:\n%s", text)
	}
}

func TestExpandByEnv(t *testing.T) {
	for _, tc := range []struct{ usage, want string }{
		{"plain", "plain"},
		{"rate{byenv}", "rate" + ByEnv("")},
		{"E >= 1{byenv:Table 3: 8}; more", "E >= 1" + ByEnv("Table 3: 8") + "; more"},
	} {
		if got := ExpandByEnv(tc.usage); got != tc.want {
			t.Errorf("ExpandByEnv(%q) = %q, want %q", tc.usage, got, tc.want)
		}
	}
}
