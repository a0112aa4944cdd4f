package gemm

import (
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/floats"
)

// Register tile of the micro-kernel (rows of A by columns of B) and cache
// blocking. kc x nr of B (16 KiB) stays in L1 while a panel of A streams past
// it; mc x kc of A (192 KiB) stays in L2; kc x nc of B (2 MiB) in L3.
const (
	mr = 6
	nr = 8
	kc = 256
	mc = 96 // a multiple of mr
	nc = 1024
)

// workspace holds the packed panels of one call.
type workspace struct {
	a []float64 // mc x kc, mr-row panels
	b []float64 // kc x nc, nr-column panels
}

var pool = sync.Pool{New: func() any { return new(workspace) }}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// Dgemm computes C = alpha op(A) op(B) + beta C, where op(X) is X or X^T as
// tA and tB say, op(A) is m x k, op(B) is k x n and C is m x n, all row-major
// with leading dimensions lda, ldb and ldc. It has the semantics of the BLAS
// (and of gonum's Dgemm, including its panics on bad arguments): when beta is
// zero C is not read, so NaNs in it do not propagate; when alpha is zero or k
// is zero A and B are not read. It runs on the calling goroutine and
// allocates nothing in steady state.
func Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	checkArgs(tA, tB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	if small(n, k) {
		direct(tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	ws := pool.Get().(*workspace)
	gemm(ws, tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	pool.Put(ws)
}

// small reports whether a product is too thin for packing to pay: an inner
// or output dimension of at most 2 (a value head, two actions) or a tiny
// layer leaves most of a 6 x 8 tile empty. It does not look at m, so that a
// row of C is computed the same way whatever the number of rows (see
// Dgemm).
func small(n, k int) bool {
	return n <= 2 || k <= 2 || n*k <= 32
}

// direct computes C = alpha op(A) op(B) + beta C without packing, as rows of
// C updated by axpys of rows of op(B) (B not transposed) or as dot products
// of rows (B transposed), both on gonum's assembly level-1 kernels.
func direct(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	scale(m, n, beta, c, ldc)
	for i := range m {
		crow := c[i*ldc : i*ldc+n]
		if !transB {
			for p := range k {
				ai := i*lda + p
				if transA {
					ai = p*lda + i
				}
				if av := a[ai]; av != 0 {
					floats.AddScaled(crow, alpha*av, b[p*ldb:p*ldb+n])
				}
			}
			continue
		}
		if !transA {
			arow := a[i*lda : i*lda+k]
			for j := range crow {
				crow[j] += alpha * floats.Dot(arow, b[j*ldb:j*ldb+k])
			}
			continue
		}
		for j := range crow {
			brow := b[j*ldb : j*ldb+k]
			var s float64
			for p, bv := range brow {
				s += a[p*lda+i] * bv
			}
			crow[j] += alpha * s
		}
	}
}

// scale sets C = beta C (C = 0 when beta is zero, whatever C held).
func scale(m, n int, beta float64, c []float64, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// directMax bounds the elements (rows times leading dimension) of an
// operand read in place instead of packed: A^T and B already hold the
// kernel's panels as rows (6 or 8 consecutive values per step of k), and
// for operands this small, which stay in L1 and L2, the copy costs more than
// the strided reads it saves (measured by BenchmarkDgemmShapes).
var directMax = 1 << 14

func gemm(ws *workspace, transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	// A is read in place when stored transposed (k x m: row p holds column p
	// of op(A)); B when not transposed (row p of B is row p of op(B)).
	directA := transA && k*lda <= directMax
	directB := !transB && k*ldb <= directMax
	ws.a = grow(ws.a, min(mc, roundUp(m, mr))*min(kc, k))
	ws.b = grow(ws.b, min(kc, k)*min(nc, roundUp(n, nr)))
	var tile [mr * nr]float64
	for j0 := 0; j0 < n; j0 += nc {
		nb := min(nc, n-j0)
		for p0 := 0; p0 < k; p0 += kc {
			kb := min(kc, k-p0)
			// The first block of k applies the caller's beta; later ones add.
			bet := beta
			if p0 > 0 {
				bet = 1
			}
			packB(ws.b, transB, directB, b, ldb, p0, kb, j0, nb)
			for i0 := 0; i0 < m; i0 += mc {
				mb := min(mc, m-i0)
				packA(ws.a, transA, directA, a, lda, i0, mb, p0, kb)
				for jr := 0; jr < nb; jr += nr {
					nrr := min(nr, nb-jr)
					bp, sb := ws.b[jr*kb:jr*kb+nr*kb], nr
					if directB && nrr == nr {
						bp, sb = b[p0*ldb+j0+jr:], ldb
					}
					for ir := 0; ir < mb; ir += mr {
						mrr := min(mr, mb-ir)
						ap, sa := ws.a[ir*kb:ir*kb+mr*kb], mr
						if directA && mrr == mr {
							ap, sa = a[p0*lda+i0+ir:], lda
						}
						off := (i0+ir)*ldc + j0 + jr
						if mrr == mr && nrr == nr {
							kernel(kb, ap, sa, bp, sb, c[off:], ldc, alpha, bet)
							continue
						}
						kernel(kb, ap, sa, bp, sb, tile[:], nr, 1, 0)
						for i := 0; i < mrr; i++ {
							row := c[off+i*ldc : off+i*ldc+nrr]
							t := tile[i*nr : i*nr+nrr]
							if bet == 0 {
								for j := range row {
									row[j] = alpha * t[j]
								}
							} else {
								for j := range row {
									row[j] = alpha*t[j] + bet*row[j]
								}
							}
						}
					}
				}
			}
		}
	}
}

func roundUp(x, r int) int { return (x + r - 1) / r * r }

// packA copies rows i0:i0+mb, columns p0:p0+kb of op(A) into dst as panels
// of mr rows: panel q holds, for each p, the mr values op(A)[i0+q mr+i][p0+p]
// (zero past row mb). With direct (A^T read in place) only a partial last
// panel is packed.
func packA(dst []float64, trans, direct bool, a []float64, lda, i0, mb, p0, kb int) {
	for q := 0; q < mb; q += mr {
		rows := min(mr, mb-q)
		if direct && rows == mr {
			continue
		}
		d := dst[q*kb : q*kb+mr*kb]
		if !trans {
			if rows == mr {
				r0 := a[(i0+q)*lda+p0:]
				r1 := a[(i0+q+1)*lda+p0:]
				r2 := a[(i0+q+2)*lda+p0:]
				r3 := a[(i0+q+3)*lda+p0:]
				r4 := a[(i0+q+4)*lda+p0:]
				r5 := a[(i0+q+5)*lda+p0:]
				r0, r1, r2, r3, r4, r5 = r0[:kb], r1[:kb], r2[:kb], r3[:kb], r4[:kb], r5[:kb]
				for p := range kb {
					e := (*[mr]float64)(d[p*mr:])
					e[0], e[1], e[2], e[3], e[4], e[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
				}
				continue
			}
			for p := range kb {
				e := d[p*mr : p*mr+mr]
				for i := range rows {
					e[i] = a[(i0+q+i)*lda+p0+p]
				}
				clear(e[rows:])
			}
			continue
		}
		// op(A) = A^T: A is k x m, row p0+p of A holds op(A)'s column.
		if rows == mr {
			for p := range kb {
				*(*[mr]float64)(d[p*mr:]) = *(*[mr]float64)(a[(p0+p)*lda+i0+q:])
			}
			continue
		}
		for p := range kb {
			e := d[p*mr : p*mr+mr]
			src := a[(p0+p)*lda+i0+q:]
			copy(e[:rows], src[:rows])
			clear(e[rows:])
		}
	}
}

// packB copies rows p0:p0+kb, columns j0:j0+nb of op(B) into dst as panels
// of nr columns: panel q holds, for each p, the nr values op(B)[p0+p][j0+q nr+j]
// (zero past column nb). With direct (B read in place) only a partial last
// panel is packed.
func packB(dst []float64, trans, direct bool, b []float64, ldb, p0, kb, j0, nb int) {
	for q := 0; q < nb; q += nr {
		cols := min(nr, nb-q)
		if direct && cols == nr {
			continue
		}
		d := dst[q*kb : q*kb+nr*kb]
		if !trans {
			if cols == nr {
				for p := range kb {
					*(*[nr]float64)(d[p*nr:]) = *(*[nr]float64)(b[(p0+p)*ldb+j0+q:])
				}
				continue
			}
			for p := range kb {
				e := d[p*nr : p*nr+nr]
				src := b[(p0+p)*ldb+j0+q:]
				copy(e[:cols], src[:cols])
				clear(e[cols:])
			}
			continue
		}
		// op(B) = B^T: B is n x k, row j0+q+j of B holds op(B)'s column.
		if cols == nr {
			r0 := b[(j0+q)*ldb+p0:]
			r1 := b[(j0+q+1)*ldb+p0:]
			r2 := b[(j0+q+2)*ldb+p0:]
			r3 := b[(j0+q+3)*ldb+p0:]
			r4 := b[(j0+q+4)*ldb+p0:]
			r5 := b[(j0+q+5)*ldb+p0:]
			r6 := b[(j0+q+6)*ldb+p0:]
			r7 := b[(j0+q+7)*ldb+p0:]
			r0, r1, r2, r3, r4, r5, r6, r7 = r0[:kb], r1[:kb], r2[:kb], r3[:kb], r4[:kb], r5[:kb], r6[:kb], r7[:kb]
			for p := range kb {
				e := (*[nr]float64)(d[p*nr:])
				e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p], r6[p], r7[p]
			}
			continue
		}
		for j := range cols {
			src := b[(j0+q+j)*ldb+p0:]
			src = src[:kb]
			for p, v := range src {
				d[p*nr+j] = v
			}
		}
		for p := range kb {
			clear(d[p*nr+cols : p*nr+nr])
		}
	}
}

// kernelGo is the portable micro-kernel: with ap holding, at p sa, the mr
// values of column p of an A panel and bp, at p sb, the nr values of row p
// of a B panel (sa = mr and sb = nr when packed as above), it sets the
// mr x nr tile at c (leading dimension ldc) to alpha ap bp + beta c, not
// reading c when beta is zero.
func kernelGo(kb int, ap []float64, sa int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64) {
	var acc [mr * nr]float64
	for p := range kb {
		bv := bp[p*sb : p*sb+nr : p*sb+nr]
		av := ap[p*sa : p*sa+mr : p*sa+mr]
		for i, ai := range av {
			r := acc[i*nr : i*nr+nr : i*nr+nr]
			r[0] += ai * bv[0]
			r[1] += ai * bv[1]
			r[2] += ai * bv[2]
			r[3] += ai * bv[3]
			r[4] += ai * bv[4]
			r[5] += ai * bv[5]
			r[6] += ai * bv[6]
			r[7] += ai * bv[7]
		}
	}
	for i := range mr {
		row := c[i*ldc : i*ldc+nr]
		t := acc[i*nr : i*nr+nr]
		if beta == 0 {
			for j := range row {
				row[j] = alpha * t[j]
			}
		} else {
			for j := range row {
				row[j] = alpha*t[j] + beta*row[j]
			}
		}
	}
}

// checkArgs panics as gonum's Dgemm does on an invalid call.
func checkArgs(tA, tB blas.Transpose, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	switch tA {
	case blas.NoTrans, blas.Trans, blas.ConjTrans:
	default:
		panic(badTranspose)
	}
	switch tB {
	case blas.NoTrans, blas.Trans, blas.ConjTrans:
	default:
		panic(badTranspose)
	}
	if m < 0 {
		panic(mLT0)
	}
	if n < 0 {
		panic(nLT0)
	}
	if k < 0 {
		panic(kLT0)
	}
	aTrans := tA == blas.Trans || tA == blas.ConjTrans
	if aTrans {
		if lda < max(1, m) {
			panic(badLdA)
		}
	} else if lda < max(1, k) {
		panic(badLdA)
	}
	bTrans := tB == blas.Trans || tB == blas.ConjTrans
	if bTrans {
		if ldb < max(1, k) {
			panic(badLdB)
		}
	} else if ldb < max(1, n) {
		panic(badLdB)
	}
	if ldc < max(1, n) {
		panic(badLdC)
	}
	if m == 0 || n == 0 {
		return
	}
	if aTrans {
		if len(a) < (k-1)*lda+m {
			panic(shortA)
		}
	} else if len(a) < (m-1)*lda+k {
		panic(shortA)
	}
	if bTrans {
		if len(b) < (n-1)*ldb+k {
			panic(shortB)
		}
	} else if len(b) < (k-1)*ldb+n {
		panic(shortB)
	}
	if len(c) < (m-1)*ldc+n {
		panic(shortC)
	}
}

// The panic messages of gonum's BLAS (blas/gonum/errors.go).
const (
	badTranspose = "blas: illegal transpose"
	mLT0         = "blas: m < 0"
	nLT0         = "blas: n < 0"
	kLT0         = "blas: k < 0"
	badLdA       = "blas: bad leading dimension of A"
	badLdB       = "blas: bad leading dimension of B"
	badLdC       = "blas: bad leading dimension of C"
	shortA       = "blas: insufficient length of a"
	shortB       = "blas: insufficient length of b"
	shortC       = "blas: insufficient length of c"
)
