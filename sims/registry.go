package sims

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownEnv is returned by New for a name that is not registered.
var ErrUnknownEnv = errors.New("sims: unknown environment")

// Info describes one registered environment.
type Info struct {
	// Name is the registry name, as given to New.
	Name string
	// Description is a one-line summary with the reference it follows.
	Description string
	// New builds a fresh instance.
	New func() Env
}

// registry returns the table of environments in listing order. It is built
// anew on each call, so there is no package state; adding an environment is
// one line here.
func registry() []Info {
	return []Info{
		{"cartpole", "Gymnasium CartPole-v1: balance a pole on a cart (Barto, Sutton & Anderson 1983)", func() Env { return NewCartPole() }},
		{"acrobot", "Gymnasium Acrobot-v1: swing a two-link arm above a line, book dynamics, RK4 (Sutton 1996)", func() Env { return NewAcrobot() }},
		{"pendulum", "Gymnasium Pendulum-v1: swing up an inverted pendulum, continuous torque", func() Env { return NewPendulum() }},
		{"cartpole-balance", "DeepMind Control Suite cart-pole, Balance: continuous force, smooth reward, 1,000 steps (Tassa et al. 2018; not MuJoCo-exact)", func() Env { return NewDMCCartPole(false) }},
		{"cartpole-swingup", "DeepMind Control Suite cart-pole, Swing-up: the pole starts down (Tassa et al. 2018; not MuJoCo-exact)", func() Env { return NewDMCCartPole(true) }},
		{"mountaincar", "Gymnasium MountainCar-v0: drive an underpowered car up a hill (Moore 1990)", func() Env { return NewMountainCar() }},
		{"riverswim", "RiverSwim, 6 states, horizon 20, p = 0.6 (Osband et al. 2013; DPPG App. C.1)", func() Env { return mustRiverSwim(0.6) }},
		{"riverswim-0.9", "RiverSwim, 6 states, horizon 20, p = 0.9 (DPPG App. C.1)", func() Env { return mustRiverSwim(0.9) }},
		{"hiv", "HIV treatment: 6-dim stiff ODE, 4 drug combinations, 200 decisions of 5 days (Adams et al. 2004; Ernst et al. 2006)", func() Env { return NewHIV() }},
		{"dosing-0", "Dosing-0: expanded Bergman model, fixed meals, insulin in [0, 10] (DPPG paper; dosing-rl-gym)", func() Env { return NewDosing(0) }},
		{"dosing-1", "Dosing-1: expanded Bergman model, random meals per patient (DPPG paper; dosing-rl-gym)", func() Env { return NewDosing(1) }},
		{"recsys", "recommendation users with RecSim interest-evolution mechanics; action = topic, observation = interaction history", func() Env { return mustRecSys() }},
		{"bandit", "contextual-bandit personalization: one decision per session, 8 user features (segment, device, 3 continuous), 10 items, logistic click model", func() Env { return mustBandit() }},
		{"chain", "chain walk to an absorbing rewarding end, 2 actions with different advance probabilities (GPOPE experiments)", func() Env { return mustChain(DefaultChainConfig()) }},
	}
}

// Registry returns the registered environments in listing order. The slice
// is fresh; the caller may keep or modify it.
func Registry() []Info { return registry() }

// Names returns the registered environment names in listing order.
func Names() []string {
	reg := registry()
	names := make([]string, len(reg))
	for i, e := range reg {
		names[i] = e.Name
	}
	return names
}

// Lookup returns the registry entry for name.
func Lookup(name string) (Info, bool) {
	for _, e := range registry() {
		if e.Name == name {
			return e, true
		}
	}
	return Info{}, false
}

// New returns a fresh instance of the named environment, or an error wrapping
// ErrUnknownEnv that lists the valid names.
func New(name string) (Env, error) {
	e, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownEnv, name, strings.Join(Names(), ", "))
	}
	return e.New(), nil
}

// mustRecSys builds the default recommendation simulator, whose default
// configuration always validates.
func mustRecSys() Env {
	e, err := NewRecSys(DefaultRecSysConfig())
	if err != nil {
		panic(err)
	}
	return e
}
