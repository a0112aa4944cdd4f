package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"dprl/agent"
	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
	"dprl/sessionlog"
	"dprl/sims"
	"dprl/stream"
)

// startService runs a real service (embedded NATS, Pebble ledger) for a
// test; mod may adjust the service config.
func startService(t testing.TB, cfg agent.Config, mod func(*ServiceConfig)) *Service {
	t.Helper()
	sc := ServiceConfig{Agent: cfg, DataDir: t.TempDir()}
	if mod != nil {
		mod(&sc)
	}
	svc, err := StartService(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// dial opens a new NATS connection to the service (a connection of its
// own: its own inbox prefix) and a client on it.
func dial(t testing.TB, svc *Service) (*nats.Conn, *stream.Client) {
	t.Helper()
	nc, err := stream.Connect("", stream.WithInProcess(svc.Embedded()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := stream.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, c
}

func wireCode(err error) stream.Code {
	var e *stream.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestOneConnectionCannotFillTheTable: one connection opens sessions until
// refused, at its own limit, and another connection can still open
// sessions; one user likewise. (Before: one connection filled the whole
// table, then every new session from anyone got session_limit.)
func TestOneConnectionCannotFillTheTable(t *testing.T) {
	cfg := cartpoleConfig(4)
	cfg.MaxOpenSessions, cfg.MaxSessionsPerConnection, cfg.MaxSessionsPerUser = 60, 20, 5
	svc := startService(t, cfg, nil)
	ctx := context.Background()
	_, flooder := dial(t, svc)
	var opened int
	var err error
	for i := 0; i < cfg.MaxOpenSessions && err == nil; i++ {
		if _, err = flooder.Act(ctx, fmt.Sprintf("f%d", i), fmt.Sprintf("fu%d", i), obs4, 0, true); err == nil {
			opened++
		}
	}
	if opened != cfg.MaxSessionsPerConnection || wireCode(err) != stream.CodeSessionLimit || !strings.Contains(err.Error(), "connection") {
		t.Fatalf("one connection opened %d sessions, then %v; want %d, then session_limit for the connection", opened, err, cfg.MaxSessionsPerConnection)
	}
	_, other := dial(t, svc)
	for i := 0; i < cfg.MaxSessionsPerUser; i++ {
		if _, err := other.Act(ctx, fmt.Sprintf("b%d", i), "bob", obs4, 0, true); err != nil {
			t.Fatalf("another connection, session %d: %v", i, err)
		}
	}
	// One user is bounded too, whatever the connection.
	if _, err := other.Act(ctx, "b-extra", "bob", obs4, 0, true); wireCode(err) != stream.CodeSessionLimit || !strings.Contains(err.Error(), "user") {
		t.Fatalf("bob's session over the per-user limit: %v", err)
	}
	if _, err := other.Act(ctx, "c0", "carol", obs4, 0, true); err != nil {
		t.Fatalf("carol: %v", err)
	}
	// A closed session frees its place.
	if err := flooder.End(ctx, "f0", 1, true); err != nil {
		t.Fatal(err)
	}
	if _, err := flooder.Act(ctx, "f-again", "fu-again", obs4, 0, true); err != nil {
		t.Fatalf("after an end: %v", err)
	}
	m := svc.Agent().Metrics()
	if got := testutil.MetricValue(t, m.AdmissionRefused.WithLabelValues("connection")); got != 1 {
		t.Errorf("refusals by the connection limit: %v, want 1", got)
	}
	if got := testutil.MetricValue(t, m.AdmissionRefused.WithLabelValues("user")); got != 1 {
		t.Errorf("refusals by the user limit: %v, want 1", got)
	}
	if got := testutil.MetricValue(t, m.ActErrors.WithLabelValues("session_limit")); got != 2 {
		t.Errorf("session_limit replies counted: %v, want 2", got)
	}
}

// TestTrickleCannotKeepSessionsAlive: sessions that each send one act per
// fraction of the idle timeout are closed once they reach the session
// lifetime. (Before: 1,000 sessions kept alive by one act per minute
// survived the idle sweep for ever.)
func TestTrickleCannotKeepSessionsAlive(t *testing.T) {
	cfg := cartpoleConfig(4)
	cfg.IdleTimeout, cfg.MaxSessionLifetime = 300*time.Millisecond, time.Second
	svc := startService(t, cfg, nil)
	ctx := context.Background()
	_, c := dial(t, svc)
	const n = 50
	opened := time.Now()
	for i := range n {
		if _, err := c.Act(ctx, fmt.Sprintf("t%d", i), fmt.Sprintf("tu%d", i), obs4, 0, true); err != nil {
			t.Fatal(err)
		}
	}
	alive := make([]bool, n)
	for i := range alive {
		alive[i] = true
	}
	var lastAlive time.Duration
	for left := n; left > 0; {
		if time.Since(opened) > 5*time.Second {
			t.Fatalf("%d trickled sessions still open after %v (lifetime %v)", left, time.Since(opened), cfg.MaxSessionLifetime)
		}
		time.Sleep(cfg.IdleTimeout / 3)
		for i := range n {
			if !alive[i] {
				continue
			}
			_, err := c.Act(ctx, fmt.Sprintf("t%d", i), fmt.Sprintf("tu%d", i), obs4, 1, false)
			switch {
			case err == nil:
				lastAlive = time.Since(opened)
			case wireCode(err) == stream.CodeUnknownSession:
				alive[i] = false
				left--
			default:
				t.Fatal(err)
			}
		}
	}
	// The trickle did keep them past the idle timeout: the lifetime closed them.
	if lastAlive < 2*cfg.IdleTimeout {
		t.Errorf("sessions last seen alive %v after opening, want well past the idle timeout %v", lastAlive, cfg.IdleTimeout)
	}
	if got := testutil.MetricValue(t, svc.Agent().Metrics().SessionsExpired); got != n {
		t.Errorf("closed by the lifetime bound: %v, want %d", got, n)
	}
}

// TestNoReplyRequestsAreCountedNotLogged: act requests without a reply
// subject open no session and write no log line each; they are counted.
// (Before: 5,000 such requests opened 5,000 sessions and wrote 5,000
// warning lines.)
func TestNoReplyRequestsAreCountedNotLogged(t *testing.T) {
	var logs testutil.LockedBuffer
	svc := startService(t, cartpoleConfig(4), func(sc *ServiceConfig) { sc.Logger = zerolog.New(&logs) })
	nc, _ := dial(t, svc)
	before := logs.Lines()
	const acts, ends = 5000, 200
	for i := range acts {
		b, _ := stream.AppendActRequest(nil, stream.ActRequest{Session: fmt.Sprintf("q%d", i), User: fmt.Sprintf("qu%d", i), Obs: obs4})
		if err := nc.Publish("dprl.v1.act", b); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ends {
		b := []byte(fmt.Sprintf(`{"session":"q%d","reward":1,"terminal":true}`, i))
		if i%2 == 1 {
			b = []byte(`{"session":`) // malformed
		}
		if err := nc.Publish("dprl.v1.end", b); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	m := svc.Agent().Metrics()
	testutil.EventuallyTrue(t, 20*time.Second, "requests counted", func() bool {
		return testutil.MetricValue(t, m.NoReply.WithLabelValues("act")) == acts && testutil.MetricValue(t, m.NoReply.WithLabelValues("end")) == ends
	})
	if got := testutil.MetricValue(t, m.SessionsOpened); got != 0 {
		t.Errorf("%v sessions opened by requests whose replies nobody receives", got)
	}
	if got := logs.Lines() - before; got > stream.LogBurst {
		t.Errorf("%d log lines for %d requests without a reply subject, want at most %d", got, acts+ends, stream.LogBurst)
	}
	// Ends without a reply are still handled; their errors are counted.
	if got := testutil.MetricValue(t, m.EndErrors.WithLabelValues("unknown_session")) + testutil.MetricValue(t, m.EndErrors.WithLabelValues("bad_request")); got != ends {
		t.Errorf("end errors counted %v, want %d", got, ends)
	}
}

// TestSessionsBoundToUser: a session is reachable only with the user id
// that opened it: another user's act or end gets exactly the reply a
// session that never existed gets, and may even open its own session of
// the same id, which leaves the first untouched. An end naming no user
// (protocol v1) reaches a user's session only from the connection that
// opened it. (Before: anyone who knew a session's id could continue or end
// it, and the refusal told that the session existed.)
func TestSessionsBoundToUser(t *testing.T) {
	svc := startService(t, cartpoleConfig(8), nil)
	ctx := context.Background()
	_, alice := dial(t, svc)
	_, mallory := dial(t, svc)
	if _, err := alice.Act(ctx, "s1", "alice", obs4, 0, true); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Act(ctx, "s1", "alice", obs4, 1, false); err != nil {
		t.Fatal(err)
	}
	// What a stranger sees of a session that never existed...
	_, ghostAct := mallory.Act(ctx, "s9", "mallory", obs4, 1, false)
	_, ghostEnd := mallory.EndAs(ctx, "s9", "mallory", 1, true)
	ghostEndV1 := mallory.End(ctx, "s9", 1, true)
	// ...is what it sees of alice's.
	_, actErr := mallory.Act(ctx, "s1", "mallory", obs4, 1, false)
	_, endErr := mallory.EndAs(ctx, "s1", "mallory", 1, true)
	endV1Err := mallory.End(ctx, "s1", 1, true)              // no user, another connection
	_, anonErr := mallory.Act(ctx, "s1", "", obs4, 1, false) // no user on act
	for _, c := range []struct {
		name       string
		got, ghost error
	}{{"act as another user", actErr, ghostAct}, {"end as another user", endErr, ghostEnd},
		{"end without user from another connection", endV1Err, ghostEndV1}, {"anonymous act", anonErr, ghostAct}} {
		if wireCode(c.got) != stream.CodeUnknownSession || strings.ReplaceAll(c.got.Error(), `"s1"`, `"s9"`) != c.ghost.Error() {
			t.Errorf("%s: %v; want exactly what a session that never existed gets: %v", c.name, c.got, c.ghost)
		}
	}
	// Mallory can open a session of the same id: her own.
	rep, err := mallory.Act(ctx, "s1", "mallory", obs4, 0, true)
	if err != nil {
		t.Fatalf("mallory's own s1: %+v %v", rep, err)
	}
	if r, err := mallory.EndAs(ctx, "s1", "mallory", 1, true); err != nil || !r.OK {
		t.Fatalf("mallory ends her s1: %+v %v", r, err)
	}
	// Alice's session went on untouched: its third step, then her end
	// without a user id from her own connection (protocol v1 clients).
	if r, err := alice.Act(ctx, "s1", "alice", obs4, 1, false); err != nil {
		t.Fatalf("alice's third step: %+v %v", r, err)
	}
	if r, err := alice.EndDetail(ctx, "s1", 1, true); err != nil || !r.OK {
		t.Fatalf("alice's v1 end: %+v %v", r, err)
	}
	// Anonymous sessions are reachable by id alone (the id is their secret),
	// but not with a user id.
	if _, err := alice.Act(ctx, "anon", "", obs4, 0, true); err != nil {
		t.Fatal(err)
	}
	if _, err := mallory.Act(ctx, "anon", "mallory", obs4, 1, false); wireCode(err) != stream.CodeUnknownSession {
		t.Errorf("anonymous session continued with a user id: %v", err)
	}
	if _, err := alice.EndAs(ctx, "anon", "", 1, true); err != nil {
		t.Fatal(err)
	}
}

// floodRun is what one run of the flood experiment measured.
type floodRun struct {
	legitUsed    int    // legitimate sessions taking part in a release (from the ledger)
	releases     uint64 // releases during the run
	floodEnded   int    // flood sessions ended
	floodRefused int    // flood acts refused (session limits)
	seconds      float64
}

// runFloodExperiment plays legitN legitimate sessions (distinct users, 16
// at a time as dprl replay, CartPole episodes of at most 20 steps, 2 ms
// between steps: the users' pace) over one connection. With floodN > 0, a
// flood of one user's one-step sessions (act, then end; 8 at a time, as
// fast as the agent answers) runs over another connection from before the
// replay starts until floodN flood sessions ended and the replay is done.
// It returns once every finished session was released or set aside.
func runFloodExperiment(t *testing.T, cfg agent.Config, floodN, legitN int) floodRun {
	t.Helper()
	svc := startService(t, cfg, nil)
	ctx := context.Background()
	_, legitC := dial(t, svc)
	_, floodC := dial(t, svc)
	var (
		res        floodRun
		floodEnded atomic.Int64
		refused    atomic.Int64
		legitDone  atomic.Bool
		wg         sync.WaitGroup
	)
	start := time.Now()
	if floodN > 0 {
		var next atomic.Int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if int(i) > floodN && legitDone.Load() {
						return
					}
					id := fmt.Sprintf("flood-%d", i)
					if _, err := floodC.Act(ctx, id, "flood", obs4, 0, true); err != nil {
						if wireCode(err) != stream.CodeSessionLimit {
							t.Errorf("flood act: %v", err)
							return
						}
						refused.Add(1)
						continue
					}
					if _, err := floodC.EndAs(ctx, id, "flood", 1, true); err != nil {
						t.Errorf("flood end: %v", err)
						return
					}
					floodEnded.Add(1)
				}
			}()
		}
		// The flood is under way before the replay starts.
		testutil.EventuallyTrue(t, 20*time.Second, "the flood", func() bool { return floodEnded.Load() >= int64(min(200, floodN)) })
	}
	var next atomic.Int64
	var lw sync.WaitGroup
	for w := range 16 {
		lw.Add(1)
		go func() {
			defer lw.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 77))
			env := sims.NewCartPole()
			o := make([]float64, 4)
			for i := int(next.Add(1)); i <= legitN; i = int(next.Add(1)) {
				id, user := fmt.Sprintf("legit-%d", i), fmt.Sprintf("legit-user-%d", i)
				env.Reset(rng, o)
				var reward float64
				for step := 0; ; step++ {
					act, err := legitC.Act(ctx, id, user, o, reward, step == 0)
					if err != nil {
						t.Errorf("legit act %s: %v", id, err)
						return
					}
					time.Sleep(2 * time.Millisecond) // the user's pace
					r, term, trunc := env.Step(act, o)
					if term || trunc || step == 19 {
						if _, err := legitC.EndAs(ctx, id, user, r, term); err != nil {
							t.Errorf("legit end %s: %v", id, err)
						}
						break
					}
					reward = r
				}
			}
		}()
	}
	lw.Wait()
	legitDone.Store(true)
	wg.Wait()
	res.floodEnded, res.floodRefused = int(floodEnded.Load()), int(refused.Load())
	// Let the last partial batch go out (FlushTimeout), then read.
	a := svc.Agent()
	testutil.EventuallyTrue(t, 20*time.Second, "learner queue drained", func() bool { return a.Queued() == 0 })
	time.Sleep(cfg.FlushTimeout + 3*max(cfg.FlushTimeout/4, 10*time.Millisecond))
	res.seconds = time.Since(start).Seconds()
	res.releases = a.Version()
	st := svc.Store()
	for i := 1; i <= legitN; i++ {
		us, err := st.UserState(st.User(fmt.Sprintf("legit-user-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		res.legitUsed += us.Updates
	}
	return res
}

// TestOneUserFloodDoesNotStarveLearning: a one-user flood of sessions
// running for the whole of a legitimate replay leaves the replay within 20%
// of the sessions learned from, and of the releases, that the same replay
// gets alone (K = 32, as dprl agent --env cartpole). At least 5,000
// flood sessions (2,000 under the race detector; the flood runs as long as
// the replay); DPRL_LONG=1 runs the 50,000 with a replay ten times
// longer. (Before: the learner rescanned every pending session on each
// finished one and took at most one per user, so the flood's sessions
// piled up, the updater fell behind and the legitimate sessions were
// dropped as "learner queue full": on this test, 5 releases instead of 9,
// and 110 legitimate sessions learned from instead of 288.)
func TestOneUserFloodDoesNotStarveLearning(t *testing.T) {
	floodN, legitN := 5000, 288
	if raceEnabled {
		floodN = 2000
	}
	if os.Getenv("DPRL_LONG") != "" {
		floodN, legitN = 50000, 2880
	}
	cfg := cartpoleConfig(32)
	cfg.Policy.PPO.Hidden = []int{16, 16} // the deployed CartPole size
	// Long enough that batches fill rather than flush while the replay
	// runs, also on a loaded machine (a flushed partial batch is one more
	// version, which makes sessions in flight stale); short enough to
	// release the last partial batch quickly.
	cfg.FlushTimeout = time.Second
	flood := runFloodExperiment(t, cfg, floodN, legitN)
	alone := runFloodExperiment(t, cfg, 0, legitN)
	t.Logf("legitimate replay of %d sessions (K = %d): alone %d releases, %d sessions learned from (%.1f s); during a one-user flood of %d sessions (%d refused at the per-user limit): %d releases, %d sessions learned from (%.1f s)",
		legitN, cfg.Policy.DP.UsersPerUpdate, alone.releases, alone.legitUsed, alone.seconds, flood.floodEnded, flood.floodRefused, flood.releases, flood.legitUsed, flood.seconds)
	if flood.floodEnded < floodN {
		t.Fatalf("the flood did not run: %+v", flood)
	}
	if float64(flood.legitUsed) < 0.8*float64(alone.legitUsed) {
		t.Errorf("legitimate sessions learned from during the flood %d, alone %d: below 80%%", flood.legitUsed, alone.legitUsed)
	}
	if float64(flood.releases) < 0.8*float64(alone.releases) {
		t.Errorf("releases during the flood %d, alone %d: below 80%%", flood.releases, alone.releases)
	}
}

// TestMemoryBudget: the bytes charged for sessions never pass the budget:
// past it new sessions are refused with memory_limit, a session that needs
// more storage is closed as truncated with memory_limit, and every byte
// comes back once the sessions are closed and the learner is done with
// them. (Before: nothing bounded the steps held: ~90 bytes per step, and
// the default limits allowed 100,000 sessions x 10,000 steps.)
func TestMemoryBudget(t *testing.T) {
	cfg := cartpoleConfig(1 << 9)    // 512 of the smallest sessions fit the budget (Config.Validate)
	cfg.Policy.PPO.Hidden = []int{8} // a cheap learner: the test is about storage
	cfg.SessionMemoryBytes = 1 << 20 // the smallest budget Config.Validate accepts
	cfg.MaxSessionsPerConnection = cfg.MaxOpenSessions
	cfg.FlushTimeout = 100 * time.Millisecond
	svc := startService(t, cfg, nil)
	a := svc.Agent()
	ctx := context.Background()
	_, c := dial(t, svc)
	// One long session: 64 steps of storage.
	for step := range 64 {
		if _, err := c.Act(ctx, "long", "lu", obs4, 1, step == 0); err != nil {
			t.Fatal(err)
		}
	}
	// Sessions until the budget refuses one.
	var n int
	for ; ; n++ {
		_, err := c.Act(ctx, fmt.Sprintf("m%d", n), fmt.Sprintf("mu%d", n), obs4, 0, true)
		if err != nil {
			if wireCode(err) != stream.CodeMemoryLimit {
				t.Fatalf("session %d: %v, want memory_limit", n, err)
			}
			break
		}
		if a.SessionMemory() > cfg.SessionMemoryBytes {
			t.Fatalf("charged %d bytes > budget %d", a.SessionMemory(), cfg.SessionMemoryBytes)
		}
	}
	perSession := float64(cfg.SessionMemoryBytes) / float64(n)
	t.Logf("%d sessions of one step in a %d-byte budget: %.0f bytes each", n, cfg.SessionMemoryBytes, perSession)
	if n < 100 || n > 10000 {
		t.Errorf("%d sessions fit in %d bytes", n, cfg.SessionMemoryBytes)
	}
	// The long session cannot grow: closed as truncated at its next step.
	if _, err := c.Act(ctx, "long", "lu", obs4, 1, false); wireCode(err) != stream.CodeMemoryLimit {
		t.Fatalf("growing past the budget: %v, want memory_limit", err)
	}
	if _, err := c.Act(ctx, "long", "lu", obs4, 1, false); wireCode(err) != stream.CodeUnknownSession {
		t.Fatalf("after memory_limit: %v, want the session closed", err)
	}
	if got := testutil.MetricValue(t, a.Metrics().SessionMemory); got > float64(cfg.SessionMemoryBytes) || int64(got) != a.SessionMemory() {
		t.Errorf("memory gauge %v, charged %d, budget %d", got, a.SessionMemory(), cfg.SessionMemoryBytes)
	}
	// Close everything: the bytes come back when the learner is done.
	for i := range n {
		if _, err := c.EndAs(ctx, fmt.Sprintf("m%d", i), fmt.Sprintf("mu%d", i), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	testutil.EventuallyTrue(t, 20*time.Second, "memory returned", func() bool { return a.SessionMemory() == 0 })
	if _, err := c.Act(ctx, "after", "au", obs4, 0, true); err != nil {
		t.Fatalf("after the budget came back: %v", err)
	}
}

// TestRewardClipping: a finite but extreme reward (1.8e308) is clipped to
// the public bound on arrival: the session log holds the bound, /status
// serves its JSON, the release is finite. (Before: rewards were never
// bounded; two such rewards overflowed a return to +Inf.)
func TestRewardClipping(t *testing.T) {
	cfg := cartpoleConfig(1)
	cfg.RewardLow, cfg.RewardHigh = -2, 3
	logDir := t.TempDir()
	svc := startService(t, cfg, func(sc *ServiceConfig) { sc.SessionLogDir, sc.HTTPAddr = logDir, "127.0.0.1:0" })
	ctx := context.Background()
	_, c := dial(t, svc)
	const huge = math.MaxFloat64 // ~1.8e308, finite: two of them overflow a sum
	rewards := []float64{huge, huge, -huge, huge}
	for step := 0; step <= len(rewards)-1; step++ {
		prev := 0.0
		if step > 0 {
			prev = rewards[step-1]
		}
		if _, err := c.Act(ctx, "h", "hu", obs4, prev, step == 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.EndAs(ctx, "h", "hu", rewards[len(rewards)-1], true); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyTrue(t, 20*time.Second, "release", func() bool { return svc.Agent().Version() == 1 })
	if body := httpGet(t, "http://"+svc.OpsAddr()+"/status"); !strings.Contains(body, `"version": 1`) {
		t.Fatalf("/status: %q", body)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	ss := agenttest.LoggedSessions(t, logDir, sessionlog.Spec{ObsDim: 4, Discrete: 2})
	if len(ss) == 0 {
		t.Fatal("no session logged")
	}
	s := ss[0]
	var got []float64
	for _, st := range s.Steps {
		got = append(got, st.Reward)
	}
	if want := []float64{3, 3, -2, 3}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("logged rewards %v, want %v (clipped to [%v, %v])", got, want, cfg.RewardLow, cfg.RewardHigh)
	}
}

// TestErrorRepliesCounted: every coded error reply is counted in /metrics
// by code, decoding failures and end errors included. (Before: of 68 coded
// replies, 4 were counted: only the act errors the agent itself returned.)
func TestErrorRepliesCounted(t *testing.T) {
	svc := startService(t, cartpoleConfig(4), nil)
	nc, _ := dial(t, svc)
	requests := []struct{ subj, body string }{
		{"act", `{`},
		{"act", `{"session":"x","obs":[1,2]}`},
		{"act", `{"session":"x","obs":[1,2,3,4],"bogus":1}`},
		{"act", `{"session":"x","obs":[1,2,3,1e999]}`},
		{"act", `{"session":"x","user":"","obs":[1,2,3,4]}`},
		{"act", `{"session":"nope","obs":[1,2,3,4],"reward":1}`},
		{"act", `{"session":"y","obs":[1,2,3,4]}`},
		{"act", `{"session":"y","obs":[1,2,3,4]}`}, // continues without a reward
		{"end", `{"session":"x"}`},
		{"end", `{"session":"x","reward":"1","terminal":true}`},
		{"end", `{"session":"nope","reward":1,"terminal":true}`},
		{"end", `{"session":"y","user":"other","reward":1,"terminal":true}`},
		{"end", `{"session":"y","reward":1,"terminal":true}`}, // ok
	}
	want := map[string]map[stream.Code]float64{"act": {}, "end": {}}
	for _, r := range requests {
		m, err := nc.Request("dprl.v1."+r.subj, []byte(r.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var code stream.Code
		if r.subj == "act" {
			_, err = stream.DecodeActReply(m.Data)
		} else {
			_, err = stream.DecodeEndReply(m.Data)
		}
		if code = wireCode(err); code != "" {
			want[r.subj][code]++
		}
	}
	m := svc.Agent().Metrics()
	total := 0.0
	for subj, codes := range want {
		vec := m.ActErrors
		if subj == "end" {
			vec = m.EndErrors
		}
		for _, code := range stream.Codes() {
			got := testutil.MetricValue(t, vec.WithLabelValues(string(code)))
			if got != codes[code] {
				t.Errorf("%s errors %s: counted %v, replied %v", subj, code, got, codes[code])
			}
			total += codes[code]
		}
	}
	if total != float64(len(requests)-2) {
		t.Errorf("%v error replies, want %d", total, len(requests)-2)
	}
}
