package dsjson

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"dprl/internal/atomicfile"
	"dprl/internal/jsonstrict"
	"dprl/sessionlog"
)

// MaxActions bounds the number of actions of an export: every line lists
// them all (in "a" and "_multi").
const MaxActions = 1 << 16

// Writer writes one-step sessions as DSJSON decisions (see the package
// documentation for the mapping).
type Writer struct {
	w       *bufio.Writer
	actions int
	buf     []byte
}

// NewWriter returns a writer of decisions over actions discrete actions
// (the K of _multi and a); call Flush when done.
func NewWriter(w io.Writer, actions int) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<16), actions: actions}
}

// Write writes session s as one decision, or refuses it (AppendDecision).
func (w *Writer) Write(s *sessionlog.Session) error {
	b, err := AppendDecision(w.buf[:0], s, w.actions)
	if err != nil {
		return err
	}
	w.buf = b
	_, err = w.w.Write(b)
	return err
}

// AppendDecision appends session s as one decision over actions discrete
// actions (one line, newline included) to b, or refuses it (ErrExport,
// naming the session): more or fewer than one step, a continuous action,
// an action outside [0, actions), no behaviour probability, non-finite
// values.
func AppendDecision(b []byte, s *sessionlog.Session, actions int) ([]byte, error) {
	fail := func(format string, args ...any) ([]byte, error) {
		return b, fmt.Errorf("%w: session %q: %s", ErrExport, s.Session, fmt.Sprintf(format, args...))
	}
	if actions < 1 || actions > MaxActions {
		return b, fmt.Errorf("%w: %d actions, want 1 to %d", ErrExport, actions, MaxActions)
	}
	if len(s.Steps) != 1 {
		return fail("%d steps: a DSJSON line is one decision, so only one-step sessions are exported", len(s.Steps))
	}
	st := &s.Steps[0]
	if st.Action.Vec != nil {
		return fail("a continuous action: DSJSON contextual-bandit decisions have discrete actions")
	}
	if st.NoProb {
		return fail("no behaviour probability: _label_probability is required")
	}
	a := st.Action.Index
	if a < 0 || a >= actions {
		return fail("action %d outside the %d actions [0, %d)", a, actions, actions)
	}
	p := math.Exp(st.LogP)
	if !(p > 0 && p <= 1) {
		return fail("probability %v (logp %v), want 0 < p <= 1", p, st.LogP)
	}
	if err := checkID(s.Session); err != nil {
		return fail("id: %v", err)
	}
	if len(st.Obs) == 0 {
		return fail("empty observation")
	}
	cost := -st.Reward
	if st.Reward == 0 {
		cost = 0
	}
	var err error
	b = append(b, `{"_label_cost":`...)
	if b, err = jsonstrict.AppendFloat(b, cost); err != nil {
		return fail("reward: %v", err)
	}
	b = append(b, `,"_label_probability":`...)
	b = strconv.AppendFloat(b, p, 'g', -1, 64)
	b = append(b, `,"_label_Action":`...)
	b = strconv.AppendInt(b, int64(a+1), 10)
	b = append(b, `,"_labelIndex":`...)
	b = strconv.AppendInt(b, int64(a), 10)
	b = append(b, `,"EventId":`...)
	if b, err = jsonstrict.AppendString(b, s.Session); err != nil {
		return fail("id: %v", err)
	}
	b = append(b, `,"a":[`...)
	b = strconv.AppendInt(b, int64(a+1), 10)
	for k := range actions {
		if k != a {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(k+1), 10)
		}
	}
	b = append(b, `],"c":{"obs":[`...)
	for i, x := range st.Obs {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = jsonstrict.AppendFloat(b, x); err != nil {
			return fail("obs[%d]: %v", i, err)
		}
	}
	b = append(b, `],"_multi":[`...)
	for k := range actions {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"action":{"a`...)
		b = strconv.AppendInt(b, int64(k+1), 10)
		b = append(b, `":1}}`...)
	}
	return append(b, "]}}\n"...), nil
}

// Flush writes buffered decisions to the underlying writer.
func (w *Writer) Flush() error { return w.w.Flush() }

// ImportStats summarises an import.
type ImportStats struct {
	// Decisions is the number of sessions written.
	Decisions int `json:"decisions"`
	// SkippedLearn is the number of lines skipped for "_skipLearn": true.
	SkippedLearn int `json:"skipped_learn"`
	// Actions is the number of actions (0: no line gave _multi or a).
	Actions int `json:"actions"`
	// PDrop is the logger's drop probability, the same on every line.
	PDrop float64 `json:"pdrop"`
	// Features names the obs columns, in order.
	Features []string `json:"features"`
}

// Import reads DSJSON decisions from r and writes them to w as a
// dprl.sessions.v1 log, streaming (one line in memory).
func Import(r io.Reader, w io.Writer, opt ReaderOptions) (ImportStats, error) {
	rd := NewReader(r, opt)
	sw := sessionlog.NewWriter(w)
	var st ImportStats
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		if err := sw.Write(&s); err != nil {
			return st, err
		}
		st.Decisions++
	}
	st.SkippedLearn, st.Actions, st.PDrop, st.Features = rd.Skipped(), rd.Actions(), rd.PDrop(), rd.Features()
	return st, sw.Flush()
}

// ExportStats summarises an export.
type ExportStats struct {
	// Decisions is the number of lines written.
	Decisions int `json:"decisions"`
	// Actions is the number of actions each decision lists.
	Actions int `json:"actions"`
}

// Export reads a dprl.sessions.v1 log from r (strict reader, named name in
// errors) and writes its one-step sessions to w as DSJSON over actions
// discrete actions, streaming.
func Export(r io.Reader, w io.Writer, name string, actions int) (ExportStats, error) {
	rd := sessionlog.NewReader(r, sessionlog.ReaderOptions{Name: name, Spec: sessionlog.Spec{Discrete: actions}})
	dw := NewWriter(w, actions)
	st := ExportStats{Actions: actions}
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		if err := dw.Write(&s); err != nil {
			return st, &sessionlog.LineError{Name: name, Line: rd.Line(), Err: err}
		}
		st.Decisions++
	}
	return st, dw.Flush()
}

// ImportFile imports the DSJSON file in to the session log out, written
// atomically (nothing is left at out on an error).
func ImportFile(in, out string, opt ReaderOptions) (ImportStats, error) {
	f, err := os.Open(in)
	if err != nil {
		return ImportStats{}, err
	}
	defer f.Close()
	if opt.Name == "" {
		opt.Name = in
	}
	var (
		st   ImportStats
		rerr error
	)
	err = atomicfile.Write(out, 0o644, func(w io.Writer) error {
		st, rerr = Import(f, w, opt)
		return rerr
	})
	if rerr != nil {
		return st, rerr // names the line already
	}
	return st, err
}

// ExportFile exports the session log in to the DSJSON file out, written
// atomically.
func ExportFile(in, out string, actions int) (ExportStats, error) {
	f, err := os.Open(in)
	if err != nil {
		return ExportStats{}, err
	}
	defer f.Close()
	var (
		st   ExportStats
		rerr error
	)
	err = atomicfile.Write(out, 0o644, func(w io.Writer) error {
		st, rerr = Export(f, w, in, actions)
		return rerr
	})
	if rerr != nil {
		return st, rerr // names the line already
	}
	return st, err
}

// WriteText prints the summary. The log written is raw data: the
// conversion releases nothing and nothing covers it.
func (st ImportStats) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "imported %d decisions as one-step sessions (%d skipped for _skipLearn); actions: %d; pdrop: %v\nobs columns (%d): %s\nnon-private: a format conversion of raw data; offline runs on the log are charged to its dataset\n",
		st.Decisions, st.SkippedLearn, st.Actions, st.PDrop, len(st.Features), strings.Join(st.Features, ", "))
	return err
}

// WriteText prints the summary.
func (st ExportStats) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "exported %d one-step sessions as DSJSON decisions over %d actions\nnon-private: a format conversion of raw data\n", st.Decisions, st.Actions)
	return err
}
