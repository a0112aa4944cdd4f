// Package flagtable maps a command's flags to the configuration fields
// they set and the modes that read them, so that a command can refuse a
// flag its mode would ignore and render a library's field errors
// (internal/fielderr) as its flags, in the table's order.
package flagtable

import (
	"fmt"
	"slices"
	"strings"

	"dprl/internal/fielderr"
)

// Row is one flag: its name (without dashes), the configuration fields it
// sets and the modes that read it, both space-separated ("" modes: every
// mode).
type Row [3]string

// Table lists a command's flags in the order their errors are reported.
type Table []Row

// Inapplicable returns, sorted, one message per flag set (changed) that
// mode does not read: "--F does not apply to --MODEFLAG M (only to A, B)".
func (t Table) Inapplicable(changed func(flag string) bool, modeFlag, mode string) []string {
	var msgs []string
	for _, row := range t {
		if modes := strings.Fields(row[2]); changed(row[0]) && len(modes) > 0 && !slices.Contains(modes, mode) {
			msgs = append(msgs, fmt.Sprintf("--%s does not apply to --%s %s (only to %s)", row[0], modeFlag, mode, strings.Join(modes, ", ")))
		}
	}
	slices.Sort(msgs)
	return msgs
}

// Flag is the flag ("--name") of a configuration field, or the field's
// own name if no flag sets it.
func (t Table) Flag(field string) string {
	for _, row := range t {
		if slices.Contains(strings.Fields(row[1]), field) {
			return "--" + row[0]
		}
	}
	return field
}

// Messages returns the messages of err, one per joined error, with the
// fields they name rendered as flags (nil for a nil err).
func (t Table) Messages(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(fielderr.Rename(err, t.Flag).Error(), "\n")
}

// Ordered returns Messages(err) sorted by the table's order of the flag
// each message starts with (stable; messages of no flag first).
func (t Table) Ordered(err error) []string {
	msgs := t.Messages(err)
	pos := func(m string) int {
		f := strings.FieldsFunc(m, func(r rune) bool { return r == ' ' || r == ':' })
		if len(f) == 0 {
			return -1
		}
		return slices.IndexFunc(t, func(row Row) bool { return "--"+row[0] == f[0] })
	}
	slices.SortStableFunc(msgs, func(a, b string) int { return pos(a) - pos(b) })
	return msgs
}
