package service

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"dprl/internal/browsertest"
	"dprl/internal/testutil"
	"dprl/stream"
)

// startRole runs a cluster role's service on the JetStream server url,
// with an ops server.
func startRole(t *testing.T, url, role, holder string) *Service {
	t.Helper()
	key := []byte(strings.Repeat("ab", 16))
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(2), DataDir: t.TempDir(), NATS: url, HTTPAddr: "127.0.0.1:0",
		Cluster: &Cluster{Role: role, Name: "t", Replicas: 1, Holder: holder, LeaseTTL: time.Second, UserKey: key, Partitions: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// getStatus reads a running service's /status.
func getStatus(t *testing.T, svc *Service) Status {
	t.Helper()
	var st Status
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+svc.OpsAddr()+"/status")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestClusterStatusAndPage runs a learner and a serving replica on one
// JetStream server (4 session partitions), and a role-all agent beside
// them. /status: the learner holds the lease, names itself as holder and
// follows the log to its writer entry (position 1); the replica follows
// it too and serves all 4 partitions; role all has no cluster object.
// /metrics: each role registers its own cluster series and not the other
// role's, role all none. The status page has a Cluster section with the
// role's fields for a role, none for role all; in headless Chromium
// (skipped without one) the panel is laid out with its text, and no text
// of the page is clipped or overlaps (browsertest.Layout).
func TestClusterStatusAndPage(t *testing.T) {
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, Partitions: 4, JetStream: &stream.JetStreamOptions{StoreDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	learner := startRole(t, ns.ClientURL(), RoleLearn, "learner-1")
	replica := startRole(t, ns.ClientURL(), RoleServe, "replica-1")
	all := startService(t, cartpoleConfig(2), func(sc *ServiceConfig) { sc.HTTPAddr = "127.0.0.1:0" })

	testutil.EventuallyTrue(t, 20*time.Second, "the learner holds the lease", func() bool {
		c := getStatus(t, learner).Cluster
		return c != nil && c.LeaseHeld != nil && *c.LeaseHeld && c.LogSeq == 1
	})
	testutil.EventuallyTrue(t, 20*time.Second, "the replica serves 4 partitions at log position 1", func() bool {
		c := getStatus(t, replica).Cluster
		return c != nil && len(c.Partitions) == 4 && c.LogSeq == 1
	})
	// Ready at the end of the tick that took the partitions (settled:
	// every partition held, this replica within its share).
	testutil.EventuallyTrue(t, 5*time.Second, "the replica serving 4 partitions is ready", func() bool { return replica.partitionsServed() == nil })
	if c := getStatus(t, learner).Cluster; c.Role != RoleLearn || c.Name != "t" || c.Holder != "learner-1" || c.LeaseHolder != "learner-1" || c.Partitions != nil {
		t.Errorf("learner's cluster status %+v", c)
	}
	if c := getStatus(t, replica).Cluster; c.Role != RoleServe || c.PartitionCount != 4 || c.LeaseHeld != nil || c.Holder != "" {
		t.Errorf("replica's cluster status %+v", c)
	}
	if st := getStatus(t, all); st.Cluster != nil {
		t.Errorf("role all has a cluster status %+v", st.Cluster)
	}

	for _, tc := range []struct {
		svc       *Service
		want      map[string]float64
		forbidden []string
	}{
		{learner, map[string]float64{"dprl_cluster_lease_held": 1, "dprl_cluster_lease_acquisitions_total": 1, "dprl_cluster_log_seq": 1,
			`dprl_cluster_updates_dropped_total{reason="malformed"}`: 0, "dprl_cluster_appends_fenced_total": 0},
			[]string{"dprl_cluster_partitions_served", "dprl_cluster_updates_published_total"}},
		{replica, map[string]float64{"dprl_cluster_partitions_served": 4, "dprl_cluster_partitions_taken_total": 4, "dprl_cluster_log_seq": 1,
			`dprl_cluster_partitions_released_total{reason="lost"}`: 0, "dprl_cluster_updates_published_total": 0},
			[]string{"dprl_cluster_lease_held", "dprl_cluster_updates_consumed_total"}},
		{all, nil, []string{"dprl_cluster_log_seq", "dprl_cluster_lease_held", "dprl_cluster_partitions_served"}},
	} {
		m := scrape(t, tc.svc.OpsAddr())
		for k, v := range tc.want {
			if got, ok := m[k]; !ok || got != v {
				t.Errorf("%s: %s = %v (present %v), want %v", tc.svc.OpsAddr(), k, got, ok, v)
			}
		}
		for _, k := range tc.forbidden {
			if _, ok := m[k]; ok {
				t.Errorf("%s serves %s, a metric of another role", tc.svc.OpsAddr(), k)
			}
		}
	}

	page, _ := getPage(t, learner.OpsAddr())
	for _, want := range []string{`<section id="cluster">`, `id="cluster-role"`, "learn (a learner candidate)", "learner-1", "yes: the writer", "log position followed"} {
		if !strings.Contains(page, want) {
			t.Errorf("the learner's page lacks %q", want)
		}
	}
	page, _ = getPage(t, replica.OpsAddr())
	for _, want := range []string{`<section id="cluster">`, "serve (a serving replica)", "4 of 4: 0, 1, 2, 3"} {
		if !strings.Contains(page, want) {
			t.Errorf("the replica's page lacks %q", want)
		}
	}
	if page, _ = getPage(t, all.OpsAddr()); strings.Contains(page, `id="cluster`) {
		t.Error("role all's page has a cluster panel")
	}

	bin := browsertest.Path()
	if bin == "" {
		t.Skip("no chromium binary found (apt-get install chromium): the cluster panel is not checked in a browser")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
	defer tcancel()
	for _, tc := range []struct {
		svc  *Service
		want []string // the panel's text; nil: no panel
	}{
		{learner, []string{"Cluster", "role", "learn (a learner candidate)", "holds the writer lease", "yes: the writer", "learner-1", "log position followed"}},
		{replica, []string{"Cluster", "serve (a serving replica)", "partitions served", "4 of 4"}},
		{all, nil},
	} {
		if err := chromedp.Do(tctx, chromedp.Navigate("http://"+tc.svc.OpsAddr()+"/")); err != nil {
			t.Fatal(err)
		}
		type panel struct {
			Found bool    `json:"found"`
			Text  string  `json:"text"`
			Area  float64 `json:"area"`
		}
		p, err := chromedp.Run(tctx, chromedp.Evaluate[panel](`(() => { const s = document.querySelector("section#cluster");
			if (!s) return {found: false, text: "", area: 0};
			const r = s.getBoundingClientRect(); return {found: true, text: s.innerText, area: r.width * r.height}; })()`))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.want == nil && p.Found:
			t.Errorf("role all's page shows a cluster section: %q", p.Text)
		case tc.want != nil && (!p.Found || p.Area < 1000):
			t.Errorf("%s: cluster section found %v, area %v", tc.svc.OpsAddr(), p.Found, p.Area)
		}
		for _, w := range tc.want {
			if !strings.Contains(p.Text, w) {
				t.Errorf("%s: the cluster panel's text %q lacks %q", tc.svc.OpsAddr(), p.Text, w)
			}
		}
		problems, err := browsertest.Layout(tctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: layout: %s", tc.svc.OpsAddr(), p)
		}
	}
	// A replica whose partitioner stopped serves no partition: not ready.
	for _, p := range replica.policies {
		if p.stopParts != nil {
			p.stopParts()
			p.stopParts = nil
		}
	}
	if err := replica.partitionsServed(); err == nil {
		t.Error("a replica serving no partition is ready")
	}
}

// TestReplicasReadyAreSettled starts two serving replicas at once beside a
// learner (16 partitions, the default) and waits until both answer
// /readyz. From then on no partition may move: together they serve each
// of the 16 once, and the sets stay the same over two lease TTLs. (Before,
// a replica that counted the members before the other had joined took
// more than its share, said it was ready, and gave the extra partitions
// up at its next tick, so sessions already running there got "no
// responders": the cluster example in docs/agent.md failed this way.)
func TestReplicasReadyAreSettled(t *testing.T) {
	for round := range 3 {
		ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, Partitions: DefaultPartitions, JetStream: &stream.JetStreamOptions{StoreDir: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		start := func(role, holder string) *Service {
			svc, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(2), DataDir: t.TempDir(), NATS: ns.ClientURL(), HTTPAddr: "127.0.0.1:0",
				Cluster: &Cluster{Role: role, Name: "t", Replicas: 1, Holder: holder, LeaseTTL: time.Second, UserKey: []byte(strings.Repeat("ab", 16)), Partitions: DefaultPartitions}})
			if err != nil {
				t.Error(err)
			}
			return svc
		}
		learner := start(RoleLearn, "learner")
		var replicas [2]*Service
		done := make(chan struct{})
		for i := range replicas {
			go func() { replicas[i] = start(RoleServe, fmt.Sprintf("replica-%d", i)); done <- struct{}{} }()
		}
		<-done
		<-done
		if t.Failed() {
			t.FailNow()
		}
		testutil.EventuallyTrue(t, 20*time.Second, "both replicas ready", func() bool {
			return replicas[0].partitionsServed() == nil && replicas[1].partitionsServed() == nil
		})
		served := func() [2][]int {
			var s [2][]int
			for i, r := range replicas {
				s[i] = r.policies[0].srv.ServedPartitions()
				slices.Sort(s[i])
			}
			return s
		}
		first := served()
		all := slices.Concat(first[0], first[1])
		slices.Sort(all)
		if len(all) != DefaultPartitions || len(slices.Compact(all)) != DefaultPartitions {
			t.Errorf("round %d: once both are ready the replicas serve %v and %v, not each of %d partitions once", round, first[0], first[1], DefaultPartitions)
		}
		time.Sleep(2 * time.Second)
		if now := served(); !slices.Equal(now[0], first[0]) || !slices.Equal(now[1], first[1]) {
			t.Errorf("round %d: partitions moved after both replicas were ready: %v and %v, then %v and %v", round, first[0], first[1], now[0], now[1])
		}
		for _, s := range []*Service{replicas[0], replicas[1], learner} {
			s.Close()
		}
		ns.Shutdown()
	}
}
