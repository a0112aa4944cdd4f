// Package progress is the common core of the command line's progress
// reports on stderr: on a terminal a live line redrawn in place a few times
// a second, otherwise (the caller's) log line every few seconds, and nothing
// at all when the caller's log level is above info.
//
// Progress lines carry only counts of the run itself (users, episodes,
// steps done), never statistics of private data beyond what the command
// releases.
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// The periods between two reports.
const (
	TTYPeriod = 250 * time.Millisecond // a live line on a terminal
	LogPeriod = 5 * time.Second        // a log line otherwise
)

// Reporter throttles and draws progress reports. It is not safe for
// concurrent use.
type Reporter struct {
	w      io.Writer
	tty    bool
	off    bool
	period time.Duration
	last   time.Time
	drawn  bool
}

// New returns a reporter writing live lines to w when tty is true; off
// disables every report (Due is then always false). The period starts now.
func New(w io.Writer, tty, off bool) *Reporter {
	r := &Reporter{w: w, tty: tty, off: off, period: LogPeriod, last: time.Now()}
	if tty {
		r.period = TTYPeriod
	}
	return r
}

// TTY reports whether reports are live lines (Draw) rather than log lines.
func (r *Reporter) TTY() bool { return r.tty }

// Off reports whether reports are disabled.
func (r *Reporter) Off() bool { return r.off }

// Period is the time between two reports.
func (r *Reporter) Period() time.Duration { return r.period }

// Due reports whether a report should be made now: never when off, always
// when final (the last update of a loop), otherwise once a period. A true
// result starts a new period.
func (r *Reporter) Due(final bool) bool {
	if r.off || (!final && time.Since(r.last) < r.period) {
		return false
	}
	r.last = time.Now()
	return true
}

// Draw redraws the live line: a carriage return and line.
func (r *Reporter) Draw(line string) {
	fmt.Fprint(r.w, "\r"+line)
	r.drawn = true
}

// Done ends the live line with a newline if one was ever drawn, so that
// what follows starts on a line of its own.
func (r *Reporter) Done() {
	if r.drawn {
		fmt.Fprintln(r.w)
	}
}

// Bar returns a bar of width cells, filled in proportion done/total:
// "[====      ]". total <= 0 gives an empty bar; done is clamped to
// [0, total].
func Bar(width int, done, total int64) string {
	k := 0
	if total > 0 {
		k = int(int64(width) * min(max(done, 0), total) / total)
	}
	return "[" + strings.Repeat("=", k) + strings.Repeat(" ", width-k) + "]"
}
