package accountant

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// svtComposedByHand is the advanced composition bound of DataRelease
// recomputed independently of the package (Dwork & Roth 2014, Theorem 3.20,
// applied to T mechanisms that are (2 eps', delta1/(2T))-DP, Sharma et al.,
// Theorem 5.3, at slack delta1/2): no padding.
func svtComposedByHand(ep, delta1 float64, T int) float64 {
	x, tf := 2*ep, float64(T)
	return math.Sqrt(2*tf*math.Log(2/delta1))*x + tf*x*(math.Exp(x)-1)
}

// TestSVTSplitComposes checks that the charged (eps1, delta1) is an upper
// bound of what the T-fold composition of the per-query mechanism gives, for
// a grid of settings that includes ones where the paper's closed-form split
// is not valid, and that the solve is tight where it applies.
func TestSVTSplitComposes(t *testing.T) {
	const L = 500
	solvedSeen, paperSeen := 0, 0
	for _, T := range []int{1, 2, 5, 20, 25, 50, 100, 1000, 100000} {
		for _, delta1 := range []float64{1e-9, 1e-5, 3.3e-4, 1e-3, 0.1, 0.5} {
			for _, eps1 := range []float64{0.01, 0.5, 1, 5, 7.5, 10, 12.5, 20, 25, 30, 50, 100, 1000} {
				name := fmt.Sprintf("T=%d/delta1=%g/eps1=%g", T, delta1, eps1)
				p, err := SVTSplit(eps1, delta1, T, L, 0.02)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got := svtComposedByHand(p.EpsPrime, delta1, T)
				if !(got <= eps1) {
					t.Errorf("%s: eps' %v composes to %v > eps1", name, p.EpsPrime, got)
				}
				if !(p.Composed <= eps1) || math.Abs(p.Composed-got) > 1e-8*got {
					t.Errorf("%s: reported composition %v, recomputed %v, eps1 %v", name, p.Composed, got, eps1)
				}
				if pd := p.DeltaPrime * float64(L) * float64(T); pd > delta1/2 {
					t.Errorf("%s: the per-query deltas sum to %v > delta1/2 = %v", name, pd, delta1/2)
				}
				paper := eps1 / math.Sqrt(32*float64(T)*math.Log(2/delta1))
				if svtComposedByHand(paper, delta1, T)*(1+1e-8) < eps1 {
					// The paper's split is valid (with room for rounding): kept.
					paperSeen++
					if p.Solved || relErr(p.EpsPrime, paper) > 1e-15 {
						t.Errorf("%s: eps' %v (solved %v), want the paper's %v", name, p.EpsPrime, p.Solved, paper)
					}
					continue
				}
				if svtComposedByHand(paper, delta1, T) > eps1 {
					solvedSeen++
					if !p.Solved || !(p.EpsPrime < paper) {
						t.Errorf("%s: the paper's eps' %v is invalid, got eps' %v (solved %v)", name, paper, p.EpsPrime, p.Solved)
					}
					// Not needlessly loose.
					if got < eps1*(1-1e-6) {
						t.Errorf("%s: solved eps' %v composes to %v, more than 1e-6 below eps1", name, p.EpsPrime, got)
					}
				}
			}
		}
	}
	if solvedSeen == 0 || paperSeen == 0 {
		t.Errorf("grid covers %d solved and %d paper settings, want both", solvedSeen, paperSeen)
	}
}

// TestSVTSplitLargeEps pins the setting where the paper's split is not
// valid: T = 100, delta1 = 1e-3, eps1 = 30.
func TestSVTSplitLargeEps(t *testing.T) {
	paper := 30 / math.Sqrt(32*100*math.Log(2/1e-3))
	if c := svtComposedByHand(paper, 1e-3, 100); math.Abs(c-33.05) > 0.01 {
		t.Fatalf("the paper's eps' composes to %v, want 33.05", c)
	}
	p, err := SVTSplit(30, 1e-3, 100, 500, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if c := svtComposedByHand(p.EpsPrime, 1e-3, 100); !(c <= 30) || c < 30*(1-1e-8) || !p.Solved {
		t.Errorf("eps' %v composes to %v (solved %v), want just below 30", p.EpsPrime, c, p.Solved)
	}
	// The threshold follows the solved eps'.
	if relErr(p.QueryScale, 4/p.EpsPrime) > 1e-15 || relErr(p.CMin, 1/(1-math.Exp(-p.EpsPrime))) > 1e-12 {
		t.Errorf("%+v", p)
	}
}

// TestSVTSplitMonotone checks that eps' grows with eps1 through the point
// where the paper's split stops being valid (no jump either way).
func TestSVTSplitMonotone(t *testing.T) {
	prev := 0.0
	for eps1 := 20.0; eps1 <= 32; eps1 += 0.05 {
		p, err := SVTSplit(eps1, 1e-3, 100, 500, 0.02)
		if err != nil {
			t.Fatal(err)
		}
		if p.EpsPrime < prev {
			t.Errorf("eps1 %v: eps' %v below %v at a smaller eps1", eps1, p.EpsPrime, prev)
		}
		if prev > 0 && p.EpsPrime > prev*1.01 {
			t.Errorf("eps1 %v: eps' jumps from %v to %v", eps1, prev, p.EpsPrime)
		}
		prev = p.EpsPrime
	}
}

func TestSVTComposedEpsilonErrors(t *testing.T) {
	for name, call := range map[string]func() error{
		"eps'=0":   func() error { _, err := SVTComposedEpsilon(0, 1e-3, 10); return err },
		"delta1=1": func() error { _, err := SVTComposedEpsilon(0.1, 1, 10); return err },
		"T=0":      func() error { _, err := SVTComposedEpsilon(0.1, 1e-3, 0); return err },
	} {
		if err := call(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
}
