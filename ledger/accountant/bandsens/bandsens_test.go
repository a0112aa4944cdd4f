package bandsens

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSqrtCoefficients checks c_j = binom(2j, j)/4^j (from log-gamma) and
// that the first b coefficients square to the prefix-sum matrix up to row
// b - 1 (sum_{i<=n} c_i c_{n-i} = 1), the defining property of the square
// root, and ColumnNorm and Gram against their definitions.
func TestSqrtCoefficients(t *testing.T) {
	const b = 50
	c := SqrtCoefficients(b)
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	for j := range b {
		want := math.Exp(lg(float64(2*j+1)) - 2*lg(float64(j+1)) - float64(2*j)*math.Ln2)
		if math.Abs(c[j]-want) > 1e-12*want {
			t.Fatalf("c_%d = %v, want %v", j, c[j], want)
		}
		if j > 0 && !(c[j] < c[j-1]) {
			t.Fatalf("c_%d = %v not below c_%d = %v", j, c[j], j-1, c[j-1])
		}
		s := 0.0
		for i := 0; i <= j; i++ {
			s += c[i] * c[j-i]
		}
		if math.Abs(s-1) > 1e-12 {
			t.Fatalf("(C C)[%d][0] = %v, want 1", j, s)
		}
	}
	g := Gram(c)
	ss := 0.0
	for _, v := range c {
		ss += v * v
	}
	if math.Abs(ColumnNorm(c)-math.Sqrt(ss)) > 1e-15 || math.Abs(g[0]-ss) > 1e-12 {
		t.Fatalf("column norm %v, gram[0] %v, want %v", ColumnNorm(c), g[0], ss)
	}
	if got := SqrtCoefficients(1); len(got) != 1 || got[0] != 1 {
		t.Fatalf("one band: %v", got)
	}
}

// bruteSensitivitySq enumerates every set W of at most k columns of the n x
// n leading block of C, any two at least sep apart, and returns max ||C
// 1_W||^2 computed by the matrix-vector product (no Gram matrix).
func bruteSensitivitySq(coef []float64, n, k, sep int) float64 {
	best := 0.0
	var W []int
	var rec func(from int)
	rec = func(from int) {
		// Evaluate W.
		v := make([]float64, n)
		for _, col := range W {
			for j, c := range coef {
				if col+j < n {
					v[col+j] += c
				}
			}
		}
		ss := 0.0
		for _, x := range v {
			ss += x * x
		}
		best = max(best, ss)
		if len(W) == k {
			return
		}
		for col := from; col < n; col++ {
			W = append(W, col)
			rec(col + sep)
			W = W[:len(W)-1]
		}
	}
	rec(0)
	return best
}

// factors returns the factors the sensitivity tests try: the banded square
// root and seeded random non-negative coefficients (the programs must be
// exact for any C with C^T C >= 0, not only the square root).
func factors(rng *rand.Rand, b int) map[string][]float64 {
	r := make([]float64, b)
	for j := range r {
		r[j] = rng.Float64()
	}
	r[0] += 0.1
	return map[string][]float64{"sqrt": SqrtCoefficients(b), "random": r}
}

// TestSensitivityBruteForce checks the column program SensitivitySq
// against brute-force enumeration of every allowed W for n <= 14, several
// bandwidths, separations (below, at and above the bandwidth) and caps.
func TestSensitivityBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := 0
	for _, n := range []int{1, 2, 5, 9, 14} {
		for _, b := range []int{1, 2, 3, 5, 8, 14} {
			for name, coef := range factors(rng, b) {
				for _, sep := range []int{1, 2, 3, 5, 7, 15} {
					for _, k := range []int{1, 2, 3, 5, 14} {
						got, err := SensitivitySq(coef, n, k, sep)
						if err != nil {
							t.Fatal(err)
						}
						for m := 0; m <= k; m++ {
							want := bruteSensitivitySq(coef, n, m, sep)
							if math.Abs(got[m]-want) > 1e-12*max(want, 1) {
								t.Fatalf("%s n=%d b=%d sep=%d k=%d: program %v for m=%d, brute force %v", name, n, b, sep, k, got[m], m, want)
							}
						}
						cases++
					}
				}
			}
		}
	}
	t.Logf("%d cases", cases)
}

// TestStreamSensitivity checks the gap program of the unbounded stream:
// it equals the column program on a run long enough for every allowed W
// to fit with whole columns ((k-1) max(b, sep) + b releases: a gap of b
// or more is never better than b), and for sep >= b it is m ||c||^2: the
// columns of a b-separated set have disjoint supports, sens = sqrt(k) x
// the column norm.
func TestStreamSensitivity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, b := range []int{1, 2, 3, 5, 8} {
		for name, coef := range factors(rng, b) {
			for _, sep := range []int{1, 2, 3, 4, 6, 9} {
				for _, k := range []int{1, 2, 3, 5} {
					got, err := StreamSensitivitySq(coef, k, sep)
					if err != nil {
						t.Fatal(err)
					}
					n := (k-1)*max(b, sep) + b
					fin, err := SensitivitySq(coef, n, k, sep)
					if err != nil {
						t.Fatal(err)
					}
					g0 := Gram(coef)[0]
					for m := 0; m <= k; m++ {
						if math.Abs(got[m]-fin[m]) > 1e-12*max(fin[m], 1) {
							t.Fatalf("%s b=%d sep=%d k=%d m=%d: stream %v, column program on %d releases %v", name, b, sep, k, m, got[m], n, fin[m])
						}
						if sep >= b && math.Abs(got[m]-float64(m)*g0) > 1e-12*max(got[m], 1) {
							t.Fatalf("%s b=%d sep=%d m=%d: %v, want m ||c||^2 = %v", name, b, sep, m, got[m], float64(m)*g0)
						}
					}
				}
			}
		}
	}
	// Large caps with sep >= b cost O(k).
	c := SqrtCoefficients(1000)
	rho, err := Sensitivities(c, 1<<20, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{0, 1, 2, 10, 100, 1 << 20} {
		want := math.Sqrt(float64(m))
		if rho[m] < want || rho[m] > want*(1+2e-6) {
			t.Fatalf("rho(%d) = %v, want sqrt(m) = %v (within the slack, never below)", m, rho[m], want)
		}
	}
	// A separation far below the bandwidth is refused past the work bound.
	if _, err := StreamSensitivitySq(SqrtCoefficients(100), 10000, 1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("sep 1, 100 bands, 10000 participations: %v, want ErrTooLarge", err)
	}
}

// TestKalininLampertTheorem2 checks the programs against the published
// closed form: for a lower-triangular Toeplitz C with non-negative,
// non-increasing coefficients, the b-min-sep sensitivity with at most k
// participations among n releases is attained by participating at 0,
// sep, 2 sep, ... (Kalinin and Lampert 2024, "Banded Square Root Matrix
// Factorization for Differentially Private Model Training", Theorem 2),
// for separations below the bandwidth too.
func TestKalininLampertTheorem2(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	checked, skipped := 0, 0
	defer func() { t.Logf("%d cases checked, %d too large for the column program", checked, skipped) }()
	for _, n := range []int{7, 16, 30} {
		for _, b := range []int{2, 4, 9, 30} {
			dec := make([]float64, b)
			for j := range dec {
				dec[j] = rng.Float64()
			}
			// Non-increasing.
			for j := b - 2; j >= 0; j-- {
				dec[j] += dec[j+1]
			}
			for name, coef := range map[string][]float64{"sqrt": SqrtCoefficients(b), "decreasing": dec} {
				for _, sep := range []int{2, 3, 5, 8, 31} {
					for _, k := range []int{1, 2, 4, 10} {
						got, err := SensitivitySq(coef, n, k, sep)
						if errors.Is(err, ErrTooLarge) && sep < b/3 {
							skipped++ // too many states for the column program
							continue
						}
						if err != nil {
							t.Fatal(err)
						}
						checked++
						v := make([]float64, n)
						for i := 0; i < k && i*sep < n; i++ {
							for j, c := range coef {
								if r := i*sep + j; r < n {
									v[r] += c
								}
							}
						}
						want := 0.0
						for _, x := range v {
							want += x * x
						}
						if math.Abs(got[k]-want) > 1e-12*want {
							t.Fatalf("%s n=%d b=%d sep=%d k=%d: program %v, Theorem 2 %v", name, n, b, sep, k, got[k], want)
						}
					}
				}
			}
		}
	}
}

// TestSensitivityHandExamples checks values worked by hand: two bands
// (1, 1/2) with adjacent participations allowed: W = {0, 1} gives C 1_W =
// (1, 3/2, 1/2), norm^2 7/2; the identity gives sqrt(k); the full square
// root with k = n (every release) gives the norm of the row sums of C.
func TestSensitivityHandExamples(t *testing.T) {
	got, err := StreamSensitivitySq([]float64{1, 0.5}, 2, 1)
	if err != nil || math.Abs(got[2]-3.5) > 1e-15 || math.Abs(got[1]-1.25) > 1e-15 {
		t.Fatalf("two bands, adjacent: %v %v, want [0 1.25 3.5]", got, err)
	}
	got, err = SensitivitySq([]float64{1}, 9, 4, 1)
	if err != nil || got[4] != 4 {
		t.Fatalf("identity: %v %v", got, err)
	}
	c := SqrtCoefficients(6)
	got, err = SensitivitySq(c, 6, 6, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for r := range 6 {
		s := 0.0
		for j := 0; j <= r; j++ {
			s += c[j]
		}
		want += s * s
	}
	if math.Abs(got[6]-want) > 1e-12 {
		t.Fatalf("all participations: %v, want %v", got[6], want)
	}
}

// TestSensitivityArguments checks the refused arguments.
func TestSensitivityArguments(t *testing.T) {
	for _, tc := range []struct {
		coef    []float64
		k, sep  int
		wantErr string
	}{
		{nil, 1, 1, "bands"},
		{[]float64{0, 1}, 1, 1, "c_0"},
		{[]float64{1, -0.1}, 1, 1, "c_1"},
		{[]float64{1, math.NaN()}, 1, 1, "c_1"},
		{[]float64{1}, -1, 1, "participations"},
		{[]float64{1}, 1, 0, "separation"},
	} {
		_, err := StreamSensitivitySq(tc.coef, tc.k, tc.sep)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v k=%d sep=%d: %v, want an error naming %q", tc.coef, tc.k, tc.sep, err, tc.wantErr)
		}
	}
}

func ExampleSensitivities() {
	rho, _ := Sensitivities(SqrtCoefficients(8), 4, 8)
	fmt.Printf("%.4f %.4f\n", rho[1], rho[4])
	// Output: 1.0000 2.0000
}
