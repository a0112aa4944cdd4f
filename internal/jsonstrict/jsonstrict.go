// Package jsonstrict is a strict JSON scanner for records of a fixed schema,
// read field by field without reflection. It accepts only RFC 8259 JSON and
// refuses what encoding/json lets through: a key repeated in one object
// (encoding/json keeps the last value) and invalid UTF-8 in strings
// (encoding/json replaces it with U+FFFD). Keys are compared byte for byte
// after unescaping, so a schema reader that switches on them matches keys
// exactly (encoding/json matches them case-insensitively), and a value of
// another kind than the schema's, null included, is an error of its own
// class (WrongType), as is a number beyond float64's range (NonFinite). It
// is the offline session reader's counterpart of the agent's wire decoder
// (package stream), which refuses the same inputs.
//
// The caller walks the schema: Object calls back for each key, and the
// callback reads the value with String, Float, Floats, Number, Bool, Array
// or Object, or returns an error for a key it does not know before reading
// its value. The scanner never recurses on its own, so the nesting depth is
// that of the schema, whatever the input.
package jsonstrict

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// Kind is the type of a JSON value, as announced by its first byte.
type Kind uint8

// The kinds of JSON values; Invalid is no value (end of input or a byte that
// starts none).
const (
	Invalid Kind = iota
	String
	Number
	Bool
	Null
	Array
	Object
)

// String returns the kind's name as used in error messages.
func (k Kind) String() string {
	switch k {
	case String:
		return "string"
	case Number:
		return "number"
	case Bool:
		return "boolean"
	case Null:
		return "null"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "no value"
}

// Class classifies a scanner error.
type Class uint8

// The classes of scanner errors.
const (
	// Syntax: the input is not JSON (or has data after the value).
	Syntax Class = iota + 1
	// WrongType: a value of another kind than the schema's (null included).
	WrongType
	// Duplicate: a key repeated in one object.
	Duplicate
	// NonFinite: a number that overflows float64 (such as 1e400).
	NonFinite
)

// Error is a scanner error: its class, the byte offset in the input where
// it was found, and a message.
type Error struct {
	Class  Class
	Offset int
	Msg    string
}

// Error returns the message; syntax errors name their offset.
func (e *Error) Error() string {
	if e.Class == Syntax {
		return "invalid JSON: " + e.Msg + " at offset " + strconv.Itoa(e.Offset)
	}
	return e.Msg
}

// Scanner reads one JSON text. The zero value is ready for Reset.
type Scanner struct {
	data []byte
	pos  int
	buf  []byte // scratch for unescaped strings
	// keys holds the keys of the objects being read, innermost last, and
	// ends the end offset in keys of each; Object trims both on return.
	keys []byte
	ends []int
}

// Reset starts scanning data, keeping the scanner's scratch storage.
func (s *Scanner) Reset(data []byte) {
	s.data, s.pos = data, 0
	s.keys, s.ends = s.keys[:0], s.ends[:0]
}

// Offset is the byte offset of the next unread byte.
func (s *Scanner) Offset() int { return s.pos }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *Scanner) ws() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

func (s *Scanner) syntax(msg string) *Error { return &Error{Class: Syntax, Offset: s.pos, Msg: msg} }

// Peek skips white space and returns the kind of the next value.
func (s *Scanner) Peek() Kind {
	s.ws()
	if s.pos >= len(s.data) {
		return Invalid
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		return String
	case c == '-' || (c >= '0' && c <= '9'):
		return Number
	case c == 't' || c == 'f':
		return Bool
	case c == 'n':
		return Null
	case c == '[':
		return Array
	case c == '{':
		return Object
	}
	return Invalid
}

// expect checks that the next value is of kind k.
func (s *Scanner) expect(k Kind) error {
	got := s.Peek()
	switch {
	case got == k:
		return nil
	case got == Invalid && s.pos >= len(s.data):
		return s.syntax("unexpected end of input")
	case got == Invalid:
		return s.syntax("expected a value")
	}
	return &Error{Class: WrongType, Offset: s.pos, Msg: "want " + k.String() + ", got " + got.String()}
}

// End checks that only white space is left.
func (s *Scanner) End() error {
	s.ws()
	if s.pos != len(s.data) {
		return s.syntax("trailing data")
	}
	return nil
}

// Object reads an object, calling fn with each key; fn must read the key's
// value (or return an error). A key repeated in the object is an error of
// class Duplicate, found before fn sees it a second time. The key passed to
// fn is valid during the call. Keys are compared in time linear in the
// object's keys so far: a schema reader bounds their number by refusing
// unknown keys.
func (s *Scanner) Object(fn func(key []byte) error) error {
	if err := s.expect(Object); err != nil {
		return err
	}
	s.pos++
	base, keyBase := len(s.ends), len(s.keys)
	defer func() { s.ends, s.keys = s.ends[:base], s.keys[:keyBase] }()
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		if s.Peek() != String {
			if s.pos >= len(s.data) {
				return s.syntax("unexpected end of input")
			}
			return s.syntax("expected a key")
		}
		at := s.pos
		k, err := s.String()
		if err != nil {
			return err
		}
		start := keyBase
		for _, end := range s.ends[base:] {
			if bytes.Equal(s.keys[start:end], k) {
				return &Error{Class: Duplicate, Offset: at, Msg: "duplicate key " + quote(k)}
			}
			start = end
		}
		s.keys = append(s.keys, k...)
		s.ends = append(s.ends, len(s.keys))
		key := s.keys[len(s.keys)-len(k):]
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.syntax("expected ':'")
		}
		s.pos++
		if err := fn(key); err != nil {
			return err
		}
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

// Array reads an array, calling fn with the index of each element; fn must
// read the element (or return an error).
func (s *Scanner) Array(fn func(i int) error) error {
	if err := s.expect(Array); err != nil {
		return err
	}
	s.pos++
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := fn(i); err != nil {
			return err
		}
		if done, err := s.next(']'); done || err != nil {
			return err
		}
	}
}

// next reads the separator after a member or element: ',' (more follow)
// or the container's closing byte (done).
func (s *Scanner) next(closing byte) (done bool, err error) {
	s.ws()
	if s.pos >= len(s.data) {
		return false, s.syntax("unexpected end of input")
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		return false, nil
	case closing:
		s.pos++
		return true, nil
	}
	return false, s.syntax("expected ',' or '" + string(closing) + "'")
}

// String reads a string and returns it unescaped. It must be valid UTF-8
// (escapes included: a lone surrogate is an error). The result aliases the
// input or the scanner's scratch and is valid until the next call.
func (s *Scanner) String() ([]byte, error) {
	if err := s.expect(String); err != nil {
		return nil, err
	}
	s.pos++
	start := s.pos
	ascii := true
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			out := s.data[start:s.pos]
			if !ascii && !utf8.Valid(out) {
				return nil, &Error{Class: Syntax, Offset: start, Msg: "string is not valid UTF-8"}
			}
			s.pos++
			return out, nil
		case c == '\\':
			return s.strSlow(start)
		case c < 0x20:
			return nil, s.syntax("control character in string")
		case c >= 0x80:
			ascii = false
		}
		s.pos++
	}
	return nil, s.syntax("unterminated string")
}

func (s *Scanner) strSlow(start int) ([]byte, error) {
	var msg string
	s.buf, s.pos, msg = Unescape(s.buf[:0], s.data, start)
	if msg != "" {
		return nil, s.syntax(msg)
	}
	if !utf8.Valid(s.buf) {
		return nil, &Error{Class: Syntax, Offset: start, Msg: "string is not valid UTF-8"}
	}
	return s.buf, nil
}

// Unescape appends to dst the body of the JSON string in data that starts at
// pos (just after its opening quote, or anywhere inside it before its first
// escape), decoding the escapes, and returns the result and the offset just
// after the closing quote. A malformed string (a control character, a bad
// escape, a lone surrogate, no closing quote) returns a non-empty msg and the
// offset where it was found. It does not check that the result is UTF-8. The
// agent's wire decoder and the session-log reader share it.
func Unescape(dst, data []byte, pos int) (out []byte, next int, msg string) {
	for pos < len(data) {
		c := data[pos]
		switch {
		case c == '"':
			return dst, pos + 1, ""
		case c < 0x20:
			return dst, pos, "control character in string"
		case c != '\\':
			dst = append(dst, c)
			pos++
			continue
		}
		pos++
		if pos >= len(data) {
			break
		}
		e := data[pos]
		pos++
		switch e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(data, pos)
			if !ok {
				return dst, pos, `bad \u escape`
			}
			pos += 4
			if r >= 0xD800 && r < 0xDC00 { // high surrogate: a low one must follow
				if pos+1 < len(data) && data[pos] == '\\' && data[pos+1] == 'u' {
					pos += 2
					r2, ok := hex4(data, pos)
					if ok {
						pos += 4
					}
					if !ok || r2 < 0xDC00 || r2 >= 0xE000 {
						return dst, pos, "bad surrogate pair"
					}
					r = (r-0xD800)<<10 + (r2 - 0xDC00) + 0x10000
				} else {
					return dst, pos, "lone surrogate"
				}
			} else if r >= 0xDC00 && r < 0xE000 {
				return dst, pos, "lone surrogate"
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, pos, "bad escape"
		}
	}
	return dst, pos, "unterminated string"
}

// hex4 decodes the four hex digits at data[pos:].
func hex4(data []byte, pos int) (rune, bool) {
	if pos+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[pos : pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Number reads a number (RFC 8259 grammar) and returns its text, which
// aliases the input.
func (s *Scanner) Number() ([]byte, error) {
	txt, _, err := s.number()
	return txt, err
}

// number reads a number and reports whether it is an integer (no fraction,
// no exponent).
func (s *Scanner) number() (txt []byte, integer bool, err error) {
	if err := s.expect(Number); err != nil {
		return nil, false, err
	}
	start := s.pos
	p, integer, ok := ScanNumber(s.data, start)
	s.pos = p
	if !ok {
		return nil, false, s.syntax("bad number")
	}
	return s.data[start:p], integer, nil
}

// ScanNumber scans the number (RFC 8259 grammar) that starts at d[p]. It
// returns the offset just after it and whether it is an integer (no
// fraction, no exponent); for malformed input ok is false and end is where
// the grammar failed. It allocates nothing (the wire decoder's hot path
// uses it too).
func ScanNumber(d []byte, p int) (end int, integer, ok bool) {
	if p < len(d) && d[p] == '-' {
		p++
	}
	digits := func() int {
		n := 0
		for p < len(d) && d[p] >= '0' && d[p] <= '9' {
			p++
			n++
		}
		return n
	}
	integer = true
	if p < len(d) && d[p] == '0' {
		p++
	} else if digits() == 0 {
		return p, false, false
	}
	if p < len(d) && d[p] == '.' {
		p++
		integer = false
		if digits() == 0 {
			return p, false, false
		}
	}
	if p < len(d) && (d[p] == 'e' || d[p] == 'E') {
		p++
		integer = false
		if p < len(d) && (d[p] == '+' || d[p] == '-') {
			p++
		}
		if digits() == 0 {
			return p, false, false
		}
	}
	return p, integer, true
}

// Float reads a number as the nearest float64 (as strconv.ParseFloat
// rounds it); one beyond float64's range is an error of class NonFinite.
func (s *Scanner) Float() (float64, error) {
	at := s.pos
	txt, integer, err := s.number()
	if err != nil {
		return 0, err
	}
	neg := txt[0] == '-'
	if integer && len(txt)-btoi(neg) <= 15 {
		// At most 15 digits: below 2^53, so exact as a float64, which is
		// what ParseFloat returns (-0 included).
		var v int64
		for _, c := range txt[btoi(neg):] {
			v = v*10 + int64(c-'0')
		}
		f := float64(v)
		if neg {
			f = -f
		}
		return f, nil
	}
	f, perr := strconv.ParseFloat(string(txt), 64)
	if perr != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, &Error{Class: NonFinite, Offset: at, Msg: "number " + clip(txt) + " overflows float64"}
	}
	return f, nil
}

// Floats reads an array of numbers, appending them to dst.
func (s *Scanner) Floats(dst []float64) ([]float64, error) {
	err := s.Array(func(int) error {
		f, err := s.Float()
		dst = append(dst, f)
		return err
	})
	return dst, err
}

// Bool reads true or false.
func (s *Scanner) Bool() (bool, error) {
	if err := s.expect(Bool); err != nil {
		return false, err
	}
	for _, w := range [...]string{"true", "false"} {
		if bytes.HasPrefix(s.data[s.pos:], []byte(w)) {
			s.pos += len(w)
			return w == "true", nil
		}
	}
	return false, s.syntax("bad literal")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// quote quotes a key for an error message, shortened to 64 bytes.
func quote(k []byte) string { return strconv.Quote(clip(k)) }

func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}
