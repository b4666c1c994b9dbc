/* The vector ops outside the matmuls, written once for every x86 width: ELU (the speech
 * encoder's), SwiGLU and RMSNorm (the transformers'). Included by vecops_avx2.c and
 * vecops_avx512.c after they define the V_* shims (vector type VT and lanes VN, tail masks TM,
 * compare masks CM) and V_FN (the function-name suffix). exp(x) = p(r) * 2^n with n = round(x
 * / ln 2), r = x - n ln 2 by Cody-Waite (two constants) and p the degree-7 Taylor polynomial
 * (error below 6e-9 relative on |r| <= ln 2 / 2). Every element of ELU and SwiGLU takes the
 * same vector code (a tail under a mask), so any split of a range gives the same bits; RMSNorm
 * sums in a fixed order for each length. */
#include <math.h>

#include "kernels/conv.h"
#include "kernels/ops.h"

#define VAI static inline __attribute__((always_inline))

/* exp(xc) = p * scale for xc in [-88, 88] (scale = 2^n, 0 for n = -127). */
VAI VT exp_parts(VT xc, VT *scale) {
    const VT n = V_ROUND(V_MUL(xc, V_SET1(1.44269504088896341f)));
    VT r = V_FNMA(n, V_SET1(0.693359375f), xc);
    r = V_FNMA(n, V_SET1(-2.12194440e-4f), r);
    VT p = V_SET1(1.0f / 5040.0f);
    p = V_FMA(p, r, V_SET1(1.0f / 720.0f));
    p = V_FMA(p, r, V_SET1(1.0f / 120.0f));
    p = V_FMA(p, r, V_SET1(1.0f / 24.0f));
    p = V_FMA(p, r, V_SET1(1.0f / 6.0f));
    p = V_FMA(p, r, V_SET1(0.5f));
    p = V_FMA(p, r, V_SET1(1.0f));
    p = V_FMA(p, r, V_SET1(1.0f));
    *scale = V_POW2I(n);
    return p;
}

/* ELU (kernels/conv.h): x > 0 ? x : expm1(x), expm1 by a degree-9 Taylor series on (-0.5, 0]
 * and exp(x) - 1 below. */
VAI VT elu_v(VT x) {
    const VT xc = V_MIN(V_MAX(x, V_SET1(-88.0f)), V_ZERO());
    VT scale;
    const VT p = exp_parts(xc, &scale);
    const VT big = V_FMS(p, scale, V_SET1(1.0f));
    VT q = V_SET1(1.0f / 362880.0f); /* expm1 series for xc > -0.5 */
    q = V_FMA(q, xc, V_SET1(1.0f / 40320.0f));
    q = V_FMA(q, xc, V_SET1(1.0f / 5040.0f));
    q = V_FMA(q, xc, V_SET1(1.0f / 720.0f));
    q = V_FMA(q, xc, V_SET1(1.0f / 120.0f));
    q = V_FMA(q, xc, V_SET1(1.0f / 24.0f));
    q = V_FMA(q, xc, V_SET1(1.0f / 6.0f));
    q = V_FMA(q, xc, V_SET1(0.5f));
    const VT small = V_FMA(V_MUL(q, xc), xc, xc);
    const VT y = V_BLEND(V_GT(xc, V_SET1(-0.5f)), big, small);
    return V_BLEND(V_MOR(V_GT(x, V_ZERO()), V_UNORD(x)), y, x); /* x > 0 or NaN: x itself */
}

void V_FN(ct_cv_elu)(float *y, const float *x, size_t lo, size_t hi) {
    size_t i = lo;
    for (; i + VN <= hi; i += VN) V_STORE(y + i, elu_v(V_LOAD(x + i)));
    if (i < hi) {
        const TM m = V_TMASK((int)(hi - i));
        V_TSTORE(y + i, m, elu_v(V_TLOAD(m, x + i)));
    }
}

/* SwiGLU (kernels/ops.h): a / (1 + exp(-a)) * b, exp(-a) with -a clamped to [-88, 88]; below
 * a = -88 the gate is 0 (|silu(a)| < 6e-37 there); a NaN stays NaN through the numerator. */
VAI VT swiglu_v(VT a, VT b) {
    const VT xc = V_MIN(V_MAX(V_SUB(V_ZERO(), a), V_SET1(-88.0f)), V_SET1(88.0f));
    VT scale;
    const VT p = exp_parts(xc, &scale);
    const VT s = V_DIV(a, V_FMA(p, scale, V_SET1(1.0f)));
    return V_MUL(V_BLEND(V_LT(a, V_SET1(-88.0f)), s, V_ZERO()), b);
}

void V_FN(ct_swiglu)(float *y, const float *a, const float *b, int n) {
    int i = 0;
    for (; i + VN <= n; i += VN) V_STORE(y + i, swiglu_v(V_LOAD(a + i), V_LOAD(b + i)));
    if (i < n) {
        const TM m = V_TMASK(n - i);
        V_TSTORE(y + i, m, swiglu_v(V_TLOAD(m, a + i), V_TLOAD(m, b + i)));
    }
}

/* RMSNorm (kernels/ops.h): the sum of squares in four accumulators over blocks of 4 VN, the
 * rest (the last part under a mask) into the first, then (a0 + a1) + (a2 + a3) reduced by
 * V_HSUM; the scaling as the reference. */
void V_FN(ct_rmsnorm)(float *out, const float *x, const float *w, int n, float eps) {
    VT a0 = V_ZERO(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 4 * VN <= n; i += 4 * VN) {
        const VT v0 = V_LOAD(x + i), v1 = V_LOAD(x + i + VN), v2 = V_LOAD(x + i + 2 * VN), v3 = V_LOAD(x + i + 3 * VN);
        a0 = V_FMA(v0, v0, a0);
        a1 = V_FMA(v1, v1, a1);
        a2 = V_FMA(v2, v2, a2);
        a3 = V_FMA(v3, v3, a3);
    }
    for (; i < n; i += VN) {
        const VT v = i + VN <= n ? V_LOAD(x + i) : V_TLOAD(V_TMASK(n - i), x + i);
        a0 = V_FMA(v, v, a0);
    }
    const float ss = V_HSUM(V_ADD(V_ADD(a0, a1), V_ADD(a2, a3)));
    const VT inv = V_SET1(1.0f / sqrtf(ss / (float)n + eps));
    for (i = 0; i + VN <= n; i += VN) V_STORE(out + i, V_MUL(V_LOAD(w + i), V_MUL(V_LOAD(x + i), inv)));
    if (i < n) {
        const TM m = V_TMASK(n - i);
        V_TSTORE(out + i, m, V_MUL(V_TLOAD(m, w + i), V_MUL(V_TLOAD(m, x + i), inv)));
    }
}
