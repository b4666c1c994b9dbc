/* AVX-512 RMSNorm (kernels/ops.h): the sum of squares in four 16-lane accumulators, then
 * (a0 + a1) + (a2 + a3) reduced as _mm512_reduce_add_ps; the scaling as the reference. */
#include <immintrin.h>
#include <math.h>

#include "kernels/ops.h"

void ct_rmsnorm_avx512(float *out, const float *x, const float *w, int n, float eps) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
        const __m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);
        a0 = _mm512_fmadd_ps(v0, v0, a0);
        a1 = _mm512_fmadd_ps(v1, v1, a1);
        a2 = _mm512_fmadd_ps(v2, v2, a2);
        a3 = _mm512_fmadd_ps(v3, v3, a3);
    }
    for (; i < n; i += 16) { /* the rest into a0, the last 16 under a mask */
        const __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        a0 = _mm512_fmadd_ps(v, v, a0);
    }
    const float ss = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    const __m512 inv = _mm512_set1_ps(1.0f / sqrtf(ss / (float)n + eps));
    for (i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(out + i, m,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv)));
    }
}
