/* Load-time weight quantization: INT8 with per-row absmax scales and INT4 with one absmax
   scale per group of CT_Q4_GROUP columns (formats described on ct_mat in kernels/ops.h).
   Values are rounded to nearest, ties to even (nearbyintf in the default rounding mode). */
#include <math.h>
#include <stdlib.h>

#include "kernels/ops.h"

/* Row r of src as f32 into tmp[cols]. */
static const float *src_row(const void *src, ct_dtype dt, int r, int cols, float *tmp) {
    size_t o = (size_t)r * (size_t)cols;
    if (dt == CT_DT_F32) return (const float *)src + o;
    ct_convert_to_f32((const uint16_t *)src + o, dt, tmp, (size_t)cols);
    return tmp;
}

static float absmax(const float *v, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        float a = fabsf(v[i]);
        m = a > m ? a : m;
    }
    return m;
}

int ct_quantize_i8(const void *src, ct_dtype dt, int rows, int cols, int8_t *q, float *scales) {
    float *tmp = malloc(sizeof(float) * (size_t)(cols > 0 ? cols : 1));
    if (!tmp) return 0;
    for (int r = 0; r < rows; r++) {
        const float *v = src_row(src, dt, r, cols, tmp);
        float amax = absmax(v, cols);
        float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        scales[r] = amax / 127.0f;
        int8_t *d = q + (size_t)r * (size_t)cols;
        for (int c = 0; c < cols; c++) {
            float x = nearbyintf(v[c] * inv);
            x = x > 127.0f ? 127.0f : x < -127.0f ? -127.0f : x;
            d[c] = (int8_t)x;
        }
    }
    free(tmp);
    return 1;
}

int ct_quantize_q4(const void *src, ct_dtype dt, int rows, int cols, uint8_t *q, float *scales) {
    const int ng = cols / CT_Q4_GROUP;
    float *tmp = malloc(sizeof(float) * (size_t)(cols > 0 ? cols : 1));
    if (!tmp) return 0;
    for (int r = 0; r < rows; r++) {
        const float *v = src_row(src, dt, r, cols, tmp);
        for (int g = 0; g < ng; g++) {
            const float *x = v + (size_t)g * CT_Q4_GROUP;
            float amax = absmax(x, CT_Q4_GROUP);
            float inv = amax > 0.0f ? 7.0f / amax : 0.0f;
            scales[(size_t)r * ng + g] = amax / 7.0f;
            uint8_t *b = q + (size_t)r * (size_t)(cols / 2) + (size_t)g * 16;
            for (int j = 0; j < 16; j++) {
                float lo = nearbyintf(x[j] * inv), hi = nearbyintf(x[16 + j] * inv);
                lo = lo < -8.0f ? -8.0f : lo > 7.0f ? 7.0f : lo;
                hi = hi < -8.0f ? -8.0f : hi > 7.0f ? 7.0f : hi;
                b[j] = (uint8_t)(((int)lo + 8) | (((int)hi + 8) << 4));
            }
        }
    }
    free(tmp);
    return 1;
}
