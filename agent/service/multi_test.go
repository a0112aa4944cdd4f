package service

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"dprl/agent"
	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/policy"
	"dprl/stream"
)

// tinyConfig is a small custom spec: 3 observations, 3 actions.
func tinyConfig(K, maxUpdates int) agent.Config {
	pc := policy.DefaultControlConfig()
	pc.DP.UsersPerUpdate = K
	cfg := agent.DefaultConfig(policy.Spec{ObsDim: 3, Kind: policy.ActionDiscrete, NumActions: 3}, pc)
	cfg.Seed, cfg.Workers, cfg.MaxUpdatesPerUser = 11, 1, maxUpdates
	return cfg
}

// twoModels are a CartPole-shaped model capped at one update per user and
// a tiny one capped at two, both releasing every 2 sessions.
func twoModels() []ModelConfig {
	cp := cartpoleConfig(2)
	cp.Workers, cp.MaxUpdatesPerUser = 1, 1
	return []ModelConfig{{Name: "cartpole", Agent: cp}, {Name: "tiny", Agent: tinyConfig(2, 2)}}
}

// play plays one session of 4 steps of obsDim-long observations through c
// and checks that every action is one of nActions.
func play(t *testing.T, c *stream.Client, id, user string, obsDim, nActions int) stream.EndReply {
	t.Helper()
	ctx := context.Background()
	for step := range 4 {
		obs := make([]float64, obsDim)
		obs[0] = 0.01 * float64(step)
		a, err := c.Act(ctx, id, user, obs, 1, step == 0)
		if err != nil {
			t.Fatalf("act %s: %v", id, err)
		}
		if a.Index < 0 || a.Index >= nActions || a.Vec != nil {
			t.Fatalf("act %s: action %+v, want an index in [0, %d)", id, a, nActions)
		}
	}
	r, err := c.EndAs(ctx, id, user, 1, true)
	if err != nil {
		t.Fatalf("end %s: %v", id, err)
	}
	return r
}

func nextVersion(t *testing.T, ch <-chan uint64, model string) uint64 {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no policy announcement on model %s", model)
		return 0
	}
}

// TestMultiPolicyService serves two models from one process, on a secured
// embedded server (the agent's and the client's permissions cover every
// model's subjects): each client gets actions of its model's shape and
// its observations are refused by the other; each model releases to its
// own ledger with its own caps, so a user capped on one is still learned
// from on the other; announcements, /metrics (model label), /status
// (models array) and /readyz follow the models; a restart resumes both.
func TestMultiPolicyService(t *testing.T) {
	aliceKP, alicePub := userKey(t)
	data := t.TempDir()
	cfg := ServiceConfig{Models: twoModels(), DataDir: data, NATSListen: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", ActWorkers: 2,
		NATSSecurity: NATSSecurity{Clients: []stream.ClientIdentity{{Name: "alice", NKey: alicePub}}}}
	svc, err := StartService(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	var sb strings.Builder
	if err := svc.Announce(&sb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"serving 2 models", "model cartpole on dprl.cartpole.v1.*; per-session epsilon", "model tiny: per-user epsilon at most",
		"a user of every model: epsilon at most"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("startup lines lack %q:\n%s", want, sb.String())
		}
	}
	nc, err := stream.Connect(svc.NATSURL(), stream.WithNKeyPair(aliceKP), stream.WithInbox("alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	clients := map[string]*stream.Client{}
	versions := map[string]chan uint64{}
	for _, m := range []string{"cartpole", "tiny"} {
		c, err := stream.NewClient(nc, stream.WithPrefix("dprl."+m), stream.WithTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan uint64, 8)
		sub, err := c.WatchPolicy(func(p stream.PolicyAnnouncement) { ch <- p.Version })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		clients[m], versions[m] = c, ch
	}
	nc.Flush()
	ctx := context.Background()
	if _, err := clients["tiny"].Act(ctx, "wrong", "u9", []float64{0, 0, 0, 0}, 0, true); !errors.As(err, new(*stream.Error)) {
		t.Errorf("a CartPole observation on tiny: %v, want an error reply", err)
	}
	if _, err := clients["cartpole"].Act(ctx, "wrong", "u9", []float64{0, 0, 0}, 0, true); !errors.As(err, new(*stream.Error)) {
		t.Errorf("a tiny observation on cartpole: %v, want an error reply", err)
	}

	// One update on each model, from the same two users.
	for i, u := range []string{"u1", "u2"} {
		play(t, clients["cartpole"], fmt.Sprintf("c%d", i), u, 4, 2)
	}
	if v := nextVersion(t, versions["cartpole"], "cartpole"); v != 1 {
		t.Fatalf("cartpole announced version %d, want 1", v)
	}
	if v := svc.Policies()[1].Agent().Version(); v != 0 {
		t.Fatalf("tiny at version %d after cartpole's update, want 0", v)
	}
	for i, u := range []string{"u1", "u2"} {
		play(t, clients["tiny"], fmt.Sprintf("t%d", i), u, 3, 3)
	}
	if v := nextVersion(t, versions["tiny"], "tiny"); v != 1 {
		t.Fatalf("tiny announced version %d, want 1", v)
	}
	for _, p := range svc.Policies() {
		st, err := p.Store().UserState(p.Store().User("u1"))
		if err != nil || st.Updates != 1 {
			t.Errorf("model %s: u1 in %d updates (%v), want 1 in its own ledger", p.Name(), st.Updates, err)
		}
		if want := filepath.Join(data, "models", p.Name()); p.DataDir() != want {
			t.Errorf("model %s: ledger in %s, want %s", p.Name(), p.DataDir(), want)
		}
	}
	// u1 reached cartpole's cap of 1 update, not tiny's of 2.
	play(t, clients["cartpole"], "c-again", "u1", 4, 2)
	waitDiscarded(t, svc.Policies()[0].agent, "user_update_cap", 1) // set aside at the cap
	if r := play(t, clients["tiny"], "t-again", "u1", 3, 3); !r.Used {
		t.Errorf("u1 again on tiny: %+v, want learned from (tiny's own cap is 2)", r)
	}

	metrics := httpGet(t, "http://"+svc.OpsAddr()+"/metrics")
	for _, want := range []string{`dprl_releases_total{model="cartpole"} 1`, `dprl_releases_total{model="tiny"} 1`,
		`dprl_sessions_discarded_total{model="cartpole",reason="user_update_cap"} 1`, `dprl_nats_connected{model="tiny"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "dprl_releases_total 1") {
		t.Error("/metrics has an unlabelled agent series")
	}
	var st struct {
		Models []struct {
			Name, Prefix string
			Version      uint64
			Epsilon      float64
			Head         ledger.Head `json:"ledger_head"`
		}
		Version *uint64
	}
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+svc.OpsAddr()+"/status")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Models) != 2 || st.Models[0].Name != "cartpole" || st.Models[1].Prefix != "dprl.tiny" || st.Models[0].Version != 1 ||
		st.Models[1].Head.Version != 1 || st.Models[1].Epsilon <= 0 || st.Version != nil {
		t.Errorf("/status %+v: want a models array of cartpole and tiny at version 1, nothing at the top level", st)
	}
	if code, body, err := readyz(svc.OpsAddr()); err != nil || code != http.StatusOK {
		t.Errorf("/readyz: %d %q %v", code, body, err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart resumes both from their ledgers.
	cfg.NATSListen = "" // in-process only: the port may be taken again
	svc2, err := StartService(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	for _, p := range svc2.Policies() {
		if v := p.Agent().Version(); v != 1 {
			t.Errorf("model %s resumed at version %d, want 1", p.Name(), v)
		}
		if _, err := p.Store().VerifiedHead(); err != nil {
			t.Errorf("model %s: %v", p.Name(), err)
		}
	}
}

// TestMultiPolicyFailedStart: a start that fails for one model leaves no
// ledger it created behind, and leaves a ledger that was there alone; a
// data directory holding a single-policy ledger is refused with models.
func TestMultiPolicyFailedStart(t *testing.T) {
	data := t.TempDir()
	models := twoModels()
	// tiny has a ledger from an earlier start; cartpole's directory holds a
	// stray file and no ledger.
	svc, err := StartService(context.Background(), ServiceConfig{Models: models[1:], DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()
	// third, new, is created first, then removed when cartpole fails.
	three := append([]ModelConfig{{Name: "third", Agent: tinyConfig(2, 1)}}, models[1], models[0])
	stray := filepath.Join(data, "models", "cartpole")
	os.MkdirAll(stray, 0o700)
	os.WriteFile(filepath.Join(stray, "notes.txt"), nil, 0o600)
	_, err = StartService(context.Background(), ServiceConfig{Models: three, DataDir: data})
	if !errors.Is(err, ledger.ErrNotEmpty) || !strings.Contains(err.Error(), `model "cartpole"`) ||
		!strings.Contains(LedgerDirOf(err, "?"), stray) {
		t.Fatalf("start: %v, want ErrNotEmpty naming model cartpole", err)
	}
	assertDir(t, filepath.Join(data, "models"), "cartpole", "tiny")
	assertDir(t, stray, "notes.txt")

	// The ops port taken (the last step of a start): every ledger this
	// start created is removed again, the directories it created with them.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fresh := filepath.Join(t.TempDir(), "new", "data")
	_, err = StartService(context.Background(), ServiceConfig{Models: twoModels(), DataDir: fresh, HTTPAddr: ln.Addr().String()})
	if err == nil {
		t.Fatal("started on a taken port")
	}
	if _, err := os.Stat(filepath.Dir(fresh)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the failed start %s: %v, want it removed", filepath.Dir(fresh), err)
	}
	// And in an empty directory, its contents only.
	empty := t.TempDir()
	if _, err := StartService(context.Background(), ServiceConfig{Models: twoModels(), DataDir: empty, HTTPAddr: ln.Addr().String()}); err == nil {
		t.Fatal("started on a taken port")
	}
	assertDir(t, empty)

	single := t.TempDir()
	svc, err = StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(2), DataDir: single})
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()
	if _, err := StartService(context.Background(), ServiceConfig{Models: twoModels(), DataDir: single}); err == nil || !strings.Contains(err.Error(), "single-policy ledger") {
		t.Fatalf("models over a single-policy ledger: %v", err)
	}
	if _, err := os.Stat(filepath.Join(single, "models")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("models/ created beside the single-policy ledger: %v", err)
	}
}

// assertDir fails unless dir holds exactly names.
func assertDir(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

// TestModelConfigChecked: StartService refuses bad or duplicate model
// names and single-policy fields beside models.
func TestModelConfigChecked(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  ServiceConfig
		want string
	}{
		{"bad name", ServiceConfig{Models: []ModelConfig{{Name: "Cart.Pole", Agent: cartpoleConfig(2)}}}, `"Cart.Pole"`},
		{"duplicate", ServiceConfig{Models: []ModelConfig{{Name: "a", Agent: cartpoleConfig(2)}, {Name: "a", Agent: cartpoleConfig(2)}}}, `"a" given twice`},
		{"agent beside models", ServiceConfig{Agent: cartpoleConfig(2), Models: []ModelConfig{{Name: "a", Agent: cartpoleConfig(2)}}}, "each model's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.DataDir = t.TempDir()
			if _, err := StartService(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error naming %s", err, c.want)
			}
			assertDir(t, c.cfg.DataDir)
		})
	}
}

// init lets the test binary run as a child agent serving twoModels for
// TestMultiPolicyKill9 (TestMain belongs to the single-policy crash test).
func init() {
	dir := os.Getenv("DPRL_MULTI_CHILD")
	if dir == "" {
		return
	}
	models := twoModels()
	for i := range models {
		models[i].Agent.Seed = 0 // secure noise, as in production
		models[i].Agent.MaxUpdatesPerUser = 0
		models[i].Agent.UserEpsilon = 1e6 // a cap that never binds: users come back
	}
	svc, err := StartService(context.Background(), ServiceConfig{Models: models, DataDir: dir, NATSListen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	fmt.Println("URL", svc.NATSURL(), svc.Policies()[0].Agent().Version(), svc.Policies()[1].Agent().Version())
	select {}
}

// TestMultiPolicyKill9 kills a two-model agent process while clients play
// sessions on both models, restarts it, and checks that both models resume
// at least at the last version announced before the kill, from ledgers that
// verify.
func TestMultiPolicyKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test starts child processes")
	}
	dir := t.TempDir()
	start := func() (*exec.Cmd, string, [2]uint64) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "DPRL_MULTI_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		var url string
		var v [2]uint64
		if n, _ := fmt.Sscanf(line, "URL %s %d %d", &url, &v[0], &v[1]); err != nil || n != 3 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %q %v", line, err)
		}
		return cmd, url, v
	}
	var last [2]uint64
	for round := range 2 {
		cmd, url, v := start()
		for i := range v {
			if v[i] < last[i] {
				t.Fatalf("round %d: model %d restarted at version %d after %d was announced", round, i, v[i], last[i])
			}
		}
		nc, err := stream.Connect(url, stream.WithReconnect(0, time.Millisecond, time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var announced [2]atomic.Uint64
		done := make(chan struct{})
		for i, m := range []struct {
			prefix          string
			obsDim, actions int
		}{{"dprl.cartpole", 4, 2}, {"dprl.tiny", 3, 3}} {
			c, _ := stream.NewClient(nc, stream.WithPrefix(m.prefix), stream.WithTimeout(2*time.Second))
			c.WatchPolicy(func(p stream.PolicyAnnouncement) { announced[i].Store(max(announced[i].Load(), p.Version)) })
			go func() {
				defer func() { done <- struct{}{} }()
				ctx := context.Background()
				obs := make([]float64, m.obsDim)
				for s := 0; ; s++ {
					id, user := fmt.Sprintf("r%d-%d", round, s), fmt.Sprintf("u%d", s%4)
					for step := range 3 {
						if _, err := c.Act(ctx, id, user, obs, 1, step == 0); err != nil {
							return
						}
					}
					if _, err := c.EndAs(ctx, id, user, 1, true); err != nil {
						return
					}
				}
			}()
		}
		// Kill once both models released at least twice in this round.
		if err := testutil.Wait(20*time.Second, func() error {
			if announced[0].Load() < last[0]+2 || announced[1].Load() < last[1]+2 {
				return errors.New("too few releases")
			}
			return nil
		}); err != nil {
			t.Fatalf("round %d: versions %d and %d announced: %v", round, announced[0].Load(), announced[1].Load(), err)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		<-done
		<-done
		nc.Close()
		for i, m := range []string{"cartpole", "tiny"} {
			last[i] = announced[i].Load()
			v, err := ledger.VerifyDir(filepath.Join(dir, "models", m), ledger.Options{}, nil)
			if err != nil || !v.OK {
				t.Fatalf("round %d: model %s after kill -9: %+v %v", round, m, v, err)
			}
		}
	}
	cmd, _, v := start()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if v[0] < last[0] || v[1] < last[1] || last[0] < 4 || last[1] < 4 {
		t.Errorf("restart serves versions %v after %v were announced", v, last)
	}
}
