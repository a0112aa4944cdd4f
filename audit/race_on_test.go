//go:build race

package audit

// raceEnabled reports whether the race detector is on: the audits of the
// correlated noise shapes then run fewer releases (the instrumented clip
// of every background update dominates).
const raceEnabled = true
