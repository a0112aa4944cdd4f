package service_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"dprl/agent/service"
)

// TestSessionLogFormatRefusals: --session-log-format dsjson is refused at
// start, naming the flags, for a policy whose sessions DSJSON could never
// hold (continuous actions, a simulator whose episodes are longer than one
// step) and without --log-sessions; an unknown format is refused; the
// bandit simulator, a policy without a simulator and the default format
// are accepted. A model's own format is checked with its own simulator.
func TestSessionLogFormatRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*service.Settings)
		want string // "" accepted
	}{
		{"bandit", func(s *service.Settings) { s.EnvSpec = "bandit" }, ""},
		{"no simulator", func(s *service.Settings) { s.EnvSpec, s.ObsDim, s.Actions = "", 3, 4 }, ""},
		{"default format, cartpole", func(s *service.Settings) { s.SessionLogFormat = service.SessionLogV1 }, ""},
		{"no format given, cartpole", func(s *service.Settings) { s.SessionLogFormat = "" }, ""},
		{"cartpole", nil, "--session-log-format dsjson with --env cartpole: its sessions last up to 500 steps, and a DSJSON line is one decision"},
		{"recsys", func(s *service.Settings) { s.EnvSpec = "recsys" }, "--session-log-format dsjson with --env recsys: its sessions last up to"},
		{"riverswim", func(s *service.Settings) { s.EnvSpec = "riverswim" }, "--env riverswim: its sessions last up to 20 steps"},
		{"continuous actions", func(s *service.Settings) { s.EnvSpec = "pendulum" }, "--session-log-format dsjson with continuous actions"},
		{"without a log", func(s *service.Settings) { s.EnvSpec, s.SessionLogDir = "bandit", "" }, "--session-log-format dsjson without --log-sessions"},
		{"unknown format", func(s *service.Settings) { s.EnvSpec, s.SessionLogFormat = "bandit", "vw" }, `--session-log-format "vw": want dprl.sessions.v1`},
		{"unknown format without a log", func(s *service.Settings) { s.EnvSpec, s.SessionLogFormat, s.SessionLogDir = "bandit", "vw", "" }, `--session-log-format "vw": want dprl.sessions.v1`},
		{"model of cartpole", func(s *service.Settings) {
			s.EnvSpec, s.SessionLogFormat = "bandit", ""
			s.Models = service.ModelEntries{{Name: "b", Values: map[string]string{"session-log-format": "dsjson"}}, {Name: "c", Values: map[string]string{"env": "cartpole", "session-log-format": "dsjson"}}}
		}, `model "c": --session-log-format dsjson with --env cartpole`},
		{"models, bandit only in dsjson", func(s *service.Settings) {
			s.EnvSpec, s.SessionLogFormat = "bandit", ""
			s.Models = service.ModelEntries{{Name: "b", Values: map[string]string{"session-log-format": "dsjson"}}, {Name: "c", Values: map[string]string{"env": "cartpole"}}}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := baseSettings(t)
			s.SessionLogDir, s.SessionLogFormat = t.TempDir(), service.SessionLogDSJSON
			if c.mod != nil {
				c.mod(&s)
			}
			sc, err := s.ServiceConfig()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", asFlags(err))
			case c.want != "" && (err == nil || !strings.Contains(asFlags(err), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			case c.want == "" && len(s.Models) == 0 && sc.SessionLogFormat != s.SessionLogFormat:
				t.Errorf("format %q reached the service as %q", s.SessionLogFormat, sc.SessionLogFormat)
			}
		})
	}
}

// TestStartServiceRefusesDSJSONForMultiStep: the service itself (not only
// dprl agent's settings) refuses a DSJSON log for a multi-step simulator,
// before it creates anything in the data directory.
func TestStartServiceRefusesDSJSONForMultiStep(t *testing.T) {
	s := baseSettings(t)
	sc, err := s.ServiceConfig() // cartpole, default format
	if err != nil {
		t.Fatal(err)
	}
	sc.SessionLogDir, sc.SessionLogFormat, sc.NATSListen = t.TempDir(), service.SessionLogDSJSON, ""
	svc, err := service.StartService(context.Background(), sc)
	if err == nil {
		svc.Close()
		t.Fatal("started")
	}
	if !strings.Contains(err.Error(), "dsjson with EnvSpec cartpole: its sessions last up to 500 steps") {
		t.Errorf("error %v", err)
	}
	if entries, _ := os.ReadDir(sc.DataDir); len(entries) != 0 {
		t.Errorf("data directory holds %d entries", len(entries))
	}
}
