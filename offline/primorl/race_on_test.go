//go:build race

package primorl

const raceEnabled = true
