package agent

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the agent's Prometheus metrics.
type Metrics struct {
	ActLatency        prometheus.Histogram
	ActErrors         *prometheus.CounterVec
	SessionsOpened    prometheus.Counter
	SessionsClosed    prometheus.Counter
	SessionsIdle      prometheus.Counter
	SessionsQueued    prometheus.Counter
	SessionsUsed      prometheus.Counter
	SessionsDiscarded *prometheus.CounterVec
	Releases          prometheus.Counter
	ReleaseErrors     prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ActLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dprl_act_seconds", Help: "Time to serve one act request inside the agent.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 2, 20)}),
		ActErrors:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_act_errors_total", Help: "Act requests refused, by error."}, []string{"error"}),
		SessionsOpened:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_opened_total", Help: "Sessions started."}),
		SessionsClosed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_closed_total", Help: "Sessions ended, truncated or expired."}),
		SessionsIdle:      prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_idle_total", Help: "Sessions closed by the idle timeout."}),
		SessionsQueued:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_queued_total", Help: "Finished sessions queued for learning."}),
		SessionsUsed:      prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_used_total", Help: "Sessions that took part in a released update."}),
		SessionsDiscarded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_sessions_discarded_total", Help: "Sessions not learned from, by reason."}, []string{"reason"}),
		Releases:          prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_releases_total", Help: "Policy versions released."}),
		ReleaseErrors:     prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_release_errors_total", Help: "Releases that failed to write."}),
	}
	if reg != nil {
		reg.MustRegister(m.ActLatency, m.ActErrors, m.SessionsOpened, m.SessionsClosed, m.SessionsIdle, m.SessionsQueued,
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
