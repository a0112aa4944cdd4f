// Package fielderr is the error of a typed configuration that names the
// fields at fault, so that a command line can name its flags instead: a
// message written as "{Epsilon} 0: want > 0" reads "Epsilon 0: want > 0"
// from Error and "--epsilon 0: want > 0" once rendered with the command's
// names. Only the fields of the package's own list are replaced, so text a
// user supplied (a file name, a policy spec) is left as it is unless it
// spells a known field in braces.
package fielderr

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
)

// Fields are the field names a package's errors may name.
type Fields []string

// Errorf returns an *Error; {Field} in format names a field of f.
func (f Fields) Errorf(format string, args ...any) error {
	return &Error{err: fmt.Errorf(format, args...), fields: f}
}

// Wrap returns err as an *Error naming fields of f.
func (f Fields) Wrap(err error) error { return &Error{err: err, fields: f} }

// Error is an error of a configuration whose message names fields.
type Error struct {
	err    error
	fields Fields
}

// Render returns the message with each field named by name(field), or by
// its own name where name returns "" (a field the caller has no name for
// is never dropped from the message).
func (e *Error) Render(name func(field string) string) string {
	pairs := make([]string, 0, 2*len(e.fields))
	for _, f := range e.fields {
		pairs = append(pairs, "{"+f+"}", cmp.Or(name(f), f))
	}
	return strings.NewReplacer(pairs...).Replace(e.err.Error())
}

// Error returns the message with the fields named as in their struct.
func (e *Error) Error() string { return e.Render(func(f string) string { return f }) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.err }

// Rename returns err with every *Error in its tree rendered with name (the
// outermost *Error of each branch; its own causes are part of its
// message). The result unwraps to err, so errors.Is and errors.As see what
// they saw before. Without an *Error in its tree, err is returned as it is.
func Rename(err error, name func(field string) string) error {
	var fe *Error
	if !errors.As(err, &fe) {
		return err
	}
	msg := err.Error()
	var walk func(error)
	walk = func(e error) {
		if c, ok := e.(*Error); ok {
			msg = strings.Replace(msg, c.Error(), c.Render(name), 1)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return &renamed{msg: msg, err: err}
}

// renamed is an error with its fields renamed.
type renamed struct {
	msg string
	err error
}

func (r *renamed) Error() string { return r.msg }
func (r *renamed) Unwrap() error { return r.err }
