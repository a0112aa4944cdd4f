package statuspage

import (
	"fmt"
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// OpsView is the agent's operational metrics as its Prometheus registry
// holds them (read from the collectors, never counted again here).
type OpsView struct {
	// Sessions are the session counters and gauges, in a fixed order.
	Sessions []Bar
	// Discarded are the sessions set aside, by reason; Refused the
	// sessions refused at opening or closed for want of memory, by limit.
	Discarded, Refused []Bar
	// Latency is the act latency histogram: the requests per bucket.
	Latency []Bar
	// ActRequests is the number of act requests served, P50 and P99 the
	// upper bounds of the buckets holding those quantiles (seconds; NaN
	// without requests).
	ActRequests uint64
	P50, P99    float64
	// NATSConnected is the dprl_nats_connected gauge.
	NATSConnected bool
}

// sessionSeries are the metrics of the sessions chart: name and bar label.
var sessionSeries = []struct{ name, label string }{
	{"dprl_sessions_opened_total", "opened"},
	{"dprl_sessions_open", "open now"},
	{"dprl_sessions_closed_total", "closed"},
	{"dprl_sessions_queued_total", "queued"},
	{"dprl_sessions_used_total", "used"},
	{"dprl_sessions_idle_total", "idle timeout"},
	{"dprl_sessions_lifetime_total", "lifetime"},
}

// FromGatherer reads the agent's metrics from g (its registry). Series of
// one metric that differ in labels other than the one charted (several
// policies) are summed.
func FromGatherer(g prometheus.Gatherer) (*OpsView, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("statuspage: gather metrics: %w", err)
	}
	byName := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	v := &OpsView{}
	for _, s := range sessionSeries {
		v.Sessions = append(v.Sessions, Bar{Label: s.label, Value: sum(byName[s.name])})
	}
	v.Discarded = byLabel(byName["dprl_sessions_discarded_total"], "reason")
	v.Refused = byLabel(byName["dprl_admission_refused_total"], "limit")
	v.NATSConnected = sum(byName["dprl_nats_connected"]) > 0
	v.Latency, v.ActRequests, v.P50, v.P99 = latency(byName["dprl_act_seconds"])
	return v, nil
}

// value is a counter's or gauge's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

// sum adds a family's series (0 for a missing family).
func sum(mf *dto.MetricFamily) float64 {
	var s float64
	for _, m := range mf.GetMetric() {
		s += value(m)
	}
	return s
}

// byLabel sums a family's series per value of label, in the order the
// registry gives them (sorted by label values).
func byLabel(mf *dto.MetricFamily, label string) []Bar {
	var out []Bar
	idx := map[string]int{}
	for _, m := range mf.GetMetric() {
		l := ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				l = lp.GetValue()
			}
		}
		i, ok := idx[l]
		if !ok {
			i = len(out)
			idx[l] = i
			out = append(out, Bar{Label: l})
		}
		out[i].Value += value(m)
	}
	return out
}

// latency turns the act latency histogram's cumulative buckets into the
// requests per bucket (summed over series), and the buckets of the median
// and the 99th percentile.
func latency(mf *dto.MetricFamily) (bars []Bar, n uint64, p50, p99 float64) {
	p50, p99 = math.NaN(), math.NaN()
	var bounds []float64
	cum := map[float64]uint64{}
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		n += h.GetSampleCount()
		for _, b := range h.GetBucket() {
			ub := b.GetUpperBound()
			if _, ok := cum[ub]; !ok {
				bounds = append(bounds, ub)
			}
			cum[ub] += b.GetCumulativeCount()
		}
	}
	var prev uint64
	for _, ub := range bounds {
		c := cum[ub]
		bars = append(bars, Bar{Label: "≤" + seconds(ub), Value: float64(c - prev)})
		if math.IsNaN(p50) && n > 0 && float64(c) >= 0.5*float64(n) {
			p50 = ub
		}
		if math.IsNaN(p99) && n > 0 && float64(c) >= 0.99*float64(n) {
			p99 = ub
		}
		prev = c
	}
	if n > prev {
		bars = append(bars, Bar{Label: "more", Value: float64(n - prev)})
		if math.IsNaN(p99) && n > 0 {
			p99 = math.Inf(1)
		}
		if math.IsNaN(p50) && n > 0 {
			p50 = math.Inf(1)
		}
	}
	return bars, n, p50, p99
}

// seconds prints a duration in seconds with a unit: "4µs", "1.05ms".
func seconds(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "∞"
	case s < 1e-3:
		return strconv.FormatFloat(s*1e6, 'g', 3, 64) + "µs"
	case s < 1:
		return strconv.FormatFloat(s*1e3, 'g', 3, 64) + "ms"
	default:
		return strconv.FormatFloat(s, 'g', 3, 64) + "s"
	}
}

// Panels are the operational panels: sessions, set aside and refused,
// act latency.
func (v *OpsView) Panels() []Panel {
	ops := Privacy{}
	conn := "up"
	if !v.NATSConnected {
		conn = "down"
	}
	sessions := Panel{ID: "agent-sessions", Title: "Sessions", Privacy: ops, Facts: []Fact{{"NATS connection", conn}},
		Figures: []Figure{{ID: "agent-sessions", Title: "Sessions since the agent started", YLabel: "sessions", IntY: true, Bars: v.Sessions}}}
	aside := Panel{ID: "agent-aside", Title: "Sessions not learned from", Privacy: ops,
		Note: "Set aside for a scheduling reason (their timing, queues and users' caps, never their content), and refused at opening by a limit.",
		Figures: []Figure{
			{ID: "agent-discarded", Title: "Set aside, by reason", YLabel: "sessions", IntY: true, Bars: v.Discarded},
			{ID: "agent-refused", Title: "Refused, by limit", YLabel: "sessions", IntY: true, Bars: v.Refused},
		}}
	lat := Panel{ID: "agent-latency", Title: "Act latency", Privacy: ops, Facts: []Fact{{"act requests", fmt.Sprint(v.ActRequests)}}}
	if v.ActRequests > 0 {
		lat.Facts = append(lat.Facts, Fact{"median", "≤ " + seconds(v.P50)}, Fact{"99th percentile", "≤ " + seconds(v.P99)})
	}
	bars := v.Latency
	// Leave out the empty buckets at both ends.
	lo, hi := 0, len(bars)
	for lo < hi && bars[lo].Value == 0 {
		lo++
	}
	for hi > lo && bars[hi-1].Value == 0 {
		hi--
	}
	lat.Figures = []Figure{{ID: "agent-latency", Title: "Act requests by time to serve (inside the agent)", YLabel: "requests", IntY: true, Bars: bars[lo:hi]}}
	return []Panel{sessions, aside, lat}
}
