package svt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/fielderr"
	"dprl/ledger"
	"dprl/offline/budget"
	"dprl/sessionlog"
	"dprl/sims"
)

// releaseFixture writes m experts (random cartpole policies smoothed to
// p_min 0.5, i.e. uniform) and a log of two rollouts of each; it returns
// the log and the experts' directory.
func releaseFixture(t *testing.T, m int) (data, experts string) {
	t.Helper()
	dir := t.TempDir()
	data, experts = filepath.Join(dir, "data.jsonl"), filepath.Join(dir, "experts")
	if err := os.Mkdir(experts, 0o700); err != nil {
		t.Fatal(err)
	}
	env, err := sims.New("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	w := sessionlog.NewWriter(&b)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range m {
		id := fmt.Sprintf("e%d", i)
		snap := randomSnapshot(t, 4, 2, uint64(i+1))
		if err := WriteExpert(experts, id, snap); err != nil {
			t.Fatal(err)
		}
		e, err := NewSmoothedExpert(id, snap, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := Rollouts(env, e, 2, rng)
		if err != nil {
			t.Fatal(err)
		}
		for k := range ss {
			if err := w.Write(&ss[k]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return data, experts
}

// releaseConfig is a valid configuration on the fixture; the outputs go to
// dir.
func releaseConfig(data, experts, dir string) ReleaseConfig {
	return ReleaseConfig{Config: Config{Epsilon: 200, Delta: 0.1, Queries: 10, MaxLen: 500, PMin: 0.5},
		Data: data, Experts: experts, OutStable: filepath.Join(dir, "stable.jsonl"), OutUnstable: filepath.Join(dir, "unstable.jsonl")}
}

// runRelease runs a release through the budget protocol against the
// ledger led.
func runRelease(t *testing.T, c ReleaseConfig, led string) (*Report, budget.Charge, error) {
	t.Helper()
	m, err := NewRelease(c, NewNoiseRand(c.Seeded, c.Seed))
	if err != nil {
		return nil, budget.Charge{}, err
	}
	defer m.Close()
	cfg, err := budget.Config{Ledger: led, Cap: ledger.Cap{Epsilon: 1000, Delta: 0.5}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return budget.Run(context.Background(), cfg, m.Input(), m)
}

// readLog reads every session of path.
func readLog(t *testing.T, path string, opt sessionlog.ReaderOptions) []sessionlog.Session {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := sessionlog.NewReader(f, opt)
	var out []sessionlog.Session
	for {
		s, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return out
		}
		out = append(out, s)
	}
}

func TestReleaseConfigValidate(t *testing.T) {
	ok := ReleaseConfig{Config: Config{Epsilon: 5, Delta: 1e-3, Queries: 1, MaxLen: 10, PMin: 0.02}, Data: "d.jsonl", Experts: "ex", OutStable: "s.jsonl"}
	flags := map[string]string{"Data": "--data", "Experts": "--experts", "OutStable": "--out-stable", "OutUnstable": "--out-unstable",
		"Delta": "--delta", "CapDelta": "--dataset-delta", "Queries": "--queries", "MaxLen": "--max-len"}
	tests := []struct {
		name string
		edit func(*ReleaseConfig)
		want string // the message with the fields named by flags, "" for valid
	}{
		{"valid", func(*ReleaseConfig) {}, ""},
		{"cap delta not given", func(c *ReleaseConfig) { c.Delta = 0.5 }, ""},
		{"cap delta at least delta", func(c *ReleaseConfig) { c.CapDelta = 1e-3 }, ""},
		{"missing", func(c *ReleaseConfig) { *c = ReleaseConfig{Config: c.Config} },
			"--data: required\n--experts: required\n--out-stable: required"},
		{"release config", func(c *ReleaseConfig) { c.Queries, c.MaxLen = 0, 0 },
			"svt: queries T = 0, want >= 1\nsvt: max length L = 0, want >= 1"},
		{"same outputs", func(c *ReleaseConfig) { c.OutUnstable = c.OutStable },
			`--out-stable and --out-unstable: the same file "s.jsonl"`},
		{"overwrite data", func(c *ReleaseConfig) { c.OutUnstable = "./d.jsonl" },
			`output "./d.jsonl" would overwrite --data`},
		{"delta above the cap delta", func(c *ReleaseConfig) { c.CapDelta = 1e-5 },
			"--delta 0.001 exceeds the dataset's --dataset-delta 1e-05: the release's delta is added to the dataset's (basic composition); raise --dataset-delta if the dataset's owner agreed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate: nil")
			}
			if got := fielderr.Rename(err, func(f string) string { return flags[f] }).Error(); got != tt.want {
				t.Errorf("Validate: %q, want %q", got, tt.want)
			}
			if _, err := NewRelease(c, rand.New(rand.NewPCG(1, 1))); err == nil {
				t.Error("NewRelease accepted an invalid configuration")
			}
		})
	}
}

// TestNewReleaseRefusesExistingOutputs: an existing output is refused
// without Force, naming it and the field that allows it; Force allows it.
func TestNewReleaseRefusesExistingOutputs(t *testing.T) {
	dir := t.TempDir()
	st, un := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "u.jsonl")
	if err := os.WriteFile(un, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := ReleaseConfig{Config: Config{Epsilon: 5, Delta: 1e-3, Queries: 1, MaxLen: 10, PMin: 0.02}, Data: "d.jsonl", Experts: "ex", OutStable: st, OutUnstable: un}
	_, err := NewRelease(c, rand.New(rand.NewPCG(1, 1)))
	if err == nil || err.Error() != "OutUnstable "+un+" exists (Force overwrites it)" {
		t.Errorf("existing --out-unstable: %v", err)
	}
	c.Force = true
	if _, err := NewRelease(c, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Errorf("Force: %v", err)
	}
}

// TestRelease runs a release through the budget protocol on a real ledger
// and checks the files, the charge and the report: the report's released
// values match the release file, the non-private section appears only for
// a seeded run, a seeded run repeats, and the outputs are registered in the
// dataset they were derived from.
func TestRelease(t *testing.T) {
	// Uniform experts: count(prefix) = m 0.5^k, 60 at k = 1 against a
	// noisy threshold of about 44 at these parameters, so the release
	// holds prefixes of about one step.
	const m = 120
	data, experts := releaseFixture(t, m)
	dir := t.TempDir()
	led := filepath.Join(dir, "ledger")
	c := releaseConfig(data, experts, dir)
	c.Seeded, c.Seed = true, 9
	r, ch, err := runRelease(t, c, led)
	if err != nil {
		t.Fatal(err)
	}
	stable := readLog(t, c.OutStable, sessionlog.ReaderOptions{Name: c.OutStable, OptionalProb: true})
	if len(stable) == 0 {
		t.Fatal("nothing released")
	}
	unstable := readLog(t, c.OutUnstable, sessionlog.ReaderOptions{Name: c.OutUnstable})
	if r.StableTrajectories != len(stable) || r.StableTransitions != transitions(stable) {
		t.Errorf("report: %d stable prefixes, %d transitions; the file %d, %d", r.StableTrajectories, r.StableTransitions, len(stable), transitions(stable))
	}
	binned := 0
	for _, b := range r.PrefixHistogram {
		binned += b.Count
	}
	if binned != len(stable) || r.Queried != 10 || r.Epsilon != 200 || r.Delta != 0.1 || r.Unit != "expert" || r.OutStable != c.OutStable {
		t.Errorf("report: %+v", r)
	}
	for _, s := range stable {
		if s.Expert != "" || s.Steps[0].HasProb() {
			t.Errorf("stable record %q carries an expert or a behaviour probability", s.Session)
		}
	}
	np := r.NonPrivate
	if np == nil || np.Experts != m || np.Trajectories != 2*m || np.DatasetID != ch.Dataset || np.UnstableTrajectories != len(unstable) ||
		np.UnstableTransitions != transitions(unstable) || np.Transitions != r.StableTransitions+np.UnstableTransitions {
		t.Errorf("non-private section %+v (unstable file: %d, %d)", np, len(unstable), transitions(unstable))
	}
	// What is printed is what was charged.
	if r.LedgerSeq != ch.Entry.Seq || r.DatasetSpent != ch.Spent || r.DatasetCap != ch.Cap.Epsilon || ch.Entry.Unit != ledger.UnitExpert ||
		ch.Entry.Participants != m || !ch.Entry.Seeded || len(ch.Entry.Fixed) != 1 || ch.Entry.Fixed[0].Source != releaseSource {
		t.Errorf("charge %+v, report %+v", ch, r)
	}
	// Both outputs belong to the dataset: a run on them is charged to it.
	// The stable file is the release, public; the unstable set is not.
	s, err := ledger.Open(led, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []struct {
		path     string
		released bool
	}{{c.OutStable, true}, {c.OutUnstable, false}} {
		ix, err := sessionlog.ScanLog(out.path, sessionlog.ReaderOptions{Name: out.path, OptionalProb: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ds, err := s.ResolveDataset(ix.ID(), ix.Records()); err != nil || ds != ch.Dataset {
			t.Errorf("%s resolves to %q, %v; want the dataset %q", filepath.Base(out.path), ds, err, ch.Dataset)
		}
		l, err := s.LineageOf(ledger.FileRecords{ID: ix.ID(), Records: ix.Records(), LegacyID: ix.LegacyID(), Exact: ix.Exact(), Public: true})
		if err != nil || l.Dataset != ch.Dataset || !l.Known() || l.AllReleased() != out.released || (!out.released && l.Released != 0) {
			t.Errorf("%s: lineage %+v, %v; want known, released %v", filepath.Base(out.path), l, err, out.released)
		}
	}
	if r, err := s.Verify(); err != nil || !r.OK() || r.DerivedFiles != 2 {
		t.Errorf("verify: %v, %+v", err, r)
	}
	s.Close()

	// The same seed repeats the release and the report.
	dir2 := t.TempDir()
	c2 := c
	c2.OutStable, c2.OutUnstable = filepath.Join(dir2, "stable.jsonl"), filepath.Join(dir2, "unstable.jsonl")
	r2, _, err := runRelease(t, c2, filepath.Join(dir2, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(c.OutStable)
	b2, _ := os.ReadFile(c2.OutStable)
	r2.OutStable, r2.OutUnstable = r.OutStable, r.OutUnstable
	j1, _ := json.Marshal(r)
	j2, _ := json.Marshal(r2)
	if string(b1) != string(b2) || string(j1) != string(j2) {
		t.Errorf("a seeded release did not repeat:\n%s\n%s", j1, j2)
	}

	// Unseeded: no statistic of the private log in the report.
	c3 := c2
	c3.Seeded, c3.Seed, c3.OutUnstable, c3.Force = false, 0, "", true // over c2's stable file
	r3, _, err := runRelease(t, c3, filepath.Join(dir2, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	j3, _ := json.Marshal(r3)
	for _, bad := range []string{"non_private", "dataset_id", "seed\"", "out_unstable", "records-sha256"} {
		if strings.Contains(string(j3), bad) {
			t.Errorf("unseeded report has %q: %s", bad, j3)
		}
	}
	if _, err := os.Stat(c2.OutUnstable); err != nil {
		t.Errorf("the earlier unstable file: %v", err)
	}
}

// TestReleaseRefusedCostsNothing checks that a release refused by the log,
// the experts or its outputs writes no ledger entry and no file.
func TestReleaseRefusedCostsNothing(t *testing.T) {
	data, experts := releaseFixture(t, 3)
	experts = withRoster(t, experts, 10) // a roster whose counts can reach the threshold
	cases := []struct {
		name string
		edit func(*ReleaseConfig)
		want string
	}{
		{"too long", func(c *ReleaseConfig) { c.MaxLen = 2 }, "above MaxLen 2"},
		{"too many queries", func(c *ReleaseConfig) { c.Queries = 7 }, "Queries 7: the log has 6 trajectories"},
		{"unknown experts", func(c *ReleaseConfig) { c.Experts = filepath.Dir(c.Experts) }, "no .snap file"},
		{"other p_min", func(c *ReleaseConfig) { c.PMin = 0.4 }, "another p_min"},
		{"output directory missing", func(c *ReleaseConfig) { c.OutUnstable = filepath.Join(c.OutUnstable, "x", "u.jsonl") }, "OutUnstable: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := releaseConfig(data, experts, dir)
			c.Queries = 2
			tc.edit(&c)
			led := filepath.Join(dir, "ledger")
			_, ch, err := runRelease(t, c, led)
			if err == nil || !strings.Contains(err.Error(), tc.want) || ch.Charged() {
				t.Fatalf("err %v, charged %v; want %q before the charge", err, ch.Charged(), tc.want)
			}
			if entries, err := os.ReadDir(dir); err != nil {
				t.Fatal(err)
			} else {
				for _, e := range entries {
					if e.Name() != "ledger" {
						t.Errorf("%s left by a refused release", e.Name())
					}
				}
			}
			if _, err := os.Stat(led); err == nil {
				s, err := ledger.Open(led, ledger.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if h, err := s.Head(); err != nil || h.Seq != 0 {
					t.Errorf("ledger head %d, %v after a refused release", h.Seq, err)
				}
			}
		})
	}
}

func TestReportWriteText(t *testing.T) {
	r := Report{Queried: 10, Whole: 1, StableTrajectories: 3, StableTransitions: 7, PrefixHistogram: []PrefixBin{{1, 1}, {3, 2}},
		Epsilon: 5, Delta: 1e-3, Unit: "expert", EpsPrime: 0.0123, Threshold: 44.44, LedgerSeq: 2, DatasetSpent: 10, DatasetCap: 20,
		OutStable: "s.jsonl"}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `queried 10 trajectories; eps' 0.0123, noisy threshold centre 44.4
stable (the release): 3 prefixes, 7 transitions, 1 of them whole trajectories -> s.jsonl
prefix lengths: 1:1 3:2
charged (eps1 5, delta1 0.001) at unit expert, ledger entry 2; dataset spent 10 of 20
`
	if b.String() != want {
		t.Errorf("unseeded:\n%s\nwant\n%s", b.String(), want)
	}
	r.EpsPrimeSolved, r.OutUnstable, r.Seeded, r.Seed, r.PrefixHistogram = true, "u.jsonl", true, 4, nil
	r.NonPrivate = &NonPrivate{DatasetID: "records-sha256:ab", Experts: 3, Trajectories: 6, Transitions: 60, QueriedTransitions: 20,
		UnstableTrajectories: 5, UnstableTransitions: 53, StableFraction: 7.0 / 60, QueriedStableFrac: 7.0 / 20}
	b.Reset()
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want = `queried 10 trajectories; eps' 0.0123 (solved: the paper's closed form would compose above eps1), noisy threshold centre 44.4
stable (the release): 3 prefixes, 7 transitions, 1 of them whole trajectories -> s.jsonl
unstable (NOT released, not DP; for the data owner's expert-level DP learner only) -> u.jsonl
non-private (simulation, --seed): dataset records-sha256:ab: 3 experts, 6 trajectories, 60 transitions; queried 20 transitions; stable 0.1167 of all, 0.35 of the queried; unstable 5 trajectories, 53 transitions
charged (eps1 5, delta1 0.001) at unit expert, ledger entry 2 (seeded 4: simulation, not a production release); dataset spent 10 of 20
`
	if b.String() != want {
		t.Errorf("seeded:\n%s\nwant\n%s", b.String(), want)
	}
}

// TestTailTransitions checks the count of queried transitions that went to
// the unstable set on a DataRelease result.
func TestTailTransitions(t *testing.T) {
	sessions := makeSessions(20, 6)
	res, err := DataRelease(sessions, experts(50, 0.5), Config{Epsilon: 50, Delta: 1e-2, Queries: 12, MaxLen: 6, PMin: 0.5}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	// Every queried trajectory is split into its stable prefix and its
	// tail; the unqueried 8 go whole to the unstable set.
	if got, want := transitions(res.Stable)+tailTransitions(res), 12*6; got != want {
		t.Errorf("stable + tails = %d transitions, want the queried %d", got, want)
	}
	if got := transitions(res.Unstable) - tailTransitions(res); got != 8*6 {
		t.Errorf("unqueried transitions %d, want %d", got, 8*6)
	}
}
