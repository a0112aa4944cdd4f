//go:build race

package sac

const raceEnabled = true
