package sac

import (
	"errors"
	"fmt"
	"math"
)

// The actor's log standard deviation lies in [LogStdMin, LogStdMax].
const (
	LogStdMin = -5.0
	LogStdMax = 2.0
)

// Config holds SAC's settings. DefaultConfig gives Spinning Up's and the
// PriMORL paper's values.
type Config struct {
	// Hidden lists the hidden widths of the actor and of each critic
	// (ReLU). Default 256, 256.
	Hidden []int
	// Gamma is the discount in [0, 1). Default 0.99.
	Gamma float64
	// Tau is the Polyak rate of the target critics in (0, 1]. Default 0.005.
	Tau float64
	// ActorLR, CriticLR and AlphaLR are Adam's step sizes, > 0. Default
	// 3e-4 each (the paper's Table 5).
	ActorLR, CriticLR, AlphaLR float64
	// Batch is the minibatch size B >= 1. Default 256.
	Batch int
	// TargetEntropy is H_target; NaN means -(action dimension), SAC's
	// usual choice (the PriMORL paper sets -3).
	TargetEntropy float64
	// InitAlpha is the initial temperature, > 0. Default 1.
	InitAlpha float64
}

// DefaultConfig returns hidden 256x256, gamma 0.99, tau 0.005, learning
// rates 3e-4, batch 256, target entropy -(action dimension), alpha 1.
func DefaultConfig() Config {
	return Config{Hidden: []int{256, 256}, Gamma: 0.99, Tau: 0.005, ActorLR: 3e-4, CriticLR: 3e-4, AlphaLR: 3e-4,
		Batch: 256, TargetEntropy: math.NaN(), InitAlpha: 1}
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("sac: "+f, a...)) }
	if len(c.Hidden) == 0 {
		bad("hidden widths empty, want at least one layer")
	}
	for i, h := range c.Hidden {
		if h < 1 {
			bad("hidden[%d] = %d, must be >= 1", i, h)
		}
	}
	if !(c.Gamma >= 0 && c.Gamma < 1) {
		bad("gamma %v, must be in [0, 1)", c.Gamma)
	}
	if !(c.Tau > 0 && c.Tau <= 1) {
		bad("tau %v, must be in (0, 1]", c.Tau)
	}
	for _, lr := range []struct {
		name string
		v    float64
	}{{"actor lr", c.ActorLR}, {"critic lr", c.CriticLR}, {"alpha lr", c.AlphaLR}} {
		if !(lr.v > 0) || math.IsInf(lr.v, 0) {
			bad("%s %v, must be finite and > 0", lr.name, lr.v)
		}
	}
	if c.Batch < 1 {
		bad("batch %d, must be >= 1", c.Batch)
	}
	if math.IsInf(c.TargetEntropy, 0) {
		bad("target entropy %v, must be finite (NaN: minus the action dimension)", c.TargetEntropy)
	}
	if !(c.InitAlpha > 0) || math.IsInf(c.InitAlpha, 0) {
		bad("initial alpha %v, must be finite and > 0", c.InitAlpha)
	}
	return errors.Join(errs...)
}
