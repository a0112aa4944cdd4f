package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"dprl/agent"
	"dprl/internal/jsonstrict"
	"dprl/internal/rng"
	"dprl/ledger"
)

// ModelsDir is the directory under the data directory that holds one
// ledger per model in multi-policy mode (DataDir/models/NAME).
const ModelsDir = "models"

// maxModelName is the longest model name.
const maxModelName = 64

// ValidModelName reports whether name may name a model: 1 to 64 of a-z,
// 0-9, '_' and '-'. Such a name is one NATS subject token (no '.', no
// wildcard, no space) and a plain directory name.
func ValidModelName(name string) error {
	if name == "" || len(name) > maxModelName {
		return fmt.Errorf("model name %q: want 1 to %d characters of a-z 0-9 _ -", name, maxModelName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("model name %q: %q is not one of a-z 0-9 _ - (a model name is one NATS subject token and a directory name)", name, r)
		}
	}
	return nil
}

// ModelConfig is one policy of a multi-policy service
// (ServiceConfig.Models): a complete agent of its own (spec, learner,
// privacy parameters, caps, admission limits and its ledger in
// DataDir/models/NAME), served on <prefix>.NAME.v1.act, .end and .policy,
// its metrics labelled model=NAME. The NATS connection and security, the
// ops server, the act workers and the prefix are shared. A user of several
// models gets at most (sum of the epsilons, sum of the deltas)-DP (Dwork &
// Roth, "The Algorithmic Foundations of Differential Privacy", Theorem
// 3.16), printed at start (Composed): docs/privacy.md, section 9.
type ModelConfig struct {
	// Name names the model (ValidModelName), unique in the service.
	Name string
	// Agent is the model's agent configuration.
	Agent agent.Config
	// InitLedger and ExpectHead are ServiceConfig's, for this model's
	// ledger.
	InitLedger bool
	ExpectHead *ledger.HeadRef
	// SessionLogDir, when set, receives this model's closed sessions as
	// ServiceConfig.SessionLogDir does, in SessionLogFormat
	// (ServiceConfig.SessionLogFormat).
	SessionLogDir    string
	SessionLogFormat string
	// EnvSpec names this model's simulator, as ServiceConfig.EnvSpec.
	EnvSpec string
}

// ModelEntry is one model of a multi-policy agent as an operator gives it:
// a name and settings that override the top-level ones for this model.
type ModelEntry struct {
	// Name names the model (ValidModelName).
	Name string
	// Values are the model's settings by key, each key one of ModelKeys
	// (the flag name of the setting in dprl agent, e.g. "env", "K"),
	// each value in the text its flag takes.
	Values map[string]string
}

// ModelEntries are the models of dprl agent's --model and --models flags
// (a pflag.Value): each Set appends one model given as NAME or
// NAME:key=value,key=value (e.g. "tiny:obs-dim=3,actions=2,K=4"), or
// models in JSON: one object or an array of objects, each with a "name"
// and its settings as string, number or boolean values
// ([{"name":"cartpole","env":"cartpole"}], as a config file's
// "models" key holds them).
type ModelEntries []ModelEntry

// Set appends the models of v; an empty v (DPRL_MODELS=) adds none.
func (m *ModelEntries) Set(v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	if strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{") {
		return m.setJSON(v)
	}
	name, rest, _ := strings.Cut(v, ":")
	e := ModelEntry{Name: name, Values: map[string]string{}}
	if rest != "" {
		for _, kv := range strings.Split(rest, ",") {
			k, val, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return fmt.Errorf("model %q: %q is not key=value (want NAME:key=value,key=value)", name, kv)
			}
			if _, dup := e.Values[k]; dup {
				return fmt.Errorf("model %q: key %q given twice", name, k)
			}
			e.Values[k] = strings.TrimSpace(val)
		}
	}
	*m = append(*m, e)
	return nil
}

func (m *ModelEntries) setJSON(v string) error {
	if err := jsonstrict.Check([]byte(v)); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var objs []map[string]any
	if strings.HasPrefix(v, "{") {
		objs = append(objs, nil)
		if err := dec.Decode(&objs[0]); err != nil {
			return fmt.Errorf("models: not a JSON object: %w", err)
		}
	} else if err := dec.Decode(&objs); err != nil {
		return fmt.Errorf("models: not a JSON array of objects: %w", err)
	}
	if dec.More() {
		return errors.New("models: data after the JSON value")
	}
	for i, o := range objs {
		at := fmt.Sprintf("model entry %d", len(*m)+1)
		name, ok := o["name"].(string)
		if !ok {
			return fmt.Errorf("%s (object %d): want a \"name\" string", at, i+1)
		}
		e := ModelEntry{Name: name, Values: map[string]string{}}
		for k, val := range o {
			switch x := val.(type) {
			case string:
				e.Values[k] = x
			case json.Number:
				e.Values[k] = x.String()
			case bool:
				e.Values[k] = strconv.FormatBool(x)
			default:
				return fmt.Errorf("model %q: key %q: want a string, number or boolean, not %T", name, k, val)
			}
		}
		delete(e.Values, "name")
		*m = append(*m, e)
	}
	return nil
}

// String returns the models in the NAME:key=value form, space-separated.
func (m *ModelEntries) String() string {
	if m == nil {
		return ""
	}
	parts := make([]string, 0, len(*m))
	for _, e := range *m {
		keys := make([]string, 0, len(e.Values))
		for k := range e.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		kv := make([]string, len(keys))
		for i, k := range keys {
			kv[i] = k + "=" + e.Values[k]
		}
		s := e.Name
		if len(kv) > 0 {
			s += ":" + strings.Join(kv, ",")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// Type names the flag's value in help.
func (m *ModelEntries) Type() string { return "spec" }

// modelKey is a per-model setting: its Settings field and where it is.
type modelKey struct {
	field string
	ptr   func(*Settings) any
}

// modelKeys are the settings a model entry may give, by flag name. The
// others (NATS, TLS, the ops server, act workers, the prefix, the data
// directory) are the process's, shared by every model.
var modelKeys = map[string]modelKey{
	"env":                         {"EnvSpec", func(s *Settings) any { return &s.EnvSpec }},
	"obs-dim":                     {"ObsDim", func(s *Settings) any { return &s.ObsDim }},
	"actions":                     {"Actions", func(s *Settings) any { return &s.Actions }},
	"z":                           {"Z", func(s *Settings) any { return &s.Z }},
	"session-epsilon":             {"SessionEpsilon", func(s *Settings) any { return &s.SessionEpsilon }},
	"clip":                        {"Clip", func(s *Settings) any { return &s.Clip }},
	"K":                           {"K", func(s *Settings) any { return &s.K }},
	"delta":                       {"Delta", func(s *Settings) any { return &s.Delta }},
	"user-epsilon":                {"UserEpsilon", func(s *Settings) any { return &s.UserEpsilon }},
	"max-updates-per-user":        {"MaxUpdatesPerUser", func(s *Settings) any { return &s.MaxUpdatesPerUser }},
	"max-open-sessions":           {"MaxOpenSessions", func(s *Settings) any { return &s.MaxOpenSessions }},
	"max-steps":                   {"MaxStepsPerSession", func(s *Settings) any { return &s.MaxStepsPerSession }},
	"idle-timeout":                {"IdleTimeout", func(s *Settings) any { return &s.IdleTimeout }},
	"flush-timeout":               {"FlushTimeout", func(s *Settings) any { return &s.FlushTimeout }},
	"max-session-lifetime":        {"MaxSessionLifetime", func(s *Settings) any { return &s.MaxSessionLifetime }},
	"max-sessions-per-user":       {"MaxSessionsPerUser", func(s *Settings) any { return &s.MaxSessionsPerUser }},
	"max-sessions-per-connection": {"MaxSessionsPerConnection", func(s *Settings) any { return &s.MaxSessionsPerConnection }},
	"max-queued-per-user":         {"MaxQueuedPerUser", func(s *Settings) any { return &s.MaxQueuedPerUser }},
	"session-memory-mib":          {"SessionMemoryMiB", func(s *Settings) any { return &s.SessionMemoryMiB }},
	"reward-low":                  {"RewardLow", func(s *Settings) any { return &s.RewardLow }},
	"reward-high":                 {"RewardHigh", func(s *Settings) any { return &s.RewardHigh }},
	"seed":                        {"Seed", func(s *Settings) any { return &s.Seed }},
	"init":                        {"Init", func(s *Settings) any { return &s.Init }},
	"expect-head":                 {"ExpectHead", func(s *Settings) any { return &s.ExpectHead }},
	"log-sessions":                {"SessionLogDir", func(s *Settings) any { return &s.SessionLogDir }},
	"session-log-format":          {"SessionLogFormat", func(s *Settings) any { return &s.SessionLogFormat }},
}

// deprecatedModelKeys are former names of model keys (as of dprl agent's
// deprecated flag names) and the keys they are now; ForModel takes them.
var deprecatedModelKeys = map[string]string{"env-spec": "env"}

// ModelKeys are the keys a model entry may give (flag names of dprl
// agent), sorted.
func ModelKeys() []string {
	keys := make([]string, 0, len(modelKeys))
	for k := range modelKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setValue parses v into the field p points to, as the field's flag would.
func setValue(p any, v string) error {
	var err error
	switch p := p.(type) {
	case *string:
		*p = v
	case *bool:
		*p, err = strconv.ParseBool(v)
	case *int:
		var n int64
		n, err = strconv.ParseInt(v, 0, strconv.IntSize)
		*p = int(n)
	case *int64:
		*p, err = strconv.ParseInt(v, 0, 64)
	case *uint64:
		*p, err = strconv.ParseUint(v, 0, 64)
	case *float64:
		*p, err = strconv.ParseFloat(v, 64)
	case *time.Duration:
		*p, err = time.ParseDuration(v)
	default:
		panic(fmt.Sprintf("agent: model key of type %T", p))
	}
	return err
}

// ForModel returns the settings of model e: s with e's values over it.
// A value e does not give is inherited from s, except that
//   - the policy spec is inherited whole or not at all: a model giving
//     env does not inherit obs-dim and actions, nor one giving either
//     of those env; likewise z and session-epsilon, the two ways of
//     setting the noise;
//   - the ledger is DataDir/models/NAME and expect-head is never
//     inherited (it names one ledger's head);
//   - an inherited session log directory becomes its subdirectory NAME;
//   - an inherited non-zero seed becomes one derived from it and the name,
//     so that no two models draw the same noise.
//
// A key that is not one of ModelKeys (or a deprecated name of one) is
// refused, naming the key; so is a value its flag would refuse, and a
// setting given under both its name and its deprecated name. ServiceConfig then checks the result.
func (s Settings) ForModel(e ModelEntry) (Settings, error) {
	m := s
	m.Models = nil
	m.DataDir = filepath.Join(s.DataDir, ModelsDir, e.Name)
	m.ExpectHead = ""
	if s.SessionLogDir != "" {
		m.SessionLogDir = filepath.Join(s.SessionLogDir, e.Name)
	}
	if s.Seed != 0 {
		m.Seed = max(rng.Seeded(s.Seed, "agent model "+e.Name).Uint64(), 1)
	}
	keys := make([]string, 0, len(e.Values))
	for k := range e.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	set := map[string]bool{}
	for _, k := range keys {
		mk, ok := modelKeys[k]
		if now, old := deprecatedModelKeys[k]; old {
			mk, ok = modelKeys[now]
			if _, both := e.Values[now]; both {
				return m, fmt.Errorf("keys %q and %q both given: %q is the deprecated name of %q", now, k, k, now)
			}
		}
		if !ok {
			if _, shared := sharedKeys[k]; shared {
				return m, fmt.Errorf("key %q is the process's, shared by every model: set it at the top level", k)
			}
			return m, fmt.Errorf("unknown key %q (a model takes %s)", k, strings.Join(ModelKeys(), ", "))
		}
		if err := setValue(mk.ptr(&m), e.Values[k]); err != nil {
			return m, fmt.Errorf("%s = %q: %w", k, e.Values[k], err)
		}
		set[mk.field] = true
	}
	cleared := map[string]bool{}
	if set["EnvSpec"] && !set["ObsDim"] && !set["Actions"] {
		m.ObsDim, m.Actions, cleared["ObsDim"], cleared["Actions"] = 0, 0, true, true
	}
	if (set["ObsDim"] || set["Actions"]) && !set["EnvSpec"] {
		m.EnvSpec, cleared["EnvSpec"] = "", true
	}
	if set["Z"] && !set["SessionEpsilon"] {
		m.SessionEpsilon, cleared["SessionEpsilon"] = 0, true
	}
	if set["SessionEpsilon"] && !set["Z"] {
		m.Z, cleared["Z"] = 0, true
	}
	top := s.Explicit
	m.Explicit = func(f string) bool { return set[f] || !cleared[f] && top != nil && top(f) }
	return m, nil
}

// sharedKeys are the process-level settings (flag names), refused in a
// model entry with a pointer to the top level.
var sharedKeys = map[string]struct{}{"data": {}, "nats": {}, "nats-listen": {}, "prefix": {}, "http": {}, "act-workers": {},
	"tls-ca": {}, "tls-cert": {}, "tls-key": {}, "creds": {}, "nkey": {}, "nats-clients": {}, "nats-tls-cert": {}, "nats-tls-key": {},
	"nats-tls-client-ca": {}, "nats-max-conn": {}, "nats-max-subs": {}, "insecure-nats": {}, "model": {}, "models": {}, "config": {}, "shutdown-grace": {}}

// multiServiceConfig is ServiceConfig with models: each model's settings
// (ForModel) are checked as a single agent's would be, and the
// process-level ones once. Errors name the model (or, for a bad name, the
// entry's position).
func (s Settings) multiServiceConfig() (ServiceConfig, error) {
	if s.DataDir == "" {
		return ServiceConfig{}, SettingsFields.Errorf("{DataDir} is required")
	}
	if s.ExpectHead != "" {
		return ServiceConfig{}, SettingsFields.Errorf("{ExpectHead} names one ledger's head: with models give expect-head in each model's entry")
	}
	var sc ServiceConfig
	seen := map[string]int{}
	for i, e := range s.Models {
		if err := ValidModelName(e.Name); err != nil {
			return ServiceConfig{}, fmt.Errorf("model entry %d: %w", i+1, err)
		}
		if j, dup := seen[e.Name]; dup {
			return ServiceConfig{}, fmt.Errorf("model %q: given twice (entries %d and %d): each model needs a name of its own", e.Name, j, i+1)
		}
		seen[e.Name] = i + 1
		ms, err := s.ForModel(e)
		if err != nil {
			return ServiceConfig{}, fmt.Errorf("model %q: %w", e.Name, err)
		}
		c, err := ms.ServiceConfig()
		if err != nil {
			return ServiceConfig{}, fmt.Errorf("model %q: %w", e.Name, err)
		}
		if i == 0 {
			sc = c // the process-level settings, the same for every model
		}
		sc.Models = append(sc.Models, ModelConfig{Name: e.Name, Agent: c.Agent, InitLedger: c.InitLedger, ExpectHead: c.ExpectHead, SessionLogDir: c.SessionLogDir, SessionLogFormat: c.SessionLogFormat, EnvSpec: c.EnvSpec})
	}
	sc.Agent, sc.DataDir, sc.InitLedger, sc.ExpectHead, sc.SessionLogDir, sc.SessionLogFormat, sc.EnvSpec = agent.Config{}, s.DataDir, false, nil, "", "", ""
	return sc, nil
}
