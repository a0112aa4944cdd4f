//go:build race

package ope

// raceEnabled reports whether the race detector is on: TestCoverage then
// runs fewer repetitions.
const raceEnabled = true
