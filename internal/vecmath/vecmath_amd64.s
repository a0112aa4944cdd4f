#include "textflag.h"

// Constants, each replicated four times (one YMM register's worth; the
// AVX-512 kernels broadcast the first copy).
DATA tanhc<>+0(SB)/8, $0x7fffffffffffffff // absmask
DATA tanhc<>+8(SB)/8, $0x7fffffffffffffff // absmask
DATA tanhc<>+16(SB)/8, $0x7fffffffffffffff // absmask
DATA tanhc<>+24(SB)/8, $0x7fffffffffffffff // absmask
DATA tanhc<>+32(SB)/8, $0x8000000000000000 // signmask
DATA tanhc<>+40(SB)/8, $0x8000000000000000 // signmask
DATA tanhc<>+48(SB)/8, $0x8000000000000000 // signmask
DATA tanhc<>+56(SB)/8, $0x8000000000000000 // signmask
DATA tanhc<>+64(SB)/8, $0x3ff0000000000000 // one
DATA tanhc<>+72(SB)/8, $0x3ff0000000000000 // one
DATA tanhc<>+80(SB)/8, $0x3ff0000000000000 // one
DATA tanhc<>+88(SB)/8, $0x3ff0000000000000 // one
DATA tanhc<>+96(SB)/8, $0x4000000000000000 // two
DATA tanhc<>+104(SB)/8, $0x4000000000000000 // two
DATA tanhc<>+112(SB)/8, $0x4000000000000000 // two
DATA tanhc<>+120(SB)/8, $0x4000000000000000 // two
DATA tanhc<>+128(SB)/8, $0x3fe4000000000000 // small
DATA tanhc<>+136(SB)/8, $0x3fe4000000000000 // small
DATA tanhc<>+144(SB)/8, $0x3fe4000000000000 // small
DATA tanhc<>+152(SB)/8, $0x3fe4000000000000 // small
DATA tanhc<>+160(SB)/8, $0x4036000000000000 // zmax
DATA tanhc<>+168(SB)/8, $0x4036000000000000 // zmax
DATA tanhc<>+176(SB)/8, $0x4036000000000000 // zmax
DATA tanhc<>+184(SB)/8, $0x4036000000000000 // zmax
DATA tanhc<>+192(SB)/8, $0x3ff71547652b82fe // log2e
DATA tanhc<>+200(SB)/8, $0x3ff71547652b82fe // log2e
DATA tanhc<>+208(SB)/8, $0x3ff71547652b82fe // log2e
DATA tanhc<>+216(SB)/8, $0x3ff71547652b82fe // log2e
DATA tanhc<>+224(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA tanhc<>+232(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA tanhc<>+240(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA tanhc<>+248(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA tanhc<>+256(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA tanhc<>+264(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA tanhc<>+272(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA tanhc<>+280(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA tanhc<>+288(SB)/8, $0x3de6124613a86d09 // e13
DATA tanhc<>+296(SB)/8, $0x3de6124613a86d09 // e13
DATA tanhc<>+304(SB)/8, $0x3de6124613a86d09 // e13
DATA tanhc<>+312(SB)/8, $0x3de6124613a86d09 // e13
DATA tanhc<>+320(SB)/8, $0x3e21eed8eff8d898 // e12
DATA tanhc<>+328(SB)/8, $0x3e21eed8eff8d898 // e12
DATA tanhc<>+336(SB)/8, $0x3e21eed8eff8d898 // e12
DATA tanhc<>+344(SB)/8, $0x3e21eed8eff8d898 // e12
DATA tanhc<>+352(SB)/8, $0x3e5ae64567f544e4 // e11
DATA tanhc<>+360(SB)/8, $0x3e5ae64567f544e4 // e11
DATA tanhc<>+368(SB)/8, $0x3e5ae64567f544e4 // e11
DATA tanhc<>+376(SB)/8, $0x3e5ae64567f544e4 // e11
DATA tanhc<>+384(SB)/8, $0x3e927e4fb7789f5c // e10
DATA tanhc<>+392(SB)/8, $0x3e927e4fb7789f5c // e10
DATA tanhc<>+400(SB)/8, $0x3e927e4fb7789f5c // e10
DATA tanhc<>+408(SB)/8, $0x3e927e4fb7789f5c // e10
DATA tanhc<>+416(SB)/8, $0x3ec71de3a556c734 // e9
DATA tanhc<>+424(SB)/8, $0x3ec71de3a556c734 // e9
DATA tanhc<>+432(SB)/8, $0x3ec71de3a556c734 // e9
DATA tanhc<>+440(SB)/8, $0x3ec71de3a556c734 // e9
DATA tanhc<>+448(SB)/8, $0x3efa01a01a01a01a // e8
DATA tanhc<>+456(SB)/8, $0x3efa01a01a01a01a // e8
DATA tanhc<>+464(SB)/8, $0x3efa01a01a01a01a // e8
DATA tanhc<>+472(SB)/8, $0x3efa01a01a01a01a // e8
DATA tanhc<>+480(SB)/8, $0x3f2a01a01a01a01a // e7
DATA tanhc<>+488(SB)/8, $0x3f2a01a01a01a01a // e7
DATA tanhc<>+496(SB)/8, $0x3f2a01a01a01a01a // e7
DATA tanhc<>+504(SB)/8, $0x3f2a01a01a01a01a // e7
DATA tanhc<>+512(SB)/8, $0x3f56c16c16c16c17 // e6
DATA tanhc<>+520(SB)/8, $0x3f56c16c16c16c17 // e6
DATA tanhc<>+528(SB)/8, $0x3f56c16c16c16c17 // e6
DATA tanhc<>+536(SB)/8, $0x3f56c16c16c16c17 // e6
DATA tanhc<>+544(SB)/8, $0x3f81111111111111 // e5
DATA tanhc<>+552(SB)/8, $0x3f81111111111111 // e5
DATA tanhc<>+560(SB)/8, $0x3f81111111111111 // e5
DATA tanhc<>+568(SB)/8, $0x3f81111111111111 // e5
DATA tanhc<>+576(SB)/8, $0x3fa5555555555555 // e4
DATA tanhc<>+584(SB)/8, $0x3fa5555555555555 // e4
DATA tanhc<>+592(SB)/8, $0x3fa5555555555555 // e4
DATA tanhc<>+600(SB)/8, $0x3fa5555555555555 // e4
DATA tanhc<>+608(SB)/8, $0x3fc5555555555555 // e3
DATA tanhc<>+616(SB)/8, $0x3fc5555555555555 // e3
DATA tanhc<>+624(SB)/8, $0x3fc5555555555555 // e3
DATA tanhc<>+632(SB)/8, $0x3fc5555555555555 // e3
DATA tanhc<>+640(SB)/8, $0x3fe0000000000000 // e2
DATA tanhc<>+648(SB)/8, $0x3fe0000000000000 // e2
DATA tanhc<>+656(SB)/8, $0x3fe0000000000000 // e2
DATA tanhc<>+664(SB)/8, $0x3fe0000000000000 // e2
DATA tanhc<>+672(SB)/8, $0xbfeedc5baafd6f4b // p0
DATA tanhc<>+680(SB)/8, $0xbfeedc5baafd6f4b // p0
DATA tanhc<>+688(SB)/8, $0xbfeedc5baafd6f4b // p0
DATA tanhc<>+696(SB)/8, $0xbfeedc5baafd6f4b // p0
DATA tanhc<>+704(SB)/8, $0xc058d26a0e26682d // p1
DATA tanhc<>+712(SB)/8, $0xc058d26a0e26682d // p1
DATA tanhc<>+720(SB)/8, $0xc058d26a0e26682d // p1
DATA tanhc<>+728(SB)/8, $0xc058d26a0e26682d // p1
DATA tanhc<>+736(SB)/8, $0xc0993ac030580563 // p2
DATA tanhc<>+744(SB)/8, $0xc0993ac030580563 // p2
DATA tanhc<>+752(SB)/8, $0xc0993ac030580563 // p2
DATA tanhc<>+760(SB)/8, $0xc0993ac030580563 // p2
DATA tanhc<>+768(SB)/8, $0x405c33f28a581b86 // q0
DATA tanhc<>+776(SB)/8, $0x405c33f28a581b86 // q0
DATA tanhc<>+784(SB)/8, $0x405c33f28a581b86 // q0
DATA tanhc<>+792(SB)/8, $0x405c33f28a581b86 // q0
DATA tanhc<>+800(SB)/8, $0x40a176fa0e5535fa // q1
DATA tanhc<>+808(SB)/8, $0x40a176fa0e5535fa // q1
DATA tanhc<>+816(SB)/8, $0x40a176fa0e5535fa // q1
DATA tanhc<>+824(SB)/8, $0x40a176fa0e5535fa // q1
DATA tanhc<>+832(SB)/8, $0x40b2ec102442040c // q2
DATA tanhc<>+840(SB)/8, $0x40b2ec102442040c // q2
DATA tanhc<>+848(SB)/8, $0x40b2ec102442040c // q2
DATA tanhc<>+856(SB)/8, $0x40b2ec102442040c // q2
GLOBL tanhc<>(SB), RODATA|NOPTR, $864

// func tanhAVX2(x *float64, n int)
//
// x[0:n] = tanh(x[0:n]) in place, n a multiple of 4. Per lane, as Go's
// math.Tanh (Cephes): |x| >= 0.625 gives sign(x) (1 - 2/(exp(2|x|) + 1)) with
// |x| capped at 22 (tanh(22) rounds to 1), and exp(w) = 2^k exp(r),
// k = round(w log2 e), r = w - k ln2 (Cody-Waite, two parts), exp(r) by its
// Taylor polynomial of degree 13 (|r| <= ln2/2: truncation below 1e-17);
// smaller |x| gives x + x s P(s)/Q(s), s = x^2. Both branches are computed
// and one division serves the lane's branch. The result takes the sign
// of x, which also keeps tanh(-0) = -0.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $2, CX
	JZ   done
	VMOVUPD tanhc<>+64(SB), Y15
	VMOVUPD tanhc<>+96(SB), Y14

loop:
	VMOVUPD (DI), Y0
	VANDPD  tanhc<>+0(SB), Y0, Y1 // |x|
	VANDPD  tanhc<>+32(SB), Y0, Y2 // sign bit
	// exp(2 min(|x|, 22))
	VMINPD  tanhc<>+160(SB), Y1, Y3
	VADDPD  Y3, Y3, Y3 // w
	VMULPD  tanhc<>+192(SB), Y3, Y4
	VROUNDPD $0, Y4, Y4 // k, to nearest
	VMOVAPD Y3, Y5
	VFNMADD231PD tanhc<>+224(SB), Y4, Y5 // r = w - k ln2hi
	VFNMADD231PD tanhc<>+256(SB), Y4, Y5 // r -= k ln2lo
	VMOVUPD tanhc<>+288(SB), Y6
	VFMADD213PD tanhc<>+320(SB), Y5, Y6 // p = p r + 1/12!
	VFMADD213PD tanhc<>+352(SB), Y5, Y6 // p = p r + 1/11!
	VFMADD213PD tanhc<>+384(SB), Y5, Y6 // p = p r + 1/10!
	VFMADD213PD tanhc<>+416(SB), Y5, Y6 // p = p r + 1/9!
	VFMADD213PD tanhc<>+448(SB), Y5, Y6 // p = p r + 1/8!
	VFMADD213PD tanhc<>+480(SB), Y5, Y6 // p = p r + 1/7!
	VFMADD213PD tanhc<>+512(SB), Y5, Y6 // p = p r + 1/6!
	VFMADD213PD tanhc<>+544(SB), Y5, Y6 // p = p r + 1/5!
	VFMADD213PD tanhc<>+576(SB), Y5, Y6 // p = p r + 1/4!
	VFMADD213PD tanhc<>+608(SB), Y5, Y6 // p = p r + 1/3!
	VFMADD213PD tanhc<>+640(SB), Y5, Y6 // p = p r + 1/2!
	VFMADD213PD Y15, Y5, Y6 // p = p r + 1
	VFMADD213PD Y15, Y5, Y6 // p = p r + 1: exp(r)
	VCVTPD2DQY Y4, X7
	VPMOVSXDQ X7, Y7
	VPSLLQ  $52, Y7, Y7
	VPADDQ  Y7, Y6, Y6 // e = exp(r) 2^k
	VADDPD  Y15, Y6, Y8 // e + 1
	// the rational branch
	VMULPD  Y0, Y0, Y9 // s
	VMULPD  tanhc<>+672(SB), Y9, Y10
	VADDPD  tanhc<>+704(SB), Y10, Y10
	VFMADD213PD tanhc<>+736(SB), Y9, Y10 // P(s)
	VADDPD  tanhc<>+768(SB), Y9, Y11
	VFMADD213PD tanhc<>+800(SB), Y9, Y11
	VFMADD213PD tanhc<>+832(SB), Y9, Y11 // Q(s)
	VMULPD  Y9, Y10, Y10
	VMULPD  Y0, Y10, Y10 // x s P(s)
	VCMPPD  $0x1d, tanhc<>+128(SB), Y1, Y12 // |x| >= 0.625
	VBLENDVPD Y12, Y14, Y10, Y13 // numerator: 2 or x s P(s)
	VBLENDVPD Y12, Y8, Y11, Y11 // denominator: e + 1 or Q(s)
	VDIVPD  Y11, Y13, Y13 // q
	VADDPD  Y0, Y13, Y10 // x + q
	VSUBPD  Y13, Y15, Y11 // 1 - q
	VBLENDVPD Y12, Y11, Y10, Y0
	VANDPD  tanhc<>+0(SB), Y0, Y0
	VORPD   Y2, Y0, Y0 // |result| with the sign of x (tanh(-0) = -0)
	VMOVUPD Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER

done:
	RET

// func adamAVX2(n int, p, grad, m, v *float64, c *[7]float64)
//
// For i < n (a multiple of 4): m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
// p -= step m / (sqrt(v) isc2 + eps), with c = {b1, 1-b1, b2, 1-b2, step,
// isc2, eps}.
TEXT ·adamAVX2(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ p+8(FP), DI
	MOVQ grad+16(FP), SI
	MOVQ m+24(FP), R8
	MOVQ v+32(FP), R9
	MOVQ c+40(FP), AX
	SHRQ $2, CX
	JZ   adone
	VBROADCASTSD 0(AX), Y8  // b1
	VBROADCASTSD 8(AX), Y9  // 1-b1
	VBROADCASTSD 16(AX), Y10 // b2
	VBROADCASTSD 24(AX), Y11 // 1-b2
	VBROADCASTSD 32(AX), Y12 // step
	VBROADCASTSD 40(AX), Y13 // isc2
	VBROADCASTSD 48(AX), Y14 // eps

aloop:
	VMOVUPD (SI), Y0 // g
	VMULPD  (R8), Y8, Y1
	VFMADD231PD Y9, Y0, Y1 // m
	VMULPD  Y0, Y0, Y2
	VMULPD  (R9), Y10, Y3
	VFMADD231PD Y11, Y2, Y3 // v
	VMOVUPD Y1, (R8)
	VMOVUPD Y3, (R9)
	VSQRTPD Y3, Y4
	VFMADD213PD Y14, Y13, Y4 // sqrt(v) isc2 + eps
	VMULPD  Y12, Y1, Y5
	VDIVPD  Y4, Y5, Y5
	VMOVUPD (DI), Y6
	VSUBPD  Y5, Y6, Y6
	VMOVUPD Y6, (DI)
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	ADDQ    $32, DI
	DECQ    CX
	JNZ     aloop
	VZEROUPPER

adone:
	RET

// func reluAVX2(x *float64, n int)
//
// x[i] = max(x[i], 0) for i < n (a multiple of 4); NaN stays NaN.
TEXT ·reluAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $2, CX
	JZ   rdone
	VXORPD Y1, Y1, Y1

rloop:
	VMOVUPD (DI), Y0
	VMAXPD  Y0, Y1, Y0 // (0 > x) ? 0 : x, which is x when x is NaN
	VMOVUPD Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     rloop
	VZEROUPPER

rdone:
	RET

// func reluGradAVX2(d, y *float64, n int)
//
// d[i] = 0 where !(y[i] > 0), for i < n (a multiple of 4).
TEXT ·reluGradAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	JZ   gdone
	VXORPD Y1, Y1, Y1

gloop:
	VMOVUPD (SI), Y0
	VCMPPD  $0x1e, Y1, Y0, Y2 // y > 0 (GT_OQ: false for NaN)
	VANDPD  (DI), Y2, Y3
	VMOVUPD Y3, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     gloop
	VZEROUPPER

gdone:
	RET

// The AVX-512 kernels below port the AVX2 ones above lane for lane: eight
// lanes per iteration (n a multiple of 8), each lane doing the same
// floating-point operations in the same order, on the same operands in the
// same positions (so even a NaN's payload is picked the same way), with the
// same constants (each read from the tables above and broadcast). Where the
// AVX2 code selects with a compare and a blend or an and-mask, these compare
// into a mask register and blend or zero with it, which selects the same
// values. So their results are bit-identical to the AVX2 kernels'. They use
// AVX512F and, for VCVTPD2QQ, AVX512DQ.

// func tanhAVX512(x *float64, n int)
//
// As tanhAVX2, eight lanes at a time; n a multiple of 8.
TEXT ·tanhAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ   zdone
	VBROADCASTSD tanhc<>+64(SB), Z15 // one
	VBROADCASTSD tanhc<>+96(SB), Z14 // two

zloop:
	VMOVUPD (DI), Z0
	VPANDQ.BCST tanhc<>+0(SB), Z0, Z1 // |x|
	VPANDQ.BCST tanhc<>+32(SB), Z0, Z2 // sign bit
	// exp(2 min(|x|, 22))
	VMINPD.BCST tanhc<>+160(SB), Z1, Z3 // 22 when |x| is NaN, as VMINPD's second operand
	VADDPD  Z3, Z3, Z3 // w
	VMULPD.BCST tanhc<>+192(SB), Z3, Z4
	VRNDSCALEPD $0, Z4, Z4 // k, to nearest (scale 0: VROUNDPD $0)
	VMOVAPD Z3, Z5
	VFNMADD231PD.BCST tanhc<>+224(SB), Z4, Z5 // r = w - k ln2hi
	VFNMADD231PD.BCST tanhc<>+256(SB), Z4, Z5 // r -= k ln2lo
	VBROADCASTSD tanhc<>+288(SB), Z6
	VFMADD213PD.BCST tanhc<>+320(SB), Z5, Z6 // p = p r + 1/12!
	VFMADD213PD.BCST tanhc<>+352(SB), Z5, Z6 // p = p r + 1/11!
	VFMADD213PD.BCST tanhc<>+384(SB), Z5, Z6 // p = p r + 1/10!
	VFMADD213PD.BCST tanhc<>+416(SB), Z5, Z6 // p = p r + 1/9!
	VFMADD213PD.BCST tanhc<>+448(SB), Z5, Z6 // p = p r + 1/8!
	VFMADD213PD.BCST tanhc<>+480(SB), Z5, Z6 // p = p r + 1/7!
	VFMADD213PD.BCST tanhc<>+512(SB), Z5, Z6 // p = p r + 1/6!
	VFMADD213PD.BCST tanhc<>+544(SB), Z5, Z6 // p = p r + 1/5!
	VFMADD213PD.BCST tanhc<>+576(SB), Z5, Z6 // p = p r + 1/4!
	VFMADD213PD.BCST tanhc<>+608(SB), Z5, Z6 // p = p r + 1/3!
	VFMADD213PD.BCST tanhc<>+640(SB), Z5, Z6 // p = p r + 1/2!
	VFMADD213PD Z15, Z5, Z6 // p = p r + 1
	VFMADD213PD Z15, Z5, Z6 // p = p r + 1: exp(r)
	// k is a whole number in [0, 64] (w in [0, 44]), so converting it
	// straight to 64 bits gives what VCVTPD2DQ and VPMOVSXDQ give.
	VCVTPD2QQ Z4, Z7
	VPSLLQ  $52, Z7, Z7
	VPADDQ  Z7, Z6, Z6 // e = exp(r) 2^k
	VADDPD  Z15, Z6, Z8 // e + 1
	// the rational branch
	VMULPD  Z0, Z0, Z9 // s
	VMULPD.BCST tanhc<>+672(SB), Z9, Z10
	VADDPD.BCST tanhc<>+704(SB), Z10, Z10
	VFMADD213PD.BCST tanhc<>+736(SB), Z9, Z10 // P(s)
	VADDPD.BCST tanhc<>+768(SB), Z9, Z11
	VFMADD213PD.BCST tanhc<>+800(SB), Z9, Z11
	VFMADD213PD.BCST tanhc<>+832(SB), Z9, Z11 // Q(s)
	VMULPD  Z9, Z10, Z10
	VMULPD  Z0, Z10, Z10 // x s P(s)
	VCMPPD.BCST $0x1d, tanhc<>+128(SB), Z1, K1 // |x| >= 0.625 (GE_OQ: false for NaN)
	VBLENDMPD Z14, Z10, K1, Z13 // numerator: 2 or x s P(s)
	VBLENDMPD Z8, Z11, K1, Z11 // denominator: e + 1 or Q(s)
	VDIVPD  Z11, Z13, Z13 // q
	VADDPD  Z0, Z13, Z10 // x + q
	VSUBPD  Z13, Z15, Z11 // 1 - q
	VBLENDMPD Z11, Z10, K1, Z0
	VPANDQ.BCST tanhc<>+0(SB), Z0, Z0
	VPORQ   Z2, Z0, Z0 // |result| with the sign of x (tanh(-0) = -0)
	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	DECQ    CX
	JNZ     zloop
	VZEROUPPER

zdone:
	RET

// func adamAVX512(n int, p, grad, m, v *float64, c *[7]float64)
//
// As adamAVX2, eight lanes at a time; n a multiple of 8.
TEXT ·adamAVX512(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ p+8(FP), DI
	MOVQ grad+16(FP), SI
	MOVQ m+24(FP), R8
	MOVQ v+32(FP), R9
	MOVQ c+40(FP), AX
	SHRQ $3, CX
	JZ   zadone
	VBROADCASTSD 0(AX), Z8  // b1
	VBROADCASTSD 8(AX), Z9  // 1-b1
	VBROADCASTSD 16(AX), Z10 // b2
	VBROADCASTSD 24(AX), Z11 // 1-b2
	VBROADCASTSD 32(AX), Z12 // step
	VBROADCASTSD 40(AX), Z13 // isc2
	VBROADCASTSD 48(AX), Z14 // eps

zaloop:
	VMOVUPD (SI), Z0 // g
	VMULPD  (R8), Z8, Z1
	VFMADD231PD Z9, Z0, Z1 // m
	VMULPD  Z0, Z0, Z2
	VMULPD  (R9), Z10, Z3
	VFMADD231PD Z11, Z2, Z3 // v
	VMOVUPD Z1, (R8)
	VMOVUPD Z3, (R9)
	VSQRTPD Z3, Z4
	VFMADD213PD Z14, Z13, Z4 // sqrt(v) isc2 + eps
	VMULPD  Z12, Z1, Z5
	VDIVPD  Z4, Z5, Z5
	VMOVUPD (DI), Z6
	VSUBPD  Z5, Z6, Z6
	VMOVUPD Z6, (DI)
	ADDQ    $64, SI
	ADDQ    $64, R8
	ADDQ    $64, R9
	ADDQ    $64, DI
	DECQ    CX
	JNZ     zaloop
	VZEROUPPER

zadone:
	RET

// func reluAVX512(x *float64, n int)
//
// As reluAVX2, eight lanes at a time; n a multiple of 8.
TEXT ·reluAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ   zrdone
	VPXORQ Z1, Z1, Z1

zrloop:
	VMOVUPD (DI), Z0
	VMAXPD  Z0, Z1, Z0 // (0 > x) ? 0 : x, which is x when x is NaN
	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	DECQ    CX
	JNZ     zrloop
	VZEROUPPER

zrdone:
	RET

// func reluGradAVX512(d, y *float64, n int)
//
// As reluGradAVX2, eight lanes at a time; n a multiple of 8. The compare
// goes to a mask register and a zeroing load replaces the and-mask: both
// keep d where y > 0 and give +0 elsewhere.
TEXT ·reluGradAVX512(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   zgdone
	VPXORQ Z1, Z1, Z1

zgloop:
	VMOVUPD (SI), Z0
	VCMPPD  $0x1e, Z1, Z0, K1 // y > 0 (GT_OQ: false for NaN)
	VMOVUPD.Z (DI), K1, Z3
	VMOVUPD Z3, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	DECQ    CX
	JNZ     zgloop
	VZEROUPPER

zgdone:
	RET

// func polyakAVX2(t, s *float64, n int, tau float64)
//
// t[i] = t[i] + tau (s[i] - t[i]) for i < n (a multiple of 4), as a
// subtraction, a product and a sum, each rounded (Polyak's Go loop).
TEXT ·polyakAVX2(SB), NOSPLIT, $0-32
	MOVQ t+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	JZ   pdone
	VBROADCASTSD tau+24(FP), Y2

ploop:
	VMOVUPD (DI), Y0
	VMOVUPD (SI), Y1
	VSUBPD  Y0, Y1, Y1 // s - t
	VMULPD  Y2, Y1, Y1 // tau (s - t)
	VADDPD  Y1, Y0, Y0 // t + tau (s - t)
	VMOVUPD Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     ploop
	VZEROUPPER

pdone:
	RET

// func polyakAVX512(t, s *float64, n int, tau float64)
//
// polyakAVX2 eight lanes at a time (n a multiple of 8), the same three
// rounded operations per element.
TEXT ·polyakAVX512(SB), NOSPLIT, $0-32
	MOVQ t+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   p5done
	VBROADCASTSD tau+24(FP), Z2

p5loop:
	VMOVUPD (DI), Z0
	VMOVUPD (SI), Z1
	VSUBPD  Z0, Z1, Z1
	VMULPD  Z2, Z1, Z1
	VADDPD  Z1, Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	DECQ    CX
	JNZ     p5loop
	VZEROUPPER

p5done:
	RET

// func tanhGradAVX2(d, y *float64, n int)
//
// d[i] = d[i] (1 - y[i] y[i]) for i < n (a multiple of 4), as a product, a
// difference and a product, each rounded (TanhGrad's Go loop).
TEXT ·tanhGradAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	JZ   tgdone
	MOVQ $0x3FF0000000000000, AX // 1.0
	MOVQ AX, X3
	VBROADCASTSD X3, Y3

tgloop:
	VMOVUPD (SI), Y1
	VMULPD  Y1, Y1, Y1 // y y
	VSUBPD  Y1, Y3, Y1 // 1 - y y
	VMULPD  (DI), Y1, Y1
	VMOVUPD Y1, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     tgloop
	VZEROUPPER

tgdone:
	RET

// func sumRowsAVX2(dst, x *float64, rows, w, cols int)
//
// dst[j] = +0 + x[j] + x[w + j] + ... (rows >= 1 rows of stride w, added in
// order) for j < cols (a multiple of 4): 32 columns at a time in eight
// accumulators (independent chains), then 4 at a time.
TEXT ·sumRowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ w+24(FP), R9
	SHLQ $3, R9
	MOVQ cols+32(FP), CX

sr32:
	CMPQ CX, $32
	JLT  sr4
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ SI, AX
	MOVQ R8, DX

sr32row:
	VADDPD (AX), Y0, Y0
	VADDPD 32(AX), Y1, Y1
	VADDPD 64(AX), Y2, Y2
	VADDPD 96(AX), Y3, Y3
	VADDPD 128(AX), Y4, Y4
	VADDPD 160(AX), Y5, Y5
	VADDPD 192(AX), Y6, Y6
	VADDPD 224(AX), Y7, Y7
	ADDQ R9, AX
	DECQ DX
	JNZ  sr32row
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y4, 128(DI)
	VMOVUPD Y5, 160(DI)
	VMOVUPD Y6, 192(DI)
	VMOVUPD Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $256, SI
	SUBQ $32, CX
	JMP  sr32

sr4:
	CMPQ CX, $4
	JLT  srdone
	VXORPD Y0, Y0, Y0
	MOVQ SI, AX
	MOVQ R8, DX

sr4row:
	VADDPD (AX), Y0, Y0
	ADDQ R9, AX
	DECQ DX
	JNZ  sr4row
	VMOVUPD Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $4, CX
	JMP  sr4

srdone:
	VZEROUPPER
	RET
