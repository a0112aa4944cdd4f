package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/agent"
	"dprl/agent/internal/agenttest"
	"dprl/internal/fielderr"
	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/policy"
	"dprl/policy/sac"
	"dprl/sessionlog"
)

// TestFixedPolicyServes: an agent serving a fixed SAC actor, over a real
// embedded NATS server and Pebble ledger, answers acts with actions inside
// the actor's box (continuous, on the wire), ends sessions as not learned
// from, logs every session with each action's log-density (the actor's
// own density of the logged action at the logged observation: the action
// came from it), and writes nothing to the ledger: no entry, no release,
// no user charged, no epsilon reported.
func TestFixedPolicyServes(t *testing.T) {
	cfg := pendulumFixed(t)
	logs := t.TempDir()
	svc := startService(t, cfg, func(sc *ServiceConfig) { sc.SessionLogDir = logs })
	_, c := dial(t, svc)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	const sessions, steps = 6, 12
	for i := range sessions {
		id, user := fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i%3)
		for step := range steps {
			obs := []float64{math.Cos(float64(step)), math.Sin(float64(step)), rng.NormFloat64()}
			act, err := c.Act(ctx, id, user, obs, -1, step == 0)
			if err != nil {
				t.Fatalf("session %s step %d: %v", id, step, err)
			}
			if len(act.Vec) != 1 || !(act.Vec[0] >= -2 && act.Vec[0] <= 2) {
				t.Fatalf("session %s step %d: action %+v, want one value in [-2, 2]", id, step, act)
			}
		}
		r, err := c.EndAs(ctx, id, user, -1, i%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Used || !strings.Contains(r.Reason, "fixed policy") {
			t.Errorf("end of %s: used %v, reason %q: want not learned from, for a fixed policy", id, r.Used, r.Reason)
		}
	}
	a := svc.Agent()
	if st := a.Stats(); st.Version != 0 || st.Updates != 0 || st.Epsilon != 0 || st.Delta != 0 || st.FixedPolicy != cfg.Fixed.ID() {
		t.Errorf("stats %+v: want version 0, no update, no epsilon, the snapshot named", st)
	}
	if n := testutil.MetricValue(t, a.Metrics().SessionsDiscarded.WithLabelValues("fixed_policy")); n != sessions {
		t.Errorf("%v sessions counted as not learned from (fixed_policy), want %d", n, sessions)
	}
	if n := testutil.MetricValue(t, a.Metrics().SessionsQueued); n != 0 {
		t.Errorf("%v sessions queued for learning, want 0", n)
	}
	if a.SessionMemory() != 0 {
		t.Errorf("%d bytes still charged to the session memory after every session ended", a.SessionMemory())
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	// The ledger: no entry at all, no user charged.
	st, err := ledger.Open(svc.policies[0].dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := st.Head()
	if err != nil || h.Seq != 0 || h.Version != 0 {
		t.Errorf("ledger head %+v (%v) after serving a fixed policy, want no entry", h, err)
	}
	users := 0
	if err := st.Users(func(ledger.UserKey, ledger.UserState) error { users++; return nil }); err != nil || users != 0 {
		t.Errorf("%d users in the ledger (%v), want none", users, err)
	}
	// The session log: every session, with the actor's log-densities.
	actor := cfg.Fixed.Actor.Clone()
	ss := agenttest.LoggedSessions(t, logs, sessionlog.Spec{ObsDim: 3, Discrete: -1, ActDim: 1})
	n := len(ss)
	for _, s := range ss {
		if s.PolicyVersion != nil {
			t.Errorf("session %s logged with policy version %d: a fixed policy has no version of the agent's", s.Session, *s.PolicyVersion)
		}
		if want := steps - 1 + btoi(s.Terminal); len(s.Steps) != want {
			t.Errorf("session %s: %d steps logged, want %d", s.Session, len(s.Steps), want)
		}
		for k, step := range s.Steps {
			d := actor.LogDensity(step.Obs, step.Action.Vec)
			if math.IsNaN(step.LogP) || math.IsInf(step.LogP, 0) || math.Abs(d-step.LogP) > 1e-9*max(1, math.Abs(d)) {
				t.Fatalf("session %s step %d: logged log-density %v, the actor's density of the logged action %v", s.Session, k, step.LogP, d)
			}
		}
	}
	if n != sessions {
		t.Errorf("%d sessions logged, want %d", n, sessions)
	}
}

// TestServePolicySettings: --serve-policy reads and checks the snapshot at
// configuration time; a missing or corrupt file, a discrete or mismatched
// spec, a learner setting and models are refused, each naming the setting
// at fault; a matching --env or --obs-dim is accepted, with the snapshot's
// action dimension.
func TestServePolicySettings(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.snap")
	snap := agenttest.SACSnapshot(t, 3, []float64{-2}, []float64{2}, agenttest.PrivateProvenance())
	if err := os.WriteFile(good, snap, 0o600); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.snap")
	bad := append([]byte(nil), snap...)
	bad[len(bad)/2] ^= 1
	if err := os.WriteFile(corrupt, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.json")
	if err := os.WriteFile(junk, []byte(`{"x":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	unitBox := filepath.Join(dir, "unit.snap")
	if err := os.WriteFile(unitBox, agenttest.SACSnapshot(t, 3, []float64{-1}, []float64{1}, agenttest.PrivateProvenance()), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func() Settings {
		return Settings{DataDir: t.TempDir(), EnvSpec: "pendulum", ServePolicy: good, Delta: 1e-5,
			MaxOpenSessions: 100000, MaxStepsPerSession: 10000, IdleTimeout: 5 * time.Minute, FlushTimeout: time.Minute,
			MaxSessionLifetime: time.Hour, MaxSessionsPerUser: 16, MaxSessionsPerConnection: 10000, MaxQueuedPerUser: 2,
			SessionMemoryMiB: 1024, RewardLow: math.NaN(), RewardHigh: math.NaN(), NATS: "embedded", NATSListen: "127.0.0.1:4222", Prefix: "dprl"}
	}
	for _, c := range []struct {
		name   string
		mod    func(*Settings)
		field  string // the field the error names ("": accepted)
		want   string
		target error
	}{
		{"pendulum", func(*Settings) {}, "", "", nil},
		{"obs-dim", func(s *Settings) { s.EnvSpec, s.ObsDim = "", 3 }, "", "", nil},
		{"missing file", func(s *Settings) { s.ServePolicy = filepath.Join(dir, "nope.snap") }, "ServePolicy", "no such file", os.ErrNotExist},
		{"corrupt file", func(s *Settings) { s.ServePolicy = corrupt }, "ServePolicy", "checksum", sac.ErrSnapshot},
		// A file that is no policy snapshot: the error says which kinds are.
		{"corrupt file, kinds", func(s *Settings) { s.ServePolicy = corrupt }, "ServePolicy", agent.FixedPolicyKinds, sac.ErrSnapshot},
		{"not a policy", func(s *Settings) { s.ServePolicy = junk }, "ServePolicy", `unknown field "x" (` + agent.FixedPolicyKinds + ")", nil},
		{"discrete env", func(s *Settings) { s.EnvSpec = "cartpole" }, "EnvSpec", "discrete actions", nil},
		{"discrete actions", func(s *Settings) { s.EnvSpec, s.ObsDim, s.Actions = "", 3, 2 }, "Actions", "discrete actions", nil},
		{"obs mismatch", func(s *Settings) { s.EnvSpec, s.ObsDim = "", 4 }, "ObsDim", "takes 3 observation values", nil},
		{"env mismatch", func(s *Settings) { s.EnvSpec = "cartpole-swingup" }, "EnvSpec", "takes 3 observation values and gives 1 action values, <EnvSpec> cartpole-swingup has", nil},
		{"env box", func(s *Settings) { s.ServePolicy = unitBox }, "EnvSpec", "acts in the box [-1] to [1], <EnvSpec> pendulum's actions are in [-2] to [2]", nil},
		{"obs-dim, any box", func(s *Settings) { s.EnvSpec, s.ObsDim, s.ServePolicy = "", 3, unitBox }, "", "", nil},
		{"K", func(s *Settings) { s.K = 8 }, "K", "does not apply", nil},
		{"z", func(s *Settings) { s.Z = 1 }, "Z", "does not apply", nil},
		{"user epsilon", func(s *Settings) { s.UserEpsilon = 4 }, "UserEpsilon", "does not apply", nil},
		{"explicit delta", func(s *Settings) { s.Explicit = func(f string) bool { return f == "Delta" } }, "Delta", "does not apply", nil},
		{"models", func(s *Settings) { s.Models = ModelEntries{{Name: "a", Values: map[string]string{}}} }, "ServePolicy", "models", nil},
	} {
		s := base()
		c.mod(&s)
		sc, err := s.ServiceConfig()
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			if f := sc.Agent.Fixed; f == nil || f.Source != s.ServePolicy || sc.Agent.Spec != (policy.Spec{ObsDim: 3, Kind: policy.ActionContinuous, ActionDim: 1}) {
				t.Errorf("%s: fixed policy %+v, spec %+v", c.name, f, sc.Agent.Spec)
			}
			if !strings.Contains(sc.CheckSummary(), "spends no privacy budget") {
				t.Errorf("%s: check summary %q does not say the fixed policy spends no budget", c.name, sc.CheckSummary())
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		msg := fielderr.Rename(err, func(f string) string { return "<" + f + ">" }).Error()
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "<"+c.field+">") || c.target != nil && !errors.Is(err, c.target) {
			t.Errorf("%s: %s, want an error naming %s and saying %q", c.name, msg, c.field, c.want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
