package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/sessionlog"
)

// writeLogAt writes n valid sessions, numbered from first (distinct
// numbers give distinct records), to path.
func writeLogAt(t *testing.T, path string, first, n int) string {
	t.Helper()
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, `{"session":"s%d","steps":[{"obs":[%d],"action":1,"reward":0.5,"prob":0.5},{"obs":[%d.5],"action":0,"reward":1,"prob":0.5}],"terminal":true}`+"\n", i, i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeSessions writes sessions to path.
func writeSessions(path string, ss []sessionlog.Session) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := sessionlog.NewWriter(f)
	for i := range ss {
		if err := w.Write(&ss[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// splitToy is an SVT-like release: it charges the toy's cost and writes
// two files derived from the log, registered first. The stable file (the
// release) holds the first step of the first half of the sessions, without
// behaviour probabilities; the unstable file (private) holds those
// sessions' tails and the other sessions whole, as copied from the log.
type splitToy struct {
	*toy
	stable, unstable string
}

func (m splitToy) Compute(ctx context.Context, ix *sessionlog.Index, c *Charge) (int, error) {
	var stable, unstable []sessionlog.Session
	err := ix.Each(func(i int, s *sessionlog.Session) error {
		if i >= ix.Len()/2 {
			unstable = append(unstable, *s)
			return nil
		}
		head := sessionlog.Session{Session: s.Session + "/prefix", Steps: slices.Clone(s.Steps[:1])}
		head.Steps[0].LogP, head.Steps[0].NoProb = math.NaN(), true
		tail := *s
		tail.Session, tail.Steps = s.Session+"/tail", s.Steps[1:]
		stable, unstable = append(stable, head), append(unstable, tail)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := c.RegisterDerived(Derived{Note: "stable", Sessions: stable, Released: true}, Derived{Note: "unstable", Sessions: unstable}); err != nil {
		return 0, err
	}
	if err := writeSessions(m.stable, stable); err != nil {
		return 0, err
	}
	return len(stable), writeSessions(m.unstable, unstable)
}

// sideToy is a learner that reads a public side input: it checks it with
// Dataset.CheckReleased in Entry or (keeping the Dataset) in Validate.
type sideToy struct {
	*toy
	public     string
	inValidate bool
	ds         Dataset
	checked    *sessionlog.Index
}

func (m *sideToy) Entry(ix *sessionlog.Index, ds Dataset) (ledger.Entry, error) {
	e, err := m.toy.Entry(ix, ds)
	if err != nil || m.public == "" {
		return e, err
	}
	m.ds = ds
	if !m.inValidate {
		m.checked, err = ds.CheckReleased(m.public, sessionlog.ReaderOptions{OptionalProb: true})
	}
	return e, err
}

func (m *sideToy) Validate(ix *sessionlog.Index, e *ledger.Entry) error {
	if err := m.toy.Validate(ix, e); err != nil || !m.inValidate {
		return err
	}
	var err error
	m.checked, err = m.ds.CheckReleased(m.public, sessionlog.ReaderOptions{OptionalProb: true})
	return err
}

// lineageFixture is two SVT-like releases (splitToy) in one ledger, on the
// logs a (10 sessions) and b (4 others): the logs, their released and
// unstable files, their datasets, and the config they were charged with.
type lineageFixture struct {
	dir, ledger           string
	a, stableA, unstableA string
	b, stableB, unstableB string
	datasetA, datasetB    string
	cfg                   Config
}

// newLineageFixture runs the two releases in a new directory.
func newLineageFixture(t *testing.T) lineageFixture {
	t.Helper()
	dir := t.TempDir()
	f := lineageFixture{dir: dir, ledger: filepath.Join(dir, "ledger"),
		a: writeLogAt(t, filepath.Join(dir, "a.jsonl"), 0, 10), b: writeLogAt(t, filepath.Join(dir, "b.jsonl"), 100, 4),
		stableA: filepath.Join(dir, "stable-a.jsonl"), unstableA: filepath.Join(dir, "unstable-a.jsonl"),
		stableB: filepath.Join(dir, "stable-b.jsonl"), unstableB: filepath.Join(dir, "unstable-b.jsonl")}
	f.cfg = Config{Ledger: f.ledger, Cap: ledger.Cap{Epsilon: 10, Delta: 1e-5}}
	for _, r := range []struct {
		log, stable, unstable string
		id                    *string
	}{{f.a, f.stableA, f.unstableA, &f.datasetA}, {f.b, f.stableB, f.unstableB, &f.datasetB}} {
		n, c, err := Run(context.Background(), f.cfg, Input{Path: r.log}, splitToy{toy: &toy{t: t, eps: 1}, stable: r.stable, unstable: r.unstable})
		if err != nil || n == 0 {
			t.Fatalf("release on %s: %d, %v", r.log, n, err)
		}
		*r.id = c.Dataset
	}
	return f
}

// state returns the ledger's head and dataset's spent epsilon at unit
// trajectory.
func (f lineageFixture) state(t *testing.T, dataset string) (ledger.Head, float64) {
	t.Helper()
	s, err := ledger.Open(f.ledger, ledger.Options{MustExist: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := s.Dataset(dataset)
	if err != nil {
		t.Fatal(err)
	}
	spent, err := d.Units[ledger.UnitTrajectory].Spent()
	if err != nil {
		t.Fatal(err)
	}
	return h, spent
}

// TestRunDerived: a run on a derived file with Config.Derived is charged to
// the source dataset; one whose records the ledger does not all know is
// refused before anything is charged, as is one on a missing ledger.
func TestRunDerived(t *testing.T) {
	f := newLineageFixture(t)
	h0, spent0 := f.state(t, f.datasetA)
	if spent0 != 1 {
		t.Fatalf("the release spent %v, want 1", spent0)
	}
	cfg := f.cfg
	cfg.Derived = true
	m := &toy{t: t, eps: 0.5}
	_, c, err := Run(context.Background(), cfg, Input{Path: f.unstableA}, m)
	if err != nil {
		t.Fatal(err)
	}
	h1, spent1 := f.state(t, f.datasetA)
	if c.Dataset != f.datasetA || c.Entry.DatasetID != f.datasetA || c.Entry.NewRecords != 0 || c.Spent != 1.5 || spent1 != 1.5 || h1.Seq != h0.Seq+1 {
		t.Errorf("charge %+v; the source dataset spent %v -> %v, head %d -> %d; want 1 -> 1.5 and one entry", c, spent0, spent1, h0.Seq, h1.Seq)
	}
	if _, spentB := f.state(t, f.datasetB); spentB != 1 {
		t.Errorf("dataset B spent %v, want 1", spentB)
	}

	// Refused before anything is charged.
	mixed := filepath.Join(f.dir, "mixed.jsonl")
	unstable, err := os.ReadFile(f.unstableA)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := os.ReadFile(writeLogAt(t, filepath.Join(f.dir, "fresh.jsonl"), 500, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mixed, append(unstable, strings.SplitAfter(string(fresh), "\n")[0]...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, ledger, want string
	}{
		{"a derived file with a new record", mixed, f.ledger, "1 of its 11 distinct records are unknown to ledger"},
		{"a log the ledger never saw", filepath.Join(f.dir, "fresh.jsonl"), f.ledger, "2 of its 2 distinct records are unknown to ledger"},
		{"no ledger", f.unstableA, filepath.Join(f.dir, "none"), "there is no ledger in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.cfg
			cfg.Derived, cfg.Ledger = true, tc.ledger
			m := &toy{t: t, eps: 0.5}
			_, c, err := Run(context.Background(), cfg, Input{Path: tc.path}, m)
			if !errors.Is(err, ErrUnknownSource) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) ||
				!strings.Contains(err.Error(), "run dprl offline svt on the source log with this ledger first") || c.Charged() {
				t.Fatalf("error %v, charged %v; want ErrUnknownSource with %q", err, c.Charged(), tc.want)
			}
			if !slices.Equal(m.calls, []string{"check", "scanned"}) {
				t.Errorf("calls %v", m.calls)
			}
			if tc.ledger != f.ledger {
				if _, err := os.Stat(tc.ledger); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a ledger was created: %v", err)
				}
				return
			}
			if h, spent := f.state(t, f.datasetA); h != h1 || spent != spent1 {
				t.Errorf("head %+v, spent %v after a refused run; want %+v, %v", h, spent, h1, spent1)
			}
		})
	}
	// Without Config.Derived the same file is a new dataset.
	if _, c, err := Run(context.Background(), f.cfg, Input{Path: mixed}, &toy{t: t, eps: 0.5}); err != nil || c.Dataset != f.datasetA || c.Entry.NewRecords != 1 {
		t.Errorf("without Derived: %+v, %v", c, err)
	}
	verifyLedger(t, f.ledger)
}

// TestCheckReleased: a public side input must consist of records of the
// run's dataset's released files; anything else is refused, and the run
// costs nothing.
func TestCheckReleased(t *testing.T) {
	f := newLineageFixture(t)
	part := filepath.Join(f.dir, "part-of-stable.jsonl")
	stable, err := os.ReadFile(f.stableA)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(stable), "\n")
	if err := os.WriteFile(part, []byte(lines[3]+lines[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(f.dir, "unknown.jsonl")
	if err := os.WriteFile(unknown, []byte(lines[0]+`{"session":"new","steps":[{"obs":[7],"action":1,"reward":0.5}],"terminal":true}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The release with behaviour probabilities added holds the records'
	// content, but not the released records themselves.
	withProb := rewrite(t, f.stableA, filepath.Join(f.dir, "stable-with-prob.jsonl"), func(_ int, s *sessionlog.Session) bool {
		s.Steps[0].NoProb, s.Steps[0].LogP = false, -0.5
		return true
	})
	for _, tc := range []struct {
		name       string
		public     string
		inValidate bool
		records    int    // of the accepted file
		want       string // in the refusal
	}{
		{"stable file", f.stableA, false, 5, ""},
		{"stable file, checked in validate", f.stableA, true, 5, ""},
		{"part of the stable file", part, true, 2, ""},
		{"unstable file", f.unstableA, true, 0, "10 of its 10 distinct records are not records of a released file"},
		{"the source log", f.a, false, 0, "10 of its 10 distinct records are not records of a released file"},
		{"another dataset's stable file", f.stableB, true, 0, "belongs to another dataset than"},
		{"unknown records", unknown, false, 0, "1 of its 2 distinct records are unknown to ledger"},
		{"the stable file with probabilities added", withProb, false, 0, "5 of its 5 distinct records are not records of a released file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h0, spent0 := f.state(t, f.datasetA)
			cfg := f.cfg
			cfg.Derived = true
			m := &sideToy{toy: &toy{t: t, eps: 0.5}, public: tc.public, inValidate: tc.inValidate}
			_, c, err := Run(context.Background(), cfg, Input{Path: f.unstableA}, m)
			h, spent := f.state(t, f.datasetA)
			if tc.want == "" {
				if err != nil || !c.Charged() || m.checked == nil || m.checked.Len() != tc.records || m.ds.ID() != f.datasetA || spent != spent0+0.5 {
					t.Fatalf("error %v, charge %+v, checked %v, spent %v -> %v", err, c, m.checked, spent0, spent)
				}
				return
			}
			if !errors.Is(err, ErrNotReleased) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.public) || c.Charged() {
				t.Fatalf("error %v, charged %v; want ErrNotReleased with %q", err, c.Charged(), tc.want)
			}
			if h != h0 || spent != spent0 {
				t.Errorf("head %+v, spent %v after a refused run; want %+v, %v", h, spent, h0, spent0)
			}
		})
	}
	verifyLedger(t, f.ledger)
}

// verifyLedger runs the ledger's Verify, which must find nothing.
func verifyLedger(t *testing.T, dir string) {
	t.Helper()
	s, err := ledger.Open(dir, ledger.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Verify()
	if err != nil || !r.OK() || r.DerivedFiles != 4 {
		t.Errorf("verify: %v, %+v", err, r)
	}
}
