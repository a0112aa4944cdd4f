package service

import (
	"fmt"
	"testing"
	"time"

	"dprl/agent"
	"dprl/internal/testutil"
)

// TestEndReplyNoMembershipOracle: End's reply to a client is the same for
// a user who already took part in an update (and is now at a per-user cap)
// as for a user never seen: a client that names a user id learns nothing
// of that user's history from it. The set-aside is still counted, by
// reason, in the operator's metric. (Before: the capped user's reply was
// {"used":false,"reason":"user reached max_updates_per_user"}, or "user
// reached the epsilon cap".)
func TestEndReplyNoMembershipOracle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(*agent.Config)
		reason string
	}{
		{"update cap", func(c *agent.Config) { c.MaxUpdatesPerUser = 1 }, "user_update_cap"},
		{"epsilon cap", func(c *agent.Config) {
			eps, err := c.SessionEpsilon()
			if err != nil {
				t.Fatal(err)
			}
			c.UserEpsilon = eps * 1.01 // one update fits, a second does not
		}, "user_epsilon_cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cartpoleConfig(2)
			tc.set(&cfg)
			svc := startService(t, cfg, func(sc *ServiceConfig) { sc.HTTPAddr = "127.0.0.1:0" })
			_, c := dial(t, svc)
			playUsers(t, c, "alice", "bob")
			testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return svc.Agent().Version() == 1 })
			took := playUsers(t, c, "alice")[0] // took part in version 1: at the cap
			fresh := playUsers(t, c, "carol")[0]
			if took != fresh {
				t.Errorf("end reply of a user who took part %+v, of a new user %+v: they differ", took, fresh)
			}
			series := fmt.Sprintf("dprl_sessions_discarded_total{reason=%q}", tc.reason)
			// Batch formation sets the session aside after the reply.
			testutil.EventuallyTrue(t, 10*time.Second, series+" = 1 (the operator still sees the set-aside)", func() bool {
				return scrape(t, svc.OpsAddr())[series] == 1
			})
		})
	}
}

// waitDiscarded waits until a's sessions set aside for reason number n:
// batch formation applies the per-user caps after End replied.
func waitDiscarded(t *testing.T, a *agent.Agent, reason string, n float64) {
	t.Helper()
	testutil.EventuallyTrue(t, 10*time.Second, fmt.Sprintf("%d sessions set aside (%s)", int(n), reason), func() bool {
		return testutil.MetricValue(t, a.Metrics().SessionsDiscarded.WithLabelValues(reason)) == n
	})
}
