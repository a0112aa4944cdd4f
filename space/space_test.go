package space

import (
	"errors"
	"math"
	"testing"
)

func TestCheckAction(t *testing.T) {
	disc := Space{Kind: Discrete, N: 3}
	box := Space{Kind: Box, Low: []float64{-2, -2}, High: []float64{2, 2}}
	tests := []struct {
		name  string
		s     Space
		a     Action
		valid bool
	}{
		{"discrete first", disc, Action{Index: 0}, true},
		{"discrete last", disc, Action{Index: 2}, true},
		{"discrete negative", disc, Action{Index: -1}, false},
		{"discrete past end", disc, Action{Index: 3}, false},
		{"discrete with vector", disc, Action{Index: 1, Vec: []float64{}}, false},
		{"box in bounds", box, Action{Vec: []float64{1, -1}}, true},
		{"box outside bounds is not clipped here", box, Action{Vec: []float64{5, -5}}, true},
		{"box short", box, Action{Vec: []float64{1}}, false},
		{"box nil", box, Action{}, false},
		{"box NaN", box, Action{Vec: []float64{math.NaN(), 0}}, false},
		{"box +Inf", box, Action{Vec: []float64{0, math.Inf(1)}}, false},
		{"box -Inf", box, Action{Vec: []float64{math.Inf(-1), 0}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAction(tt.s, tt.a)
			if tt.valid && err != nil {
				t.Fatalf("CheckAction = %v, want nil", err)
			}
			if !tt.valid && !errors.Is(err, ErrBadAction) {
				t.Fatalf("CheckAction = %v, want ErrBadAction", err)
			}
		})
	}
}

func TestDimAndKind(t *testing.T) {
	tests := []struct {
		s    Space
		dim  int
		kind string
	}{
		{Space{Kind: Discrete, N: 5}, 1, "discrete"},
		{Space{Kind: Box, Low: make([]float64, 4), High: make([]float64, 4)}, 4, "box"},
	}
	for _, tt := range tests {
		if got := tt.s.Dim(); got != tt.dim {
			t.Errorf("%v space Dim = %d, want %d", tt.s.Kind, got, tt.dim)
		}
		if got := tt.s.Kind.String(); got != tt.kind {
			t.Errorf("Kind.String = %q, want %q", got, tt.kind)
		}
	}
	if got := Kind(7).String(); got != "SpaceKind(7)" {
		t.Errorf("Kind(7).String = %q", got)
	}
}
