package progress

import (
	"strings"
	"testing"
	"time"
)

func TestBar(t *testing.T) {
	tests := []struct {
		width       int
		done, total int64
		want        string
	}{
		{4, 0, 8, "[    ]"},
		{4, 4, 8, "[==  ]"},
		{4, 8, 8, "[====]"},
		{4, 9, 8, "[====]"},
		{4, -1, 8, "[    ]"},
		{4, 3, 0, "[    ]"},
	}
	for _, tt := range tests {
		if got := Bar(tt.width, tt.done, tt.total); got != tt.want {
			t.Errorf("Bar(%d, %d, %d) = %q, want %q", tt.width, tt.done, tt.total, got, tt.want)
		}
	}
}

func TestDue(t *testing.T) {
	var b strings.Builder
	r := New(&b, true, false)
	if r.Period() != TTYPeriod || !r.TTY() {
		t.Fatalf("tty reporter: period %v", r.Period())
	}
	if r.Due(false) {
		t.Fatal("due before the first period")
	}
	if !r.Due(true) {
		t.Fatal("final update not due")
	}
	r.last = time.Now().Add(-TTYPeriod)
	if !r.Due(false) {
		t.Fatal("not due after a period")
	}
	if r.Due(false) {
		t.Fatal("due twice in one period")
	}
	off := New(&b, false, true)
	off.last = time.Time{}
	if off.Due(true) || off.Due(false) {
		t.Fatal("a disabled reporter is due")
	}
	if New(&b, false, false).Period() != LogPeriod {
		t.Fatal("log period")
	}
}

func TestDrawDone(t *testing.T) {
	var b strings.Builder
	r := New(&b, true, false)
	r.Done()
	if b.String() != "" {
		t.Fatalf("Done without a drawn line wrote %q", b.String())
	}
	r.Draw("1/2")
	r.Draw("2/2")
	r.Done()
	if got := b.String(); got != "\r1/2\r2/2\n" {
		t.Fatalf("got %q", got)
	}
}
