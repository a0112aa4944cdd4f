package sessionlog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"unicode"

	"dprl/internal/jsonstrict"
	"dprl/space"
)

// FormatV1 names the session-log format.
const FormatV1 = "dprl.sessions.v1"

// Errors of the session-log reader.
var (
	// ErrFormat marks a record that violates the format.
	ErrFormat = errors.New("sessionlog: bad session record")
	// ErrTooLong marks a line longer than the reader's limit.
	ErrTooLong = errors.New("sessionlog: line too long")
)

// Step is one transition of a logged session.
type Step struct {
	Obs    []float64    `json:"obs"`
	Action space.Action `json:"-"`
	Reward float64      `json:"reward"`
	// LogP is the log of the behaviour probability (density) of Action; NaN
	// when NoProb is set.
	LogP float64 `json:"-"`
	// NoProb marks a step logged without a behaviour probability: the record
	// has neither "prob" nor "logp" and LogP is NaN. Only a reader with
	// ReaderOptions.OptionalProb accepts such steps, and the Writer omits
	// "logp" for them. Logs released by SVT (dprl offline svt's stable set)
	// carry none: a behaviour probability would be the probability of the
	// expert who generated the step, which the release does not cover.
	NoProb bool `json:"-"`
}

// HasProb reports whether the step carries a behaviour probability.
func (st *Step) HasProb() bool { return !st.NoProb }

// Session is one logged trajectory.
type Session struct {
	Session string `json:"session"`
	User    string `json:"user,omitempty"`
	Expert  string `json:"expert,omitempty"`
	// PolicyVersion is the serving policy's version, when known.
	PolicyVersion *uint64   `json:"policy_version,omitempty"`
	Steps         []Step    `json:"steps"`
	FinalObs      []float64 `json:"final_obs,omitempty"`
	Terminal      bool      `json:"terminal"`
}

// Return is the undiscounted return of the session.
func (s *Session) Return() float64 {
	var r float64
	for _, st := range s.Steps {
		r += st.Reward
	}
	return r
}

// Spec fixes the dimensions a reader checks. Zero values are learned from the
// first record and enforced on the rest.
type Spec struct {
	// ObsDim is the observation length (0: from the first record).
	ObsDim int
	// Discrete is the number of discrete actions (0: unknown bound; a
	// negative value means continuous actions).
	Discrete int
	// ActDim is the continuous action length (0: from the first record).
	ActDim int
}

// ReaderOptions bound what the reader accepts.
type ReaderOptions struct {
	// Name is the file name used in error messages.
	Name string
	// Spec fixes dimensions; zero fields are learned from the first record.
	Spec Spec
	// MaxLineBytes bounds one record; 0 means 64 MiB.
	MaxLineBytes int
	// MaxIDLen bounds session, user and expert ids; 0 means 256.
	MaxIDLen int
	// OptionalProb accepts steps with neither "prob" nor "logp", returning
	// them with Step.NoProb set (and LogP NaN). Off by default, so that a
	// consumer that needs behaviour probabilities (off-policy evaluation,
	// importance weighting, the SVT release's behaviour check) refuses such a
	// log at its first step without one, naming the line. Consumers that do
	// not use them - learners on an SVT stable release, behaviour cloning,
	// CQL/BCQ-style offline RL - set it.
	OptionalProb bool
}

// Reader reads a session log record by record, in bounded memory: one line
// (at most ReaderOptions.MaxLineBytes) and the session it holds.
type Reader struct {
	lines  *LineReader // nil for a parser of single lines (newParser)
	opt    ReaderOptions
	spec   Spec
	known  bool  // spec learned
	kind   int   // 0 unknown, 1 discrete, 2 continuous
	recOff int64 // offset of the last record's line
	recLen int   // its length, without the newline
	sc     jsonstrict.Scanner
	raw    rawRecord
}

// NewReader returns a strict reader of dprl.sessions.v1 records.
func NewReader(r io.Reader, opt ReaderOptions) *Reader {
	rd := newParser(opt)
	rd.lines = NewLineReader(r, rd.opt.Name, rd.opt.MaxLineBytes)
	return rd
}

// newParser returns a reader without input, for parsing single lines.
func newParser(opt ReaderOptions) *Reader {
	if opt.MaxLineBytes <= 0 {
		opt.MaxLineBytes = 64 << 20
	}
	if opt.MaxIDLen <= 0 {
		opt.MaxIDLen = 256
	}
	if opt.Name == "" {
		opt.Name = "sessions"
	}
	rd := &Reader{opt: opt, spec: opt.Spec}
	if opt.Spec.Discrete < 0 {
		rd.kind = 2
	} else if opt.Spec.Discrete > 0 {
		rd.kind = 1
	}
	return rd
}

// Line is the line number of the last record returned.
func (r *Reader) Line() int {
	if r.lines == nil {
		return 0
	}
	return r.lines.Line()
}

// Spec returns the dimensions in force (learned from the first record when
// not given).
func (r *Reader) Spec() Spec { return r.spec }

// Offset is the byte offset in the input of the line of the last record
// returned.
func (r *Reader) Offset() int64 { return r.recOff }

// LineError locates a bad record.
type LineError struct {
	Name string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// rawStep is a step as scanned, before validation. Obs and vector actions
// are ranges of the record's scratch arrays; a scalar action is its number's
// text (aliasing the line).
type rawStep struct {
	obsLo, obsHi int
	actLo, actHi int
	act          []byte
	reward       float64
	prob, logp   float64
	has          uint8 // stepObs | stepAct | ...
}

const (
	stepObs = 1 << iota
	stepAct
	stepActVec
	stepReward
	stepProb
	stepLogP
)

// rawRecord is a record as scanned, before validation; its slices are
// reused from record to record.
type rawRecord struct {
	session, user, expert string
	hasSession            bool
	policyVersion         *uint64
	steps                 []rawStep
	obs, acts             []float64 // every step's obs and vector actions
	finalObs              []float64
	hasFinal              bool
	terminal              *bool
}

// fieldError is a scan error with the path of the field it is in.
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// at prefixes err's field path with field ("steps", "[3]", "obs").
func at(field string, err error) error {
	if fe, ok := err.(*fieldError); ok {
		if fe.path[0] == '[' {
			fe.path = field + fe.path
		} else {
			fe.path = field + "." + fe.path
		}
		return fe
	}
	return &fieldError{path: field, err: err}
}

// Next returns the next session, io.EOF at the end, or a *LineError naming
// the line and field of the first problem. Blank lines are skipped.
func (r *Reader) Next() (Session, error) {
	for {
		off := r.lines.Offset()
		line, err := r.lines.Next()
		if err != nil {
			return Session{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		s, err := r.parse(line)
		if err != nil {
			return Session{}, &LineError{Name: r.opt.Name, Line: r.lines.Line(), Err: err}
		}
		r.recOff, r.recLen = off, len(bytes.TrimSuffix(line, []byte{'\n'}))
		return s, nil
	}
}

// parse scans one line strictly (jsonstrict: no repeated keys, keys matched
// exactly, no null, valid UTF-8, finite numbers) and then validates the
// record.
func (r *Reader) parse(line []byte) (Session, error) {
	if err := r.scan(line); err != nil {
		return Session{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	raw := &r.raw
	if !raw.hasSession {
		return Session{}, fmt.Errorf("%w: session: missing", ErrFormat)
	}
	if err := r.checkID("session", raw.session, true); err != nil {
		return Session{}, err
	}
	if err := r.checkID("user", raw.user, false); err != nil {
		return Session{}, err
	}
	if err := r.checkID("expert", raw.expert, false); err != nil {
		return Session{}, err
	}
	if raw.terminal == nil {
		return Session{}, fmt.Errorf("%w: terminal: missing", ErrFormat)
	}
	if len(raw.steps) == 0 {
		return Session{}, fmt.Errorf("%w: steps: empty", ErrFormat)
	}
	s := Session{Session: raw.session, User: raw.user, Expert: raw.expert, PolicyVersion: raw.policyVersion, Terminal: *raw.terminal}
	// One array holds every observation of the session and one every
	// vector action: two allocations per record, not one per step.
	obs := slices.Clone(raw.obs)
	var acts []float64
	if len(raw.acts) > 0 {
		acts = slices.Clone(raw.acts)
	}
	s.Steps = make([]Step, len(raw.steps))
	for i := range raw.steps {
		if err := r.step(&raw.steps[i], &s.Steps[i], obs, acts); err != nil {
			return Session{}, fmt.Errorf("%w: steps[%d].%v", ErrFormat, i, err)
		}
	}
	if raw.hasFinal {
		if err := r.checkObs(raw.finalObs); err != nil {
			return Session{}, fmt.Errorf("%w: final_obs%v", ErrFormat, err)
		}
		s.FinalObs = slices.Clone(raw.finalObs)
	}
	r.known = true
	return s, nil
}

// scan reads the line's JSON into r.raw, checking syntax and types only.
func (r *Reader) scan(line []byte) error {
	raw := &r.raw
	*raw = rawRecord{steps: raw.steps[:0], obs: raw.obs[:0], acts: raw.acts[:0], finalObs: raw.finalObs[:0]}
	sc := &r.sc
	sc.Reset(line)
	err := sc.Object(func(k []byte) error {
		var err error
		switch string(k) {
		case "session":
			raw.session, err = r.str()
			raw.hasSession = true
		case "user":
			raw.user, err = r.str()
		case "expert":
			raw.expert, err = r.str()
		case "policy_version":
			var txt []byte
			if txt, err = sc.Number(); err == nil {
				v, perr := strconv.ParseUint(string(txt), 10, 64)
				if perr != nil {
					err = fmt.Errorf("%s is not an unsigned 64-bit integer", txt)
				}
				raw.policyVersion = &v
			}
		case "steps":
			err = sc.Array(func(i int) error {
				if err := r.scanStep(); err != nil {
					return at("["+strconv.Itoa(i)+"]", err)
				}
				return nil
			})
		case "final_obs":
			raw.finalObs, err = sc.Floats(raw.finalObs)
			raw.hasFinal = true
		case "terminal":
			var b bool
			b, err = sc.Bool()
			raw.terminal = &b
		default:
			return fmt.Errorf("unknown field %q", k)
		}
		if err != nil {
			return at(string(k), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := sc.End(); err != nil {
		return fmt.Errorf("after the record: %w", err)
	}
	return nil
}

// str reads a string value as a Go string.
func (r *Reader) str() (string, error) {
	b, err := r.sc.String()
	return string(b), err
}

// scanStep reads one step object into r.raw.
func (r *Reader) scanStep() error {
	raw := &r.raw
	raw.steps = append(raw.steps, rawStep{})
	st := &raw.steps[len(raw.steps)-1]
	sc := &r.sc
	return sc.Object(func(k []byte) error {
		var err error
		switch string(k) {
		case "obs":
			st.obsLo = len(raw.obs)
			raw.obs, err = sc.Floats(raw.obs)
			st.obsHi = len(raw.obs)
			st.has |= stepObs
		case "action":
			st.has |= stepAct
			switch sc.Peek() {
			case jsonstrict.Array:
				st.has |= stepActVec
				st.actLo = len(raw.acts)
				raw.acts, err = sc.Floats(raw.acts)
				st.actHi = len(raw.acts)
			case jsonstrict.Number:
				st.act, err = sc.Number()
			default:
				err = fmt.Errorf("want an integer action index or an array of numbers, got %v", sc.Peek())
			}
		case "reward":
			st.reward, err = sc.Float()
			st.has |= stepReward
		case "prob":
			st.prob, err = sc.Float()
			st.has |= stepProb
		case "logp":
			st.logp, err = sc.Float()
			st.has |= stepLogP
		default:
			return fmt.Errorf("unknown field %q", k)
		}
		if err != nil {
			return at(string(k), err)
		}
		return nil
	})
}

func (r *Reader) checkID(field, id string, required bool) error {
	if id == "" {
		if required {
			return fmt.Errorf("%w: %s: empty", ErrFormat, field)
		}
		return nil
	}
	if len(id) > r.opt.MaxIDLen {
		return fmt.Errorf("%w: %s: %d bytes, limit %d", ErrFormat, field, len(id), r.opt.MaxIDLen)
	}
	for _, c := range id {
		if unicode.IsControl(c) || c == unicode.ReplacementChar {
			return fmt.Errorf("%w: %s: control or invalid character %q", ErrFormat, field, c)
		}
	}
	return nil
}

// checkObs validates an observation's length and values; the error text
// continues a field path.
func (r *Reader) checkObs(obs []float64) error {
	if len(obs) == 0 && r.spec.ObsDim == 0 {
		return errors.New(": empty observation")
	}
	if err := checkVec(obs, &r.spec.ObsDim); err != nil {
		if err.Error()[0] != '[' {
			return errors.New(": " + err.Error())
		}
		return err
	}
	return nil
}

// checkVec checks a vector's length against *dim (learning it from the first
// vector when *dim is 0) and that every value is finite. Errors are either
// "[j]: value" or a length message.
func checkVec(v []float64, dim *int) error {
	if *dim == 0 {
		if len(v) == 0 {
			return errors.New("empty vector")
		}
		*dim = len(v)
	}
	if len(v) != *dim {
		return fmt.Errorf("length %d, want %d", len(v), *dim)
	}
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("[%d]: %v", j, x)
		}
	}
	return nil
}

func (r *Reader) step(raw *rawStep, st *Step, obs, acts []float64) error {
	if raw.has&stepObs == 0 {
		return errors.New("obs: missing")
	}
	o := obs[raw.obsLo:raw.obsHi:raw.obsHi]
	if err := r.checkObs(o); err != nil {
		return fmt.Errorf("obs%v", err)
	}
	st.Obs = o
	if raw.has&stepReward == 0 {
		return errors.New("reward: missing")
	}
	st.Reward = raw.reward
	if raw.has&stepAct == 0 {
		return errors.New("action: missing")
	}
	if err := r.action(raw, acts, &st.Action); err != nil {
		return fmt.Errorf("action: %v", err)
	}
	hasProb, hasLogP := raw.has&stepProb != 0, raw.has&stepLogP != 0
	switch {
	case hasProb && hasLogP:
		return errors.New("prob and logp: give one, not both")
	case hasProb:
		p := raw.prob
		if !(p > 0) || math.IsInf(p, 0) || (r.kind == 1 && p > 1) {
			return fmt.Errorf("prob: %v, want 0 < prob%s", p, map[bool]string{true: " <= 1", false: ""}[r.kind == 1])
		}
		st.LogP = math.Log(p)
	case hasLogP:
		l := raw.logp
		if math.IsNaN(l) || math.IsInf(l, 0) || (r.kind == 1 && l > 0) {
			return fmt.Errorf("logp: %v, want a finite value%s", l, map[bool]string{true: " <= 0", false: ""}[r.kind == 1])
		}
		st.LogP = l
	case r.opt.OptionalProb:
		st.LogP, st.NoProb = math.NaN(), true
	default:
		return errors.New("prob: missing (the behaviour probability of the action, or logp; this reader needs them - a log without behaviour probabilities, such as an SVT stable release, cannot be used here)")
	}
	return nil
}

func (r *Reader) action(raw *rawStep, acts []float64, a *space.Action) error {
	if raw.has&stepActVec != 0 {
		if r.kind == 1 {
			return errors.New("a vector, but the actions are discrete")
		}
		v := acts[raw.actLo:raw.actHi:raw.actHi]
		if v == nil {
			v = []float64{}
		}
		if err := checkVec(v, &r.spec.ActDim); err != nil {
			return err
		}
		r.kind = 2
		r.spec.Discrete = -1
		*a = space.Action{Vec: v}
		return nil
	}
	data := raw.act
	if r.kind == 2 {
		return fmt.Errorf("%s, but the actions are continuous vectors", data)
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an integer action index", data)
	}
	if n < 0 || (r.spec.Discrete > 0 && n >= int64(r.spec.Discrete)) || n > math.MaxInt32 {
		return fmt.Errorf("index %d outside [0, %d)", n, r.spec.Discrete)
	}
	r.kind = 1
	*a = space.Action{Index: int(n)}
	return nil
}

// Writer writes sessions as dprl.sessions.v1 JSON Lines.
type Writer struct {
	w   *bufio.Writer
	buf []byte
}

// NewWriter returns a writer; call Flush when done.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 1<<16)} }

// Write writes one record (AppendSession).
func (w *Writer) Write(s *Session) error {
	b, err := AppendSession(w.buf[:0], s)
	if err != nil {
		return err
	}
	w.buf = b
	_, err = w.w.Write(b)
	return err
}

// Encoder appends the record of session s, one line with its newline, to
// b and returns the extended slice, or refuses s with an error (b's
// contents past its length are then unspecified). AppendSession is the
// dprl.sessions.v1 one; a RotatingWriter takes any (RotatingOptions).
type Encoder func(b []byte, s *Session) ([]byte, error)

// AppendSession is the dprl.sessions.v1 Encoder. It validates nothing
// beyond finiteness and valid UTF-8 in the ids. Empty user and expert ids,
// a nil policy version or final observation, and the logp of NoProb steps
// are omitted. Ids are written as JSON strings (jsonstrict.AppendString),
// so any valid id reads back as written.
func AppendSession(b []byte, s *Session) ([]byte, error) {
	var err error
	b = append(b, `{"session":`...)
	if b, err = jsonstrict.AppendString(b, s.Session); err != nil {
		return b, fmt.Errorf("sessionlog: session %q: id: %w", s.Session, err)
	}
	if s.User != "" {
		b = append(b, `,"user":`...)
		if b, err = jsonstrict.AppendString(b, s.User); err != nil {
			return b, fmt.Errorf("sessionlog: session %q: user: %w", s.Session, err)
		}
	}
	if s.Expert != "" {
		b = append(b, `,"expert":`...)
		if b, err = jsonstrict.AppendString(b, s.Expert); err != nil {
			return b, fmt.Errorf("sessionlog: session %q: expert: %w", s.Session, err)
		}
	}
	if s.PolicyVersion != nil {
		b = append(b, `,"policy_version":`...)
		b = strconv.AppendUint(b, *s.PolicyVersion, 10)
	}
	b = append(b, `,"steps":[`...)
	for i := range s.Steps {
		st := &s.Steps[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"obs":`...)
		if b, err = appendFloats(b, st.Obs); err != nil {
			return b, fmt.Errorf("sessionlog: session %q steps[%d].obs: %w", s.Session, i, err)
		}
		b = append(b, `,"action":`...)
		if st.Action.Vec != nil {
			if b, err = appendFloats(b, st.Action.Vec); err != nil {
				return b, fmt.Errorf("sessionlog: session %q steps[%d].action: %w", s.Session, i, err)
			}
		} else {
			b = strconv.AppendInt(b, int64(st.Action.Index), 10)
		}
		b = append(b, `,"reward":`...)
		if b, err = jsonstrict.AppendFloat(b, st.Reward); err != nil {
			return b, fmt.Errorf("sessionlog: session %q steps[%d].reward: %w", s.Session, i, err)
		}
		if !st.NoProb {
			b = append(b, `,"logp":`...)
			if b, err = jsonstrict.AppendFloat(b, st.LogP); err != nil {
				return b, fmt.Errorf("sessionlog: session %q steps[%d].logp: %w", s.Session, i, err)
			}
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if s.FinalObs != nil {
		b = append(b, `,"final_obs":`...)
		if b, err = appendFloats(b, s.FinalObs); err != nil {
			return b, fmt.Errorf("sessionlog: session %q final_obs: %w", s.Session, err)
		}
	}
	b = append(b, `,"terminal":`...)
	b = strconv.AppendBool(b, s.Terminal)
	return append(b, "}\n"...), nil
}

// Flush writes buffered records to the underlying writer.
func (w *Writer) Flush() error { return w.w.Flush() }

func appendFloats(b []byte, v []float64) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = jsonstrict.AppendFloat(b, x); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// RecordHash is the SHA-256 of one record's canonical encoding: the
// identity of a session in the ledger (ContentHash), or the exact record
// (HashRecord). It is an alias, so a []RecordHash is the []ledger.RecordHash
// the ledger takes.
type RecordHash = [32]byte

// recordTag, contentTag and datasetTag separate the hashes' domains.
const (
	recordTag  = "dprl.sessions.v1 record\x00"
	contentTag = "dprl.sessions.v1 content\x00"
	datasetTag = "dprl.sessions.v1 dataset\x00"
)

// ContentHash returns a record's identity in the ledger: the hash of the
// content every offline mechanism may read as its data, and nothing else -
// each step's observation, action and reward, and the terminal flag. The
// ids (session, user, expert), the policy version, the behaviour
// probabilities and final_obs are not part of it, so a copy of a log with
// ids renamed, probabilities or final_obs dropped (or changed), keys
// reordered or numbers spelt otherwise (1, 1.0, 1e0) holds the same records
// and is charged as the same dataset. Leaving a field out of the identity
// only ever merges records: copies that differ in it share one budget,
// which is the conservative side. Where a check needs the exact record (a
// public input read as a release), it uses HashRecord.
func ContentHash(s *Session) RecordHash { return hashSession(s, false) }

// HashRecord returns the hash of a session's exact canonical binary
// encoding: every field the record carries, as parsed. Two lines that
// parse to the same session hash the same, whatever their whitespace, key
// order or number spelling; a step's behaviour probability is hashed as the
// parsed log-probability, so "prob": p and "logp": log p (the float64 that
// Go's math.Log(p) returns) are the same record, and a step without one
// (Step.NoProb) differs from every step with one. The ids (session, user,
// expert) and the policy version are part of it. A session written by
// Writer and read back hashes as the session written.
//
// It was the records' identity in ledgers written before ContentHash (their
// record index holds these hashes, which the ledger still looks up as a
// record's legacy hash); it is what an Index checks a record read again
// against, and what identifies the records of a released file exactly.
func HashRecord(s *Session) RecordHash { return hashSession(s, true) }

// hashSession returns the SHA-256 of a record's canonical binary encoding:
// the parsed values, not the text they were read from, length-prefixed
// (big-endian uint64 lengths, float64 bits), so distinct values never share
// an encoding; -0 and +0 are one value. exact selects HashRecord's encoding
// (every field), else ContentHash's (steps' observations, actions and
// rewards, and the terminal flag), each under its own domain tag.
func hashSession(s *Session, exact bool) RecordHash {
	h := sha256.New()
	// The encoding is gathered in buf and written in blocks: the same
	// bytes as one Write per field, without a call per value.
	var buf [1024]byte
	n := 0
	flush := func() {
		h.Write(buf[:n])
		n = 0
	}
	u64 := func(v uint64) {
		if n+8 > len(buf) {
			flush()
		}
		binary.BigEndian.PutUint64(buf[n:], v)
		n += 8
	}
	flag := func(b bool) {
		if n+1 > len(buf) {
			flush()
		}
		buf[n] = 0
		if b {
			buf[n] = 1
		}
		n++
	}
	str := func(v string) {
		u64(uint64(len(v)))
		flush()
		h.Write([]byte(v))
	}
	f64 := func(x float64) {
		if x == 0 {
			x = 0 // -0 and +0 are one value
		}
		u64(math.Float64bits(x))
	}
	vec := func(v []float64) {
		u64(uint64(len(v)))
		for _, x := range v {
			f64(x)
		}
	}
	if exact {
		h.Write([]byte(recordTag))
		str(s.Session)
		str(s.User)
		str(s.Expert)
		flag(s.PolicyVersion != nil)
		if s.PolicyVersion != nil {
			u64(*s.PolicyVersion)
		}
	} else {
		h.Write([]byte(contentTag))
	}
	u64(uint64(len(s.Steps)))
	for i := range s.Steps {
		st := &s.Steps[i]
		vec(st.Obs)
		flag(st.Action.Vec != nil)
		if st.Action.Vec != nil {
			vec(st.Action.Vec)
		} else {
			u64(uint64(int64(st.Action.Index)))
		}
		f64(st.Reward)
		if exact {
			flag(st.NoProb)
			if !st.NoProb {
				f64(st.LogP)
			}
		}
	}
	if exact {
		flag(s.FinalObs != nil)
		if s.FinalObs != nil {
			vec(s.FinalObs)
		}
	}
	flag(s.Terminal)
	flush()
	var out RecordHash
	h.Sum(out[:0])
	return out
}

// RecordsID returns the content id of a multiset of records:
// "records-sha256:" and the hex SHA-256 of their hashes sorted, so the id
// does not depend on the records' order (a re-ordered copy is the same
// dataset) but does count duplicates. records is not modified.
func RecordsID(records []RecordHash) string {
	sorted := slices.Clone(records)
	slices.SortFunc(sorted, func(a, b RecordHash) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	h.Write([]byte(datasetTag))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(sorted)))
	h.Write(n[:])
	for i := range sorted {
		h.Write(sorted[i][:])
	}
	return "records-sha256:" + hex.EncodeToString(h.Sum(nil))
}

// SessionsID returns the records' identities of sessions (ContentHash, in
// order) and their content id: the id of a file Writer writes them to.
func SessionsID(ss []Session) (string, []RecordHash) {
	hs := make([]RecordHash, len(ss))
	for i := range ss {
		hs[i] = ContentHash(&ss[i])
	}
	return RecordsID(hs), hs
}

// SessionsExact returns the exact hashes (HashRecord) of sessions, in order.
func SessionsExact(ss []Session) []RecordHash {
	hs := make([]RecordHash, len(ss))
	for i := range ss {
		hs[i] = HashRecord(&ss[i])
	}
	return hs
}

// ScanRecords reads a session log with the strict reader (dimensions learned
// from the first record; steps without a behaviour probability accepted, as
// in an SVT stable release) and returns its content id and its records'
// identities (ContentHash) in file order. A malformed log is an error naming its line, found
// without reading further; an empty log has no records. It holds an Index
// of the log (IndexBytesPerRecord bytes per record), whose hashes it
// returns.
func ScanRecords(path string) (string, []RecordHash, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	ix, err := scanIndex(f, ReaderOptions{Name: path, OptionalProb: true}, nil)
	if err != nil {
		return "", nil, err
	}
	return ix.ID(), ix.Records(), nil
}

// DatasetID returns the content id identifying a session log in the ledger
// (ScanRecords): the same for any copy of the same records, whatever its
// formatting or record order.
func DatasetID(path string) (string, error) {
	id, _, err := ScanRecords(path)
	if err != nil {
		return "", fmt.Errorf("sessionlog: dataset id of %s: %w", path, err)
	}
	return id, nil
}
