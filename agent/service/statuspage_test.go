package service

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"dprl/agent/statuspage"
	"dprl/internal/testutil"
	"dprl/ledger/accountant"
	"dprl/stream"
)

// getPage fetches the status page of a running service.
func getPage(t *testing.T, addr string) (string, http.Header) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d %v: %s", resp.StatusCode, err, b)
	}
	return string(b), resp.Header
}

// playUsers plays one short session per user over NATS.
func playUsers(t *testing.T, c *stream.Client, users ...string) []stream.EndReply {
	t.Helper()
	ctx := context.Background()
	var out []stream.EndReply
	for i, u := range users {
		id := fmt.Sprintf("s-%s-%d", u, i)
		for step := range 4 {
			if _, err := c.Act(ctx, id, u, obs4, 1, step == 0); err != nil {
				t.Fatal(err)
			}
		}
		r, err := c.EndAs(ctx, id, u, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

var panelRE = regexp.MustCompile(`<div class="panel" id="([^"]+)">\s*<h3>[^<]*</h3>\s*<span class="badge (release|operational)">([^<]*)</span>`)

// TestStatusPage serves the status page of a real service (embedded NATS,
// Pebble ledger, ops server) with a simulator: before any session, and
// after two releases and a session set aside at its user's cap. The page
// is HTML with inline SVG and no script, served with a content security
// policy; every panel carries a privacy label; the figures come from the
// ledger (releases, users' epsilons against the cap), the registry (the
// set-aside reason) and the simulated curve of the released versions.
func TestStatusPage(t *testing.T) {
	cfg := cartpoleConfig(2)
	cfg.MaxUpdatesPerUser = 1
	svc := startService(t, cfg, func(sc *ServiceConfig) { sc.HTTPAddr, sc.EnvSpec = "127.0.0.1:0", "cartpole" })
	page, hdr := getPage(t, svc.OpsAddr())
	if ct := hdr.Get("Content-Type"); ct != "text/html; charset=utf-8" || !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("headers: Content-Type %q, CSP %q", ct, hdr.Get("Content-Security-Policy"))
	}
	for _, want := range []string{"<title>dprl agent status</title>", "version served", "no release yet", "Sessions since the agent started"} {
		if !strings.Contains(page, want) {
			t.Errorf("fresh page lacks %q", want)
		}
	}

	_, c := dial(t, svc)
	playUsers(t, c, "alice", "bob")
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return svc.Agent().Version() == 1 })
	playUsers(t, c, "carol", "dave")
	testutil.EventuallyTrue(t, 20*time.Second, "version 2", func() bool { return svc.Agent().Version() == 2 })
	playUsers(t, c, "alice")
	waitDiscarded(t, svc.Agent(), "user_update_cap", 1) // alice at her cap
	// The curve is evaluated in the background while the page is viewed.
	testutil.EventuallyTrue(t, 30*time.Second, "the curve evaluated", func() bool {
		page, _ = getPage(t, svc.OpsAddr())
		return !strings.Contains(page, "still being evaluated")
	})
	if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, "javascript:") {
		t.Error("the page holds a script")
	}
	panels := panelRE.FindAllStringSubmatch(page, -1)
	if n := strings.Count(page, `<div class="panel"`); n != len(panels) || n < 7 {
		t.Fatalf("%d panels, %d with a privacy label; want every one of at least 7", n, len(panels))
	}
	release := map[string]bool{}
	for _, p := range panels {
		switch p[2] {
		case "release":
			release[p[1]] = true
			if !strings.Contains(p[3], "ε = "+accountant.FormatEpsilon(svc.Agent().Epsilon())) || !strings.Contains(p[3], "δ = 1e-05") {
				t.Errorf("panel %s: release label %q without the epsilon and delta", p[1], p[3])
			}
		case "operational":
			if p[3] != statuspage.OperationalLabel {
				t.Errorf("panel %s: label %q", p[1], p[3])
			}
		}
	}
	// Only the version and the simulated curve are releases.
	if len(release) != 2 || !release["policy-version"] || !release["policy-curve"] {
		t.Errorf("release panels %v, want policy-version and policy-curve", release)
	}
	for _, want := range []string{
		"Released policies on the cartpole simulator", statuspage.SimulatedNote,
		"<title>user_update_cap: 1</title>", // the set-aside reason, from the registry
		"worst user", "at most 1 update per user",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<svg "); n < 6 {
		t.Errorf("%d inline SVG figures, want at least 6", n)
	}

	pg, err := svc.StatusPage()
	if err != nil {
		t.Fatal(err)
	}
	v := pg.Policies[0]
	bound, _, _ := cfg.UserEpsilonBound()
	if v.Version != 2 || len(v.Releases) != 2 || v.Users.Users != 4 || math.Abs(v.Users.Worst-svc.Agent().Epsilon()) > 1e-9 || v.Users.Cap != bound {
		t.Errorf("policy view: version %d, %d releases, %d users, worst %v (cap %v); want 2, 2, 4, %v (%v)",
			v.Version, len(v.Releases), v.Users.Users, v.Users.Worst, v.Users.Cap, svc.Agent().Epsilon(), bound)
	}
	if got := len(v.Curve.Points); got != 3 || v.Curve.Pending != 0 || v.Curve.Points[2].Version != 2 {
		t.Errorf("curve %+v, want versions 0, 1 and 2 evaluated", v.Curve)
	}
	// The same version gives the same simulated value (fixed seed per
	// version), here as in a report.
	again, err := statuspage.EvaluateVersion("cartpole", cfg.Spec, cfg.Policy.PPO, svc.Store().Snapshot, 2)
	if err != nil || again != v.Curve.Points[2].MeanReturn {
		t.Errorf("version 2 evaluated again: %v (%v), want %v", again, err, v.Curve.Points[2].MeanReturn)
	}
}

// TestStatusPageWithoutSimulator: without --env, or with a simulator
// whose spaces are not the policy's, the curve panel says why there is no
// learning curve and carries no release label.
func TestStatusPageWithoutSimulator(t *testing.T) {
	for env, why := range map[string]string{"": "no simulator: the agent runs without --env", "pendulum": "no learning curve on the pendulum simulator"} {
		svc := startService(t, cartpoleConfig(2), func(sc *ServiceConfig) { sc.HTTPAddr, sc.EnvSpec = "127.0.0.1:0", env })
		page, _ := getPage(t, svc.OpsAddr())
		m := regexp.MustCompile(`id="policy-curve">\s*<h3>[^<]*</h3>\s*<span class="badge operational">`).FindString(page)
		if m == "" || !strings.Contains(page, why) || !strings.Contains(page, "releases no noised return") {
			t.Errorf("curve panel with --env %q:\n%s", env, page)
		}
	}
}

// TestStatusPageModels: a multi-policy service's page has one section per
// model, each from its own ledger (its releases, its users, its curve:
// the CartPole model's on the simulator, the tiny model's none), and the
// agent's metrics of all models together.
func TestStatusPageModels(t *testing.T) {
	models := twoModels()
	models[0].EnvSpec = "cartpole"
	svc, err := StartService(context.Background(), ServiceConfig{Models: models, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	nc, err := stream.Connect("", stream.WithInProcess(svc.Embedded()))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := stream.NewClient(nc, stream.WithPrefix("dprl.cartpole"))
	if err != nil {
		t.Fatal(err)
	}
	playUsers(t, c, "alice", "bob")
	cart := svc.Policies()[0].Agent()
	testutil.EventuallyTrue(t, 20*time.Second, "cartpole version 1", func() bool { return cart.Version() == 1 })
	var page string
	testutil.EventuallyTrue(t, 30*time.Second, "the curve evaluated", func() bool {
		page, _ = getPage(t, svc.OpsAddr())
		return !strings.Contains(page, "still being evaluated")
	})
	for _, want := range []string{`<section id="policy-1-cartpole">`, "<h2>Policy cartpole</h2>", `<section id="policy-2-tiny">`, "<h2>Policy tiny</h2>",
		`id="policy-1-cartpole-curve"`, "Released policies on the cartpole simulator", "Agent (all models together)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`id="policy-2-tiny-curve">\s*<h3>[^<]*</h3>\s*<span class="badge operational">`).FindString(page); m == "" {
		t.Error("the tiny model's curve panel is not the operational \"no simulator\" one")
	}
	pg, err := svc.StatusPage()
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Policies) != 2 || pg.Policies[0].Version != 1 || pg.Policies[0].Users.Users != 2 || pg.Policies[1].Version != 0 || pg.Policies[1].Users.Users != 0 {
		t.Errorf("policies: %+v", pg.Policies)
	}
}
