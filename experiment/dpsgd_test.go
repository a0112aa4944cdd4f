package experiment

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"dprl/policy"
)

func TestDPSGDValidate(t *testing.T) {
	ok := DPSGD{Env: "cartpole", Algo: policy.AlgoDPSGDReinforce, Z: 1, Clip: 1, Delta: 1e-5, EvalEpisodes: 1}
	tests := []struct {
		name   string
		edit   func(*DPSGD)
		fields []string
	}{
		{"ok", func(*DPSGD) {}, nil},
		{"zero z", func(c *DPSGD) { c.Z = 0 }, []string{"Z"}},
		{"all", func(c *DPSGD) {
			c.Env, c.Algo, c.Z, c.Clip, c.Delta, c.EvalEpisodes = "pong", "sgd", math.Inf(1), math.NaN(), 1, 0
		}, []string{"Env", "Algo", "Z", "Clip", "Delta", "EvalEpisodes"}},
	}
	for _, tc := range tests {
		c := ok
		tc.edit(&c)
		if got := fieldsOf(c.Validate()); !reflect.DeepEqual(got, tc.fields) {
			t.Errorf("%s: fields %v, want %v", tc.name, got, tc.fields)
		}
	}
}

// TestDPSGDResultText: the text and JSON of a result; a DQN result says
// that its epsilon is per transition, not per episode.
func TestDPSGDResultText(t *testing.T) {
	r := DPSGDResult{DPSGDResult: policy.DPSGDResult{Algo: policy.AlgoDPSGDDQN, EvalMean: 68.85, EvalStd: 5.65, Epsilon: 9.9444, Delta: 1e-5, NoiseMultiplier: 1,
		PrivacyUnit: "transition", Accountant: "rdp", Updates: 49001, Episodes: 570, Seconds: 46.07},
		Seed: 1, UnitNote: "not per episode: an episode is up to 500 transitions, covered only by group privacy, not computed", Env: "cartpole", EvalEpisodes: 20}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "dpsgd-dqn on cartpole: eval return 68.8 +- 5.7 over 20 episodes; epsilon 9.945 at delta 1e-05 per transition (not per episode: an episode is up to 500 transitions, covered only by group privacy, not computed) (rdp, z = 1); 49001 updates, 570 episodes, 46.1 s, seed 1\n"
	if b.String() != want {
		t.Errorf("text\n%q\nwant\n%q", b.String(), want)
	}
	// A pld result prints the rdp cross-check beside its accountant.
	p := r
	p.Accountant, p.Epsilon, p.RDPEpsilon = "pld", 9.1, 9.9444
	b.Reset()
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "epsilon 9.1 at delta 1e-05") || !strings.Contains(b.String(), "(pld, z = 1; rdp cross-check 9.945)") {
		t.Errorf("pld text %q", b.String())
	}
	var m map[string]any
	js, _ := json.Marshal(r)
	if err := json.Unmarshal(js, &m); err != nil || m["seed"] != 1.0 || m["privacy_unit_note"] != r.UnitNote || m["env"] != nil || m["algo"] != "dpsgd-dqn" {
		t.Errorf("JSON %s", js)
	}
	r.UnitNote, r.PrivacyUnit = "", "episode"
	if js, _ := json.Marshal(r); bytes.Contains(js, []byte("privacy_unit_note")) {
		t.Errorf("JSON of a per-episode result has a note: %s", js)
	}
}
