package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricValue(t *testing.T) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"l"})
	c.WithLabelValues("a").Add(3)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	g.Set(-2)
	prometheus.NewRegistry().MustRegister(g) // registered elsewhere too
	for _, tt := range []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"labelled counter", c.WithLabelValues("a"), 3},
		{"gauge", g, -2},
		{"empty vector", prometheus.NewCounterVec(prometheus.CounterOpts{Name: "e_total", Help: "e"}, []string{"l"}), 0},
	} {
		if got := MetricValue(t, tt.c); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
