/* Philox-4x32-10 counter-based generator and the ct_rng stream built on it. */
#include "core/rng.h"

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

void ct_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* splitmix64 finaliser: a bijection on 64-bit values. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void ct_rng_init(ct_rng *r, uint64_t seed, uint64_t stream_id) {
    /* For a fixed stream the map seed -> key is a bijection, and likewise for a fixed
     * seed; the stream term is mixed separately so (s, t) and (t, s) differ. */
    r->key = mix64(seed + UINT64_C(0x9E3779B97F4A7C15)) ^
             mix64(mix64(stream_id) + UINT64_C(0xD1B54A32D192ED03));
    r->counter = 0;
}

uint64_t ct_rng_next_u64(ct_rng *r) {
    uint32_t ctr[4] = {(uint32_t)r->counter, (uint32_t)(r->counter >> 32), 0, 0};
    uint32_t key[2] = {(uint32_t)r->key, (uint32_t)(r->key >> 32)};
    uint32_t out[4];
    ct_philox4x32_10(ctr, key, out);
    r->counter++;
    return (uint64_t)out[0] | ((uint64_t)out[1] << 32);
}

double ct_rng_uniform(ct_rng *r) {
    return (double)(ct_rng_next_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}
