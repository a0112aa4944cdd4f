//go:build !race

package primorl

const raceEnabled = false
