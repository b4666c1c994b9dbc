/* Counter-based random numbers (Philox-4x32-10): the whole state is (key, counter), so a
 * seed replays byte-for-byte and separate stream ids give independent streams. */
#ifndef CT_RNG_H
#define CT_RNG_H

#include <stdint.h>

/* key: derived from (seed, stream_id) by ct_rng_init; counter: number of 64-bit outputs
 * drawn so far. Copying the struct forks an identical stream. */
typedef struct {
    uint64_t key;
    uint64_t counter;
} ct_rng;

/* The raw Philox-4x32-10 block function (Salmon et al. 2011, Random123 conventions):
 * out[4] = philox(ctr[4], key[2]). Pure; exposed for known-answer tests. */
void ct_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Seeds r: key = a bijective 64-bit mix of seed combined with a mix of stream_id (so
 * streams of one seed differ and seeds of one stream differ), counter = 0.
 * stream_id separates independent consumers (e.g. talker vs sub-talker). */
void ct_rng_init(ct_rng *r, uint64_t seed, uint64_t stream_id);

/* Next 64 random bits: word0 | word1 << 32 of philox({counter lo, counter hi, 0, 0},
 * {key lo, key hi}); then counter += 1. Period 2^64 outputs per key. */
uint64_t ct_rng_next_u64(ct_rng *r);

/* Uniform double in [0, 1) with 53 random bits: (next_u64 >> 11) * 2^-53. */
double ct_rng_uniform(ct_rng *r);

#endif
