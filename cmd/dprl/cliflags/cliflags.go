// Package cliflags binds the dprl command's flags to the fields of the
// libraries' settings structs: a field tagged `flag:"NAME"` declares its
// flag (with `usage:"TEXT"` and an optional `default:"VALUE"`), other
// flags are defined one by one. The settings stay free of flag parsing.
// Flags records which field each flag fills, so that a library's errors
// naming fields name the flags instead.
package cliflags

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"dprl/internal/fielderr"
)

// Flags is a command's flag set that records, for every flag bound to a
// field of its configuration structs, the field's name: the
// configuration's errors (internal/fielderr) then name the flag, and the
// command can ask whether the user set a field. The XxxVar methods are
// pflag's, recording the field they fill.
type Flags struct {
	*pflag.FlagSet
	cfgs  []reflect.Value   // the configuration structs
	flags map[string]string // field name -> "--flag"
	place map[string]int    // flag -> its field's place: config, then offset
}

// New returns fs as Flags filling the structs cfgs point to, with the
// flags their tagged fields declare (Tagged) defined.
func New(fs *pflag.FlagSet, cfgs ...any) *Flags {
	f := &Flags{FlagSet: fs, flags: map[string]string{}, place: map[string]int{}}
	for _, c := range cfgs {
		f.cfgs = append(f.cfgs, reflect.ValueOf(c).Elem())
	}
	for _, c := range cfgs {
		f.Tagged(reflect.ValueOf(c).Elem())
	}
	return f
}

// Tagged defines the flag of every exported field of the struct v, and of
// the structs among its fields, tagged `flag:"NAME" usage:"TEXT"`, in the
// order of the fields. The flag's default is the tag default, parsed as
// the command line would parse it, or else the value the field holds. A
// tagged field of a type no XxxVar method takes, or a default its flag
// rejects, panics: a programming error, found when dprl starts.
func (f *Flags) Tagged(v reflect.Value) {
	for i := range v.NumField() {
		sf, fv := v.Type().Field(i), v.Field(i)
		name, ok := sf.Tag.Lookup("flag")
		switch {
		case !sf.IsExported():
		case !ok && sf.Type.Kind() == reflect.Struct:
			f.Tagged(fv)
		case ok:
			usage := sf.Tag.Get("usage")
			if def, ok := sf.Tag.Lookup("default"); ok {
				scratch := New(pflag.NewFlagSet(name, pflag.ContinueOnError))
				scratch.field(fv, name, usage)
				if err := scratch.Set(name, def); err != nil {
					panic(fmt.Sprintf("cliflags: --%s default %q: %v", name, def, err))
				}
			}
			f.field(fv, name, usage)
		}
	}
}

// field defines the flag name filling the field v with its value as the
// default.
func (f *Flags) field(v reflect.Value, name, usage string) {
	if p, ok := v.Addr().Interface().(pflag.Value); ok {
		f.Var(p, name, usage)
		return
	}
	if v.Kind() == reflect.String && v.Type() != reflect.TypeFor[string]() {
		v = v.Addr().Convert(reflect.TypeFor[*string]()).Elem() // a named string type
	}
	switch p := v.Addr().Interface().(type) {
	case *string:
		f.StringVar(p, name, *p, usage)
	case *bool:
		f.BoolVar(p, name, *p, usage)
	case *int:
		f.IntVar(p, name, *p, usage)
	case *int64:
		f.Int64Var(p, name, *p, usage)
	case *uint64:
		f.Uint64Var(p, name, *p, usage)
	case *float64:
		f.Float64Var(p, name, *p, usage)
	case *time.Duration:
		f.DurationVar(p, name, *p, usage)
	case *[]int:
		f.IntSliceVar(p, name, *p, usage)
	case *[]string:
		f.StringSliceVar(p, name, *p, usage)
	case *[]float64:
		f.Float64SliceVar(p, name, *p, usage)
	default:
		panic(fmt.Sprintf("cliflags: --%s: no flag of type %s", name, v.Type()))
	}
}

// Name records that the flag fills field: a name the configuration's
// errors give a setting that is not a field of its structs.
func (f *Flags) Name(field, flag string) { f.flags[field] = "--" + flag }

// Flag returns the flag ("--name") filling field, or "" if none does.
func (f *Flags) Flag(field string) string { return f.flags[field] }

// FieldChanged reports whether the flag filling field was set.
func (f *Flags) FieldChanged(field string) bool {
	flag, ok := f.flags[field]
	return ok && f.Changed(strings.TrimPrefix(flag, "--"))
}

// Rename returns err with the fields its *fielderr.Error name rendered as
// their flags (fielderr.Rename).
func (f *Flags) Rename(err error) error { return fielderr.Rename(err, f.Flag) }

// Messages returns the messages of err, one per joined error, with the
// fields they name rendered as flags (nil for a nil err).
func (f *Flags) Messages(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(f.Rename(err).Error(), "\n")
}

// Ordered returns Messages(err) sorted by the place in the configuration
// structs of the field that the flag each message starts with fills
// (stable; messages of no such flag first).
func (f *Flags) Ordered(err error) []string {
	msgs := f.Messages(err)
	pos := func(m string) int {
		w := strings.FieldsFunc(m, func(r rune) bool { return r == ' ' || r == ':' })
		if len(w) == 0 {
			return -1
		}
		if p, ok := f.place[strings.TrimPrefix(w[0], "--")]; ok {
			return p
		}
		return -1
	}
	slices.SortStableFunc(msgs, func(a, b string) int { return pos(a) - pos(b) })
	return msgs
}

// bind records flag as the flag of the field p points to, and of the
// struct fields holding it, where no flag was recorded for them before.
func (f *Flags) bind(p any, flag string) {
	addr := reflect.ValueOf(p).Pointer()
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			fv := v.Field(i)
			start := fv.Addr().Pointer()
			if addr < start || addr >= start+fv.Type().Size() {
				continue
			}
			if name := v.Type().Field(i).Name; f.flags[name] == "" {
				f.flags[name] = "--" + flag
			}
			if fv.Kind() == reflect.Struct {
				walk(fv)
			}
		}
	}
	for i, c := range f.cfgs {
		if start := c.Addr().Pointer(); addr >= start && addr < start+c.Type().Size() {
			f.place[flag] = i<<32 + int(addr-start)
		}
		walk(c)
	}
}

// define defines a flag with pflag's def and records the field it fills.
func define[T any](f *Flags, def func(*T, string, T, string), p *T, name string, value T, usage string) {
	def(p, name, value, usage)
	f.bind(p, name)
}

// StringVar defines a string flag filling *p.
func (f *Flags) StringVar(p *string, name, value, usage string) {
	define(f, f.FlagSet.StringVar, p, name, value, usage)
}

// BoolVar defines a bool flag filling *p.
func (f *Flags) BoolVar(p *bool, name string, value bool, usage string) {
	define(f, f.FlagSet.BoolVar, p, name, value, usage)
}

// IntVar defines an int flag filling *p.
func (f *Flags) IntVar(p *int, name string, value int, usage string) {
	define(f, f.FlagSet.IntVar, p, name, value, usage)
}

// Int64Var defines an int64 flag filling *p.
func (f *Flags) Int64Var(p *int64, name string, value int64, usage string) {
	define(f, f.FlagSet.Int64Var, p, name, value, usage)
}

// Uint64Var defines a uint64 flag filling *p.
func (f *Flags) Uint64Var(p *uint64, name string, value uint64, usage string) {
	define(f, f.FlagSet.Uint64Var, p, name, value, usage)
}

// Float64Var defines a float64 flag filling *p.
func (f *Flags) Float64Var(p *float64, name string, value float64, usage string) {
	define(f, f.FlagSet.Float64Var, p, name, value, usage)
}

// DurationVar defines a time.Duration flag filling *p.
func (f *Flags) DurationVar(p *time.Duration, name string, value time.Duration, usage string) {
	define(f, f.FlagSet.DurationVar, p, name, value, usage)
}

// IntSliceVar defines an []int flag filling *p.
func (f *Flags) IntSliceVar(p *[]int, name string, value []int, usage string) {
	define(f, f.FlagSet.IntSliceVar, p, name, value, usage)
}

// StringSliceVar defines a []string flag filling *p.
func (f *Flags) StringSliceVar(p *[]string, name string, value []string, usage string) {
	define(f, f.FlagSet.StringSliceVar, p, name, value, usage)
}

// Float64SliceVar defines a []float64 flag filling *p.
func (f *Flags) Float64SliceVar(p *[]float64, name string, value []float64, usage string) {
	define(f, f.FlagSet.Float64SliceVar, p, name, value, usage)
}

// Var defines a flag of value v, a pointer to the field it fills.
func (f *Flags) Var(v pflag.Value, name, usage string) {
	f.FlagSet.Var(v, name, usage)
	f.bind(v, name)
}
