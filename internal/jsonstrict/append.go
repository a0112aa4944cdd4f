package jsonstrict

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// ErrInvalidUTF8 marks a string AppendString cannot write as JSON.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// AppendString appends s as a JSON string: what strconv.AppendQuote writes
// for printable text (quote and backslash escaped, printable runes as they
// are), and JSON escapes for the rest - \uXXXX, with a UTF-16 surrogate
// pair above U+FFFF, where strconv would write Go's \U or \x escapes, which
// are not JSON. Invalid UTF-8 is an error (ErrInvalidUTF8): it has no JSON
// spelling, and replacing it would change the value.
func AppendString(dst []byte, s string) ([]byte, error) {
	const hexDigits = "0123456789abcdef"
	u4 := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return dst, ErrInvalidUTF8
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case strconv.IsPrint(r):
			dst = append(dst, s[i:i+size]...)
		case r < 0x10000:
			dst = u4(dst, r)
		default:
			r -= 0x10000
			dst = u4(u4(dst, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
		}
		i += size
	}
	return append(dst, '"'), nil
}

// AppendFloat appends v as a JSON number in its shortest form that reads
// back exactly; a NaN or infinity, which JSON cannot spell, is an error.
func AppendFloat(dst []byte, v float64) ([]byte, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dst, fmt.Errorf("non-finite value %v", v)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64), nil
}
