// Package docs_test runs the documented commands (TestDocCommands).
package docs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The documented commands run as written (TestDocCommands). Every fenced
// block of README.md and docs/*.md names its kind in its info string:
//
//   - sh: commands, run in order by bash -e -o pipefail;
//   - console: a transcript: each "$ " line (with its "\" continuations)
//     is a command, run on its own, and the lines after it are its expected
//     output: each must appear in what it prints, in order, after
//     collapsing runs of spaces ("..." in a line matches anything, a line
//     that is only "..." matches any lines). A command whose expected output
//     has a line starting "dprl: " (the CLI's error prefix) must fail; any
//     other must succeed;
//   - anything else (text, json, yaml, ...): not run. Such a block holding a
//     line that starts like a command ("dprl ", "$ ", "go run") needs a
//     "<!-- doctest: not run: REASON -->" line right above it.
//
// Lines right above a block's fence may tune how it runs:
//
//	<!-- doctest: skip: REASON -->              not run (needs what CI lacks)
//	<!-- doctest: short: "OLD" -> "NEW"; ... --> replacements of the short
//	                                            mode, the default in tests
//	                                            (DPRL_DOCTEST=full runs as
//	                                            written)
//	<!-- doctest: stop-after 5s -->             a server: stopped (SIGTERM)
//	                                            after this long, which is
//	                                            success if it was still up
//
// "go run ./cmd/dprl" is run as "dprl", and "dprl" is built by the test
// from ../cmd/dprl (without the race detector, whatever the test's flags:
// the commands are the subject, not this package's code). The blocks of one
// file share a working directory (with examples/ linked in), in order, as a
// reader following the guide; HOME is a fresh directory; each block runs in
// its own process group, killed when the block ends (its servers started
// with "&" included).

// docBlock is one fenced block of a document.
type docBlock struct {
	file  string
	line  int // of the opening fence
	kind  string
	text  string
	notes []string // the doctest annotations above it
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var (
	docNote  = regexp.MustCompile(`^<!-- doctest: (.*) -->$`)
	fence    = regexp.MustCompile("^```([A-Za-z0-9_-]*)\\s*$")
	cmdStart = regexp.MustCompile(`^\s*(\$ |dprl |go run )`)
	shortRe  = regexp.MustCompile(`"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)"`)
)

// parseDoc returns the fenced blocks of the markdown file at path (named
// name in messages).
func parseDoc(name, text string) ([]docBlock, error) {
	var (
		out   []docBlock
		notes []string
		cur   *docBlock
		lines []string
	)
	for i, l := range strings.Split(text, "\n") {
		if cur != nil {
			if strings.HasPrefix(l, "```") {
				cur.text = strings.Join(lines, "\n")
				out = append(out, *cur)
				cur, lines = nil, nil
				continue
			}
			lines = append(lines, l)
			continue
		}
		if m := docNote.FindStringSubmatch(l); m != nil {
			notes = append(notes, m[1])
			continue
		}
		if m := fence.FindStringSubmatch(l); m != nil {
			cur = &docBlock{file: name, line: i + 1, kind: m[1], notes: notes}
			notes = nil
			continue
		}
		if len(notes) > 0 {
			return nil, fmt.Errorf("%s:%d: a doctest annotation not right above a fenced block", name, i)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: unclosed fenced block", name, cur.line)
	}
	return out, nil
}

// note returns the argument of annotation key ("" and false if absent).
func (b docBlock) note(key string) (string, bool) {
	for _, n := range b.notes {
		if n == key || strings.HasPrefix(n, key+":") || strings.HasPrefix(n, key+" ") {
			return strings.TrimSpace(strings.TrimLeft(strings.TrimPrefix(n, key), ":")), true
		}
	}
	return "", false
}

// prepared returns the block's text as the test runs it.
func (b docBlock) prepared(short bool) (string, error) {
	text := strings.ReplaceAll(b.text, "go run ./cmd/dprl", "dprl")
	if !short {
		return text, nil
	}
	s, ok := b.note("short")
	if !ok {
		return text, nil
	}
	pairs := shortRe.FindAllStringSubmatch(s, -1)
	if len(pairs) == 0 {
		return "", fmt.Errorf("%s: short annotation without \"OLD\" -> \"NEW\" pairs", b)
	}
	for _, p := range pairs {
		if !strings.Contains(text, p[1]) {
			return "", fmt.Errorf("%s: short annotation: %q is not in the block", b, p[1])
		}
		text = strings.ReplaceAll(text, p[1], p[2])
	}
	return text, nil
}

// docEnv is where a file's blocks run.
type docEnv struct {
	work, home, bin string
}

// run runs script in env's working directory under bash, in its own
// process group, killed at the end; stopAfter > 0 stops it with SIGTERM
// after that long (a server), which counts as success.
func (e docEnv) run(ctx context.Context, script string, stopAfter time.Duration) (string, error) {
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = e.work
	cmd.Env = append(os.Environ(), "HOME="+e.home, "PATH="+e.bin+string(os.PathListSeparator)+os.Getenv("PATH"), "DPRL_CHILD_ARGS=")
	// A file, not a pipe: the servers a block starts with "&" keep their
	// output open after bash exits, and Wait would wait for them.
	f, err := os.CreateTemp(e.home, "out")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	output := func() string {
		b, _ := os.ReadFile(f.Name())
		return string(b)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	kill := func(sig syscall.Signal) { _ = syscall.Kill(-cmd.Process.Pid, sig) }
	defer func() {
		kill(syscall.SIGTERM)
		time.Sleep(200 * time.Millisecond)
		kill(syscall.SIGKILL)
	}()
	var stop <-chan time.Time
	if stopAfter > 0 {
		stop = time.After(stopAfter)
	}
	select {
	case err := <-done:
		return output(), err
	case <-stop:
		kill(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			return output(), errors.New("still running 30 s after SIGTERM")
		}
		return output(), nil
	case <-ctx.Done():
		return output(), fmt.Errorf("timed out: %w", ctx.Err())
	}
}

// transcript splits a console block into commands and their expected
// output lines.
type transcriptStep struct {
	cmd    string
	expect []string
}

func parseTranscript(text string) []transcriptStep {
	var steps []transcriptStep
	cont := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case cont:
			steps[len(steps)-1].cmd += "\n" + l
		case strings.HasPrefix(l, "$ "):
			steps = append(steps, transcriptStep{cmd: strings.TrimPrefix(l, "$ ")})
		case len(steps) > 0 && strings.TrimSpace(l) != "":
			steps[len(steps)-1].expect = append(steps[len(steps)-1].expect, l)
		}
		cont = strings.HasSuffix(l, "\\")
	}
	return steps
}

var spaces = regexp.MustCompile(`\s+`)

// matchOutput reports the first expected line not found, in order, in out.
// A line the document wraps may span several expected lines: they match
// one printed line joined by spaces.
func matchOutput(out string, expect []string) error {
	got := strings.Split(out, "\n")
	for i := range got {
		got[i] = strings.TrimSpace(spaces.ReplaceAllString(got[i], " "))
	}
	norm := make([]string, 0, len(expect))
	for _, e := range expect {
		norm = append(norm, strings.TrimSpace(spaces.ReplaceAllString(e, " ")))
	}
	i := 0
	for j := 0; j < len(norm); {
		if norm[j] == "..." {
			j++
			continue
		}
		found := false
		for k := 1; k <= 8 && j+k <= len(norm) && !found; k++ {
			rx := linePattern(strings.Join(norm[j:j+k], " "))
			for at := i; at < len(got); at++ {
				if rx.MatchString(got[at]) {
					i, j, found = at+1, j+k, true
					break
				}
			}
		}
		if !found {
			return fmt.Errorf("expected line not printed (in order): %q", norm[j])
		}
	}
	return nil
}

// linePattern matches a whole printed line, "..." matching anything.
func linePattern(e string) *regexp.Regexp {
	var re strings.Builder
	re.WriteString("^")
	for j, part := range strings.Split(e, "...") {
		if j > 0 {
			re.WriteString(".*")
		}
		re.WriteString(regexp.QuoteMeta(part))
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String())
}

// TestDocCommands runs the commands of README.md and docs/*.md as written
// (in short mode where a block says how; see the conventions above).
// DPRL_DOCTEST_FILE=docs/offline.md runs one file's blocks.
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the documented commands")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	short := os.Getenv("DPRL_DOCTEST") != "full"
	only := os.Getenv("DPRL_DOCTEST_FILE")
	bin := t.TempDir()
	build := time.Now()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "dprl"), "../cmd/dprl").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dprl: %v\n%s", err, out)
	}
	t.Logf("built dprl in %.0f s", time.Since(build).Seconds())
	ran := 0
	start := time.Now()
	for _, f := range files {
		name, _ := filepath.Rel(root, f)
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseDoc(name, string(src))
		if err != nil {
			t.Error(err)
			continue
		}
		if only != "" && only != name {
			continue
		}
		env := docEnv{work: t.TempDir(), home: t.TempDir(), bin: bin}
		if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(env.work, "examples")); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if !checkBlock(t, b) {
				continue
			}
			text, err := b.prepared(short)
			if err != nil {
				t.Error(err)
				continue
			}
			stopAfter := time.Duration(0)
			if s, ok := b.note("stop-after"); ok {
				if stopAfter, err = time.ParseDuration(s); err != nil {
					t.Errorf("%s: stop-after %q: %v", b, s, err)
					continue
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			bstart := time.Now()
			switch b.kind {
			case "sh":
				out, err := env.run(ctx, text, stopAfter)
				if err != nil {
					t.Errorf("%s: %v\n%s", b, err, tail(out, 3000))
				}
				ran++
			case "console":
				for _, st := range parseTranscript(text) {
					out, err := env.run(ctx, st.cmd, stopAfter)
					ran++
					wantFail := false
					for _, e := range st.expect {
						wantFail = wantFail || strings.HasPrefix(e, "dprl: ")
					}
					switch {
					case wantFail && err == nil:
						t.Errorf("%s: %q succeeded; the transcript shows it failing\n%s", b, st.cmd, tail(out, 2000))
					case !wantFail && err != nil:
						t.Errorf("%s: %q: %v\n%s", b, st.cmd, err, tail(out, 3000))
					default:
						if err := matchOutput(out, st.expect); err != nil {
							t.Errorf("%s: %q: %v; it printed:\n%s", b, st.cmd, err, tail(out, 3000))
						}
					}
				}
			}
			cancel()
			t.Logf("%s (%s): %.1f s", b, b.kind, time.Since(bstart).Seconds())
		}
	}
	t.Logf("%d documented commands or scripts run in %.0f s (short mode %v)", ran, time.Since(start).Seconds(), short)
}

// checkBlock reports whether b is to be run, and fails the test for a block
// that looks like commands but says neither how to run it nor why not.
func checkBlock(t *testing.T, b docBlock) bool {
	t.Helper()
	if why, ok := b.note("skip"); ok {
		if why == "" {
			t.Errorf("%s: a skip without a reason", b)
		}
		return false
	}
	if b.kind == "sh" || b.kind == "console" {
		return true
	}
	if _, ok := b.note("not run"); ok {
		return false
	}
	for _, l := range strings.Split(b.text, "\n") {
		if cmdStart.MatchString(l) {
			t.Errorf("%s: a %q block with a command (%q): make it sh or console, or say why it is not run (<!-- doctest: not run: REASON -->)", b, b.kind, strings.TrimSpace(l))
			return false
		}
	}
	return false
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6} (.*)$`)
	slugDel = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// slug is a heading's anchor as GitHub renders it: lower case, punctuation
// other than '-' and '_' dropped, spaces as '-'.
func slug(h string) string {
	return strings.ReplaceAll(slugDel.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// anchors returns the anchors of a markdown file's headings (outside
// fenced blocks).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	in := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if m := heading.FindStringSubmatch(l); m != nil && !in {
			out[slug(m[1])] = true
		}
	}
	return out
}

// TestDocLinks: every relative link of README.md and docs/*.md (outside
// fenced blocks) names a file of the repository and, with #anchor, one of
// its headings; a link into another guide moved with it.
func TestDocLinks(t *testing.T) {
	if got, want := slug("Several processes over JetStream (`--role`)"), "several-processes-over-jetstream---role"; got != want {
		t.Fatalf("slug = %q, want GitHub's %q", got, want)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		in := false
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(l, "```") {
				in = !in
				continue
			}
			if in {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := f
				if path != "" {
					file = filepath.Join(filepath.Dir(f), path)
				}
				b, err := os.ReadFile(file)
				if err != nil {
					t.Errorf("%s:%d: link %q: %v", name, i+1, target, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(string(b))[anchor] {
					t.Errorf("%s:%d: link %q: no heading with that anchor", name, i+1, target)
				}
				checked++
			}
		}
	}
	t.Logf("%d links checked", checked)
}
