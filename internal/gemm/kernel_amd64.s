#include "textflag.h"

// func kernel6x8(kb int, a *float64, sa int, b *float64, sb int, c *float64, ldc int, alpha, beta float64)
//
// C[0:6][0:8] = alpha * sum_p a[p sa : p sa+6]^T b[p sb : p sb+8] + beta * C,
// C not read when beta is +-0 (strides in elements: 6 and 8 for packed
// panels, the leading dimension when A^T or B is read in place). Row i of the tile accumulates in Y(2i) (columns 0-3) and
// Y(2i+1) (columns 4-7); Y12, Y13 hold a row of B, Y14, Y15 broadcasts of A.
TEXT ·kernel6x8(SB), NOSPLIT, $0-72
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ sa+16(FP), R10
	SHLQ $3, R10
	MOVQ b+24(FP), BX
	MOVQ sb+32(FP), R11
	SHLQ $3, R11
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	SHLQ $3, R8

	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11

	MOVQ CX, R9
	SHRQ $2, R9 // steps of 4
	ANDQ $3, CX // the rest
	TESTQ R9, R9
	JZ   tail

#define STEP \
	VMOVUPD (BX), Y12 \
	VMOVUPD 32(BX), Y13 \
	VBROADCASTSD (AX), Y14 \
	VFMADD231PD Y12, Y14, Y0 \
	VFMADD231PD Y13, Y14, Y1 \
	VBROADCASTSD 8(AX), Y15 \
	VFMADD231PD Y12, Y15, Y2 \
	VFMADD231PD Y13, Y15, Y3 \
	VBROADCASTSD 16(AX), Y14 \
	VFMADD231PD Y12, Y14, Y4 \
	VFMADD231PD Y13, Y14, Y5 \
	VBROADCASTSD 24(AX), Y15 \
	VFMADD231PD Y12, Y15, Y6 \
	VFMADD231PD Y13, Y15, Y7 \
	VBROADCASTSD 32(AX), Y14 \
	VFMADD231PD Y12, Y14, Y8 \
	VFMADD231PD Y13, Y14, Y9 \
	VBROADCASTSD 40(AX), Y15 \
	VFMADD231PD Y12, Y15, Y10 \
	VFMADD231PD Y13, Y15, Y11 \
	ADDQ R10, AX \
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
	VBROADCASTSD alpha+56(FP), Y14
	MOVQ beta+64(FP), R10
	SHLQ $1, R10 // drop the sign: +-0 both mean "do not read C"
	JZ   storezero
	VBROADCASTSD beta+64(FP), Y15

#define ROWBETA(r0, r1) \
	VMULPD Y14, r0, r0 \
	VMULPD Y14, r1, r1 \
	VFMADD231PD (DX), Y15, r0 \
	VFMADD231PD 32(DX), Y15, r1 \
	VMOVUPD r0, (DX) \
	VMOVUPD r1, 32(DX) \
	ADDQ R8, DX

	ROWBETA(Y0, Y1)
	ROWBETA(Y2, Y3)
	ROWBETA(Y4, Y5)
	ROWBETA(Y6, Y7)
	ROWBETA(Y8, Y9)
	ROWBETA(Y10, Y11)
	VZEROUPPER
	RET

#define ROWZERO(r0, r1) \
	VMULPD Y14, r0, r0 \
	VMULPD Y14, r1, r1 \
	VMOVUPD r0, (DX) \
	VMOVUPD r1, 32(DX) \
	ADDQ R8, DX

storezero:
	ROWZERO(Y0, Y1)
	ROWZERO(Y2, Y3)
	ROWZERO(Y4, Y5)
	ROWZERO(Y6, Y7)
	ROWZERO(Y8, Y9)
	ROWZERO(Y10, Y11)
	VZEROUPPER
	RET
