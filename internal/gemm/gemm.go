package gemm

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/floats"
)

// Cache blocking. A kc-row panel of B (16 KiB at 8 columns, 32 KiB at 16)
// stays in L1 while a panel of A streams past it; mc x kc of A (192 KiB)
// stays in L2; kc x nc of B (2 MiB) in L3. The blocking of k is the same for
// every micro-kernel, so that every kernel sums each element of C in the
// same order (see microKernel).
const (
	kc = 256
	mc = 96 // a multiple of every kernel's mr
	nc = 1024
)

// microKernel is a register-blocked kernel and its tile: with ap holding, at
// p sa + i rs, row i's value of column p of an A panel and bp, at p sb, the
// nr values of row p of a B panel (sa = mr, rs = 1 and sb = nr when packed),
// run sets the mr x nr tile at c (leading dimension ldc) to alpha ap bp +
// beta s, s the tile at src with leading dimension lds (C itself, or a bias
// row repeated with lds 0), not reading src when beta is zero, and then to
// its ReLU when relu is set; it does so for tiles tiles down a column of C,
// tile t's A at ap[t astep:] and its C and source rows t mr further down. A
// kernel without rowStride takes only rs = 1.
// tails are kernels of fewer rows (increasing) for the last tile of a
// matrix whose rows are not a multiple of mr.
//
// The assembly kernels accumulate each element of the tile in one lane, one
// fused multiply-add per step of k in the order of k, and finish with
// fma(beta, c, alpha acc) (fused is true): whatever their tile, they give
// every element of C the same bits, so a seeded run does not depend on
// which of them the CPU selects.
type microKernel struct {
	name      string
	mr, nr    int
	fused     bool
	rowStride bool
	run       kernelFunc
	tails     []*microKernel
}

// kernelFunc is a micro-kernel's computation (microKernel).
type kernelFunc func(kb int, ap []float64, sa, rs int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64, src []float64, lds int, relu bool, tiles, astep int)

// tailFor returns the kernel for a last tile of rows rows: the smallest of
// kern's tails that holds them, or kern itself.
func (kern *microKernel) tailFor(rows int) *microKernel {
	for _, t := range kern.tails {
		if t.mr >= rows {
			return t
		}
	}
	return kern
}

// epilogue says what a product adds to alpha op(A) op(B): beta times the
// matrix at src with leading dimension lds (C itself for Dgemm, a bias row
// with lds 0 for DgemmBias), then the ReLU when relu is set.
type epilogue struct {
	src  []float64
	lds  int
	relu bool
}

// mrMax and nrMax bound every kernel's tile (the scratch tile's size).
const mrMax, nrMax = 8, 16

// goKernel is the portable kernel (kernelGo).
var goKernel = &microKernel{name: "go 6x8", mr: 6, nr: 8, run: kernelGo}

// active is the kernel Dgemm uses, chosen once from the CPU's features
// (kernel_amd64.go); tests switch it to compare kernels on one machine.
var active = bestKernel()

// Kernel names the micro-kernel in use: "avx512 8x16", "avx2-fma 6x8" or
// "go 6x8".
func Kernel() string { return active.name }

// workspace holds the packed panels of one call.
type workspace struct {
	a []float64 // mc x kc, mr-row panels
	b []float64 // kc x nc, nr-column panels
	// tile takes an edge tile (here, not on the stack: the kernel is
	// called through a func value, so a stack tile would escape).
	tile [mrMax * nrMax]float64
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
	gemm(ws, active, tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, epilogue{src: c, lds: ldc})
	pool.Put(ws)
}

// DgemmBias computes a dense layer's forward pass: C = f(alpha op(A) op(B) +
// 1 bias), bias (len n) added to every row, f the ReLU (x < 0 becomes 0;
// NaN and -0 stay, as internal/vecmath's ReLU) when relu is set and the
// identity otherwise. It gives the bits of copying bias into every row of C,
// calling Dgemm with beta 1 and applying the ReLU, without the copy and the
// second pass: the kernels add the bias and take the maximum in their
// epilogue, on the tile while it is in registers. Arguments as Dgemm's; C
// is not read.
func DgemmBias(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, bias []float64, relu bool, c []float64, ldc int) {
	checkArgs(tA, tB, m, n, k, a, lda, b, ldb, c, ldc)
	if len(bias) != n {
		panic(badBias)
	}
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 || small(n, k) {
		for i := range m {
			copy(c[i*ldc:i*ldc+n], bias)
		}
		if alpha != 0 && k != 0 {
			direct(tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, 1, c, ldc)
		}
		if relu {
			for i := range m {
				reluRow(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	ws := pool.Get().(*workspace)
	gemm(ws, active, tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, 1, c, ldc, epilogue{src: bias, relu: relu})
	pool.Put(ws)
}

// reluRow sets x[j] = 0 where x[j] < 0 (NaN and -0 stay): the kernels'
// VMAXPD (0 > x ? 0 : x).
func reluRow(x []float64) {
	for j, v := range x {
		if v < 0 {
			x[j] = 0
		}
	}
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
// kernel's panels as rows (mr or nr consecutive values per step of k), A
// holds them as mr rows the assembly kernels read with a stride, and
// for operands this small, which stay in L1 and L2, the copy costs more than
// the strided reads it saves (measured by BenchmarkDgemmShapes).
var directMax = 1 << 14

// directRowsMax is directMax for A read in place by rows (the assembly
// kernels): its rows' cache lines each serve eight steps of k, and
// reading A in place pays up to 2 MiB (SAC's 256 x 256 layers on 256 rows:
// 92-98 -> 98-100 updates/s, DP-SGD (b) 12% faster; BenchmarkDgemm n = 512
// unchanged).
var directRowsMax = 1 << 18

func gemm(ws *workspace, kern *microKernel, transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int, ep epilogue) {
	// A is read in place when stored transposed (k x m: row p holds column p
	// of op(A)); B when not transposed (row p of B is row p of op(B)).
	directA := transA && k*lda <= directMax
	// A not transposed is read in place, a row at a time, by a kernel that
	// takes a row stride.
	rowsA := !transA && kern.rowStride && m*lda <= directRowsMax
	directA = directA || rowsA
	directB := !transB && k*ldb <= directMax
	mr, nr, run := kern.mr, kern.nr, kern.run
	ws.a = grow(ws.a, min(mc, roundUp(m, mr))*min(kc, k))
	ws.b = grow(ws.b, min(kc, k)*min(nc, roundUp(n, nr)))
	tile := &ws.tile
	for j0 := 0; j0 < n; j0 += nc {
		nb := min(nc, n-j0)
		for p0 := 0; p0 < k; p0 += kc {
			kb := min(kc, k-p0)
			// The first block of k applies the caller's beta to the
			// epilogue's source; later ones add to C; the last applies
			// the ReLU.
			bet, src, lds := beta, ep.src, ep.lds
			if p0 > 0 {
				bet, src, lds = 1, c, ldc
			}
			relu := ep.relu && p0+kb == k
			packB(ws.b, nr, transB, directB, b, ldb, p0, kb, j0, nb)
			for i0 := 0; i0 < m; i0 += mc {
				mb := min(mc, m-i0)
				// With A read by rows, a last tile of exactly a tail
				// kernel's rows is read in place too (its panel would be a
				// strided gather).
				rest := mb % mr
				restInPlace := rowsA && rest > 0 && kern.tailFor(rest).mr == rest
				packA(ws.a, mr, transA, directA, restInPlace, a, lda, i0, mb, p0, kb)
				for jr := 0; jr < nb; jr += nr {
					nrr := min(nr, nb-jr)
					bp, sb := ws.b[jr*kb:jr*kb+nr*kb], nr
					if directB && nrr == nr {
						bp, sb = b[p0*ldb+j0+jr:], ldb
					}
					// The whole tiles of this column of the block in one call.
					ir0 := 0
					if full := mb / mr; nrr == nr && full > 0 {
						ap, sa, rs, astep := ws.a, mr, 1, mr*kb
						switch {
						case rowsA:
							ap, sa, rs, astep = a[i0*lda+p0:], 1, lda, mr*lda
						case directA:
							ap, sa, astep = a[p0*lda+i0:], lda, mr
						}
						off, soff := i0*ldc+j0+jr, i0*lds+j0+jr
						run(kb, ap, sa, rs, bp, sb, c[off:], ldc, alpha, bet, src[soff:], lds, relu, full, astep)
						ir0 = full * mr
					}
					for ir := ir0; ir < mb; ir += mr {
						mrr := min(mr, mb-ir)
						ap, sa, rs := ws.a[ir*kb:ir*kb+mr*kb], mr, 1
						switch {
						case rowsA && mrr == mr:
							ap, sa, rs = a[(i0+ir)*lda+p0:], 1, lda
						case directA && mrr == mr:
							ap, sa = a[p0*lda+i0+ir:], lda
						}
						// Only edge tiles are left: fewer rows, or a
						// column panel of fewer columns.
						off := (i0+ir)*ldc + j0 + jr
						soff := (i0+ir)*lds + j0 + jr
						tk := kern
						if mrr < mr {
							// A last tile of fewer rows: a kernel of
							// fewer rows, on A in place or the packed
							// panel.
							tk = kern.tailFor(mrr)
							if restInPlace {
								ap, sa, rs = a[(i0+ir)*lda+p0:], 1, lda
							} else {
								ap, sa, rs = ws.a[ir*kb:ir*kb+mr*kb], mr, 1
							}
						}
						if mrr == tk.mr && nrr == nr {
							tk.run(kb, ap, sa, rs, bp, sb, c[off:], ldc, alpha, bet, src[soff:], lds, relu, 1, 0)
							continue
						}
						tk.run(kb, ap, sa, rs, bp, sb, tile[:], nr, 1, 0, tile[:], nr, false, 1, 0)
						for i := 0; i < mrr; i++ {
							row := c[off+i*ldc : off+i*ldc+nrr]
							srow := src[soff+i*lds : soff+i*lds+nrr]
							t := tile[i*nr : i*nr+nrr]
							switch {
							case bet == 0:
								for j := range row {
									row[j] = alpha * t[j]
								}
							case kern.fused: // as the kernel's own epilogue
								for j := range row {
									row[j] = math.FMA(bet, srow[j], alpha*t[j])
								}
							default:
								for j := range row {
									row[j] = alpha*t[j] + bet*srow[j]
								}
							}
							if relu {
								reluRow(row)
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
// (zero past row mb). With direct (A^T, or A by rows, read in place) only a
// partial last panel is packed, and not that one with restInPlace.
func packA(dst []float64, mr int, trans, direct, restInPlace bool, a []float64, lda, i0, mb, p0, kb int) {
	for q := 0; q < mb; q += mr {
		rows := min(mr, mb-q)
		if direct && (rows == mr || restInPlace) {
			continue
		}
		d := dst[q*kb : q*kb+mr*kb]
		if !trans {
			if rows == 6 && mr == 6 {
				r0 := a[(i0+q)*lda+p0:]
				r1 := a[(i0+q+1)*lda+p0:]
				r2 := a[(i0+q+2)*lda+p0:]
				r3 := a[(i0+q+3)*lda+p0:]
				r4 := a[(i0+q+4)*lda+p0:]
				r5 := a[(i0+q+5)*lda+p0:]
				r0, r1, r2, r3, r4, r5 = r0[:kb], r1[:kb], r2[:kb], r3[:kb], r4[:kb], r5[:kb]
				for p := range kb {
					e := (*[6]float64)(d[p*6:])
					e[0], e[1], e[2], e[3], e[4], e[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
				}
				continue
			}
			if rows == 8 && mr == 8 {
				packB8(d, 8, a[(i0+q)*lda+p0:], lda, kb)
				continue
			}
			if rows == mr {
				for i := range mr {
					r := a[(i0+q+i)*lda+p0:]
					for p, v := range r[:kb] {
						d[p*mr+i] = v
					}
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
			if copyRows(d, a[p0*lda+i0+q:], lda, kb, mr) {
				continue
			}
			for p := range kb {
				copy(d[p*mr:p*mr+mr], a[(p0+p)*lda+i0+q:])
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
func packB(dst []float64, nr int, trans, direct bool, b []float64, ldb, p0, kb, j0, nb int) {
	for q := 0; q < nb; q += nr {
		cols := min(nr, nb-q)
		if direct && cols == nr {
			continue
		}
		d := dst[q*kb : q*kb+nr*kb]
		if !trans {
			if cols == nr {
				if copyRows(d, b[p0*ldb+j0+q:], ldb, kb, nr) {
					continue
				}
				for p := range kb {
					copy(d[p*nr:p*nr+nr], b[(p0+p)*ldb+j0+q:])
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
		if cols == nr && nr%8 == 0 {
			// Eight columns at a time: eight rows of B read in step.
			for h := 0; h < nr; h += 8 {
				packB8(d[h:], nr, b[(j0+q+h)*ldb+p0:], ldb, kb)
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

// packB8 transposes eight rows of kb values (row r at src[r ld:]) into
// dst: for each p, the eight values src[r ld + p] at dst[p stride:], the
// layout of a packed panel of B^T (or of A) eight lanes at a time.
func packB8(dst []float64, stride int, src []float64, ld, kb int) {
	p0 := pack8(dst, stride, src, ld, kb)
	if p0 == kb {
		return
	}
	r0 := src[:kb]
	r1 := src[ld : ld+kb]
	r2 := src[2*ld : 2*ld+kb]
	r3 := src[3*ld : 3*ld+kb]
	r4 := src[4*ld : 4*ld+kb]
	r5 := src[5*ld : 5*ld+kb]
	r6 := src[6*ld : 6*ld+kb]
	r7 := src[7*ld : 7*ld+kb]
	for p := p0; p < kb; p++ {
		e := (*[8]float64)(dst[p*stride:])
		e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p], r6[p], r7[p]
	}
}

// kernelGo is the portable 6 x 8 micro-kernel (microKernel.run).
func kernelGo(kb int, ap []float64, sa, rs int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64, src []float64, lds int, relu bool, tiles, astep int) {
	const mr = 6
	for t := range tiles {
		tileGo(kb, ap[t*astep:], sa, rs, bp, sb, c[t*mr*ldc:], ldc, alpha, beta, src[t*mr*lds:], lds, relu)
	}
}

// tileGo is kernelGo on one tile.
func tileGo(kb int, ap []float64, sa, _ int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64, src []float64, lds int, relu bool) {
	const mr, nr = 6, 8
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
			s := src[i*lds : i*lds+nr]
			for j := range row {
				row[j] = alpha*t[j] + beta*s[j]
			}
		}
		if relu {
			reluRow(row)
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
	badBias      = "gemm: bias length is not n"
)
