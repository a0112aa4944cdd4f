package service_test

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/internal/fielderr"
	"dprl/internal/testutil"
	"dprl/policy"
	"dprl/profile"
)

// baseSettings are dprl agent's defaults with a data directory and a
// simulator: what the command builds before its flags change anything.
func baseSettings(t *testing.T) service.Settings {
	return service.Settings{DataDir: t.TempDir(), EnvSpec: "cartpole", Delta: 1e-5,
		MaxOpenSessions: 100000, MaxStepsPerSession: 10000, IdleTimeout: 5 * time.Minute, FlushTimeout: time.Minute,
		MaxSessionLifetime: time.Hour, MaxSessionsPerUser: 16, MaxSessionsPerConnection: 10000, MaxQueuedPerUser: 2,
		SessionMemoryMiB: 1024, RewardLow: math.NaN(), RewardHigh: math.NaN(), NATS: "embedded", NATSListen: "127.0.0.1:4222", Prefix: "dprl"}
}

// TestSettingsServiceConfig: the settings reach the service configuration,
// with the profile's learner and reward bound as defaults.
func TestSettingsServiceConfig(t *testing.T) {
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	s := baseSettings(t)
	sc, err := s.ServiceConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := agent.DefaultConfig(spec, pc)
	want.RewardLow, want.RewardHigh = 0, 1                    // cartpole's public reward range
	want.MaxUpdatesPerUser = service.DefaultMaxUpdatesPerUser // no cap given: the default one
	if !reflect.DeepEqual(sc.Agent, want) {
		t.Errorf("defaults: %+v, want %+v", sc.Agent, want)
	}
	if sc.DataDir != s.DataDir || sc.NATS != "embedded" || sc.NATSListen != "127.0.0.1:4222" || sc.Prefix != "dprl" || sc.ExpectHead != nil || len(sc.ConnectOptions) != 0 {
		t.Errorf("service: %+v", sc)
	}

	s.Z, s.Clip, s.K, s.UserEpsilon, s.MaxUpdatesPerUser, s.Seed = 2, 0.5, 16, 8, 3, 7
	s.SessionMemoryMiB, s.RewardHigh, s.ActWorkers, s.HTTPAddr, s.SessionLogDir = 2, 0.5, 4, "127.0.0.1:0", "logs"
	s.ExpectHead = "3:" + strings.Repeat("ab", 32)
	if sc, err = s.ServiceConfig(); err != nil {
		t.Fatal(err)
	}
	dp := sc.Agent.Policy.DP
	if dp.NoiseMultiplier != 2 || dp.ClipNorm != 0.5 || dp.UsersPerUpdate != 16 || sc.Agent.UserEpsilon != 8 || sc.Agent.MaxUpdatesPerUser != 3 ||
		sc.Agent.Seed != 7 || sc.Agent.SessionMemoryBytes != 2<<20 || sc.Agent.RewardLow != 0 || sc.Agent.RewardHigh != 0.5 ||
		sc.ActWorkers != 4 || sc.HTTPAddr != "127.0.0.1:0" || sc.SessionLogDir != "logs" || sc.ExpectHead == nil || sc.ExpectHead.Seq != 3 {
		t.Errorf("overrides: %+v", sc)
	}

	// Without a simulator: a discrete spec, Table 3's control learner and
	// the agent's default reward bound.
	s = baseSettings(t)
	s.EnvSpec, s.ObsDim, s.Actions = "", 3, 2
	if sc, err = s.ServiceConfig(); err != nil {
		t.Fatal(err)
	}
	if sc.Agent.Spec != (policy.Spec{ObsDim: 3, Kind: policy.ActionDiscrete, NumActions: 2}) ||
		!reflect.DeepEqual(sc.Agent.Policy, policy.DefaultControlConfig()) || sc.Agent.RewardLow != -1e6 || sc.Agent.RewardHigh != 1e6 {
		t.Errorf("obs dim and actions: %+v", sc.Agent)
	}
}

// TestSettingsSessionEpsilon: a target epsilon sets the noise multiplier to
// one whose release is at most that epsilon per session, and barely
// (dprl accountant noise --epsilon 5 --delta 1e-5: z = 0.891869).
func TestSettingsSessionEpsilon(t *testing.T) {
	s := baseSettings(t)
	s.SessionEpsilon = 5
	sc, err := s.ServiceConfig()
	if err != nil {
		t.Fatal(err)
	}
	z := sc.Agent.Policy.DP.NoiseMultiplier
	eps, err := sc.Agent.SessionEpsilon()
	if err != nil {
		t.Fatal(err)
	}
	if !(z > 0.8918 && z < 0.8919) || !(eps <= 5 && eps > 4.999) {
		t.Errorf("z = %v, epsilon %v, want z = 0.891869 and epsilon at most 5", z, eps)
	}
}

// flagNames are dprl agent's names of the fields (as cmd/dprl renders
// them).
var flagNames = map[string]string{"DataDir": "--data", "ExpectHead": "--expect-head", "EnvSpec": "--env", "ObsDim": "--obs-dim",
	"Actions": "--actions", "Learner": "--learner", "FeatureClip": "--feature-clip", "Average": "--average", "Z": "--z", "Clip": "--clip", "K": "--K", "SessionEpsilon": "--session-epsilon", "Delta": "--delta",
	"UserEpsilon": "--user-epsilon", "MaxUpdatesPerUser": "--max-updates-per-user", "Noise": "--noise", "Band": "--band", "Init": "--init",
	"ActWorkers": "--act-workers", "SessionMemoryMiB": "--session-memory-mib", "NATS": "--nats", "TLSCA": "--tls-ca", "TLSCert": "--tls-cert",
	"TLSKey": "--tls-key", "Creds": "--creds", "NKey": "--nkey", "Identity": "--nats-identity", "Clients": "--nats-clients", "ServerTLS": "--nats-tls-*",
	"ServerCert": "--nats-tls-cert", "ServerKey": "--nats-tls-key", "ClientCA": "--nats-tls-client-ca", "Caps": "--nats-max-*", "Insecure": "--insecure-nats",
	"NATSListen": "--nats-listen", "HTTPAddr": "--http", "MaxOpenSessions": "--max-open-sessions", "MaxStepsPerSession": "--max-steps",
	"MaxSessionsPerUser": "--max-sessions-per-user", "MaxSessionsPerConnection": "--max-sessions-per-connection", "MaxQueuedPerUser": "--max-queued-per-user",
	"IdleTimeout": "--idle-timeout", "FlushTimeout": "--flush-timeout", "MaxSessionLifetime": "--max-session-lifetime", "RewardLow": "--reward-low", "RewardHigh": "--reward-high", "ServePolicy": "--serve-policy", "ServeNonPrivate": "--serve-non-private", "SessionLogDir": "--log-sessions", "SessionLogFormat": "--session-log-format",
	"Role": "--role", "ClusterReplicas": "--cluster-replicas", "LeaseTTL": "--lease-ttl", "UserKeyFile": "--user-key", "Partitions": "--partitions"}

// asFlags renders err as dprl agent prints it.
func asFlags(err error) string {
	return fielderr.Rename(err, func(f string) string { return flagNames[f] }).Error()
}

// TestSettingsFieldsNamed: every name of SettingsFields has a flag, and every
// field of Settings and NATSSecurityFiles that an error names is in
// SettingsFields.
func TestSettingsFieldsNamed(t *testing.T) {
	for _, f := range service.SettingsFields {
		if flagNames[f] == "" {
			t.Errorf("field %s: no flag", f)
		}
	}
	for f := range flagNames {
		if !slices.Contains(service.SettingsFields, f) {
			t.Errorf("flag of %s, not in SettingsFields", f)
		}
	}
}

// TestSettingsErrors: each invalid setting is refused with a message that
// names its field, rendered as dprl agent's flag.
func TestSettingsErrors(t *testing.T) {
	explicit := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	cases := []struct {
		name string
		mod  func(*service.Settings)
		want string
	}{
		{"no spec", func(s *service.Settings) { s.EnvSpec = "" }, "give --env NAME, or --obs-dim N and --actions N (>= 2)"},
		{"one action", func(s *service.Settings) { s.EnvSpec, s.ObsDim, s.Actions = "", 3, 1 }, "--actions 1: want 2 to 4096"},
		{"unknown simulator", func(s *service.Settings) { s.EnvSpec = "nope" }, "unknown environment"},
		{"explicit zero z", func(s *service.Settings) { s.Explicit = explicit("Z") }, "--z 0: want > 0 (leave it unset for the profile's default; the agent has no non-private mode)"},
		{"negative z", func(s *service.Settings) { s.Z, s.Explicit = -1, explicit("Z") }, "--z -1: want > 0"},
		{"explicit zero K", func(s *service.Settings) { s.Explicit = explicit("K") }, "--K 0: want > 0"},
		{"explicit zero clip", func(s *service.Settings) { s.Explicit = explicit("Clip") }, "--clip 0: want > 0"},
		{"explicit zero session epsilon", func(s *service.Settings) { s.Explicit = explicit("SessionEpsilon") }, "--session-epsilon 0: want > 0"},
		{"session epsilon and z", func(s *service.Settings) { s.Z, s.SessionEpsilon = 1, 5 }, "--session-epsilon and --z both set"},
		{"negative session epsilon", func(s *service.Settings) { s.SessionEpsilon = -1 }, "--session-epsilon -1: the target epsilon must be finite and > 0"},
		{"infinite session epsilon", func(s *service.Settings) { s.SessionEpsilon = math.Inf(1) }, "--session-epsilon +Inf: the target epsilon must be finite"},
		{"session epsilon at a bad delta", func(s *service.Settings) { s.SessionEpsilon, s.Delta = 5, 2 }, "--session-epsilon 5 at --delta 2: "},
		{"no data", func(s *service.Settings) { s.DataDir = "" }, "--data is required"},
		{"act workers", func(s *service.Settings) { s.ActWorkers = 1025 }, "--act-workers 1025: want 0 (twice the cores) to 1024"},
		{"session memory", func(s *service.Settings) { s.SessionMemoryMiB = 0 }, "--session-memory-mib 0: want 1 to 2^30"},
		{"reward bound", func(s *service.Settings) { s.RewardLow, s.RewardHigh = 2, 1 }, "reward bound"},
		{"config", func(s *service.Settings) { s.MaxSessionsPerUser = 0 }, "per user"},
		{"client credentials, embedded", func(s *service.Settings) { s.Creds = "x.creds" }, "--tls-ca, --tls-cert, --tls-key, --creds and --nkey are the agent's credentials for an external --nats server; with the embedded one the agent's identity is generated in memory (secure the server with --nats-clients and --nats-tls-*)"},
		{"embedded security, external", func(s *service.Settings) { s.NATS, s.Security.MaxConn = "nats://127.0.0.1:4222", 5 }, "--nats-clients, --nats-tls-*, --nats-max-* and --insecure-nats configure the embedded server"},
		{"open off loopback", func(s *service.Settings) { s.NATSListen = "0.0.0.0:4222" }, "not loopback"},
		{"expect head", func(s *service.Settings) { s.ExpectHead = "nope" }, "--expect-head: "},
	}
	for _, c := range cases {
		s := baseSettings(t)
		c.mod(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(asFlags(err), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// Without the command's names, the fields are named as in the struct.
	s := baseSettings(t)
	s.DataDir = ""
	if err := s.Validate(); err == nil || err.Error() != "DataDir is required" {
		t.Errorf("plain message %v", err)
	}
	// An external server takes the agent's client credentials.
	f := writeClientFiles(t)
	s = baseSettings(t)
	s.NATS, s.Creds, s.NKey, s.TLSCA = "nats://127.0.0.1:4222", f.creds, f.nkey, f.cert
	if sc, err := s.ServiceConfig(); err != nil || len(sc.ConnectOptions) != 3 {
		t.Errorf("external server: %d options, %v", len(sc.ConnectOptions), err)
	}
}

// TestNATSSecurityFilesLoad reads real files: a clients file and a TLS
// certificate make a non-loopback embedded server acceptable, and each
// missing piece is named.
func TestNATSSecurityFilesLoad(t *testing.T) {
	dir := t.TempDir()
	cert, key := testutil.WriteSelfSigned(t, dir)
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	clients := filepath.Join(dir, "clients.json")
	if err := os.WriteFile(clients, []byte(`{"clients":[{"name":"web","nkey":"`+pub+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const open = "0.0.0.0:4222"
	cases := []struct {
		name     string
		f        service.NATSSecurityFiles
		embedded bool
		listen   string
		want     string // "" for success
	}{
		{"open on loopback", service.NATSSecurityFiles{}, true, "127.0.0.1:4222", ""},
		{"open off loopback", service.NATSSecurityFiles{}, true, open, "(not loopback) without client identities (anyone reaching the port could read every observation and user id, answer act requests and forge policy announcements) and without TLS (observations and user ids would cross the network in plain text): give --nats-clients FILE and --nats-tls-cert/--nats-tls-key, or --insecure-nats"},
		{"insecure", service.NATSSecurityFiles{Insecure: true}, true, open, ""},
		{"clients without TLS", service.NATSSecurityFiles{Clients: clients}, true, open, "without TLS"},
		{"TLS without clients", service.NATSSecurityFiles{ServerCert: cert, ServerKey: key}, true, open, "without client identities"},
		{"secured", service.NATSSecurityFiles{Clients: clients, ServerCert: cert, ServerKey: key}, true, open, ""},
		{"mutual TLS", service.NATSSecurityFiles{Clients: clients, ServerCert: cert, ServerKey: key, ClientCA: cert}, true, open, ""},
		{"client CA alone", service.NATSSecurityFiles{ClientCA: cert}, true, open, "--nats-tls-client-ca needs --nats-tls-cert and --nats-tls-key"},
		{"cert without key", service.NATSSecurityFiles{ServerCert: cert}, true, open, "certificate and its key"},
		{"missing clients file", service.NATSSecurityFiles{Clients: filepath.Join(dir, "nope.json")}, true, open, "no such file"},
		{"negative cap", service.NATSSecurityFiles{MaxConn: -1}, true, "127.0.0.1:4222", ">= 0"},
		{"external, nothing set", service.NATSSecurityFiles{}, false, "", ""},
		{"external, insecure set", service.NATSSecurityFiles{Insecure: true}, false, "", "--nats-clients, --nats-tls-*, --nats-max-* and --insecure-nats configure the embedded server"},
	}
	for _, c := range cases {
		sec, err := c.f.Load(c.embedded, c.listen)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(asFlags(err), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case c.want == "" && c.f.Clients != "" && (len(sec.Clients) != 1 || sec.Clients[0].Name != "web"):
			t.Errorf("%s: clients %+v", c.name, sec.Clients)
		case c.want == "" && c.f.ServerCert != "" && sec.TLS == nil:
			t.Errorf("%s: no TLS", c.name)
		}
	}
}

// TestConfigFieldsAreSettings: the fields agent.Config.Validate names are
// settings, so the command renders them as its flags.
func TestConfigFieldsAreSettings(t *testing.T) {
	for _, f := range agent.ConfigFields {
		if !slices.Contains(service.SettingsFields, f) {
			t.Errorf("agent.ConfigFields has %s, service.SettingsFields does not", f)
		}
	}
}

// TestSettingsLinCB: --learner lincb takes the simulator's feature clip or
// --feature-clip, and is refused where it cannot run.
func TestSettingsLinCB(t *testing.T) {
	s := baseSettings(t)
	s.EnvSpec, s.Learner = "bandit", "lincb"
	sc, err := s.ServiceConfig()
	if err != nil {
		t.Fatal(err)
	}
	if l := sc.Agent.LinCB; l == nil || l.FeatureClip != math.Sqrt(3) || sc.Agent.LinCBConfig().Actions != 10 {
		t.Fatalf("lincb %+v", l)
	}
	s.FeatureClip = 2
	if sc, err = s.ServiceConfig(); err != nil || sc.Agent.LinCB.FeatureClip != 2 {
		t.Fatalf("--feature-clip 2: %v %+v", err, sc.Agent.LinCB)
	}
	for _, c := range []struct {
		mod  func(*service.Settings)
		want string
	}{
		{func(s *service.Settings) { s.EnvSpec = "cartpole" }, "--learner lincb needs --feature-clip"},
		{func(s *service.Settings) { s.Learner, s.FeatureClip = "dppg", 2 }, "--feature-clip applies with --learner lincb only"},
		{func(s *service.Settings) { s.Learner = "x" }, `--learner "x": want dppg or lincb`},
		{func(s *service.Settings) { s.FeatureClip = math.Inf(1) }, "--feature-clip +Inf"},
		{func(s *service.Settings) { s.EnvSpec = "pendulum"; s.FeatureClip = 1 }, "needs discrete actions"},
	} {
		b := baseSettings(t)
		b.EnvSpec, b.Learner = "bandit", "lincb"
		c.mod(&b)
		_, err := b.ServiceConfig()
		if err == nil {
			t.Errorf("%s: accepted", c.want)
			continue
		}
		if got := fielderr.Rename(err, func(f string) string { return flagNames[f] }).Error(); !strings.Contains(got, c.want) {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestSettingsAverage: the served average's decay is the --env profile's
// unless --average is given (0 included); it is refused outside [0, 1) and
// with the linear contextual bandit.
func TestSettingsAverage(t *testing.T) {
	decay := func(mod func(*service.Settings)) (float64, error) {
		s := baseSettings(t)
		mod(&s)
		sc, err := s.ServiceConfig()
		return sc.Agent.AverageDecay, err
	}
	for _, c := range []struct {
		name string
		mod  func(*service.Settings)
		want float64
	}{
		{"recsys", func(s *service.Settings) { s.EnvSpec = "recsys" }, 0.9},
		{"recsys --average 0", func(s *service.Settings) {
			s.EnvSpec = "recsys"
			s.Explicit = func(f string) bool { return f == "Average" }
		}, 0},
		{"recsys --average 0.5", func(s *service.Settings) { s.EnvSpec, s.Average = "recsys", 0.5 }, 0.5},
		{"cartpole", func(s *service.Settings) { s.EnvSpec = "cartpole" }, 0},
		{"bandit lincb", func(s *service.Settings) { s.EnvSpec, s.Learner = "bandit", "lincb" }, 0},
	} {
		if got, err := decay(c.mod); err != nil || got != c.want {
			t.Errorf("%s: decay %v (err %v), want %v", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct {
		mod  func(*service.Settings)
		want string
	}{
		{func(s *service.Settings) { s.EnvSpec, s.Average = "recsys", 1 }, "--average 1: want a decay in [0, 1)"},
		{func(s *service.Settings) { s.EnvSpec, s.Average = "recsys", -0.5 }, "--average -0.5"},
		{func(s *service.Settings) { s.EnvSpec, s.Learner, s.Average = "bandit", "lincb", 0.9 }, "--average applies to a learning DPPG agent"},
	} {
		_, err := decay(c.mod)
		if err == nil || !strings.Contains(asFlags(err), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
