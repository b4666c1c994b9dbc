/* Shared by the codec kernel tests (test_codec_kernels, test_codec_batch, test_codec_batch_gemm):
   a seeded xorshift generator (define CT_TEST_SEED before including to pick the sequence) and
   the conv-kernel variants this CPU and build run (scalar first). */
#ifndef CT_TEST_CODEC_ISAS_H
#define CT_TEST_CODEC_ISAS_H

#include <stdint.h>

#include "kernels/conv.h"
#include "kernels/cpu.h"

#ifndef CT_TEST_SEED
#define CT_TEST_SEED 0x9E3779B97F4A7C15ull
#endif

static uint64_t rng_state = CT_TEST_SEED;
static inline uint32_t rnd32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
/* Uniform in [-1, 1). */
static inline float rndf(void) { return (float)(rnd32() & 0xFFFFFF) / (float)0x800000 - 1.0f; }

/* isas[0..n_isas): scalar + the variants this CPU and build support (find_isas fills them). */
static int n_isas;
static ct_isa isas[4];
static inline void find_isas(void) {
    ct_cpu_features f;
    ct_cpu_detect(&f);
    static const ct_isa cand[3] = {CT_ISA_SCALAR, CT_ISA_AVX2, CT_ISA_AVX512};
    for (int i = 0; i < 3; i++) {
        ct_cv_exec ex;
        if (ct_isa_supported(cand[i], &f) && ct_cv_exec_init_isa(&ex, NULL, cand[i]) == 0) isas[n_isas++] = cand[i];
    }
}

#endif
