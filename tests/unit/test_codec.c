/* Codec decoder tests: primitives against naive direct formulas, then the tiny random-weight
 * decoder: output shape/range, determinism, causality, streaming == one-shot for several
 * split patterns, windowed decode (exact with full context, SNR reported for 24/48/72),
 * bad codes, and missing / mis-shaped / wrong-dtype tensors in a corrupted copy. */
#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/codec.h"
#include "codec/conv.h"
#include "ct_test.h"
#include "test_models.h"
#include "model/make_model.h"

/* ---------------------------------------------------------------------------------------
 * Helpers */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float rndf(void) { return (float)(rnd32() & 0xFFFFFF) / (float)0x800000 - 1.0f; } /* [-1, 1) */

static double snr_db(const float *got, const float *ref, size_t n) {
    double nm = ct_nmse(got, ref, n);
    return nm <= 0 ? 999.0 : -10.0 * log10(nm);
}

/* ---------------------------------------------------------------------------------------
 * Primitive checks */

static void test_conv_causal(int cin, int cout, int k, int dil, int T) {
    int H = (k - 1) * dil;
    float *w = malloc(sizeof(float) * (size_t)cout * cin * k), *b = malloc(sizeof(float) * (size_t)cout);
    float *x = calloc((size_t)(H + T) * cin, sizeof(float)), *y = malloc(sizeof(float) * (size_t)T * cout);
    float *ref = malloc(sizeof(float) * (size_t)T * cout);
    for (int i = 0; i < cout * cin * k; i++) w[i] = rndf();
    for (int i = 0; i < cout; i++) b[i] = rndf();
    for (int i = H * cin; i < (H + T) * cin; i++) x[i] = rndf();
    const float *x0 = x + (size_t)H * cin;
    for (int t = 0; t < T; t++)
        for (int o = 0; o < cout; o++) {
            double acc = b[o];
            for (int i = 0; i < cin; i++)
                for (int j = 0; j < k; j++) {
                    int ti = t - (k - 1 - j) * dil;
                    if (ti >= 0) acc += (double)w[(o * cin + i) * k + j] * x0[ti * cin + i];
                }
            ref[t * cout + o] = (float)acc;
        }
    ct_cv_packed p;
    CHECK(ct_cv_packed_alloc(&p, k, cin, cout) == 0);
    ct_cv_pack_conv(&p, w);
    ct_cv_conv_causal(y, x0, T, &p, dil, b);
    double e = ct_nmse(y, ref, (size_t)T * cout);
    CHECKF(e < 1e-12, "causal conv cin %d cout %d k %d dil %d: nmse %g", cin, cout, k, dil, e);
    /* accumulate mode adds onto y */
    float *y2 = malloc(sizeof(float) * (size_t)T * cout);
    for (int i = 0; i < T * cout; i++) y2[i] = 1.0f;
    static const int tap[1] = {0}, off[1] = {0};
    if (k == 1) {
        ct_cv_gemm_taps(y2, (size_t)cout, x0, (size_t)cin, T, &p, 1, tap, off, b, 1);
        for (int i = 0; i < T * cout; i++) ref[i] += 1.0f;
        e = ct_nmse(y2, ref, (size_t)T * cout);
        CHECKF(e < 1e-12, "accumulate gemm: nmse %g", e);
    }
    ct_cv_packed_free(&p);
    free(w), free(b), free(x), free(y), free(y2), free(ref);
}

static void test_tconv(int cin, int cout, int k, int s, int T) {
    int H = ct_cv_tconv_history(k, s);
    float *w = malloc(sizeof(float) * (size_t)cin * cout * k), *b = malloc(sizeof(float) * (size_t)cout);
    float *x = calloc((size_t)(H + T) * cin, sizeof(float)), *y = malloc(sizeof(float) * (size_t)T * s * cout);
    int full = (T - 1) * s + k;
    double *acc = calloc((size_t)full * cout, sizeof(double));
    float *ref = malloc(sizeof(float) * (size_t)T * s * cout);
    for (int i = 0; i < cin * cout * k; i++) w[i] = rndf();
    for (int i = 0; i < cout; i++) b[i] = rndf();
    for (int i = H * cin; i < (H + T) * cin; i++) x[i] = rndf();
    const float *x0 = x + (size_t)H * cin;
    /* ordinary ConvTranspose1d (weight [cin][cout][k]), then drop the last k - s outputs */
    for (int t = 0; t < T; t++)
        for (int i = 0; i < cin; i++)
            for (int o = 0; o < cout; o++)
                for (int j = 0; j < k; j++) acc[(t * s + j) * cout + o] += (double)x0[t * cin + i] * w[(i * cout + o) * k + j];
    for (int r = 0; r < T * s; r++)
        for (int o = 0; o < cout; o++) ref[r * cout + o] = (float)(acc[r * cout + o] + b[o]);
    ct_cv_packed p;
    CHECK(ct_cv_packed_alloc(&p, k, cin, cout) == 0);
    ct_cv_pack_tconv(&p, w);
    ct_cv_tconv_causal(y, x0, T, &p, s, b);
    double e = ct_nmse(y, ref, (size_t)T * s * cout);
    CHECKF(e < 1e-12, "transposed conv cin %d cout %d k %d s %d: nmse %g", cin, cout, k, s, e);
    ct_cv_packed_free(&p);
    free(w), free(b), free(x), free(y), free(acc), free(ref);
}

static void test_pointwise(void) {
    enum { N = 9, C = 13 };
    float x[N * C], y[N * C], ref[N * C], al[C], be[C], ea[C], ib[C];
    for (int i = 0; i < N * C; i++) x[i] = 3.0f * rndf();
    for (int i = 0; i < C; i++) {
        al[i] = rndf();
        be[i] = rndf();
        ea[i] = expf(al[i]);
        ib[i] = 1.0f / (expf(be[i]) + 1e-9f);
    }
    for (int t = 0; t < N; t++)
        for (int c = 0; c < C; c++) {
            double v = x[t * C + c], sn = sin(exp((double)al[c]) * v);
            ref[t * C + c] = (float)(v + sn * sn / (exp((double)be[c]) + 1e-9));
        }
    ct_cv_snake(y, x, N, C, ea, ib);
    double e = ct_nmse(y, ref, N * C);
    CHECKF(e < 1e-11, "snake nmse %g", e);

    /* depthwise causal conv k7 */
    float w[7 * C], bb[C], xh[(6 + N) * C];
    memset(xh, 0, sizeof xh);
    for (int i = 0; i < 7 * C; i++) w[i] = rndf();
    for (int i = 0; i < C; i++) bb[i] = rndf();
    for (int i = 6 * C; i < (6 + N) * C; i++) xh[i] = rndf();
    for (int t = 0; t < N; t++)
        for (int c = 0; c < C; c++) {
            double a = bb[c];
            for (int j = 0; j < 7; j++) a += (double)w[j * C + c] * xh[(6 + t - (6 - j)) * C + c];
            ref[t * C + c] = (float)a;
        }
    ct_cv_dwconv_causal(y, xh + 6 * C, N, C, 7, w, bb);
    e = ct_nmse(y, ref, N * C);
    CHECKF(e < 1e-12, "dwconv nmse %g", e);

    /* LayerNorm and GELU */
    for (int t = 0; t < N; t++) {
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += x[t * C + c];
        m /= C;
        for (int c = 0; c < C; c++) v += (x[t * C + c] - m) * (x[t * C + c] - m);
        v /= C;
        for (int c = 0; c < C; c++) ref[t * C + c] = (float)((x[t * C + c] - m) / sqrt(v + 1e-6) * w[c] + bb[c]);
    }
    ct_cv_layernorm(y, x, N, C, w, bb, 1e-6f);
    e = ct_nmse(y, ref, N * C);
    CHECKF(e < 1e-11, "layernorm nmse %g", e);
    for (int i = 0; i < N * C; i++) {
        ref[i] = (float)(0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0))));
        y[i] = x[i];
    }
    ct_cv_gelu_erf(y, N * C);
    e = ct_nmse(y, ref, N * C);
    CHECKF(e < 1e-11, "gelu nmse %g", e);
}

/* ---------------------------------------------------------------------------------------
 * Corrupted checkpoints */

/* Copies src_dir/speech_tokenizer/{config.json, model.safetensors} into dst_dir with the
 * header entry `name` changed by mode: 0 rename (tensor missing), 1 permute its shape
 * (same element count), 2 dtype -> I32. */
static int write_corrupt(const char *src_dir, const char *dst_dir, const char *name, int mode) {
    char p[1200], q[1200];
    snprintf(p, sizeof p, "%s/speech_tokenizer", dst_dir);
    mkdir(dst_dir, 0755);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/speech_tokenizer/config.json", src_dir);
    snprintf(q, sizeof q, "%s/speech_tokenizer/config.json", dst_dir);
    json_t *cfg = json_load_file(p, 0, NULL);
    if (!cfg || json_dump_file(cfg, q, 0) != 0) return -1;
    json_decref(cfg);
    snprintf(p, sizeof p, "%s/speech_tokenizer/model.safetensors", src_dir);
    FILE *f = fopen(p, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) return -1;
    fclose(f);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | buf[i];
    json_t *hdr = json_loadb((const char *)buf + 8, (size_t)hl, 0, NULL);
    json_t *t = hdr ? json_object_get(hdr, name) : NULL;
    if (!t) return -1;
    if (mode == 0) {
        json_incref(t);
        json_object_del(hdr, name);
        json_object_set_new(hdr, "decoder.renamed_away", t);
    } else if (mode == 1) {
        json_t *sh = json_object_get(t, "shape");
        size_t n = json_array_size(sh);
        json_t *first = json_array_get(sh, 0);
        json_incref(first);
        json_array_remove(sh, 0);
        json_array_insert_new(sh, n - 1, first); /* rotate [a, b, c] -> [b, c, a] */
    } else {
        json_object_set_new(t, "dtype", json_string("I32"));
    }
    char *js = json_dumps(hdr, JSON_COMPACT);
    size_t jl = strlen(js), pad = (8 - jl % 8) % 8;
    snprintf(q, sizeof q, "%s/speech_tokenizer/model.safetensors", dst_dir);
    f = fopen(q, "wb");
    if (!f) return -1;
    unsigned char lb[8];
    uint64_t nl = jl + pad;
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)(nl >> (8 * i));
    fwrite(lb, 1, 8, f);
    fwrite(js, 1, jl, f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    fwrite(buf + 8 + hl, 1, (size_t)len - 8 - hl, f);
    fclose(f);
    free(js);
    json_decref(hdr);
    free(buf);
    return 0;
}

static void test_corrupt(const char *model_dir, const char *tmp) {
    static const struct {
        const char *name;
        int mode;
        const char *want[2];
    } cases[] = {
        {"decoder.decoder.2.block.3.conv1.conv.weight", 0, {"decoder.decoder.2.block.3.conv1.conv.weight", "missing"}},
        {"decoder.pre_conv.conv.weight", 1, {"decoder.pre_conv.conv.weight", "[64, 3, 64]"}},
        {"decoder.upsample.1.1.pwconv1.weight", 1, {"decoder.upsample.1.1.pwconv1.weight", "[256, 64]"}},
        {"decoder.pre_transformer.layers.1.mlp.up_proj.weight", 2, {"up_proj.weight", "I32"}},
        {"decoder.quantizer.rvq_rest.vq.layers.7._codebook.cluster_usage", 0, {"layers.7._codebook.cluster_usage", "missing"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/corrupt%zu", tmp, i);
        int w = write_corrupt(model_dir, dir, cases[i].name, cases[i].mode);
        CHECKF(w == 0, "could not write corrupt copy %zu", i);
        if (w != 0) continue;
        char err[512] = "";
        ct_codec *c = NULL;
        ct_status st = ct_codec_load(dir, &c, err, sizeof err);
        CHECKF(st == CT_ERR_FORMAT && c == NULL, "case %zu: status %d", i, (int)st);
        for (int k = 0; k < 2; k++)
            CHECKF(strstr(err, cases[i].want[k]) != NULL, "case %zu: message \"%s\" lacks \"%s\"", i, err, cases[i].want[k]);
        ct_codec_free(c);
    }
    /* missing directory */
    char err[512] = "";
    ct_codec *c = NULL;
    CHECK(ct_codec_load("/nonexistent/dir", &c, err, sizeof err) == CT_ERR_IO && c == NULL);
}

/* ---------------------------------------------------------------------------------------
 * Decoder behaviour on the tiny preset */

/* Streams codes[n] with the given chunk sizes (cycled), returns NMSE vs ref. */
static double stream_nmse(const ct_codec *c, ct_codec_stream *s, const int32_t *codes, int n,
                          const int *sizes, int nsizes, int random_max, float *out, const float *ref) {
    const int spf = ct_codec_samples_per_frame(c), G = ct_codec_n_groups(c);
    ct_codec_stream_reset(s);
    int f = 0, k = 0;
    while (f < n) {
        int want = random_max ? 1 + (int)(rnd32() % (uint32_t)random_max) : sizes[k++ % nsizes];
        int m = n - f < want ? n - f : want;
        char err[256];
        if (ct_codec_stream_push(s, codes + (size_t)f * G, m, out + (size_t)f * spf, err, sizeof err) != CT_OK) {
            fprintf(stderr, "push failed: %s\n", err);
            return 1.0;
        }
        f += m;
    }
    return ct_nmse(out, ref, (size_t)n * spf);
}

static void test_tiny(const char *dir, const char *tmp) {
    char err[512] = "";
    ct_codec *c = NULL;
    ct_status st = ct_codec_load(dir, &c, err, sizeof err);
    CHECKF(st == CT_OK, "load tiny: %s", err);
    if (st != CT_OK) return;
    CHECK(ct_codec_samples_per_frame(c) == 1920);
    CHECK(ct_codec_sample_rate(c) == 24000);
    CHECK(ct_codec_n_groups(c) == 16);

    enum { NF = 240, G = 16, SPF = 1920 };
    int32_t *codes = malloc(sizeof(int32_t) * NF * G);
    for (int i = 0; i < NF * G; i++) codes[i] = (int32_t)(rnd32() % 2048);
    float *ref = malloc(sizeof(float) * NF * SPF), *out = malloc(sizeof(float) * NF * SPF);
    /* sentinel beyond the end: the decoder writes exactly n*1920 samples */
    float *canary = malloc(sizeof(float) * (NF * SPF + 16));
    for (int i = 0; i < NF * SPF + 16; i++) canary[i] = 12345.0f;
    st = ct_codec_decode(c, codes, NF, canary, err, sizeof err);
    CHECKF(st == CT_OK, "decode: %s", err);
    int tail_ok = 1, finite = 1, inrange = 1, written = 1;
    double energy = 0;
    for (int i = 0; i < 16; i++) tail_ok &= canary[NF * SPF + i] == 12345.0f;
    for (int i = 0; i < NF * SPF; i++) {
        float v = canary[i];
        finite &= isfinite(v) != 0;
        inrange &= v >= -1.0f && v <= 1.0f;
        written &= v != 12345.0f;
        energy += (double)v * v;
    }
    CHECK(tail_ok);
    CHECK(finite);
    CHECK(inrange);
    CHECK(written);
    CHECKF(energy / (NF * SPF) > 1e-8, "output energy %g", energy / (NF * SPF));
    memcpy(ref, canary, sizeof(float) * NF * SPF);
    printf("tiny one-shot: rms %.4g\n", sqrt(energy / (NF * SPF)));

    /* determinism */
    st = ct_codec_decode(c, codes, NF, out, err, sizeof err);
    CHECK(st == CT_OK && memcmp(out, ref, sizeof(float) * NF * SPF) == 0);

    /* causality: the one-shot decode of a prefix is the prefix of the decode (for a
     * prefix shorter than one internal piece this is a single stateless pass) */
    st = ct_codec_decode(c, codes, 37, out, err, sizeof err);
    CHECK(st == CT_OK);
    double e = ct_nmse(out, ref, 37 * SPF);
    CHECKF(e <= 1e-10, "prefix decode nmse %g", e);

    /* streaming == one-shot */
    ct_codec_stream *s = NULL;
    st = ct_codec_stream_create(c, 25, &s, err, sizeof err);
    CHECKF(st == CT_OK, "stream create: %s", err);
    if (st == CT_OK) {
        static const int one[1] = {1}, ramp[5] = {2, 4, 8, 16, 25};
        e = stream_nmse(c, s, codes, NF, one, 1, 0, out, ref);
        CHECKF(e <= 1e-10, "1-frame steps nmse %g", e);
        printf("stream 1-frame steps: nmse %g\n", e);
        e = stream_nmse(c, s, codes, NF, ramp, 5, 0, out, ref);
        CHECKF(e <= 1e-10, "ramp 2,4,8,16,25 nmse %g", e);
        printf("stream ramp 2,4,8,16,25: nmse %g\n", e);
        rng_state = 42;
        e = stream_nmse(c, s, codes, NF, NULL, 0, 25, out, ref);
        CHECKF(e <= 1e-10, "random splits nmse %g", e);
        printf("stream random splits: nmse %g\n", e);
        /* without reset the state carries on: pushing the same codes again differs */
        memcpy(out, ref, sizeof(float) * SPF * 4);
        st = ct_codec_stream_push(s, codes, 4, out, err, sizeof err);
        CHECK(st == CT_OK && memcmp(out, ref, sizeof(float) * SPF * 4) != 0);

        /* bad input to push: state untouched */
        int32_t bad[2 * G];
        memcpy(bad, codes, sizeof bad);
        bad[G + 5] = 2048;
        err[0] = 0;
        CHECK(ct_codec_stream_push(s, bad, 2, out, err, sizeof err) == CT_ERR_INVALID_ARG);
        CHECKF(strstr(err, "frame 1 group 5") != NULL, "push message: %s", err);
        CHECK(ct_codec_stream_push(s, codes, 0, out, err, sizeof err) == CT_ERR_INVALID_ARG);
        CHECK(ct_codec_stream_push(s, codes, 26, out, err, sizeof err) == CT_ERR_INVALID_ARG);
        ct_codec_stream_free(s);
    }
    CHECK(ct_codec_stream_create(c, 0, &s, err, sizeof err) == CT_ERR_INVALID_ARG);

    /* state snapshots: a stream (chunks of up to 4) saved after k frames, loaded into a fresh
       stream of another chunk capacity (and into one that decoded other frames), continues bit
       for bit like the saved one; k before and after the KV ring wraps */
    {
        static const int ks[2] = {10, 150};
        ct_codec_stream *a = NULL, *b = NULL;
        CHECK(ct_codec_stream_create(c, 4, &a, err, sizeof err) == CT_OK);
        CHECK(ct_codec_stream_create(c, 25, &b, err, sizeof err) == CT_OK);
        size_t nfl = a ? ct_codec_stream_state_floats(a) : 0;
        CHECK(b && nfl == ct_codec_stream_state_floats(b));
        float *snap = malloc(sizeof(float) * (nfl ? nfl : 1)), *pa = malloc(sizeof(float) * 60 * SPF),
              *pb = malloc(sizeof(float) * 60 * SPF);
        for (int ki = 0; a && b && ki < 2; ki++) {
            const int k = ks[ki];
            ct_codec_stream_reset(a);
            for (int f = 0; f < k; f += 3) ct_codec_stream_push(a, codes + (size_t)f * G, f + 3 <= k ? 3 : k - f, pa, err, sizeof err);
            int64_t pos = -1;
            ct_codec_stream_state_save(a, snap, &pos);
            CHECK(pos == k);
            ct_codec_stream_reset(b);
            ct_codec_stream_push(b, codes + 7 * G, 20, pb, err, sizeof err); /* other history, replaced */
            ct_codec_stream_state_load(b, snap, pos);
            int same = 1;
            for (int f = 0; f < 60; f += 4) {
                same &= ct_codec_stream_push(a, codes + (size_t)(k + f) * G, 4, pa + (size_t)f * SPF, err, sizeof err) == CT_OK;
            }
            same &= ct_codec_stream_push(b, codes + (size_t)k * G, 25, pb, err, sizeof err) == CT_OK;
            same &= ct_codec_stream_push(b, codes + (size_t)(k + 25) * G, 25, pb + (size_t)25 * SPF, err, sizeof err) == CT_OK;
            same &= ct_codec_stream_push(b, codes + (size_t)(k + 50) * G, 10, pb + (size_t)50 * SPF, err, sizeof err) == CT_OK;
            CHECKF(same && !memcmp(pa, pb, sizeof(float) * 60 * SPF), "snapshot after %d frames: continuation differs", k);
        }
        free(snap), free(pa), free(pb);
        ct_codec_stream_free(a);
        ct_codec_stream_free(b);
    }

    /* bad codes in the one-shot path */
    int32_t *bad = malloc(sizeof(int32_t) * 8 * G);
    memcpy(bad, codes, sizeof(int32_t) * 8 * G);
    bad[3 * G + 5] = 2048;
    err[0] = 0;
    CHECK(ct_codec_decode(c, bad, 8, out, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "frame 3 group 5") != NULL, "decode message: %s", err);
    bad[3 * G + 5] = 0;
    bad[7 * G + 0] = -1;
    CHECK(ct_codec_decode(c, bad, 8, out, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "frame 7 group 0") != NULL, "decode message: %s", err);
    free(bad);

    /* windowed: context covering all previous frames == exact */
    {
        int k = 50, n = 8;
        float *w = malloc(sizeof(float) * n * SPF);
        st = ct_codec_decode_window(c, codes, k, codes + (size_t)k * G, n, w, err, sizeof err);
        CHECKF(st == CT_OK, "window: %s", err);
        e = ct_nmse(w, ref + (size_t)k * SPF, (size_t)n * SPF);
        CHECKF(e <= 1e-10, "full-context window nmse %g", e);
        st = ct_codec_decode_window(c, NULL, 0, codes, n, w, err, sizeof err);
        CHECK(st == CT_OK && ct_nmse(w, ref, (size_t)n * SPF) <= 1e-10);
        CHECK(ct_codec_decode_window(c, NULL, 3, codes, n, w, err, sizeof err) == CT_ERR_INVALID_ARG);
        free(w);
    }
    /* windowed with bounded context: report SNR vs exact over frames 80..239, chunks of 20 */
    {
        static const int ctxs[3] = {24, 48, 72};
        const int chunk = 20, f0 = 80;
        double snr[3];
        for (int ci = 0; ci < 3; ci++) {
            for (int f = f0; f < NF; f += chunk) {
                int ctx = f < ctxs[ci] ? f : ctxs[ci];
                st = ct_codec_decode_window(c, codes + (size_t)(f - ctx) * G, ctx, codes + (size_t)f * G, chunk,
                                            out + (size_t)f * SPF, err, sizeof err);
                if (st != CT_OK) break;
            }
            CHECKF(st == CT_OK, "window: %s", err);
            snr[ci] = snr_db(out + (size_t)f0 * SPF, ref + (size_t)f0 * SPF, (size_t)(NF - f0) * SPF);
            printf("tiny windowed decode, chunk %d, context %d: SNR %.1f dB vs exact\n", chunk, ctxs[ci], snr[ci]);
            CHECK(isfinite(snr[ci]));
        }
        /* a window is never exact past the transformer's reach, and 72 frames of context
         * must beat 24 by a clear margin on this model (measured ~20 dB) */
        CHECKF(snr[2] > snr[0] + 6.0, "context 72 SNR %.1f dB vs context 24 %.1f dB", snr[2], snr[0]);
        CHECK(snr[2] < 200.0);
    }
    (void)tmp;
    free(codes), free(ref), free(out), free(canary);
    ct_codec_free(c);
}

int main(void) {
    test_conv_causal(5, 7, 7, 3, 23);
    test_conv_causal(16, 8, 7, 1, 9);
    test_conv_causal(9, 13, 1, 1, 11);
    test_conv_causal(3, 1, 7, 9, 70);
    test_tconv(6, 5, 6, 3, 7);
    test_tconv(4, 9, 16, 8, 5);
    test_tconv(8, 8, 2, 2, 6);
    test_tconv(3, 4, 5, 3, 6); /* k not a multiple of s */
    test_pointwise();

    char tmp[] = "/tmp/ct_codec_test_XXXXXX";
    if (!mkdtemp(tmp)) {
        CHECKF(0, "mkdtemp failed");
        return ct_test_finish();
    }
    char dir[1024], err[512] = "";
    snprintf(dir, sizeof dir, "%s/tiny", tmp);
    ct_status st = ct_make_model("tiny", 7, dir, CT_SRC_DIR "/assets/qwen3-tokenizer", 1, NULL, NULL, err, sizeof err);
    CHECKF(st == CT_OK, "make_model: %s", err);
    if (st == CT_OK) {
        test_tiny(dir, tmp);
        test_corrupt(dir, tmp);
    }
    ct_test_rm_rf(tmp);
    return ct_test_finish();
}
