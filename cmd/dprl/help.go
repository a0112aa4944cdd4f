package main

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"
)

// helpFiles holds the commands' help content: help/<name>.txt is the Long
// text of the command whose path after "dprl" is name with its words joined
// by "-" (dprl.txt is the root's), and help/<name>.example.txt its Example
// where that spans more than one line. Each file ends with one newline that
// is not part of the text.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns the text of help/<name>.txt (see helpFiles) with each
// placeholder of fill (pairs: placeholder, value) replaced by its value. It
// panics if the file is missing, a placeholder does not occur exactly once
// or fill is not in pairs: every command is built when dprl starts, so a
// typo cannot ship.
func helpText(name string, fill ...string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(fmt.Sprintf("dprl: help text %q: %v", name, err))
	}
	if len(fill)%2 != 0 {
		panic(fmt.Sprintf("dprl: help text %q: placeholder %q without a value", name, fill[len(fill)-1]))
	}
	s := strings.TrimSuffix(string(b), "\n")
	for i := 0; i < len(fill); i += 2 {
		if n := strings.Count(s, fill[i]); n != 1 {
			panic(fmt.Sprintf("dprl: help text %q: placeholder %q occurs %d times, want 1", name, fill[i], n))
		}
		s = strings.Replace(s, fill[i], fill[i+1], 1)
	}
	return s
}

// fillCommands completes c and every command below it: the Long and
// Example a command does not set come from its help files (helpFiles, named
// after the command's path), a command that sets no Args takes no
// positional arguments (noArgs), and sentinel defaults are hidden
// (hideSentinelDefaults).
func fillCommands(c *cobra.Command) {
	name := strings.ReplaceAll(strings.TrimPrefix(c.CommandPath(), "dprl "), " ", "-")
	for _, h := range []struct {
		field *string
		file  string
	}{{&c.Long, name}, {&c.Example, name + ".example"}} {
		if _, err := fs.Stat(helpFiles, "help/"+h.file+".txt"); *h.field == "" && err == nil {
			*h.field = helpText(h.file)
		}
	}
	if c.Args == nil {
		c.Args = noArgs
	}
	hideSentinelDefaults(c)
	for _, s := range c.Commands() {
		fillCommands(s)
	}
}
