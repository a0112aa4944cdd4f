package service

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dprl/agent"
	"dprl/internal/testutil"
	"dprl/ledger/accountant"
)

// TestRestartWithAnotherZ: an agent releases two versions at z = 1 (alice
// in both, bob and carol in one each, at most 3 updates per user), stops,
// and restarts with z = 4 on the same data directory. What it prints must
// be the ledger's: the start line's per-session epsilon is the worst
// release recorded (z = 1), and its per-user bound covers what a user can
// still reach from the ledger's counters (alice: 2 updates at z = 1 and
// one more at z = 4); /status, dprl_session_epsilon and
// dprl_user_epsilon_max say the same, and the status page's worst user is
// within the bound it shows. (Before: the start line said "per-user
// epsilon at most" the bound of 3 updates at z = 4, /status and the
// gauge the per-session epsilon at z = 4, and the page put the worst user
// far above "the cap".)
func TestRestartWithAnotherZ(t *testing.T) {
	dir := t.TempDir()
	cfg := cartpoleConfig(2)
	cfg.MaxUpdatesPerUser = 3
	start := func(cfg agent.Config) *Service {
		t.Helper()
		svc, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: dir, HTTPAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	svc := start(cfg)
	_, c := dial(t, svc)
	playUsers(t, c, "alice", "bob")
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return svc.Agent().Version() == 1 })
	playUsers(t, c, "alice", "carol")
	testutil.EventuallyTrue(t, 20*time.Second, "version 2", func() bool { return svc.Agent().Version() == 2 })
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.Policy.DP.NoiseMultiplier = 4
	svc = start(cfg)
	defer svc.Close()
	d := cfg.Delta
	gauss := func(z float64) float64 {
		t.Helper()
		e, err := accountant.GaussianEpsilon(z, d)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	recorded := gauss(1)                        // each release of the ledger, per session
	worst := gauss(1 / math.Sqrt(2))            // alice: two updates at z = 1
	bound := gauss(1 / math.Sqrt(2+1.0/(4*4)))  // alice's third update at z = 4
	if next := gauss(4); !(next < recorded/2) { // the case the test is about
		t.Fatalf("z = 4 gives %v per session, z = 1 %v", next, recorded)
	}

	var sb strings.Builder
	if err := svc.Announce(&sb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"per-user epsilon at most " + accountant.FormatEpsilon(bound) + " at delta", "per-session epsilon " + accountant.FormatEpsilon(recorded) + " at delta"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("start lines lack %q:\n%s", want, sb.String())
		}
	}

	var st Status
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+svc.OpsAddr()+"/status")), &st); err != nil {
		t.Fatal(err)
	}
	if math.Abs(st.Epsilon-recorded) > 1e-12 || st.Delta != d {
		t.Errorf("/status epsilon %v delta %v, want the ledger's %v at %v", st.Epsilon, st.Delta, recorded, d)
	}

	m := scrape(t, svc.OpsAddr())
	if got := m["dprl_session_epsilon"]; math.Abs(got-recorded) > 1e-12 {
		t.Errorf("dprl_session_epsilon %v, want the ledger's worst release %v", got, recorded)
	}
	if got := m["dprl_user_epsilon_max"]; math.Abs(got-worst) > 1e-9 {
		t.Errorf("dprl_user_epsilon_max %v, want %v", got, worst)
	}

	page, _ := getPage(t, svc.OpsAddr())
	pct := regexp.MustCompile(`worst user at (\d+)% of it`).FindStringSubmatch(page)
	if pct == nil {
		t.Fatalf("the page shows no cap for the worst user")
	}
	if n, _ := strconv.Atoi(pct[1]); n > 100 {
		t.Errorf("the page puts the worst user at %d%% of the bound it shows", n)
	}
}

// TestRestartWithAnotherZModels: the models' composed per-user bound on
// the start lines is composed from each model's ledger: a restart with z
// = 4 for a model whose users took part in an update at z = 1 keeps that
// update in the sum. (Before: the sum took each model's bound at its new
// z.)
func TestRestartWithAnotherZModels(t *testing.T) {
	dir := t.TempDir()
	models := twoModels() // cartpole: 1 update per user; tiny: 2
	start := func() *Service {
		t.Helper()
		svc, err := StartService(context.Background(), ServiceConfig{Models: models, DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	svc := start()
	a := svc.Policies()[0].agent
	rng := rand.New(rand.NewPCG(5, 6))
	playEpisode(t, a, "s1", "alice", rng, 10)
	playEpisode(t, a, "s2", "bob", rng, 10)
	testutil.EventuallyTrue(t, 20*time.Second, "cartpole version 1", func() bool { return a.Version() == 1 })
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	models[0].Agent.Policy.DP.NoiseMultiplier = 4
	svc = start()
	defer svc.Close()
	d := models[0].Agent.Delta
	cp, err := accountant.GaussianEpsilon(1, d) // alice's update at z = 1: cartpole's cap of 1 is reached
	if err != nil {
		t.Fatal(err)
	}
	tiny, _, err := models[1].Agent.UserEpsilonBound()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := svc.Announce(&sb); err != nil {
		t.Fatal(err)
	}
	if want := "a user of every model: epsilon at most " + accountant.FormatEpsilon(cp+tiny) + " at delta"; !strings.Contains(sb.String(), want) {
		t.Errorf("start lines lack %q:\n%s", want, sb.String())
	}
}
