package stream

import (
	"dprl/internal/jsonstrict"

	"math"
	"strconv"
)

// scanner is a strict, allocation-free JSON reader for the flat objects of
// protocol v1. Every method reports the first problem as an *Error.
type scanner struct {
	data []byte
	pos  int
	buf  []byte // scratch for unescaped strings
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) ws() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *scanner) syntax(what string) *Error {
	return newErr(CodeBadRequest, "invalid JSON: "+what+" at offset "+strconv.Itoa(s.pos))
}

func (s *scanner) expect(c byte) *Error {
	if s.peek() != c {
		return s.syntax("expected '" + string(c) + "'")
	}
	s.pos++
	return nil
}

// end checks that only white space follows.
func (s *scanner) end() *Error {
	s.ws()
	if s.pos != len(s.data) {
		return s.syntax("trailing data")
	}
	return nil
}

// str reads a JSON string. The result aliases s.data when the string has no
// escapes and s.buf otherwise; it is valid until the next call.
func (s *scanner) str() ([]byte, *Error) {
	if s.peek() != '"' {
		return nil, s.syntax("expected string")
	}
	s.pos++
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			out := s.data[start:s.pos]
			s.pos++
			return out, nil
		case c == '\\':
			return s.strSlow(start)
		case c < 0x20:
			return nil, s.syntax("control character in string")
		}
		s.pos++
	}
	return nil, s.syntax("unterminated string")
}

func (s *scanner) strSlow(start int) ([]byte, *Error) {
	var msg string
	s.buf, s.pos, msg = jsonstrict.Unescape(s.buf[:0], s.data, start)
	if msg != "" {
		return nil, s.syntax(msg)
	}
	return s.buf, nil
}

// num reads a JSON number (RFC 8259 grammar) as a finite float64.
func (s *scanner) num(field string) (float64, *Error) {
	s.ws()
	start := s.pos
	p, _, ok := jsonstrict.ScanNumber(s.data, start)
	s.pos = p
	if !ok {
		return 0, s.syntax("bad number")
	}
	d := s.data
	f, err := strconv.ParseFloat(string(d[start:p]), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, newErr(CodeNonFinite, field+": number overflows float64")
	}
	return f, nil
}

// lit reads true, false or null; it returns the literal's first byte.
func (s *scanner) lit() (byte, *Error) {
	c := s.peek()
	var w string
	switch c {
	case 't':
		w = "true"
	case 'f':
		w = "false"
	case 'n':
		w = "null"
	default:
		return 0, s.syntax("expected literal")
	}
	if len(s.data)-s.pos < len(w) || string(s.data[s.pos:s.pos+len(w)]) != w {
		return 0, s.syntax("bad literal")
	}
	s.pos += len(w)
	return c, nil
}

// kind checks the type of the next value before it is read, so that a wrong
// type gets wrong_type rather than a syntax error. want is one of
// '"' (string), '0' (number), '[' (array), 'b' (bool), '{' (object).
func (s *scanner) kind(field string, want byte) *Error {
	c := s.peek()
	var got byte
	switch {
	case c == '"', c == '[', c == '{':
		got = c
	case c == '-' || (c >= '0' && c <= '9'):
		got = '0'
	case c == 't' || c == 'f':
		got = 'b'
	case c == 'n':
		got = 'n'
	default:
		return s.syntax("expected value")
	}
	if got != want {
		return newErr(CodeWrongType, field+": expected "+kindName(want)+", got "+kindName(got))
	}
	return nil
}

func kindName(k byte) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case '[':
		return "array"
	case '{':
		return "object"
	case 'b':
		return "boolean"
	case 'n':
		return "null"
	}
	return "value"
}

// object iterates over the members of an object; for each key it calls fn,
// which must consume the value. Duplicate keys are rejected by the callers
// through their seen masks.
func (s *scanner) object(fn func(key []byte) *Error) *Error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := fn(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.syntax("expected ',' or '}'")
		}
	}
}

// floats appends the numbers of an array to dst, failing beyond max elements.
func (s *scanner) floats(dst []float64, field string, max int) ([]float64, *Error) {
	if err := s.kind(field, '['); err != nil {
		return dst, err
	}
	s.pos++
	if s.peek() == ']' {
		s.pos++
		return dst, nil
	}
	for {
		if len(dst) >= max {
			return dst, newErr(CodeObsDim, field+": more than "+strconv.Itoa(max)+" elements")
		}
		if err := s.kind(field, '0'); err != nil {
			return dst, err
		}
		f, err := s.num(field)
		if err != nil {
			return dst, err
		}
		dst = append(dst, f)
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return dst, nil
		default:
			return dst, s.syntax("expected ',' or ']'")
		}
	}
}

// uint reads a non-negative integer without sign, fraction or exponent,
// at most max, and passes it to set.
func (s *scanner) uint(set func(uint64), max uint64) *Error {
	s.ws()
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	v, err := strconv.ParseUint(string(s.data[start:s.pos]), 10, 64)
	if err != nil || v > max || (s.pos-start > 1 && s.data[start] == '0') {
		return s.syntax("expected unsigned integer")
	}
	set(v)
	return nil
}
