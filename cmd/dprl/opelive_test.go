package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dprl/internal/testutil"
	"dprl/offline/ope"
	"dprl/offline/policies"
	"dprl/sims"
)

// TestOPEPredictsLive asks whether the audit predicts what a policy then
// earns live, with every step run as a team would, through the agent:
// DP agents on the bandit released policies at several stages of learning
// (dprl demo with 2,000 to 20,000 users); for every ordered pair of them,
// the first is served by the agent to n users who log their decisions as
// DSJSON (dprl agent --session-log-format dsjson, dprl replay), the log is
// imported, the second (the candidate) is audited on it (dprl offline ope:
// the non-private report's EL interval, and the private audit at epsilon 1
// and 5), and then the candidate is deployed through the agent to fresh
// live users (20,000) whose mean click is the live value. The test counts
// how often each interval holds the live value (and the exact value on
// held-out users). It is a measurement (about 5 minutes) and runs only
// with DPRL_OPE_LIVE=1; DPRL_OPE_LIVE_N sets n (default 5,000), and
// DPRL_OPE_LIVE_DIR a directory that keeps the demos between runs.
func TestOPEPredictsLive(t *testing.T) {
	if os.Getenv("DPRL_OPE_LIVE") != "1" {
		t.Skip("a measurement of about 5 minutes: DPRL_OPE_LIVE=1 runs it")
	}
	n := 5000
	if v, err := strconv.Atoi(os.Getenv("DPRL_OPE_LIVE_N")); err == nil && v > 0 {
		n = v
	}
	const live = 20000
	dir := t.TempDir()
	demos := dir // DPRL_OPE_LIVE_DIR keeps the demos' ledgers between runs
	if d := os.Getenv("DPRL_OPE_LIVE_DIR"); d != "" {
		demos = d
	}
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		t.Fatal(err)
	}
	users, err := env.HeldOut(200_000, rand.New(rand.NewPCG(0x11e, 5)))
	if err != nil {
		t.Fatal(err)
	}
	type pol struct {
		users      int
		data, snap string
		scorer     policies.Policy
		exact      float64
	}
	var pols []pol
	for _, u := range []int{2000, 4000, 8000, 14000, 20000} {
		p := pol{users: u, data: filepath.Join(demos, fmt.Sprint("demo", u)), snap: filepath.Join(demos, fmt.Sprint("v", u, ".snap"))}
		if _, err := os.Stat(p.snap); err != nil {
			if code, _, stderr := runCLI(t, "--log-level", "disabled", "demo", "--env", "bandit", "--data", p.data, "--users", fmt.Sprint(u), "--seed", "7"); code != 0 {
				t.Fatalf("demo %d: %s", u, stderr)
			}
			if code, _, stderr := runCLI(t, "ledger", "snapshot", "--data", p.data, "--out", p.snap); code != 0 {
				t.Fatal(stderr)
			}
		}
		if p.scorer, err = policies.Parse("snapshot:"+p.snap, policies.Options{NumActions: 10}); err != nil {
			t.Fatal(err)
		}
		p.exact = users.Value(func(dst, x []float64) {
			if err := p.scorer.Probs(dst, x); err != nil {
				t.Fatal(err)
			}
		})
		pols = append(pols, p)
	}
	// serve runs an agent on a copy of data's ledger (its last release
	// served, K too large for a release during the run), plays users
	// users at seed against it, and returns replay's summary.
	serve := func(tag, data string, k, seed int, logs string) map[string]any {
		cp := filepath.Join(dir, tag)
		if err := testutil.CopyTree(data, cp); err != nil {
			t.Fatal(err)
		}
		args := []string{"--log-level", "warn", "agent", "--data", cp, "--env", "bandit", "--K", "32768", "--nats-listen", "127.0.0.1:0"}
		if logs != "" {
			args = append(args, "--log-sessions", logs, "--session-log-format", "dsjson")
		}
		var stderr testutil.LockedBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int)
		go func() { done <- run(ctx, args, strings.NewReader(""), &strings.Builder{}, &stderr) }()
		url := regexp.MustCompile(`serving on (nats://[^\s;]+)`)
		var natsURL string
		if err := testutil.Wait(30*time.Second, func() error {
			m := url.FindStringSubmatch(stderr.String())
			if m == nil {
				return fmt.Errorf("stderr %q", stderr.String())
			}
			natsURL = m[1]
			return nil
		}); err != nil {
			cancel()
			t.Fatalf("agent did not start: %v (exit %d)", err, <-done)
		}
		code, out, rerr := runCLI(t, "replay", "--env", "bandit", "--nats", natsURL, "--users", fmt.Sprint(k), "--seed", fmt.Sprint(seed), "--json")
		cancel()
		if c := <-done; c != 0 || code != 0 {
			t.Fatalf("%s: agent exit %d, replay exit %d: %s %s", tag, c, code, stderr.String(), rerr)
		}
		var sum map[string]any
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatal(err)
		}
		return sum
	}
	mean := func(sum map[string]any) float64 {
		c := sum["sim_users_curve"].([]any)
		s := 0.0
		for _, v := range c {
			s += v.(float64)
		}
		return s / float64(len(c))
	}
	type tally struct{ live, exact, pairs int }
	tallies := map[string]*tally{}
	methods := []string{"EL", "DP-EL eps 1", "DP-EL eps 5", "IPS wald", "SNIPS wald"}
	for _, m := range methods {
		tallies[m] = &tally{}
	}
	pair := 0
	for i, lg := range pols {
		for j, cand := range pols {
			if i == j {
				continue
			}
			pair++
			logs := filepath.Join(dir, fmt.Sprint("logs", pair))
			serve(fmt.Sprint("log", pair), lg.data, n, 1000+pair, logs)
			files, _ := filepath.Glob(filepath.Join(logs, "*.dsjson"))
			if len(files) != 1 {
				t.Fatalf("pair %d: DSJSON files %v", pair, files)
			}
			sess := filepath.Join(dir, fmt.Sprint("sessions", pair, ".jsonl"))
			if code, _, stderr := runCLI(t, "sessions", "import-dsjson", "--in", files[0], "--out", sess, "--shared-only"); code != 0 {
				t.Fatal(stderr)
			}
			// The public weight bound: max pi_cand / pi_logger over the
			// held-out users (simulated: the released policies are public).
			bound := 0.0
			pc, pl := make([]float64, 10), make([]float64, 10)
			users.Each(func(x []float64) {
				_ = cand.scorer.Probs(pc, x)
				_ = lg.scorer.Probs(pl, x)
				for a := range pc {
					bound = max(bound, pc[a]/pl[a])
				}
			})
			bound = math.Max(1.01, bound*1.0001)
			base := []string{"offline", "ope", "--data", sess, "--target", "snapshot:" + cand.snap, "--actions", "10", "--weight-bound", fmt.Sprint(bound),
				"--ledger", filepath.Join(dir, "ledger"), "--dataset-epsilon", "1000", "--seed", fmt.Sprint(pair), "--json"}
			ivs := map[string]ope.Interval{}
			code, out, stderr := runCLI(t, append(base, "--non-private", "--bootstrap", "-1")...)
			if code != 0 {
				t.Fatal(stderr)
			}
			var r ope.Result
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			for _, e := range r.NonPrivate.Report.Estimates {
				for _, iv := range e.Intervals {
					ivs[e.Estimator+" "+iv.Method] = iv
				}
			}
			ivs["EL"], ivs["IPS wald"], ivs["SNIPS wald"] = ivs["EL empirical-likelihood"], ivs["IPS wald"], ivs["SNIPS wald"]
			for _, eps := range []string{"1", "5"} {
				code, out, stderr := runCLI(t, append(base, "--epsilon", eps, "--delta", "1e-5")...)
				if code != 0 {
					t.Fatal(stderr)
				}
				var r ope.Result
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				ivs["DP-EL eps "+eps] = r.Private.Estimate.Intervals[0]
			}
			lv := mean(serve(fmt.Sprint("live", pair), cand.data, live, 5000+pair, ""))
			line := fmt.Sprintf("pair %2d: logger after %d users (exact %.4f), candidate after %d: exact %.4f live %.4f; weight bound %.3g;", pair, lg.users, lg.exact, cand.users, cand.exact, lv, bound)
			for _, m := range methods {
				iv := ivs[m]
				tl := tallies[m]
				tl.pairs++
				if iv.Lo <= lv && lv <= iv.Hi {
					tl.live++
				}
				if iv.Lo <= cand.exact && cand.exact <= iv.Hi {
					tl.exact++
				}
				line += fmt.Sprintf(" %s [%.4f, %.4f]", m, iv.Lo, iv.Hi)
			}
			t.Log(line)
		}
	}
	for _, m := range methods {
		tl := tallies[m]
		t.Logf("%-12s holds the live value in %d of %d pairs, the exact value in %d", m, tl.live, tl.pairs, tl.exact)
	}
	if el := tallies["EL"]; el.pairs == 0 || float64(el.exact) < 0.8*float64(el.pairs) {
		t.Errorf("EL held the exact value in %d of %d pairs", el.exact, el.pairs)
	}
}
