/* Tests for the sampler (HF logits-processor chain + draw) and the Philox counter RNG:
 * hand-derived processor cases, HF reference outputs (tests/data/sampler/hf_ref.txt from
 * tools/sampler_ref.py with torch 2.5.1 / transformers 4.57.3), RNG known answers,
 * replay, and a chi-square check of the draw. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ct_test.h"
#include "model/sampler.h"

#define NINF (-INFINITY)

static void *g_scratch; /* ct_sampler_scratch_bytes(4096), allocated in main */

static ct_sample_cfg cfg_make(int do_sample, float t, int k, float p, float pen) {
    ct_sample_cfg c;
    c.do_sample = do_sample;
    c.temperature = t;
    c.top_k = k;
    c.top_p = p;
    c.repetition_penalty = pen;
    return c;
}

static int same_float(float a, float b) {
    if (isinf(a) || isinf(b)) return a == b;
    return fabsf(a - b) <= 1e-6f * fmaxf(1.0f, fabsf(b));
}

/* Processed scores that are not bit-identical to the reference (NaN never occurs here). */
static int bits_differ(const float *got, const float *want, int n) {
    int d = 0;
    for (int i = 0; i < n; i++) d += memcmp(&got[i], &want[i], sizeof(float)) != 0;
    return d;
}

static int arrays_match(const float *got, const float *want, int n) {
    for (int i = 0; i < n; i++)
        if (!same_float(got[i], want[i])) {
            fprintf(stderr, "  index %d: got %.9g want %.9g\n", i, (double)got[i], (double)want[i]);
            return 0;
        }
    return 1;
}

/* ---------------------------------------------------------------- RNG */

static void test_rng_known_answers(void) {
    /* Random123 kat_vectors for philox4x32_10. */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int t = 0; t < 3; t++) {
        uint32_t out[4];
        ct_philox4x32_10(kat[t], kat[t] + 4, out);
        CHECKF(memcmp(out, kat[t] + 6, sizeof out) == 0, "philox KAT %d: %08x %08x %08x %08x", t,
               out[0], out[1], out[2], out[3]);
    }
    /* ct_rng stream values, computed once with this implementation and pinned. */
    ct_rng r;
    ct_rng_init(&r, 0, 0);
    const uint64_t a0 = ct_rng_next_u64(&r), a1 = ct_rng_next_u64(&r);
    ct_rng_init(&r, 42, 1);
    const uint64_t b0 = ct_rng_next_u64(&r);
    CHECKF(a0 == UINT64_C(0x0e37cac227482531) && a1 == UINT64_C(0xb2fb5b6739be25e2) &&
               b0 == UINT64_C(0x45a97d93b364d635),
           "pinned: %016llx %016llx %016llx", (unsigned long long)a0, (unsigned long long)a1,
           (unsigned long long)b0);
    /* The output is philox of (counter, key) as documented. */
    ct_rng_init(&r, 7, 3);
    r.counter = UINT64_C(0x0000000500000009);
    const uint64_t key = r.key;
    const uint64_t v = ct_rng_next_u64(&r);
    uint32_t ctr[4] = {9, 5, 0, 0}, k2[2] = {(uint32_t)key, (uint32_t)(key >> 32)}, o[4];
    ct_philox4x32_10(ctr, k2, o);
    CHECK(v == ((uint64_t)o[0] | (uint64_t)o[1] << 32));
    CHECK(r.counter == UINT64_C(0x000000050000000a));
}

static void test_rng_replay_and_streams(void) {
    ct_rng a, b, c, d;
    ct_rng_init(&a, 1234, 0);
    ct_rng_init(&b, 1234, 0);
    ct_rng_init(&c, 1234, 1);
    ct_rng_init(&d, 1235, 0);
    int same_ab = 1, diff_ac = 0, diff_ad = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = ct_rng_next_u64(&a), y = ct_rng_next_u64(&b);
        uint64_t z = ct_rng_next_u64(&c), w = ct_rng_next_u64(&d);
        same_ab &= x == y;
        diff_ac += x != z;
        diff_ad += x != w;
    }
    CHECK(same_ab);
    CHECK(diff_ac == 1000);
    CHECK(diff_ad == 1000);
    CHECK(a.key != c.key && a.key != d.key);
    /* Copying the state forks an identical stream. */
    ct_rng e = a;
    CHECK(ct_rng_next_u64(&e) == ct_rng_next_u64(&a));
    /* (seed, stream) and (stream, seed) are different streams. */
    ct_rng f, g;
    ct_rng_init(&f, 3, 5);
    ct_rng_init(&g, 5, 3);
    CHECK(f.key != g.key);
}

static void test_rng_uniformity(void) {
    ct_rng r;
    ct_rng_init(&r, 99, 7);
    const int N = 1000000;
    double sum = 0, sum2 = 0;
    long bucket[16] = {0};
    int in_range = 1;
    for (int i = 0; i < N; i++) {
        double u = ct_rng_uniform(&r);
        in_range &= u >= 0.0 && u < 1.0;
        sum += u;
        sum2 += u * u;
        bucket[(int)(u * 16)]++;
    }
    const double mean = sum / N, var = sum2 / N - mean * mean;
    CHECK(in_range);
    CHECKF(fabs(mean - 0.5) < 0.002, "mean %g", mean);
    CHECKF(fabs(var - 1.0 / 12) < 0.001, "var %g", var);
    double chi = 0;
    for (int b = 0; b < 16; b++) {
        double e = N / 16.0, dlt = bucket[b] - e;
        chi += dlt * dlt / e;
    }
    CHECKF(chi < 37.70, "uniform 16-bucket chi2 %g (df 15, p=0.001 critical 37.70)", chi);
    /* Every bit of the u64 output is balanced. */
    long ones[64] = {0};
    const int M = 100000;
    for (int i = 0; i < M; i++) {
        uint64_t x = ct_rng_next_u64(&r);
        for (int bit = 0; bit < 64; bit++) ones[bit] += (long)((x >> bit) & 1u);
    }
    int balanced = 1;
    for (int bit = 0; bit < 64; bit++) balanced &= labs(ones[bit] - M / 2) < 800; /* ~5 sigma */
    CHECK(balanced);
    /* Uniform uses the top 53 bits exactly. */
    ct_rng s = r, t = r;
    CHECK(ct_rng_uniform(&s) == (double)(ct_rng_next_u64(&t) >> 11) / 9007199254740992.0);
}

/* ---------------------------------------------------------------- processors, by hand */

static void test_penalty_sign_rule(void) {
    float x[6] = {2.0f, -2.0f, 0.0f, 1.0f, -1.0f, 3.0f};
    uint8_t seen[6] = {1, 1, 1, 0, 0, 0};
    ct_sample_cfg c = cfg_make(0, 1.0f, 0, 1.0f, 2.0f);
    int id = ct_sample_talker(x, 6, &c, seen, 3, 0, -1, 1, 0, NULL, g_scratch);
    const float want[6] = {1.0f, -4.0f, 0.0f, 1.0f, -1.0f, 3.0f};
    CHECK(arrays_match(x, want, 6));
    CHECK(id == 5);
    /* Distinct ids: a flag penalises its id exactly once per call, however often it was
     * generated (n_generated = 40 here). */
    float y[3] = {1.05f, -1.0f, 0.5f};
    uint8_t s2[3] = {1, 1, 0};
    c.repetition_penalty = 1.05f;
    id = ct_sample_talker(y, 3, &c, s2, 40, 0, -1, 1, 0, NULL, g_scratch);
    CHECK(y[0] == 1.05f / 1.05f && y[1] == -1.0f * 1.05f && y[2] == 0.5f);
    CHECK(id == 0);
    /* Penalty 1 leaves everything, NULL seen means no history. */
    float z[3] = {1.0f, -1.0f, 0.5f};
    c.repetition_penalty = 3.0f;
    ct_sample_talker(z, 3, &c, NULL, 0, 0, -1, 1, 0, NULL, g_scratch);
    CHECK(z[0] == 1.0f && z[1] == -1.0f && z[2] == 0.5f);
}

static void test_min_new_tokens_and_suppression(void) {
    ct_sample_cfg c = cfg_make(0, 1.0f, 0, 1.0f, 1.0f);
    float x[8] = {0, 1, 2, 9, 3, 4, 5, 0.5f};
    int id = ct_sample_talker(x, 8, &c, NULL, 1, 2, 3, 1, 0, NULL, g_scratch);
    CHECK(x[3] == NINF);
    CHECK(id == 6);
    float y[8] = {0, 1, 2, 9, 3, 4, 5, 0.5f};
    id = ct_sample_talker(y, 8, &c, NULL, 2, 2, 3, 1, 0, NULL, g_scratch);
    CHECK(y[3] == 9.0f && id == 3);
    /* Suppression of [2,5] keeps EOS (3). */
    float z[8] = {0, 1, 2, 9, 3, 4, 5, 0.5f};
    id = ct_sample_talker(z, 8, &c, NULL, 5, 2, 3, 2, 5, NULL, g_scratch);
    const float want[8] = {0, 1, NINF, 9, NINF, NINF, 5, 0.5f};
    CHECK(arrays_match(z, want, 8));
    CHECK(id == 3);
    /* Both: EOS masked by min-new-tokens, the rest suppressed. */
    float w[8] = {0, 1, 2, 9, 3, 4, 5, 0.5f};
    id = ct_sample_talker(w, 8, &c, NULL, 0, 2, 3, 2, 5, NULL, g_scratch);
    CHECK(w[3] == NINF && w[2] == NINF && id == 6);
    /* Range clipped to the vocab; lo > hi disables. */
    float v[4] = {1, 2, 3, 4};
    id = ct_sample_talker(v, 4, &c, NULL, 0, 0, -1, 2, 100, NULL, g_scratch);
    CHECK(v[2] == NINF && v[3] == NINF && v[1] == 2.0f && id == 1);
    float u[4] = {1, 2, 3, 4};
    id = ct_sample_talker(u, 4, &c, NULL, 0, 0, -1, 3, 2, NULL, g_scratch);
    CHECK(u[2] == 3.0f && u[3] == 4.0f && id == 3);
}

static void test_greedy_ties_and_warpers_off(void) {
    /* Greedy ignores temperature/top-k/top-p and picks the first maximum. */
    ct_sample_cfg c = cfg_make(0, 0.5f, 1, 0.1f, 1.0f);
    float x[5] = {1, 7, 3, 7, 7};
    CHECK(ct_sample_plain(x, 5, &c, NULL, NULL) == 1);
    CHECK(x[0] == 1.0f && x[2] == 3.0f); /* no temperature, no top-k mask */
}

static void test_top_k_ties(void) {
    ct_rng r;
    ct_rng_init(&r, 5, 0);
    ct_sample_cfg c = cfg_make(1, 1.0f, 2, 1.0f, 1.0f);
    int ok = 1;
    for (int rep = 0; rep < 50; rep++) {
        float x[6] = {1, 3, 3, 2, 3, 0};
        int id = ct_sample_plain(x, 6, &c, &r, g_scratch);
        const float want[6] = {NINF, 3, 3, NINF, 3, NINF};
        ok &= arrays_match(x, want, 6) && (id == 1 || id == 2 || id == 4);
    }
    CHECK(ok);
    /* Temperature is applied before top-k (x / T then the k-th largest). */
    float y[4] = {4, 2, 1, 3};
    c = cfg_make(1, 2.0f, 2, 1.0f, 1.0f);
    ct_sample_plain(y, 4, &c, &r, g_scratch);
    const float want2[4] = {2, NINF, NINF, 1.5f};
    CHECK(arrays_match(y, want2, 4));
    /* Division by T can round a value just below the k-th largest onto it; HF divides first,
     * so such a value is a tie and is kept. Find a T where 1-2^-24 and 1 collide. */
    const float below = nextafterf(1.0f, 0.0f);
    float tcol = 0.0f;
    for (float tt = 1.5f; tt < 40.0f; tt += 0.03125f)
        if (below / tt == 1.0f / tt) {
            tcol = tt;
            break;
        }
    CHECK(tcol > 0.0f);
    float col[3] = {below, 1.0f, 0.5f};
    c = cfg_make(1, tcol, 1, 1.0f, 1.0f);
    ct_sample_plain(col, 3, &c, &r, g_scratch);
    CHECK(col[0] == 1.0f / tcol && col[1] == 1.0f / tcol && col[2] == NINF);
    /* +inf as the k-th largest: a finite value overflowing to +inf under T < 1 ties it. */
    float big[3] = {INFINITY, FLT_MAX, 1.0f};
    c = cfg_make(1, 0.5f, 1, 1.0f, 1.0f);
    int bid = ct_sample_plain(big, 3, &c, &r, g_scratch);
    CHECK(big[0] == INFINITY && big[1] == INFINITY && big[2] == NINF && (bid == 0 || bid == 1));
    /* Fewer finite entries than k: nothing else removed. */
    float z[5] = {NINF, 1, NINF, NINF, 2};
    c = cfg_make(1, 1.0f, 3, 1.0f, 1.0f);
    int id = ct_sample_plain(z, 5, &c, &r, g_scratch);
    CHECK(z[1] == 1.0f && z[4] == 2.0f && (id == 1 || id == 4));
}

static int cmp_desc(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* Heap top-k against a full sort on random data with ties and -inf. */
static void test_top_k_vs_sort(void) {
    static float x[3072], copy[3072], sorted[3072];
    ct_rng r, draw;
    ct_rng_init(&r, 77, 9);
    ct_rng_init(&draw, 1, 1);
    int ok = 1;
    for (int t = 0; t < 300 && ok; t++) {
        int n = 1 + (int)(ct_rng_next_u64(&r) % 3072);
        int k = 1 + (int)(ct_rng_next_u64(&r) % (uint64_t)n);
        int mode = t % 3;
        for (int i = 0; i < n; i++) {
            double u = ct_rng_uniform(&r);
            x[i] = mode == 0 ? (float)(u * 20 - 10) : (float)(int)(u * 7 - 3); /* ties */
            if (mode == 2 && u < 0.3) x[i] = NINF;
        }
        memcpy(copy, x, sizeof(float) * (size_t)n);
        memcpy(sorted, x, sizeof(float) * (size_t)n);
        qsort(sorted, (size_t)n, sizeof(float), cmp_desc);
        const float thr = sorted[k - 1];
        ct_sample_cfg c = cfg_make(1, 1.0f, k, 1.0f, 1.0f);
        int id = ct_sample_plain(x, n, &c, &draw, g_scratch);
        for (int i = 0; i < n; i++) {
            float want = (k < n && copy[i] < thr) ? NINF : copy[i];
            if (x[i] != want) ok = 0;
        }
        if (!(id >= 0 && id < n && x[id] != NINF) && sorted[0] != NINF) ok = 0;
        if (!ok) fprintf(stderr, "  top-k mismatch: t=%d n=%d k=%d mode=%d\n", t, n, k, mode);
    }
    CHECK(ok);
}

static void test_top_p_rules(void) {
    ct_rng r;
    ct_rng_init(&r, 11, 0);
    /* HF boundary: equal logits, cumulative 0.25, 0.5, 0.75, 1; remove while <= 1 - top_p;
     * ascending order is stable (lower ids removed first). */
    struct {
        float p;
        float want[4];
    } b[3] = {{0.5f, {NINF, NINF, 0, 0}}, {0.75f, {NINF, 0, 0, 0}}, {0.25f, {NINF, NINF, NINF, 0}}};
    for (int t = 0; t < 3; t++) {
        float x[4] = {0, 0, 0, 0};
        ct_sample_cfg c = cfg_make(1, 1.0f, 0, b[t].p, 1.0f);
        int id = ct_sample_plain(x, 4, &c, &r, g_scratch);
        CHECKF(arrays_match(x, b[t].want, 4), "top_p %g", (double)b[t].p);
        CHECK(id >= 0 && x[id] == 0.0f);
    }
    /* -0 and +0 are equal logits (torch compares them equal): order by id, as HF gives
     * for both orders. */
    float zz[2] = {0.0f, -0.0f}, zy[2] = {-0.0f, 0.0f};
    ct_sample_cfg ch = cfg_make(1, 1.0f, 0, 0.5f, 1.0f);
    ct_sample_plain(zz, 2, &ch, &r, g_scratch);
    ct_sample_plain(zy, 2, &ch, &r, g_scratch);
    CHECK(zz[0] == NINF && zz[1] == 0.0f && zy[0] == NINF && zy[1] == 0.0f);
    /* At least one token survives, however small top_p is. */
    float y[3] = {10, 0, 0};
    ct_sample_cfg c = cfg_make(1, 1.0f, 0, 1e-6f, 1.0f);
    CHECK(ct_sample_plain(y, 3, &c, &r, g_scratch) == 0);
    CHECK(y[1] == NINF && y[2] == NINF && y[0] == 10.0f);
    float z[3] = {5, 5, 5};
    CHECK(ct_sample_plain(z, 3, &c, &r, g_scratch) == 2); /* the last in stable ascending order */
    /* top_p = 1 is not installed: nothing removed even for negligible tokens. */
    float w[3] = {30, -30, 0};
    c = cfg_make(1, 1.0f, 0, 1.0f, 1.0f);
    ct_sample_plain(w, 3, &c, &r, g_scratch);
    CHECK(w[1] == -30.0f && w[2] == 0.0f);
    /* Probabilities ~{0.5, 0.25, 0.125, 0.125}: top_p 0.7 (threshold 0.3) drops the two
     * smallest (cumulative 0.125, 0.25) and keeps 0.25 (cumulative 0.5) and 0.5. */
    float v[4] = {0, -0.6931472f, -1.3862944f, -1.3862944f};
    c = cfg_make(1, 1.0f, 0, 0.7f, 1.0f);
    ct_sample_plain(v, 4, &c, &r, g_scratch);
    CHECK(v[0] == 0.0f && v[1] != NINF && v[2] == NINF && v[3] == NINF);
}

static void test_invalid_logits(void) {
    ct_rng r;
    ct_rng_init(&r, 3, 3);
    ct_sample_cfg cs = cfg_make(1, 0.9f, 50, 1.0f, 1.05f), cg = cfg_make(0, 1.0f, 0, 1.0f, 1.0f);
    float x[4] = {NINF, NINF, NINF, NINF};
    uint64_t before = r.counter;
    CHECK(ct_sample_plain(x, 4, &cs, &r, g_scratch) == -1);
    CHECK(r.counter == before); /* no draw */
    CHECK(ct_sample_plain(x, 4, &cg, NULL, NULL) == -1);
    /* Everything suppressed (EOS masked by min-new-tokens). */
    float y[4] = {1, 2, 3, 4};
    CHECK(ct_sample_talker(y, 4, &cs, NULL, 0, 2, 3, 0, 3, &r, g_scratch) == -1);
    CHECK(r.counter == before);
    /* NaN: treated as -inf, never chosen; all NaN -> -1. */
    float n1[4] = {NAN, 1, NAN, 0};
    CHECK(ct_sample_plain(n1, 4, &cg, NULL, NULL) == 1);
    CHECK(n1[0] == NINF && n1[2] == NINF);
    int ok = 1;
    for (int i = 0; i < 200; i++) {
        float n2[4] = {NAN, 1, NAN, 0};
        int id = ct_sample_plain(n2, 4, &cs, &r, g_scratch);
        ok &= id == 1 || id == 3;
    }
    CHECK(ok);
    float n3[3] = {NAN, NAN, NAN};
    CHECK(ct_sample_plain(n3, 3, &cs, &r, g_scratch) == -1);
    float n4[3] = {NAN, -NAN, NAN};
    CHECK(ct_sample_talker(n4, 3, &cg, NULL, 0, 0, -1, 1, 0, NULL, NULL) == -1);
    /* +inf entries share the mass; finite ones get none. */
    int hits[3] = {0, 0, 0};
    for (int i = 0; i < 400; i++) {
        float p[3] = {INFINITY, 0, INFINITY};
        int id = ct_sample_plain(p, 3, &cs, &r, g_scratch);
        if (id >= 0 && id < 3) hits[id]++;
    }
    CHECK(hits[1] == 0 && hits[0] > 150 && hits[2] > 150);
    /* Bad arguments. */
    float q[2] = {1, 2};
    CHECK(ct_sample_plain(NULL, 2, &cs, &r, g_scratch) == -1);
    CHECK(ct_sample_plain(q, 0, &cs, &r, g_scratch) == -1);
    CHECK(ct_sample_plain(q, 2, NULL, &r, g_scratch) == -1);
    CHECK(ct_sample_plain(q, 2, &cs, NULL, g_scratch) == -1);
    CHECK(ct_sample_plain(q, 2, &cs, &r, NULL) == -1);
    ct_sample_cfg bad = cs;
    bad.temperature = 0.0f;
    CHECK(ct_sample_plain(q, 2, &bad, &r, g_scratch) == -1);
    CHECK(ct_sampler_scratch_bytes(0) == 0 && ct_sampler_scratch_bytes(3072) >= 3072 * 32);
}

static void test_cfg_check(void) {
    char err[160];
    ct_sample_cfg ok = cfg_make(1, 0.9f, 50, 1.0f, 1.05f);
    CHECK(ct_sample_cfg_check(&ok, err, sizeof err) == CT_OK);
    ok.top_k = -3; /* disables */
    CHECK(ct_sample_cfg_check(&ok, err, sizeof err) == CT_OK);
    struct {
        ct_sample_cfg c;
        const char *field;
    } bad[] = {
        {cfg_make(1, 0.0f, 50, 1.0f, 1.0f), "temperature"},
        {cfg_make(1, -1.0f, 50, 1.0f, 1.0f), "temperature"},
        {cfg_make(1, NAN, 50, 1.0f, 1.0f), "temperature"},
        {cfg_make(1, INFINITY, 50, 1.0f, 1.0f), "temperature"},
        {cfg_make(1, 0.9f, 50, 0.0f, 1.0f), "top_p"},
        {cfg_make(1, 0.9f, 50, 1.5f, 1.0f), "top_p"},
        {cfg_make(1, 0.9f, 50, NAN, 1.0f), "top_p"},
        {cfg_make(1, 0.9f, 50, 1.0f, 0.0f), "repetition_penalty"},
        {cfg_make(1, 0.9f, 50, 1.0f, -2.0f), "repetition_penalty"},
        {cfg_make(2, 0.9f, 50, 1.0f, 1.0f), "do_sample"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        ct_status st = ct_sample_cfg_check(&bad[i].c, err, sizeof err);
        CHECKF(st == CT_ERR_INVALID_ARG && strstr(err, bad[i].field), "case %zu: '%s'", i, err);
    }
    CHECK(ct_sample_cfg_check(NULL, err, sizeof err) == CT_ERR_INVALID_ARG);
    /* Greedy ignores temperature and top_p (HF only warns), but not the penalty. */
    ct_sample_cfg g = cfg_make(0, 0.0f, 0, 0.0f, 1.05f);
    CHECK(ct_sample_cfg_check(&g, err, sizeof err) == CT_OK);
    g.repetition_penalty = 0.0f;
    CHECK(ct_sample_cfg_check(&g, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "repetition_penalty"));
    CHECK(ct_sample_cfg_check(&bad[0].c, NULL, 0) == CT_ERR_INVALID_ARG);
}

/* ---------------------------------------------------------------- draws */

static void test_seeded_replay(void) {
    static float base[3072], x[3072];
    ct_rng g;
    ct_rng_init(&g, 2024, 0);
    for (int i = 0; i < 3072; i++) base[i] = (float)(ct_rng_uniform(&g) * 6 - 3);
    ct_sample_cfg c = cfg_make(1, 0.9f, 50, 0.95f, 1.05f);
    int seq[3][64];
    uint64_t seeds[3] = {7, 7, 7}, streams[3] = {0, 0, 1};
    for (int s = 0; s < 3; s++) {
        ct_rng r;
        ct_rng_init(&r, seeds[s], streams[s]);
        memset(g_scratch, s * 37, ct_sampler_scratch_bytes(4096)); /* dirty scratch is fine */
        for (int t = 0; t < 64; t++) {
            memcpy(x, base, sizeof x);
            uint64_t before = r.counter;
            seq[s][t] = ct_sample_plain(x, 3072, &c, &r, g_scratch);
            if (r.counter != before + 1) seq[s][t] = -2; /* exactly one u64 per draw */
        }
    }
    CHECK(memcmp(seq[0], seq[1], sizeof seq[0]) == 0);
    CHECK(memcmp(seq[0], seq[2], sizeof seq[0]) != 0);
    int valid = 1;
    for (int t = 0; t < 64; t++) valid &= seq[0][t] >= 0;
    CHECK(valid);
}

/* Chi-square of N draws against softmax(logits / T) over the kept ids. */
static double chi_square(const float *logits, int n, const ct_sample_cfg *c, int N, int *outside) {
    double p[16], z = 0, mx = -INFINITY;
    long cnt[16] = {0};
    float x[16];
    ct_rng r;
    ct_rng_init(&r, 31337, 2);
    memcpy(x, logits, sizeof(float) * (size_t)n);
    ct_sample_plain(x, n, c, &r, g_scratch); /* processed logits tell what is kept */
    for (int i = 0; i < n; i++)
        if (x[i] != NINF && x[i] > mx) mx = x[i];
    for (int i = 0; i < n; i++) {
        p[i] = x[i] == NINF ? 0.0 : exp((double)x[i] - mx);
        z += p[i];
    }
    *outside = 0;
    for (int t = 0; t < N; t++) {
        memcpy(x, logits, sizeof(float) * (size_t)n);
        int id = ct_sample_plain(x, n, c, &r, g_scratch);
        if (id < 0 || p[id] == 0.0) (*outside)++;
        else cnt[id]++;
    }
    double chi = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] == 0.0) continue;
        double e = N * p[i] / z, d = cnt[i] - e;
        chi += d * d / e;
    }
    return chi;
}

static void test_draw_distribution(void) {
    const float lg[8] = {0.5f, 1.0f, -0.3f, 2.0f, 0.0f, -1.0f, 1.5f, 0.2f};
    int outside;
    ct_sample_cfg c = cfg_make(1, 0.8f, 0, 1.0f, 1.0f);
    double chi = chi_square(lg, 8, &c, 200000, &outside);
    CHECKF(chi < 24.32 && outside == 0, "chi2 %g (df 7, p=0.001 critical 24.32), outside %d", chi,
           outside);
    c = cfg_make(1, 0.8f, 3, 1.0f, 1.0f);
    chi = chi_square(lg, 8, &c, 100000, &outside);
    CHECKF(chi < 13.82 && outside == 0, "top-3 chi2 %g (df 2, critical 13.82), outside %d", chi,
           outside);
    c = cfg_make(1, 1.0f, 0, 0.7f, 1.0f);
    chi = chi_square(lg, 8, &c, 100000, &outside);
    CHECKF(chi < 16.27 && outside == 0, "top-p chi2 %g (df <= 3, critical 16.27), outside %d", chi,
           outside);
}

/* ---------------------------------------------------------------- HF reference data */

static int cmp_asc(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Multiset equality of processed scores: for top-p over exactly tied logits HF's choice of
 * which tied ids survive follows torch's unstable sort (CPU and CUDA differ); only how many
 * of each value survive is defined, and that is what is compared. */
static int multiset_match(const float *got, const float *want, int n) {
    static float a[4096], b[4096];
    memcpy(a, got, sizeof(float) * (size_t)n);
    memcpy(b, want, sizeof(float) * (size_t)n);
    qsort(a, (size_t)n, sizeof(float), cmp_asc);
    qsort(b, (size_t)n, sizeof(float), cmp_asc);
    return arrays_match(a, b, n);
}

typedef struct {
    FILE *f;
    char tok[64];
} reader;

static const char *next_tok(reader *rd) {
    for (;;) {
        if (fscanf(rd->f, "%63s", rd->tok) != 1) return NULL;
        if (rd->tok[0] != '#') return rd->tok;
        int ch;
        while ((ch = fgetc(rd->f)) != EOF && ch != '\n') {
        }
    }
}

static double next_num(reader *rd, int *ok) {
    const char *t = next_tok(rd);
    if (!t) {
        *ok = 0;
        return 0;
    }
    char *end;
    double v = strtod(t, &end);
    if (*end) *ok = 0;
    return v;
}

static int expect_tok(reader *rd, const char *want) {
    const char *t = next_tok(rd);
    return t && strcmp(t, want) == 0;
}

static void test_hf_reference(void) {
    static float in[4096], want[4096], got[4096];
    static uint8_t seen[4096];
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/sampler/hf_ref.txt", CT_SRC_DIR);
    reader rd = {fopen(path, "r"), {0}};
    CHECKF(rd.f != NULL, "cannot open %s", path);
    if (!rd.f) return;
    int ok = 1;
    CHECK(expect_tok(&rd, "cases"));
    int ncases = (int)next_num(&rd, &ok), done = 0, plain_done = 0;
    ct_rng r;
    ct_rng_init(&r, 8, 8);
    for (int cs = 0; cs < ncases && ok; cs++) {
        char name[64];
        ok &= expect_tok(&rd, "case");
        const char *t = next_tok(&rd);
        snprintf(name, sizeof name, "%s", t ? t : "?");
        ok &= expect_tok(&rd, "cfg");
        int n = (int)next_num(&rd, &ok);
        ct_sample_cfg c;
        c.do_sample = (int)next_num(&rd, &ok);
        c.temperature = (float)next_num(&rd, &ok);
        c.top_k = (int)next_num(&rd, &ok);
        c.top_p = (float)next_num(&rd, &ok);
        c.repetition_penalty = (float)next_num(&rd, &ok);
        int min_new = (int)next_num(&rd, &ok), eos = (int)next_num(&rd, &ok);
        int lo = (int)next_num(&rd, &ok), hi = (int)next_num(&rd, &ok);
        if (!ok || n <= 0 || n > 4096) {
            ok = 0;
            break;
        }
        ok &= expect_tok(&rd, "gen");
        int L = (int)next_num(&rd, &ok);
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < L; i++) {
            int id = (int)next_num(&rd, &ok);
            if (id >= 0 && id < n) seen[id] = 1;
        }
        ok &= expect_tok(&rd, "in");
        for (int i = 0; i < n; i++) in[i] = (float)next_num(&rd, &ok);
        ok &= expect_tok(&rd, "out");
        for (int i = 0; i < n; i++) want[i] = (float)next_num(&rd, &ok);
        ok &= expect_tok(&rd, "argmax");
        int am = (int)next_num(&rd, &ok);
        if (!ok) break;

        const int tie_order_free = strstr(name, "ties") && c.top_p < 1.0f;
        int (*match)(const float *, const float *, int) =
            tie_order_free ? multiset_match : arrays_match;
        memcpy(got, in, sizeof(float) * (size_t)n);
        int id = ct_sample_talker(got, n, &c, seen, L, min_new, eos, lo, hi, &r, g_scratch);
        CHECKF(match(got, want, n), "HF case %s: processed logits differ", name);
        /* Penalty, masks, temperature and top-k are plain float ops: bit-exact to torch CPU. */
        if (!tie_order_free) {
            int nd = bits_differ(got, want, n);
            CHECKF(nd == 0, "HF case %s: %d scores not bit-identical to torch", name, nd);
        }
        if (c.do_sample)
            CHECKF(id >= 0 && id < n && got[id] != NINF, "HF case %s: id %d", name, id);
        else CHECKF(id == am, "HF case %s: argmax %d, HF %d", name, id, am);
        if (c.repetition_penalty == 1.0f && min_new == 0 && eos < 0 && lo > hi) {
            memcpy(got, in, sizeof(float) * (size_t)n);
            ct_sample_plain(got, n, &c, &r, g_scratch);
            CHECKF(match(got, want, n), "HF case %s (plain): processed logits differ", name);
            plain_done++;
        }
        done++;
    }
    fclose(rd.f);
    CHECKF(ok && done == ncases && ncases >= 21, "parsed %d of %d cases", done, ncases);
    CHECK(plain_done >= 10);
}

int main(void) {
    g_scratch = malloc(ct_sampler_scratch_bytes(4096));
    if (!g_scratch) return 1;
    test_rng_known_answers();
    test_rng_replay_and_streams();
    test_rng_uniformity();
    test_penalty_sign_rule();
    test_min_new_tokens_and_suppression();
    test_greedy_ties_and_warpers_off();
    test_top_k_ties();
    test_top_k_vs_sort();
    test_top_p_rules();
    test_invalid_logits();
    test_cfg_check();
    test_seeded_replay();
    test_draw_distribution();
    test_hf_reference();
    free(g_scratch);
    return ct_test_finish();
}
