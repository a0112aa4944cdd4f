package svt

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/ledger/accountant"
)

// TestReleaseRefusesAnUnreachableThreshold checks that a release whose
// threshold no prefix can reach (the public roster of experts times the
// largest smoothed probability is below c_min/p_min) is refused before
// anything is charged, naming the largest count and the threshold; that
// one whose threshold only short prefixes can reach runs, warns before the
// charge and reports how many steps can be kept; and that one that can
// keep whole trajectories does not warn.
func TestReleaseRefusesAnUnreachableThreshold(t *testing.T) {
	data, experts := releaseFixture(t, 3) // 3 uniform experts (p_max 0.5) in the log
	tests := []struct {
		name    string
		roster  int
		cfg     Config
		refused []string // the error's parts; nil: the release runs
		warn    []string // the warning's parts; nil: no warning
	}{
		// eps' 0.12, theta 5.864, centre 109.6: 3 * 0.5 cannot reach it.
		{"unreachable", 3, Config{Epsilon: 10, Delta: 0.1, Queries: 5, MaxLen: 500, PMin: 0.5},
			[]string{"no prefix can be kept", "largest count a prefix can reach is 1.5", "Experts holds 3 snapshots", "threshold c_min/p_min = 5.864", "centre is 109.6", "Nothing was charged"}, nil},
		// eps' 1.35, theta 2.704, centre 34.86.
		{"below theta", 3, Config{Epsilon: 200, Delta: 0.1, Queries: 5, MaxLen: 500, PMin: 0.5},
			[]string{"largest count a prefix can reach is 1.5", "threshold c_min/p_min = 2.704", "centre is 34.9"}, nil},
		{"below the centre", 10, Config{Epsilon: 200, Delta: 0.1, Queries: 5, MaxLen: 500, PMin: 0.5},
			nil, []string{"no prefix reaches the noisy threshold's centre 34.9", "largest count is 5", "roster of 10 snapshots"}},
		{"one step", 100, Config{Epsilon: 200, Delta: 0.1, Queries: 5, MaxLen: 500, PMin: 0.5},
			nil, []string{"at most 1 of a trajectory's up to L = 500 steps", "100 * 0.5^k", "centre 34.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := releaseConfig(data, withRoster(t, experts, tt.roster), dir)
			c.Config = tt.cfg
			var warns []string
			c.Warn = func(s string) { warns = append(warns, s) }
			led := filepath.Join(dir, "led")
			_, _, err := runRelease(t, c, led)
			if tt.refused != nil {
				if err == nil {
					t.Fatal("release ran, want it refused")
				}
				for _, w := range tt.refused {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\nwant %q in it", err, w)
					}
				}
				if _, err := os.Stat(c.OutStable); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("stable output: %v, want none", err)
				}
				assertNoCharge(t, led)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 1 {
				t.Fatalf("warnings %q, want one", warns)
			}
			for _, w := range tt.warn {
				if !strings.Contains(warns[0], w) {
					t.Errorf("warning %q\nwant %q in it", warns[0], w)
				}
			}
		})
	}
}

// assertNoCharge fails if the ledger in led holds an entry.
func assertNoCharge(t *testing.T, led string) {
	t.Helper()
	s, err := ledger.Open(led, ledger.Options{})
	if err != nil {
		return // no ledger: nothing charged
	}
	defer s.Close()
	h, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	if h.Seq != 0 {
		t.Errorf("ledger head %d, want no entry", h.Seq)
	}
}

// TestNewReach checks the reach of docs/offline.md's release (M = 3000 cartpole
// experts, p_min 0.02, eps1 10, delta1 3.33e-4, T 25, L 500): prefixes of
// up to 52 steps can reach the threshold's centre 1047.8, whole 500-step
// trajectories cannot; with L 50 nothing is lost (no warning); with 100
// experts nothing can be kept.
func TestNewReach(t *testing.T) {
	p, err := accountant.SVTSplit(10, 3.33e-4, 25, 500, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		roster, l     int
		steps         int
		refused, warn bool
	}{
		{"README", 3000, 500, 52, false, true},
		{"short trajectories", 3000, 50, 50, false, false},
		{"100 experts", 100, 500, 0, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReach(p, tt.roster, 2, tt.l, 0.02)
			if r.Steps != tt.steps || (r.Err() != nil) != tt.refused || (r.Warning() != "") != tt.warn {
				t.Errorf("reach %+v: steps %d, err %v, warning %q; want %d steps, refused %v, warning %v", r, r.Steps, r.Err(), r.Warning(), tt.steps, tt.refused, tt.warn)
			}
			if math.Abs(r.Centre-1047.8) > 0.05 {
				t.Errorf("centre %v, want 1047.8", r.Centre)
			}
		})
	}
}

// withRoster returns a copy of the experts' directory with snapshots of
// experts who are not in the log added up to n: the roster (a public bound
// on M) grows, the log does not.
func withRoster(t *testing.T, experts string, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "experts")
	if err := os.CopyFS(dir, os.DirFS(experts)); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(ExpertPath(experts, "e0"))
	if err != nil {
		t.Fatal(err)
	}
	have, err := RosterSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := have; i < n; i++ {
		if err := os.WriteFile(ExpertPath(dir, fmt.Sprintf("x%d", i)), snap, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
