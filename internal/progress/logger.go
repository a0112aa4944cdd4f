package progress

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// NewLogger returns the logger of a command line writing to w: at level
// (trace, debug, info, warn, error or disabled, any case) in format json,
// console (human-readable lines) or auto (console if w is a terminal, JSON
// otherwise). ANSI colours are written to a terminal only, never to a file
// or pipe. The error names the flag (--log-level or --log-format) of a
// value it does not know.
func NewLogger(w io.Writer, level, format string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("--log-level %q: want trace, debug, info, warn, error or disabled", level)
	}
	if tty := IsTerminal(w); format == "console" || format == "auto" && tty {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05", NoColor: !tty}
	} else if format != "json" && format != "auto" {
		return zerolog.Nop(), fmt.Errorf("--log-format %q: want auto, console or json", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
