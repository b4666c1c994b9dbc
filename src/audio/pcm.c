/* Float -> 16-bit PCM (see pcm.h). */
#include "audio/pcm.h"

int16_t ct_pcm16_of(float v) {
    if (!(v >= -1.0f)) v = -1.0f; /* also maps NaN to -1 */
    if (v > 1.0f) v = 1.0f;
    float s = v * 32767.0f;
    return (int16_t)(int)(s < 0 ? s - 0.5f : s + 0.5f);
}

void ct_pcm_s16le(uint8_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint16_t u = (uint16_t)ct_pcm16_of(src[i]);
        dst[2 * i] = (uint8_t)u;
        dst[2 * i + 1] = (uint8_t)(u >> 8);
    }
}
