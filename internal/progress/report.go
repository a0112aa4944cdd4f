package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Field is one labelled value of a report: an integer, a float or a
// string. Format, if not "", formats Value on a live line (default: %v, and
// %.4g for floats).
type Field struct {
	Key    string
	Value  any
	Format string
}

// F returns a field.
func F(key string, value any) Field { return Field{Key: key, Value: value} }

// Ff returns a field with its live-line format.
func Ff(key, format string, value any) Field { return Field{Key: key, Value: value, Format: format} }

// Report is one progress report: Done of Total units of the run's work
// (Total 0: no bar, no estimate of the time left) and further fields.
// Deadline, when not zero, is when the run ends at the latest whatever
// is left of Total (a time limit): the time left shown is at most
// Deadline - now.
type Report struct {
	Done, Total int64
	Unit        string
	Fields      []Field
	Deadline    time.Time
}

// TimeLeft estimates the time left of rep at now, the run's current phase
// having started at phaseStart: Total - Done units at the rate so far, at
// most until rep.Deadline; < 0: unknown.
func TimeLeft(rep Report, phaseStart, now time.Time) time.Duration {
	eta := time.Duration(-1)
	if rep.Total > 0 && rep.Done > 0 {
		eta = time.Duration(float64(now.Sub(phaseStart)) / float64(rep.Done) * float64(max(rep.Total-rep.Done, 0)))
	}
	if !rep.Deadline.IsZero() {
		if left := max(rep.Deadline.Sub(now), 0); eta < 0 || left < eta {
			eta = left
		}
	}
	return eta
}

// Task reports the progress of one task of a command on stderr: a live
// line redrawn in place on a terminal, otherwise a log line (message: the
// task's name; fields: done, of, unit, the report's fields, elapsed_s and
// eta_s in seconds) every few seconds, nothing when the log level is above
// info. Update is not safe for concurrent use; Every runs its own
// goroutine.
type Task struct {
	r          *Reporter
	log        zerolog.Logger
	what       string
	phase      string
	start      time.Time
	phaseStart time.Time
	mu         sync.Mutex // serialises Every's reports with Finish
}

// NewTask returns a task named what reporting to w (a live line when tty)
// or to log.
func NewTask(w io.Writer, tty bool, log zerolog.Logger, what string) *Task {
	now := time.Now()
	return &Task{r: New(w, tty, log.GetLevel() > zerolog.InfoLevel), log: log, what: what, start: now, phaseStart: now}
}

// Period is the time between two reports.
func (t *Task) Period() time.Duration { return t.r.Period() }

// Counter is a task's view as a counted loop of total units: the loop
// calls Update(done) as it goes (experiment.Progress).
type Counter struct {
	t     *Task
	total int64
	unit  string
}

// Counter returns the task as a loop of total units.
func (t *Task) Counter(total int64, unit string) Counter { return Counter{t, total, unit} }

// Period is the task's.
func (c Counter) Period() time.Duration { return c.t.Period() }

// Update reports done of the total units, when due.
func (c Counter) Update(done int64) {
	c.t.Update(Report{Done: done, Total: c.total, Unit: c.unit})
}

// Phase starts a named phase: the live line of the previous phase stays on
// its own line, and the time left is estimated from the new phase's rate.
func (t *Task) Phase(name string) {
	if name == t.phase {
		return
	}
	t.r.Done()
	t.r.drawn = false
	t.phase, t.phaseStart = name, time.Now()
}

// Update reports rep if a report is due (always for the final one: Done at
// least a positive Total).
func (t *Task) Update(rep Report) {
	if !t.r.Due(rep.Total > 0 && rep.Done >= rep.Total) {
		return
	}
	t.report(rep)
}

func (t *Task) report(rep Report) {
	now := time.Now()
	elapsed := now.Sub(t.start)
	eta := TimeLeft(rep, t.phaseStart, now)
	if t.r.TTY() {
		t.r.Draw(Line(t.phase, rep, elapsed, eta) + "\033[K")
		return
	}
	e := t.log.Info()
	if t.phase != "" {
		e = e.Str("phase", t.phase)
	}
	e = e.Int64("done", rep.Done)
	if rep.Total > 0 {
		e = e.Int64("of", rep.Total)
	}
	if rep.Unit != "" {
		e = e.Str("unit", rep.Unit)
	}
	for _, f := range rep.Fields {
		e = e.Interface(f.Key, f.Value)
	}
	e = e.Float64("elapsed_s", elapsed.Round(time.Second).Seconds())
	if eta >= 0 {
		e = e.Float64("eta_s", eta.Round(time.Second).Seconds())
	}
	e.Msg(t.what)
}

// Finish ends the live line (if one was drawn) so that what follows starts
// on a line of its own.
func (t *Task) Finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.r.Done()
	t.r.drawn = false
}

// Every reports report() once a period (a live line's or a log line's)
// until the returned stop is called, which makes a final report on a
// terminal and ends its line. It is for runs whose state lives elsewhere
// (report reads it).
func (t *Task) Every(report func() Report) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(t.r.Period())
		defer tick.Stop()
		for {
			select {
			case <-done:
				if t.r.TTY() && !t.r.Off() {
					t.mu.Lock()
					t.report(report())
					t.mu.Unlock()
				}
				return
			case <-tick.C:
				if !t.r.Off() {
					t.mu.Lock()
					t.report(report())
					t.mu.Unlock()
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		t.Finish()
	}
}

// Line renders a report as a live line: the phase, a bar and done/total
// unit (or done unit without a total), the fields as "key value", the
// elapsed time and the time left (eta < 0: unknown).
func Line(phase string, rep Report, elapsed, eta time.Duration) string {
	var b strings.Builder
	if phase != "" {
		b.WriteString(phase + ": ")
	}
	if rep.Total > 0 {
		fmt.Fprintf(&b, "%s %d/%d", Bar(30, rep.Done, rep.Total), rep.Done, rep.Total)
	} else {
		fmt.Fprintf(&b, "%d", rep.Done)
	}
	if rep.Unit != "" {
		b.WriteString(" " + rep.Unit)
	}
	for _, f := range rep.Fields {
		format := f.Format
		if format == "" {
			format = "%v"
			if _, ok := f.Value.(float64); ok {
				format = "%.4g"
			}
		}
		fmt.Fprintf(&b, "  %s "+format, f.Key, f.Value)
	}
	fmt.Fprintf(&b, "  elapsed %s", elapsed.Round(time.Second))
	if eta >= 0 {
		fmt.Fprintf(&b, "  eta %s", eta.Round(time.Second))
	}
	return b.String()
}
