package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricValue is the value of the first sample of c (a counter, a gauge,
// or one labelled child of a vector), 0 when it has none; it registers c
// in a registry of its own, so c may be registered elsewhere too.
func MetricValue(tb testing.TB, c prometheus.Collector) float64 {
	tb.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		tb.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	if len(mfs) == 0 || len(mfs[0].GetMetric()) == 0 {
		return 0
	}
	m := mfs[0].GetMetric()[0]
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}
