//go:build race

package policy

// raceEnabled reports whether the race detector is on; allocation tests are
// skipped under -race, which instruments memory and makes AllocsPerRun lie.
const raceEnabled = true
