package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dprl/agent"
	"dprl/experiment/demo"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/ledger/record"
	"dprl/profile"
)

// proc is a dprl process under a supervisor: one that exits (a learner
// that lost its lease does, by design) is started again, as systemd or
// an orchestrator would; one being killed by the test is held until the
// test has checked its data directory.
type proc struct {
	t          *testing.T
	dir, name  string
	args       []string
	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
	gen        int
	hold, stop bool
	restarts   int // starts after an exit nobody asked for
}

func (p *proc) start() {
	p.gen++
	p.cmd = child(p.t, p.dir, fmt.Sprintf("%s-%d", p.name, p.gen), p.args...)
	done := make(chan struct{})
	p.done = done
	cmd := p.cmd
	go func() {
		cmd.Wait()
		close(done)
	}()
}

// supervise restarts p, 100 ms after it exited, until ctx ends.
func (p *proc) supervise(ctx context.Context) {
	for ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		p.mu.Lock()
		select {
		case <-p.done:
			if !p.hold && !p.stop {
				p.restarts++
				p.start()
			}
		default:
		}
		p.mu.Unlock()
	}
}

// kill sends SIGKILL and waits for the exit; p stays down until resume.
func (p *proc) kill() {
	p.mu.Lock()
	p.hold = true
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// resume starts p again after kill (not counted as a restart: the test
// killed it).
func (p *proc) resume() {
	p.mu.Lock()
	p.hold = false
	select {
	case <-p.done:
		p.start()
	default:
	}
	p.mu.Unlock()
}

// terminate stops p for good with SIGTERM.
func (p *proc) terminate() {
	p.mu.Lock()
	p.stop = true
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// TestClusterChaos is the cluster of the scale-out design as processes on
// loopback: three dprl nats nodes (JetStream R3), three serving replicas
// sharing 16 session partitions, two learner candidates, all under a
// supervisor, and simulated users through dprl replay. Each round kills
// one process with SIGKILL at a random point while users play: a serving
// replica, the active learner or a NATS node, in random order, until each
// kind was killed DPRL_CLUSTER_KILLS times (1 by default; opt-in with
// DPRL_CLUSTER_FAULTS=1). After each kill the killed agent's ledger
// verifies and holds nothing the ledger of record does not, and the
// learner releases again; at the end every ledger verifies and matches
// the log, no session is in two releases, no user is in more releases
// than the cap, release versions rise by one, and every replica serves the
// last release. The agents run the single-process demo's settings (the
// cartpole profile: K = 32, z = 1, every user in at most one release:
// user-level epsilon 4.377 at delta 1e-5), and learning goes on through
// the kills: after the last round users play on, one release at a time,
// until the released policy of the ledger of record reaches a mean return
// of 475 over 10 fresh simulator episodes (the demo's stopping rule,
// evaluated every 4 releases; simulation-only), within DPRL_CLUSTER_USERS
// further users (4,000 by default).
func TestClusterChaos(t *testing.T) {
	if os.Getenv("DPRL_CLUSTER_FAULTS") == "" {
		t.Skip("set DPRL_CLUSTER_FAULTS=1 (and DPRL_CLUSTER_KILLS=N for N kills of each kind)")
	}
	kills := 1
	if s := os.Getenv("DPRL_CLUSTER_KILLS"); s != "" {
		var err error
		if kills, err = strconv.Atoi(s); err != nil || kills < 1 {
			t.Fatalf("DPRL_CLUSTER_KILLS=%q", s)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DPRL_CLUSTER_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (DPRL_CLUSTER_SEED to repeat the order of the kills)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	ports := freePorts(t, 9)
	var routes, urls []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	all := strings.Join(urls, ",")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(10+3*kills)*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	sctx, stopSupervising := context.WithCancel(ctx)
	defer stopSupervising() // before wg.Wait
	newProc := func(name string, args ...string) *proc {
		p := &proc{t: t, dir: dir, name: name, args: args}
		p.mu.Lock()
		p.start()
		p.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); p.supervise(sctx) }()
		return p
	}
	var nodes []*proc
	for i := range 3 {
		nodes = append(nodes, newProc(fmt.Sprint("nats", i), "nats", "--log-level", "warn", "--name", fmt.Sprint("n", i), "--store", filepath.Join(dir, fmt.Sprint("n", i)),
			"--listen", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--cluster", "c", "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[3+i]), "--routes", strings.Join(routes, ",")))
	}
	for i := range 3 {
		for deadline := time.Now().Add(30 * time.Second); ; {
			if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[i])); err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d does not listen", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	nc, err := nats.Connect(all, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c := &procCluster{dir: dir, urls: urls, js: js}
	key := filepath.Join(dir, "user.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ef", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--log-level", "info", "--log-format", "json", "--env", "cartpole", "--nats", all, "--user-key", key,
		"--cluster-replicas", "3", "--flush-timeout", "1h", "--lease-ttl", "10s", "--max-updates-per-user", "1", "--idle-timeout", "5s"}
	var learners, replicas []*proc
	for i := range 2 {
		learners = append(learners, newProc(fmt.Sprint("learner", i), append([]string{"agent", "--role", "learn", "--cluster-holder", fmt.Sprint("l", i), "--data", filepath.Join(dir, fmt.Sprint("learner", i))}, common...)...))
	}
	httpAddr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[6+i]) }
	for i := range 3 {
		replicas = append(replicas, newProc(fmt.Sprint("replica", i), append([]string{"agent", "--role", "serve", "--data", filepath.Join(dir, fmt.Sprint("replica", i)), "--http", httpAddr(i)}, common...)...))
	}
	addrs := []string{httpAddr(0), httpAddr(1), httpAddr(2)}
	for deadline := time.Now().Add(90 * time.Second); ; {
		if w, _ := c.writers(t, ctx); len(w) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no learner took the lease")
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitPartitions(t, addrs, 16, 1)

	users := 0
	play := func(within time.Duration) { // users play until the learner releases again
		t.Helper()
		_, r0 := c.writers(t, ctx)
		for deadline := time.Now().Add(within); ; {
			users += 16
			var out, errb bytes.Buffer
			run(ctx, []string{"replay", "--log-level", "error", "--nats", all, "--users", "16", "--concurrency", "4", "--rate", "100", "--seed", fmt.Sprint(1000 + users), "--json"}, strings.NewReader(""), &out, &errb)
			for wait := time.Now().Add(3 * time.Second); time.Now().Before(wait); time.Sleep(100 * time.Millisecond) {
				if _, r := c.writers(t, ctx); r > r0 {
					return
				}
			}
			if time.Now().After(deadline) {
				c.dumpStreams(t, ctx)
				t.Fatalf("no release within %v after %d users", within, users)
			}
		}
	}
	checkDir := func(name string) { // a stopped agent's ledger
		t.Helper()
		l, err := record.Open(ctx, js, record.Config{Name: "default", Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		s, err := ledger.Open(filepath.Join(dir, name), ledger.Options{MustExist: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer s.Close()
		if _, err := record.Check(ctx, l, s); err != nil {
			t.Fatalf("%s holds what the ledger of record does not: %v", name, err)
		}
		if rep, err := s.Verify(); err != nil || !rep.OK() {
			t.Fatalf("%s: %+v %v", name, rep, err)
		}
	}
	play(2 * time.Minute)
	var plan []string
	for range kills {
		plan = append(plan, "replica", "learner", "nats")
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	for round, kind := range plan {
		// Users play while the kill lands at a random point.
		playing := make(chan struct{})
		users += 16
		go func() {
			defer close(playing)
			var out, errb bytes.Buffer
			run(ctx, []string{"replay", "--log-level", "error", "--nats", all, "--users", "16", "--concurrency", "4", "--rate", "100", "--seed", fmt.Sprint(1_000_000 + round), "--json"}, strings.NewReader(""), &out, &errb)
		}()
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
		start := time.Now()
		switch kind {
		case "replica":
			i := rng.IntN(3)
			replicas[i].kill()
			checkDir(fmt.Sprint("replica", i))
			replicas[i].resume()
			t.Logf("round %d: killed replica %d", round, i)
		case "learner":
			w, _ := c.writers(t, ctx)
			i, _ := strconv.Atoi(strings.TrimPrefix(w[len(w)-1], "l"))
			learners[i].kill()
			checkDir(fmt.Sprint("learner", i))
			learners[i].resume()
			t.Logf("round %d: killed learner %d (the active one)", round, i)
		case "nats":
			allCurrent(t, ctx, js) // only then may a node die without costing a stream its majority
			i := rng.IntN(3)
			nodes[i].kill()
			time.Sleep(time.Second)
			nodes[i].resume()
			t.Logf("round %d: killed nats node %d", round, i)
		}
		<-playing
		play(3 * time.Minute)
		t.Logf("round %d: released again %v after the kill", round, time.Since(start).Round(100*time.Millisecond))
	}
	// Learning went on through the kills; users play on, a release at a
	// time, until the ledger of record's last release reaches the demo's
	// target (evaluated as the demo does: simulation-only).
	budget := 4000
	if s := os.Getenv("DPRL_CLUSTER_USERS"); s != "" {
		var err error
		if budget, err = strconv.Atoi(s); err != nil || budget < 0 {
			t.Fatalf("DPRL_CLUSTER_USERS=%q", s)
		}
	}
	prof, err := profile.Get("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	ac := agent.DefaultConfig(prof.Spec, prof.Learner)
	evaluate := func() (uint64, float64) { // the last release of the log
		t.Helper()
		l, err := record.Open(ctx, js, record.Config{Name: "default", Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		last, err := l.Last(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for pos := last; pos > 0; pos-- {
			r, err := l.Entry(ctx, pos)
			if err != nil {
				t.Fatal(err)
			}
			if r.Entry.Kind != ledger.KindRelease {
				continue
			}
			mean, err := demo.EvaluateSnapshot(r.Snapshot, ac.Spec, ac.Policy, "cartpole", 10, seed)
			if err != nil {
				t.Fatal(err)
			}
			return r.Entry.PolicyVersion, mean
		}
		return 0, 0
	}
	version, mean := evaluate()
	t.Logf("after the kills: %d users, version %d: mean return %.1f over 10 episodes (simulation-only)", users, version, mean)
	for tail := users; mean < 475; {
		if users-tail >= budget {
			t.Fatalf("the released policy reached %.1f at version %d, below 475 after %d more users", mean, version, users-tail)
		}
		for range 4 {
			play(3 * time.Minute)
		}
		version, mean = evaluate()
		t.Logf("%d users, version %d: mean return %.1f", users, version, mean)
	}
	waitPartitions(t, addrs, 16, 1)
	_, releases := c.writers(t, ctx)
	for _, a := range addrs { // every replica serves the last release
		var st struct {
			Version uint64 `json:"version"`
		}
		for deadline := time.Now().Add(20 * time.Second); st.Version != uint64(releases); {
			_, releases = c.writers(t, ctx) // updates still queued may release more meanwhile
			st.Version = 0
			if resp, err := nethttp.Get("http://" + a + "/status"); err == nil {
				json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica at %s serves version %d, the log released %d", a, st.Version, releases)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, p := range append(replicas, learners...) {
		p.terminate()
	}
	c.verifyLedgers(t, ctx, "learner0", "learner1", "replica0", "replica1", "replica2")
	perUser := map[ledger.UserKey]ledger.UserState{}
	var last uint64
	for _, e := range logEntries(t, ctx, js) {
		if e.Kind != ledger.KindRelease {
			continue
		}
		if e.PolicyVersion != last+1 {
			t.Fatalf("release of version %d after version %d", e.PolicyVersion, last)
		}
		last = e.PolicyVersion
		for _, u := range e.Users {
			st := perUser[u]
			st.Updates++
			st.SumInvZ2 += 1 / (e.Z * e.Z)
			if perUser[u] = st; st.Updates > 1 {
				t.Fatalf("user %x in %d releases, over the cap of 1", u[:4], st.Updates)
			}
		}
	}
	userEps := 0.0
	for _, st := range perUser {
		eps, err := st.Epsilon(ac.Delta)
		if err != nil {
			t.Fatal(err)
		}
		userEps = max(userEps, eps)
	}
	if userEps > 5 {
		t.Fatalf("user-level epsilon %.4g at delta %g, above 5", userEps, ac.Delta)
	}
	restarts := 0
	for _, l := range learners {
		restarts += l.restarts
	}
	t.Logf("%d users, %d releases, %d kills of each kind; learners restarted after exiting on their own %d times; the last release's mean return %.1f (version %d), user-level epsilon %s at delta %g", users, releases, kills, restarts, mean, version, accountant.FormatEpsilon(userEps), ac.Delta)
	for _, n := range nodes {
		n.terminate()
	}
}
