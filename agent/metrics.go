package agent

import (
	"errors"
	"fmt"
	"time"

	"dprl/internal/buildinfo"
	"dprl/stream"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the agent's Prometheus metrics, served on /metrics.
//
// They are operational telemetry for the operator, not releases: no epsilon
// covers them, they count protocol events only (no metric is computed from
// what a session contains), and /metrics must be reachable by the operator
// only. Set-aside reasons are the fixed label set DiscardReasons, and every
// labelled series exists, at 0, from the start. Why this is safe to serve to
// the operator: docs/privacy.md, section 9.
type Metrics struct {
	ActLatency prometheus.Histogram
	// ActErrors and EndErrors count every coded error reply, by wire code,
	// decoding failures included (the transport counts them; see
	// ObserveErrorReply).
	ActErrors *prometheus.CounterVec
	EndErrors *prometheus.CounterVec
	// NoReply counts requests that arrived without a reply subject, by
	// request ("act": dropped unhandled; "end": handled, not answered).
	NoReply *prometheus.CounterVec
	// AdmissionRefused counts sessions refused at opening, and sessions
	// closed for want of memory, by limit: open_sessions, user,
	// connection, memory.
	AdmissionRefused  *prometheus.CounterVec
	SessionsOpened    prometheus.Counter
	SessionsClosed    prometheus.Counter
	SessionsOpen      prometheus.Gauge
	SessionsIdle      prometheus.Counter
	SessionsExpired   prometheus.Counter
	SessionMemory     prometheus.Gauge
	LearnerQueue      prometheus.Gauge
	SessionsQueued    prometheus.Counter
	SessionsUsed      prometheus.Counter
	SessionsDiscarded *prometheus.CounterVec
	Releases          prometheus.Counter
	ReleaseErrors     prometheus.Counter
	// SessionLogDropped counts closed sessions the session log did not
	// receive, by reason: queue_full (the log's writer fell behind by
	// more than its bounded queue), write_failed, closed (the session
	// closed after the log was), unsupported (the log's format cannot
	// hold it: a multi-step session in a DSJSON log). SessionLogQueue is the number of records
	// waiting for the writer.
	SessionLogDropped *prometheus.CounterVec
	SessionLogQueue   prometheus.Gauge
	// NATSConnected is 1 while the agent's NATS connection is up.
	NATSConnected prometheus.Gauge
	// PolicyVersion is the policy version served to new sessions, and
	// LedgerReleases the number of policy versions the ledger holds (all
	// runs of the agent on this data directory; Releases counts this
	// process's). Both are public: every release is announced.
	PolicyVersion  prometheus.Gauge
	LedgerReleases prometheus.Gauge
	// SessionEpsilon is the per-session epsilon of a release at
	// SessionDelta: the worst over the ledger's releases (at the settings
	// each was made with) and one made now (Guarantee): a public
	// parameter of the guarantee. Both 0 with a fixed policy.
	SessionEpsilon prometheus.Gauge
	SessionDelta   prometheus.Gauge
	// UserEpsilonMax is the largest composed epsilon of any user in the
	// ledger, at the agent's delta (the worst user against the cap),
	// read from the ledger at start and after each release.
	UserEpsilonMax prometheus.Gauge
	// Cluster are the metrics of a cluster role (--role learn or serve):
	// always created, registered only by RegisterCluster, for the role
	// that uses them.
	Cluster ClusterMetrics
}

// ClusterMetrics are the metrics of a cluster's roles (docs/privacy.md,
// section 13). Like the others they count protocol events, never what a
// session contains, and are for the operator only. A process registers
// the learner's or the replica's (RegisterCluster), and LogSeq in both.
type ClusterMetrics struct {
	// LogSeq is the position of the ledger of record this process's
	// ledger holds up to (both roles): the log position it follows.
	LogSeq prometheus.Gauge

	// The learner's. LeaseHeld is 1 while it holds the writer lease;
	// LeaseAcquisitions counts the leases it took (each followed by its
	// writer entry), LeaseRenewFailures the renewals that failed (a
	// leader election, a server down, or the lease lost). AppendsFenced
	// counts its appends the log refused because another writer's entry
	// held the position (the fence). UpdatesConsumed counts the update
	// deliveries it fetched from the queue (a redelivery counts again),
	// UpdatesDropped the updates it acknowledged without using them, by
	// reason (updateDropReasons), and LogReleases its releases appended
	// to the ledger of record.
	LeaseHeld          prometheus.Gauge
	LeaseAcquisitions  prometheus.Counter
	LeaseRenewFailures prometheus.Counter
	AppendsFenced      prometheus.Counter
	UpdatesConsumed    prometheus.Counter
	UpdatesDropped     *prometheus.CounterVec
	LogReleases        prometheus.Counter

	// The serving replica's. UpdatesPublished counts the clipped session
	// updates it published to the queue, PublishErrors those the queue
	// did not acknowledge (the session is lost to learning).
	// PartitionsServed is the number of session partitions it serves;
	// PartitionsTaken counts the partitions it took, PartitionsReleased
	// those it stopped serving, by reason (partitionReleaseReasons).
	UpdatesPublished   prometheus.Counter
	PublishErrors      prometheus.Counter
	PartitionsServed   prometheus.Gauge
	PartitionsTaken    prometheus.Counter
	PartitionsReleased *prometheus.CounterVec
}

// The label values of dprl_cluster_updates_dropped_total: a malformed
// update (its session is not a session key, or it does not decode), then
// the set-aside reasons a learner meets, user_cap joining the per-user
// ones (user_update_cap, user_epsilon_cap, user_min_separation) and other
// any reason not listed (none today).
var updateDropReasons = []string{"malformed", "session_used", "stale", "user_cap", "ledger_unavailable", "other"}

// The label values of dprl_cluster_partitions_released_total: rebalance
// (given up to a replica that joined), lost (its lease was taken, or not
// renewed for two thirds of its TTL), stopped (the process shut down).
var partitionReleaseReasons = []string{"rebalance", "lost", "stopped"}

// updateDropReason is a set-aside reason's label in
// dprl_cluster_updates_dropped_total.
func updateDropReason(r discardReason) string {
	switch r {
	case reasonSessionUsed, reasonStale, reasonLedgerUnavailable:
		return r.label()
	case reasonUserUpdateCap, reasonUserEpsilonCap, reasonUserSeparation:
		return "user_cap"
	}
	return "other"
}

// clusterHelp ends the help of the metrics registered for one role only.
const clusterHelp = " Registered by a cluster's %s only."

func newClusterMetrics() ClusterMetrics {
	learn, serve := fmt.Sprintf(clusterHelp, "learner (--role learn)"), fmt.Sprintf(clusterHelp, "serving replica (--role serve)")
	c := ClusterMetrics{
		LogSeq:             prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_cluster_log_seq", Help: "Position of the ledger of record this process's ledger holds up to (the log position it follows). Registered by both cluster roles." + opsHelp}),
		LeaseHeld:          prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_cluster_lease_held", Help: "1 while this learner holds the writer lease, else 0." + learn + opsHelp}),
		LeaseAcquisitions:  prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_cluster_lease_acquisitions_total", Help: "Writer leases this learner took (each followed by its writer entry in the ledger of record)." + learn + opsHelp}),
		LeaseRenewFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_cluster_lease_renew_failures_total", Help: "Renewals of the writer lease that failed (retried; three periods without one, or the lease taken, stop the learner)." + learn + opsHelp}),
		AppendsFenced:      prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_cluster_appends_fenced_total", Help: "Appends to the ledger of record refused because another writer's entry held the position (the fence)." + learn + opsHelp}),
		UpdatesConsumed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_cluster_updates_consumed_total", Help: "Session update deliveries fetched from the update queue (a redelivery counts again)." + learn + opsHelp}),
		UpdatesDropped:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_cluster_updates_dropped_total", Help: "Session updates acknowledged without being used, by reason (malformed, session_used, stale, user_cap, ledger_unavailable, other)." + learn + opsHelp}, []string{"reason"}),
		LogReleases:        prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_cluster_log_releases_total", Help: "Releases this learner appended to the ledger of record." + learn + opsHelp}),
		UpdatesPublished:   prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_cluster_updates_published_total", Help: "Clipped session updates published to the update queue." + serve + opsHelp}),
		PublishErrors:      prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_cluster_update_publish_errors_total", Help: "Session updates the update queue did not acknowledge (not learned from)." + serve + opsHelp}),
		PartitionsServed:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_cluster_partitions_served", Help: "Session partitions this replica serves now." + serve + opsHelp}),
		PartitionsTaken:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_cluster_partitions_taken_total", Help: "Session partitions this replica took (at start, from a dead replica once its lease expired, or to even the share)." + serve + opsHelp}),
		PartitionsReleased: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_cluster_partitions_released_total", Help: "Session partitions this replica stopped serving, by reason (rebalance, lost, stopped)." + serve + opsHelp}, []string{"reason"}),
	}
	for _, r := range updateDropReasons {
		c.UpdatesDropped.WithLabelValues(r)
	}
	for _, r := range partitionReleaseReasons {
		c.PartitionsReleased.WithLabelValues(r)
	}
	return c
}

// RegisterCluster registers the metrics of a cluster role with reg: the
// learner's (learner true) or the serving replica's, and the log position.
// A process of role all registers none of them.
func (m *Metrics) RegisterCluster(reg prometheus.Registerer, learner bool) {
	c := &m.Cluster
	reg.MustRegister(c.LogSeq)
	if learner {
		reg.MustRegister(c.LeaseHeld, c.LeaseAcquisitions, c.LeaseRenewFailures, c.AppendsFenced, c.UpdatesConsumed, c.UpdatesDropped, c.LogReleases)
		return
	}
	reg.MustRegister(c.UpdatesPublished, c.PublishErrors, c.PartitionsServed, c.PartitionsTaken, c.PartitionsReleased)
}

// Discard reasons: the label values of dprl_sessions_discarded_total, a
// fixed set, each with the text End returns to the client (EndResult.Reason,
// the wire's reason field) for the reasons decided when a session closes.
// The per-user reasons (user_update_cap, user_epsilon_cap,
// user_min_separation) are decided by batch formation, after the reply, and
// are never sent to a client: they tell of the user's history.
type discardReason int

const (
	reasonStale discardReason = iota
	reasonLearnerQueueFull
	reasonUserQueueFull
	reasonConnectionQueueFull
	reasonUserUpdateCap
	reasonUserEpsilonCap
	reasonLedgerUnavailable
	reasonUserSeparation
	reasonFixedPolicy
	reasonSessionUsed
	numDiscardReasons
)

// discardReasons are each reason's metric label and client text.
var discardReasons = [numDiscardReasons]struct{ label, text string }{
	reasonStale:               {"stale", "stale: served by an old policy version"},
	reasonLearnerQueueFull:    {"learner_queue_full", "learner queue full"},
	reasonUserQueueFull:       {"user_queue_full", "user queue full"},
	reasonConnectionQueueFull: {"connection_queue_full", "connection queue full"},
	reasonUserUpdateCap:       {"user_update_cap", "user reached max_updates_per_user"},
	reasonUserEpsilonCap:      {"user_epsilon_cap", "user reached the epsilon cap"},
	reasonLedgerUnavailable:   {"ledger_unavailable", "ledger unavailable"},
	reasonUserSeparation:      {"user_min_separation", "user took part in one of the last band updates (bandmf noise)"},
	reasonFixedPolicy:         {"fixed_policy", "a fixed policy is served: sessions are not learned from"},
	reasonSessionUsed:         {"session_used", "a cluster learner's update of a session a release already used (redelivered)"},
}

func (r discardReason) label() string { return discardReasons[r].label }
func (r discardReason) text() string  { return discardReasons[r].text }

// DiscardReasons returns the label values of dprl_sessions_discarded_total,
// in a fixed order.
func DiscardReasons() []string {
	out := make([]string, numDiscardReasons)
	for i, r := range discardReasons {
		out[i] = r.label
	}
	return out
}

// The label values of the other labelled metrics, pre-initialised to 0 by
// NewMetrics so that every series exists before its first event.
var (
	admissionLimits   = []string{"open_sessions", "user", "connection", "memory"}
	requestOps        = []string{"act", "end"}
	sessionLogDropped = []string{"queue_full", "write_failed", "closed", "unsupported"}
)

// opsHelp marks every metric's help text: operational, not private.
const opsHelp = " Operational metric for the operator: not differentially private, not a release."

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ActLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dprl_act_seconds", Help: "Time to serve one act request inside the agent." + opsHelp,
			Buckets: prometheus.ExponentialBuckets(1e-6, 2, 20)}),
		ActErrors:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_act_errors_total", Help: "Act requests answered with an error, by wire error code (decoding failures included)." + opsHelp}, []string{"error"}),
		EndErrors:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_end_errors_total", Help: "End requests answered with an error, by wire error code (decoding failures included)." + opsHelp}, []string{"error"}),
		NoReply:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_requests_without_reply_total", Help: "Requests without a reply subject (act: dropped unhandled; end: handled, not answered)." + opsHelp}, []string{"request"}),
		AdmissionRefused:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_admission_refused_total", Help: "Sessions refused at opening, or closed for want of memory, by limit (open_sessions, user, connection, memory)." + opsHelp}, []string{"limit"}),
		SessionsExpired:   prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_lifetime_total", Help: "Sessions closed by the session lifetime bound." + opsHelp}),
		SessionMemory:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_session_memory_bytes", Help: "Bytes charged to the session memory budget (open sessions and finished ones waiting for an update)." + opsHelp}),
		LearnerQueue:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_learner_queue_sessions", Help: "Finished sessions waiting for an update." + opsHelp}),
		SessionsOpened:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_opened_total", Help: "Sessions started." + opsHelp}),
		SessionsClosed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_closed_total", Help: "Sessions ended, truncated or expired." + opsHelp}),
		SessionsOpen:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_sessions_open", Help: "Sessions open now." + opsHelp}),
		SessionsIdle:      prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_idle_total", Help: "Sessions closed by the idle timeout." + opsHelp}),
		SessionsQueued:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_queued_total", Help: "Closed sessions queued for learning." + opsHelp}),
		SessionsUsed:      prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_sessions_used_total", Help: "Sessions that took part in a released update." + opsHelp}),
		SessionsDiscarded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_sessions_discarded_total", Help: "Sessions not learned from, by scheduling reason (stale, learner_queue_full, user_queue_full, connection_queue_full, user_update_cap, user_epsilon_cap, ledger_unavailable, user_min_separation)." + opsHelp}, []string{"reason"}),
		Releases:          prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_releases_total", Help: "Policy versions released." + opsHelp}),
		ReleaseErrors:     prometheus.NewCounter(prometheus.CounterOpts{Name: "dprl_release_errors_total", Help: "Releases that failed to write." + opsHelp}),
		SessionLogDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dprl_session_log_dropped_total", Help: "Closed sessions not written to the session log, by reason (queue_full, write_failed, closed, unsupported: the log's format cannot hold the session, e.g. a multi-step one in a DSJSON log)." + opsHelp}, []string{"reason"}),
		SessionLogQueue:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_session_log_queue_sessions", Help: "Closed sessions waiting to be written to the session log." + opsHelp}),
		NATSConnected:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_nats_connected", Help: "1 while the agent's NATS connection is up, else 0." + opsHelp}),
		PolicyVersion:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_policy_version", Help: "Policy version served to new sessions." + opsHelp}),
		LedgerReleases:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_releases", Help: "Policy versions released in the ledger, by every run on this data directory." + opsHelp}),
		SessionEpsilon:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_session_epsilon", Help: "Per-session epsilon of a release at dprl_session_delta (analytic Gaussian mechanism): the worst over the ledger's releases and one made now at the current settings." + opsHelp}),
		SessionDelta:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_session_delta", Help: "Delta of the per-session and per-user guarantees." + opsHelp}),
		UserEpsilonMax:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_user_epsilon_max", Help: "Largest composed epsilon of any user in the ledger at dprl_session_delta (the worst user against the cap)." + opsHelp}),
		Cluster:           newClusterMetrics(),
	}
	for _, c := range stream.Codes() {
		m.ActErrors.WithLabelValues(string(c))
		m.EndErrors.WithLabelValues(string(c))
	}
	for _, op := range requestOps {
		m.NoReply.WithLabelValues(op)
	}
	for _, l := range admissionLimits {
		m.AdmissionRefused.WithLabelValues(l)
	}
	for _, r := range discardReasons {
		m.SessionsDiscarded.WithLabelValues(r.label)
	}
	for _, r := range sessionLogDropped {
		m.SessionLogDropped.WithLabelValues(r)
	}
	if reg != nil {
		b := buildinfo.Get()
		build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_build_info", Help: "Always 1; the labels name the running build." + opsHelp,
			ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "go": b.Go}})
		build.Set(1)
		reg.MustRegister(build)
		reg.MustRegister(m.ActLatency, m.ActErrors, m.EndErrors, m.NoReply, m.AdmissionRefused, m.SessionsOpened, m.SessionsClosed,
			m.SessionsOpen, m.SessionsIdle, m.SessionsExpired, m.SessionMemory, m.LearnerQueue, m.SessionsQueued,
			m.SessionsUsed, m.SessionsDiscarded, m.Releases, m.ReleaseErrors, m.SessionLogDropped, m.SessionLogQueue, m.NATSConnected,
			m.PolicyVersion, m.LedgerReleases, m.SessionEpsilon, m.SessionDelta, m.UserEpsilonMax)
	}
	return m
}

func (m *Metrics) observeAct(d time.Duration, err error) {
	m.ActLatency.Observe(d.Seconds())
	if err == nil {
		return
	}
	var ae *admissionError
	switch {
	case errors.As(err, &ae):
		m.AdmissionRefused.WithLabelValues(ae.limit).Inc()
	case errors.Is(err, ErrMemoryLimit):
		m.AdmissionRefused.WithLabelValues("memory").Inc()
	}
}

// ObserveErrorReply counts one error reply of the transport (op "act" or
// "end"); it is stream.ServerConfig.OnErrorReply.
func (m *Metrics) ObserveErrorReply(op string, code stream.Code) {
	if op == "end" {
		m.EndErrors.WithLabelValues(string(code)).Inc()
		return
	}
	m.ActErrors.WithLabelValues(string(code)).Inc()
}

// ObserveNoReply counts one request without a reply subject; it is
// stream.ServerConfig.OnNoReply.
func (m *Metrics) ObserveNoReply(op string) { m.NoReply.WithLabelValues(op).Inc() }
