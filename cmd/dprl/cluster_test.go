package main

import (
	"bytes"
	"context"
	"dprl/agent/service"
	"dprl/ledger"
	"dprl/ledger/record"
	"dprl/stream"
	"encoding/json"
	"fmt"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterCommands runs the cluster docs/agent.md documents, in one
// process: three dprl nats nodes, a learner and two serving replicas
// (dprl agent --role), and simulated users through dprl replay over NATS,
// each user on one replica.
// The learner releases through the ledger of record; afterwards every
// process's ledger verifies and the replicas' copies hold the learner's
// entries.
func TestClusterCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of processes")
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before wg.Wait: the processes stop
	start := func(name string, args ...string) *bytes.Buffer {
		var out bytes.Buffer
		var mu sync.Mutex
		w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code := run(ctx, args, strings.NewReader(""), w, w); code != 0 && ctx.Err() == nil {
				mu.Lock()
				t.Errorf("%s exited %d:\n%s", name, code, out.String())
				mu.Unlock()
			}
		}()
		return &out
	}
	ports := freePorts(t, 9)
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
	}
	var urls []string
	for i := range 3 {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
		start(fmt.Sprint("nats ", i), "nats", "--log-level", "warn", "--name", fmt.Sprint("n", i), "--store", filepath.Join(dir, fmt.Sprint("n", i)),
			"--listen", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--cluster", "c", "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[3+i]),
			"--routes", strings.Join(routes, ","))
	}
	for i := range 3 { // the nodes listen
		for deadline := time.Now().Add(20 * time.Second); ; {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[i]))
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("nats node %d does not listen: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	key := filepath.Join(dir, "user.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	natsURLs := strings.Join(urls, ",")
	common := []string{"--log-level", "warn", "--env", "cartpole", "--K", "8", "--nats", natsURLs, "--user-key", key, "--cluster-replicas", "3", "--flush-timeout", "1h", "--lease-ttl", "1s"}
	http := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[6+i]) }
	start("learner", append([]string{"agent", "--role", "learn", "--data", filepath.Join(dir, "learner"), "--http", http(0)}, common...)...)
	for i := range 2 {
		start(fmt.Sprint("replica ", i), append([]string{"agent", "--role", "serve", "--data", filepath.Join(dir, fmt.Sprint("replica", i)), "--act-workers", "2", "--http", http(1 + i)}, common...)...)
	}
	for i := range 3 { // every agent is ready (its streams opened)
		for deadline := time.Now().Add(60 * time.Second); ; {
			resp, err := httpGet("http://" + http(i) + "/readyz")
			if err == nil && resp == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("agent %d not ready: %v %d", i, err, resp)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	nc, err := nats.Connect(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); len(logEntries(t, ctx, js)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the learner wrote no writer entry")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the replicas follow the log every 200 ms
	// Sessions must stay on one replica (a session's state is its
	// replica's): the nodes map each session's subjects to one of 16
	// partitions, and the replicas share them, 8 each.
	waitPartitions(t, []string{http(1), http(2)}, 16, 8)
	for i := range 2 {
		var rout, rerr bytes.Buffer
		args := []string{"replay", "--log-level", "warn", "--nats", urls[i+1], "--users", "60", "--concurrency", "4", "--rate", "200", "--seed", fmt.Sprint(3 + i), "--json"}
		if code := run(context.Background(), args, strings.NewReader(""), &rout, &rerr); code != 0 {
			t.Fatalf("replay on replica %d exited %d: %s %s", i, code, rout.String(), rerr.String())
		}
	}
	time.Sleep(2 * time.Second) // the replicas publish, the learner releases, the replicas follow
	cancel()
	wg.Wait()
	var heads []string
	for _, d := range []string{"learner", "replica0", "replica1"} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"ledger", "verify", "--data", filepath.Join(dir, d), "--json"}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("ledger verify %s: %d %s %s", d, code, out.String(), errb.String())
		}
		var rep struct {
			Releases int `json:"releases"`
			Entries  int `json:"entries"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%s: %v: %s", d, err, out.String())
		}
		heads = append(heads, fmt.Sprint(rep.Entries))
		if d == "learner" && rep.Releases < 5 {
			t.Fatalf("the learner released %d versions from 120 sessions at K = 8, want >= 5", rep.Releases)
		}
	}
	t.Logf("entries: learner %s, replicas %s and %s", heads[0], heads[1], heads[2])
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// freePorts returns n distinct free TCP ports on loopback.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// httpGet returns the status code of a GET of url.
func httpGet(url string) (int, error) {
	resp, err := nethttp.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// child starts dprl with args as a child process (TestMain), its output
// in a file of dir.
func child(t *testing.T, dir, name string, args ...string) *exec.Cmd {
	t.Helper()
	js, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s:\n%s", name, b)
		}
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DPRL_CHILD_ARGS="+string(js))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// logEntries reads the ledger of record's entries (kind, writer).
func logEntries(t *testing.T, ctx context.Context, js jetstream.JetStream) []ledger.Entry {
	t.Helper()
	l, err := record.Open(ctx, js, record.Config{Name: "default", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Entry
	if err := l.Read(ctx, 1, func(e record.Entry) error {
		var m struct {
			Entry ledger.Entry `json:"entry"`
		}
		if err := json.Unmarshal(e.Data, &m); err != nil {
			return err
		}
		out = append(out, m.Entry)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClusterLearnerKilled kills the active learner process with SIGKILL,
// three times, while users play on a replica: each time a candidate (the
// other learner, or the killed one restarted) takes the lease after its
// TTL, appends its writer entry and goes on releasing. At the end
// every ledger (the killed learners' included) verifies and matches the
// ledger of record, and no session is in two releases.
func TestClusterLearnerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of processes")
	}
	c := newProcCluster(t)
	dir, urls, common := c.dir, c.urls, c.common
	learner := func(name string) *exec.Cmd {
		return child(t, dir, fmt.Sprint(name, "-", time.Now().UnixNano()), append([]string{"agent", "--role", "learn", "--cluster-holder", name, "--data", filepath.Join(dir, name)}, common...)...)
	}
	procs := map[string]*exec.Cmd{"l1": learner("l1"), "l2": learner("l2")}
	ports := freePorts(t, 1)
	rep := child(t, dir, "replica", append([]string{"agent", "--role", "serve", "--data", filepath.Join(dir, "replica"), "--http", fmt.Sprintf("127.0.0.1:%d", ports[0])}, common...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if code, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[0])); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica is not ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
	writers := func() ([]string, int) { return c.writers(t, ctx) }
	users := 0
	play := func(n int) {
		t.Helper()
		var out, errb bytes.Buffer
		args := []string{"replay", "--log-level", "warn", "--nats", urls[1], "--users", fmt.Sprint(n), "--concurrency", "4", "--rate", "100", "--seed", fmt.Sprint(10 + users), "--json"}
		run(context.Background(), args, strings.NewReader(""), &out, &errb) // sessions may fail while a learner is down: not an error here
		users += n
	}
	// The first learner's writer entry gives the replica the policy to
	// start from: sessions before it are set aside.
	for deadline := time.Now().Add(60 * time.Second); ; {
		if w, _ := writers(); len(w) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no learner took the lease")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the replica follows the log every 200 ms
	const kills = 3
	for k := 0; k <= kills; k++ {
		w0, r0 := writers()
		play(24)
		var w []string
		var r int
		for deadline := time.Now().Add(60 * time.Second); ; {
			if w, r = writers(); r > r0 && len(w) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no release after %d users (writers %v, %d releases)", k, users, w, r)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if k > 0 && len(w) <= len(w0) {
			t.Fatalf("round %d: no writer took over (writers %v)", k, w)
		}
		if k == kills {
			break
		}
		active := w[len(w)-1]
		p := procs[active]
		if err := p.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		p.Wait()
		procs[active] = learner(active) // restarts as a candidate
		t.Logf("round %d: killed %s after %d releases", k, active, r)
	}
	for _, p := range append([]*exec.Cmd{rep}, procs["l1"], procs["l2"]) {
		p.Process.Signal(syscall.SIGTERM)
		p.Wait()
	}
	w, r := writers()
	t.Logf("%d users, %d releases, writers %v", users, r, w)
	c.verifyLedgers(t, ctx, "l1", "l2", "replica")
}

// TestClusterSplitBrain stops the active learner with SIGSTOP past its
// lease while users play, so that the other candidate takes over and
// releases; then resumes it, still believing it leads. It is fenced or
// loses its lease and stops; its ledger holds nothing the ledger of record
// does not (no version it computed after the pause exists anywhere), every
// position has one entry, and no session is in two releases.
func TestClusterSplitBrain(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of processes")
	}
	c := newProcCluster(t)
	dir, js, urls, common := c.dir, c.js, c.urls, c.common
	procs := map[string]*exec.Cmd{}
	for _, name := range []string{"l1", "l2"} {
		procs[name] = child(t, dir, name, append([]string{"agent", "--role", "learn", "--cluster-holder", name, "--data", filepath.Join(dir, name)}, common...)...)
	}
	rep := child(t, dir, "replica", append([]string{"agent", "--role", "serve", "--data", filepath.Join(dir, "replica")}, common...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	writers := func() ([]string, int) { return c.writers(t, ctx) }
	waitFor := func(what string, ok func([]string, int) bool) ([]string, int) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; {
			w, r := writers()
			if ok(w, r) {
				return w, r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: writers %v, %d releases", what, w, r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	users := 0
	play := func(n int) {
		var out, errb bytes.Buffer
		run(context.Background(), []string{"replay", "--log-level", "warn", "--nats", urls[1], "--users", fmt.Sprint(n), "--concurrency", "4", "--rate", "100", "--seed", fmt.Sprint(20 + users), "--json"}, strings.NewReader(""), &out, &errb)
		users += n
	}
	w, _ := waitFor("a learner takes the lease", func(w []string, _ int) bool { return len(w) > 0 })
	time.Sleep(time.Second) // the replica follows the log
	play(16)
	_, r0 := waitFor("releases", func(_ []string, r int) bool { return r >= 2 })
	leader := w[0]
	other := map[string]string{"l1": "l2", "l2": "l1"}[leader]
	if err := procs[leader].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	play(16) // the paused learner cannot use these; the other takes over
	waitFor("the other learner takes over and releases", func(w []string, r int) bool { return w[len(w)-1] == other && r > r0 })
	if err := procs[leader].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- procs[leader].Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the resumed learner %s exited 0, want a failure (fenced or lease lost)", leader)
		}
		t.Logf("the resumed learner %s stopped: %v", leader, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("the resumed learner %s did not stop", leader)
	}
	play(8)
	for _, p := range []*exec.Cmd{rep, procs[other]} {
		p.Process.Signal(syscall.SIGTERM)
		p.Wait()
	}
	l, err := record.Open(ctx, js, record.Config{Name: "default", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"l1", "l2", "replica"} {
		s, err := ledger.Open(filepath.Join(dir, d), ledger.Options{MustExist: true})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if _, err := record.Check(ctx, l, s); err != nil {
			t.Fatalf("%s holds what the ledger of record does not: %v", d, err)
		}
		if rep, err := s.Verify(); err != nil || !rep.OK() {
			t.Fatalf("%s: %+v %v", d, rep, err)
		}
		s.Close()
	}
	seen := map[ledger.SessionKey]bool{}
	versions := map[uint64]bool{}
	for _, e := range logEntries(t, ctx, js) {
		if e.Kind == ledger.KindRelease {
			if versions[e.PolicyVersion] {
				t.Fatalf("version %d released twice", e.PolicyVersion)
			}
			versions[e.PolicyVersion] = true
		}
		for _, k := range e.Sessions {
			if seen[k] {
				t.Fatalf("session %s in two releases", k)
			}
			seen[k] = true
		}
	}
	w, r := writers()
	t.Logf("%d users, %d releases, writers %v", users, r, w)
}

// procCluster is the process tests' cluster: three JetStream servers in the
// test process, a shared user key, and the flags every agent process gets.
type procCluster struct {
	dir    string
	urls   []string
	js     jetstream.JetStream
	common []string
}

func newProcCluster(t *testing.T) *procCluster {
	t.Helper()
	c := &procCluster{dir: t.TempDir()}
	servers, err := stream.StartCluster("c", 3, filepath.Join(c.dir, "nats"), stream.EmbeddedOptions{Port: -1, Partitions: service.DefaultPartitions})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Cleanup(s.Shutdown)
		c.urls = append(c.urls, s.ClientURL())
	}
	nc, err := nats.Connect(c.urls[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if c.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(c.dir, "user.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("cd", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	c.common = []string{"--log-level", "info", "--log-format", "json", "--env", "cartpole", "--K", "4", "--nats", strings.Join(c.urls, ","), "--user-key", key,
		"--cluster-replicas", "3", "--flush-timeout", "1h", "--lease-ttl", "1s", "--max-updates-per-user", "1"}
	return c
}

// writers returns the ledger of record's writers, in order, and its
// number of releases.
func (c *procCluster) writers(t *testing.T, ctx context.Context) ([]string, int) {
	t.Helper()
	var w []string
	r := 0
	for _, e := range logEntries(t, ctx, c.js) {
		switch e.Kind {
		case ledger.KindWriter:
			w = append(w, e.Writer)
		case ledger.KindRelease:
			r++
		}
	}
	return w, r
}

// TestClusterReplicaKilled kills the serving replica with SIGKILL three
// times while users play; each time it restarts on its data directory,
// resumes from the ledger of record (the version and moments of the last
// entry it applied) and serves on, and the learner goes on releasing. At
// the end every ledger verifies and matches the log, the replica serves
// the last released version, and no session is in two releases.
func TestClusterReplicaKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of processes")
	}
	c := newProcCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	learner := child(t, c.dir, "learner", append([]string{"agent", "--role", "learn", "--cluster-holder", "l", "--data", filepath.Join(c.dir, "learner")}, c.common...)...)
	port := freePorts(t, 1)[0]
	replica := func(n int) *exec.Cmd {
		return child(t, c.dir, fmt.Sprint("replica-", n), append([]string{"agent", "--role", "serve", "--data", filepath.Join(c.dir, "replica"), "--http", fmt.Sprintf("127.0.0.1:%d", port)}, c.common...)...)
	}
	ready := func() {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; {
			if code, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", port)); err == nil && code == 200 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the replica is not ready")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		if w, _ := c.writers(t, ctx); len(w) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no writer entry")
		}
		time.Sleep(100 * time.Millisecond)
	}
	users := 0
	rep := replica(0)
	for k := 0; k <= 3; k++ {
		ready()
		// The killed replica's partitions are free once their leases
		// expire (1 s).
		waitPartitions(t, []string{fmt.Sprintf("127.0.0.1:%d", port)}, 16, 16)
		time.Sleep(500 * time.Millisecond) // the replica follows the log
		users += 16
		c.playUntilRelease(t, ctx, c.urls[1], 16, 40+users, 60*time.Second)
		if k == 3 {
			break
		}
		rep.Process.Signal(syscall.SIGKILL)
		rep.Wait()
		rep = replica(k + 1)
	}
	ready()
	_, releases := c.writers(t, ctx)
	var st struct {
		Version uint64 `json:"version"`
	}
	for deadline := time.Now().Add(10 * time.Second); st.Version != uint64(releases); {
		resp, err := nethttp.Get(fmt.Sprintf("http://127.0.0.1:%d/status", port))
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		_, releases = c.writers(t, ctx) // updates still queued may release more meanwhile
		if time.Now().After(deadline) {
			t.Fatalf("the restarted replica serves version %d, the log released %d", st.Version, releases)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range []*exec.Cmd{rep, learner} {
		p.Process.Signal(syscall.SIGTERM)
		p.Wait()
	}
	c.verifyLedgers(t, ctx, "learner", "replica")
	t.Logf("%d users, %d releases, replica killed 3 times", users, releases)
}

// allCurrent waits until every stream of the cluster has a leader and
// every replica is current: only then may another node die without
// costing a stream its majority.
func allCurrent(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	start := time.Now()
	for deadline := time.Now().Add(60 * time.Second); ; {
		ok := true
		why := ""
		actx, cancel := context.WithTimeout(ctx, 5*time.Second) // a request no server answers
		names := js.StreamNames(actx)
		n := 0
		for name := range names.Name() {
			n++
			st, err := js.Stream(actx, name)
			if err != nil {
				ok, why = false, fmt.Sprintf("%s: %v", name, err)
				break
			}
			info, err := st.Info(actx)
			if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
				ok, why = false, fmt.Sprintf("%s: %v %+v", name, err, info)
				if info != nil && info.Cluster != nil {
					why += fmt.Sprintf(" cluster %+v", *info.Cluster)
				}
				break
			}
			for _, r := range info.Cluster.Replicas {
				if !r.Current || r.Offline {
					ok, why = false, fmt.Sprintf("%s: leader %s replica %+v", name, info.Cluster.Leader, *r)
				}
			}
		}
		cancel()
		if ok && n >= 3 && names.Err() == nil {
			t.Logf("streams current after %v", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the streams' replicas did not all become current: %s (%v)", why, names.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// verifyLedgers checks, after the processes stopped, that each data
// directory's ledger verifies and holds nothing the ledger of record does
// not, and that no session is in two of the log's releases.
func (c *procCluster) verifyLedgers(t *testing.T, ctx context.Context, dirs ...string) {
	t.Helper()
	l, err := record.Open(ctx, c.js, record.Config{Name: "default", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		s, err := ledger.Open(filepath.Join(c.dir, d), ledger.Options{MustExist: true})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if _, err := record.Check(ctx, l, s); err != nil {
			t.Fatalf("%s holds what the ledger of record does not: %v", d, err)
		}
		rep, err := s.Verify()
		s.Close()
		if err != nil || !rep.OK() {
			t.Fatalf("%s: %+v %v", d, rep, err)
		}
	}
	seen := map[ledger.SessionKey]bool{}
	for _, e := range logEntries(t, ctx, c.js) {
		for _, k := range e.Sessions {
			if seen[k] {
				t.Fatalf("session %s in two releases", k)
			}
			seen[k] = true
		}
	}
}

// playUntilRelease plays n simulated users (dprl replay, seed seed) on the
// server at url and waits, at most within, for the learner's next release.
// Sessions may fail while the cluster recovers: that is not an error here.
func (c *procCluster) playUntilRelease(t *testing.T, ctx context.Context, url string, n, seed int, within time.Duration) {
	t.Helper()
	_, r0 := c.writers(t, ctx)
	var out, errb bytes.Buffer
	run(context.Background(), []string{"replay", "--log-level", "warn", "--nats", url, "--users", fmt.Sprint(n), "--concurrency", "4", "--rate", "100", "--seed", fmt.Sprint(seed), "--json"}, strings.NewReader(""), &out, &errb)
	for deadline := time.Now().Add(within); ; {
		if _, r := c.writers(t, ctx); r > r0 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("replay: %s\n%s", out.Bytes(), errb.Bytes())
			c.dumpStreams(t, ctx)
			t.Fatalf("no release after %d more users (seed %d)", n, seed)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dumpStreams logs every stream's and consumer's state, for a failure.
func (c *procCluster) dumpStreams(t *testing.T, ctx context.Context) {
	t.Helper()
	names := c.js.StreamNames(ctx)
	for name := range names.Name() {
		st, err := c.js.Stream(ctx, name)
		if err != nil {
			t.Logf("stream %s: %v", name, err)
			continue
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Logf("stream %s: %v", name, err)
			continue
		}
		b, _ := json.Marshal(info)
		t.Logf("stream %s: %s", name, b)
		cs := st.ListConsumers(ctx)
		for ci := range cs.Info() {
			b, _ := json.Marshal(ci)
			t.Logf("consumer %s: %s", ci.Name, b)
		}
	}
}

// waitPartitions waits until the serving replicas whose ops servers are at
// addrs serve total partitions together, each at least each.
func waitPartitions(t *testing.T, addrs []string, total, each int) {
	t.Helper()
	var got []int
	for deadline := time.Now().Add(30 * time.Second); ; {
		got = got[:0]
		sum, least := 0, total
		for _, a := range addrs {
			var st struct {
				Cluster struct {
					Partitions []int `json:"partitions"`
				} `json:"cluster"`
			}
			if resp, err := nethttp.Get("http://" + a + "/status"); err == nil {
				json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
			}
			n := len(st.Cluster.Partitions)
			got = append(got, n)
			sum, least = sum+n, min(least, n)
		}
		if sum == total && least >= each {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicas serve %v partitions, want %d in all, at least %d each", got, total, each)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
