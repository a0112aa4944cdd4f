package service

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/agent"
	"dprl/agent/internal/agenttest"
	"dprl/internal/fielderr"
	"dprl/ledger"
	"dprl/policy/qnet"
)

// legacyQ is a qlearn snapshot as dprl.qlearn.v1 wrote it: the same
// networks and "private" fields, no ledger entry.
func legacyQ(t *testing.T, b []byte) []byte {
	t.Helper()
	s := strings.Replace(string(b), `"format":"`+qnet.SnapshotFormat+`"`, `"format":"`+qnet.SnapshotFormatV1+`"`, 1)
	s = strings.Replace(s, `,"ledger_seq":3`, "", 1)
	if s == string(b) || strings.Contains(s, "ledger_seq") {
		t.Fatalf("could not make a v1 snapshot of %.200s", b)
	}
	return []byte(s)
}

// legacySAC is a SAC actor snapshot as version 1 wrote it: without the
// 41-byte provenance block after the magic and version, checksum redone.
func legacySAC(t *testing.T, b []byte) []byte {
	t.Helper()
	const h, block = 9, 1 + 8 + 8 + 16 + 8
	v1 := append(append([]byte(nil), b[:h]...), b[h+block:len(b)-4]...)
	v1[h-1] = 1
	return binary.LittleEndian.AppendUint32(v1, crc32.Checksum(v1, crc32.MakeTable(crc32.Castagnoli)))
}

// servePolicySettings are settings serving file on env.
func servePolicySettings(t *testing.T, env, file string) Settings {
	return Settings{DataDir: t.TempDir(), EnvSpec: env, ServePolicy: file, Delta: 1e-5,
		MaxOpenSessions: 100000, MaxStepsPerSession: 10000, IdleTimeout: 1e12, FlushTimeout: 6e10,
		MaxSessionLifetime: 36e11, MaxSessionsPerUser: 16, MaxSessionsPerConnection: 10000, MaxQueuedPerUser: 2,
		SessionMemoryMiB: 1024, RewardLow: 0, RewardHigh: 1, NATS: "embedded", NATSListen: "127.0.0.1:4222", Prefix: "dprl"}
}

// TestServePolicyProvenance: --serve-policy serves a snapshot whose
// Status says it is private; a non-private snapshot (offline learn
// --non-private, primorl --non-private or --mopo) and a snapshot without
// provenance (written before snapshots recorded it) are refused unless
// ServeNonPrivate says to serve them, which a private snapshot refuses.
// (Before: every snapshot was served as "a DP release".)
func TestServePolicyProvenance(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		t.Helper()
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	qPriv := agenttest.QSnapshot(t, agenttest.PrivateProvenance())
	sPriv := agenttest.SACSnapshot(t, 3, []float64{-2}, []float64{2}, agenttest.PrivateProvenance())
	for _, tc := range []struct {
		name, env, file string
		private         bool
	}{
		{"qlearn private", "cartpole", write("q.json", qPriv), true},
		{"qlearn non-private", "cartpole", write("qn.json", agenttest.QSnapshot(t, ledger.Provenance{})), false},
		{"qlearn v1", "cartpole", write("q1.json", legacyQ(t, qPriv)), false},
		{"sac private", "pendulum", write("s.snap", sPriv), true},
		{"sac non-private", "pendulum", write("sn.snap", agenttest.SACSnapshot(t, 3, []float64{-2}, []float64{2}, ledger.Provenance{})), false},
		{"sac v1", "pendulum", write("s1.snap", legacySAC(t, sPriv)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, flag := range []bool{false, true} {
				s := servePolicySettings(t, tc.env, tc.file)
				s.ServeNonPrivate = flag
				sc, err := s.ServiceConfig()
				if flag != tc.private {
					if err != nil {
						t.Fatalf("ServeNonPrivate %v: %v", flag, err)
					}
					if f := sc.Agent.Fixed; f.Private() != tc.private || f.ServeNonPrivate != flag {
						t.Errorf("ServeNonPrivate %v: private %v, flag %v", flag, f.Private(), f.ServeNonPrivate)
					}
					continue
				}
				if err == nil {
					t.Fatalf("ServeNonPrivate %v: accepted", flag)
				}
				if msg := fielderr.Rename(err, func(f string) string { return "<" + f + ">" }).Error(); !strings.Contains(msg, "<ServeNonPrivate>") {
					t.Errorf("ServeNonPrivate %v: %s, want an error naming the flag", flag, msg)
				}
			}
		})
	}
	// A Config built by hand is refused the same way.
	f, err := agent.ParseFixedPolicy(agenttest.QSnapshot(t, ledger.Provenance{}), "qn.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := cartpoleConfig(2)
	cfg.Fixed = f
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "NOT private") {
		t.Errorf("a Config serving a non-private snapshot without ServeNonPrivate: %v", err)
	}
}

// TestServePolicyShowsProvenance: the start line, /status, the status
// page and the metrics show the served snapshot's own provenance: a
// private one at its (epsilon, delta) per unit with its ledger entry, a
// non-private one, served with ServeNonPrivate, as NOT private. (Before:
// the page showed "(ε = 0, δ = 1e-05)-differentially private per session"
// and "version 0 is the initial policy, drawn before any session"; the
// start line called any snapshot "a DP release".)
func TestServePolicyShowsProvenance(t *testing.T) {
	for _, tc := range []struct {
		name string
		prov ledger.Provenance
		want []string // on the start line and the page
		not  []string
	}{
		{"private", agenttest.PrivateProvenance(), []string{"(epsilon 10, delta 1e-05)-DP per expert (ledger entry 3)"}, []string{"NOT private"}},
		{"non-private", ledger.Provenance{}, []string{"NOT private"}, []string{"differentially private per", "DP per"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := agent.ParseFixedPolicy(agenttest.QSnapshot(t, tc.prov), "q.json")
			if err != nil {
				t.Fatal(err)
			}
			f.ServeNonPrivate = !tc.prov.Private
			cfg := cartpoleConfig(2)
			cfg.Fixed = f
			svc := startService(t, cfg, func(sc *ServiceConfig) { sc.HTTPAddr = "127.0.0.1:0" })
			var sb strings.Builder
			if err := svc.Announce(&sb); err != nil {
				t.Fatal(err)
			}
			page, _ := getPage(t, svc.OpsAddr())
			for _, w := range tc.want {
				if !strings.Contains(sb.String(), w) {
					t.Errorf("start line lacks %q:\n%s", w, sb.String())
				}
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			if !tc.prov.Private && strings.Contains(sb.String(), "post-processing") {
				t.Errorf("start line calls serving a non-private policy post-processing:\n%s", sb.String())
			}
			for _, w := range append(tc.not, "initial policy", "ε = 0,") {
				if strings.Contains(sb.String(), w) {
					t.Errorf("start line says %q:\n%s", w, sb.String())
				}
				if strings.Contains(page, w) {
					t.Errorf("page says %q", w)
				}
			}

			var st struct {
				Prov *struct {
					Private   bool    `json:"private"`
					Epsilon   float64 `json:"epsilon"`
					Delta     float64 `json:"delta"`
					Unit      string  `json:"unit"`
					LedgerSeq uint64  `json:"ledger_seq"`
					Label     string  `json:"label"`
				} `json:"fixed_policy_provenance"`
			}
			body := httpGet(t, "http://"+svc.OpsAddr()+"/status")
			if err := json.Unmarshal([]byte(body), &st); err != nil || st.Prov == nil {
				t.Fatalf("/status %s: %v", body, err)
			}
			p := st.Prov
			if p.Private != tc.prov.Private || p.Epsilon != tc.prov.Epsilon || p.Delta != tc.prov.Delta || p.Unit != string(tc.prov.Unit) ||
				p.LedgerSeq != tc.prov.LedgerSeq || !strings.Contains(p.Label, tc.want[0]) {
				t.Errorf("/status provenance %+v, want %+v", *p, tc.prov)
			}

			m := scrape(t, svc.OpsAddr())
			priv := 0.0
			if tc.prov.Private {
				priv = 1
			}
			if got, ok := m["dprl_fixed_policy_private"]; !ok || got != priv {
				t.Errorf("dprl_fixed_policy_private %v (present %v), want %v", got, ok, priv)
			}
			if tc.prov.Private {
				key := `dprl_fixed_policy_epsilon{ledger_entry="3",unit="expert"}`
				if got := m[key]; got != 10 {
					t.Errorf("%s = %v, want 10", key, got)
				}
				if got := m[`dprl_fixed_policy_delta{ledger_entry="3",unit="expert"}`]; got != 1e-5 {
					t.Errorf("dprl_fixed_policy_delta %v, want 1e-05", got)
				}
			} else if _, ok := m[`dprl_fixed_policy_epsilon`]; ok {
				t.Error("a non-private snapshot has an epsilon gauge")
			}
		})
	}
}
