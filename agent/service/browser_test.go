package service

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"dprl/internal/browsertest"
	"dprl/internal/buildinfo"
	"dprl/internal/testutil"
)

// TestStatusPageInChromium loads the status page of a real running service
// (embedded NATS, Pebble ledger, two releases, a simulated curve) in
// headless Chromium, driven over the DevTools protocol: the page renders
// with its title and the build's version, its SVG figures have a size, the
// console holds no error (a CSP violation or a failed load would be one),
// no text is clipped or drawn over data or other text
// (browsertest.Layout), and a full-page screenshot is written for people
// to look at. Skipped
// where no Chromium is installed (apt-get install chromium).
func TestStatusPageInChromium(t *testing.T) {
	bin := browsertest.Path()
	if bin == "" {
		t.Skip("no chromium binary found (apt-get install chromium): the status page is not checked in a browser")
	}
	cfg := cartpoleConfig(2)
	svc := startService(t, cfg, func(sc *ServiceConfig) { sc.HTTPAddr, sc.EnvSpec = "127.0.0.1:0", "cartpole" })
	_, c := dial(t, svc)
	playUsers(t, c, "alice", "bob")
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return svc.Agent().Version() == 1 })
	playUsers(t, c, "carol", "dave")
	testutil.EventuallyTrue(t, 20*time.Second, "version 2", func() bool { return svc.Agent().Version() == 2 })
	playUsers(t, c, "erin") // open and closed, waiting for a batch
	testutil.EventuallyTrue(t, 30*time.Second, "the curve evaluated", func() bool {
		page, _ := getPage(t, svc.OpsAddr())
		return !strings.Contains(page, "still being evaluated")
	})

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	var mu sync.Mutex
	var problems []string
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				problems = append(problems, fmt.Sprintf("console.error: %v", ev.Args))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("%s %s: %s (%s)", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	}))
	defer cancel()
	// The first Run starts the browser: no timeout on its context.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
	defer tcancel()
	url := "http://" + svc.OpsAddr() + "/"
	if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	title, err := chromedp.Run(tctx, chromedp.Title())
	if err != nil || title != "dprl agent status" {
		t.Errorf("title %q (%v)", title, err)
	}
	header, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.querySelector("header").innerText`))
	if err != nil || !strings.Contains(header, "dprl "+buildinfo.Get().Version) {
		t.Errorf("header %q (%v) does not name the build %s", header, err, buildinfo.Get().Version)
	}
	// Figures laid out by the browser: each SVG has a width and a height,
	// and its drawing (bars, lines, points) is inside it.
	sized, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64](`Array.from(document.querySelectorAll("svg")).map(s => {
		const r = s.getBoundingClientRect(); return r.width * r.height })`))
	if err != nil {
		t.Fatal(err)
	}
	const wantSVG = 7
	var nonzero int
	for _, a := range sized {
		if a > 100 {
			nonzero++
		}
	}
	if nonzero < wantSVG {
		t.Errorf("%d of %d SVG figures have a nonzero size, want at least %d", nonzero, len(sized), wantSVG)
	}
	drawn, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll("svg rect[height]:not([height='0.0']), svg path[d]:not([d='']), svg circle").length`))
	if err != nil || drawn < 10 {
		t.Errorf("%d drawn SVG shapes (%v), want at least 10", drawn, err)
	}
	// Laid out without clipped or overlapping text: no label over a bar,
	// a line or another label (the users' histogram of this run is one
	// full bar, its marks above it).
	layout, err := browsertest.Layout(tctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range layout {
		t.Errorf("layout: %s", p)
	}
	shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() <= 900 {
		t.Errorf("full-page screenshot %v, want the whole page (taller than the 900-pixel window)", b)
	}
	path := filepath.Join(browsertest.Artifacts(t), "status-page.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("status page screenshot (%dx%d): %s", img.Bounds().Dx(), img.Bounds().Dy(), path)
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser console: %s", p)
	}
}
