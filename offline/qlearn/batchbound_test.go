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
