package policy

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Tile sizes for gemmSerial. gonum's Dgemm goes parallel (spawning
// goroutines, which allocates and makes timings depend on the scheduler) once
// the output spans 4 or more of its 64x64 blocks; a 64x192 tile spans 3.
const (
	gemmTileRows = 64
	gemmTileCols = 192
)

// gemmSerial computes c = alpha op(a) op(b) + beta c exactly as blas64.Gemm,
// but hands gonum the output in tiles of at most 64 rows by 192 columns so
// that it always takes its serial path: single-threaded, deterministic and
// allocation-free at any shape. The tiles are independent (each is a
// sub-product over the full inner dimension), so tiling changes no result.
func gemmSerial(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	k := a.Cols
	if tA == blas.Trans {
		k = a.Rows
	}
	for r0 := 0; r0 < c.Rows; r0 += gemmTileRows {
		r1 := min(c.Rows, r0+gemmTileRows)
		var av blas64.General
		if tA == blas.NoTrans { // rows r0:r1 of a
			av = blas64.General{Rows: r1 - r0, Cols: k, Stride: a.Stride, Data: a.Data[r0*a.Stride:]}
		} else { // columns r0:r1 of a (k x m)
			av = blas64.General{Rows: k, Cols: r1 - r0, Stride: a.Stride, Data: a.Data[r0:]}
		}
		for c0 := 0; c0 < c.Cols; c0 += gemmTileCols {
			c1 := min(c.Cols, c0+gemmTileCols)
			var bv blas64.General
			if tB == blas.NoTrans { // columns c0:c1 of b (k x n)
				bv = blas64.General{Rows: k, Cols: c1 - c0, Stride: b.Stride, Data: b.Data[c0:]}
			} else { // rows c0:c1 of b (n x k)
				bv = blas64.General{Rows: c1 - c0, Cols: k, Stride: b.Stride, Data: b.Data[c0*b.Stride:]}
			}
			cv := blas64.General{Rows: r1 - r0, Cols: c1 - c0, Stride: c.Stride, Data: c.Data[r0*c.Stride+c0:]}
			blas64.Gemm(tA, tB, alpha, av, bv, beta, cv)
		}
	}
}
