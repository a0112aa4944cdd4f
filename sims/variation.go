package sims

import (
	"errors"
	"fmt"
	"math"
)

// ErrBadParams marks invalid physical parameters of an environment variation.
var ErrBadParams = errors.New("sims: invalid environment parameters")

// CartPoleParams are the physical constants of CartPole that an environment
// variation may change (Sharma et al., expert-level DP offline RL, App. B.1,
// train experts on variations of gravity, force magnitude and cart mass).
// The time step (0.02 s), the termination thresholds and the step limit are
// not parameters: they define the task. Every field must be finite and > 0.
type CartPoleParams struct {
	// Gravity is g in m/s^2. Default 9.8.
	Gravity float64 `json:"gravity"`
	// CartMass is the cart's mass in kg. Default 1.0.
	CartMass float64 `json:"cart_mass"`
	// PoleMass is the pole's mass in kg. Default 0.1.
	PoleMass float64 `json:"pole_mass"`
	// HalfPoleLength is half the pole's length in m (Gymnasium's "length").
	// Default 0.5.
	HalfPoleLength float64 `json:"half_pole_length"`
	// ForceMag is the magnitude of the push in N. Default 10.0.
	ForceMag float64 `json:"force_mag"`
}

// DefaultCartPoleParams returns CartPole-v1's constants.
func DefaultCartPoleParams() CartPoleParams {
	return CartPoleParams{Gravity: 9.8, CartMass: 1.0, PoleMass: 0.1, HalfPoleLength: 0.5, ForceMag: 10.0}
}

// Validate reports every field that is not finite and > 0, naming it.
func (p CartPoleParams) Validate() error {
	return positiveFields("cartpole",
		field{"gravity", p.Gravity}, field{"cart_mass", p.CartMass}, field{"pole_mass", p.PoleMass},
		field{"half_pole_length", p.HalfPoleLength}, field{"force_mag", p.ForceMag})
}

// NewCartPoleWith returns a CartPole with the given physical constants (the
// rest is CartPole-v1); with DefaultCartPoleParams it is NewCartPole exactly.
// Call Reset before Step.
func NewCartPoleWith(p CartPoleParams) (*CartPole, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	e := &CartPole{gravity: p.Gravity, massCart: p.CartMass, massPole: p.PoleMass, length: p.HalfPoleLength,
		forceMag: p.ForceMag, tau: 0.02, xThreshold: 2.4}
	// Derived constants computed in float64 in Gymnasium's order (not as
	// exact Go constant expressions).
	e.totalMass = e.massPole + e.massCart
	e.poleMassLength = e.massPole * e.length
	pi := math.Pi
	e.thetaThreshold = 12 * 2 * pi / 360
	return e, nil
}

// Params returns the environment's physical constants.
func (e *CartPole) Params() CartPoleParams {
	return CartPoleParams{Gravity: e.gravity, CartMass: e.massCart, PoleMass: e.massPole, HalfPoleLength: e.length, ForceMag: e.forceMag}
}

// AcrobotParams are the physical constants of Acrobot that an environment
// variation may change (Sharma et al., App. B.1, vary the link length,
// shared by both links, and the two link masses). The time step, torques,
// speed limits and termination rule define the task and are not parameters.
// Every field must be finite and > 0.
type AcrobotParams struct {
	// Link1Length is the first link's length l1 in m. Default 1.0.
	Link1Length float64 `json:"link1_length"`
	// Link2Length is the second link's length in m. Default 1.0. As in
	// Gymnasium (LINK_LENGTH_2), it does not enter the book dynamics — the
	// second link acts through its centre of mass Link2COM — and only fixes
	// the arm's reach; it is here so that a variation states both lengths.
	Link2Length float64 `json:"link2_length"`
	// Link1Mass and Link2Mass are the link masses m1, m2 in kg. Default 1.0.
	Link1Mass float64 `json:"link1_mass"`
	Link2Mass float64 `json:"link2_mass"`
	// Link1COM and Link2COM are the positions lc1, lc2 of the links' centres
	// of mass in m from their joints. Default 0.5.
	Link1COM float64 `json:"link1_com"`
	Link2COM float64 `json:"link2_com"`
	// Link1MOI and Link2MOI are the moments of inertia i1, i2. Default 1.0.
	Link1MOI float64 `json:"link1_moi"`
	Link2MOI float64 `json:"link2_moi"`
	// Gravity is g in m/s^2. Default 9.8.
	Gravity float64 `json:"gravity"`
}

// DefaultAcrobotParams returns Acrobot-v1's constants.
func DefaultAcrobotParams() AcrobotParams {
	return AcrobotParams{Link1Length: 1.0, Link2Length: 1.0, Link1Mass: 1.0, Link2Mass: 1.0,
		Link1COM: 0.5, Link2COM: 0.5, Link1MOI: 1.0, Link2MOI: 1.0, Gravity: 9.8}
}

// Validate reports every field that is not finite and > 0, naming it.
func (p AcrobotParams) Validate() error {
	return positiveFields("acrobot",
		field{"link1_length", p.Link1Length}, field{"link2_length", p.Link2Length},
		field{"link1_mass", p.Link1Mass}, field{"link2_mass", p.Link2Mass},
		field{"link1_com", p.Link1COM}, field{"link2_com", p.Link2COM},
		field{"link1_moi", p.Link1MOI}, field{"link2_moi", p.Link2MOI}, field{"gravity", p.Gravity})
}

// NewAcrobotWith returns an Acrobot with the given physical constants (the
// rest is Acrobot-v1); with DefaultAcrobotParams it is NewAcrobot exactly.
// Call Reset before Step.
func NewAcrobotWith(p AcrobotParams) (*Acrobot, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	e := &Acrobot{m1: p.Link1Mass, m2: p.Link2Mass, l1: p.Link1Length, l2: p.Link2Length, lc1: p.Link1COM, lc2: p.Link2COM,
		i1: p.Link1MOI, i2: p.Link2MOI, g: p.Gravity, dt: 0.2}
	pi := math.Pi // float64 arithmetic, as numpy's 4 * pi and 9 * pi
	e.maxVel1, e.maxVel2 = 4*pi, 9*pi
	return e, nil
}

// Params returns the environment's physical constants.
func (e *Acrobot) Params() AcrobotParams {
	return AcrobotParams{Link1Length: e.l1, Link2Length: e.l2, Link1Mass: e.m1, Link2Mass: e.m2,
		Link1COM: e.lc1, Link2COM: e.lc2, Link1MOI: e.i1, Link2MOI: e.i2, Gravity: e.g}
}

type field struct {
	name string
	v    float64
}

// positiveFields joins one error per field that is not finite and > 0.
func positiveFields(env string, fs ...field) error {
	var errs []error
	for _, f := range fs {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("%w: %s %s = %v, want finite and > 0", ErrBadParams, env, f.name, f.v))
		}
	}
	return errors.Join(errs...)
}
