package agent

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/policy"
)

// bandedConfig is cartpoleConfig(K) with bandmf noise of band bands and a
// cap of k updates per user.
func bandedConfig(K, band, k int) Config {
	cfg := cartpoleConfig(K)
	cfg.Policy.DP.Noise, cfg.Policy.DP.Band = policy.NoiseBandedSqrt, band
	cfg.MaxUpdatesPerUser = k
	return cfg
}

// TestBandedAgent runs an agent with bandmf noise: a returning user's
// session within the band of their last update is set aside (reason
// user_min_separation), one at the cap as before; every release records
// the stream and its noise state; the ledger verifies; a restart with the
// same settings continues the stream from the persisted state, one with
// another band starts a new stream.
func TestBandedAgent(t *testing.T) {
	dir := t.TempDir()
	const band, k = 3, 2
	cfg := bandedConfig(2, band, k)
	a, store, stop := startAgent(t, cfg, dir)
	rng := rand.New(rand.NewPCG(1, 2))
	play := func(id, user string) EndResult {
		t.Helper()
		_, end := playEpisode(t, a, id, user, rng, 16)
		return end
	}
	waitVersion := func(a *Agent, v uint64) {
		t.Helper()
		testutil.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("version %d", v), func() bool { return a.Version() >= v })
	}
	used := func(id, user string) {
		t.Helper()
		if end := play(id, user); !end.Used {
			t.Fatalf("%s of %s set aside: %s", id, user, end.Reason)
		}
	}
	used("s1", "u0")
	used("s2", "u1")
	waitVersion(a, 1)
	// u0 took part in version 1: the next release is 2, closer than 3.
	play("s3", "u0")
	waitDiscarded(t, a, reasonUserSeparation.label(), 1)
	used("s4", "u2")
	used("s5", "u3")
	waitVersion(a, 2)
	used("s6", "u4")
	used("s7", "u5")
	waitVersion(a, 3)
	used("s8", "u0") // version 4, 3 after version 1
	used("s9", "u6")
	waitVersion(a, 4)
	used("s10", "u7")
	used("s11", "u8")
	waitVersion(a, 5)
	used("s12", "u9")
	used("s13", "u10")
	waitVersion(a, 6)
	used("s14", "u11")
	used("s15", "u12")
	waitVersion(a, 7)
	// u0: two updates, the cap.
	play("s16", "u0")
	waitDiscarded(t, a, reasonUserUpdateCap.label(), 1)
	r, err := store.Verify()
	if err != nil || !r.OK() || r.Releases != 7 {
		t.Fatalf("verify: %+v %v", r, err)
	}
	ns, err := store.NoiseState()
	if err != nil || ns.Version != 7 || ns.StreamStart != 1 || len(ns.X) != band-1 || ns.Band != band || ns.MaxParticipations != k {
		t.Fatalf("noise state: version %d start %d, %d vectors, %v", ns.Version, ns.StreamStart, len(ns.X), err)
	}
	e := agenttest.LastEntry(t, store)
	if c := e.Correlation; c == nil || c.Band != band || c.MinSeparation != band || c.MaxParticipations != k || c.StreamStart != 1 ||
		math.Abs(c.Sensitivity-math.Sqrt(k)) > 1e-5 || !strings.Contains(e.Mechanism, "banded square-root") {
		t.Fatalf("last entry: %+v %+v", e, e.Correlation)
	}
	u0, _ := store.UserState(store.User("u0"))
	if u0.Updates != 2 || u0.LastVersion != 4 {
		t.Fatalf("u0: %+v", u0)
	}
	stop()

	// Restart with the same settings: the stream goes on.
	a, store, stop = startAgent(t, cfg, dir)
	used("s17", "u13")
	used("s18", "u14")
	waitVersion(a, 8)
	if e := agenttest.LastEntry(t, store); e.Correlation == nil || e.Correlation.StreamStart != 1 {
		t.Fatalf("after a restart: %+v", e.Correlation)
	}
	if r, err := store.Verify(); err != nil || !r.OK() {
		t.Fatalf("verify after the restart: %+v %v", r, err)
	}
	stop()

	// Another band: a new stream from version 9.
	cfg4 := bandedConfig(2, 4, k)
	a, store, stop = startAgent(t, cfg4, dir)
	defer stop()
	used("s19", "u15")
	used("s20", "u16")
	waitVersion(a, 9)
	if e := agenttest.LastEntry(t, store); e.Correlation == nil || e.Correlation.StreamStart != 9 || e.Correlation.Band != 4 {
		t.Fatalf("another band: %+v", e.Correlation)
	}
	ns, err = store.NoiseState()
	if err != nil || ns.StreamStart != 9 || len(ns.X) != 1 {
		t.Fatalf("new stream's state: start %d, %d vectors, %v", ns.StreamStart, len(ns.X), err)
	}
	if r, err := store.Verify(); err != nil || !r.OK() {
		t.Fatalf("verify after the new stream: %+v %v", r, err)
	}
}

// TestBandedReleaseRefusedByLedger checks the ledger as the backstop of the
// pattern: a release the agent would have formed without its check is
// refused with ErrParticipation.
func TestBandedReleaseRefusedByLedger(t *testing.T) {
	s := agenttest.OpenStore(t, t.TempDir())
	defer s.Close()
	c, err := ledger.BandedCorrelation(3, 3, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := ledger.Entry{Unit: ledger.UnitSession, Mechanism: "m", Events: []accountant.Event{accountant.Gaussian(1)}, Method: accountant.MethodAnalytic,
		Delta: 1e-5, Z: 1, S: 1, K: 1, Participants: 1, Correlation: c}
	e.Epsilon, _ = accountant.GaussianEpsilon(1, 1e-5)
	step := &ledger.NoiseStep{X: []float64{0}, G: []float64{0}}
	u := s.User("u")
	if _, err := s.Release(ledger.Release{Version: 1, Snapshot: []byte("a"), Entry: e, Users: []ledger.UserKey{u}, Noise: step}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ledger.Release{Version: 2, Snapshot: []byte("b"), Entry: e, Users: []ledger.UserKey{u}, Noise: step}); !errors.Is(err, ledger.ErrParticipation) {
		t.Fatalf("second participation one release later: %v", err)
	}
}
