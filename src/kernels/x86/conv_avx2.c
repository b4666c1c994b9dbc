/* AVX2 + FMA variants of the codec-decoder GEMM and SnakeBeta. GEMM: one 16-channel panel
 * (two ymm) x up to 6 rows of accumulators, K-blocked like the AVX-512 variant (same
 * per-element operation sequence for every tile, block and range: chunking- and
 * thread-invariant). SnakeBeta: the AVX-512 file's reduction + degree-13 polynomial. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/conv.h"

#define OB CT_CV_OB
#define AI static inline __attribute__((always_inline))
#define KB 512        /* reduction steps per block: 512 x 64 B = 32 KiB of weights */
#define ROW_BLOCK 192

AI __m256i half_mask(int v) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), idx);
}

/* Loads / stores 8 floats, masked only in a partial last panel (masked stores are slow on
   some cores and every tile stores its accumulators once per K block). */
AI __m256 load8(const float *p, __m256i m, int full) { return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m); }
AI void store8(float *p, __m256i m, int full, __m256 v) {
    if (full) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, m, v);
}

AI void tile(const ct_cv_gemm_args *a, int b, int k0, int k1, int r, const int R) {
    const ct_cv_packed *W = a->W;
    const int cin = W->cin, v = W->cout - b * OB;
    const __m256i m0 = half_mask(v), m1 = half_mask(v - 8);
    const int full = v >= OB;
    __m256 lo[8], hi[8];
    if (k0 == 0) {
        __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
        if (a->bias) {
            b0 = load8(a->bias + (size_t)b * OB, m0, full);
            b1 = load8(a->bias + (size_t)b * OB + 8, m1, full);
        }
#pragma GCC unroll 8
        for (int rr = 0; rr < R; rr++) {
            if (a->accumulate) {
                const float *yr = a->Y + (size_t)(r + rr) * a->ldy + (size_t)b * OB;
                lo[rr] = _mm256_add_ps(load8(yr, m0, full), b0);
                hi[rr] = _mm256_add_ps(load8(yr + 8, m1, full), b1);
            } else {
                lo[rr] = b0;
                hi[rr] = b1;
            }
        }
    } else {
#pragma GCC unroll 8
        for (int rr = 0; rr < R; rr++) {
            const float *yr = a->Y + (size_t)(r + rr) * a->ldy + (size_t)b * OB;
            lo[rr] = load8(yr, m0, full);
            hi[rr] = load8(yr + 8, m1, full);
        }
    }
    const ptrdiff_t lx = (ptrdiff_t)a->ldx;
    int kk = k0;
    while (kk < k1) {
        const int q = kk / cin, i0 = kk - q * cin;
        int i1 = cin;
        if (q * cin + i1 > k1) i1 = k1 - q * cin;
        const float *w = W->w + ((size_t)b * (size_t)W->k * (size_t)cin + (size_t)a->tap[q] * (size_t)cin + (size_t)i0) * OB;
        const float *x = a->X + (ptrdiff_t)(r + a->off[q]) * lx + i0;
        const int len = i1 - i0;
        for (int i = 0; i < len; i++) {
            const __m256 w0 = _mm256_loadu_ps(w + (size_t)i * OB), w1 = _mm256_loadu_ps(w + (size_t)i * OB + 8);
#pragma GCC unroll 8
            for (int rr = 0; rr < R; rr++) {
                const __m256 xb = _mm256_broadcast_ss(x + (ptrdiff_t)rr * lx + i);
                lo[rr] = _mm256_fmadd_ps(xb, w0, lo[rr]);
                hi[rr] = _mm256_fmadd_ps(xb, w1, hi[rr]);
            }
        }
        kk += len;
    }
#pragma GCC unroll 8
    for (int rr = 0; rr < R; rr++) {
        float *yr = a->Y + (size_t)(r + rr) * a->ldy + (size_t)b * OB;
        store8(yr, m0, full, lo[rr]);
        store8(yr + 8, m1, full, hi[rr]);
    }
}

void ct_cv_gemm_range_avx2(const ct_cv_gemm_args *a, int b0, int b1, int r0, int r1) {
    if (r0 >= r1 || b0 >= b1) return;
    const int K = a->ntaps * a->W->cin;
    for (int b = b0; b < b1; b++)
        for (int rb = r0; rb < r1; rb += ROW_BLOCK) {
            const int re = rb + ROW_BLOCK < r1 ? rb + ROW_BLOCK : r1;
            int k0 = 0;
            do {
                const int k1 = k0 + KB < K ? k0 + KB : K;
                for (int r = rb; r < re;) {
                    const int R = re - r < 6 ? re - r : 6;
                    switch (R) {
                    case 1: tile(a, b, k0, k1, r, 1); break;
                    case 2: tile(a, b, k0, k1, r, 2); break;
                    case 3: tile(a, b, k0, k1, r, 3); break;
                    case 4: tile(a, b, k0, k1, r, 4); break;
                    case 5: tile(a, b, k0, k1, r, 5); break;
                    default: tile(a, b, k0, k1, r, 6); break;
                    }
                    r += R;
                }
                k0 = k1;
            } while (k0 < K);
        }
}

AI __m256 sin2_ps(__m256 z) {
    const __m256 inv_pi = _mm256_set1_ps(0.318309886183790671538f);
    const __m256 p1 = _mm256_set1_ps(3.140625f), p2 = _mm256_set1_ps(9.67502593994140625e-4f),
                 p3 = _mm256_set1_ps(1.509957990978376432e-7f);
    __m256 kq = _mm256_round_ps(_mm256_mul_ps(z, inv_pi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(kq, p1, z);
    r = _mm256_fnmadd_ps(kq, p2, r);
    r = _mm256_fnmadd_ps(kq, p3, r);
    __m256 r2 = _mm256_mul_ps(r, r);
    __m256 p = _mm256_set1_ps(1.6059043836821614599e-10f);
    p = _mm256_fmadd_ps(p, r2, _mm256_set1_ps(-2.5052108385441718775e-8f));
    p = _mm256_fmadd_ps(p, r2, _mm256_set1_ps(2.7557319223985890653e-6f));
    p = _mm256_fmadd_ps(p, r2, _mm256_set1_ps(-1.9841269841269841270e-4f));
    p = _mm256_fmadd_ps(p, r2, _mm256_set1_ps(8.3333333333333333333e-3f));
    p = _mm256_fmadd_ps(p, r2, _mm256_set1_ps(-1.6666666666666666667e-1f));
    __m256 s = _mm256_fmadd_ps(_mm256_mul_ps(p, r2), r, r);
    return _mm256_mul_ps(s, s);
}

void ct_cv_snake_rows_avx2(float *y, const float *x, int r0, int r1, int c, const float *ealpha,
                           const float *inv_beta) {
    const __m256 big = _mm256_set1_ps(8192.0f);
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int t = r0; t < r1; t++) {
        const float *xr = x + (size_t)t * (size_t)c;
        float *yr = y + (size_t)t * (size_t)c;
        int i = 0;
        for (; i + 8 <= c; i += 8) {
            __m256 v = _mm256_loadu_ps(xr + i);
            __m256 z = _mm256_mul_ps(_mm256_loadu_ps(ealpha + i), v);
            __m256 s2 = sin2_ps(z);
            int ok = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(z, absm), big, _CMP_LE_OQ));
            if (ok != 0xFF) {
                float zs[8], ss[8];
                _mm256_storeu_ps(zs, z);
                _mm256_storeu_ps(ss, s2);
                for (int l = 0; l < 8; l++)
                    if (!((ok >> l) & 1)) {
                        float sv = sinf(zs[l]);
                        ss[l] = sv * sv;
                    }
                s2 = _mm256_loadu_ps(ss);
            }
            _mm256_storeu_ps(yr + i, _mm256_fmadd_ps(_mm256_loadu_ps(inv_beta + i), s2, v));
        }
        for (; i < c; i++) {
            float v = xr[i];
            float s = sinf(ealpha[i] * v);
            yr[i] = v + inv_beta[i] * (s * s);
        }
    }
}
