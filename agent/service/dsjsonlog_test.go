package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"dprl/agent"
	"dprl/sessionlog"
	"dprl/sessionlog/dsjson"
	"dprl/sims"
)

// recordingLog passes every session to log and keeps a copy of what it
// was given: the agent's own records, before any encoding.
type recordingLog struct {
	log agent.SessionLog
	mu  sync.Mutex
	got []sessionlog.Session
}

func (r *recordingLog) Write(s *sessionlog.Session) error {
	r.mu.Lock()
	r.got = append(r.got, *s)
	r.mu.Unlock()
	return r.log.Write(s)
}

// readDSJSONLog reads the decisions of every file of a DSJSON session log
// with the strict reader (SharedOnly: the per-action features are not
// obs), in file order.
func readDSJSONLog(t *testing.T, dir string) []sessionlog.Session {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []sessionlog.Session
	for _, e := range entries {
		f, err := os.Open(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		rd := dsjson.NewReader(f, dsjson.ReaderOptions{Name: e.Name(), SharedOnly: true})
		for {
			s, err := rd.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		f.Close()
	}
	return out
}

// TestDSJSONSessionLogRoundTrip: dprl agent --env bandit --log-sessions
// DIR --session-log-format dsjson (its settings, through ServiceConfig),
// a real embedded NATS server and Pebble ledger, the bandit simulator's
// users through stream.Client. The log's files are DSJSON that
// dsjson.Reader reads back as exactly the sessions the agent logged
// (id, observation, action, reward, probability, terminal; the user id
// and policy version have no DSJSON field), one per session the users
// ran, each with the reward the user got; nothing was dropped.
func TestDSJSONSessionLogRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := Settings{DataDir: t.TempDir(), EnvSpec: "bandit", Delta: 1e-5, K: 16, Seed: 3,
		MaxOpenSessions: 1000, MaxStepsPerSession: 10, IdleTimeout: time.Minute, FlushTimeout: time.Minute,
		MaxSessionLifetime: time.Hour, MaxSessionsPerUser: 16, MaxSessionsPerConnection: 1000, MaxQueuedPerUser: 2,
		SessionMemoryMiB: 64, RewardLow: math.NaN(), RewardHigh: math.NaN(), NATS: "embedded", Prefix: "dprl", HTTPAddr: "127.0.0.1:0",
		SessionLogDir: dir, SessionLogFormat: SessionLogDSJSON}
	sc, err := s.ServiceConfig()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingLog{}
	sc.agentOptions = func(o *agent.Options) { rec.log, o.SessionLog = o.SessionLog, rec }
	svc, err := StartService(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	_, c := dial(t, svc)
	const n = 120
	pop, err := sims.NewPopulation(sims.PopulationConfig{NewEnv: func() sims.Env { e, _ := sims.New("bandit"); return e }, Sessions: n, Workers: 4, ReturnProb: 0.3, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	results := map[string]sims.SessionResult{}
	if err := pop.Run(context.Background(), c, func(r sims.SessionResult) { mu.Lock(); results[r.Session] = r; mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	svc.Agent().CloseSessionLog() // every queued session written (or dropped)
	m := scrape(t, svc.OpsAddr())
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"queue_full", "write_failed", "closed", "unsupported"} {
		if v := m[fmt.Sprintf(`dprl_session_log_dropped_total{reason=%q}`, r)]; v != 0 {
			t.Errorf("%v sessions dropped from the log (%s)", v, r)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if ext := e.Name()[len(e.Name())-len(dsjson.LogExt):]; ext != dsjson.LogExt {
			t.Errorf("log file %s", e.Name())
		}
	}
	got := readDSJSONLog(t, dir)
	if len(got) > 0 {
		t.Logf("%d files; first decision read back: %+v", len(entries), got[0])
	}
	if len(got) != n || len(rec.got) != n || len(results) != n {
		t.Fatalf("%d decisions read back, %d logged, %d sessions run; want %d", len(got), len(rec.got), len(results), n)
	}
	for i := range got {
		g, w := got[i], rec.got[i]
		w.User, w.PolicyVersion = "", nil
		if g.Session != w.Session || !g.Terminal || !w.Terminal || len(g.Steps) != 1 || len(w.Steps) != 1 || g.FinalObs != nil || w.FinalObs != nil {
			t.Fatalf("decision %d: read %+v, logged %+v", i, g, w)
		}
		gs, ws := g.Steps[0], w.Steps[0]
		if !slices.Equal(gs.Obs, ws.Obs) || len(gs.Obs) != 8 || gs.Action.Index != ws.Action.Index || gs.Action.Vec != nil || gs.Reward != ws.Reward || gs.NoProb || ws.NoProb ||
			math.Abs(gs.LogP-ws.LogP) > 1e-12*math.Max(1, -ws.LogP) {
			t.Fatalf("decision %d: read %+v, logged %+v", i, gs, ws)
		}
		if r, ok := results[g.Session]; !ok || r.Return != gs.Reward || r.Length != 1 {
			t.Errorf("decision %s: reward %v, the user's session %+v", g.Session, gs.Reward, r)
		}
	}
}

// TestDSJSONSessionLogDrops: an agent without a simulator (--obs-dim,
// --actions) logging DSJSON writes its one-step terminal sessions and
// drops, counting them on /metrics as "unsupported", a two-step session
// and one the client ended without terminating; the agent and the log go
// on (the next decision is written).
func TestDSJSONSessionLogDrops(t *testing.T) {
	dir := t.TempDir()
	cfg := cartpoleConfig(64)
	svc := startService(t, cfg, func(sc *ServiceConfig) {
		sc.SessionLogDir, sc.SessionLogFormat, sc.HTTPAddr = dir, SessionLogDSJSON, "127.0.0.1:0"
	})
	_, c := dial(t, svc)
	ctx := context.Background()
	play := func(id string, steps int, terminal bool) {
		t.Helper()
		for step := range steps {
			if _, err := c.Act(ctx, id, "u", obs4, 1, step == 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.EndAs(ctx, id, "u", 0.5, terminal); err != nil {
			t.Fatal(err)
		}
	}
	play("one", 1, true)
	play("two-steps", 2, true)
	play("truncated", 2, false) // one step logged, with a final observation
	play("after", 1, true)
	svc.Agent().CloseSessionLog() // every queued session written (or dropped)
	m := scrape(t, svc.OpsAddr())
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if v := m[`dprl_session_log_dropped_total{reason="unsupported"}`]; v != 2 {
		t.Errorf("unsupported drops %v, want 2", v)
	}
	got := readDSJSONLog(t, dir)
	if len(got) != 2 || got[0].Session != "one" || got[1].Session != "after" || got[0].Steps[0].Reward != 0.5 {
		t.Errorf("logged %+v, want sessions one and after", got)
	}
}
