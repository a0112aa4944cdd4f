// Package flagsrc fills a command's flags from the sources an operator
// uses besides the command line: environment variables and a JSON config
// file. The command line wins over the environment, which wins over the
// file.
package flagsrc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"dprl/internal/jsonstrict"

	"github.com/spf13/pflag"
)

// Error lists every problem found, naming the file or variable of each: an
// unknown key in the file, a value a flag rejects, a file that is not a
// JSON object. It is the operator's mistake (a usage error); an unreadable
// file is returned as a plain error instead.
type Error struct {
	Problems []string
}

func (e *Error) Error() string { return "configuration: " + strings.Join(e.Problems, "; ") }

// EnvName is the environment variable of flag name: prefix, then the name
// in capitals with dashes as underscores ("DPRL_", "user-epsilon" ->
// DPRL_USER_EPSILON).
func EnvName(prefix, name string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Apply sets every flag of fs the command line did not set, first from
// environ (variables EnvName(prefix, flag)), then from the JSON object of
// flag names to values in file ("" for none; strings, numbers and booleans
// as a flag would take them). The flags named in skip (e.g. the config
// flag itself, help) are never set. A flag renamed with Alias is read under
// its deprecated name too (variable and key), with a warning; both names at
// once are a problem.
func Apply(fs *pflag.FlagSet, file string, environ []string, prefix string, skip ...string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, prefix) {
			env[k] = v
		}
	}
	fileVals := map[string]string{}
	var problems []string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("config %s: %w", file, err)
		}
		var raw map[string]json.RawMessage
		if err := jsonstrict.Check(b); err != nil {
			return &Error{[]string{fmt.Sprintf("config %s: %v", file, err)}}
		}
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(&raw); err != nil {
			return &Error{[]string{fmt.Sprintf("config %s: not a JSON object of flag names to values: %v", file, err)}}
		}
		for _, k := range slices.Sorted(maps.Keys(raw)) {
			if fs.Lookup(k) == nil || slices.Contains(skip, k) {
				problems = append(problems, fmt.Sprintf("%s: unknown key %q", file, k))
				continue
			}
			v := raw[k]
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				s = string(bytes.TrimSpace(v)) // numbers and booleans as written
			}
			fileVals[k] = s
		}
	}
	aliases := aliasesOf(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if _, alias := f.Value.(*aliasValue); alias || f.Changed || slices.Contains(skip, f.Name) {
			return // a deprecated name is read with its flag
		}
		envNames, keys := []string{EnvName(prefix, f.Name)}, []string{f.Name}
		for _, a := range aliases[f.Name] {
			envNames, keys = append(envNames, EnvName(prefix, a.old)), append(keys, a.old)
		}
		// deprecated warns of a deprecated name (not the flag's own).
		deprecated := func(name, own, format string) {
			if name != own {
				fmt.Fprintf(aliases[f.Name][0].warn, format, name, own)
			}
		}
		v, key, problem := pick(env, envNames)
		if problem != "" {
			problems = append(problems, problem)
			return
		}
		if key != "" {
			deprecated(key, envNames[0], "warning: %s is deprecated: use %s\n")
			if err := fs.Set(f.Name, v); err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: %v", key, v, err))
			}
			return
		}
		v, key, problem = pick(fileVals, keys)
		if problem != "" {
			problems = append(problems, file+": "+problem)
			return
		}
		if key != "" {
			deprecated(key, f.Name, "warning: "+file+": key %q is deprecated: use %q\n")
			if err := fs.Set(f.Name, v); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s = %q: %v", file, key, v, err))
			}
		}
	})
	if len(problems) > 0 {
		return &Error{problems}
	}
	return nil
}
