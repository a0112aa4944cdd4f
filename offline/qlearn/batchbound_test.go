package qlearn

import (
	"strings"
	"testing"
)

// TestBatchBound: a private run's expected batch is at most
// noise.MaxPoissonBatch (docs/privacy.md, section 2).
func TestBatchBound(t *testing.T) {
	c := DefaultLearnConfig()
	c.Data, c.Experts, c.Batch = "d.jsonl", 1<<20, 1<<14+1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "expected batch is at most 16384") {
		t.Errorf("batch 2^14+1: %v", err)
	}
	c.Batch = 1 << 14
	if err := c.Validate(); err != nil && strings.Contains(err.Error(), "expected batch") {
		t.Errorf("batch 2^14: %v", err)
	}
}

// TestWriteTextWindow: a run shorter than the paper's 10,000-step window
// says its average is over all its steps (it said "the last 10,000" for a
// 2,000-step run).
func TestWriteTextWindow(t *testing.T) {
	for _, c := range []struct {
		steps int
		want  string
	}{{2000, "on average over all 2000;"}, {30000, "on average over the last 10,000;"}} {
		var b strings.Builder
		r := Result{Algo: CQL, Env: "cartpole", Warning: "w", Steps: c.steps}
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%d steps: %q, want %q", c.steps, b.String(), c.want)
		}
	}
}
