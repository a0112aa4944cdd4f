//go:build !race

package sac

const raceEnabled = false
