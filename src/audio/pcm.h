/* Float -> 16-bit PCM, the one quantiser every writer uses (WAV files, raw s16le on stdout,
   the server's bodies): clamp to [-1, 1] (NaN -> -1), scale by 32767, round half away from
   zero. */
#ifndef CT_AUDIO_PCM_H
#define CT_AUDIO_PCM_H

#include <stddef.h>
#include <stdint.h>

/* One sample. */
int16_t ct_pcm16_of(float v);

/* n samples as little-endian s16 into dst[2 * n]. */
void ct_pcm_s16le(uint8_t *dst, const float *src, size_t n);

#endif
