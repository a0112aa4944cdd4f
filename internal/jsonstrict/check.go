package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// MaxDepth is the deepest nesting of arrays and objects Check accepts.
const MaxDepth = 64

// Check checks that data is exactly one JSON value the scanner accepts,
// whatever its schema: no key repeated in any object (encoding/json keeps
// the last value, so "a": 1, "a": 100 would silently mean 100), valid UTF-8
// in every string, numbers within float64's range, no nesting deeper than
// MaxDepth and nothing but white space after the value. The error is an
// *Error naming the offending byte offset.
func Check(data []byte) error {
	var s Scanner
	s.Reset(data)
	if err := s.value(0); err != nil {
		return err
	}
	return s.End()
}

// value reads any value, depth levels deep.
func (s *Scanner) value(depth int) error {
	switch k := s.Peek(); k {
	case Object, Array:
		if depth >= MaxDepth {
			return s.syntax(fmt.Sprintf("nested deeper than %d levels", MaxDepth))
		}
		if k == Array {
			return s.Array(func(int) error { return s.value(depth + 1) })
		}
		return s.Object(func([]byte) error { return s.value(depth + 1) })
	case String:
		_, err := s.String()
		return err
	case Number:
		_, err := s.Float()
		return err
	case Bool:
		_, err := s.Bool()
		return err
	case Null:
		if !bytes.HasPrefix(s.data[s.pos:], []byte("null")) {
			return s.syntax("bad literal")
		}
		s.pos += len("null")
		return nil
	}
	return s.expect(Object) // the error for no value at all
}

// Decode decodes data, one JSON value, into v as encoding/json does, after
// Check (so a repeated key, invalid UTF-8 or trailing data is refused
// rather than resolved silently), refusing fields v does not have.
func Decode(data []byte, v any) error {
	if err := Check(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// ReadFile reads the JSON file at path into v as encoding/json does,
// accepting fields v does not have (a result file written by an older or
// newer build), after Check: a repeated key, invalid UTF-8 or trailing
// data is refused. Errors name the file.
func ReadFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := Check(b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
