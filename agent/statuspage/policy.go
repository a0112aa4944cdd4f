package statuspage

import (
	"fmt"
	"math"
	"time"

	"dprl/ledger"
	"dprl/ledger/accountant"
)

// PolicyView is one policy's part of the page, from the ledger it is
// released into.
type PolicyView struct {
	// Name names the policy when an agent serves several ("": the one).
	Name string
	// Version is the latest released version (0: none yet).
	Version uint64
	// Epsilon and Delta are the per-session guarantee of each version:
	// the largest over the ledger's releases and the agent's current one.
	Epsilon, Delta float64
	// Releases are the ledger's releases of this policy, in order.
	Releases []ReleasePoint
	// OtherEntries counts the ledger's entries that are not policy
	// releases (offline runs, caps; see dprl ledger show).
	OtherEntries int
	Users        UserView
	Curve        CurveView
	// Fixed, when the agent serves a fixed policy (dprl agent
	// --serve-policy), is that policy: the page shows its own guarantee
	// instead of the ledger's releases'.
	Fixed *FixedView
}

// FixedView is a fixed policy an agent serves, with the provenance its
// snapshot records.
type FixedView struct {
	// ID and Source identify the snapshot (its kind and CRC, its file).
	ID, Source string
	// Private says the snapshot records that it is a differentially
	// private offline release at (Epsilon, Delta) per Unit, charged by
	// ledger entry LedgerSeq; Epsilon is rounded up by the caller.
	Private        bool
	Epsilon, Delta float64
	Unit           string
	LedgerSeq      uint64
	// Label says the guarantee in words ("NOT private: ..." for one that
	// is not).
	Label string
}

// fixedPanel is the policy panel of an agent serving a fixed policy.
func (f *FixedView) fixedPanel(id string) Panel {
	p := Panel{ID: id + "-version", Title: "Policy served", Facts: []Fact{
		{"fixed policy", f.ID + " from " + f.Source},
		{"guarantee", f.Label},
	}}
	if f.Private {
		p.Privacy = Privacy{Release: true, Epsilon: f.Epsilon, Delta: f.Delta, Unit: f.Unit, Fixed: true, LedgerSeq: f.LedgerSeq}
		p.Note = "A fixed offline release is served: the agent never learns and spends no privacy budget; serving a differentially private release is post-processing, so what it serves is covered by the release's own guarantee."
	} else {
		p.Privacy = Privacy{NotPrivate: true}
		p.Note = "The operator chose to serve a policy that is NOT private (--serve-non-private): the agent never learns, and what it serves is covered by no privacy guarantee."
	}
	return p
}

// ReleasePoint is one release: its version, when it was written, and its
// per-session guarantee.
type ReleasePoint struct {
	Version        uint64
	Time           time.Time
	Epsilon, Delta float64
}

// UserView is the users' composed epsilons, from the ledger's user states
// (operational: which users took part in which update).
type UserView struct {
	// Users is the number of users in the ledger.
	Users int
	// Delta is the delta of the composed epsilons (the agent's).
	Delta float64
	// Bins count the users per composed-epsilon interval.
	Bins []Bin
	// Worst is the largest composed epsilon (0 without users).
	Worst float64
	// Cap is the per-user epsilon bound the agent enforces at Delta (0:
	// none, or not known); CapNote says which cap it is, or why there is
	// none to show.
	Cap     float64
	CapNote string
}

// CurveView is the simulated learning curve of a policy.
type CurveView struct {
	// Env is the simulator ("": none; Reason says why there is no curve).
	Env      string
	Episodes int
	Points   []CurvePoint
	// Pending counts the versions still being evaluated.
	Pending int
	Reason  string
}

// CurvePoint is one released version's mean return over Episodes
// simulated episodes.
type CurvePoint struct {
	Version    uint64
	MeanReturn float64
}

// LedgerOptions are what FromLedger cannot read from the ledger.
type LedgerOptions struct {
	Name string
	// Epsilon and Delta are the agent's per-session guarantee (0: take
	// the last release's); Delta is also the delta of the users' composed
	// epsilons.
	Epsilon, Delta float64
	// UserCap and CapNote describe the per-user cap (UserView).
	UserCap float64
	CapNote string
}

// userBins is the number of bins of the users' epsilon histogram.
const userBins = 12

// FromLedger reads a policy's releases and its users' composed epsilons
// from the ledger. It scans every entry and every user state: callers
// serving it often cache it per ledger head.
func FromLedger(store *ledger.Store, o LedgerOptions) (PolicyView, error) {
	v := PolicyView{Name: o.Name, Epsilon: o.Epsilon, Delta: o.Delta}
	h, err := store.Head()
	if err != nil {
		return PolicyView{}, err
	}
	v.Version = h.Version
	err = store.Entries(func(e ledger.Entry) error {
		if e.Kind != ledger.KindRelease {
			v.OtherEntries++
			return nil
		}
		v.Releases = append(v.Releases, ReleasePoint{Version: e.PolicyVersion, Time: e.Time, Epsilon: e.Epsilon, Delta: e.Delta})
		return nil
	})
	if err != nil {
		return PolicyView{}, err
	}
	if n := len(v.Releases); n > 0 && v.Delta == 0 {
		v.Epsilon, v.Delta = v.Releases[n-1].Epsilon, v.Releases[n-1].Delta
	}
	for _, r := range v.Releases {
		v.Epsilon, v.Delta = max(v.Epsilon, r.Epsilon), max(v.Delta, r.Delta)
	}
	v.Users, err = usersFromLedger(store, o, v.Delta)
	return v, err
}

// usersFromLedger histograms the users' composed epsilons at delta. Users
// with equal histories share a composed multiplier, so the epsilon (a
// numerical inversion) is computed once per distinct one.
func usersFromLedger(store *ledger.Store, o LedgerOptions, delta float64) (UserView, error) {
	u := UserView{Delta: delta, Cap: o.UserCap, CapNote: o.CapNote}
	byZ := map[float64]int{}
	err := store.Users(func(_ ledger.UserKey, st ledger.UserState) error {
		if st.Updates > 0 {
			byZ[st.SumInvZ2]++
		}
		u.Users++
		return nil
	})
	if err != nil || len(byZ) == 0 || !(delta > 0) {
		return u, err
	}
	eps := make(map[float64]int, len(byZ))
	for s, n := range byZ {
		e, err := ledger.UserState{Updates: 1, SumInvZ2: s}.Epsilon(delta)
		if err != nil {
			return u, fmt.Errorf("statuspage: a user's epsilon: %w", err)
		}
		eps[e] += n
		u.Worst = max(u.Worst, e)
	}
	hi := 1.1 * max(u.Worst, u.Cap) // the worst user and the cap inside the axis
	width := hi / userBins
	u.Bins = make([]Bin, userBins)
	for i := range u.Bins {
		u.Bins[i] = Bin{Lo: width * float64(i), Hi: width * float64(i+1)}
	}
	for e, n := range eps {
		i := min(int(e/width), userBins-1)
		u.Bins[i].Count += float64(n)
	}
	return u, nil
}

// Panels are the policy's panels; now dates the policy's age.
func (v PolicyView) Panels(id string, now time.Time) []Panel {
	rel := Privacy{Release: true, Epsilon: v.Epsilon, Delta: v.Delta, Unit: "session"}
	if v.Fixed != nil {
		f := v.Fixed.fixedPanel(id)
		releases := v.releasesPanel(id, now)
		releases.Note += " A fixed policy is served: the ledger's releases, if any, are of earlier learning runs on this data directory, not of the policy served."
		return []Panel{f, releases, v.curvePanel(id, Privacy{}), v.usersPanel(id)}
	}
	policy := Panel{ID: id + "-version", Title: "Policy version", Privacy: rel, Facts: []Fact{
		{"version served", fmt.Sprint(v.Version)},
		{"per-session guarantee", fmt.Sprintf("ε = %s at δ = %s (analytic Gaussian mechanism)", accountant.FormatEpsilon(v.Epsilon), formatNum(v.Delta))},
	}}
	if len(v.Releases) == 0 {
		policy.Note = "no release yet: version 0 is the initial policy, drawn before any session"
	}
	if v.Delta == 0 { // a report on a ledger without releases: no guarantee to show
		policy.Privacy = Privacy{}
		policy.Facts = policy.Facts[:1]
	}
	return []Panel{policy, v.releasesPanel(id, now), v.curvePanel(id, rel), v.usersPanel(id)}
}

// releasesPanel is the ledger's releases over time.
func (v PolicyView) releasesPanel(id string, now time.Time) Panel {
	releases := Panel{ID: id + "-releases", Title: "Releases over time", Privacy: Privacy{},
		Note: "Each release is announced when it is written; its time depends on when sessions ended, so it is scheduling data for the operator, not a private release."}
	if n := len(v.Releases); n > 0 {
		last := v.Releases[n-1]
		releases.Facts = []Fact{
			{"last release", fmt.Sprintf("version %d at %s", last.Version, last.Time.UTC().Format(time.RFC3339))},
			{"age of the version served", age(now.Sub(last.Time))},
			{"first release", v.Releases[0].Time.UTC().Format(time.RFC3339)},
		}
		l := Line{Label: "version served", Step: true, Points: n <= 60}
		for _, r := range v.Releases {
			l.X = append(l.X, float64(r.Time.Unix()))
			l.Y = append(l.Y, float64(r.Version))
		}
		if now.After(last.Time) { // the version served until now
			l.X, l.Y, l.NoMarkLast = append(l.X, float64(now.Unix())), append(l.Y, float64(last.Version)), true
		}
		releases.Figures = []Figure{{ID: id + "-releases", Title: "Policy version over time", XLabel: "time (UTC)", YLabel: "version", XTime: true, IntY: true, Lines: []Line{l}}}
	} else {
		releases.Facts = []Fact{{"last release", "none yet"}}
	}
	if v.OtherEntries > 0 {
		releases.Facts = append(releases.Facts, Fact{"other ledger entries", fmt.Sprintf("%d (offline runs, caps: see dprl ledger show)", v.OtherEntries)})
	}
	return releases
}

// curvePanel is the simulated learning curve, or why there is none.
func (v PolicyView) curvePanel(id string, rel Privacy) Panel {
	c := v.Curve
	p := Panel{ID: id + "-curve", Title: "Learning curve (" + SimulatedNote + ")", Privacy: rel}
	if c.Env == "" {
		p.Privacy = Privacy{}
		p.Note = cmpOr(c.Reason, "no simulator: there is no learning curve") +
			". The agent releases no noised return, so a learning curve can only evaluate the released policies on a public simulator (run the agent, or dprl report, with --env naming one)."
		return p
	}
	p.Facts = []Fact{{"simulator", c.Env}, {"evaluation", fmt.Sprintf("mean return over %d simulated episodes per version, a fixed seed per version", c.Episodes)}}
	if c.Pending > 0 {
		p.Facts = append(p.Facts, Fact{"in progress", fmt.Sprintf("%d versions still being evaluated (reload to see them)", c.Pending)})
	}
	if c.Reason != "" {
		p.Note = c.Reason
	}
	l := Line{Label: "mean simulated return", Points: len(c.Points) <= 60}
	for _, pt := range c.Points {
		l.X = append(l.X, float64(pt.Version))
		l.Y = append(l.Y, pt.MeanReturn)
	}
	p.Figures = []Figure{{ID: id + "-curve", Title: "Released policies on the " + c.Env + " simulator", Note: SimulatedNote, XLabel: "policy version", YLabel: "mean return (simulated)", IntX: true, Lines: []Line{l}}}
	return p
}

// usersPanel is the distribution of the users' composed epsilons.
func (v PolicyView) usersPanel(id string) Panel {
	u := v.Users
	p := Panel{ID: id + "-users", Title: "Epsilon spent per user", Privacy: Privacy{},
		Facts: []Fact{{"users in the ledger", fmt.Sprint(u.Users)}}}
	if u.Users == 0 {
		p.Note = "no user has taken part in an update (or the sessions were anonymous)"
		return p
	}
	p.Facts = append(p.Facts, Fact{"worst user", fmt.Sprintf("ε = %s at δ = %s (composed over their updates)", accountant.FormatEpsilon(u.Worst), formatNum(u.Delta))})
	f := Figure{ID: id + "-users", Title: "Users by composed epsilon", XLabel: fmt.Sprintf("composed epsilon at δ = %s", formatNum(u.Delta)), YLabel: "users", IntY: true, Bins: u.Bins,
		Marks: []Mark{{X: u.Worst, Label: "worst user " + accountant.FormatEpsilon(u.Worst)}}}
	switch {
	case u.Cap > 0:
		p.Facts = append(p.Facts, Fact{"cap", fmt.Sprintf("ε ≤ %s (%s); worst user at %.0f%% of it", accountant.FormatEpsilon(u.Cap), u.CapNote, math.Ceil(100*u.Worst/u.Cap))})
		f.Marks = append(f.Marks, Mark{X: u.Cap, Label: "cap " + accountant.FormatEpsilon(u.Cap)})
	case u.CapNote != "":
		p.Facts = append(p.Facts, Fact{"cap", u.CapNote})
	}
	if math.IsInf(u.Worst, 0) || math.IsNaN(u.Worst) {
		return p
	}
	p.Figures = []Figure{f}
	return p
}
