package dsjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"dprl/internal/jsonstrict"
	"dprl/sessionlog"
	"dprl/space"
)

// Errors of the DSJSON reader and writer.
var (
	// ErrFormat marks a line that violates the format.
	ErrFormat = errors.New("dsjson: bad decision")
	// ErrUnsupported marks a decision of a kind dprl does not import:
	// conditional contextual bandits, slates, continuous actions.
	ErrUnsupported = errors.New("dsjson: not supported")
	// ErrTooLong marks a line longer than the reader's limit (the line
	// reader's, sessionlog.ErrTooLong).
	ErrTooLong = sessionlog.ErrTooLong
	// ErrExport marks a session the writer cannot express as DSJSON.
	ErrExport = errors.New("dsjson: cannot export")
)

// Tolerances of the consistency checks between p and _label_probability.
const (
	// probRelTol bounds |p[0] - _label_probability| / _label_probability:
	// loggers print float32 values (VW's own test data spells one
	// probability 0.8166667 and 0.816666663).
	probRelTol = 1e-6
	// sumTol bounds |sum(p) - 1|.
	sumTol = 1e-3
	// maxDepth bounds the nesting of c (jsonstrict.MaxDepth).
	maxDepth = jsonstrict.MaxDepth
	// maxIDLen bounds EventId (sessionlog's default id limit).
	maxIDLen = 256
)

// ReaderOptions tune the reader.
type ReaderOptions struct {
	// Name is the file name used in error messages.
	Name string
	// MaxLineBytes bounds one line; 0 means 64 MiB.
	MaxLineBytes int
	// IgnoreUnknown skips unknown top-level fields (checking only that
	// their values are JSON without null) instead of refusing them.
	IgnoreUnknown bool `flag:"ignore-unknown" usage:"skip unknown top-level fields instead of refusing the line"`
	// SharedOnly builds obs from the shared features only: _multi then
	// only fixes the number of actions.
	SharedOnly bool `flag:"shared-only" usage:"build observations from the shared features only (not the per-action _multi features)"`
}

// Reader reads DSJSON decisions as one-step sessions, one line at a time.
type Reader struct {
	lines   *sessionlog.LineReader
	opt     ReaderOptions
	sc      jsonstrict.Scanner
	known   bool // first decision read: names, actions and pdrop fixed
	names   []string
	nActs   int // 0: unknown
	pdrop   float64
	skipped int
	feats   []feature
	multi   int // items of _multi in the current line; -1 none
	slot    int // the _multi item being flattened; -1 shared
	ints    []int64
	probs   []float64
}

// feature is one flattened feature of c.
type feature struct {
	slot int    // -1 shared, else the _multi item
	key  string // sort key: path components, indices zero-padded
	name string // path as printed
	v    float64
}

// NewReader returns a strict reader of DSJSON decisions.
func NewReader(r io.Reader, opt ReaderOptions) *Reader {
	if opt.MaxLineBytes <= 0 {
		opt.MaxLineBytes = 64 << 20
	}
	if opt.Name == "" {
		opt.Name = "dsjson"
	}
	return &Reader{lines: sessionlog.NewLineReader(r, opt.Name, opt.MaxLineBytes), opt: opt}
}

// Line is the number of the last line read.
func (r *Reader) Line() int { return r.lines.Line() }

// Features returns the paths of the obs columns, in order (nil before the
// first decision).
func (r *Reader) Features() []string { return slices.Clone(r.names) }

// Actions returns the number of actions (0 when no line gave _multi or a).
func (r *Reader) Actions() int { return r.nActs }

// PDrop returns the logger's drop probability, the same on every line.
func (r *Reader) PDrop() float64 { return r.pdrop }

// Skipped returns the number of lines skipped for _skipLearn.
func (r *Reader) Skipped() int { return r.skipped }

// Next returns the next decision as a one-step session, io.EOF at the end,
// or a *sessionlog.LineError naming the line. Blank lines and decisions with
// "_skipLearn": true are skipped.
func (r *Reader) Next() (sessionlog.Session, error) {
	for {
		line, err := r.lines.Next()
		if err != nil {
			return sessionlog.Session{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		s, skip, err := r.parse(line)
		if err != nil {
			return sessionlog.Session{}, &sessionlog.LineError{Name: r.opt.Name, Line: r.lines.Line(), Err: err}
		}
		if skip {
			r.skipped++
			continue
		}
		return s, nil
	}
}

// decision is a line as scanned.
type decision struct {
	cost, prob, pdrop   float64
	hasCost, hasProb    bool
	index, action       int64
	hasIndex, hasAction bool
	hasA, hasP          bool
	hasC, skipLearn     bool
	eventID             string
	hasEventID          bool
}

func unsupported(field, what string) error {
	return fmt.Errorf("%w: %s: %s", ErrUnsupported, field, what)
}

const ccbSlates = "ccb/slates not supported (conditional contextual bandit and slates logs: only single-decision contextual-bandit logs are imported)"

// parse scans and checks one line; skip reports a _skipLearn decision.
func (r *Reader) parse(line []byte) (s sessionlog.Session, skip bool, err error) {
	var d decision
	r.feats, r.ints, r.probs, r.multi = r.feats[:0], r.ints[:0], r.probs[:0], -1
	sc := &r.sc
	sc.Reset(line)
	err = sc.Object(func(k []byte) error {
		var err error
		key := string(k)
		switch key {
		case "_label_cost":
			d.cost, err = sc.Float()
			d.hasCost = true
		case "_label_probability":
			d.prob, err = sc.Float()
			d.hasProb = true
		case "_labelIndex":
			d.index, err = r.integer()
			d.hasIndex = true
		case "_label_Action":
			d.action, err = r.integer()
			d.hasAction = true
		case "a":
			err = sc.Array(func(int) error {
				v, err := r.integer()
				r.ints = append(r.ints, v)
				return err
			})
			d.hasA = true
		case "p", "_p":
			if d.hasP {
				return fmt.Errorf("%s: both p and _p given", key)
			}
			r.probs, err = sc.Floats(r.probs)
			d.hasP = true
		case "c":
			d.hasC = true
			r.slot = -1
			err = r.context()
		case "pdrop":
			d.pdrop, err = sc.Float()
		case "EventId":
			var b []byte
			b, err = sc.String()
			d.eventID, d.hasEventID = string(b), true
		case "Timestamp", "Version":
			_, err = sc.String()
		case "_skipLearn":
			d.skipLearn, err = sc.Bool()
		case "_original_label_cost":
			_, err = sc.Float()
		case "VWState":
			err = sc.Object(func([]byte) error { return r.skip(1) })
		case "o":
			err = sc.Array(func(int) error {
				return sc.Object(func([]byte) error { return r.skip(2) })
			})
		case "_outcomes":
			return unsupported(key, ccbSlates)
		case "_label_ca", "pdf":
			return unsupported(key, "continuous actions (CATS) not supported")
		default:
			if r.opt.IgnoreUnknown {
				err = r.skip(0)
			} else {
				return fmt.Errorf("unknown field %q (ReaderOptions.IgnoreUnknown, --ignore-unknown, skips unknown top-level fields)", key)
			}
		}
		if err != nil {
			if errors.Is(err, ErrUnsupported) {
				return err
			}
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	if err == nil {
		if err = sc.End(); err != nil {
			err = fmt.Errorf("after the decision: %w", err)
		}
	}
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return s, false, err
		}
		return s, false, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if d.skipLearn {
		return s, true, nil
	}
	s, err = r.check(&d)
	if err != nil {
		return s, false, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return s, false, nil
}

// integer reads an integer number.
func (r *Reader) integer() (int64, error) {
	txt, err := r.sc.Number()
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseInt(string(txt), 10, 32)
	if perr != nil {
		return 0, fmt.Errorf("%s is not an integer", txt)
	}
	return v, nil
}

// skip reads any value but null, depth levels deep.
func (r *Reader) skip(depth int) error {
	sc := &r.sc
	switch k := sc.Peek(); k {
	case jsonstrict.Object, jsonstrict.Array:
		if depth >= maxDepth {
			return fmt.Errorf("nested deeper than %d levels", maxDepth)
		}
		if k == jsonstrict.Array {
			return sc.Array(func(int) error { return r.skip(depth + 1) })
		}
		return sc.Object(func([]byte) error { return r.skip(depth + 1) })
	case jsonstrict.String:
		_, err := sc.String()
		return err
	case jsonstrict.Number:
		_, err := sc.Float()
		return err
	case jsonstrict.Bool:
		_, err := sc.Bool()
		return err
	case jsonstrict.Null:
		return errors.New("null is not a value here")
	}
	_, err := sc.String() // the scanner's error for no value at all
	return err
}

// context flattens c into r.feats.
func (r *Reader) context() error {
	sc := &r.sc
	return sc.Object(func(k []byte) error {
		key := string(k)
		switch {
		case key == "_multi":
			r.multi = 0
			err := sc.Array(func(i int) error {
				r.multi = i + 1
				r.slot = i
				defer func() { r.slot = -1 }()
				pre := "_multi[" + strconv.Itoa(i) + "]"
				return sc.Object(func(k []byte) error {
					key := string(k)
					switch {
					case key == "_tag":
						_, err := sc.String()
						return wrapPath(pre+"._tag", err)
					case key == "_slot_id":
						return unsupported("c."+pre+"._slot_id", ccbSlates)
					case strings.HasPrefix(key, "_"):
						return fmt.Errorf("c.%s.%s: unknown field", pre, key)
					}
					return r.flatten(pre+"."+key, sortKey(key), 2)
				})
			})
			if errors.Is(err, ErrUnsupported) {
				return err
			}
			return wrapPath("_multi", err)
		case key == "_slots":
			return unsupported("c._slots", ccbSlates)
		case key == "_tag":
			_, err := sc.String()
			return wrapPath(key, err)
		case strings.HasPrefix(key, "_"):
			return fmt.Errorf("%s: unknown field", key)
		}
		return r.flatten(key, sortKey(key), 1)
	})
}

// pathError is an error at a path inside c.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

func wrapPath(path string, err error) error {
	if err == nil {
		return nil
	}
	var pe *pathError
	if errors.As(err, &pe) || errors.Is(err, ErrUnsupported) {
		return err
	}
	return &pathError{path: path, err: err}
}

// sortKey is a path component's sort key: keys as they are, after \x01;
// indices zero-padded after \x02, so they sort numerically.
func sortKey(key string) string { return "\x01" + key + "\x00" }

func indexKey(i int) string { return fmt.Sprintf("\x02%010d\x00", i) }

// flatten reads the value at path into r.feats.
func (r *Reader) flatten(path, key string, depth int) error {
	sc := &r.sc
	switch k := sc.Peek(); k {
	case jsonstrict.Object:
		if depth >= maxDepth {
			return &pathError{path, fmt.Errorf("nested deeper than %d levels", maxDepth)}
		}
		return wrapPath(path, sc.Object(func(k []byte) error {
			return r.flatten(path+"."+string(k), key+sortKey(string(k)), depth+1)
		}))
	case jsonstrict.Array:
		if depth >= maxDepth {
			return &pathError{path, fmt.Errorf("nested deeper than %d levels", maxDepth)}
		}
		return wrapPath(path, sc.Array(func(i int) error {
			return r.flatten(path+"["+strconv.Itoa(i)+"]", key+indexKey(i), depth+1)
		}))
	case jsonstrict.Number:
		v, err := sc.Float()
		if err != nil {
			return &pathError{path, err}
		}
		r.add(path, key, v)
		return nil
	case jsonstrict.Bool:
		b, err := sc.Bool()
		if err != nil {
			return &pathError{path, err}
		}
		v := 0.0
		if b {
			v = 1
		}
		r.add(path, key, v)
		return nil
	case jsonstrict.String:
		b, err := sc.String()
		if err != nil {
			return &pathError{path, err}
		}
		return &pathError{path, fmt.Errorf("string feature %q: only numeric and boolean features are imported (encode categories as 0/1 features)", clip(b))}
	case jsonstrict.Null:
		return &pathError{path, errors.New("null is not a feature value")}
	}
	_, err := sc.Float() // the scanner's error for no value
	return &pathError{path, err}
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func (r *Reader) add(path, key string, v float64) {
	if r.slot >= 0 && r.opt.SharedOnly {
		return
	}
	r.feats = append(r.feats, feature{slot: r.slot, key: key, name: path, v: v})
}

// check validates a scanned decision and builds its session.
func (r *Reader) check(d *decision) (sessionlog.Session, error) {
	var s sessionlog.Session
	if !d.hasEventID {
		return s, errors.New("EventId: missing")
	}
	if err := checkID(d.eventID); err != nil {
		return s, fmt.Errorf("EventId: %w", err)
	}
	if !d.hasCost {
		return s, errors.New("_label_cost: missing")
	}
	if !d.hasProb {
		return s, errors.New("_label_probability: missing")
	}
	if !(d.prob > 0 && d.prob <= 1) {
		return s, fmt.Errorf("_label_probability: %v, want 0 < p <= 1", d.prob)
	}
	var idx int64
	switch {
	case d.hasIndex && d.hasAction && d.action != d.index+1:
		return s, fmt.Errorf("_label_Action %d is not _labelIndex %d + 1 (_label_Action is 1-based, _labelIndex 0-based)", d.action, d.index)
	case d.hasIndex:
		idx = d.index
	case d.hasAction:
		idx = d.action - 1
	default:
		return s, errors.New("_labelIndex: missing (and no _label_Action)")
	}
	if idx < 0 {
		return s, fmt.Errorf("_labelIndex: %d, want >= 0", idx)
	}
	if !d.hasC {
		return s, errors.New("c: missing")
	}
	k := 0
	if r.multi >= 0 {
		k = r.multi
	}
	if d.hasA {
		if k > 0 && len(r.ints) != k {
			return s, fmt.Errorf("a: %d actions, but c._multi has %d", len(r.ints), k)
		}
		k = len(r.ints)
		if err := checkIDs(r.ints, idx); err != nil {
			return s, fmt.Errorf("a: %w", err)
		}
	}
	if r.multi == 0 || (d.hasA && len(r.ints) == 0) {
		return s, errors.New("no actions (empty _multi or a)")
	}
	if k > 0 && idx >= int64(k) {
		return s, fmt.Errorf("_labelIndex: %d outside the %d actions [0, %d)", idx, k, k)
	}
	if d.hasP {
		if !d.hasA {
			return s, errors.New("p: given without a (p is in the order of a)")
		}
		if err := checkProbs(r.probs, len(r.ints), d.prob); err != nil {
			return s, fmt.Errorf("p: %w", err)
		}
	}
	if !(d.pdrop >= 0 && d.pdrop < 1) {
		return s, fmt.Errorf("pdrop: %v, want 0 <= pdrop < 1", d.pdrop)
	}
	slices.SortStableFunc(r.feats, func(a, b feature) int {
		if a.slot != b.slot {
			return a.slot - b.slot
		}
		return strings.Compare(a.key, b.key)
	})
	if len(r.feats) == 0 {
		return s, errors.New("c: no numeric features (an observation needs at least one)")
	}
	if r.known {
		if err := r.sameSchema(); err != nil {
			return s, err
		}
		if k > 0 && r.nActs > 0 && k != r.nActs {
			return s, fmt.Errorf("%d actions, the first decision had %d", k, r.nActs)
		}
		if d.pdrop != r.pdrop {
			return s, fmt.Errorf("pdrop: %v, the first decision had %v (a pdrop that varies between lines needs per-record weights, which a session log does not carry)", d.pdrop, r.pdrop)
		}
	} else {
		r.names = make([]string, len(r.feats))
		for i, f := range r.feats {
			r.names[i] = f.name
		}
		r.pdrop = d.pdrop
		r.known = true
	}
	if r.nActs == 0 {
		r.nActs = k
	}
	if r.nActs > 0 && idx >= int64(r.nActs) {
		return s, fmt.Errorf("_labelIndex: %d outside the %d actions [0, %d)", idx, r.nActs, r.nActs)
	}
	obs := make([]float64, len(r.feats))
	for i, f := range r.feats {
		obs[i] = f.v
	}
	reward := -d.cost
	if d.cost == 0 {
		reward = 0 // not -0
	}
	s = sessionlog.Session{
		Session:  d.eventID,
		Steps:    []sessionlog.Step{{Obs: obs, Action: space.Action{Index: int(idx)}, Reward: reward, LogP: math.Log(d.prob)}},
		Terminal: true,
	}
	return s, nil
}

// sameSchema checks the line's feature paths against the first decision's.
func (r *Reader) sameSchema() error {
	for i, f := range r.feats {
		if i >= len(r.names) {
			return fmt.Errorf("c: feature %s not in the first decision (every decision must have the same features: %d)", f.name, len(r.names))
		}
		if f.name != r.names[i] {
			return fmt.Errorf("c: obs[%d] is %s, the first decision's is %s (every decision must have the same features)", i, f.name, r.names[i])
		}
	}
	if len(r.feats) < len(r.names) {
		return fmt.Errorf("c: feature %s of the first decision missing (every decision must have the same features)", r.names[len(r.feats)])
	}
	return nil
}

// checkIDs checks that ids is a permutation of 1..len(ids) whose first is
// the chosen action's id.
func checkIDs(ids []int64, idx int64) error {
	seen := make([]bool, len(ids))
	for i, id := range ids {
		if id < 1 || id > int64(len(ids)) {
			return fmt.Errorf("[%d]: action id %d outside 1..%d (ids are 1-based)", i, id, len(ids))
		}
		if seen[id-1] {
			return fmt.Errorf("[%d]: action id %d repeated", i, id)
		}
		seen[id-1] = true
	}
	if len(ids) > 0 && ids[0] != idx+1 {
		return fmt.Errorf("[0]: %d, but the chosen action is %d (_labelIndex %d + 1): the chosen action comes first", ids[0], idx+1, idx)
	}
	return nil
}

// checkProbs checks p against the actions and the chosen probability.
func checkProbs(p []float64, n int, chosen float64) error {
	if len(p) != n {
		return fmt.Errorf("%d probabilities for %d actions in a", len(p), n)
	}
	sum := 0.0
	for i, x := range p {
		if !(x >= 0 && x <= 1) {
			return fmt.Errorf("[%d]: %v, want 0 <= p <= 1", i, x)
		}
		sum += x
	}
	if math.Abs(sum-1) > sumTol {
		return fmt.Errorf("sum %v, want 1 (within %v)", sum, sumTol)
	}
	if math.Abs(p[0]-chosen) > probRelTol*chosen {
		return fmt.Errorf("[0]: %v, but _label_probability is %v (p[0] is the chosen action's)", p[0], chosen)
	}
	return nil
}

// checkID checks an EventId as sessionlog checks a session id.
func checkID(id string) error {
	if id == "" {
		return errors.New("empty")
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%d bytes, limit %d", len(id), maxIDLen)
	}
	for _, c := range id {
		if unicode.IsControl(c) || c == unicode.ReplacementChar {
			return fmt.Errorf("control or invalid character %q", c)
		}
	}
	return nil
}
