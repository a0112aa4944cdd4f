package progress

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
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

func TestLine(t *testing.T) {
	rep := Report{Done: 5, Total: 10, Unit: "users", Fields: []Field{F("updates", 2), Ff("return", "%.1f", 21.25), F("epsilon", 4.3771)}}
	got := Line("", rep, 3*time.Second, 3*time.Second)
	want := "[===============               ] 5/10 users  updates 2  return 21.2  epsilon 4.377  elapsed 3s  eta 3s"
	if got != want {
		t.Fatalf("Line = %q, want %q", got, want)
	}
	if got := Line("train", Report{Done: 7, Unit: "steps"}, time.Second, -1); got != "train: 7 steps  elapsed 1s" {
		t.Fatalf("Line without a total = %q", got)
	}
}

func TestTaskLogLines(t *testing.T) {
	var b strings.Builder
	task := NewTask(&b, false, zerolog.New(&b), "gpope")
	task.Update(Report{Done: 1, Total: 4, Unit: "steps"}) // not due yet
	if b.Len() != 0 {
		t.Fatalf("a report before its period: %q", b.String())
	}
	task.Update(Report{Done: 4, Total: 4, Unit: "steps", Fields: []Field{F("updates", 3)}}) // final
	line := b.String()
	for _, want := range []string{`"message":"gpope"`, `"done":4`, `"of":4`, `"unit":"steps"`, `"updates":3`, `"elapsed_s":0`, `"eta_s":0`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}
	b.Reset()
	c := NewTask(&b, false, zerolog.New(&b), "loop").Counter(10, "episodes")
	if c.Period() != LogPeriod {
		t.Fatalf("counter period %v", c.Period())
	}
	c.Update(10)
	if !strings.Contains(b.String(), `"done":10,"of":10,"unit":"episodes"`) {
		t.Fatalf("counter line %q", b.String())
	}
	b.Reset()
	quiet := NewTask(&b, false, zerolog.New(&b).Level(zerolog.WarnLevel), "x")
	quiet.Update(Report{Done: 1, Total: 1})
	if b.Len() != 0 {
		t.Fatalf("a task above info logged %q", b.String())
	}
}

func TestTaskLiveLineAndEvery(t *testing.T) {
	var b strings.Builder
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return b.Write(p) })
	task := NewTask(w, true, zerolog.New(io.Discard), "demo")
	task.Phase("train")
	task.Update(Report{Done: 2, Total: 2, Unit: "experts"})
	task.Phase("rollouts") // the train line stays on its own line
	stop := task.Every(func() Report { return Report{Done: 3, Unit: "sessions"} })
	stop()
	mu.Lock()
	got := b.String()
	mu.Unlock()
	if !strings.HasPrefix(got, "\rtrain: [") || !strings.Contains(got, "2/2 experts") || !strings.Contains(got, "\n\rrollouts: 3 sessions") || !strings.HasSuffix(got, "\n") {
		t.Fatalf("live output %q", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
