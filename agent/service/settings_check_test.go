package service_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/internal/testutil"
	"dprl/stream"
)

// clientFiles are real credential files: a self-signed certificate (also
// a CA) and its key, a credentials file, an nkey seed file, and a file
// that is none of these.
type clientFiles struct{ cert, key, creds, nkey, junk string }

func writeClientFiles(t *testing.T) clientFiles {
	t.Helper()
	dir := t.TempDir()
	var f clientFiles
	f.cert, f.key = testutil.WriteSelfSigned(t, dir)
	f.nkey = filepath.Join(dir, "agent.nk")
	if _, err := stream.NewIdentityKey(f.nkey); err != nil {
		t.Fatal(err)
	}
	account, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	tok, err := jwt.NewUserClaims(pub).Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		t.Fatal(err)
	}
	f.creds, f.junk = filepath.Join(dir, "agent.creds"), filepath.Join(dir, "junk")
	for p, b := range map[string][]byte{f.creds: creds, f.junk: []byte("not a credential\n")} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestSettingsRanges: every integer, size, duration and float setting of
// dprl agent has a range, checked before anything starts, and a value
// outside it is refused naming its flag; the spaces of --env cannot be
// overridden; the addresses and files are checked without dialling.
// (Before: --K 100000000000, --env cartpole --obs-dim 3, --nats
// bogus://x, --http not-an-addr and --tls-cert /nonexistent all passed.)
func TestSettingsRanges(t *testing.T) {
	explicit := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	files := writeClientFiles(t)
	missing := filepath.Join(t.TempDir(), "missing")
	external := func(s *service.Settings) { s.NATS = "nats://nats.example.com:4222" }
	cases := []struct {
		name string
		mod  func(*service.Settings)
		want string
	}{
		{"env spec and obs dim", func(s *service.Settings) { s.ObsDim = 3 }, "--env cartpole and --obs-dim/--actions both given"},
		{"env spec and explicit zero actions", func(s *service.Settings) { s.Explicit = explicit("Actions") }, "--env cartpole and --obs-dim/--actions both given"},
		{"obs dim 0", func(s *service.Settings) { s.EnvSpec, s.Actions = "", 2 }, "--obs-dim 0: want 1 to 2048"},
		{"obs dim too large", func(s *service.Settings) { s.EnvSpec, s.ObsDim, s.Actions = "", 2049, 2 }, "--obs-dim 2049: want 1 to 2048"},
		{"actions too many", func(s *service.Settings) { s.EnvSpec, s.ObsDim, s.Actions = "", 3, 4097 }, "--actions 4097: want 2 to 4096"},
		{"K huge", func(s *service.Settings) { s.K = 100000000000 }, "--K 100000000000: want 1 to 32768"},
		{"K past the sampler's precondition", func(s *service.Settings) { s.K, s.SessionMemoryMiB = 1<<15+1, 1<<16 }, "--K 32769: want 1 to 32768"},
		{"K past the memory", func(s *service.Settings) { s.K, s.SessionMemoryMiB = 1000, 1 }, "--K 1000: an update holds its K sessions until it is released, and 1000 sessions of at least"},
		{"K negative", func(s *service.Settings) { s.K, s.Explicit = -3, explicit("K") }, "--K -3: want > 0"},
		{"z infinite", func(s *service.Settings) { s.Z, s.Explicit = math.Inf(1), explicit("Z") }, "--z +Inf: want a finite value"},
		{"clip infinite", func(s *service.Settings) { s.Clip = math.Inf(1) }, "--clip +Inf: want a finite value"},
		{"max open sessions 0", func(s *service.Settings) { s.MaxOpenSessions = 0 }, "--max-open-sessions 0: open sessions, want 1 to 16777216"},
		{"max open sessions huge", func(s *service.Settings) { s.MaxOpenSessions = 1 << 40 }, "--max-open-sessions 1099511627776: open sessions, want 1 to 16777216"},
		{"max steps 1", func(s *service.Settings) { s.MaxStepsPerSession = 1 }, "--max-steps 1: steps per session, want 2 to 16777216"},
		{"max steps huge", func(s *service.Settings) { s.MaxStepsPerSession = 1e12 }, "--max-steps 1000000000000: steps per session, want 2 to 16777216"},
		{"per user huge", func(s *service.Settings) { s.MaxSessionsPerUser = 1 << 30 }, "--max-sessions-per-user 1073741824: open sessions per user, want 1 to 16777216"},
		{"per connection 0", func(s *service.Settings) { s.MaxSessionsPerConnection = 0 }, "--max-sessions-per-connection 0: open sessions per connection, want 1 to 16777216"},
		{"queued past the learner queue", func(s *service.Settings) { s.MaxQueuedPerUser = 5000 }, "--max-queued-per-user 5000: queued sessions per user, want 1 to 1152 (the capacity of the learner queue, all users together: 4 x --K + 1024)"},
		{"session memory huge", func(s *service.Settings) { s.SessionMemoryMiB = 1 << 40 }, "--session-memory-mib 1099511627776: want 1 to 2^30"},
		{"act workers", func(s *service.Settings) { s.ActWorkers = -1 }, "--act-workers -1: want 0"},
		{"idle timeout 0", func(s *service.Settings) { s.IdleTimeout = 0 }, "--idle-timeout 0s: idle timeout, want 50ms to 30 days"},
		{"idle timeout 1ns", func(s *service.Settings) { s.IdleTimeout = 1 }, "--idle-timeout 1ns: idle timeout, want 50ms to 30 days"},
		{"flush timeout a year", func(s *service.Settings) { s.FlushTimeout = 365 * 24 * time.Hour }, "--flush-timeout 8760h0m0s: flush timeout, want 50ms to 30 days"},
		{"lifetime negative", func(s *service.Settings) { s.MaxSessionLifetime = -time.Second }, "--max-session-lifetime -1s: session lifetime"},
		{"max updates per user negative", func(s *service.Settings) { s.MaxUpdatesPerUser = -1 }, "--max-updates-per-user -1: want 0 (no cap) to 1048576"},
		{"max updates per user huge", func(s *service.Settings) { s.MaxUpdatesPerUser = 1 << 40 }, "--max-updates-per-user 1099511627776: want 0 (no cap) to 1048576"},
		{"rewards equal", func(s *service.Settings) { s.RewardLow, s.RewardHigh = 1, 1 }, "reward bound [--reward-low, --reward-high] = [1, 1]: want finite low < high"},
		{"reward high below the profile's low", func(s *service.Settings) { s.RewardHigh = -1 }, "reward bound [--reward-low, --reward-high] = [0, -1]: want finite low < high"},
		{"reward infinite", func(s *service.Settings) { s.RewardLow = math.Inf(-1) }, "want finite low < high"},
		{"reward overflow", func(s *service.Settings) { s.RewardHigh = 1e150 }, "x --max-steps 10000 passes 1e+150"},
		{"delta 0", func(s *service.Settings) { s.Delta = 0 }, "--delta 0: want 0 < delta < 1"},
		{"delta 1", func(s *service.Settings) { s.Delta = 1 }, "--delta 1: want 0 < delta < 1"},
		{"delta NaN", func(s *service.Settings) { s.Delta = math.NaN() }, "--delta NaN: want 0 < delta < 1"},
		{"user epsilon negative", func(s *service.Settings) { s.UserEpsilon = -1 }, "--user-epsilon -1: the user epsilon cap must be finite and >= 0"},
		{"user epsilon infinite", func(s *service.Settings) { s.UserEpsilon = math.Inf(1) }, "--user-epsilon +Inf: the user epsilon cap must be finite"},
		{"nats caps huge", func(s *service.Settings) { s.Security.MaxConn = 1 << 40 }, "--nats-max-*: agent: nats: max connections 1099511627776"},
		{"nats subs below the agent's", func(s *service.Settings) { s.Security.MaxSubs, s.ActWorkers = 4, 2 }, "--nats-max-*: agent: nats: max subscriptions 4 per connection: the agent's own connection needs 10"},
		// Addresses: checked, never dialled.
		{"nats bogus", func(s *service.Settings) { s.NATS = "bogus://x" }, `--nats "bogus://x": want a nats://, tls://, ws:// or wss:// URL such as nats://HOST:4222 (or "embedded")`},
		{"nats without scheme", func(s *service.Settings) { s.NATS = "127.0.0.1:4222" }, `--nats "127.0.0.1:4222": want a nats://`},
		{"nats without host", func(s *service.Settings) { s.NATS = "nats://:4222" }, `--nats "nats://:4222": want a host`},
		{"http not an address", func(s *service.Settings) { s.HTTPAddr = "not-an-addr" }, `--http "not-an-addr": want HOST:PORT`},
		{"http port", func(s *service.Settings) { s.HTTPAddr = "127.0.0.1:99999" }, `--http "127.0.0.1:99999": port "99999", want 0 (any free port) to 65535`},
		{"nats listen", func(s *service.Settings) { s.NATSListen = "127.0.0.1" }, `--nats-listen "127.0.0.1": want HOST:PORT`},
		// Files: read and parsed.
		{"tls cert missing", func(s *service.Settings) { external(s); s.TLSCert, s.TLSKey = missing, files.key }, "--tls-cert/--tls-key: open " + missing + ": no such file"},
		{"tls cert without key", func(s *service.Settings) { external(s); s.TLSCert = files.cert }, "--tls-cert/--tls-key: a certificate needs its key"},
		{"tls key not a key", func(s *service.Settings) { external(s); s.TLSCert, s.TLSKey = files.cert, files.junk }, "--tls-cert/--tls-key: tls: failed to find any PEM data in key input"},
		{"tls ca junk", func(s *service.Settings) { external(s); s.TLSCA = files.junk }, "--tls-ca " + files.junk + ": " + files.junk + ": no PEM certificate"},
		{"creds missing", func(s *service.Settings) { external(s); s.Creds = missing }, "--creds " + missing + ": open "},
		{"creds junk", func(s *service.Settings) { external(s); s.Creds = files.junk }, "no user JWT"},
		{"nkey junk", func(s *service.Settings) { external(s); s.NKey = files.junk }, "--nkey " + files.junk + ": "},
		{"nkey is creds of another kind", func(s *service.Settings) { external(s); s.NKey = files.cert }, "--nkey " + files.cert + ": "},
		{"nats clients missing", func(s *service.Settings) { s.Security.Clients = missing }, "--nats-clients: stream: clients file: open "},
		{"nats clients junk", func(s *service.Settings) { s.Security.Clients = files.junk }, "--nats-clients: stream: clients file "},
		{"nats tls cert missing", func(s *service.Settings) { s.Security.ServerCert, s.Security.ServerKey = missing, files.key }, "--nats-tls-*: stream: server TLS: open " + missing},
		{"nats tls client ca junk", func(s *service.Settings) {
			s.Security.ServerCert, s.Security.ServerKey, s.Security.ClientCA = files.cert, files.key, files.junk
		}, "--nats-tls-*: stream: server TLS: client CA " + files.junk + ": no PEM certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := baseSettings(t)
			c.mod(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(asFlags(err), c.want) {
				t.Errorf("%v, want %q", err, c.want)
			}
		})
	}
	// The bounds themselves are accepted, and so is every file and address
	// above when it is right.
	s := baseSettings(t)
	s.K, s.SessionMemoryMiB, s.MaxOpenSessions, s.MaxStepsPerSession = agent.MaxUsersPerUpdate, 2048, agent.MaxSessions, agent.MaxSteps
	s.MaxSessionsPerUser, s.MaxSessionsPerConnection, s.MaxQueuedPerUser, s.MaxUpdatesPerUser = agent.MaxSessions, agent.MaxSessions, agent.MaxQueuedPerUser(agent.MaxUsersPerUpdate), agent.MaxUpdatesPerUserCap
	s.IdleTimeout, s.FlushTimeout, s.MaxSessionLifetime, s.HTTPAddr = agent.MinTimeout, agent.MaxTimeout, agent.MaxTimeout, ":0"
	s.Security.ServerCert, s.Security.ServerKey, s.Security.ClientCA = files.cert, files.key, files.cert
	if err := s.Validate(); err != nil {
		t.Errorf("at the bounds: %v", asFlags(err))
	}
	s = baseSettings(t)
	s.EnvSpec, s.ObsDim, s.Actions = "", service.MaxObsDim, service.MaxActions
	s.NATS, s.TLSCA, s.TLSCert, s.TLSKey, s.Creds, s.NKey = "tls://a.example.com:4222,tls://b.example.com", files.cert, files.cert, files.key, files.creds, files.nkey
	if err := s.Validate(); err != nil {
		t.Errorf("external server with every file: %v", asFlags(err))
	}
}
