package svt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dprl/sessionlog"
	"dprl/sims"
)

// fixedExpert gives the logged action probability p and the rest 1-p.
type fixedExpert struct{ p float64 }

func (e fixedExpert) Prob(obs []float64, a int) float64 {
	if a == 0 {
		return e.p
	}
	return 1 - e.p
}

func makeSessions(n, steps int) []sessionlog.Session {
	out := make([]sessionlog.Session, n)
	for i := range out {
		s := sessionlog.Session{Session: fmt.Sprintf("s%d", i), Terminal: true, FinalObs: []float64{float64(steps)}}
		for k := 0; k < steps; k++ {
			s.Steps = append(s.Steps, sessionlog.Step{Obs: []float64{float64(k)}, Action: sims.Action{Index: 0}, Reward: 1})
		}
		out[i] = s
	}
	return out
}

func experts(m int, p float64) []Expert {
	out := make([]Expert, m)
	for i := range out {
		out[i] = fixedExpert{p}
	}
	return out
}

func totalSteps(ss []sessionlog.Session) int {
	n := 0
	for _, s := range ss {
		n += len(s.Steps)
	}
	return n
}

func TestDataRelease(t *testing.T) {
	cfg := Config{Epsilon: 10, Delta: 1e-3, Queries: 10, MaxLen: 20, PMin: 0.02}
	data := makeSessions(15, 20)
	t.Run("agreeing experts release whole trajectories", func(t *testing.T) {
		// count = 3000 * 0.98^i >= 2000 everywhere, far above the noisy
		// threshold (~526 +- a few tens).
		res, err := DataRelease(data, experts(3000, 0.98), cfg, rand.New(rand.NewPCG(5, 6)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Queried != 10 || res.Whole != 10 || len(res.Stable) != 10 || len(res.Unstable) != 5 || res.PrefixLengths[20] != 10 {
			t.Errorf("%+v", res)
		}
	})
	t.Run("diverging experts release short prefixes", func(t *testing.T) {
		// count = 3000 * 0.5^i: 1500, 750, 375, ... crosses ~526 after 2 steps.
		res, err := DataRelease(data, experts(3000, 0.5), cfg, rand.New(rand.NewPCG(7, 8)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Whole != 0 || res.PrefixLengths[2] < 8 {
			t.Errorf("prefix histogram %v", res.PrefixLengths)
		}
		if got := totalSteps(res.Stable) + totalSteps(res.Unstable); got != 15*20 {
			t.Errorf("steps %d, want %d", got, 15*20)
		}
		for _, s := range res.Stable {
			if s.Terminal || len(s.FinalObs) != 1 || s.FinalObs[0] != float64(len(s.Steps)) {
				t.Errorf("prefix %+v is not a truncated prefix", s)
			}
		}
		for _, s := range res.Unstable {
			if len(s.Steps) < 20 && !strings.Contains(s.Session, "#") {
				t.Errorf("tail %q not marked", s.Session)
			}
		}
	})
	t.Run("too few experts release nothing", func(t *testing.T) {
		res, err := DataRelease(data, experts(10, 0.98), cfg, rand.New(rand.NewPCG(9, 10)))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stable) != 0 || totalSteps(res.Unstable) != 300 {
			t.Errorf("stable %d", len(res.Stable))
		}
	})
}

func TestDataReleaseErrors(t *testing.T) {
	data := makeSessions(3, 5)
	good := Config{Epsilon: 1, Delta: 1e-3, Queries: 2, MaxLen: 10, PMin: 0.02}
	rng := rand.New(rand.NewPCG(1, 1))
	cases := map[string]struct {
		cfg  Config
		exp  []Expert
		data []sessionlog.Session
		want string
	}{
		"eps":         {Config{Epsilon: 0, Delta: 1e-3, Queries: 2, MaxLen: 10, PMin: 0.02}, experts(2, 0.5), data, "epsilon"},
		"delta":       {Config{Epsilon: 1, Delta: 1, Queries: 2, MaxLen: 10, PMin: 0.02}, experts(2, 0.5), data, "delta"},
		"queries":     {Config{Epsilon: 1, Delta: 1e-3, Queries: 0, MaxLen: 10, PMin: 0.02}, experts(2, 0.5), data, "queries"},
		"pmin":        {Config{Epsilon: 1, Delta: 1e-3, Queries: 2, MaxLen: 10, PMin: 0}, experts(2, 0.5), data, "p_min"},
		"no experts":  {good, nil, data, "no experts"},
		"too long":    {Config{Epsilon: 1, Delta: 1e-3, Queries: 2, MaxLen: 4, PMin: 0.02}, experts(2, 0.5), data, "above the public bound"},
		"below p_min": {good, experts(2, 0.001), data, "smoothed"},
	}
	for name, c := range cases {
		if _, err := DataRelease(c.data, c.exp, c.cfg, rng); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", name, err, c.want)
		}
	}
}

// idLog returns n sessions of the given length with ids, users, experts,
// policy versions and behaviour probabilities; the observations [i, k] tell
// which session and step a released step came from.
func idLog(n, steps int, tag string) []sessionlog.Session {
	out := make([]sessionlog.Session, n)
	for i := range out {
		v := uint64(100 + i)
		s := sessionlog.Session{Session: fmt.Sprintf("%s-sess-%d", tag, i), User: fmt.Sprintf("%s-user-%d", tag, i),
			Expert: fmt.Sprintf("%s-expert-%d", tag, i%4), PolicyVersion: &v, Terminal: i%2 == 0, FinalObs: []float64{float64(i), float64(steps)}}
		for k := 0; k < steps; k++ {
			s.Steps = append(s.Steps, sessionlog.Step{Obs: []float64{float64(i), float64(k)}, Action: sims.Action{Index: k % 2},
				Reward: float64(i) + 0.5, LogP: math.Log(0.98)})
		}
		out[i] = s
	}
	return out
}

func writeAll(t *testing.T, ss []sessionlog.Session) string {
	t.Helper()
	var b strings.Builder
	w := sessionlog.NewWriter(&b)
	for i := range ss {
		if err := w.Write(&ss[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDataReleaseRecords checks that the stable release carries what the
// mechanism releases and nothing else: the prefix's observations, actions,
// rewards, final observation and terminal flag; no session, user, expert or
// policy-version id and no behaviour probability; ids that depend on nothing
// but the position in the release.
func TestDataReleaseRecords(t *testing.T) {
	const n, steps = 15, 20
	cfg := Config{Epsilon: 10, Delta: 1e-3, Queries: 12, MaxLen: steps, PMin: 0.02}
	for _, tc := range []struct {
		name string
		p    float64 // the experts' probability of action 0
	}{{"whole trajectories", 0.98}, {"cut prefixes", 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			// Agreeing experts give action 0 0.98 and action 1 0.02, so
			// alternating actions are unlikely under p = 0.98: make the
			// logged actions all 0 there.
			data := idLog(n, steps, "src")
			for i := range data {
				for k := range data[i].Steps {
					if tc.p > 0.9 {
						data[i].Steps[k].Action.Index = 0
					}
				}
			}
			res, err := DataRelease(data, experts(3000, tc.p), cfg, rand.New(rand.NewPCG(11, 12)))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Stable) == 0 {
				t.Fatal("nothing released")
			}
			for j, r := range res.Stable {
				if r.Session != fmt.Sprintf("stable-%d", j+1) || r.User != "" || r.Expert != "" || r.PolicyVersion != nil {
					t.Errorf("record %d: id %q user %q expert %q policy version %v, want stable-%d and no identifiers",
						j, r.Session, r.User, r.Expert, r.PolicyVersion, j+1)
				}
				src := &data[int(r.Steps[0].Obs[0])]
				for k, st := range r.Steps {
					o := &src.Steps[k]
					if st.HasProb() || !math.IsNaN(st.LogP) {
						t.Errorf("record %d step %d: behaviour probability %v released", j, k, math.Exp(st.LogP))
					}
					if st.Obs[0] != o.Obs[0] || st.Obs[1] != float64(k) || st.Action.Index != o.Action.Index || st.Action.Vec != nil || st.Reward != o.Reward {
						t.Errorf("record %d step %d: %+v, want the source's %+v", j, k, st, *o)
					}
				}
				if len(r.Steps) < steps {
					if r.Terminal || r.FinalObs[1] != float64(len(r.Steps)) {
						t.Errorf("cut record %d: terminal %v final_obs %v", j, r.Terminal, r.FinalObs)
					}
				} else if r.Terminal != src.Terminal || (r.Terminal && r.FinalObs != nil) || (!r.Terminal && r.FinalObs[1] != steps) {
					t.Errorf("whole record %d: terminal %v final_obs %v, want the log's %v %v", j, r.Terminal, r.FinalObs, src.Terminal, src.FinalObs)
				}
			}
			out := writeAll(t, res.Stable)
			for _, bad := range []string{"src-", `"user"`, `"expert"`, `"policy_version"`, `"prob"`, `"logp"`} {
				if strings.Contains(out, bad) {
					t.Errorf("the written release contains %q:\n%.400s", bad, out)
				}
			}
			// The unstable set, which stays with the data owner, keeps its
			// fields.
			for _, u := range res.Unstable {
				if u.Expert == "" || u.User == "" || !u.Steps[0].HasProb() {
					t.Errorf("unstable %q lost its fields: %+v", u.Session, u)
					break
				}
			}
			// Fresh ids: the same log under other ids, users, experts and
			// versions gives byte-identical releases with the same rng.
			other := idLog(n, steps, "zz")
			for i := range other {
				other[i].PolicyVersion = nil
				other[i].User = ""
				for k := range other[i].Steps {
					other[i].Steps[k].Action = data[i].Steps[k].Action
					other[i].Steps[k].LogP = math.Log(0.5)
				}
			}
			res2, err := DataRelease(other, experts(3000, tc.p), cfg, rand.New(rand.NewPCG(11, 12)))
			if err != nil {
				t.Fatal(err)
			}
			if out2 := writeAll(t, res2.Stable); out2 != out {
				t.Errorf("the release depends on the log's identifiers:\n%.300s\nvs\n%.300s", out, out2)
			}
		})
	}
}
