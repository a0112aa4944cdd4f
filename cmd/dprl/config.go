package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// applyConfigSources fills every flag the command line did not set, first
// from the environment (DPRL_<FLAG_NAME>, dashes as underscores), then from
// the JSON config file (an object of flag names to values). The command line
// wins over the environment, which wins over the file. Unknown keys in the
// file, and values a flag rejects, are reported all at once, naming the file
// or variable.
func applyConfigSources(c *cobra.Command, file string, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "DPRL_") {
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
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&raw); err != nil {
			return usagef("config %s: not a JSON object of flag names to values: %v", file, err)
		}
		keys := make([]string, 0, len(raw))
		for k := range raw {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f := c.Flags().Lookup(k)
			if f == nil || k == "config" {
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
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" || f.Name == "help" {
			return
		}
		key := "DPRL_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := env[key]; ok {
			if err := c.Flags().Set(f.Name, v); err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: %v", key, v, err))
			}
			return
		}
		if v, ok := fileVals[f.Name]; ok {
			if err := c.Flags().Set(f.Name, v); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s = %q: %v", file, f.Name, v, err))
			}
		}
	})
	if len(problems) > 0 {
		return usagef("configuration: %s", strings.Join(problems, "; "))
	}
	return nil
}
