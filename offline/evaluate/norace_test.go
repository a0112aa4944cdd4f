//go:build !race

package evaluate

// raceEnabled reports whether the race detector is on: the coverage test
// then runs fewer logs.
const raceEnabled = false
