#include "textflag.h"

// The kernels' common epilogue: row r of the tile (registers r0, r1) is set
// to alpha acc, then fma(beta, src row, alpha acc) unless beta is +-0 (src
// is C itself for a product, a bias row with stride 0 for a layer's
// forward), then max with zero when the relu flag is set ((0 > x) ? 0 : x,
// as internal/vecmath's ReLU: NaN and -0 stay), then stored.

// A call runs tiles tiles down a column of C: after each, NEXTTILE moves A
// by astep elements and C and the beta term's source by the tile's rows
// (bytes = rows x 8), in the argument slots the next tile reads; C's row
// pointer DX has already passed the tile's rows.
#define NEXTTILE(bytes) \
	MOVQ   astep+112(FP), R10 \
	SHLQ   $3, R10 \
	ADDQ   R10, a+8(FP) \
	MOVQ   DX, c+48(FP) \
	MOVQ   lds+88(FP), R13 \
	IMUL3Q $bytes, R13, R13 \
	ADDQ   R13, src+80(FP)

// ARGS loads what every tile reads: kb in CX, A in AX with its strides in
// bytes (sa in R10, rs in R12, 3 rs in R13) and its row 4 in R14, B in BX
// with sb in R11.
#define ARGS \
	MOVQ kb+0(FP), CX \
	MOVQ a+8(FP), AX \
	MOVQ sa+16(FP), R10 \
	SHLQ $3, R10 \
	MOVQ rs+24(FP), R12 \
	SHLQ $3, R12 \
	LEAQ (R12)(R12*2), R13 \
	LEAQ (AX)(R12*4), R14 \
	MOVQ b+32(FP), BX \
	MOVQ sb+40(FP), R11 \
	SHLQ $3, R11

#define ZERO4(r0, r1, r2, r3) \
	VXORPD r0, r0, r0 \
	VXORPD r1, r1, r1 \
	VXORPD r2, r2, r2 \
	VXORPD r3, r3, r3

#define ZERO4Z(r0, r1, r2, r3) \
	VPXORQ r0, r0, r0 \
	VPXORQ r1, r1, r1 \
	VPXORQ r2, r2, r2 \
	VPXORQ r3, r3, r3

// LOADB8 loads a row of an 8-wide B panel into Y12, Y13; BROW8 broadcasts
// row i's value of A (at src) into t and adds its products with that row to
// the row's accumulators r0, r1. BROW16 is BROW8 on a 16-wide row in Z16,
// Z17.
#define LOADB8 \
	VMOVUPD (BX), Y12 \
	VMOVUPD 32(BX), Y13

#define BROW8(src, t, r0, r1) \
	VBROADCASTSD src, t \
	VFMADD231PD Y12, t, r0 \
	VFMADD231PD Y13, t, r1

#define BROW16(src, t, r0, r1) \
	VBROADCASTSD src, t \
	VFMADD231PD Z16, t, r0 \
	VFMADD231PD Z17, t, r1

// func kernel6x8(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)
//
// C[0:6][0:8] = alpha * sum_p A_p^T b[p sb : p sb+8] + beta * S, where
// row i of A_p is at a + i rs + p sa (rs = 1 and sa = 6 for a packed panel,
// sa = lda for A^T read in place, rs = lda and sa = 1 for A read in place),
// S is the 6 x 8 tile at src with row stride lds (not read when beta is +-0;
// strides in elements), then the ReLU when relu is set. Row i of the tile
// accumulates in Y(2i) (columns 0-3) and Y(2i+1) (columns 4-7); Y12, Y13
// hold a row of B, Y14, Y15 broadcasts of A. It repeats for tiles tiles
// down the column (NEXTTILE): one call per column of a block of C.
TEXT ·kernel6x8(SB), NOSPLIT, $0-120

top6:
	ARGS

	ZERO4(Y0, Y1, Y2, Y3)
	ZERO4(Y4, Y5, Y6, Y7)
	ZERO4(Y8, Y9, Y10, Y11)

	MOVQ CX, R9
	SHRQ $2, R9 // steps of 4
	ANDQ $3, CX // the rest
	TESTQ R9, R9
	JZ   tail

#define STEP \
	LOADB8 \
	BROW8((AX), Y14, Y0, Y1) \
	BROW8((AX)(R12*1), Y15, Y2, Y3) \
	BROW8((AX)(R12*2), Y14, Y4, Y5) \
	BROW8((AX)(R13*1), Y15, Y6, Y7) \
	BROW8((R14), Y14, Y8, Y9) \
	BROW8((R14)(R12*1), Y15, Y10, Y11) \
	ADDQ R10, AX \
	ADDQ R10, R14 \
	ADDQ R11, BX

loop4:
	STEP
	STEP
	STEP
	STEP
	DECQ R9
	JNZ  loop4

tail:
	TESTQ CX, CX
	JZ    store

loop1:
	STEP
	DECQ CX
	JNZ  loop1

store:
// EPILOGUE8 loads the epilogue's operands: alpha in Y14, beta in Y15, zero
// in Y12; C at DX (row stride R8), S at SI (R13); R9 the relu flag; R10
// zero when beta is +-0.
#define EPILOGUE8 \
	MOVQ c+48(FP), DX \
	MOVQ ldc+56(FP), R8 \
	SHLQ $3, R8 \
	MOVQ src+80(FP), SI \
	MOVQ lds+88(FP), R13 \
	SHLQ $3, R13 \
	MOVBQZX relu+96(FP), R9 \
	VBROADCASTSD alpha+64(FP), Y14 \
	VBROADCASTSD beta+72(FP), Y15 \
	VXORPD Y12, Y12, Y12 \
	MOVQ beta+72(FP), R10 \
	SHLQ $1, R10 // drop the sign: +-0 both mean "do not read S"

#define MUL8(r0, r1) \
	VMULPD Y14, r0, r0 \
	VMULPD Y14, r1, r1

#define BETA8(r0, r1) \
	VFMADD231PD (SI), Y15, r0 \
	VFMADD231PD 32(SI), Y15, r1 \
	ADDQ R13, SI

#define RELU8(r0, r1) \
	VMAXPD r0, Y12, r0 \
	VMAXPD r1, Y12, r1

#define STORE8(r0, r1) \
	VMOVUPD r0, (DX) \
	VMOVUPD r1, 32(DX) \
	ADDQ R8, DX

	EPILOGUE8
	MUL8(Y0, Y1)
	MUL8(Y2, Y3)
	MUL8(Y4, Y5)
	MUL8(Y6, Y7)
	MUL8(Y8, Y9)
	MUL8(Y10, Y11)
	TESTQ R10, R10
	JZ    relu6
	BETA8(Y0, Y1)
	BETA8(Y2, Y3)
	BETA8(Y4, Y5)
	BETA8(Y6, Y7)
	BETA8(Y8, Y9)
	BETA8(Y10, Y11)

relu6:
	TESTQ R9, R9
	JZ    store6
	RELU8(Y0, Y1)
	RELU8(Y2, Y3)
	RELU8(Y4, Y5)
	RELU8(Y6, Y7)
	RELU8(Y8, Y9)
	RELU8(Y10, Y11)

store6:
	STORE8(Y0, Y1)
	STORE8(Y2, Y3)
	STORE8(Y4, Y5)
	STORE8(Y6, Y7)
	STORE8(Y8, Y9)
	STORE8(Y10, Y11)
	DECQ tiles+104(FP)
	JZ   done6
	NEXTTILE(48)
	JMP  top6

done6:
	VZEROUPPER
	RET

// func kernel4x8(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)
//
// kernel6x8 on a 4 x 8 tile (rows 0-3 of the panel): the last tile of a
// matrix whose rows leave three or four, at two thirds of the work of a
// whole tile. Same order of operations, same bits.
TEXT ·kernel4x8(SB), NOSPLIT, $0-120

top4:
	ARGS

	ZERO4(Y0, Y1, Y2, Y3)
	ZERO4(Y4, Y5, Y6, Y7)

#define STEP4 \
	LOADB8 \
	BROW8((AX), Y14, Y0, Y1) \
	BROW8((AX)(R12*1), Y15, Y2, Y3) \
	BROW8((AX)(R12*2), Y14, Y4, Y5) \
	BROW8((AX)(R13*1), Y15, Y6, Y7) \
	ADDQ R10, AX \
	ADDQ R11, BX

loop4r:
	STEP4
	DECQ CX
	JNZ  loop4r

	EPILOGUE8
	MUL8(Y0, Y1)
	MUL8(Y2, Y3)
	MUL8(Y4, Y5)
	MUL8(Y6, Y7)
	TESTQ R10, R10
	JZ    relu4
	BETA8(Y0, Y1)
	BETA8(Y2, Y3)
	BETA8(Y4, Y5)
	BETA8(Y6, Y7)

relu4:
	TESTQ R9, R9
	JZ    store4
	RELU8(Y0, Y1)
	RELU8(Y2, Y3)
	RELU8(Y4, Y5)
	RELU8(Y6, Y7)

store4:
	STORE8(Y0, Y1)
	STORE8(Y2, Y3)
	STORE8(Y4, Y5)
	STORE8(Y6, Y7)
	DECQ tiles+104(FP)
	JZ   done4
	NEXTTILE(32)
	JMP  top4

done4:
	VZEROUPPER
	RET

// func kernel2x8(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)
//
// kernel6x8 on a 2 x 8 tile (rows 0-1 of the panel), for a last tile of one
// or two rows. Same order of operations, same bits.
TEXT ·kernel2x8(SB), NOSPLIT, $0-120

top2:
	ARGS

	ZERO4(Y0, Y1, Y2, Y3)

#define STEP2 \
	LOADB8 \
	BROW8((AX), Y14, Y0, Y1) \
	BROW8((AX)(R12*1), Y15, Y2, Y3) \
	ADDQ R10, AX \
	ADDQ R11, BX

loop2r:
	STEP2
	DECQ CX
	JNZ  loop2r

	EPILOGUE8
	MUL8(Y0, Y1)
	MUL8(Y2, Y3)
	TESTQ R10, R10
	JZ    relu2
	BETA8(Y0, Y1)
	BETA8(Y2, Y3)

relu2:
	TESTQ R9, R9
	JZ    store2
	RELU8(Y0, Y1)
	RELU8(Y2, Y3)

store2:
	STORE8(Y0, Y1)
	STORE8(Y2, Y3)
	DECQ tiles+104(FP)
	JZ   done2
	NEXTTILE(16)
	JMP  top2

done2:
	VZEROUPPER
	RET

// func kernel8x16(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)
//
// kernel6x8's computation on an 8 x 16 tile with AVX-512F, reading row i
// of the A panel at a + i rs + p sa (rs = 1 for a packed panel or A^T read in
// place, rs = lda and sa = 1 for A read in place): row i of the tile
// accumulates in Z(2i) (columns 0-7) and Z(2i+1) (columns 8-15); Z16, Z17
// hold a row of B, Z18, Z19 broadcasts of A. Each element gets one FMA per
// step of k in the order of k and the same epilogue as kernel6x8, so the two
// kernels give C the same bits.
TEXT ·kernel8x16(SB), NOSPLIT, $0-120

top16:
	ARGS

	ZERO4Z(Z0, Z1, Z2, Z3)
	ZERO4Z(Z4, Z5, Z6, Z7)
	ZERO4Z(Z8, Z9, Z10, Z11)
	ZERO4Z(Z12, Z13, Z14, Z15)

	MOVQ CX, R9
	SHRQ $2, R9 // steps of 4
	ANDQ $3, CX // the rest
	TESTQ R9, R9
	JZ   tail16

#define STEP16 \
	VMOVUPD (BX), Z16 \
	VMOVUPD 64(BX), Z17 \
	BROW16((AX), Z18, Z0, Z1) \
	BROW16((AX)(R12*1), Z19, Z2, Z3) \
	BROW16((AX)(R12*2), Z18, Z4, Z5) \
	BROW16((AX)(R13*1), Z19, Z6, Z7) \
	BROW16((R14), Z18, Z8, Z9) \
	BROW16((R14)(R12*1), Z19, Z10, Z11) \
	BROW16((R14)(R12*2), Z18, Z12, Z13) \
	BROW16((R14)(R13*1), Z19, Z14, Z15) \
	ADDQ R10, AX \
	ADDQ R10, R14 \
	ADDQ R11, BX

loop16x4:
	STEP16
	STEP16
	STEP16
	STEP16
	DECQ R9
	JNZ  loop16x4

tail16:
	TESTQ CX, CX
	JZ    store16

loop16x1:
	STEP16
	DECQ CX
	JNZ  loop16x1

store16:
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $3, R8
	MOVQ src+80(FP), SI
	MOVQ lds+88(FP), R13
	SHLQ $3, R13
	MOVBQZX relu+96(FP), R9
	VBROADCASTSD alpha+64(FP), Z18
	VBROADCASTSD beta+72(FP), Z19
	VPXORQ Z16, Z16, Z16
	MOVQ beta+72(FP), R10
	SHLQ $1, R10 // drop the sign: +-0 both mean "do not read S"

#define MUL16(r0, r1) \
	VMULPD Z18, r0, r0 \
	VMULPD Z18, r1, r1

#define BETA16(r0, r1) \
	VFMADD231PD (SI), Z19, r0 \
	VFMADD231PD 64(SI), Z19, r1 \
	ADDQ R13, SI

#define RELU16(r0, r1) \
	VMAXPD r0, Z16, r0 \
	VMAXPD r1, Z16, r1

#define STORE16(r0, r1) \
	VMOVUPD r0, (DX) \
	VMOVUPD r1, 64(DX) \
	ADDQ R8, DX

	MUL16(Z0, Z1)
	MUL16(Z2, Z3)
	MUL16(Z4, Z5)
	MUL16(Z6, Z7)
	MUL16(Z8, Z9)
	MUL16(Z10, Z11)
	MUL16(Z12, Z13)
	MUL16(Z14, Z15)
	TESTQ R10, R10
	JZ    relu16
	BETA16(Z0, Z1)
	BETA16(Z2, Z3)
	BETA16(Z4, Z5)
	BETA16(Z6, Z7)
	BETA16(Z8, Z9)
	BETA16(Z10, Z11)
	BETA16(Z12, Z13)
	BETA16(Z14, Z15)

relu16:
	TESTQ R9, R9
	JZ    out16
	RELU16(Z0, Z1)
	RELU16(Z2, Z3)
	RELU16(Z4, Z5)
	RELU16(Z6, Z7)
	RELU16(Z8, Z9)
	RELU16(Z10, Z11)
	RELU16(Z12, Z13)
	RELU16(Z14, Z15)

out16:
	STORE16(Z0, Z1)
	STORE16(Z2, Z3)
	STORE16(Z4, Z5)
	STORE16(Z6, Z7)
	STORE16(Z8, Z9)
	STORE16(Z10, Z11)
	STORE16(Z12, Z13)
	STORE16(Z14, Z15)
	DECQ tiles+104(FP)
	JZ   done16
	NEXTTILE(64)
	JMP  top16

done16:
	VZEROUPPER
	RET

// func pack8AVX512(dst *float64, stride int, src *float64, ld, n int)
//
// packB8's transpose for n a multiple of 8: for p < n, the values
// src[r ld + p] (r < 8) go to dst[p stride + r], an 8 x 8 block at a time
// (eight row loads, an in-register transpose by VUNPCK*PD and VSHUFF64X2,
// eight stores). It only moves values.
TEXT ·pack8AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ stride+8(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9 // 3 stride
	LEAQ (DX)(R8*4), DI // dst row 4
	MOVQ src+16(FP), AX
	MOVQ ld+24(FP), R12
	SHLQ $3, R12
	LEAQ (R12)(R12*2), R13 // 3 ld
	LEAQ (AX)(R12*4), R14  // src row 4
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   packdone
	MOVQ R8, SI
	SHLQ $3, SI // 8 strides: the next block of dst

packloop:
	VMOVUPD (AX), Z0
	VMOVUPD (AX)(R12*1), Z1
	VMOVUPD (AX)(R12*2), Z2
	VMOVUPD (AX)(R13*1), Z3
	VMOVUPD (R14), Z4
	VMOVUPD (R14)(R12*1), Z5
	VMOVUPD (R14)(R12*2), Z6
	VMOVUPD (R14)(R13*1), Z7
	// Pairs: Z8 = r0_0 r1_0 r0_2 r1_2 ..., Z9 = r0_1 r1_1 r0_3 r1_3 ...
	VUNPCKLPD Z1, Z0, Z8
	VUNPCKHPD Z1, Z0, Z9
	VUNPCKLPD Z3, Z2, Z10
	VUNPCKHPD Z3, Z2, Z11
	VUNPCKLPD Z5, Z4, Z12
	VUNPCKHPD Z5, Z4, Z13
	VUNPCKLPD Z7, Z6, Z14
	VUNPCKHPD Z7, Z6, Z15
	// 128-bit lanes: even lanes (0, 2) then odd ones (1, 3).
	VSHUFF64X2 $0x88, Z10, Z8, Z16
	VSHUFF64X2 $0xDD, Z10, Z8, Z17
	VSHUFF64X2 $0x88, Z14, Z12, Z18
	VSHUFF64X2 $0xDD, Z14, Z12, Z19
	VSHUFF64X2 $0x88, Z11, Z9, Z20
	VSHUFF64X2 $0xDD, Z11, Z9, Z21
	VSHUFF64X2 $0x88, Z15, Z13, Z22
	VSHUFF64X2 $0xDD, Z15, Z13, Z23
	// Columns 0, 4 / 2, 6 from the even pairs; 1, 5 / 3, 7 from the odd.
	VSHUFF64X2 $0x88, Z18, Z16, Z0
	VSHUFF64X2 $0xDD, Z18, Z16, Z4
	VSHUFF64X2 $0x88, Z19, Z17, Z2
	VSHUFF64X2 $0xDD, Z19, Z17, Z6
	VSHUFF64X2 $0x88, Z22, Z20, Z1
	VSHUFF64X2 $0xDD, Z22, Z20, Z5
	VSHUFF64X2 $0x88, Z23, Z21, Z3
	VSHUFF64X2 $0xDD, Z23, Z21, Z7
	VMOVUPD Z0, (DX)
	VMOVUPD Z1, (DX)(R8*1)
	VMOVUPD Z2, (DX)(R8*2)
	VMOVUPD Z3, (DX)(R9*1)
	VMOVUPD Z4, (DI)
	VMOVUPD Z5, (DI)(R8*1)
	VMOVUPD Z6, (DI)(R8*2)
	VMOVUPD Z7, (DI)(R9*1)
	ADDQ $64, AX
	ADDQ $64, R14
	ADDQ SI, DX
	ADDQ SI, DI
	DECQ CX
	JNZ  packloop
	VZEROUPPER

packdone:
	RET

// func copyRowsAVX512(dst *float64, dstStride int, src *float64, srcStride, rows, vecs int)
//
// For r < rows, copies vecs (1 or 2) vectors of 8 values from src + r
// srcStride to dst + r dstStride: the packing of panels whose rows are
// already the kernel's (B not transposed, A^T).
TEXT ·copyRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DX
	MOVQ dstStride+8(FP), R8
	SHLQ $3, R8
	MOVQ src+16(FP), AX
	MOVQ srcStride+24(FP), R9
	SHLQ $3, R9
	MOVQ rows+32(FP), CX
	TESTQ CX, CX
	JZ   copydone
	CMPQ vecs+40(FP), $2
	JEQ  copy2

copy1:
	VMOVUPD (AX), Z0
	VMOVUPD Z0, (DX)
	ADDQ R9, AX
	ADDQ R8, DX
	DECQ CX
	JNZ  copy1
	VZEROUPPER
	RET

copy2:
	VMOVUPD (AX), Z0
	VMOVUPD 64(AX), Z1
	VMOVUPD Z0, (DX)
	VMOVUPD Z1, 64(DX)
	ADDQ R9, AX
	ADDQ R8, DX
	DECQ CX
	JNZ  copy2
	VZEROUPPER

copydone:
	RET

// func pack8AVX2(dst *float64, stride int, src *float64, ld, n int)
//
// pack8AVX512 with AVX2 (n a multiple of 4): four steps of p at a time,
// rows 0-3 and rows 4-7 each as a 4 x 4 transpose (VUNPCK*PD, VPERM2F128).
TEXT ·pack8AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ stride+8(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9 // 3 stride
	MOVQ src+16(FP), AX
	MOVQ ld+24(FP), R12
	SHLQ $3, R12
	LEAQ (R12)(R12*2), R13 // 3 ld
	LEAQ (AX)(R12*4), R14  // src row 4
	MOVQ n+32(FP), CX
	SHRQ $2, CX
	JZ   pack2done
	MOVQ R8, SI
	SHLQ $2, SI // 4 strides: the next block of dst

pack2loop:
	VMOVUPD (AX), Y0
	VMOVUPD (AX)(R12*1), Y1
	VMOVUPD (AX)(R12*2), Y2
	VMOVUPD (AX)(R13*1), Y3
	VUNPCKLPD Y1, Y0, Y4
	VUNPCKHPD Y1, Y0, Y5
	VUNPCKLPD Y3, Y2, Y6
	VUNPCKHPD Y3, Y2, Y7
	VPERM2F128 $0x20, Y6, Y4, Y0
	VPERM2F128 $0x20, Y7, Y5, Y1
	VPERM2F128 $0x31, Y6, Y4, Y2
	VPERM2F128 $0x31, Y7, Y5, Y3
	VMOVUPD Y0, (DX)
	VMOVUPD Y1, (DX)(R8*1)
	VMOVUPD Y2, (DX)(R8*2)
	VMOVUPD Y3, (DX)(R9*1)
	VMOVUPD (R14), Y0
	VMOVUPD (R14)(R12*1), Y1
	VMOVUPD (R14)(R12*2), Y2
	VMOVUPD (R14)(R13*1), Y3
	VUNPCKLPD Y1, Y0, Y4
	VUNPCKHPD Y1, Y0, Y5
	VUNPCKLPD Y3, Y2, Y6
	VUNPCKHPD Y3, Y2, Y7
	VPERM2F128 $0x20, Y6, Y4, Y0
	VPERM2F128 $0x20, Y7, Y5, Y1
	VPERM2F128 $0x31, Y6, Y4, Y2
	VPERM2F128 $0x31, Y7, Y5, Y3
	VMOVUPD Y0, 32(DX)
	VMOVUPD Y1, 32(DX)(R8*1)
	VMOVUPD Y2, 32(DX)(R8*2)
	VMOVUPD Y3, 32(DX)(R9*1)
	ADDQ $32, AX
	ADDQ $32, R14
	ADDQ SI, DX
	DECQ CX
	JNZ  pack2loop
	VZEROUPPER

pack2done:
	RET

// func copyRowsAVX2(dst *float64, dstStride int, src *float64, srcStride, rows, w int)
//
// copyRowsAVX512 with AVX2 for rows of w = 6 or 8 values.
TEXT ·copyRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DX
	MOVQ dstStride+8(FP), R8
	SHLQ $3, R8
	MOVQ src+16(FP), AX
	MOVQ srcStride+24(FP), R9
	SHLQ $3, R9
	MOVQ rows+32(FP), CX
	TESTQ CX, CX
	JZ   copy2done
	CMPQ w+40(FP), $8
	JEQ  copy8

copy6:
	VMOVUPD (AX), Y0
	VMOVUPD 32(AX), X1
	VMOVUPD Y0, (DX)
	VMOVUPD X1, 32(DX)
	ADDQ R9, AX
	ADDQ R8, DX
	DECQ CX
	JNZ  copy6
	VZEROUPPER
	RET

copy8:
	VMOVUPD (AX), Y0
	VMOVUPD 32(AX), Y1
	VMOVUPD Y0, (DX)
	VMOVUPD Y1, 32(DX)
	ADDQ R9, AX
	ADDQ R8, DX
	DECQ CX
	JNZ  copy8
	VZEROUPPER

copy2done:
	RET
