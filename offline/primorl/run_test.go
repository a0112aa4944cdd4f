package primorl

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTimingLabelled: a run's wall-clock times are not part of the release
// (a round's time grows with the sampled trajectories' lengths): the text
// and the JSON carry them only under the operational label.
func TestTimingLabelled(t *testing.T) {
	r := Result{Env: "pendulum", Method: "primorl", Private: true, Epsilon: 5, Delta: 1e-5, Accountant: "pld",
		Timing: Timing{Note: TimingNote, ModelSeconds: 1.52, SACSeconds: 3}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "1.5 s") && !strings.Contains(line, "NOT covered by the guarantee") {
			t.Errorf("timing printed without its label: %q", line)
		}
	}
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["model_seconds"]; ok {
		t.Error("model_seconds at the top level of the result, beside the guarantee")
	}
	if tm, ok := m["timing"].(map[string]any); !ok || tm["note"] != TimingNote {
		t.Errorf("timing %v: want the operational note", m["timing"])
	}
}
