package service

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"dprl/internal/testutil"
	"dprl/sessionlog"
)

// TestSessionLogFinalObsRule: the agent's session log follows the rule of
// the simulated logs (package rollout): a session ended as terminal is
// logged with all its steps and without final_obs; one closed at the step
// limit, whose last act carried the observation after the last step, is
// logged with all its steps and that observation as final_obs; one ended by
// the client as not terminal, which sent no observation after its last
// action, is logged without that step and with its observation as
// final_obs (before: with every step and no final_obs, a record that dprl
// offline gtd2 refuses as it cannot be bootstrapped); a one-step session so
// ended is not logged. Over a real embedded NATS server and Pebble ledger.
func TestSessionLogFinalObsRule(t *testing.T) {
	cfg := cartpoleConfig(64) // no update during the test
	cfg.MaxStepsPerSession = 3
	var buf testutil.LockedBuffer
	svc := startService(t, cfg, func(sc *ServiceConfig) { sc.SessionLogWriter = &buf })
	_, c := dial(t, svc)
	ctx := context.Background()
	obs := func(step int) []float64 { return []float64{0.01 * float64(step), 0, 0, 0} }
	act := func(id string, steps int) {
		for step := range steps {
			if _, err := c.Act(ctx, id, "u", obs(step), 1, step == 0); (err != nil) != (step == cfg.MaxStepsPerSession) {
				t.Fatalf("%s step %d: %v", id, step, err)
			}
		}
	}
	act("terminal", 2)
	if _, err := c.EndAs(ctx, "terminal", "u", 1, true); err != nil {
		t.Fatal(err)
	}
	act("truncated", cfg.MaxStepsPerSession+1) // the last act closes the session
	for id, steps := range map[string]int{"ended": 3, "ended-one": 1} {
		act(id, steps)
		if _, err := c.EndAs(ctx, id, "u", 1, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	rd := sessionlog.NewReader(strings.NewReader(buf.String()), sessionlog.ReaderOptions{Spec: sessionlog.Spec{ObsDim: 4, Discrete: 2}})
	got := map[string]sessionlog.Session{}
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[s.Session] = s
	}
	for _, w := range []struct {
		id       string
		steps    int
		terminal bool
		final    []float64
	}{
		{"terminal", 2, true, nil},
		{"truncated", 3, false, obs(3)},
		{"ended", 2, false, obs(2)},
	} {
		s, ok := got[w.id]
		if !ok {
			t.Errorf("%s: not logged", w.id)
			continue
		}
		if len(s.Steps) != w.steps || s.Terminal != w.terminal || !reflect.DeepEqual(s.FinalObs, w.final) {
			t.Errorf("%s: %d steps, terminal %v, final_obs %v; want %d, %v, %v", w.id, len(s.Steps), s.Terminal, s.FinalObs, w.steps, w.terminal, w.final)
		}
		for i, st := range s.Steps {
			if !reflect.DeepEqual(st.Obs, obs(i)) {
				t.Errorf("%s step %d: obs %v, want %v", w.id, i, st.Obs, obs(i))
			}
		}
	}
	if s, ok := got["ended-one"]; ok || len(got) != 3 {
		t.Errorf("%d sessions logged; a one-step session ended as not terminal logged as %+v", len(got), s)
	}
}
