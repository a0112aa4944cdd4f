package service

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dprl/agent"
	"dprl/internal/testutil"
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
// and serves until killed. With DPRL_CRASH_BANDMF set it runs bandmf
// noise (3 bands, 1000 updates per user); with DPRL_CRASH_AT_DRAW=N it
// kills itself (SIGKILL) at its N-th release, after the noise is drawn
// and before the release is written.
func runCrashChild(dir string) {
	cfg := cartpoleConfig(2)
	if os.Getenv("DPRL_CRASH_BANDMF") != "" {
		cfg = bandedConfig(2, crashBand, 1000)
	}
	sc := ServiceConfig{Agent: cfg, DataDir: dir, NATS: "embedded", NATSListen: "127.0.0.1:0"}
	if n, err := strconv.Atoi(os.Getenv("DPRL_CRASH_AT_DRAW")); err == nil {
		draws := 0
		sc.agentOptions = func(o *agent.Options) {
			o.BeforeRelease = func() {
				if draws++; draws == n {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				}
			}
		}
	}
	sc.Agent.Seed = 0 // secure noise, as in production
	svc, err := StartService(context.Background(), sc)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	fmt.Println("URL", svc.NATSURL(), svc.Agent().Version())
	select {}
}

// crashBand is the band of the bandmf crash test's agent.
const crashBand = 3

func startChild(t *testing.T, dir string, env ...string) (*exec.Cmd, string, uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "DPRL_CRASH_CHILD="+dir), env...)
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

// driveUsers plays CartPole sessions against the agent at url until ctx
// ends (five users, sessions of at most 31 steps).
func driveUsers(ctx context.Context, t *testing.T, url string, seed, round uint64) (stop func()) {
	return driveNUsers(ctx, t, url, seed, round, 5)
}

// driveNUsers is driveUsers with users users.
func driveNUsers(ctx context.Context, t *testing.T, url string, seed, round uint64, users int) (stop func()) {
	t.Helper()
	nc, err := stream.Connect(url, stream.WithReconnect(0, time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	client, _ := stream.NewClient(nc, stream.WithTimeout(2*time.Second))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	urng := rand.New(rand.NewPCG(seed, round+10))
	go func() {
		defer close(done)
		env := sims.NewCartPole()
		obs := make([]float64, 4)
		for i := 0; ctx.Err() == nil; i++ {
			env.Reset(urng, obs)
			id := fmt.Sprintf("r%d-s%d", round, i)
			var reward float64
			for step := 0; ; step++ {
				a, err := client.Act(ctx, id, fmt.Sprintf("u%d", i%users), obs, reward, step == 0)
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
	return func() {
		cancel()
		nc.Close()
		<-done
	}
}

// TestKill9 kills the agent process at random points while simulated users
// drive it over NATS, restarts it, and checks that it serves the last
// released version, that the ledger verifies (every release has its cost,
// none counted twice, the head file agrees with the store) and that
// versions never go backwards. A kill between a release's commit and its
// head record is one of the points it can hit; the restart then writes the
// record. DPRL_LONG=1 runs 40 rounds instead of 6.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test starts child processes")
	}
	rounds := 6
	if os.Getenv("DPRL_LONG") != "" {
		rounds = 40
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	var last uint64
	for round := 0; round < rounds; round++ {
		cmd, url, ver := startChild(t, dir)
		if ver < last {
			t.Fatalf("round %d: restarted at version %d after %d", round, ver, last)
		}
		stop := driveUsers(context.Background(), t, url, seed, uint64(round))
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		stop()
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

// TestKill9BandedNoise extends TestKill9 to bandmf noise, whose stream
// state (the last band-1 releases' means and released values) is written
// in each release's batch. The first child kills itself (SIGKILL) at its
// third release, between the noise draw and the ledger write; later
// children are killed at random points. After each kill the ledger
// verifies (factor, sensitivity, every user's pattern, the noise records'
// shape, checksums and chaining) and its noise state ends at the head, not
// beyond it (the drawn row that was never written is not in it); each
// restarted agent continues the stream from the persisted state: the
// stream keeps its first version across restarts while releases go on,
// and its records chain across them.
func TestKill9BandedNoise(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test starts child processes")
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	var last, start uint64
	check := func(round int) ledger.NoiseState {
		t.Helper()
		s, err := ledger.Open(dir, ledger.Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		defer s.Close()
		r, err := s.Verify()
		if err != nil || !r.OK() {
			t.Fatalf("round %d: ledger after kill -9: %+v %v", round, r, err)
		}
		ns, err := s.NoiseState()
		if err != nil {
			t.Fatalf("round %d: noise state: %v", round, err)
		}
		if ns.Version != r.Head.Version || r.Head.Version > 0 && len(ns.X) != int(min(crashBand-1, ns.Version-ns.StreamStart+1)) {
			t.Fatalf("round %d: noise state ends at version %d with %d vectors, head version %d", round, ns.Version, len(ns.X), r.Head.Version)
		}
		if start != 0 && ns.StreamStart != start {
			t.Fatalf("round %d: the stream restarted at version %d (it started at %d)", round, ns.StreamStart, start)
		}
		if r.Head.Version < last {
			t.Fatalf("round %d: head version %d < %d", round, r.Head.Version, last)
		}
		last, start = r.Head.Version, ns.StreamStart
		t.Logf("round %d: head version %d, stream from version %d", round, last, start)
		return ns
	}
	// Round 0: the child dies at its third draw, before writing it.
	cmd, url, _ := startChild(t, dir, "DPRL_CRASH_BANDMF=1", "DPRL_CRASH_AT_DRAW=3")
	stop := driveNUsers(context.Background(), t, url, seed, 0, 40)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the child did not reach its third release")
	}
	stop()
	if ns := check(0); ns.Version != 2 || ns.StreamStart != 1 {
		t.Fatalf("after the crash at the third draw: noise state at version %d (stream from %d), want 2 (from 1)", ns.Version, ns.StreamStart)
	}
	for round := 1; round <= 4; round++ {
		cmd, url, ver := startChild(t, dir, "DPRL_CRASH_BANDMF=1")
		if ver != last {
			t.Fatalf("round %d: restarted at version %d, ledger head %d", round, ver, last)
		}
		stop := driveNUsers(context.Background(), t, url, seed, uint64(round), 40)
		// Let it release at least once past the restart before the kill.
		want := countHeads(dir) + 1
		_ = testutil.Wait(time.Minute, func() error {
			if n := countHeads(dir); n < want {
				return fmt.Errorf("%d heads, want %d", n, want)
			}
			return nil
		})
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		stop()
		check(round)
	}
	if last <= 2 {
		t.Errorf("no release after the restarts (head version %d)", last)
	}
}

// TestCorruptDataDir damages a data directory written by a real agent
// process (killed with SIGKILL twice, so it has an SST, a write-ahead log,
// a MANIFEST, the head file and the user key) and starts a real agent on
// each damaged copy: single-byte XORs at spread and seeded random offsets
// of every file, truncations, deletions, an older copy of ledger/ and of
// the head file. Each must end in one of two ways: the agent refuses to
// start with an error wrapping ledger.ErrCorrupt and dprl ledger verify's
// read-only check fails too; or the data is intact: the agent serves the
// same version, and the ledger verifies with every entry and the same head.
// An older copy of the whole directory is caught only by ExpectHead.
// DPRL_LONG=1 tries many more offsets.
func TestCorruptDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	// The exhaustive matrix is ledger.TestCorruptionMatrix; this one checks
	// the same outcomes through a real agent's start.
	spread, random := 3, 2
	if os.Getenv("DPRL_LONG") != "" {
		spread, random = 24, 40
	}
	root := t.TempDir()
	dir, older, olderAll := filepath.Join(root, "data"), filepath.Join(root, "older"), filepath.Join(root, "older-all")
	seed := uint64(1)
	var olderBase ledgerBase
	for round := 0; round < 2; round++ {
		cmd, url, _ := startChild(t, dir)
		stop := driveUsers(context.Background(), t, url, seed, uint64(round))
		// The agent holds the store: watch its head file for three more
		// releases (a loaded machine gets a minute).
		want := countHeads(dir) + 3
		_ = testutil.Wait(time.Minute, func() error {
			if n := countHeads(dir); n < want {
				return fmt.Errorf("%d heads, want %d", n, want)
			}
			return nil
		})
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		stop()
		if round == 0 {
			olderBase = settle(t, dir)
			testutil.MustCopyTree(t, dir, older)
			testutil.MustCopyTree(t, dir, olderAll)
		}
	}
	base := settle(t, dir)
	if base.entries <= olderBase.entries || olderBase.entries == 0 {
		t.Fatalf("the agent released too little to test: %d entries after the first round, %d after the second", olderBase.entries, base.entries)
	}
	t.Logf("base: %d entries, head version %d", base.entries, base.head.Version)
	rng := rand.New(rand.NewPCG(seed, 99))
	type damage struct {
		name  string
		apply func(d string) error
	}
	var damages []damage
	files := listFiles(t, dir)
	for _, f := range files {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		n := int64(len(data))
		if n > 0 {
			offs := map[int64]bool{n - 1: true}
			for i := 0; i < spread; i++ {
				offs[int64(i)*(n-1)/int64(spread-1)] = true
			}
			for i := 0; i < random; i++ {
				offs[rng.Int64N(n)] = true
			}
			for off := range offs {
				mask := byte(1 + rng.IntN(255))
				damages = append(damages, damage{fmt.Sprintf("%s flip@%d^%#02x", f, off, mask), func(d string) error {
					p := filepath.Join(d, f)
					b, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					b[off] ^= mask
					return os.WriteFile(p, b, 0o600)
				}})
			}
			damages = append(damages, damage{f + " truncate@half", func(d string) error { return os.Truncate(filepath.Join(d, f), n/2) }})
		}
		damages = append(damages, damage{f + " delete", func(d string) error { return os.Remove(filepath.Join(d, f)) }})
	}
	damages = append(damages,
		damage{"ledger/ older copy", func(d string) error {
			os.RemoveAll(filepath.Join(d, "ledger"))
			testutil.MustCopyTree(t, filepath.Join(older, "ledger"), filepath.Join(d, "ledger"))
			return nil
		}},
		damage{"ledger.heads older copy", func(d string) error {
			b, err := os.ReadFile(filepath.Join(older, "ledger.heads"))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(d, "ledger.heads"), b, 0o600)
		}})
	counts := map[string]int{}
	for i, dm := range damages {
		d := filepath.Join(root, fmt.Sprintf("case%d", i))
		testutil.MustCopyTree(t, dir, d)
		if err := dm.apply(d); err != nil {
			t.Fatalf("%s: %v", dm.name, err)
		}
		out := judgeAgent(t, d, base, nil)
		counts[out]++
		if out != "intact" && out != "refused" {
			t.Errorf("%s: %s", dm.name, out)
		}
		os.RemoveAll(d)
	}
	t.Logf("%d damaged copies: %v", len(damages), counts)
	// The whole directory rolled back: undetectable inside it, caught by
	// the recorded head.
	ref := &ledger.HeadRef{Seq: base.head.Seq, Hash: base.head.Hash}
	if out := judgeAgent(t, olderAll, olderBase, nil); out != "intact" {
		t.Errorf("the older directory on its own: %s", out)
	}
	if out := judgeAgent(t, olderAll, base, ref); out != "refused" {
		t.Errorf("the older directory with the recorded head: %s", out)
	}
}

// ledgerBase is what an intact data directory holds.
type ledgerBase struct {
	head    ledger.Head
	entries int
}

// settle opens the ledger for writing once (writing a head record a kill
// left out) and returns what it holds.
func settle(t *testing.T, dir string) ledgerBase {
	t.Helper()
	s, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Verify()
	if err != nil || !r.OK() {
		t.Fatalf("verify: %+v %v", r, err)
	}
	return ledgerBase{head: r.Head, entries: r.Entries}
}

// judgeAgent starts a real agent on dir and says "refused" (a clear
// ErrCorrupt error, and the read-only verify fails too), "intact" (it
// serves the base's version and the ledger verifies with the base's
// entries and head), or what went wrong.
func judgeAgent(t *testing.T, dir string, base ledgerBase, expect *ledger.HeadRef) string {
	t.Helper()
	cfg := cartpoleConfig(2)
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: dir, NATS: "embedded", ExpectHead: expect})
	verifyOK, vmsg := readOnlyVerify(dir, expect)
	if err != nil {
		if !errors.Is(err, ledger.ErrCorrupt) {
			return fmt.Sprintf("refused without ErrCorrupt: %v", err)
		}
		if verifyOK {
			return fmt.Sprintf("the agent refused (%v) but verify passes", err)
		}
		return "refused"
	}
	ver := svc.Agent().Version()
	h, _ := svc.Store().Head()
	if err := svc.Close(); err != nil {
		return fmt.Sprintf("close: %v", err)
	}
	if ver != base.head.Version || h != base.head {
		return fmt.Sprintf("STARTED AT ANOTHER HEAD: version %d head %d, want version %d head %d (verify: %v %s)", ver, h.Seq, base.head.Version, base.head.Seq, verifyOK, vmsg)
	}
	s, err := ledger.Open(dir, ledger.Options{ReadOnly: true})
	if err != nil {
		return fmt.Sprintf("started, then: %v", err)
	}
	defer s.Close()
	r, err := s.Verify()
	if err != nil || !r.OK() || r.Entries != base.entries || r.Head != base.head {
		return fmt.Sprintf("started, then verify: %v %+v", err, r)
	}
	return "intact"
}

// readOnlyVerify is dprl ledger verify on dir.
func readOnlyVerify(dir string, expect *ledger.HeadRef) (bool, string) {
	s, err := ledger.Open(dir, ledger.Options{ReadOnly: true, MustExist: true, ExpectHead: expect})
	if err != nil {
		return false, err.Error()
	}
	defer s.Close()
	r, err := s.Verify()
	if err != nil {
		return false, err.Error()
	}
	return r.OK(), strings.Join(r.Problems, "; ")
}

// countHeads counts the commit records of dir's head file (read while the
// agent runs).
func countHeads(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "ledger.heads"))
	if err != nil {
		return 0
	}
	return max(len(b)/64-1, 0)
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// Regular files only: a killed agent leaves its live view's
		// socket (DIR/live/socket), which holds no data.
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files
}
