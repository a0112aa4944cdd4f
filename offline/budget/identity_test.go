package budget

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/sessionlog"
)

// publicToy is a learner that reads a log declared public, checked with
// Dataset.CheckPublic in Entry.
type publicToy struct {
	*toy
	public  string
	checked *sessionlog.Index
}

func (m *publicToy) Entry(ix *sessionlog.Index, ds Dataset) (ledger.Entry, error) {
	e, err := m.toy.Entry(ix, ds)
	if err != nil {
		return e, err
	}
	m.checked, err = ds.CheckPublic(m.public, sessionlog.ReaderOptions{OptionalProb: true})
	return e, err
}

// rewrite writes the sessions of the log at src, changed by edit, to dst:
// records for which edit returns false are left out.
func rewrite(t *testing.T, src, dst string, edit func(i int, s *sessionlog.Session) bool) string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := sessionlog.NewReader(f, sessionlog.ReaderOptions{OptionalProb: true})
	var out []sessionlog.Session
	for i := 0; ; i++ {
		s, err := rd.Next()
		if err != nil {
			break
		}
		if edit(i, &s) {
			out = append(out, s)
		}
	}
	if err := writeSessions(dst, out); err != nil {
		t.Fatal(err)
	}
	return dst
}

// reformat rewrites each line of the log at src through a map, so that
// keys come in another order and numbers are spelt by encoding/json, with
// spaces after the separators (the same records in other bytes).
func reformat(t *testing.T, src, dst string) string {
	t.Helper()
	return testutil.ReformatLog(t, src, dst, ", ")
}

// stripped writes the log at src without ids, user and behaviour
// probabilities; renamed with other session ids and a user.
func stripped(t *testing.T, src, dst string) string {
	return rewrite(t, src, dst, func(_ int, s *sessionlog.Session) bool {
		for i := range s.Steps {
			s.Steps[i].NoProb = true
		}
		return true
	})
}

func renamed(t *testing.T, src, dst string) string {
	return rewrite(t, src, dst, func(i int, s *sessionlog.Session) bool {
		s.Session, s.User, s.Expert = "other-"+s.Session, "someone", "e9"
		return true
	})
}

// TestCheckPublic: a log declared public is refused, before anything is
// charged, when it holds a record of the run's input or of a dataset the
// ledger knows - compared by content, so copies, subsets and id-renamed,
// probability-stripped or reformatted copies are found - unless the record
// is exactly one of a release of the run's dataset; records the ledger does
// not know are the user's declaration.
func TestCheckPublic(t *testing.T) {
	f := newLineageFixture(t)
	at := func(name string) string { return filepath.Join(f.dir, name) }
	copyA, err := os.ReadFile(f.a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("copy.jsonl"), copyA, 0o600); err != nil {
		t.Fatal(err)
	}
	subset := rewrite(t, f.a, at("subset.jsonl"), func(i int, _ *sessionlog.Session) bool { return i%3 == 1 })
	fresh := writeLogAt(t, at("fresh.jsonl"), 700, 3)
	freshAndStable := at("fresh-and-stable.jsonl")
	stable, err := os.ReadFile(f.stableA)
	if err != nil {
		t.Fatal(err)
	}
	freshLog, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(freshAndStable, append(freshLog, stable...), 0o600); err != nil {
		t.Fatal(err)
	}
	withProb := rewrite(t, f.stableA, at("stable-with-prob.jsonl"), func(_ int, s *sessionlog.Session) bool {
		s.Steps[0].NoProb, s.Steps[0].LogP = false, -0.5
		return true
	})
	// A log no run has read yet, and its stripped copy: the input's own
	// records are refused before the ledger holds them.
	c := writeLogAt(t, at("c.jsonl"), 300, 5)
	for _, tc := range []struct {
		name, input, public string
		records             int    // of an accepted file
		want                string // in the refusal
	}{
		{"a copy of the input", f.a, at("copy.jsonl"), 0, "10 of its 10 distinct records are records of the dataset of"},
		{"a subset of the input", f.a, subset, 0, "3 of its 3 distinct records are records of the dataset of"},
		{"an id-renamed copy", f.a, renamed(t, f.a, at("renamed.jsonl")), 0, "10 of its 10 distinct records are records of the dataset of"},
		{"a probability-stripped copy", f.a, stripped(t, f.a, at("stripped.jsonl")), 0, "10 of its 10 distinct records are records of the dataset of"},
		{"a reformatted copy", f.a, reformat(t, f.a, at("reformatted.jsonl")), 0, "10 of its 10 distinct records are records of the dataset of"},
		{"the input's unstable set", f.a, f.unstableA, 0, "10 of its 10 distinct records are records of the dataset of"},
		{"the release with probabilities added", f.a, withProb, 0, "5 of its 5 distinct records are records of the dataset of"},
		{"another dataset's log", f.a, f.b, 0, "belong to a dataset of ledger"},
		{"another dataset's release", f.a, f.stableB, 0, "belong to a dataset of ledger"},
		{"a stripped copy of a log not yet charged", c, stripped(t, c, at("c-stripped.jsonl")), 0, "5 of its 5 distinct records are records of"},
		{"the input's release", f.a, f.stableA, 5, ""},
		{"records nobody registered", f.a, fresh, 3, ""},
		{"unregistered records and the release", f.a, freshAndStable, 8, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h0, spent0 := f.state(t, f.datasetA)
			m := &publicToy{toy: &toy{t: t, eps: 0.5}, public: tc.public}
			_, ch, err := Run(context.Background(), f.cfg, Input{Path: tc.input}, m)
			h, spent := f.state(t, f.datasetA)
			if tc.want == "" {
				if err != nil || !ch.Charged() || m.checked == nil || m.checked.Len() != tc.records || spent != spent0+0.5 {
					t.Fatalf("error %v, charge %+v, checked %v, spent %v -> %v", err, ch, m.checked, spent0, spent)
				}
				return
			}
			if !errors.Is(err, ErrNotPublic) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.public) || ch.Charged() {
				t.Fatalf("error %v, charged %v; want ErrNotPublic with %q", err, ch.Charged(), tc.want)
			}
			if h != h0 || spent != spent0 {
				t.Errorf("head %+v, spent %v after a refused run; want %+v, %v", h, spent, h0, spent0)
			}
		})
	}
	verifyLedger(t, f.ledger)
}

// TestCopiesShareTheBudget: the scenario. A copy of a log with ids
// renamed or behaviour probabilities dropped is the same dataset: its runs
// are charged to the original's budget, and once runs on the original
// have filled the cap, a run on the stripped copy is refused.
func TestCopiesShareTheBudget(t *testing.T) {
	dir := t.TempDir()
	orig := writeLogAt(t, filepath.Join(dir, "orig.jsonl"), 0, 6)
	cfg := Config{Ledger: filepath.Join(dir, "ledger"), Cap: ledger.Cap{Epsilon: 10, Delta: 1e-5}}
	_, c0, err := Run(context.Background(), cfg, Input{Path: orig}, &toy{t: t, eps: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, copyOf := range []func(*testing.T, string, string) string{renamed, stripped} {
		p := copyOf(t, orig, filepath.Join(dir, "copy.jsonl"))
		_, c, err := Run(context.Background(), cfg, Input{Path: p, Reader: sessionlog.ReaderOptions{OptionalProb: true}}, &toy{t: t, eps: 3})
		if err != nil || c.Dataset != c0.Dataset || c.Entry.NewRecords != 0 {
			t.Fatalf("a copy: charge %+v, %v; want the original's dataset %s", c, err, c0.Dataset)
		}
		os.Remove(p)
	}
	// 9 of 10 spent: one more run of 3 on the original is refused, and on
	// its stripped copy too.
	p := stripped(t, orig, filepath.Join(dir, "stripped.jsonl"))
	for _, in := range []string{orig, p} {
		_, c, err := Run(context.Background(), cfg, Input{Path: in, Reader: sessionlog.ReaderOptions{OptionalProb: true}}, &toy{t: t, eps: 3})
		var r *Refusal
		if !errors.As(err, &r) || !errors.Is(err, ledger.ErrBudgetExceeded) || c.Charged() {
			t.Fatalf("%s: charge %+v, %v; want a refusal over the cap", in, c, err)
		}
	}
	if got := offlineEntries(t, cfg.Ledger); len(got) != 3 {
		t.Fatalf("%d entries, want 3", len(got))
	}
}

// compatLedger copies the offline ledger an earlier dprl wrote (see
// ledger/testdata/compat/README.md) and writes its log, chain.jsonl, to a
// new directory.
func compatLedger(t *testing.T) (dir, log string) {
	t.Helper()
	return testutil.CompatOfflineLedger(t, "../../ledger/testdata/compat")
}

// oldDataset is the dataset of chain.jsonl in the compat ledger: its id
// was computed from the records' exact hashes.
const oldDataset = "records-sha256:b0c5cc24d4322b3631c2bc2e105a8a44df4ecb60f7f2a990a7b3322ec9b72bce"

// TestOldLedgerCarriesOver: a ledger an earlier dprl wrote, whose record
// index holds the records' exact hashes, still verifies and still
// recognises its dataset's log; a run charged on it links the records'
// identities to the dataset, so that a copy stripped of behaviour
// probabilities and ids made after it is charged to the same dataset, and
// refused as a public input.
func TestOldLedgerCarriesOver(t *testing.T) {
	led, log := compatLedger(t)
	s, err := ledger.Open(led, ledger.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	id, err := DatasetOfFile(s, log)
	if err != nil || id != oldDataset {
		t.Fatalf("dataset of chain.jsonl: %s %v, want %s", id, err, oldDataset)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Ledger: led, Cap: ledger.Cap{Epsilon: 8, Delta: 1e-5}}
	_, c, err := Run(context.Background(), cfg, Input{Path: log}, &toy{t: t, eps: 0.5})
	if err != nil || c.Dataset != oldDataset || c.Entry.NewRecords != 0 || c.Entry.LinkedRecords == 0 || !(c.Spent > 3.021) {
		t.Fatalf("a run on chain.jsonl: %+v, %v; want it charged to %s, its records linked", c, err, oldDataset)
	}
	copyOf := renamed(t, stripped(t, log, filepath.Join(filepath.Dir(log), "stripped.jsonl")), filepath.Join(filepath.Dir(log), "stripped-renamed.jsonl"))
	_, c2, err := Run(context.Background(), cfg, Input{Path: copyOf, Reader: sessionlog.ReaderOptions{OptionalProb: true}}, &toy{t: t, eps: 0.5})
	if err != nil || c2.Dataset != oldDataset || c2.Entry.NewRecords != 0 || c2.Entry.LinkedRecords != 0 || !(c2.Spent > c.Spent) {
		t.Fatalf("a run on its stripped copy: %+v, %v; want it charged to %s after %v", c2, err, oldDataset, c.Spent)
	}
	m := &publicToy{toy: &toy{t: t, eps: 0.5}, public: copyOf}
	if _, c3, err := Run(context.Background(), cfg, Input{Path: log}, m); !errors.Is(err, ErrNotPublic) || c3.Charged() {
		t.Fatalf("the stripped copy as public input: %+v, %v", c3, err)
	}
	s, err = ledger.Open(led, ledger.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Verify()
	if err != nil || !r.OK() || r.OfflineRuns != 4 {
		t.Errorf("verify: %v, %+v", err, r)
	}
}

// wholeToy is an SVT-like release that releases every trajectory whole:
// its released records have the content of the source log's records.
type wholeToy struct {
	*toy
	stable string
}

func (m wholeToy) Compute(ctx context.Context, ix *sessionlog.Index, c *Charge) (int, error) {
	var stable []sessionlog.Session
	err := ix.Each(func(i int, s *sessionlog.Session) error {
		r := sessionlog.Session{Session: "stable-" + s.Session, Steps: slices.Clone(s.Steps), Terminal: s.Terminal}
		for j := range r.Steps {
			r.Steps[j].LogP, r.Steps[j].NoProb = math.NaN(), true
		}
		stable = append(stable, r)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := c.RegisterDerived(Derived{Note: "stable", Sessions: stable, Released: true}); err != nil {
		return 0, err
	}
	return len(stable), writeSessions(m.stable, stable)
}

// TestWholeTrajectoriesReleased: a released record with the content of a
// source record (a trajectory released whole) is public: it reads as
// released (CheckReleased) and as public (CheckPublic) although the
// dataset held its content before the release, while the source log
// itself stays private.
func TestWholeTrajectoriesReleased(t *testing.T) {
	dir := t.TempDir()
	a := writeLogAt(t, filepath.Join(dir, "a.jsonl"), 0, 4)
	stable := filepath.Join(dir, "stable.jsonl")
	cfg := Config{Ledger: filepath.Join(dir, "ledger"), Cap: ledger.Cap{Epsilon: 10, Delta: 1e-5}}
	if _, _, err := Run(context.Background(), cfg, Input{Path: a}, wholeToy{toy: &toy{t: t, eps: 1}, stable: stable}); err != nil {
		t.Fatal(err)
	}
	m := &sideToy{toy: &toy{t: t, eps: 0.5}, public: stable}
	if _, c, err := Run(context.Background(), cfg, Input{Path: a}, m); err != nil || !c.Charged() || m.checked.Len() != 4 {
		t.Fatalf("the whole release as released input: %+v, %v", c, err)
	}
	p := &publicToy{toy: &toy{t: t, eps: 0.5}, public: stable}
	if _, c, err := Run(context.Background(), cfg, Input{Path: a}, p); err != nil || !c.Charged() || p.checked.Len() != 4 {
		t.Fatalf("the whole release as public input: %+v, %v", c, err)
	}
	p = &publicToy{toy: &toy{t: t, eps: 0.5}, public: stripped(t, a, filepath.Join(dir, "stripped.jsonl"))}
	if _, c, err := Run(context.Background(), cfg, Input{Path: a}, p); !errors.Is(err, ErrNotPublic) || c.Charged() {
		t.Fatalf("a stripped copy of the source with other ids: %+v, %v", c, err)
	}
}

// TestLinkOldDataset: a stripped copy of a log of a dataset an earlier dprl
// registered, made before any run since the upgrade, is not recognised
// (the ledger holds none of its hashes); LinkFile on the log, which costs
// nothing, links the records' identities so that it is.
func TestLinkOldDataset(t *testing.T) {
	led, log := compatLedger(t)
	copyOf := stripped(t, log, filepath.Join(filepath.Dir(log), "stripped.jsonl"))
	s, err := ledger.Open(led, ledger.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if id, err := DatasetOfFile(s, copyOf); err != nil || id == oldDataset {
		t.Fatalf("the stripped copy before linking: %s, %v (the documented gap)", id, err)
	}
	before, _, err := s.Dataset(oldDataset)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LinkFile(s, log, " "); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("no reason: %v", err)
	}
	if _, err := LinkFile(s, copyOf, "r"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("linking the copy (the ledger holds none of it): %v", err)
	}
	r, err := LinkFile(s, log, "upgrade")
	if err != nil || r.Dataset != oldDataset || r.Linked == 0 || r.Seq != 4 {
		t.Fatalf("link: %+v, %v", r, err)
	}
	if id, err := DatasetOfFile(s, copyOf); err != nil || id != oldDataset {
		t.Fatalf("the stripped copy after linking: %s, %v; want %s", id, err, oldDataset)
	}
	if again, err := LinkFile(s, log, "again"); err != nil || again.Linked != 0 || again.Seq != 0 {
		t.Errorf("linking again: %+v, %v", again, err)
	}
	after, _, err := s.Dataset(oldDataset)
	if err != nil || !reflect.DeepEqual(before, after) {
		t.Errorf("the dataset's budget changed: %+v -> %+v (%v)", before, after, err)
	}
	v, err := s.Verify()
	if err != nil || !v.OK() {
		t.Errorf("verify: %v, %+v", err, v)
	}
}
