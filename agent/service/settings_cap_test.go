package service_test

import (
	"math"
	"testing"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/ledger/accountant"
)

// TestSettingsDefaultUserCap: with neither per-user cap set, a user takes
// part in at most DefaultMaxUpdatesPerUser updates (the per-user epsilon is
// then bounded); explicit zeros for both turn the cap off; an explicit
// --user-epsilon alone leaves the update count uncapped.
func TestSettingsDefaultUserCap(t *testing.T) {
	base := service.Settings{DataDir: t.TempDir(), EnvSpec: "cartpole", Delta: 1e-5, SessionMemoryMiB: 64,
		MaxOpenSessions: 10, MaxStepsPerSession: 100, IdleTimeout: 1e9, FlushTimeout: 1e9, MaxSessionLifetime: 1e10,
		MaxSessionsPerUser: 1, MaxSessionsPerConnection: 10, MaxQueuedPerUser: 1, RewardLow: math.NaN(), RewardHigh: math.NaN()}
	for _, c := range []struct {
		name       string
		userEps    float64
		maxUpdates int
		explicit   map[string]bool
		wantMax    int
		wantBound  bool
	}{
		{"unset", 0, 0, nil, service.DefaultMaxUpdatesPerUser, true},
		{"explicit zeros", 0, 0, map[string]bool{"UserEpsilon": true, "MaxUpdatesPerUser": true}, 0, false},
		{"user epsilon only", 8, 0, map[string]bool{"UserEpsilon": true}, 0, true},
		{"max updates", 0, 4, map[string]bool{"MaxUpdatesPerUser": true}, 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := base
			s.UserEpsilon, s.MaxUpdatesPerUser = c.userEps, c.maxUpdates
			s.Explicit = func(f string) bool { return c.explicit[f] }
			sc, err := s.ServiceConfig()
			if err != nil {
				t.Fatal(err)
			}
			if sc.Agent.MaxUpdatesPerUser != c.wantMax {
				t.Errorf("MaxUpdatesPerUser = %d, want %d", sc.Agent.MaxUpdatesPerUser, c.wantMax)
			}
			eps, ok, err := sc.Agent.UserEpsilonBound()
			if err != nil || ok != c.wantBound {
				t.Fatalf("UserEpsilonBound = %v, %v, %v; want bounded %v", eps, ok, err, c.wantBound)
			}
			if c.name == "unset" {
				one, _ := sc.Agent.SessionEpsilon()
				if eps != one {
					t.Errorf("one update per user: user epsilon %v, want the session epsilon %v", eps, one)
				}
			}
		})
	}
}

func TestUserCaps(t *testing.T) {
	for _, c := range []struct {
		cfg  agent.Config
		want string
	}{
		{agent.Config{}, ""},
		{agent.Config{MaxUpdatesPerUser: 3}, "at most 3 updates per user"},
		{agent.Config{MaxUpdatesPerUser: 1, UserEpsilon: 8}, "at most 1 update per user, user epsilon 8"},
	} {
		if got := c.cfg.UserCaps(); got != c.want {
			t.Errorf("UserCaps(%+v) = %q, want %q", c.cfg, got, c.want)
		}
	}
}

// TestUserEpsilonDerivesNoise: --user-epsilon without --z or
// --session-epsilon sets z so that a user in every update the caps allow
// reaches the target and no more; with --z it is only a cap.
func TestUserEpsilonDerivesNoise(t *testing.T) {
	for _, c := range []struct {
		name       string
		userEps    float64
		maxUpdates int
		z          float64
	}{
		{"one update", 5, 0, 0},
		{"ten updates", 5, 10, 0},
		{"hundred updates, epsilon 1", 1, 100, 0},
		{"explicit z stays", 5, 10, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := baseSettings(t)
			s.UserEpsilon, s.MaxUpdatesPerUser, s.Z = c.userEps, c.maxUpdates, c.z
			s.Explicit = func(f string) bool {
				return f == "UserEpsilon" || f == "MaxUpdatesPerUser" && c.maxUpdates > 0 || f == "Z" && c.z > 0
			}
			sc, err := s.ServiceConfig()
			if err != nil {
				t.Fatal(err)
			}
			z := sc.Agent.Policy.DP.NoiseMultiplier
			if c.z > 0 {
				if z != c.z {
					t.Fatalf("z = %v, want the explicit %v", z, c.z)
				}
				return
			}
			k := max(c.maxUpdates, 1)
			eps, err := accountant.GaussianEpsilon(z/math.Sqrt(float64(k)), sc.Agent.Delta)
			if err != nil {
				t.Fatal(err)
			}
			// At most the target, and tight: 0.1% less noise would exceed it.
			if eps > c.userEps {
				t.Fatalf("z = %v: %d updates compose to epsilon %v > %v", z, k, eps, c.userEps)
			}
			if e2, _ := accountant.GaussianEpsilon(0.999*z/math.Sqrt(float64(k)), sc.Agent.Delta); e2 <= c.userEps {
				t.Fatalf("z = %v is not the smallest: 0.999 z gives %v <= %v", z, e2, c.userEps)
			}
			if b, ok, err := sc.Agent.UserEpsilonBound(); err != nil || !ok || b > c.userEps {
				t.Fatalf("UserEpsilonBound = %v, %v, %v", b, ok, err)
			}
		})
	}
}
