//go:build race

package sims

// raceEnabled reports whether the race detector is on (allocation counts
// are meaningless under it).
const raceEnabled = true
