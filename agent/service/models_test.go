package service

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

// baseSettings are valid top-level settings without a policy spec.
func baseSettings(t *testing.T) Settings {
	return Settings{DataDir: t.TempDir(), Delta: 1e-5, SessionMemoryMiB: 64, MaxOpenSessions: 10, MaxStepsPerSession: 100,
		IdleTimeout: 1e9, FlushTimeout: 1e9, MaxSessionLifetime: 1e10, MaxSessionsPerUser: 1, MaxSessionsPerConnection: 10,
		MaxQueuedPerUser: 1, RewardLow: math.NaN(), RewardHigh: math.NaN(), NATSListen: "127.0.0.1:0"}
}

func entries(t *testing.T, specs ...string) ModelEntries {
	t.Helper()
	var m ModelEntries
	for _, s := range specs {
		if err := m.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestModelEntriesSet: the compact and the JSON forms give the same
// entries; malformed ones are refused.
func TestModelEntriesSet(t *testing.T) {
	compact := entries(t, "cartpole:env-spec=cartpole,K=8", "tiny:obs-dim=3,actions=2,init=true", "bare")
	js := entries(t, `[{"name":"cartpole","env-spec":"cartpole","K":8},{"name":"tiny","obs-dim":3,"actions":2,"init":true}]`, `{"name":"bare"}`)
	if compact.String() != js.String() || compact.String() != "cartpole:K=8,env-spec=cartpole tiny:actions=2,init=true,obs-dim=3 bare" {
		t.Errorf("compact %q, JSON %q", compact.String(), js.String())
	}
	for _, bad := range []string{"a:K", "a:=3", `[{"env-spec":"cartpole"}]`, `[{"name":"a","K":[8]}]`, `{"name":"a"} x`, "a:K=1,K=2", "[1]",
		`[{"name":"a","user-epsilon":1,"user-epsilon":100}]`, `{"name":"a","name":"b"}`} {
		var m ModelEntries
		if err := m.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted: %v", bad, m)
		}
	}
}

// TestForModelInherits: unset values come from the top level; the spec and
// the noise are inherited whole; the ledger, session log and seed are the
// model's own.
func TestForModelInherits(t *testing.T) {
	top := baseSettings(t)
	top.EnvSpec, top.Z, top.K, top.UserEpsilon, top.SessionLogDir, top.Seed, top.ExpectHead = "cartpole", 2, 8, 4, "/logs", 7, "3:abc"
	top.Explicit = func(f string) bool { return f == "Z" || f == "K" || f == "UserEpsilon" }
	m, err := top.ForModel(ModelEntry{Name: "tiny", Values: map[string]string{"obs-dim": "3", "actions": "2", "session-epsilon": "1", "K": "4"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.EnvSpec != "" || m.ObsDim != 3 || m.Z != 0 || m.SessionEpsilon != 1 || m.K != 4 || m.UserEpsilon != 4 {
		t.Errorf("settings %+v", m)
	}
	if m.DataDir != filepath.Join(top.DataDir, "models", "tiny") || m.SessionLogDir != filepath.Join("/logs", "tiny") || m.ExpectHead != "" {
		t.Errorf("dirs %q %q %q", m.DataDir, m.SessionLogDir, m.ExpectHead)
	}
	if m.Seed == 0 || m.Seed == top.Seed {
		t.Errorf("seed %d: want one derived from %d", m.Seed, top.Seed)
	}
	if other, _ := top.ForModel(ModelEntry{Name: "other"}); other.Seed == m.Seed {
		t.Error("two models drew the same seed")
	}
	for f, want := range map[string]bool{"Z": false, "SessionEpsilon": true, "K": true, "UserEpsilon": true, "Clip": false} {
		if m.Explicit(f) != want {
			t.Errorf("Explicit(%s) = %v, want %v", f, m.Explicit(f), want)
		}
	}
	sc, err := m.ServiceConfig()
	if err != nil || sc.Agent.Spec.ObsDim != 3 || sc.Agent.Policy.DP.UsersPerUpdate != 4 || sc.Agent.UserEpsilon != 4 {
		t.Fatalf("ServiceConfig: %+v %v", sc.Agent, err)
	}
}

// TestMultiServiceConfig: models give one ModelConfig each, with the
// process-level settings once; every bad entry is an error naming it.
func TestMultiServiceConfig(t *testing.T) {
	top := baseSettings(t)
	top.K = 8
	top.Models = entries(t, "cartpole:env-spec=cartpole", "tiny:obs-dim=3,actions=3,K=4,max-updates-per-user=2")
	sc, err := top.ServiceConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Models) != 2 || sc.DataDir != top.DataDir || sc.NATSListen != "127.0.0.1:0" || sc.Agent.Spec.ObsDim != 0 {
		t.Fatalf("service config %+v", sc)
	}
	cp, tiny := sc.Models[0].Agent, sc.Models[1].Agent
	if cp.Spec.ObsDim != 4 || cp.Policy.DP.UsersPerUpdate != 8 || cp.MaxUpdatesPerUser != DefaultMaxUpdatesPerUser || cp.RewardHigh != 1 {
		t.Errorf("cartpole: %+v", cp)
	}
	if tiny.Spec.NumActions != 3 || tiny.Policy.DP.UsersPerUpdate != 4 || tiny.MaxUpdatesPerUser != 2 {
		t.Errorf("tiny: %+v", tiny)
	}
	summary := sc.CheckSummary()
	for _, want := range []string{"configuration OK: 2 models", "model cartpole (subjects dprl.cartpole.v1.*)", "model tiny (subjects dprl.tiny.v1.*): obs dim 3, 3 actions, K = 4", "a user of every model: epsilon at most"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}

	for _, c := range []struct {
		name   string
		models []string
		top    func(*Settings)
		want   string
	}{
		{"duplicate", []string{"a:env-spec=cartpole", "b:env-spec=cartpole", "a:env-spec=pendulum"}, nil, `model "a": given twice (entries 1 and 3)`},
		{"bad name", []string{"a:env-spec=cartpole", "Big.Name:env-spec=cartpole"}, nil, `model entry 2: model name "Big.Name"`},
		{"empty name", []string{":env-spec=cartpole"}, nil, `model entry 1: model name ""`},
		{"unknown env", []string{"a:env-spec=cartpole", "b:env-spec=nosuchenv"}, nil, `model "b": `},
		{"no spec", []string{"a"}, nil, `model "a": give {EnvSpec} NAME`},
		{"unknown key", []string{"a:env-spec=cartpole,bogus=1"}, nil, `model "a": unknown key "bogus"`},
		{"shared key", []string{"a:env-spec=cartpole,http=127.0.0.1:1"}, nil, `model "a": key "http" is the process's`},
		{"bad value", []string{"a:env-spec=cartpole,K=eight"}, nil, `model "a": K = "eight"`},
		{"explicit zero", []string{"a:env-spec=cartpole,z=0"}, nil, `model "a": {Z} 0: want > 0`},
		{"top expect-head", []string{"a:env-spec=cartpole"}, func(s *Settings) { s.ExpectHead = "1:ab" }, "{ExpectHead} names one ledger's head"},
		{"both noises", []string{"a:env-spec=cartpole,z=2,session-epsilon=1"}, nil, `model "a": {SessionEpsilon} and {Z} both set`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := baseSettings(t)
			s.Models = entries(t, c.models...)
			if c.top != nil {
				c.top(&s)
			}
			_, err := s.ServiceConfig()
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if fe := (*fielderr.Error)(nil); errors.As(err, &fe) {
				msg = fielderr.Rename(err, func(f string) string { return "{" + f + "}" }).Error()
			}
			if !strings.Contains(msg, c.want) {
				t.Fatalf("%s, want %s", msg, c.want)
			}
		})
	}
}
