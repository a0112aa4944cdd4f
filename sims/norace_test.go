//go:build !race

package sims

// raceEnabled reports whether the race detector is on: it makes allocation
// counts meaningless.
const raceEnabled = false
