package main

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// placeholder is a helpText placeholder in a help file: {{...}}.
var placeholder = regexp.MustCompile(`\{\{[^{}]*\}\}`)

// TestHelpFiles checks that the help content in help/ and the commands agree:
// every file is used by exactly one command (the one its name says), which
// shows it (as Long or Example, a placeholder filled by any text), every Long
// is non-empty and comes from a file, and so does every Example of more than
// one line.
func TestHelpFiles(t *testing.T) {
	entries, err := fs.ReadDir(helpFiles, "help")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{} // file name -> text
	for _, e := range entries {
		b, err := fs.ReadFile(helpFiles, "help/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		text, ok := strings.CutSuffix(string(b), "\n")
		if !ok || strings.TrimSpace(text) == "" || strings.HasSuffix(text, "\n") {
			t.Errorf("help/%s: want non-empty text ending in exactly one newline", e.Name())
		}
		files[e.Name()] = text
	}
	used := map[string][]string{} // file name -> paths of the commands showing it
	check := func(c *cobra.Command, field, got, file string) {
		text, ok := files[file]
		switch {
		case !ok && strings.Contains(got, "\n"):
			t.Errorf("%s: %s is in Go: move it to help/%s", c.CommandPath(), field, file)
		case !ok:
		case got == "":
			t.Errorf("%s: %s is empty, help/%s unused", c.CommandPath(), field, file)
		case !matchesTemplate(text, got):
			t.Errorf("%s: %s differs from help/%s", c.CommandPath(), field, file)
		default:
			used[file] = append(used[file], c.CommandPath())
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := strings.ReplaceAll(strings.TrimPrefix(c.CommandPath(), "dprl "), " ", "-")
		if c.Long != "" {
			if _, ok := files[name+".txt"]; !ok {
				t.Errorf("%s: Long is in Go: move it to help/%s.txt", c.CommandPath(), name)
			}
		}
		check(c, "Long", c.Long, name+".txt")
		check(c, "Example", c.Example, name+".example.txt")
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&app{}))
	for file := range files {
		if n := len(used[file]); n != 1 {
			t.Errorf("help/%s: used by %d commands %v, want 1", file, n, used[file])
		}
	}
}

// matchesTemplate reports whether s is text with each placeholder replaced
// by some string.
func matchesTemplate(text, s string) bool {
	parts := placeholder.Split(text, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^(?s:` + strings.Join(parts, ".*") + `)$`).MatchString(s)
}

// TestHelpText checks helpText's placeholders and that it panics on a
// missing file or a placeholder that does not occur exactly once.
func TestHelpText(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fill      []string
		wantPanic bool
	}{
		{name: "dprl"},
		{name: "train", fill: []string{"{{defaults by environment}}", "X"}},
		{name: "no-such-command", wantPanic: true},
		{name: "dprl", fill: []string{"{{absent}}", "X"}, wantPanic: true},
		{name: "train", fill: []string{"{{defaults by environment}}"}, wantPanic: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); (r != nil) != tc.wantPanic {
					t.Errorf("helpText(%q, %q): panic %v, want panic %v", tc.name, tc.fill, r, tc.wantPanic)
				}
			}()
			s := helpText(tc.name, tc.fill...)
			if s == "" || strings.HasSuffix(s, "\n") || strings.Contains(s, "{{") {
				t.Errorf("helpText(%q, %q) = %q", tc.name, tc.fill, s)
			}
		})
	}
}

// TestOneSetupHook: only the root command sets up a run (logging, and the
// running command that emit's --json reads): a subcommand's own
// PersistentPreRun would replace the root's.
func TestOneSetupHook(t *testing.T) {
	root := newRootCmd(&app{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && (c.PersistentPreRun != nil || c.PersistentPreRunE != nil) {
			t.Errorf("%s has its own PersistentPreRun: the root's setup would not run", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
