package report_test

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"dprl/internal/browsertest"
	"dprl/report"

	"github.com/chromedp/chromedp"
)

// TestReportInChromium writes the report of a real short agent run (three
// releases, a cap of one update per user, so the worst user sits at the
// cap and the histogram is one full bar) with its cartpole curve, loads
// report.html in headless Chromium, and checks it as laid out
// (browsertest.Layout: no text cut off, clipped or drawn over a bar, a
// line or another label) with nothing in the console. The report's
// directory (HTML and PNG figures) and a full-page screenshot go to
// $DPRL_TEST_ARTIFACTS/report (else a temporary directory). Skipped
// without Chromium.
func TestReportInChromium(t *testing.T) {
	b := browsertest.Start(t, 1280, 900)
	dir := t.TempDir()
	if err := runAgent(t, dir, 3).Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(browsertest.Artifacts(t), "report")
	res, err := report.Write(report.Options{DataDir: dir, OutDir: out, EnvSpec: "cartpole", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b.Ctx, chromedp.Navigate("file://"+res.HTML)); err != nil {
		t.Fatal(err)
	}
	path, err := b.Screenshot(out, "report-screenshot.png")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report in %s, screenshot %s", out, path)
	problems, err := b.Layout()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("report.html: %s", p)
	}
	n, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg").length`))
	if err != nil || n != 3 {
		t.Errorf("%d figures (%v), want 3 (releases, curve, users)", n, err)
	}
	for _, p := range b.Console() {
		t.Errorf("browser console: %s", p)
	}
	for _, p := range res.PNGs {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
