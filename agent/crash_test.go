package agent

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"dprl/ledger"
	"dprl/sims"
	"dprl/stream"
)

// TestMain lets the test binary run as a child agent for the crash test.
func TestMain(m *testing.M) {
	if dir := os.Getenv("DPRL_CRASH_CHILD"); dir != "" {
		runCrashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// runCrashChild serves an agent on a random loopback port, prints its URL
// and serves until killed.
func runCrashChild(dir string) {
	cfg := cartpoleConfig(2)
	cfg.Seed = 0 // secure noise, as in production
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: dir, NATS: "embedded", NATSListen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	fmt.Println("URL", svc.NATSURL(), svc.Agent().Version())
	select {}
}

func startChild(t *testing.T, dir string) (*exec.Cmd, string, uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DPRL_CRASH_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "URL ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q %v", line, err)
	}
	var url string
	var ver uint64
	fmt.Sscanf(line, "URL %s %d", &url, &ver)
	return cmd, url, ver
}

// TestKill9 kills the agent process at random points while simulated users
// drive it over NATS, restarts it, and checks that it serves the last
// released version, that the ledger verifies (every release has its cost,
// none counted twice) and that versions never go backwards.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test starts child processes")
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	var last uint64
	for round := 0; round < 6; round++ {
		cmd, url, ver := startChild(t, dir)
		if ver < last {
			t.Fatalf("round %d: restarted at version %d after %d", round, ver, last)
		}
		nc, err := stream.Connect(url, stream.WithReconnect(0, time.Millisecond, time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		client, _ := stream.NewClient(nc, stream.WithTimeout(2*time.Second))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		urng := rand.New(rand.NewPCG(seed, uint64(round)+10))
		go func() {
			defer close(done)
			env := sims.NewCartPole()
			obs := make([]float64, 4)
			for i := 0; ctx.Err() == nil; i++ {
				env.Reset(urng, obs)
				id := fmt.Sprintf("r%d-s%d", round, i)
				var reward float64
				for step := 0; ; step++ {
					a, err := client.Act(ctx, id, fmt.Sprintf("u%d", i%5), obs, reward, step == 0)
					if err != nil {
						return
					}
					r, term, trunc := env.Step(a, obs)
					if term || trunc || step == 30 {
						client.End(ctx, id, r, term)
						break
					}
					reward = r
				}
			}
		}()
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		cancel()
		nc.Close()
		<-done
		s, err := ledger.Open(dir, ledger.Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		r, err := s.Verify()
		h, _ := s.Head()
		s.Close()
		if err != nil || !r.OK() {
			t.Fatalf("round %d: ledger after kill -9: %+v %v", round, r, err)
		}
		if h.Version < last {
			t.Fatalf("round %d: head version %d < %d", round, h.Version, last)
		}
		last = h.Version
	}
	if last == 0 {
		t.Errorf("no release happened in any round")
	}
	// A last restart serves exactly the head version.
	cmd, _, ver := startChild(t, dir)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if ver != last {
		t.Errorf("restart serves version %d, ledger head %d", ver, last)
	}
}
