package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"dprl/internal/testutil"
	"dprl/stream"
)

// scriptedSession is one session played over NATS with fixed observations
// (so that the two runs below differ only in rewards, whatever actions the
// policy samples).
type scriptedSession struct {
	id, user string
	rewards  []float64 // one per step; the last one goes with End
}

func playScripted(t *testing.T, c *stream.Client, s scriptedSession) {
	t.Helper()
	ctx := context.Background()
	for step := range s.rewards {
		obs := []float64{0.01 * float64(step), -0.02, 0.03, 0.01 * float64(len(s.id))}
		var prev float64
		if step > 0 {
			prev = s.rewards[step-1]
		}
		if _, err := c.Act(ctx, s.id, s.user, obs, prev, step == 0); err != nil {
			t.Fatalf("act %s step %d: %v", s.id, step, err)
		}
	}
	if _, err := c.EndAs(ctx, s.id, s.user, s.rewards[len(s.rewards)-1], true); err != nil {
		t.Fatalf("end %s: %v", s.id, err)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// servedView is what the ops server serves at one moment, minus what may
// legitimately differ between two runs on the same sessions: the ledger
// hash (it covers each entry's timestamp and the released, noised policy)
// and latencies (timing).
type servedView struct {
	Status  map[string]any
	Metrics []string
}

func observe(t *testing.T, addr string) servedView {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+addr+"/status")), &st); err != nil {
		t.Fatal(err)
	}
	head, ok := st["ledger_head"].(map[string]any)
	if !ok {
		t.Fatalf("/status has no ledger_head: %v", st)
	}
	delete(head, "hash")
	var ms []string
	sc := bufio.NewScanner(strings.NewReader(httpGet(t, "http://"+addr+"/metrics")))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "dprl_") || strings.HasPrefix(line, "dprl_act_seconds_bucket") || strings.HasPrefix(line, "dprl_act_seconds_sum") {
			continue
		}
		ms = append(ms, line)
	}
	return servedView{Status: st, Metrics: ms}
}

// runObserved starts a real service (embedded NATS, Pebble ledger, ops
// server), plays the sessions one at a time over NATS and records what the
// ops server serves before and after each End (after a release, once it is
// durable: the version is public).
func runObserved(t *testing.T, sessions []scriptedSession, K int) []servedView {
	t.Helper()
	cfg := cartpoleConfig(K)
	cfg.Workers = 1
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	nc, err := stream.Connect("", stream.WithInProcess(svc.Embedded()))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := stream.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	var views []servedView
	for i, s := range sessions {
		views = append(views, observe(t, svc.OpsAddr()))
		playScripted(t, c, s)
		// The learner takes the finished session off its queue
		// asynchronously: wait for it, so that the queue gauge is polled
		// in the same state in both runs.
		testutil.EventuallyTrue(t, 20*time.Second, "the learner queue drained", func() bool { return svc.Agent().Queued() == 0 })
		if (i+1)%K == 0 {
			want := uint64((i + 1) / K)
			testutil.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("version %d", want), func() bool { return svc.Agent().Version() == want })
			// The released batch's memory is returned just after the
			// release: wait for it, so that the gauge is polled in the
			// same state in both runs (its timing, not its value,
			// varies between runs).
			testutil.EventuallyTrue(t, 20*time.Second, "the batch's session memory returned", func() bool { return svc.Agent().SessionMemory() == 0 })
		}
		views = append(views, observe(t, svc.OpsAddr()))
	}
	return views
}

// TestServedValuesIndependentOfSessionContent polls /status and /metrics of
// a real agent around every End, in two runs that differ only in the
// rewards of two sessions (one of them so large that its return overflows
// and its local update fails), and requires identical bodies: nothing served
// is a function of a session's content. (Before the fix, /status served the
// mean return of the last 100 sessions, from which polling around each End
// recovers each session's return, and a failed local update was counted,
// logged and left out of the participants.)
func TestServedValuesIndependentOfSessionContent(t *testing.T) {
	const K = 3
	base := func() []scriptedSession {
		var ss []scriptedSession
		for i := range 2 * K {
			r := make([]float64, 5+i)
			for j := range r {
				r[j] = 1
			}
			ss = append(ss, scriptedSession{id: fmt.Sprintf("s%d", i), user: fmt.Sprintf("u%d", i), rewards: r})
		}
		return ss
	}
	a, b := base(), base()
	for j := range b[1].rewards {
		b[1].rewards[j] = hugeReward
	}
	for j := range b[4].rewards {
		b[4].rewards[j] = -5 * float64(j)
	}
	va, vb := runObserved(t, a, K), runObserved(t, b, K)
	for i := range va {
		if !reflect.DeepEqual(va[i], vb[i]) {
			t.Fatalf("poll %d differs between runs whose sessions differ only in rewards:\n%+v\n%+v", i, va[i], vb[i])
		}
	}
	// The agent did release, and /status serves only public values.
	last := va[len(va)-1].Status
	if last["version"] != float64(2) {
		t.Fatalf("final status %v, want version 2", last)
	}
	var keys []string
	for k := range last {
		keys = append(keys, k)
	}
	want := []string{"build", "delta", "epsilon", "ledger_head", "next_release_epsilon", "updates", "version"}
	if !sameSet(keys, want) {
		t.Fatalf("/status fields %v, want exactly %v", keys, want)
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}
