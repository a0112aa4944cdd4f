package demo

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"dprl/agent/service"
	"dprl/ledger"
	"dprl/sims"
)

// TestBanditDemoEvaluatesExactly: a bandit demo scores its releases exactly
// (the simulator's click probabilities on fixed held-out users, no click
// sampled: it printed the mean of 10 sampled clicks) and prints the random,
// best-fixed and oracle baselines on the same users, labelled simulation
// only; every evaluation is recomputed exactly from the ledger's snapshot.
func TestBanditDemoEvaluatesExactly(t *testing.T) {
	cfg := Config{Env: "bandit", Users: 48, Concurrency: 4, Seed: 3, Pace: PaceLockstep, EvalEvery: 1, EvalEpisodes: 10, Z: 1, K: 16}
	ac := agentConfigOf(t, cfg)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, service.ServiceConfig{Agent: ac, DataDir: dir, NATS: "embedded", NATSListen: "127.0.0.1:0"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := res.SimExact
	if x == nil {
		t.Fatal("no exact evaluation on the bandit")
	}
	env, err := sims.New("bandit")
	if err != nil {
		t.Fatal(err)
	}
	users, err := env.(*sims.Bandit).HeldOut(HeldOutUsers, heldOutRand())
	if err != nil {
		t.Fatal(err)
	}
	bl := users.Baselines()
	if x.Users != HeldOutUsers || x.Version != res.Version || x.Version != 3 || x.Policy != res.SimFinalEval.MeanReturn ||
		x.Uniform != bl.Uniform || x.BestFixed != bl.BestFixed || x.BestItem != bl.BestArm || x.Oracle != bl.Oracle {
		t.Errorf("exact evaluation %+v, baselines %+v", x, bl)
	}
	// The reference values of docs/agent.md (10^6 users): 0.2328, 0.4597, 0.7288.
	for _, c := range [][2]float64{{x.Uniform, 0.2328}, {x.BestFixed, 0.4597}, {x.Oracle, 0.7288}} {
		if math.Abs(c[0]-c[1]) > 0.01 {
			t.Errorf("baseline %v, want about %v", c[0], c[1])
		}
	}
	if !(x.Policy > 0 && x.Policy < x.Oracle) {
		t.Errorf("policy %v outside (0, oracle %v)", x.Policy, x.Oracle)
	}
	store, err := ledger.Open(dir, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, e := range append(res.SimEval, res.SimFinalEval) {
		got, err := ExactRelease(store, ac.Spec, ac.Policy, users, e.Version)
		if err != nil {
			t.Fatal(err)
		}
		if got != e.MeanReturn {
			t.Errorf("version %d: reported %v, exact %v", e.Version, e.MeanReturn, got)
		}
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"simulation only (the simulator's users, not private data; exact click probabilities, no click sampled)",
		"released policy version 3's expected click per session", "on 20000 fixed held-out users", "a uniformly random item 0.23",
		"the best fixed item (item ", "the per-user oracle 0.72"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text %q\nwant %q", b.String(), want)
		}
	}
	if strings.Contains(b.String(), "fresh simulator episodes") {
		t.Errorf("text %q samples episodes on the bandit", b.String())
	}
}
