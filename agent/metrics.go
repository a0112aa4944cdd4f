package agent

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the agent's Prometheus metrics, served on /metrics.
//
// They are operational telemetry for the operator, not releases: they carry
// no epsilon and are not differentially private. They count protocol events
// as they happen (requests and their latency, refusals by wire error code,
// sessions opened, closed and open, sessions queued for learning or set
// aside for a scheduling reason, releases), which the operator, who runs
// the transport and receives every message in the clear, can count anyway.
// Polled around one session, they can reveal that session's timing and
// number of steps, so /metrics must be reachable by the operator only,
// like the NATS traffic and the session logs (bind the ops server to
// loopback or an operator network).
//
// No metric is computed from what a session contains: no returns, rewards,
// observations, actions, gradient norms or per-session lengths, and no
// count of sessions the learner treated differently because of their
// content (a session whose local update fails counts like any other; see
// updater.update). Set-aside reasons are staleness (the session's policy
// version), the learner queue being full, and user caps and ledger
// availability.
type Metrics struct {
	ActLatency        prometheus.Histogram
	ActErrors         *prometheus.CounterVec
	SessionsOpened    prometheus.Counter
	SessionsClosed    prometheus.Counter
	SessionsOpen      prometheus.Gauge
	SessionsIdle      prometheus.Counter
	SessionsQueued    prometheus.Counter
	SessionsUsed      prometheus.Counter
	SessionsDiscarded *prometheus.CounterVec
	Releases          prometheus.Counter
	ReleaseErrors     prometheus.Counter
}

// opsHelp marks every metric's help text: operational, not private.
const opsHelp = " Operational metric for the operator: not differentially private, not a release."

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ActLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dprl_act_seconds", Help: "Time to serve one act request inside the agent." + opsHelp,
			Buckets: prometheus.ExponentialBuckets(1e-6, 2, 20)}),
		ActErrors:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_act_errors_total", Help: "Act requests refused, by wire error code." + opsHelp}, []string{"error"}),
		SessionsOpened:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_opened_total", Help: "Sessions started." + opsHelp}),
		SessionsClosed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_closed_total", Help: "Sessions ended, truncated or expired." + opsHelp}),
		SessionsOpen:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_sessions_open", Help: "Sessions open now." + opsHelp}),
		SessionsIdle:      prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_idle_total", Help: "Sessions closed by the idle timeout." + opsHelp}),
		SessionsQueued:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_queued_total", Help: "Closed sessions queued for learning." + opsHelp}),
		SessionsUsed:      prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_used_total", Help: "Sessions that took part in a released update." + opsHelp}),
		SessionsDiscarded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_sessions_discarded_total", Help: "Sessions not learned from, by scheduling reason (staleness, queue, user caps)." + opsHelp}, []string{"reason"}),
		Releases:          prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_releases_total", Help: "Policy versions released." + opsHelp}),
		ReleaseErrors:     prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_release_errors_total", Help: "Releases that failed to write." + opsHelp}),
	}
	if reg != nil {
		reg.MustRegister(m.ActLatency, m.ActErrors, m.SessionsOpened, m.SessionsClosed, m.SessionsOpen, m.SessionsIdle, m.SessionsQueued,
			m.SessionsUsed, m.SessionsDiscarded, m.Releases, m.ReleaseErrors)
	}
	return m
}

// errorLabel names an Act error for the metrics.
func errorLabel(err error) string {
	for _, e := range []struct {
		err   error
		label string
	}{{ErrObsDim, "obs_dim"}, {ErrNonFinite, "non_finite"}, {ErrUnknownSession, "unknown_session"}, {ErrBadRequest, "bad_request"},
		{ErrSessionLimit, "session_limit"}, {ErrStepLimit, "step_limit"}, {ErrShuttingDown, "shutting_down"}} {
		if errors.Is(err, e.err) {
			return e.label
		}
	}
	return "internal"
}

func (m *Metrics) observeAct(d time.Duration, err error) {
	m.ActLatency.Observe(d.Seconds())
	if err != nil {
		m.ActErrors.WithLabelValues(errorLabel(err)).Inc()
	}
}
