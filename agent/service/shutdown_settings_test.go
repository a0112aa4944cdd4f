package service_test

import (
	"testing"
	"time"
)

// TestSettingsShutdownGrace: the flag's 0 means no grace, which
// ServiceConfig spells as a negative value (its 0 is the default).
func TestSettingsShutdownGrace(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{{0, -1}, {-time.Second, -1}, {5 * time.Second, 5 * time.Second}} {
		s := baseSettings(t)
		s.ShutdownGrace = c.in
		sc, err := s.ServiceConfig()
		if err != nil || sc.ShutdownGrace != c.want {
			t.Errorf("ShutdownGrace %v: %v (%v), want %v", c.in, sc.ShutdownGrace, err, c.want)
		}
	}
}
