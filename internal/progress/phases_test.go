package progress

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestPhases: each phase gets a task of its own, started at its first
// report, counted in its unit (a log line at least when a phase is done);
// nothing is started before a report.
func TestPhases(t *testing.T) {
	var logs bytes.Buffer
	log := zerolog.New(&logs)
	var started []string
	p := NewPhases(func(phase string) *Task {
		started = append(started, phase)
		return NewTask(new(bytes.Buffer), false, log, "run "+phase)
	}, map[string]string{"model": "rounds", "policy": "steps"})
	p.Finish() // no task yet
	for _, r := range []struct {
		phase       string
		done, total int
	}{{"model", 1, 2}, {"model", 2, 2}, {"policy", 5, 10}, {"policy", 10, 10}} {
		p.Update(r.phase, r.done, r.total)
	}
	p.Finish()
	if strings.Join(started, " ") != "model policy" {
		t.Errorf("started %v, want model then policy", started)
	}
	if out := logs.String(); !strings.Contains(out, `"unit":"rounds"`) || !strings.Contains(out, `"message":"run model"`) ||
		!strings.Contains(out, `"unit":"steps"`) || !strings.Contains(out, `"message":"run policy"`) {
		t.Errorf("logs:\n%s", out)
	}
}
