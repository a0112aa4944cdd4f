package demo

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestLatencies(t *testing.T) {
	var l latencies
	if q := l.quantiles(0.5, 0.99); q[0] != 0 || q[1] != 0 || l.count() != 0 {
		t.Fatalf("empty: %v %d", q, l.count())
	}
	for i := 1; i <= 100; i++ {
		l.add(time.Duration(i) * time.Millisecond)
	}
	if q := l.quantiles(0, 0.5, 0.99, 1); q[0] != 1 || q[1] != 51 || q[2] != 100 || q[3] != 100 || l.count() != 100 {
		t.Errorf("1..100 ms: %v, count %d", q, l.count())
	}
	// Past the window the oldest are replaced and every act still counts.
	for range latencyWindow {
		l.add(1500 * time.Microsecond)
	}
	if q := l.quantiles(0, 1); q[0] != 1.5 || q[1] != 1.5 || l.count() != 100+latencyWindow {
		t.Errorf("after the window: %v, count %d", q, l.count())
	}
}

func TestSimReturns(t *testing.T) {
	var r simReturns
	if m, n := r.mean(); m != 0 || n != 0 {
		t.Fatalf("empty: %v %d", m, n)
	}
	r.add(2)
	r.add(4)
	if m, n := r.mean(); m != 3 || n != 2 {
		t.Errorf("two: %v %d", m, n)
	}
	for i := range 150 { // the last 100: 50..149
		r.add(float64(i))
	}
	if m, n := r.mean(); m != 99.5 || n != 100 {
		t.Errorf("last 100: %v %d", m, n)
	}
}

// TestReleaseSignal: a waiter wakes at the release that makes its
// condition true, not before, and leaves when its context ends.
func TestReleaseSignal(t *testing.T) {
	r := newReleaseSignal()
	var version atomic.Int64
	done := make(chan error, 1)
	go func() { done <- r.wait(context.Background(), func() bool { return version.Load() >= 2 }) }()
	for v := int64(1); v <= 2; v++ {
		select {
		case err := <-done:
			t.Fatalf("woke at version %d: %v", version.Load(), err)
		case <-time.After(20 * time.Millisecond):
		}
		version.Store(v)
		r.notify()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not woken by the release")
	}
	// A condition already true returns at once; a cancelled wait returns
	// the context's error.
	if err := r.wait(context.Background(), func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.wait(ctx, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
