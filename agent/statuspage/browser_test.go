package statuspage_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"dprl/agent"
	"dprl/agent/statuspage"
	"dprl/internal/browsertest"
	"dprl/internal/buildinfo"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
)

// livePage is the page of an agent that has run for two hours: 37
// releases at z = 1 (per-session epsilon 4.3772), 4,000 users each in one
// update with the cap at one update (the worst user at the cap), the
// cartpole curve, the real metrics (agent.NewMetrics) with sessions set
// aside for every reason, and a learner's cluster panel.
func livePage(t *testing.T) *statuspage.Page {
	t.Helper()
	const eps = 4.377178100058402
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	v := statuspage.PolicyView{Version: 37, Epsilon: eps, Delta: 1e-5, OtherEntries: 2,
		Users: statuspage.UserView{Users: 4000, Delta: 1e-5, Worst: eps, Cap: eps, CapNote: "at most 1 update per user"},
		Curve: statuspage.CurveView{Env: "cartpole", Episodes: 20}}
	for i := range 37 {
		v.Releases = append(v.Releases, statuspage.ReleasePoint{Version: uint64(i + 1), Time: t0.Add(time.Duration(i*195) * time.Second), Epsilon: eps, Delta: 1e-5})
	}
	for i := range 38 {
		v.Curve.Points = append(v.Curve.Points, statuspage.CurvePoint{Version: uint64(i), MeanReturn: 22 + 460*(1-1/(1+float64(i*i)/150))})
	}
	w := 1.1 * eps / 12
	for i := range 12 {
		b := statuspage.Bin{Lo: w * float64(i), Hi: w * float64(i+1)}
		if b.Lo <= eps && eps < b.Hi {
			b.Count = 4000
		}
		v.Users.Bins = append(v.Users.Bins, b)
	}
	reg := prometheus.NewRegistry()
	m := agent.NewMetrics(reg)
	m.SessionsOpened.Add(5210)
	m.SessionsClosed.Add(5160)
	m.SessionsUsed.Add(4000)
	for i, r := range agent.DiscardReasons() {
		m.SessionsDiscarded.WithLabelValues(r).Add(float64(3 * (i + 1)))
	}
	m.AdmissionRefused.WithLabelValues("connection").Add(7)
	for i := range 20000 {
		m.ActLatency.Observe(3e-6 * float64(1+i%7))
	}
	ops, err := statuspage.FromGatherer(reg)
	if err != nil {
		t.Fatal(err)
	}
	held := true
	return &statuspage.Page{Title: "dprl agent status", Source: "the running agent", Build: buildinfo.Get(), Generated: t0.Add(2 * time.Hour),
		Policies: []statuspage.PolicyView{v}, Ops: ops, Refresh: 15,
		Cluster: &statuspage.ClusterView{Role: "learn", Name: "prod", LogSeq: 39, Holder: "learner-1", LeaseHeld: &held, LeaseHolder: "learner-1"}}
}

// serve serves page as the agent does (statuspage.Render, the content
// security policy) and counts the requests.
func serve(t *testing.T, page *statuspage.Page) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		n.Add(1)
		var b bytes.Buffer
		if err := statuspage.Render(&b, page); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", statuspage.ContentSecurityPolicy)
		w.Write(b.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/", &n
}

// TestPageLayoutInChromium loads a live agent's page (livePage, served
// with the content security policy) in headless Chromium at a desktop
// and a phone width, writes full-page screenshots to
// $DPRL_TEST_ARTIFACTS (else a temporary directory), and checks the
// laid-out page (browsertest.Layout): no text cut off or clipped, no label
// over a bar, a line, a point or another label (issue 36: the slanted
// "connection_queue_full" was cut off at the SVG's left edge, "worst
// user" and "cap" were drawn over the histogram's bar), and nothing in the
// console (a CSP violation would be there).
func TestPageLayoutInChromium(t *testing.T) {
	b := browsertest.Start(t, 1280, 900)
	url, _ := serve(t, livePage(t))
	dir := browsertest.Artifacts(t)
	for _, width := range []int64{1280, 420} {
		if err := chromedp.Do(b.Ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		path, err := b.Screenshot(dir, fmt.Sprintf("statuspage-%d.png", width))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
		problems, err := b.Layout()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%d px wide: %s", width, p)
		}
		n, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg").length`))
		if err != nil || n != 7 {
			t.Errorf("%d figures (%v), want 7", n, err)
		}
	}
	for _, p := range b.Console() {
		t.Errorf("browser console: %s", p)
	}
}

// TestPageRefreshesInChromium: the page reloads itself in the browser
// (its meta refresh, no script) under the strict content security policy:
// with Refresh 1 the server sees a second request within seconds, and the
// console holds no violation.
func TestPageRefreshesInChromium(t *testing.T) {
	b := browsertest.Start(t, 800, 600)
	page := livePage(t)
	page.Refresh = 1
	url, n := serve(t, page)
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := n.Load(); got < 3 {
		t.Errorf("%d requests in 10 s with a 1 s refresh: the page does not reload itself", got)
	}
	for _, p := range b.Console() {
		t.Errorf("browser console: %s", p)
	}
}
