package service

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dprl/agent"
	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/stream"
)

// scrape reads the dprl_ series of a real ops server's /metrics as a map
// from the series (name and labels, as served) to its value.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(httpGet(t, "http://"+addr+"/metrics"), "\n") {
		if !strings.HasPrefix(line, "dprl_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsSeriesAndGauges runs a real service (embedded NATS, Pebble
// ledger, ops server) and reads /metrics as Prometheus would: every
// labelled series exists at 0 before its first event, the discard reasons
// are snake_case label values while End still returns the reason's text,
// and the gauges of the policy version, the ledger's releases, the
// per-session guarantee and the worst user's epsilon follow the ledger,
// across a restart. (Before: the series were absent until first seen, the
// reasons were free text such as "user reached max_updates_per_user", and
// none of these gauges existed.)
func TestMetricsSeriesAndGauges(t *testing.T) {
	cfg := cartpoleConfig(2)
	cfg.MaxUpdatesPerUser = 1
	dir := t.TempDir()
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: dir, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { svc.Close() }()
	m := scrape(t, svc.OpsAddr())
	var want []string
	for _, c := range stream.Codes() {
		want = append(want, fmt.Sprintf(`dprl_act_errors_total{error=%q}`, c), fmt.Sprintf(`dprl_end_errors_total{error=%q}`, c))
	}
	for _, r := range agent.DiscardReasons() {
		want = append(want, fmt.Sprintf(`dprl_sessions_discarded_total{reason=%q}`, r))
	}
	for _, l := range []string{"open_sessions", "user", "connection", "memory"} {
		want = append(want, fmt.Sprintf(`dprl_admission_refused_total{limit=%q}`, l))
	}
	for _, r := range []string{"queue_full", "write_failed", "closed", "unsupported"} {
		want = append(want, fmt.Sprintf(`dprl_session_log_dropped_total{reason=%q}`, r))
	}
	want = append(want, `dprl_requests_without_reply_total{request="act"}`, `dprl_requests_without_reply_total{request="end"}`,
		"dprl_policy_version", "dprl_releases", "dprl_user_epsilon_max")
	for _, s := range want {
		if v, ok := m[s]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0 at start", s, v, ok)
		}
	}
	if got, want := m["dprl_session_epsilon"], svc.Agent().Epsilon(); got != want {
		t.Errorf("dprl_session_epsilon %v, want %v", got, want)
	}
	if got := m["dprl_session_delta"]; got != cfg.Delta {
		t.Errorf("dprl_session_delta %v, want %v", got, cfg.Delta)
	}
	snake := regexp.MustCompile(`^[a-z_]+$`)
	if got := len(agent.DiscardReasons()); got != 10 {
		t.Errorf("%d discard reasons, want 10", got)
	}
	for _, r := range agent.DiscardReasons() {
		if !snake.MatchString(r) {
			t.Errorf("discard reason %q is not snake_case", r)
		}
	}

	// alice and bob make version 1; alice's next session is set aside at
	// her update cap.
	_, c := dial(t, svc)
	play := func(id, user string) stream.EndReply {
		t.Helper()
		ctx := context.Background()
		for step := range 3 {
			if _, err := c.Act(ctx, id, user, obs4, 1, step == 0); err != nil {
				t.Fatal(err)
			}
		}
		r, err := c.EndAs(ctx, id, user, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	play("a1", "alice")
	play("b1", "bob")
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return svc.Agent().Version() == 1 })
	if r := play("a2", "alice"); !r.Used || r.Reason != "" {
		t.Errorf("capped user's end reply %+v, want the reply of any queued session", r)
	}
	waitDiscarded(t, svc.Agent(), "user_update_cap", 1)
	oneUpdate, err := ledger.UserState{Updates: 1, SumInvZ2: 1 / (cfg.Policy.DP.NoiseMultiplier * cfg.Policy.DP.NoiseMultiplier)}.Epsilon(cfg.Delta)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(oneUpdate-svc.Agent().Epsilon()) > 1e-9 {
		t.Fatalf("one update's user epsilon %v, per-session %v", oneUpdate, svc.Agent().Epsilon())
	}
	testutil.EventuallyTrue(t, 10*time.Second, "gauges after the release", func() bool {
		m = scrape(t, svc.OpsAddr())
		return m["dprl_policy_version"] == 1 && m["dprl_releases"] == 1
	})
	if got := m["dprl_user_epsilon_max"]; math.Abs(got-oneUpdate) > 1e-9 {
		t.Errorf("dprl_user_epsilon_max %v, want %v", got, oneUpdate)
	}
	if got := m[`dprl_sessions_discarded_total{reason="user_update_cap"}`]; got != 1 {
		t.Errorf("user_update_cap discards %v, want 1", got)
	}
	for s := range m {
		if strings.HasPrefix(s, "dprl_sessions_discarded_total{") && !regexp.MustCompile(`reason="[a-z_]+"}$`).MatchString(s) {
			t.Errorf("free-text reason series %s", s)
		}
	}
	// A restarted agent reads the releases and the worst user from the
	// ledger; this process released nothing.
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	svc, err = StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: dir, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	m = scrape(t, svc.OpsAddr())
	if m["dprl_policy_version"] != 1 || m["dprl_releases"] != 1 || m["dprl_releases_total"] != 0 || math.Abs(m["dprl_user_epsilon_max"]-oneUpdate) > 1e-9 {
		t.Errorf("after a restart: version %v, releases %v (this process %v), worst user %v; want 1, 1, 0, %v",
			m["dprl_policy_version"], m["dprl_releases"], m["dprl_releases_total"], m["dprl_user_epsilon_max"], oneUpdate)
	}
}
