package budget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/sessionlog"
)

// toy is a mechanism that records the protocol's calls. Its "result" is the
// number of records Compute reads; it releases nothing, it only exercises
// the order the protocol imposes.
type toy struct {
	t       *testing.T
	eps     float64
	badLine int // Check fails on this record (1-based), 0 never
	valErr  error
	compErr error
	panics  bool
	mutate  bool               // Validate changes the cost
	cancel  context.CancelFunc // called in Validate
	calls   []string
	seen    int
	// inStore is what Compute found in the ledger: the run's entry and the
	// dataset's runs at its unit.
	inStore    bool
	storedRuns int
	// computing, when not nil, is closed when Compute starts, which then
	// waits for hold to close (a long run holding the ledger).
	computing, hold chan struct{}
}

func (m *toy) Check(s *sessionlog.Session) error {
	m.seen++
	if m.seen == 1 || m.calls[len(m.calls)-1] != "check" {
		m.calls = append(m.calls, "check")
	}
	if m.seen == m.badLine {
		return errors.New("toy: bad record")
	}
	return nil
}

func (m *toy) Scanned(ix *sessionlog.Index) { m.calls = append(m.calls, "scanned") }

func (m *toy) Entry(ix *sessionlog.Index, ds Dataset) (ledger.Entry, error) {
	m.calls = append(m.calls, "entry")
	if _, err := ds.Cap(ledger.UnitTrajectory); err != nil {
		return ledger.Entry{}, err
	}
	return ledger.Entry{Unit: ledger.UnitTrajectory, Mechanism: "toy", Method: accountant.MethodRDP,
		Epsilon: m.eps, Delta: 1e-9, Fixed: []ledger.FixedCost{{Epsilon: m.eps, Delta: 1e-9, Source: "toy"}}}, nil
}

func (m *toy) Validate(ix *sessionlog.Index, e *ledger.Entry) error {
	m.calls = append(m.calls, "validate")
	if m.cancel != nil {
		m.cancel()
	}
	if m.mutate {
		e.Epsilon /= 2
	}
	e.Participants = ix.Len()
	return m.valErr
}

func (m *toy) Compute(ctx context.Context, ix *sessionlog.Index, c *Charge) (int, error) {
	m.calls = append(m.calls, "compute")
	if m.computing != nil {
		close(m.computing)
		<-m.hold
	}
	if c.Charged() {
		// The entry must already be in the store, with the dataset's
		// budget, before anything is computed.
		err := c.store.Entries(func(e ledger.Entry) error {
			if e.Seq == c.Entry.Seq && e.Kind == ledger.KindOffline && e.Mechanism == "toy" {
				m.inStore = true
			}
			return nil
		})
		if err != nil {
			m.t.Errorf("reading the ledger in Compute: %v", err)
		}
		d, ok, err := c.store.Dataset(c.Dataset)
		if err != nil || !ok {
			m.t.Errorf("dataset in Compute: %v %v", ok, err)
		}
		m.storedRuns = d.Units[ledger.UnitTrajectory].Runs
	}
	if m.panics {
		panic("toy: boom")
	}
	if m.compErr != nil {
		return 0, m.compErr
	}
	n := 0
	err := ix.Each(func(int, *sessionlog.Session) error { n++; return nil })
	return n, err
}

// writeLog writes n valid sessions to a file.
func writeLog(t *testing.T, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, "log.jsonl")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"session":"s%d","steps":[{"obs":[%d],"action":1,"reward":0.5,"prob":0.5}],"terminal":true}`+"\n", i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// offlineEntries opens the ledger after the run and returns its offline
// entries; a ledger that was never created has none.
func offlineEntries(t *testing.T, dir string) []ledger.Entry {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	s, err := ledger.Open(dir, ledger.Options{MustExist: true, ReadOnly: true})
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	defer s.Close()
	var out []ledger.Entry
	if err := s.Entries(func(e ledger.Entry) error {
		if e.Kind == ledger.KindOffline {
			out = append(out, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunOrder(t *testing.T) {
	errVal, errComp := errors.New("toy: invalid"), errors.New("toy: compute failed")
	tests := []struct {
		name    string
		m       toy
		cfg     func(*Config)
		ctx     bool // Validate cancels the run's context
		wantErr func(error) bool
		calls   []string
		charged bool
	}{
		{name: "ok", m: toy{eps: 1}, calls: []string{"check", "scanned", "entry", "validate", "compute"}, charged: true},
		{name: "over the cap", m: toy{eps: 2},
			wantErr: func(err error) bool {
				var r *Refusal
				return errors.As(err, &r) && r.FirstRun && r.Unit == ledger.UnitTrajectory && errors.Is(err, ledger.ErrBudgetExceeded)
			},
			calls: []string{"check", "scanned", "entry"}},
		{name: "malformed record", m: toy{eps: 1, badLine: 2},
			wantErr: func(err error) bool {
				var le *sessionlog.LineError
				return errors.As(err, &le) && strings.HasPrefix(err.Error(), "dataset: ")
			},
			calls: []string{"check"}},
		{name: "invalid input", m: toy{eps: 1, valErr: errVal},
			wantErr: func(err error) bool { return errors.Is(err, errVal) },
			calls:   []string{"check", "scanned", "entry", "validate"}},
		{name: "cost changed in validate", m: toy{eps: 1, mutate: true},
			wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "changed its cost") },
			calls:   []string{"check", "scanned", "entry", "validate"}},
		{name: "cancelled before the charge", m: toy{eps: 1}, ctx: true,
			wantErr: func(err error) bool { return errors.Is(err, context.Canceled) },
			calls:   []string{"check", "scanned", "entry", "validate"}},
		{name: "compute fails after the charge", m: toy{eps: 1, compErr: errComp},
			wantErr: func(err error) bool { return errors.Is(err, errComp) },
			calls:   []string{"check", "scanned", "entry", "validate", "compute"}, charged: true},
		{name: "compute panics after the charge", m: toy{eps: 1, panics: true},
			wantErr: func(err error) bool {
				return err != nil && strings.Contains(err.Error(), "panicked after the run was charged")
			},
			calls: []string{"check", "scanned", "entry", "validate", "compute"}, charged: true},
		{name: "uncharged", m: toy{eps: 1}, cfg: func(c *Config) { c.Uncharged = true },
			calls: []string{"check", "scanned", "validate", "compute"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log, led := writeLog(t, dir, 5), filepath.Join(dir, "ledger")
			cfg := Config{Ledger: led, Cap: ledger.Cap{Epsilon: 1.5, Delta: 1e-5}}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := tc.m
			m.t = t
			if tc.ctx {
				m.cancel = cancel
			}
			n, c, err := Run(ctx, cfg, Input{Path: log}, &m)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !tc.wantErr(err) {
				t.Fatalf("error %v", err)
			}
			if !slices.Equal(m.calls, tc.calls) {
				t.Errorf("calls %v, want %v", m.calls, tc.calls)
			}
			entries := offlineEntries(t, led)
			if !tc.charged {
				if len(entries) != 0 || c.Charged() {
					t.Errorf("uncharged run left %d entries (charge %+v)", len(entries), c.Entry)
				}
				if cfg.Uncharged || tc.m.badLine > 0 {
					if _, err := os.Stat(led); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("ledger directory created: %v", err)
					}
				}
				return
			}
			if len(entries) != 1 || !c.Charged() || entries[0].Seq != c.Entry.Seq || entries[0].Participants != 5 {
				t.Fatalf("entries %+v, charge %+v: want the one entry, 5 participants", entries, c.Entry)
			}
			if !m.inStore || m.storedRuns != 1 {
				t.Errorf("in Compute the ledger held the entry: %v, dataset runs %d", m.inStore, m.storedRuns)
			}
			if err == nil && (n != 5 || c.Spent != 1 || c.Cap != cfg.Cap || c.Dataset != entries[0].DatasetID) {
				t.Errorf("result %d, charge %+v", n, c)
			}
			if c.store != nil || c.RegisterDerived(Derived{Note: "x", Sessions: []sessionlog.Session{{}}}) == nil {
				t.Error("the charge's store is usable after Run")
			}
		})
	}
}

// TestRunCap checks the stored cap: a second run is checked against the cap
// the first stored, and an explicitly given cap that differs is refused.
func TestRunCap(t *testing.T) {
	dir := t.TempDir()
	log, led := writeLog(t, dir, 3), filepath.Join(dir, "ledger")
	run := func(cfg Config) error {
		cfg.Ledger = led
		_, _, err := Run(context.Background(), cfg, Input{Path: log}, &toy{t: t, eps: 1})
		return err
	}
	if err := run(Config{Cap: ledger.Cap{Epsilon: 2.5, Delta: 1e-5}, EpsilonGiven: true}); err != nil {
		t.Fatal(err)
	}
	// A default cap of 10 does not replace the stored 2.5.
	if err := run(Config{Cap: ledger.Cap{Epsilon: 10, Delta: 1e-5}}); err != nil {
		t.Fatal(err)
	}
	var r *Refusal
	if err := run(Config{Cap: ledger.Cap{Epsilon: 10, Delta: 1e-5}}); !errors.As(err, &r) || r.FirstRun || !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("third run over the stored cap: %v", err)
	}
	if err := run(Config{Cap: ledger.Cap{Epsilon: 3, Delta: 1e-5}, EpsilonGiven: true}); !errors.As(err, &r) || !errors.Is(err, ledger.ErrCapMismatch) {
		t.Errorf("a different cap given: %v", err)
	}
	if n := len(offlineEntries(t, led)); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
}

// TestRunWhileAnotherHoldsTheLedger: while a run computes (holding the
// ledger), the ledger reads live (what dprl ledger show does: a consistent
// copy with the run's entry), a second run fails at once with ErrLocked,
// and a second run with WaitLock waits and is charged once the first ends.
func TestRunWhileAnotherHoldsTheLedger(t *testing.T) {
	dir := t.TempDir()
	log, led := writeLog(t, dir, 3), filepath.Join(dir, "ledger")
	cfg := Config{Ledger: led, Cap: ledger.Cap{Epsilon: 10, Delta: 1e-5}}
	first := &toy{t: t, eps: 1, computing: make(chan struct{}), hold: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, _, err := Run(context.Background(), cfg, Input{Path: log}, first)
		done <- err
	}()
	<-first.computing
	s, err := ledger.Open(led, ledger.Options{ReadOnly: true, MustExist: true})
	if err != nil {
		t.Fatalf("reading the ledger a run holds: %v", err)
	}
	if h, err := s.Head(); err != nil || h.Seq == 0 {
		t.Errorf("the live copy's head: %+v %v, want the run's entry", h, err)
	}
	s.Close()
	if _, _, err := Run(context.Background(), cfg, Input{Path: log}, &toy{t: t, eps: 1}); !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), "--wait-lock") {
		t.Errorf("a second run without WaitLock: %v, want ErrLocked naming --wait-lock", err)
	}
	time.AfterFunc(300*time.Millisecond, func() { close(first.hold) })
	wait := cfg
	wait.WaitLock = 20 * time.Second
	if _, _, err := Run(context.Background(), wait, Input{Path: log}, &toy{t: t, eps: 1}); err != nil {
		t.Errorf("a second run with WaitLock: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(offlineEntries(t, led)); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
}

// TestRunRegisterDerived checks that files registered in Compute join the
// dataset.
func TestRunRegisterDerived(t *testing.T) {
	dir := t.TempDir()
	log, led := writeLog(t, dir, 3), filepath.Join(dir, "ledger")
	cfg := Config{Ledger: led, Cap: ledger.Cap{Epsilon: 10, Delta: 1e-5}}
	_, c, err := Run(context.Background(), cfg, Input{Path: log}, derivedToy{toy: &toy{t: t, eps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ledger.Open(led, ledger.Options{MustExist: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, recs := sessionlog.SessionsID(derivedSessions)
	got, err := s.ResolveDataset(id, recs)
	if err != nil || got != c.Dataset {
		t.Errorf("derived file resolves to %q (%v), want %q", got, err, c.Dataset)
	}
}

var derivedSessions = []sessionlog.Session{{Session: "d", Steps: []sessionlog.Step{{Obs: []float64{9}, Reward: 1}}}}

type derivedToy struct{ *toy }

func (m derivedToy) Compute(ctx context.Context, ix *sessionlog.Index, c *Charge) (int, error) {
	return 0, c.RegisterDerived(Derived{Note: "toy output", Sessions: derivedSessions})
}
