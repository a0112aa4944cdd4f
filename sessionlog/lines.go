package sessionlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// LineReader reads a log's lines in bounded memory: each line at most max
// bytes (a longer one is a *LineError wrapping ErrTooLong), numbered from
// 1, with the count of input bytes consumed. The session log's Reader and
// the DSJSON reader (package sessionlog/dsjson) read their lines through it.
type LineReader struct {
	r    *bufio.Reader
	name string
	max  int
	buf  []byte
	line int
	pos  int64
}

// NewLineReader returns a LineReader of r; name names the input in errors
// and max (> 0) bounds a line.
func NewLineReader(r io.Reader, name string, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 1<<16), name: name, max: max}
}

// Next returns the next line with its newline (the last one may have
// none), valid until the next call; io.EOF at the end.
func (l *LineReader) Next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.pos += int64(len(chunk))
		l.buf = append(l.buf, chunk...)
		if len(l.buf) > l.max {
			l.line++
			return nil, &LineError{Name: l.name, Line: l.line, Err: fmt.Errorf("%w: over %d bytes", ErrTooLong, l.max)}
		}
		switch {
		case err == nil:
			l.line++
			return l.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
			l.line++
			return l.buf, nil
		default:
			return nil, fmt.Errorf("%s: read: %w", l.name, err)
		}
	}
}

// Line is the number of the line Next returned last (0 before the first).
func (l *LineReader) Line() int { return l.line }

// Offset is the number of input bytes consumed so far: the offset of the
// line the next call returns.
func (l *LineReader) Offset() int64 { return l.pos }
