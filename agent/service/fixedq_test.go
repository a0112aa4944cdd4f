package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/agent"
	"dprl/agent/internal/agenttest"
	"dprl/internal/fielderr"
	"dprl/ledger"
	"dprl/policy"
	"dprl/policy/qnet"
	"dprl/profile"
	"dprl/sessionlog"
)

// TestFixedQPolicyServes: an agent serving a Q-network policy (dprl
// offline learn --out) over a real embedded NATS server and Pebble ledger
// answers each act with the policy's greedy action, logs every session with
// probability 1 for each action, and writes nothing to the ledger.
func TestFixedQPolicyServes(t *testing.T) {
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	b := agenttest.QSnapshot(t, agenttest.PrivateProvenance())
	f, err := agent.ParseFixedPolicy(b, "q.json")
	if err != nil {
		t.Fatal(err)
	}
	if f.Q == nil || f.Actor != nil || !strings.HasPrefix(f.ID(), "qlearn-bcq crc32c:") {
		t.Fatalf("parsed %+v, id %s", f, f.ID())
	}
	_, ref, err := qnet.ParseSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig(spec, pc)
	cfg.Fixed, cfg.Seed = f, 3
	logs := t.TempDir()
	svc := startService(t, cfg, func(sc *ServiceConfig) { sc.SessionLogDir = logs })
	_, c := dial(t, svc)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	const sessions, steps = 4, 10
	for i := range sessions {
		id, user := fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i)
		for step := range steps {
			obs := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64() / 10, rng.NormFloat64()}
			act, err := c.Act(ctx, id, user, obs, 1, step == 0)
			if err != nil {
				t.Fatalf("session %s step %d: %v", id, step, err)
			}
			if act.Vec != nil || act.Index != ref.Act(obs) {
				t.Fatalf("session %s step %d: action %+v, want the greedy %d", id, step, act, ref.Act(obs))
			}
		}
		if _, err := c.EndAs(ctx, id, user, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	if st := svc.Agent().Stats(); st.Epsilon != 0 || st.Updates != 0 || st.FixedPolicy != f.ID() {
		t.Errorf("stats %+v: want no update, no epsilon, the snapshot named", st)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := ledger.Open(svc.policies[0].dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if h, err := st.Head(); err != nil || h.Seq != 0 {
		t.Errorf("ledger head %+v (%v) after serving a fixed policy, want no entry", h, err)
	}
	ss := agenttest.LoggedSessions(t, logs, sessionlog.Spec{ObsDim: 4, Discrete: 2})
	n := len(ss)
	for _, s := range ss {
		for k, step := range s.Steps {
			if step.LogP != 0 || step.Action.Index != ref.Act(step.Obs) {
				t.Fatalf("session %s step %d: logged action %d with log-probability %v, want the greedy %d with 0", s.Session, k, step.Action.Index, step.LogP, ref.Act(step.Obs))
			}
		}
	}
	if n != sessions {
		t.Errorf("%d sessions logged, want %d", n, sessions)
	}
}

// TestServeQPolicySettings: a Q-network policy is served on a matching
// discrete --env or --obs-dim/--actions, and refused, naming the setting,
// on a continuous simulator, other dimensions, or another simulator than
// the one it was trained on.
func TestServeQPolicySettings(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "q.json")
	b := agenttest.QSnapshot(t, agenttest.PrivateProvenance())
	if err := os.WriteFile(good, b, 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(strings.Replace(string(b), `"env":"cartpole"`, `"env":"riverswim"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	base := Settings{DataDir: t.TempDir(), EnvSpec: "cartpole", ServePolicy: good, Delta: 1e-5,
		MaxOpenSessions: 100000, MaxStepsPerSession: 10000, IdleTimeout: 1e12, FlushTimeout: 6e10,
		MaxSessionLifetime: 36e11, MaxSessionsPerUser: 16, MaxSessionsPerConnection: 10000, MaxQueuedPerUser: 2,
		SessionMemoryMiB: 1024, RewardLow: 0, RewardHigh: 1, NATS: "embedded", NATSListen: "127.0.0.1:4222", Prefix: "dprl"}
	for _, c := range []struct {
		name, field, want string
		mod               func(*Settings)
	}{
		{"cartpole", "", "", func(*Settings) {}},
		{"obs-dim and actions", "", "", func(s *Settings) { s.EnvSpec, s.ObsDim, s.Actions = "", 4, 2 }},
		{"obs-dim alone", "", "", func(s *Settings) { s.EnvSpec, s.ObsDim = "", 4 }},
		{"continuous env", "EnvSpec", "discrete", func(s *Settings) { s.EnvSpec = "pendulum" }},
		{"actions", "Actions", "chooses among 2 actions", func(s *Settings) { s.EnvSpec, s.ObsDim, s.Actions = "", 4, 3 }},
		{"other simulator", "ServePolicy", "trained and evaluated on riverswim, not <EnvSpec> cartpole", func(s *Settings) { s.ServePolicy = other }},
	} {
		s := base
		c.mod(&s)
		sc, err := s.ServiceConfig()
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if sc.Agent.Fixed == nil || sc.Agent.Fixed.Q == nil || sc.Agent.Spec != (policy.Spec{ObsDim: 4, Kind: policy.ActionDiscrete, NumActions: 2}) {
				t.Errorf("%s: fixed %+v, spec %+v", c.name, sc.Agent.Fixed, sc.Agent.Spec)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if msg := fielderr.Rename(err, func(f string) string { return "<" + f + ">" }).Error(); !strings.Contains(msg, c.want) || !strings.Contains(msg, "<"+c.field+">") {
			t.Errorf("%s: %s, want an error naming %s and saying %q", c.name, msg, c.field, c.want)
		}
	}
}
