/* The codec decoder batched across streams (ct_codec_stream_push_batch): for every kernel
 * variant this CPU runs (scalar, AVX2, AVX-512, forced per stream with ct_codec_stream_set_isa)
 * and thread counts 1 and 2, each stream's PCM is bit-identical (memcmp) to its solo pushes on
 * the tiny random decoder: 1-4 streams (and 17: more than one internal group) with different
 * histories, chunk capacities and chunk sizes; argument errors name the stream and change no
 * state. The batched GEMMs alone: test_codec_batch_gemm. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"
#include "codec/codec_internal.h"
#include "codec/conv.h"
#include "core/pool.h"
#include "ct_test.h"
#include "kernels/conv.h"
#include "kernels/cpu.h"
#include "model/make_model.h"

#include "test_codec_isas.h"

enum { NF = 40, MAXS = 17 };

/* Streams 0..ns-1 of one decoder with their own chunk capacity, history (frames pushed before)
 * and chunk-size pattern: the solo pushes (reference) against batched pushes, per variant and
 * pool. */
static void test_streams(const ct_codec *c, int ns, ct_pool *pool) {
    static const int caps[4] = {25, 4, 64, 7};
    static const int hist[4] = {0, 3, 26, 1};
    static const int pat[4][5] = {{1, 1, 4, 25, 2}, {4, 1, 3, 4, 2}, {25, 7, 1, 64, 3}, {7, 2, 5, 1, 6}};
    char err[512];
    const int G = ct_codec_n_groups(c), SPF = ct_codec_samples_per_frame(c);
    int32_t *codes[MAXS];
    float *ref[MAXS], *out[MAXS];
    for (int k = 0; k < ns; k++) {
        codes[k] = malloc(sizeof(int32_t) * NF * (size_t)G);
        for (int i = 0; i < NF * G; i++) codes[k][i] = (int32_t)(rnd32() % 2048u);
        ref[k] = calloc((size_t)NF * SPF, sizeof(float));
        out[k] = calloc((size_t)NF * SPF, sizeof(float));
    }
    for (int v = 0; v < n_isas; v++) {
        ct_codec_stream *so[MAXS] = {0}, *sb[MAXS] = {0};
        int ok = 1;
        for (int k = 0; k < ns; k++) {
            ok &= ct_codec_stream_create(c, caps[k % 4], &so[k], err, sizeof err) == CT_OK;
            ok &= ct_codec_stream_create(c, caps[k % 4], &sb[k], err, sizeof err) == CT_OK;
            if (!ok) break;
            ok &= ct_codec_stream_set_isa(so[k], isas[v]) == CT_OK && ct_codec_stream_set_isa(sb[k], isas[v]) == CT_OK;
            ok &= ct_codec_stream_set_pool(so[k], pool) == CT_OK && ct_codec_stream_set_pool(sb[k], pool) == CT_OK;
        }
        CHECKF(ok, "create: %s", err);
        int f[MAXS], r = 0, left = 1;
        for (int k = 0; k < ns && ok; k++) { /* history: solo pushes on both */
            f[k] = hist[k % 4];
            if (f[k] > 0) {
                CHECK(ct_codec_stream_push(so[k], codes[k], f[k], ref[k], err, sizeof err) == CT_OK);
                CHECK(ct_codec_stream_push(sb[k], codes[k], f[k], out[k], err, sizeof err) == CT_OK);
            }
        }
        while (ok && left) {
            ct_codec_stream *bs[MAXS];
            const int32_t *bc[MAXS];
            int bn[MAXS], nb = 0;
            float *bp[MAXS];
            for (int k = 0; k < ns; k++) {
                int m = pat[k % 4][(r + k / 4) % 5];
                if (m > caps[k % 4]) m = caps[k % 4];
                if (m > NF - f[k]) m = NF - f[k];
                if (m <= 0) continue;
                CHECK(ct_codec_stream_push(so[k], codes[k] + (size_t)f[k] * G, m, ref[k] + (size_t)f[k] * SPF, err,
                                           sizeof err) == CT_OK);
                bs[nb] = sb[k], bc[nb] = codes[k] + (size_t)f[k] * G, bn[nb] = m, bp[nb] = out[k] + (size_t)f[k] * SPF;
                nb++;
                f[k] += m;
            }
            left = nb > 0;
            if (nb) CHECKF(ct_codec_stream_push_batch(bs, nb, bc, bn, bp, err, sizeof err) == CT_OK, "batch: %s", err);
            r++;
        }
        for (int k = 0; k < ns && ok; k++)
            CHECKF(memcmp(ref[k], out[k], sizeof(float) * (size_t)NF * SPF) == 0,
                   "%d streams %s threads %d: stream %d batched != solo (nmse %g)", ns, ct_isa_name(isas[v]),
                   ct_pool_threads(pool), k, ct_nmse(out[k], ref[k], (size_t)NF * SPF));
        for (int k = 0; k < ns; k++) ct_codec_stream_free(so[k]), ct_codec_stream_free(sb[k]);
    }
    for (int k = 0; k < ns; k++) free(codes[k]), free(ref[k]), free(out[k]);
}

/* Errors are checked before anything is decoded: they name the stream, and the streams decode
 * on afterwards exactly as if the failed call never happened. */
static void test_errors(const ct_codec *c) {
    char err[512] = "";
    const int G = ct_codec_n_groups(c), SPF = ct_codec_samples_per_frame(c);
    ct_codec_stream *a = NULL, *b = NULL, *r = NULL;
    CHECK(ct_codec_stream_create(c, 4, &a, err, sizeof err) == CT_OK);
    CHECK(ct_codec_stream_create(c, 4, &b, err, sizeof err) == CT_OK);
    CHECK(ct_codec_stream_create(c, 4, &r, err, sizeof err) == CT_OK);
    if (!a || !b || !r) goto out;
    int32_t codes[4 * 32];
    for (int i = 0; i < 4 * G; i++) codes[i] = (int32_t)(rnd32() % 2048u);
    float *pa = malloc(sizeof(float) * 4 * (size_t)SPF), *pb = malloc(sizeof(float) * 4 * (size_t)SPF);
    float *pr = malloc(sizeof(float) * 4 * (size_t)SPF);
    ct_codec_stream *ss[2] = {a, b};
    const int32_t *cc[2] = {codes, codes};
    float *pp[2] = {pa, pb};
    int n5[2] = {2, 5}, n2[2] = {2, 2};
    CHECK(ct_codec_stream_push_batch(ss, 2, cc, n5, pp, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "stream 1") && strstr(err, "5 frames"));
    ct_codec_stream *dup[2] = {a, a};
    CHECK(ct_codec_stream_push_batch(dup, 2, cc, n2, pp, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "same decoder"));
    int32_t bad[4 * 32];
    memcpy(bad, codes, sizeof bad);
    bad[G + 3] = 4096;
    const int32_t *cb[2] = {codes, bad};
    CHECK(ct_codec_stream_push_batch(ss, 2, cb, n2, pp, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "stream 1") && strstr(err, "4096"));
    CHECK(ct_codec_stream_push_batch(ss, 0, cc, n2, pp, err, sizeof err) == CT_ERR_INVALID_ARG);
    /* no state changed: a's next push equals a fresh stream's first */
    CHECK(ct_codec_stream_push_batch(ss, 2, cc, n2, pp, err, sizeof err) == CT_OK);
    CHECK(ct_codec_stream_push(r, codes, 2, pr, err, sizeof err) == CT_OK);
    CHECK(memcmp(pa, pr, sizeof(float) * 2 * (size_t)SPF) == 0 && memcmp(pb, pr, sizeof(float) * 2 * (size_t)SPF) == 0);
    free(pa), free(pb), free(pr);
out:
    ct_codec_stream_free(a), ct_codec_stream_free(b), ct_codec_stream_free(r);
}

int main(void) {
    find_isas();
    printf("variants:");
    for (int i = 0; i < n_isas; i++) printf(" %s", ct_isa_name(isas[i]));
    printf("\n");
    ct_pool *pool2 = NULL;
    CHECK(ct_pool_create(2, NULL, 0, &pool2) == CT_OK);
    if (!pool2) return ct_test_finish();
    ct_pool *pools[2] = {NULL, pool2};

    char tmp[] = "/tmp/ct_codec_batch_XXXXXX";
    if (!mkdtemp(tmp)) {
        CHECKF(0, "mkdtemp failed");
    } else {
        char dir[1024], err[512] = "";
        snprintf(dir, sizeof dir, "%s/tiny", tmp);
        ct_status st = ct_make_model("tiny", 5, dir, CT_SRC_DIR "/assets/qwen3-tokenizer", 1, NULL, NULL, err, sizeof err);
        CHECKF(st == CT_OK, "make_model: %s", err);
        ct_codec *c = NULL;
        if (st == CT_OK) CHECKF(ct_codec_load(dir, &c, err, sizeof err) == CT_OK, "load: %s", err);
        if (c) {
            for (int t = 0; t < 2; t++)
                for (int ns = 1; ns <= 4; ns++) test_streams(c, ns, pools[t]);
            test_streams(c, MAXS, pool2);
            test_errors(c);
            ct_codec_free(c);
        }
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    }
    ct_pool_free(pool2);
    return ct_test_finish();
}
