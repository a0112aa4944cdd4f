package service

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"

	"dprl/agent"
	"dprl/agent/statuspage"
	"dprl/internal/buildinfo"
	"dprl/ledger"
)

// statusPage serves the status page at the ops server's root (package
// agent/statuspage): for each policy, its version, releases and users'
// epsilons from its ledger and, when its --env names a simulator, the
// simulated learning curve of its released versions, evaluated by one
// background goroutine per policy while the page is viewed; and the
// service's metrics from its registry (all models together).
type statusPage struct {
	s        *Service
	policies []*pagePolicy
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// pagePolicy is one policy's part of the page.
type pagePolicy struct {
	p        *Policy
	curve    *statuspage.SimCurve // nil: noCurve says why
	noCurve  string
	mu       sync.Mutex
	cachedAt ledger.Head     // the head the cached ledger view was read at
	cachedG  agent.Guarantee // and the agent's guarantee (replaced after each release)
	cached   *statuspage.PolicyView
}

// newStatusPage prepares the page and starts the curves' workers.
func newStatusPage(s *Service) *statusPage {
	ctx, cancel := context.WithCancel(context.Background())
	pg := &statusPage{s: s, stop: cancel}
	for _, p := range s.policies {
		pp := &pagePolicy{p: p}
		if p.cfg.Fixed != nil {
			pp.noCurve = "a fixed policy is served (" + p.cfg.Fixed.ID() + "): it does not learn"
		} else if p.env == "" {
			pp.noCurve = "no simulator: the agent runs without --env"
		} else if c, err := statuspage.NewSimCurve(p.env, p.cfg.Spec, p.cfg.Policy.PPO, p.store.Snapshot); err != nil {
			pp.noCurve = "no learning curve on the " + p.env + " simulator: " + err.Error()
		} else {
			pp.curve = c
			pg.wg.Add(1)
			go func() { defer pg.wg.Done(); c.Run(ctx) }()
		}
		pg.policies = append(pg.policies, pp)
	}
	return pg
}

// close stops the curves' workers (before the ledgers close).
func (pg *statusPage) close() {
	pg.stop()
	pg.wg.Wait()
}

// view is the policy's part of the page: its ledger's, read again only
// when the head moved, and its curve.
func (pp *pagePolicy) view() (statuspage.PolicyView, error) {
	p := pp.p
	h, err := p.store.Head()
	if err != nil {
		return statuspage.PolicyView{}, err
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if gp := p.agent.Guarantee(); pp.cached == nil || h != pp.cachedAt || gp != pp.cachedG {
		// The ledger's guarantee (Guarantee), not the current settings'
		// alone: a restart with another noise multiplier leaves releases
		// and users' updates at the old one in the ledger.
		g := gp
		o := statuspage.LedgerOptions{Name: p.name, Epsilon: g.Epsilon, Delta: g.Delta}
		switch _, userRaised := g.HistoryRaises(p.cfg); {
		case g.UserBounded && userRaised:
			o.UserCap, o.CapNote = g.UserBound, p.cfg.UserCaps()+"; counting the ledger's updates at the noise multipliers they were made with"
		case g.UserBounded:
			o.UserCap, o.CapNote = g.UserBound, p.cfg.UserCaps()
		default:
			o.CapNote = "none: a returning user's epsilon grows with every update they take part in"
		}
		v, err := statuspage.FromLedger(p.store, o)
		if err != nil {
			return statuspage.PolicyView{}, p.wrap(err)
		}
		if f := p.cfg.Fixed; f != nil { // its own guarantee, not the ledger's
			pr := f.Status()
			v.Fixed = &statuspage.FixedView{ID: f.ID(), Source: f.Source, Private: pr.Private, Epsilon: pr.Epsilon, Delta: pr.Delta,
				Unit: pr.Unit, LedgerSeq: pr.LedgerSeq, Label: pr.Label}
		}
		pp.cached, pp.cachedAt, pp.cachedG = &v, h, gp
	}
	v := *pp.cached
	if pp.curve != nil {
		v.Curve = pp.curve.View(v.Version)
	} else {
		v.Curve = statuspage.CurveView{Reason: pp.noCurve}
	}
	return v, nil
}

// statusRefresh is how often the status page reloads itself, in seconds.
const statusRefresh = 15

// StatusPage returns the status page's data now; nil without an ops
// server.
func (s *Service) StatusPage() (*statuspage.Page, error) {
	if s.page == nil {
		return nil, nil
	}
	page := &statuspage.Page{Title: "dprl agent status", Source: "the running agent", Build: buildinfo.Get(), Generated: time.Now(), Refresh: statusRefresh}
	for _, pp := range s.page.policies {
		v, err := pp.view()
		if err != nil {
			return nil, err
		}
		page.Policies = append(page.Policies, v)
	}
	var err error
	if page.Ops, err = statuspage.FromGatherer(s.reg); err != nil {
		return nil, err
	}
	if n := len(s.policies); n > 1 {
		page.OpsNote = "all models together"
	}
	if c := s.Status().Cluster; c != nil {
		page.Cluster = &statuspage.ClusterView{Role: c.Role, Name: c.Name, LogSeq: c.LogSeq, Holder: c.Holder, LeaseHeld: c.LeaseHeld,
			LeaseHolder: c.LeaseHolder, Partitions: c.Partitions, PartitionCount: c.PartitionCount}
	}
	return page, nil
}

// ServeHTTP serves the page, rendered in full before anything is written.
func (pg *statusPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	page, err := pg.s.StatusPage()
	if err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	if err := statuspage.Render(&b, page); err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", statuspage.ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}
