package service

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"dprl/internal/buildinfo"
	"dprl/ledger/accountant"
	"dprl/stream"
)

// CheckSummary is the report of a configuration that checked out (dprl
// agent --check-config): the policy's spec, learner parameters, per-session
// epsilon and reward bound, one line per model with models, and then what
// a user of every model can reach (Composed).
func (c ServiceConfig) CheckSummary() string {
	if len(c.Models) == 0 {
		return "configuration OK: " + c.Agent.Describe() + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "configuration OK: %d models\n", len(c.Models))
	for _, m := range c.Models {
		fmt.Fprintf(&b, "  model %s (subjects %s.%s.v1.*): %s\n", m.Name, c.prefix(), m.Name, m.Agent.Describe())
	}
	b.WriteString("  " + Composed(c.Models) + "\n")
	return b.String()
}

func (c ServiceConfig) prefix() string { return cmp.Or(c.Prefix, stream.DefaultPrefix) }

// Composed says what a user served by every model can reach: each model's
// per-user bound (Config.UserEpsilonBound) is an (epsilon_i, delta_i)
// guarantee over that model's updates, and the models' mechanisms together
// are (sum epsilon_i, sum delta_i)-DP (basic composition, Dwork & Roth,
// "The Algorithmic Foundations of Differential Privacy", Theorem 3.16).
// Without a per-user cap in some model there is no such bound.
//
// Composed is of the settings alone (--check-config reads no ledger); the
// running service composes the bounds read from each model's ledger
// (Guarantee.UserBound), which a restart with another noise multiplier can
// raise.
func Composed(models []ModelConfig) string {
	parts := make([]userBoundPart, len(models))
	for i, m := range models {
		ue, ok, err := m.Agent.UserEpsilonBound()
		parts[i] = userBoundPart{name: m.Name, eps: ue, delta: m.Agent.Delta, ok: ok && err == nil}
	}
	return composed(parts)
}

// userBoundPart is one model's per-user bound, for composed.
type userBoundPart struct {
	name       string
	eps, delta float64
	ok         bool
}

// composed is Composed of the models' bounds.
func composed(parts []userBoundPart) string {
	var eps, delta float64
	var uncapped []string
	for _, m := range parts {
		if !m.ok {
			uncapped = append(uncapped, m.name)
			continue
		}
		eps, delta = eps+m.eps, delta+m.delta
	}
	if len(uncapped) > 0 {
		return fmt.Sprintf("a user of every model: no bound (no per-user cap in %s)", strings.Join(uncapped, ", "))
	}
	return fmt.Sprintf("a user of every model: epsilon at most %s at delta %s (the sum of the models' per-user bounds: basic composition)", accountant.FormatEpsilon(eps), accountant.FormatEpsilon(delta))
}

// Announce logs that the service is serving and prints to w, for the
// operator, each policy's per-session epsilon (analytic Gaussian) and
// per-user bound (a warning is logged for a policy without a per-user
// cap); with models, also Composed; and the embedded server's security.
func (s *Service) Announce(w io.Writer) error {
	multi := len(s.cfg.Models) > 0
	var bounds []userBoundPart
	if multi {
		fmt.Fprintf(w, "dprl agent: serving %d models on %s\n", len(s.policies), s.NATSURL())
	}
	for _, p := range s.policies {
		c := p.cfg
		if c.Fixed != nil {
			s.announceFixed(w, p)
			continue
		}
		// Every number is the ledger's guarantee (Guarantee): releases
		// made before a restart at other settings count at their own.
		g := p.agent.Guarantee()
		bounds = append(bounds, userBoundPart{name: p.name, eps: g.UserBound, delta: c.Delta, ok: g.UserBounded})
		p.log.Info().Str("build", buildinfo.Get().String()).Str("nats", s.NATSURL()).Str("http", s.OpsAddr()).Uint64("version", p.agent.Version()).
			Float64("epsilon_per_session", accountant.CeilEpsilon(g.Epsilon)).Float64("delta", g.Delta).Msg("agent serving")
		where := "dprl agent: serving on " + s.NATSURL()
		if multi {
			where = fmt.Sprintf("dprl agent: model %s on %s.v1.*", p.name, p.prefix)
		}
		sessionRaised, userRaised := g.HistoryRaises(c)
		caps := c.UserCaps()
		if userRaised {
			caps += "; counting the ledger's updates at the noise multipliers they were made with"
		}
		switch {
		case g.UserBounded && multi:
			fmt.Fprintf(w, "dprl agent: model %s: per-user epsilon at most %s at delta %g (%s)\n", p.name, accountant.FormatEpsilon(g.UserBound), c.Delta, caps)
		case g.UserBounded:
			fmt.Fprintf(w, "dprl agent: per-user epsilon at most %s at delta %g (%s)\n", accountant.FormatEpsilon(g.UserBound), c.Delta, caps)
		default:
			p.log.Warn().Msg("no per-user cap (--user-epsilon 0 --max-updates-per-user 0): a returning user's epsilon grows with every update they take part in")
		}
		if sessionRaised {
			fmt.Fprintf(w, "%s; per-session epsilon %s at delta %g (the worst of the ledger's %d releases; a release made now: %s at delta %g, analytic Gaussian, z = %.6g%s)\n",
				where, accountant.FormatEpsilon(g.Epsilon), g.Delta, g.Releases, accountant.FormatEpsilon(g.Next), c.Delta, c.Policy.DP.NoiseMultiplier, c.NoiseNote())
		} else {
			fmt.Fprintf(w, "%s; per-session epsilon %s at delta %g (analytic Gaussian, z = %.6g%s)\n", where, accountant.FormatEpsilon(g.Epsilon), g.Delta, c.Policy.DP.NoiseMultiplier, c.NoiseNote())
		}
	}
	if multi {
		fmt.Fprintf(w, "dprl agent: %s\n", composed(bounds))
	}
	if m := s.NATSSecurityMode(); m != "" {
		fmt.Fprintf(w, "dprl agent: embedded NATS %s\n", m)
	}
	return nil
}

// announceFixed is Announce for a policy serving a fixed policy: the
// snapshot served (file and CRC), and that nothing is learned or spent.
func (s *Service) announceFixed(w io.Writer, p *Policy) {
	f := p.cfg.Fixed
	od, ad, dims := f.Dims()
	ev := p.log.Info()
	if !f.Private() {
		ev = p.log.Warn()
	}
	ev = ev.Str("build", buildinfo.Get().String()).Str("nats", s.NATSURL()).Str("http", s.OpsAddr()).Uint64("version", 0).
		Str("fixed_policy", f.Source).Str("fixed_policy_id", f.ID()).Int("obs_dim", od).Int("action_dim", ad).
		Bool("private", f.Private()).Str("guarantee", f.Label())
	if f.Private() {
		ev = ev.Float64("epsilon", accountant.CeilEpsilon(f.Provenance.Epsilon)).Float64("delta", f.Provenance.Delta).
			Str("unit", string(f.Provenance.Unit)).Uint64("ledger_entry", f.Provenance.LedgerSeq)
	}
	ev.Msg("agent serving a fixed policy: no learning, no privacy budget spent, no ledger entries")
	where := "dprl agent: serving on " + s.NATSURL()
	if p.name != "" {
		where = fmt.Sprintf("dprl agent: model %s on %s.v1.*", p.name, p.prefix)
	}
	fmt.Fprintf(w, "%s the fixed policy %s (%s, %s, %s): %s; %s\n", where, f.Source, f.ID(), f.Kind(), dims, f.Label(), f.ServingNote())
}
