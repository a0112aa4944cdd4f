package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClusterCommands runs the cluster the README documents, in one
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
	nats := strings.Join(urls, ",")
	common := []string{"--log-level", "warn", "--env", "cartpole", "--K", "8", "--nats", nats, "--user-key", key, "--cluster-replicas", "3", "--flush-timeout", "1h", "--lease-ttl", "1s"}
	http := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[6+i]) }
	start("learner", append([]string{"agent", "--role", "learn", "--data", filepath.Join(dir, "learner"), "--http", http(0)}, common...)...)
	for i := range 2 {
		start(fmt.Sprint("replica ", i), append([]string{"agent", "--role", "serve", "--data", filepath.Join(dir, fmt.Sprint("replica", i)), "--act-workers", "2", "--http", http(1 + i), "--prefix", fmt.Sprint("r", i)}, common...)...)
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
	time.Sleep(time.Second) // the learner's writer entry reaches the replicas
	// Sessions must stay on one replica (a session's state is its
	// replica's): each replica has its own prefix, and users are routed
	// to one, as a gateway would.
	for i := range 2 {
		var rout, rerr bytes.Buffer
		args := []string{"replay", "--log-level", "warn", "--nats", urls[i+1], "--prefix", fmt.Sprint("r", i), "--users", "60", "--concurrency", "4", "--rate", "200", "--seed", fmt.Sprint(3 + i), "--json"}
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
