package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"dprl/internal/fielderr"
	"dprl/ledger/accountant/bandsens"
)

// Noise is the correlation of the noise across releases (DPConfig.Noise):
// one Mechanism each.
type Noise int

// Mechanism is one online noise kind: how the Gaussian noise of successive
// releases is correlated. Every kind gives each contributor to one release
// exactly the Gaussian mechanism of multiplier z (docs/privacy.md, section
// 3); they differ in how much noise stays in the parameters and in the
// sensitivity of a contributor present in several releases (section 4).
//
// Each kind lives in its own file (noise_independent.go, noise_tree.go,
// noise_sqrt.go, noise_bandmf.go), which declares its Noise value and
// registers it; the Aggregator, the agent and dprl train call only this
// interface, so a new kind is one file plus its tests.
type Mechanism interface {
	// Name is the kind's name in configurations and flags.
	Name() string
	// Online reports whether the agent may run the kind: its accounting
	// holds for users who return, under the participation pattern the
	// ledger enforces (Separation and the per-user cap).
	Online() bool
	// Horizon reports whether the kind correlates its noise over
	// DPConfig.Horizon releases (>= 1; 0 for the other kinds).
	Horizon() bool
	// Fresh reports whether every release draws its own independent
	// noise, so that one contributor's releases compose as separate
	// Gaussian mechanisms.
	Fresh() bool
	// CheckParams reports the problems of c's kind parameters (Horizon,
	// Band, and the rounding they imply), naming them with NoiseFields.
	CheckParams(c DPConfig) []error
	// Factor returns f such that every fresh draw has std z f S / K per
	// coordinate: with it one release is exactly the Gaussian mechanism of
	// multiplier z.
	Factor(c DPConfig) float64
	// GridRows is the number of releases one update's noise is drawn in,
	// for the exact sampler's grid condition (CheckGrid).
	GridRows(c DPConfig) int
	// RoundingExtra is the rounding error the kind adds to a release
	// beyond the mean's, in units of 2^-53 times the sensitivity S/K
	// (docs/privacy.md, section 2).
	RoundingExtra(c DPConfig) float64
	// WindowSensitivity returns rho(M), 1 <= M <= releases: the L2
	// sensitivity of a contributor in M consecutive releases of a run of
	// releases, in units of one release's (DPConfig.WindowSensitivity).
	WindowSensitivity(c DPConfig, M, releases int) (float64, error)
	// Separation is the fewest releases between two of a user's releases
	// that the ledger must enforce (0: no constraint).
	Separation(c DPConfig) int
	// UserSensitivity returns the sensitivity of a user in k releases of
	// an unbounded stream that respects Separation, in units of one
	// release's (Online kinds only).
	UserSensitivity(c DPConfig, k int) (float64, error)
	// NewNoise returns the noise state of releases of n values, each fresh
	// draw of std std from the exact sampler fed by rng (std = 0: none).
	NewNoise(c DPConfig, n int, std float64, rng *rand.Rand) (ReleaseNoise, error)
	// Entry is what the ledger entry of an online release says of the
	// noise, for users capped at k releases, in a stream (if correlated)
	// started at version streamStart.
	Entry(c DPConfig, k int, streamStart uint64) (EntryNoise, error)
	// Describe says how the kind protects a returning user capped at k
	// releases ("" when Fresh: nothing beyond the per-release guarantee).
	Describe(c DPConfig, k int) string
}

// ReleaseNoise is the noise state of a run's releases (Mechanism.NewNoise).
type ReleaseNoise interface {
	// Release writes into out the release of x, the mean of the batch's
	// clipped updates (x may be overwritten). It allocates nothing.
	Release(x, out []float64)
	// Commit commits the last release once it is published (a kind that
	// keeps a pending release discards one never committed).
	Commit()
}

// CarriedNoise is a ReleaseNoise whose state the ledger carries across
// restarts (bandmf.Stream): each release's share (Pending) is written with
// the release, and a restarted learner restores the last ones (Restore).
type CarriedNoise interface {
	ReleaseNoise
	Pending() (x, g []float64, ok bool)
	Restore(xs, gs [][]float64, releases uint64) error
}

// EntryNoise is what a release's ledger entry says of its noise.
type EntryNoise struct {
	// Text ends the entry's mechanism text: "Gaussian noise (z S / K)".
	Text string
	// Correlation is the correlated noise's public parameters; nil when
	// the noise is fresh.
	Correlation *bandsens.Correlation
}

// NoiseFields are the DPConfig fields the noise kinds' errors name
// (internal/fielderr: a command renders them as its flags).
var NoiseFields = fielderr.Fields{"Noise", "Horizon", "Band"}

// mechanisms are the registered kinds (register); read-only after init.
var mechanisms = map[Noise]Mechanism{}

// register adds kind n, from its file's init.
func register(n Noise, m Mechanism) {
	if _, dup := mechanisms[n]; dup {
		panic(fmt.Sprintf("policy: noise %d registered twice", n))
	}
	mechanisms[n] = m
}

// Mechanism returns the kind's Mechanism, or an error for a value no file
// registered.
func (n Noise) Mechanism() (Mechanism, error) {
	if m, ok := mechanisms[n]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("policy: noise %v, want %s", n, nameList(func(Mechanism) bool { return true }))
}

// String returns the kind's name ("independent", "tree", "sqrt", "bandmf").
func (n Noise) String() string {
	if m, ok := mechanisms[n]; ok {
		return m.Name()
	}
	return fmt.Sprintf("Noise(%d)", int(n))
}

// ParseNoise returns the Noise named by String.
func ParseNoise(s string) (Noise, error) {
	for _, n := range kinds() {
		if s == n.String() {
			return n, nil
		}
	}
	return 0, fmt.Errorf("policy: noise %q: want %s", s, nameList(func(Mechanism) bool { return true }))
}

// OnlineNoises names the kinds the agent runs ("independent or bandmf").
func OnlineNoises() string { return nameList(Mechanism.Online) }

// WithOnlineNoise returns c with the online kind named name ("" for
// independent) and band; errors name the fields with NoiseFields.
func (c DPConfig) WithOnlineNoise(name string, band int) (DPConfig, error) {
	n, err := ParseNoise(cmp.Or(name, NoiseIndependent.String()))
	if err != nil || !mechanisms[n].Online() {
		return c, NoiseFields.Errorf("{Noise} %q: want %s", name, OnlineNoises())
	}
	c.Noise, c.Band = n, band
	return c, errors.Join(mechanisms[n].CheckParams(c)...)
}

// kinds returns the registered kinds in order.
func kinds() []Noise {
	out := make([]Noise, 0, len(mechanisms))
	for n := range mechanisms {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// nameList is "a, b or c" over the kinds keep accepts.
func nameList(keep func(Mechanism) bool) string {
	var names []string
	for _, n := range kinds() {
		if keep(mechanisms[n]) {
			names = append(names, n.String())
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
