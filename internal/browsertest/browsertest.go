// Package browsertest is for tests that load dprl's HTML (the status page,
// dprl report's page) in headless Chromium over the DevTools protocol
// (chromedp): start the browser, collect console errors, check the laid-out
// page for clipped and overlapping text, take screenshots. Tests skip when
// no Chromium is installed (Debian's chromium package).
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path finds a Chromium (Debian's chromium package) or Chrome binary, ""
// when there is none.
func Path() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// ArtifactsEnv names the directory where tests keep their screenshots and
// figures for people to look at.
const ArtifactsEnv = "DPRL_TEST_ARTIFACTS"

// Artifacts is the directory for a test's screenshots: $DPRL_TEST_ARTIFACTS
// (created), else t.TempDir() (removed after the test).
func Artifacts(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Browser is a headless Chromium for one test.
type Browser struct {
	// Ctx runs actions in the browser's tab (chromedp.Do, chromedp.Run);
	// it ends after a minute.
	Ctx      context.Context
	mu       sync.Mutex
	problems []string
}

// Start starts headless Chromium with a window of width by height pixels,
// or skips the test when none is installed. It is closed when the test
// ends.
func Start(t testing.TB, width, height int) *Browser {
	t.Helper()
	bin := Path()
	if bin == "" {
		t.Skip("no chromium binary found (apt-get install chromium): the page is not checked in a browser")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(width, height), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first action starts the browser: no timeout on its context.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	tctx, tcancel := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(tcancel)
	b.Ctx = tctx
	return b
}

// listen records console errors, exceptions and the browser's error and
// warning log entries (a violation of the content security policy is one).
func (b *Browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			b.problems = append(b.problems, fmt.Sprintf("console.error: %v", ev.Args))
		}
	case *runtime.EventExceptionThrown:
		b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			b.problems = append(b.problems, fmt.Sprintf("%s %s: %s (%s)", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

// Console returns what the browser's console has reported so far.
func (b *Browser) Console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

// Screenshot writes a full-page PNG screenshot of the current page to
// dir/name and returns its path.
func (b *Browser) Screenshot(dir, name string) (string, error) {
	shot, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, shot, 0o644)
}

// Layout checks the current page as laid out and returns what is wrong,
// one line per defect:
//   - an HTML text element (headings, paragraphs, facts, captions,
//     badges) whose content is wider than its box (scrollWidth >
//     clientWidth): cut off or spilling out;
//   - an SVG text whose glyphs leave its SVG's box (clipped), overlap
//     another text's, or meet a drawn datum: a bar (a rect with a
//     fill-opacity), a line (path), a point (circle) or a reference line
//     (the marks' red dashed lines).
//
// Glyphs are the boxes getExtentOfChar gives, mapped to the screen through
// the text's transform (so slanted labels are checked character by
// character) and shrunk by one pixel, the space a glyph's cell leaves
// around its ink. The check runs through the DevTools protocol, which the
// page's content security policy does not restrict: the page itself keeps
// no script.
func (b *Browser) Layout() ([]string, error) { return Layout(b.Ctx) }

// Layout checks the page loaded in ctx's tab (a chromedp context), as
// Browser.Layout does, for tests that drive Chromium themselves.
func Layout(ctx context.Context) ([]string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[[]string](layoutScript))
}

const layoutScript = `(() => {
  const out = [];
  const short = s => s.replace(/\s+/g, " ").trim().slice(0, 70);
  const where = el => { const f = el.closest("figure"); const c = f && f.querySelector("figcaption");
    return c ? "figure " + JSON.stringify(short(c.textContent)) : "panel " + JSON.stringify(short((el.closest(".panel") || document.body).querySelector("h3, h1").textContent)); };
  for (const el of document.querySelectorAll("h1, h2, h3, p, dt, dd, figcaption, .badge, footer")) {
    if (el.scrollWidth > el.clientWidth + 1)
      out.push("cut off: <" + el.tagName.toLowerCase() + "> " + JSON.stringify(short(el.textContent)) + " is " + el.scrollWidth + " px wide in a box of " + el.clientWidth);
  }
  const meet = (a, b) => a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b;
  const screen = (el, x, y) => new DOMPoint(x, y).matrixTransform(el.getScreenCTM());
  for (const svg of document.querySelectorAll("svg")) {
    const sb = svg.getBoundingClientRect();
    const box = {l: sb.left - 0.5, t: sb.top - 0.5, r: sb.right + 0.5, b: sb.bottom + 0.5};
    const texts = [];
    for (const t of svg.querySelectorAll("text")) {
      const n = t.getNumberOfChars();
      const glyphs = [];
      for (let i = 0; i < n; i++) {
        const e = t.getExtentOfChar(i);
        if (e.width === 0) continue;
        const ps = [screen(t, e.x, e.y), screen(t, e.x + e.width, e.y), screen(t, e.x, e.y + e.height), screen(t, e.x + e.width, e.y + e.height)];
        const g = {l: Math.min(...ps.map(p => p.x)) + 1, r: Math.max(...ps.map(p => p.x)) - 1, t: Math.min(...ps.map(p => p.y)) + 1, b: Math.max(...ps.map(p => p.y)) - 1};
        if (g.r > g.l && g.b > g.t) glyphs.push(g);
      }
      if (glyphs.length) texts.push({el: t, label: JSON.stringify(short(t.textContent)), glyphs});
    }
    const data = [];
    for (const r of svg.querySelectorAll("rect[fill-opacity]")) {
      const w = +r.getAttribute("width"), h = +r.getAttribute("height");
      if (w <= 0 || h <= 0) continue;
      const a = screen(r, +r.getAttribute("x"), +r.getAttribute("y")), c = screen(r, +r.getAttribute("x") + w, +r.getAttribute("y") + h);
      data.push({what: "a bar", rect: {l: Math.min(a.x, c.x), r: Math.max(a.x, c.x), t: Math.min(a.y, c.y), b: Math.max(a.y, c.y)}});
    }
    for (const c of svg.querySelectorAll("circle")) {
      const b = c.getBoundingClientRect();
      data.push({what: "a point", rect: {l: b.left, r: b.right, t: b.top, b: b.bottom}});
    }
    const samples = [];
    for (const p of svg.querySelectorAll("path")) {
      const len = p.getTotalLength();
      for (let s = 0; s <= len; s += 1) { const q = p.getPointAtLength(s); samples.push({what: "a line", p: screen(p, q.x, q.y)}); }
    }
    for (const l of svg.querySelectorAll('line[stroke="#d62728"]')) {
      const x1 = +l.getAttribute("x1"), y1 = +l.getAttribute("y1"), x2 = +l.getAttribute("x2"), y2 = +l.getAttribute("y2");
      const len = Math.hypot(x2 - x1, y2 - y1);
      for (let s = 0; s <= len; s += 1) samples.push({what: "a reference line", p: screen(l, x1 + (x2 - x1) * s / len, y1 + (y2 - y1) * s / len)});
    }
    for (const [i, t] of texts.entries()) {
      const w = where(t.el);
      if (t.glyphs.some(g => !meet(g, box) || g.l < box.l || g.r > box.r || g.t < box.t || g.b > box.b))
        out.push("clipped: " + w + ": text " + t.label + " leaves its SVG");
      const d = data.find(d => t.glyphs.some(g => meet(g, d.rect)));
      if (d) out.push("overlap: " + w + ": text " + t.label + " is drawn over " + d.what);
      const s = samples.find(s => t.glyphs.some(g => s.p.x > g.l && s.p.x < g.r && s.p.y > g.t && s.p.y < g.b));
      if (s) out.push("overlap: " + w + ": text " + t.label + " is drawn over " + s.what);
      for (const u of texts.slice(i + 1)) {
        if (t.glyphs.some(g => u.glyphs.some(h => meet(g, h)))) out.push("overlap: " + w + ": texts " + t.label + " and " + u.label + " overlap");
      }
    }
  }
  return out;
})()`
