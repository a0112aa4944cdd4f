package svt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"dprl/internal/atomicfile"
	"dprl/internal/fielderr"
	"dprl/internal/rng"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/offline/budget"
	"dprl/sessionlog"
)

// releaseSource cites the theorem the charged (eps1, delta1) comes from.
const releaseSource = "Sharma et al., Preserving Expert-Level Privacy in Offline RL, Theorem 5.5: DataRelease (Algorithm 2) is (eps1, delta1)-DP at expert level"

// ReleaseConfig configures a Release: DataRelease on a session log of
// expert trajectories, charged through the offline budget protocol
// (budget.Run), its outputs written to files.
type ReleaseConfig struct {
	// Config is DataRelease's: eps1, delta1, T, L and p_min.
	Config
	// Data is the session log (the private dataset); every session names
	// its expert.
	Data string `flag:"data" usage:"session log (dprl.sessions.v1) with expert ids"`
	// Experts is the directory of the experts' snapshots (ExpertPath).
	Experts string `flag:"experts" usage:"directory of expert snapshots DIR/<expert id>.snap"`
	// OutStable is the release's file: the stable prefixes (Result.Stable).
	OutStable string `flag:"out-stable" usage:"file for the release: the stable prefixes, without ids or behaviour probabilities (dprl.sessions.v1)"`
	// OutUnstable, if set, receives the unstable set (Result.Unstable): NOT
	// released and not DP, for the data owner's expert-level DP learner.
	OutUnstable string `flag:"out-unstable" usage:"file for the tails and unqueried trajectories, NOT released and not DP: for the data owner's expert-level DP learner only (dprl.sessions.v1; default: not written)"`
	// Force lets OutStable and OutUnstable replace existing files; without
	// it NewRelease refuses an existing one, before anything is read or
	// charged.
	Force bool `flag:"force" usage:"overwrite --out-stable and --out-unstable if they exist"`
	// CapDelta is the dataset's cap delta when it was given explicitly (0:
	// not given). The release's delta is added to the dataset's (basic
	// composition), so a larger Delta is refused before anything is read.
	CapDelta float64
	// Seeded says the noise is seeded with Seed: a simulation, recorded in
	// the ledger and the report, which then holds Report.NonPrivate.
	Seeded bool
	Seed   uint64 `flag:"seed" usage:"seed the noise and the shuffle (simulation only; recorded in the ledger). Default: a secure generator seeded from the OS"`
	// Warn, if set, receives a warning before the charge when the release
	// can keep only part of what it queries (Reach.Warning).
	Warn func(msg string)
}

// releaseFields are the ReleaseConfig fields an error may name.
var releaseFields = fielderr.Fields{"Data", "Experts", "OutStable", "OutUnstable", "Force", "Epsilon", "Delta", "CapDelta", "Queries", "MaxLen"}

// Validate reports every invalid field, as errors naming the fields
// (*fielderr.Error, or DataRelease's own Config errors), joined. It reads
// no file.
func (c ReleaseConfig) Validate() error {
	var errs []error
	for _, r := range []struct{ name, v string }{{"Data", c.Data}, {"Experts", c.Experts}, {"OutStable", c.OutStable}} {
		if r.v == "" {
			errs = append(errs, releaseFields.Errorf("{%s}: required", r.name))
		}
	}
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.OutStable != "" && c.OutStable == c.OutUnstable {
		errs = append(errs, releaseFields.Errorf("{OutStable} and {OutUnstable}: the same file %q", c.OutStable))
	}
	for _, o := range []string{c.OutStable, c.OutUnstable} {
		if o != "" && c.Data != "" && filepath.Clean(o) == filepath.Clean(c.Data) {
			errs = append(errs, releaseFields.Errorf("output %q would overwrite {Data}", o))
		}
	}
	if c.Delta > 0 && c.CapDelta > 0 && c.Delta > c.CapDelta {
		errs = append(errs, releaseFields.Errorf("{Delta} %v exceeds the dataset's {CapDelta} %v: the release's delta is added to the dataset's (basic composition); raise {CapDelta} if the dataset's owner agreed", c.Delta, c.CapDelta))
	}
	return errors.Join(errs...)
}

// NewNoiseRand returns the generator of a release's noise and shuffles:
// ChaCha8 keyed from seed when seeded (a simulation), else a secure
// generator seeded from the operating system. The seeded key (seed || "dprl
// offline svt") predates internal/rng and is kept so that seeded runs
// repeat their documented numbers.
func NewNoiseRand(seeded bool, seed uint64) *rand.Rand {
	if !seeded {
		return rng.Secure()
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:8], seed)
	copy(key[8:], "dprl offline svt")
	return rand.New(rand.NewChaCha8(key))
}

// Release is DataRelease as budget.Run sees it (a budget.Mechanism): each
// record checked as the log is first read, the cost (eps1, delta1) at unit
// expert stated from the configuration alone, the whole log and the
// experts validated and the output files created before the charge, the
// release computed, registered as derived from the dataset and written
// after it. Its result is the Report. Call Close when the run is over.
type Release struct {
	c   ReleaseConfig
	rng *rand.Rand
	// index maps expert ids to their place in ids; maxAction is the log's
	// largest action.
	index     map[string]int
	ids       []string
	maxAction int
	sessions  []sessionlog.Session
	experts   []*SmoothedExpert
	// stableOut and unstableOut are the outputs' temporary files, created
	// by Validate (a file that cannot be created costs nothing).
	stableOut, unstableOut *atomicfile.File
	// reach is what the release can keep at best (public inputs only).
	reach Reach
}

// NewRelease validates c, refuses outputs that exist unless c.Force, and
// returns its mechanism, drawing all noise and shuffles from rng
// (NewNoiseRand).
func NewRelease(c ReleaseConfig, rng *rand.Rand) (*Release, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var errs []error
	for _, out := range [][2]string{{"OutStable", c.OutStable}, {"OutUnstable", c.OutUnstable}} {
		if _, err := os.Lstat(out[1]); out[1] != "" && err == nil && !c.Force {
			errs = append(errs, releaseFields.Errorf("{%s} %s exists ({Force} overwrites it)", out[0], out[1]))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Release{c: c, rng: rng, index: map[string]int{}, maxAction: -1}, nil
}

// Input is the log the release reads, as budget.Run takes it.
func (m *Release) Input() budget.Input {
	return budget.Input{Path: m.c.Data, Reader: sessionlog.ReaderOptions{Name: m.c.Data}}
}

// Check checks one record as the log is first read (sessionlog.ScanLog names
// its line in errors): every session names an expert (a valid id), actions
// are discrete and no trajectory is longer than MaxLen. It collects the
// expert ids and the largest action.
func (m *Release) Check(s *sessionlog.Session) error {
	if s.Steps[0].Action.Vec != nil {
		return errors.New("continuous actions: SVT needs discrete actions (Sharma et al. assume a finite action set)")
	}
	if s.Expert == "" {
		return fmt.Errorf("session %q names no expert: every session needs an \"expert\" id", s.Session)
	}
	if err := CheckID(s.Expert); err != nil {
		return err
	}
	if len(s.Steps) > m.c.MaxLen {
		return releaseFields.Errorf("session %q has %d steps, above {MaxLen} %d", s.Session, len(s.Steps), m.c.MaxLen)
	}
	for _, st := range s.Steps {
		m.maxAction = max(m.maxAction, st.Action.Index)
	}
	if _, ok := m.index[s.Expert]; !ok {
		m.index[s.Expert] = len(m.ids)
		m.ids = append(m.ids, s.Expert)
	}
	return nil
}

// Entry is the release's cost: (eps1, delta1) at unit expert, a fixed cost
// (Theorem 5.5).
func (m *Release) Entry(*sessionlog.Index, budget.Dataset) (ledger.Entry, error) {
	c := m.c
	return ledger.Entry{Unit: ledger.UnitExpert,
		Mechanism: fmt.Sprintf("svt: DataRelease (Sharma et al., Algorithm 2), T = %d queries, L = %d, p_min = %v, discrete Laplace noise", c.Queries, c.MaxLen, c.PMin),
		Method:    accountant.MethodRDP, Epsilon: c.Epsilon, Delta: c.Delta, Seeded: c.Seeded, Sampler: noise.SamplerLaplace,
		Fixed: []ledger.FixedCost{{Epsilon: c.Epsilon, Delta: c.Delta, Source: releaseSource}}}, nil
}

// Validate checks the whole log and the experts (load), records the number
// of experts in the entry, and creates the outputs' temporary files;
// nothing is released.
func (m *Release) Validate(ix *sessionlog.Index, e *ledger.Entry) error {
	if err := m.load(ix); err != nil {
		return err
	}
	if err := m.checkReach(); err != nil {
		return err
	}
	var err error
	if m.stableOut, err = atomicfile.Create(m.c.OutStable, 0o600); err != nil {
		return releaseFields.Errorf("{OutStable}: %w", err)
	}
	if m.c.OutUnstable != "" {
		if m.unstableOut, err = atomicfile.Create(m.c.OutUnstable, 0o600); err != nil {
			return releaseFields.Errorf("{OutUnstable}: %w", err)
		}
	}
	e.Participants = len(m.experts)
	return nil
}

// checkReach refuses a release that can keep no prefix and warns of one
// that can keep only short prefixes (Reach), from public inputs only: the
// configuration, the experts' action count and the roster of snapshots.
func (m *Release) checkReach() error {
	c := m.c
	roster, err := RosterSize(c.Experts)
	if err != nil {
		return releaseFields.Errorf("{Experts}: %w", err)
	}
	p, err := accountant.SVTSplit(c.Epsilon, c.Delta, c.Queries, c.MaxLen, c.PMin)
	if err != nil {
		return err
	}
	m.reach = NewReach(p, roster, m.experts[0].NumActions(), c.MaxLen, c.PMin)
	if err := m.reach.Err(); err != nil {
		return err
	}
	if w := m.reach.Warning(); w != "" && c.Warn != nil {
		c.Warn(w)
	}
	return nil
}

// load checks what needs the whole log (Queries at most the number of
// trajectories; the experts' snapshots fit the log and gave its logged
// probabilities) and keeps the sessions, read again through the index
// (each checked against its hash), with the experts. DataRelease holds
// every session: its memory is that of the log's sessions (about 80 bytes
// per step plus 8 per observation component), bounded by MaxLen per
// trajectory.
func (m *Release) load(ix *sessionlog.Index) error {
	if m.c.Queries > ix.Len() {
		return releaseFields.Errorf("{Queries} %d: the log has %d trajectories (T must be at most their number)", m.c.Queries, ix.Len())
	}
	sort.Strings(m.ids)
	for i, id := range m.ids {
		m.index[id] = i
	}
	experts, err := LoadExperts(m.c.Experts, m.ids, ix.Spec().ObsDim, m.maxAction+1, m.c.PMin)
	if err != nil {
		return err
	}
	sessions := make([]sessionlog.Session, 0, ix.Len())
	err = ix.Each(func(_ int, s *sessionlog.Session) error {
		if err := CheckBehaviour(s, experts[m.index[s.Expert]]); err != nil {
			return err
		}
		sessions = append(sessions, *s)
		return nil
	})
	if err != nil {
		return err
	}
	m.sessions, m.experts = sessions, experts
	return nil
}

// Compute runs DataRelease, registers its outputs in the ledger as derived
// from the dataset (before they exist, so any run on them is charged to
// it; the stable prefixes as released, the unstable set not), writes them
// and reports the release.
func (m *Release) Compute(_ context.Context, _ *sessionlog.Index, ch *budget.Charge) (*Report, error) {
	c := m.c
	qs := make([]Expert, len(m.experts))
	for i, e := range m.experts {
		qs[i] = e
	}
	out, err := DataRelease(m.sessions, qs, c.Config, m.rng)
	if err != nil {
		return nil, fmt.Errorf("%w (the run was charged)", err)
	}
	// The stable prefixes are the release (eps1, delta1 at unit expert,
	// charged above) and may be read as public; the unstable set is not
	// released. The stable file comes first: a record both share is public.
	if err := ch.RegisterDerived(budget.Derived{Note: "svt stable prefixes (" + filepath.Base(c.OutStable) + ")", Sessions: out.Stable, Released: true},
		budget.Derived{Note: "svt unstable tails and unqueried trajectories (" + filepath.Base(c.OutUnstable) + ")", Sessions: out.Unstable}); err != nil {
		return nil, fmt.Errorf("%w (the run was charged)", err)
	}
	if err := writeSessions(m.stableOut, out.Stable); err != nil {
		return nil, releaseFields.Errorf("{OutStable}: %w (the run was charged)", err)
	}
	if m.unstableOut != nil {
		if err := writeSessions(m.unstableOut, out.Unstable); err != nil {
			return nil, releaseFields.Errorf("{OutUnstable}: %w (the run was charged)", err)
		}
	}
	return m.report(out, ch), nil
}

// Close removes the temporary files not renamed into place.
func (m *Release) Close() {
	if m.stableOut != nil {
		m.stableOut.Abort()
	}
	if m.unstableOut != nil {
		m.unstableOut.Abort()
	}
}

// writeSessions writes the sessions to a pending output file and commits
// it (synced and renamed into place).
func writeSessions(a *atomicfile.File, ss []sessionlog.Session) error {
	w := sessionlog.NewWriter(a)
	for i := range ss {
		if err := w.Write(&ss[i]); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return a.Commit()
}
