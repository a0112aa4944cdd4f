package flagsrc

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// aliasUse records which name of a renamed flag the command line used, so
// that giving both is refused whatever their order.
type aliasUse struct {
	by         string // the name that set the flag ("" until one did)
	forwarding bool   // the old name is setting the new one
}

// aliasValue is the value of a deprecated name: it sets the flag's new
// name, so that the new name counts as set (Changed) for every reader.
type aliasValue struct {
	pflag.Value // the new flag's, for Type and String
	fs          *pflag.FlagSet
	old, new    string
	use         *aliasUse
	warn        io.Writer
}

func (v *aliasValue) Set(s string) error {
	if v.use.by == v.new {
		return bothNames(v.old, v.new)
	}
	v.use.by = v.old
	fmt.Fprintf(v.warn, "warning: --%s is deprecated: use --%s\n", v.old, v.new)
	v.use.forwarding = true
	defer func() { v.use.forwarding = false }()
	return v.fs.Set(v.new, s)
}

// renamedValue is the value of a flag's new name, which refuses to be set
// after its deprecated name was.
type renamedValue struct {
	pflag.Value
	old, new string
	use      *aliasUse
}

func (v *renamedValue) Set(s string) error {
	if !v.use.forwarding {
		if v.use.by == v.old {
			return bothNames(v.old, v.new)
		}
		v.use.by = v.new
	}
	return v.Value.Set(s)
}

func bothNames(old, new string) error {
	return fmt.Errorf("--%s is the deprecated name of --%s: give only --%s", old, new, new)
}

// Alias registers old as the deprecated name of the flag new of fs (which
// must exist; Alias panics otherwise, a programming error). The old name
// is hidden from the help, and setting it sets new, so that new counts as
// set on the command line; each use writes a one-line warning to warn.
// Giving both names is an error. Apply reads the old name's environment
// variable and config-file key as well, with a warning; giving both the
// old and the new variable (or key) is a problem Apply reports. new's
// usage text gets a note of the old name.
func Alias(fs *pflag.FlagSet, old, new string, warn io.Writer) {
	target := fs.Lookup(new)
	if target == nil {
		panic(fmt.Sprintf("flagsrc.Alias: no flag --%s", new))
	}
	use := &aliasUse{}
	fs.Var(&aliasValue{Value: target.Value, fs: fs, old: old, new: new, use: use, warn: warn}, old, "deprecated name of --"+new)
	f := fs.Lookup(old)
	f.NoOptDefVal, f.Hidden = target.NoOptDefVal, true
	target.Value = &renamedValue{Value: target.Value, old: old, new: new, use: use}
	target.Usage += fmt.Sprintf(" (formerly --%s)", old)
}

// aliasesOf returns the deprecated names of each flag of fs that has any.
func aliasesOf(fs *pflag.FlagSet) map[string][]*aliasValue {
	m := map[string][]*aliasValue{}
	fs.VisitAll(func(f *pflag.Flag) {
		if a, ok := f.Value.(*aliasValue); ok {
			m[a.new] = append(m[a.new], a)
		}
	})
	return m
}

// pick returns the value of the one of names (the flag's own name, then
// its deprecated names) found in vals and the name it was found under, or
// a problem if more than one is present.
func pick(vals map[string]string, names []string) (v, name, problem string) {
	var found []string
	for _, n := range names {
		if _, ok := vals[n]; ok {
			found = append(found, n)
		}
	}
	switch {
	case len(found) == 0:
		return "", "", ""
	case len(found) > 1:
		return "", "", fmt.Sprintf("%s and %s both given: they name the same setting (%s is deprecated); give only %s", found[0], found[1], found[1], names[0])
	}
	return vals[found[0]], found[0], ""
}
