package statuspage_test

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dprl/agent"
	"dprl/agent/statuspage"
	"dprl/internal/buildinfo"

	"github.com/prometheus/client_golang/prometheus"
)

// hostile is text an operator's configuration or a label could carry.
const hostile = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`

func samplePage() *statuspage.Page {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &statuspage.Page{
		Title: "status " + hostile, Source: hostile, Build: buildinfo.Get(), Generated: t0.Add(time.Hour),
		Policies: []statuspage.PolicyView{{
			Name: hostile, Version: 2, Epsilon: 0.9, Delta: 1e-5,
			Releases: []statuspage.ReleasePoint{{Version: 1, Time: t0, Epsilon: 0.9, Delta: 1e-5}, {Version: 2, Time: t0.Add(time.Minute), Epsilon: 0.9, Delta: 1e-5}},
			Users: statuspage.UserView{Users: 3, Delta: 1e-5, Worst: 1.2, Cap: 2, CapNote: hostile,
				Bins: []statuspage.Bin{{Lo: 0, Hi: 1, Count: 2}, {Lo: 1, Hi: 2, Count: 1}}},
			Curve: statuspage.CurveView{Env: hostile, Episodes: 20, Points: []statuspage.CurvePoint{{0, 10}, {1, 20}, {2, 35}}},
		}},
		Ops: &statuspage.OpsView{Discarded: []statuspage.Bar{{Label: hostile, Value: 3}}, Sessions: []statuspage.Bar{{Label: "opened", Value: 5}}},
	}
}

// TestRenderEscapes: text from configuration or labels is escaped
// everywhere it appears (element text, attributes, SVG), and the page has
// no script of its own.
func TestRenderEscapes(t *testing.T) {
	var b bytes.Buffer
	if err := statuspage.Render(&b, samplePage()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"<script", "<img"} {
		if strings.Contains(out, bad) {
			t.Errorf("rendered page holds %q unescaped", bad)
		}
	}
	if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile text is not shown escaped")
	}
	if n := strings.Count(out, "<svg "); n != 7 {
		t.Errorf("%d figures, want 7 (releases, curve, users, sessions, set aside, refused, latency)", n)
	}
}

// TestEveryPanelLabelled: every panel of a page is a release with its
// epsilon and delta, or operational; only the version and the simulated
// curve are releases.
func TestEveryPanelLabelled(t *testing.T) {
	p := samplePage()
	p.Ops = nil
	p.OpsNote = "no metrics in a report"
	var releases []string
	for _, s := range p.Sections() {
		for _, pn := range s.Panels {
			l := pn.Privacy.Label()
			switch {
			case pn.Privacy.Release:
				releases = append(releases, pn.ID)
				if !strings.Contains(l, "ε = 0.9") || !strings.Contains(l, "δ = 1e-05") {
					t.Errorf("%s: release label %q", pn.ID, l)
				}
			case l != statuspage.OperationalLabel:
				t.Errorf("%s: label %q", pn.ID, l)
			}
		}
	}
	if want := []string{"policy-version", "policy-curve"}; !slices.Equal(releases, want) {
		t.Errorf("release panels %v, want %v", releases, want)
	}
	// Several policies get sections and figure ids of their own.
	p.Policies = append(p.Policies, p.Policies[0])
	p.Policies[1].Name = "second"
	ids := map[string]bool{}
	for _, f := range p.Figures() {
		if ids[f.ID] || !regexp.MustCompile(`^[a-z0-9-]+$`).MatchString(f.ID) {
			t.Errorf("figure id %q repeated or not a file name", f.ID)
		}
		ids[f.ID] = true
	}
}

// TestCurveVersions: the versions of a curve are bounded, start at 0,
// end at the latest, and as the latest grows the versions kept (but the
// latest) were already kept before, so the cache is reused.
func TestCurveVersions(t *testing.T) {
	prev := map[uint64]bool{}
	for latest := uint64(0); latest <= 5000; latest++ {
		vs := statuspage.CurveVersions(latest)
		if len(vs) > statuspage.CurvePoints+2 || vs[0] != 0 || vs[len(vs)-1] != latest || !slices.IsSorted(vs) {
			t.Fatalf("latest %d: %v", latest, vs)
		}
		if latest > 2*statuspage.CurvePoints {
			for _, v := range vs[:len(vs)-1] {
				if !prev[v] && v != latest-1 {
					t.Fatalf("latest %d: version %d was not kept at %d", latest, v, latest-1)
				}
			}
		}
		prev = map[uint64]bool{}
		for _, v := range vs {
			prev[v] = true
		}
	}
	if got := statuspage.CurveVersions(5); !slices.Equal(got, []uint64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("CurveVersions(5) = %v", got)
	}
}

// TestFromGatherer reads the agent's real metrics (agent.NewMetrics on a
// registry): every discard reason and limit is there from the start, the
// counts are the collectors', and the latency quantiles are bucket bounds.
func TestFromGatherer(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := agent.NewMetrics(reg)
	v, err := statuspage.FromGatherer(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Discarded) != len(agent.DiscardReasons()) || len(v.Refused) != 4 || v.ActRequests != 0 || !math.IsNaN(v.P50) {
		t.Errorf("fresh registry: %+v", v)
	}
	m.SessionsDiscarded.WithLabelValues("stale").Add(2)
	m.SessionsOpened.Add(7)
	for range 98 {
		m.ActLatency.Observe(3e-6) // bucket (2µs, 4µs]
	}
	m.ActLatency.Observe(1e-3)
	m.ActLatency.Observe(1e-3)
	if v, err = statuspage.FromGatherer(reg); err != nil {
		t.Fatal(err)
	}
	get := func(bs []statuspage.Bar, l string) float64 {
		for _, b := range bs {
			if b.Label == l {
				return b.Value
			}
		}
		return math.NaN()
	}
	if get(v.Discarded, "stale") != 2 || get(v.Discarded, "user_update_cap") != 0 || get(v.Sessions, "opened") != 7 {
		t.Errorf("counts: discarded %v, sessions %v", v.Discarded, v.Sessions)
	}
	if v.ActRequests != 100 || v.P50 != 4e-6 || v.P99 != 1.024e-3 {
		t.Errorf("latency: %d requests, p50 %v, p99 %v; want 100, 4e-06, 0.001024", v.ActRequests, v.P50, v.P99)
	}
	var total float64
	for _, b := range v.Latency {
		total += b.Value
	}
	if total != 100 {
		t.Errorf("latency bars sum to %v, want 100", total)
	}
}

// TestFigureLayout: ticks are round and cover the data; integer axes get
// whole-number ticks; a figure without data says so.
func TestFigureLayout(t *testing.T) {
	f := statuspage.Figure{ID: "x", Title: "t", IntX: true, Lines: []statuspage.Line{{X: []float64{0, 1, 2}, Y: []float64{0.5, 7, 3}}}}
	s := f.SVG()
	for _, tk := range s.XTicks {
		if strings.Contains(tk.Label, ".") {
			t.Errorf("integer axis tick %q", tk.Label)
		}
	}
	if last := s.YTicks[len(s.YTicks)-1].Label; last != "8" {
		t.Errorf("top y tick %s, want 8", last)
	}
	if !(statuspage.Figure{Title: "e"}).SVG().Empty {
		t.Error("a figure without data is not empty")
	}
}

// TestEpsilonsRoundedUp: the page shows an epsilon as every command does
// (accountant.FormatEpsilon, rounded up), never rounded to nearest: the
// analytic Gaussian's 4.37717... at z = 1 is 4.378 here as on the command
// line, not 4.377; and a worst user at 99.1% of the cap is not shown at 99%.
func TestEpsilonsRoundedUp(t *testing.T) {
	const eps = 4.377178100058402
	p := statuspage.Privacy{Release: true, Epsilon: eps, Delta: 1e-5}
	for _, s := range []string{p.Label(), p.Short()} {
		if !strings.Contains(s, "ε = 4.378") {
			t.Errorf("privacy label %q: want ε = 4.378", s)
		}
	}
	page := samplePage()
	page.Policies[0].Epsilon = eps
	page.Policies[0].Releases[1].Epsilon = eps
	page.Policies[0].Users.Worst = 1.982
	var b bytes.Buffer
	if err := statuspage.Render(&b, page); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if strings.Contains(html, "4.377") || !strings.Contains(html, "4.378") {
		t.Errorf("the page shows epsilon %v rounded down, or not at all", eps)
	}
	if !strings.Contains(html, "worst user at 100% of it") {
		t.Errorf("the worst user at 99.1%% of the cap is not shown rounded up to 100%%")
	}
}

// TestFixedPolicyPanels: an agent serving a fixed policy shows the
// snapshot's own guarantee in the policy panel (a private release at its
// epsilon, delta, unit and ledger entry; or NOT private), never the
// agent's per-session parameters or "the initial policy".
func TestFixedPolicyPanels(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fixed statuspage.FixedView
		label string
	}{
		{"private", statuspage.FixedView{ID: "qlearn-cql crc32c:00000001", Source: "q.json", Private: true, Epsilon: 10, Delta: 1e-5, Unit: "expert", LedgerSeq: 3, Label: "a fixed offline release"},
			"fixed offline release: the policy served is (ε = 10, δ = 1e-05)-differentially private per expert (ledger entry 3)"},
		{"not private", statuspage.FixedView{ID: "sac-actor crc32c:00000002", Source: "p.snap", Label: "NOT private: trained without differential privacy"}, statuspage.NotPrivateLabel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := statuspage.PolicyView{Delta: 1e-5, Fixed: &tc.fixed}
			panels := v.Panels("p", time.Now())
			if got := panels[0].Privacy.Label(); got != tc.label {
				t.Errorf("policy panel label %q, want %q", got, tc.label)
			}
			for _, p := range panels {
				for _, s := range append([]string{p.Note, p.Privacy.Label()}, factsText(p)...) {
					if strings.Contains(s, "initial policy") || strings.Contains(s, "per session") {
						t.Errorf("panel %s says %q", p.ID, s)
					}
				}
			}
		})
	}
}

// factsText is a panel's facts as text.
func factsText(p statuspage.Panel) []string {
	var out []string
	for _, f := range p.Facts {
		out = append(out, f.Name+": "+f.Value)
	}
	return out
}

// TestPageRefreshes: the agent's page reloads itself with a meta refresh
// (no script); a report's page (Refresh 0) does not.
func TestPageRefreshes(t *testing.T) {
	for _, n := range []int{15, 0} {
		p := samplePage()
		p.Refresh = n
		var b bytes.Buffer
		if err := statuspage.Render(&b, p); err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(b.String(), `<meta http-equiv="refresh" content="15">`)
		if has != (n > 0) || strings.Contains(strings.ToLower(b.String()), "<script") {
			t.Errorf("Refresh %d: meta refresh %v", n, has)
		}
	}
}

// TestMarkLabelsRoundedUp: the histogram's marks show the worst user's
// epsilon and the cap as every command does, rounded up: 4.37717... is
// "worst user 4.378", never 4.377 (issue 36's "cap 4.377").
func TestMarkLabelsRoundedUp(t *testing.T) {
	const eps = 4.377178100058402
	page := samplePage()
	page.Policies[0].Users.Worst, page.Policies[0].Users.Cap = eps, eps
	var b bytes.Buffer
	if err := statuspage.Render(&b, page); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"worst user 4.378", "cap 4.378", "ε ≤ 4.378"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(html, "4.377") {
		t.Error("the page shows an epsilon of 4.37718 rounded down to 4.377")
	}
}

// TestLabelsOffTheData: nothing but the grid is drawn over a figure's
// data: a line chart's legend entries and its marks' labels are in rows
// above the plot, each mark's in its own row; slanted bar labels start
// inside the SVG (issue 36: "connection_queue_full" was cut off at the
// left, "cap" drawn over the histogram's bar). Chromium checks the drawn
// page (TestPageLayoutInChromium); this checks the layout without it.
func TestLabelsOffTheData(t *testing.T) {
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	f := statuspage.Figure{Title: "users", Bins: []statuspage.Bin{{Lo: 0, Hi: 2, Count: 1}, {Lo: 4, Hi: 4.4, Count: 4}},
		Marks: []statuspage.Mark{{X: 4.377, Label: "worst user 4.378"}, {X: 4.377, Label: "cap 4.378"}}}
	s := f.SVG()
	rows := map[string]bool{}
	for _, m := range s.Marks {
		if num(m.TY) >= num(s.PlotY)-4 || num(m.TX) < 0 || num(m.TX)+6.2*float64(len(m.Label)) > num(s.W) {
			t.Errorf("mark label %q at (%s, %s): not above the plot (top %s) inside the SVG", m.Label, m.TX, m.TY, s.PlotY)
		}
		rows[m.TY] = true
	}
	if len(rows) != 2 {
		t.Errorf("two marks' labels share a row: %+v", s.Marks)
	}
	l := statuspage.Figure{Title: "curve", Lines: []statuspage.Line{{Label: "mean simulated return", X: []float64{0, 1, 2}, Y: []float64{40, 10, 20}}}}.SVG()
	for _, e := range l.Legend {
		if num(e.LY) >= num(l.PlotY)-4 {
			t.Errorf("legend entry %q at y %s: inside the plot (top %s)", e.Label, e.LY, l.PlotY)
		}
	}
	var bars []statuspage.Bar
	for _, r := range slices.Sorted(slices.Values(agent.DiscardReasons())) { // as the page orders them
		bars = append(bars, statuspage.Bar{Label: r, Value: 1})
	}
	b := statuspage.Figure{Title: "set aside", Bars: bars}.SVG()
	for _, r := range b.Rects {
		// A slanted label ends at (LX, LY) and reaches left by its
		// length times cos 45°.
		if r.Rotate != "" && num(r.LX)-6.2*0.71*float64(len(r.Label)) < 0 {
			t.Errorf("slanted label %q ends at x %s: its start leaves the SVG", r.Label, r.LX)
		}
	}
}
