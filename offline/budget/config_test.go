package budget

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"dprl/ledger"
)

// TestResolve checks the defaults and the cap check of Config.Resolve, and
// that Run refuses the same caps before reading anything.
func TestResolve(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	ok := ledger.Cap{Epsilon: 10, Delta: 1e-5}
	tests := []struct {
		name    string
		cfg     Config
		want    Config
		bad     string // CapError component, "" for none
		message string
	}{
		{"default ledger", Config{Cap: ok, EpsilonGiven: true}, Config{Ledger: filepath.Join(xdg, "dprl", "offline-ledger"), Cap: ok, EpsilonGiven: true}, "", ""},
		{"given ledger", Config{Ledger: "/l", Cap: ok, DeltaGiven: true}, Config{Ledger: "/l", Cap: ok, DeltaGiven: true}, "", ""},
		{"uncharged ignores the cap", Config{Ledger: "/l", Cap: ledger.Cap{}, EpsilonGiven: true, Uncharged: true}, Config{Uncharged: true}, "", ""},
		{"epsilon zero", Config{Cap: ledger.Cap{Epsilon: 0, Delta: 2}}, Config{}, "epsilon", "cap epsilon 0: want > 0"},
		{"epsilon infinite", Config{Cap: ledger.Cap{Epsilon: 1 / zero(), Delta: 1e-5}}, Config{}, "epsilon", "cap epsilon +Inf: want > 0"},
		{"epsilon NaN", Config{Cap: ledger.Cap{Epsilon: zero() / zero(), Delta: 1e-5}}, Config{}, "epsilon", "cap epsilon NaN: want > 0"},
		{"delta one", Config{Cap: ledger.Cap{Epsilon: 1, Delta: 1}}, Config{}, "delta", "cap delta 1: want in (0, 1)"},
		{"delta zero", Config{Cap: ledger.Cap{Epsilon: 1, Delta: 0}}, Config{}, "delta", "cap delta 0: want in (0, 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.Resolve()
			var ce *CapError
			if tt.bad == "" {
				same := got.Ledger == tt.want.Ledger && got.Cap == tt.want.Cap && got.EpsilonGiven == tt.want.EpsilonGiven &&
					got.DeltaGiven == tt.want.DeltaGiven && got.Uncharged == tt.want.Uncharged
				if err != nil || !same {
					t.Fatalf("Resolve: %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if !errors.As(err, &ce) || ce.Component != tt.bad || err.Error() != tt.message {
				t.Fatalf("Resolve: %v; want a CapError on %s: %q", err, tt.bad, tt.message)
			}
			// Run refuses the same cap, before the log is opened.
			cfg := tt.cfg
			cfg.Ledger = filepath.Join(t.TempDir(), "ledger")
			_, _, err = Run(context.Background(), cfg, Input{Path: "/nonexistent"}, &toy{t: t, eps: 1})
			if !errors.As(err, &ce) || !errors.Is(err, ledger.ErrInvalid) || err.Error() != ledger.ErrInvalid.Error()+": "+tt.message {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

// zero is 0 at run time (the compiler refuses 1/0.0 in a constant).
func zero() float64 { return 0 }

// TestExplain runs real refusals and checks what Explain adds to each.
func TestExplain(t *testing.T) {
	dir := t.TempDir()
	log, led := writeLog(t, dir, 3), filepath.Join(dir, "ledger")
	run := func(eps float64, cfg Config) error {
		cfg.Ledger = led
		_, _, err := Run(context.Background(), cfg, Input{Path: log}, &toy{t: t, eps: eps})
		return Explain(err)
	}
	small := ledger.Cap{Epsilon: 0.5, Delta: 1e-5}
	err := run(1, Config{Cap: small, EpsilonGiven: true})
	if !errors.Is(err, ledger.ErrBudgetExceeded) || !strings.HasSuffix(err.Error(),
		"(this is the dataset's first run at unit trajectory: the cap is --dataset-epsilon 0.5 at --dataset-delta 1e-05, which the run would store with the dataset)") {
		t.Errorf("first run over the cap: %v", err)
	}
	if err := run(1, Config{Cap: ledger.Cap{Epsilon: 1.5, Delta: 1e-5}, EpsilonGiven: true}); err != nil {
		t.Fatal(err)
	}
	setCap := "dprl ledger set-cap --data " + led + " --file " + log + " --unit trajectory --epsilon E --delta D --reason TEXT"
	err = run(1, Config{Cap: ledger.Cap{Epsilon: 10, Delta: 1e-5}})
	if !errors.Is(err, ledger.ErrBudgetExceeded) || !strings.HasSuffix(err.Error(),
		"(the cap is stored with the dataset; raise it only if the dataset's owner agreed: "+setCap+")") {
		t.Errorf("later run over the stored cap: %v", err)
	}
	err = run(0.1, Config{Cap: ledger.Cap{Epsilon: 3, Delta: 1e-5}, EpsilonGiven: true})
	if !errors.Is(err, ledger.ErrCapMismatch) || !strings.HasSuffix(err.Error(),
		"; leave out --dataset-epsilon/--dataset-delta to use it, or change it with "+setCap) {
		t.Errorf("another cap given: %v", err)
	}
	// The dataset's id (a function of the data) is never in the hint.
	if strings.Contains(err.Error(), "records-sha256:") {
		t.Errorf("the explanation names the dataset's id: %v", err)
	}
	other := errors.New("other")
	if Explain(other) != other || Explain(nil) != nil {
		t.Error("Explain changed an error that is no refusal")
	}
}

// TestFlagsConfig checks that Flags.Config carries every setting, and
// which of the cap's components were given, into the resolved Config.
func TestFlagsConfig(t *testing.T) {
	dir := t.TempDir()
	f := Flags{Ledger: dir, DatasetEpsilon: 3, DatasetDelta: 1e-6, WaitLock: 2e9}
	for _, tc := range []struct {
		given          string
		wantEps, wantD bool
	}{
		{"", false, false},
		{"DatasetEpsilon", true, false},
		{"DatasetDelta", false, true},
	} {
		c, err := f.Config(func(field string) bool { return field == tc.given }, true, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if c.Ledger != dir || c.Cap != (ledger.Cap{Epsilon: 3, Delta: 1e-6}) || c.WaitLock != 2e9 || c.Uncharged ||
			c.EpsilonGiven != tc.wantEps || c.DeltaGiven != tc.wantD {
			t.Errorf("given %q: %+v", tc.given, c)
		}
	}
	if c, err := f.Config(func(string) bool { return true }, false, zerolog.Nop()); err != nil || !c.Uncharged {
		t.Errorf("not private: %+v, %v, want an uncharged run", c, err)
	}
	if _, err := (Flags{Ledger: dir, DatasetEpsilon: -1, DatasetDelta: 1e-5}).Config(func(string) bool { return true }, true, zerolog.Nop()); !errors.As(err, new(*CapError)) {
		t.Errorf("epsilon -1: %v, want a *CapError", err)
	}
}
