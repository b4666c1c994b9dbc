/* Codec-decoder SIMD kernels (kernels/conv.h, dispatched through kernels/cpu.h): every GEMM /
 * SnakeBeta variant this CPU runs (AVX2, AVX-512) against the scalar reference (kernels/ref) on edge shapes (partial panels, 1..17 rows, K longer than a
 * K block, several taps with history, accumulate, NULL bias), with stated tolerances:
 *   GEMM:  |y - y_ref| <= 1e-5 * (|y0| + |bias| + sum |x w|) per element (FMA vs mul+add);
 *   Snake: |y - y_ref| <= 2e-6 * (|inv_beta| + |x|) + 1e-7 per element (polynomial sine);
 * then bit-exactness of every variant across row / panel partitions and pool thread counts
 * 1, 2, 3 (GEMM, transposed conv, SnakeBeta), and on the tiny random decoder: streaming
 * (1-frame and ramp pushes) == one-shot and threads 1 == 2 == 3, bit for bit, per variant,
 * with variants agreeing to NMSE < 1e-9. The AMX GEMM (x86/conv_amx_body.h) is held to 2e-5 * the
 * same sum and to the same partition and thread checks: its body over an emulation of the tiles
 * (below) on every machine (again with the AMX build's VCVTNE2PS2BF16 splits where the CPU has
 * AVX-512 BF16, bit for bit the scalar splits' result; and as the tiny decoder's GEMM: streaming ==
 * one-shot, threads, NMSE < 1e-8 vs scalar), and the AMX instructions themselves where the CPU
 * grants AMX (there
 * the kernel table's decoder, AMX, also goes through the decoder checks). */
#include <math.h>
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

#define CT_TEST_SEED 0x243F6A8885A308D3ull
#include "test_codec_isas.h"

/* An emulation of the AMX tiles the codec GEMM's body uses (per thread, as the hardware's):
   TILECFG palette 1 with at most 16 rows of 64 bytes, TILELOADD / TILESTORED rows at a stride,
   TDPBF16PS C[m][n] += A[m][2p + 1] * B[p][2n + 1] + A[m][2p] * B[p][2n] in f32 (the products of
   bf16 are exact), and the shape rules of TDPBF16PS checked on every use. */
typedef union {
    float f[256];
    uint16_t h[512];
    unsigned char b[1024];
} emu_tile;
static _Thread_local struct {
    int on, rows[8], colsb[8];
    emu_tile t[8];
} emu;
static int emu_bad; /* shape or state errors seen (any thread) */
static void emu_cfg(int palette, const uint8_t *rows, const uint16_t *colsb) {
    emu.on = palette == 1;
    for (int t = 0; t < 8; t++) {
        emu.rows[t] = rows[t];
        emu.colsb[t] = colsb[t];
        if (rows[t] > 16 || colsb[t] > 64) __atomic_add_fetch(&emu_bad, 1, __ATOMIC_RELAXED);
    }
}
static void emu_load(int t, const void *p, size_t stride) {
    if (!emu.on) __atomic_add_fetch(&emu_bad, 1, __ATOMIC_RELAXED);
    memset(emu.t[t].b, 0, sizeof emu.t[t].b);
    for (int r = 0; r < emu.rows[t]; r++) memcpy(emu.t[t].b + r * 64, (const char *)p + (size_t)r * stride, (size_t)emu.colsb[t]);
}
static void emu_store(int t, void *p, size_t stride) {
    if (!emu.on) __atomic_add_fetch(&emu_bad, 1, __ATOMIC_RELAXED);
    for (int r = 0; r < emu.rows[t]; r++) memcpy((char *)p + (size_t)r * stride, emu.t[t].b + r * 64, (size_t)emu.colsb[t]);
}
static void emu_zero(int t) { memset(emu.t[t].b, 0, sizeof emu.t[t].b); }
static float emu_f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
/* not vectorized: gcc 12 -O3 (its dynamic vector cost model) computed this loop wrongly */
__attribute__((optimize("no-tree-vectorize"))) static void emu_dp(int c, int a, int b) {
    const int M = emu.rows[c], N = emu.colsb[c] / 4, KP = emu.colsb[a] / 4;
    if (!emu.on || emu.rows[a] != M || emu.rows[b] != KP || emu.colsb[b] != N * 4 || c == a || c == b || a == b)
        __atomic_add_fetch(&emu_bad, 1, __ATOMIC_RELAXED);
    emu_tile A = emu.t[a], B = emu.t[b], C = emu.t[c];
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc = C.f[m * 16 + n];
            for (int p = 0; p < KP; p++) {
                acc += emu_f(A.h[m * 32 + 2 * p + 1]) * emu_f(B.h[p * 32 + 2 * n + 1]);
                acc += emu_f(A.h[m * 32 + 2 * p]) * emu_f(B.h[p * 32 + 2 * n]);
            }
            C.f[m * 16 + n] = acc;
        }
    emu.t[c] = C;
}
#define CV_AMX_ATTR static
#define CV_AMX_FN cv_gemm_amx_emul
#define CV_AMX_FALLBACK ct_cv_gemm_range_scalar
#define TILE_CFG(c) emu_cfg((c)->palette, (c)->rows, (c)->colsb)
#define TILE_ZERO(t) emu_zero(t)
#define TILE_LOAD(t, p, s) emu_load(t, p, s)
#define TILE_DP(c, a, b) emu_dp(c, a, b)
#define TILE_STORE(t, p, s) emu_store(t, p, s)
#define TILE_RELEASE() (emu.on = 0)
#include "kernels/x86/conv_amx_body.h"
#if defined(__x86_64__)
/* again with the AMX build's vector splits and stores (x86/conv_amx_vec.h), where the CPU has
   AVX-512 BF16: the same bits as the scalar ones */
#include "kernels/x86/conv_amx_vec.h"
#undef CV_AMX_FN
#define CV_AMX_FN cv_gemm_amx_emul_bf16
#include "kernels/x86/conv_amx_body.h"
#endif

/* The GEMM variants checked: the levels' (isas) and the AMX body, emulated and, where granted, real. */
typedef struct {
    const char *name;
    ct_isa isa;       /* the level whose exec runs it */
    ct_cv_gemm_fn fn; /* NULL: the level's own */
    float tol;        /* bound factor on sum |x w| */
} gemm_variant;
static int n_gv;
static gemm_variant gv[8];
static void find_gemm_variants(void) {
    for (int v = 0; v < n_isas; v++) gv[n_gv++] = (gemm_variant){ct_isa_name(isas[v]), isas[v], NULL, 1e-5f};
    gv[n_gv++] = (gemm_variant){"amx (emulated tiles)", CT_ISA_SCALAR, cv_gemm_amx_emul, 2e-5f};
#if defined(__x86_64__)
    ct_cpu_features f;
    ct_cpu_detect(&f);
    if (ct_isa_supported(CT_ISA_AVX512BF16, &f))
        gv[n_gv++] = (gemm_variant){"amx (emulated tiles, vector splits and stores)", CT_ISA_SCALAR, cv_gemm_amx_emul_bf16, 2e-5f};
#endif
#if defined(__x86_64__)
    if (ct_amx_available()) gv[n_gv++] = (gemm_variant){"amx", CT_ISA_AVX512BF16, ct_cv_gemm_range_amx, 2e-5f};
#endif
}

/* Multi-tap GEMM of (cin, cout, k taps at dilation dil, n rows) for every variant. */
static void test_gemm(int cin, int cout, int k, int dil, int n, int accumulate, int with_bias, ct_pool **pools) {
    const int H = (k - 1) * dil;
    ct_cv_packed W;
    CHECK(ct_cv_packed_alloc(&W, k, cin, cout) == 0);
    float *src = malloc(sizeof(float) * (size_t)cout * cin * k);
    for (size_t i = 0; i < (size_t)cout * cin * k; i++) src[i] = rndf();
    ct_cv_pack_conv(&W, src);
    W.amx = 1; /* the AMX GEMM takes it (the levels' GEMMs ignore the mark) */
    float *x = malloc(sizeof(float) * (size_t)(H + n) * cin), *bias = malloc(sizeof(float) * (size_t)cout);
    for (size_t i = 0; i < (size_t)(H + n) * cin; i++) x[i] = rndf();
    for (int i = 0; i < cout; i++) bias[i] = rndf();
    const float *x0 = x + (size_t)H * cin;
    int tap[16], off[16];
    for (int j = 0; j < k; j++) {
        tap[j] = j;
        off[j] = -(k - 1 - j) * dil;
    }
    const size_t ny = (size_t)n * cout;
    float *y0 = malloc(sizeof(float) * ny), *ref = malloc(sizeof(float) * ny), *y = malloc(sizeof(float) * ny),
          *y2 = malloc(sizeof(float) * ny), *bound = malloc(sizeof(float) * ny);
    for (size_t i = 0; i < ny; i++) y0[i] = rndf();
    for (int r = 0; r < n; r++)
        for (int o = 0; o < cout; o++) {
            double b = (accumulate ? fabs(y0[r * cout + o]) : 0) + (with_bias ? fabs(bias[o]) : 0);
            for (int j = 0; j < k; j++)
                for (int i = 0; i < cin; i++)
                    b += fabs((double)x0[(r + off[j]) * cin + i] * src[((size_t)o * cin + i) * k + j]);
            bound[r * cout + o] = (float)b;
        }
    ct_cv_gemm_args a = {ref, (size_t)cout, x0, (size_t)cin, n, &W, k, tap, off, with_bias ? bias : NULL, accumulate};
    memcpy(ref, y0, sizeof(float) * ny);
    ct_cv_gemm_range_scalar(&a, 0, W.nb, 0, n);
    for (int v = 0; v < n_gv; v++) {
        ct_cv_exec ex;
        ct_cv_exec_init_isa(&ex, NULL, gv[v].isa);
        if (gv[v].fn) ex.gemm = gv[v].fn;
        a.Y = y;
        memcpy(y, y0, sizeof(float) * ny);
        ex.gemm(&a, 0, W.nb, 0, n);
        int bad = 0;
        for (size_t i = 0; i < ny; i++)
            if (!(fabsf(y[i] - ref[i]) <= gv[v].tol * bound[i] + 1e-30f)) bad++;
        CHECKF(bad == 0, "gemm %s cin %d cout %d k %d dil %d n %d acc %d bias %d: %d elements off", gv[v].name,
               cin, cout, k, dil, n, accumulate, with_bias, bad);
        /* partition invariance: a grid of panel x row ranges */
        a.Y = y2;
        memcpy(y2, y0, sizeof(float) * ny);
        int pcut = W.nb > 1 ? 1 + (int)(rnd32() % (uint32_t)(W.nb - 1)) : W.nb;
        int rcut = n > 1 ? 1 + (int)(rnd32() % (uint32_t)(n - 1)) : n;
        ex.gemm(&a, 0, pcut, 0, rcut);
        ex.gemm(&a, pcut, W.nb, 0, rcut);
        ex.gemm(&a, 0, pcut, rcut, n);
        ex.gemm(&a, pcut, W.nb, rcut, n);
        CHECKF(memcmp(y, y2, sizeof(float) * ny) == 0, "gemm %s cin %d cout %d n %d: partition (%d, %d) differs",
               gv[v].name, cin, cout, n, pcut, rcut);
        /* thread-count invariance through the pool */
        for (int t = 0; t < 2; t++) {
            ct_cv_exec_init_isa(&ex, pools[t], gv[v].isa);
            if (gv[v].fn) ex.gemm = gv[v].fn;
            memcpy(y2, y0, sizeof(float) * ny);
            ct_cv_gemm_taps_ex(&ex, y2, (size_t)cout, x0, (size_t)cin, n, &W, k, tap, off, with_bias ? bias : NULL,
                               accumulate);
            CHECKF(memcmp(y, y2, sizeof(float) * ny) == 0, "gemm %s cin %d cout %d n %d: %d threads differ",
                   gv[v].name, cin, cout, n, ct_pool_threads(pools[t]));
        }
    }
#if defined(__x86_64__)
    /* the vector splits and stores give the scalar ones' bits */
    if (gv[n_gv - 1].fn == cv_gemm_amx_emul_bf16 || (n_gv > 1 && gv[n_gv - 2].fn == cv_gemm_amx_emul_bf16)) {
        a.Y = y;
        memcpy(y, y0, sizeof(float) * ny);
        cv_gemm_amx_emul(&a, 0, W.nb, 0, n);
        a.Y = y2;
        memcpy(y2, y0, sizeof(float) * ny);
        cv_gemm_amx_emul_bf16(&a, 0, W.nb, 0, n);
        CHECKF(memcmp(y, y2, sizeof(float) * ny) == 0, "amx vector vs scalar splits and stores, cin %d cout %d n %d", cin, cout, n);
    }
#endif
    /* a weight not marked amx: the AMX GEMM passes its calls to its fallback (here the scalar
       reference), bit for bit */
    W.amx = 0;
    a.Y = y;
    memcpy(y, y0, sizeof(float) * ny);
    cv_gemm_amx_emul(&a, 0, W.nb, 0, n);
    CHECKF(memcmp(y, ref, sizeof(float) * ny) == 0, "gemm amx, weight not marked, cin %d cout %d n %d: not the fallback",
           cin, cout, n);
    ct_cv_packed_free(&W);
    free(src), free(x), free(bias), free(y0), free(ref), free(y), free(y2), free(bound);
}

/* Causal transposed conv through the pool == one thread, per variant. */
static void test_tconv_threads(int cin, int cout, int k, int s, int n, ct_pool **pools) {
    const int H = ct_cv_tconv_history(k, s);
    ct_cv_packed W;
    CHECK(ct_cv_packed_alloc(&W, k, cin, cout) == 0);
    float *src = malloc(sizeof(float) * (size_t)cout * cin * k);
    for (size_t i = 0; i < (size_t)cout * cin * k; i++) src[i] = rndf();
    ct_cv_pack_tconv(&W, src);
    float *x = malloc(sizeof(float) * (size_t)(H + n) * cin), *bias = malloc(sizeof(float) * (size_t)cout);
    for (size_t i = 0; i < (size_t)(H + n) * cin; i++) x[i] = rndf();
    for (int i = 0; i < cout; i++) bias[i] = rndf();
    const size_t ny = (size_t)n * s * cout;
    float *ref = malloc(sizeof(float) * ny), *y = malloc(sizeof(float) * ny), *y2 = malloc(sizeof(float) * ny);
    ct_cv_exec ex;
    ct_cv_exec_init_isa(&ex, NULL, CT_ISA_SCALAR);
    ct_cv_tconv_causal_ex(&ex, ref, x + (size_t)H * cin, n, &W, s, bias);
    for (int v = 0; v < n_isas; v++) {
        ct_cv_exec_init_isa(&ex, NULL, isas[v]);
        ct_cv_tconv_causal_ex(&ex, y, x + (size_t)H * cin, n, &W, s, bias);
        double e = ct_nmse(y, ref, ny);
        CHECKF(e < 1e-12, "tconv %s cin %d cout %d k %d s %d: nmse vs scalar %g", ct_isa_name(isas[v]), cin, cout, k, s, e);
        for (int t = 0; t < 2; t++) {
            ct_cv_exec_init_isa(&ex, pools[t], isas[v]);
            ct_cv_tconv_causal_ex(&ex, y2, x + (size_t)H * cin, n, &W, s, bias);
            CHECKF(memcmp(y, y2, sizeof(float) * ny) == 0, "tconv %s: %d threads differ", ct_isa_name(isas[v]),
                   ct_pool_threads(pools[t]));
        }
    }
    ct_cv_packed_free(&W);
    free(src), free(x), free(bias), free(ref), free(y), free(y2);
}

static void test_snake(int n, int c, ct_pool **pools) {
    const size_t N = (size_t)n * c;
    float *x = malloc(sizeof(float) * N), *ea = malloc(sizeof(float) * (size_t)c), *ib = malloc(sizeof(float) * (size_t)c);
    float *ref = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *y2 = malloc(sizeof(float) * N);
    for (size_t i = 0; i < N; i++) x[i] = 20.0f * rndf();
    for (int i = 0; i < c; i++) {
        ea[i] = expf(2.0f * rndf());
        ib[i] = 1.0f / (expf(2.0f * rndf()) + 1e-9f);
    }
    if (N > 8) {
        x[3] = 30000.0f; /* |ea x| beyond the reduction range: libm fallback */
        x[5] = -1e7f;
        x[7] = 0.0f;
    }
    ct_cv_snake_rows_scalar(ref, x, 0, n, c, ea, ib);
    for (int v = 0; v < n_isas; v++) {
        ct_cv_exec ex;
        ct_cv_exec_init_isa(&ex, NULL, isas[v]);
        ex.snake(y, x, 0, n, c, ea, ib);
        int bad = 0;
        for (size_t i = 0; i < N; i++) {
            float tol = 2e-6f * (fabsf(ib[i % (size_t)c]) + fabsf(x[i])) + 1e-7f;
            if (!(fabsf(y[i] - ref[i]) <= tol)) bad++;
        }
        CHECKF(bad == 0, "snake %s n %d c %d: %d elements off", ct_isa_name(isas[v]), n, c, bad);
        for (int t = 0; t < 2; t++) {
            ct_cv_exec_init_isa(&ex, pools[t], isas[v]);
            ct_cv_snake_ex(&ex, y2, x, n, c, ea, ib);
            CHECKF(memcmp(y, y2, sizeof(float) * N) == 0, "snake %s: %d threads differ", ct_isa_name(isas[v]),
                   ct_pool_threads(pools[t]));
        }
    }
    /* in place */
    if (n_isas > 1) {
        ct_cv_exec ex;
        ct_cv_exec_init_isa(&ex, NULL, isas[n_isas - 1]);
        ex.snake(y, x, 0, n, c, ea, ib);
        memcpy(y2, x, sizeof(float) * N);
        ex.snake(y2, y2, 0, n, c, ea, ib);
        CHECK(memcmp(y, y2, sizeof(float) * N) == 0);
    }
    /* non-finite input propagates */
    float xi[16], yi[16], e1[16], i1[16];
    for (int i = 0; i < 16; i++) xi[i] = (float)i, e1[i] = 1.0f, i1[i] = 1.0f;
    xi[2] = NAN;
    xi[9] = INFINITY;
    for (int v = 0; v < n_isas; v++) {
        ct_cv_exec ex;
        ct_cv_exec_init_isa(&ex, NULL, isas[v]);
        ex.snake(yi, xi, 0, 1, 16, e1, i1);
        CHECKF(isnan(yi[2]) && !isfinite(yi[9]) && isfinite(yi[3]), "snake %s non-finite handling", ct_isa_name(isas[v]));
    }
    free(x), free(ea), free(ib), free(ref), free(y), free(y2);
}

/* Tiny decoder: per variant, streaming == one-shot and threads 1 == 2 == 3 bit for bit. */
static void test_decoder(const char *dir, ct_pool **pools) {
    char err[512];
    ct_codec *c = NULL;
    ct_status st = ct_codec_load(dir, &c, err, sizeof err);
    CHECKF(st == CT_OK, "load: %s", err);
    if (st != CT_OK) return;
    /* the weights the AMX GEMM takes: those whose calls read at least CT_CODEC_AMX_ROWS input
       rows per frame */
    {
        const int m = CT_CODEC_AMX_ROWS;
        int rpf = 1, bad = c->pre_conv.amx + c->layers[0].q.amx + c->layers[0].down.amx + c->in_proj.amx;
        for (int u = 0; u < c->n_up; u++) {
            bad += c->up[u].tconv.amx != (rpf >= m);
            rpf *= c->up[u].ratio;
            bad += c->up[u].pw1.amx != (rpf >= m) || c->up[u].pw2.amx != (rpf >= m);
        }
        bad += c->dec0.amx != (rpf >= m);
        for (int b = 0; b < c->n_blocks; b++) {
            bad += c->blocks[b].tconv.amx != (rpf >= m);
            rpf *= c->blocks[b].rate;
            bad += c->blocks[b].ru[0].c1.amx != 1 || c->blocks[b].ru[2].c2.amx != 1;
        }
        bad += c->fin.amx != 1;
        CHECKF(bad == 0, "AMX marks of the codec's weights: %d wrong", bad);
    }
    enum { NF = 40 };
    const int G = ct_codec_n_groups(c), SPF = ct_codec_samples_per_frame(c);
    int32_t *codes = malloc(sizeof(int32_t) * NF * (size_t)G);
    for (int i = 0; i < NF * G; i++) codes[i] = (int32_t)(rnd32() % 2048u);
    const size_t ns = (size_t)NF * SPF;
    float *base = malloc(sizeof(float) * ns), *ref = malloc(sizeof(float) * ns), *out = malloc(sizeof(float) * ns);
    /* the levels, the scalar level with the AMX body over emulated tiles as its GEMM, then (where
       AMX is on) the kernel table's own decoder: the AMX GEMM */
    const int nv = n_isas + 1 + (ct_kernels()->amx ? 1 : 0);
    for (int v = 0; v < nv; v++) {
        const char *vname = v < n_isas ? ct_isa_name(isas[v]) : v == n_isas ? "amx (emulated tiles)" : "amx";
        ct_pool *pl[3] = {NULL, pools[0], pools[1]};
        /* the emulated tiles are slow: the first 8 frames (the decoder is causal, so they are the
           first 8 frames of every longer decode), the single push and 1-frame pushes on one
           thread, the ramp on 2 */
        const int nf = v == n_isas ? 8 : NF;
        const size_t nsv = (size_t)nf * SPF;
        for (int t = 0; t < 3; t++) {
            static const int one[1] = {1}, ramp[6] = {1, 2, 4, 8, 16, 25};
            static const int pats[3] = {2, 0, 1}; /* the single push first: the reference */
            for (int pi = 0; pi < 3; pi++) {
                const int pat = pats[pi];
                if (v == n_isas && (t == 2 || (t == 0 && pat == 1) || (t == 1 && pat != 1))) continue;
                ct_codec_stream *s = NULL;
                CHECK(ct_codec_stream_create(c, pat == 2 ? nf : 25, &s, err, sizeof err) == CT_OK);
                if (!s) continue;
                if (v < n_isas) CHECK(ct_codec_stream_set_isa(s, isas[v]) == CT_OK);
                if (v == n_isas) {
                    CHECK(ct_codec_stream_set_isa(s, CT_ISA_SCALAR) == CT_OK);
                    s->ex.gemm = cv_gemm_amx_emul;
                }
                CHECK(ct_codec_stream_set_pool(s, pl[t]) == CT_OK);
                float *dst = (t == 0 && pat == 2) ? ref : out;
                int f = 0, k = 0;
                while (f < nf) {
                    int m = pat == 0 ? one[0] : pat == 1 ? ramp[k++ % 6] : nf;
                    if (m > nf - f) m = nf - f;
                    CHECK(ct_codec_stream_push(s, codes + (size_t)f * G, m, dst + (size_t)f * SPF, err, sizeof err) ==
                          CT_OK);
                    f += m;
                }
                ct_codec_stream_free(s);
                if (dst == out)
                    CHECKF(memcmp(out, ref, sizeof(float) * nsv) == 0, "decoder %s threads %d pattern %d differs (nmse %g)",
                           vname, t == 0 ? 1 : ct_pool_threads(pl[t]), pat, ct_nmse(out, ref, nsv));
            }
        }
        if (v == 0) memcpy(base, ref, sizeof(float) * ns);
        else {
            double e = ct_nmse(ref, base, nsv);
            printf("decoder %s vs scalar: nmse %g\n", vname, e);
            /* the AMX GEMM's split products: held to the codec parity bound (test_codec_parity) */
            CHECKF(e < (v < n_isas ? 1e-9 : 1e-8), "decoder %s vs scalar nmse %g", vname, e);
            if (v == n_isas) CHECKF(e > 0, "decoder %s: the same bits as scalar (did the AMX body run?)", vname);
        }
    }
    /* one-shot with a pool == without */
    CHECK(ct_codec_decode(c, codes, NF, ref, err, sizeof err) == CT_OK);
    CHECK(ct_codec_decode_pool(c, pools[0], codes, NF, out, err, sizeof err) == CT_OK);
    CHECK(memcmp(out, ref, sizeof(float) * ns) == 0);
    CHECK(ct_codec_stream_set_pool(NULL, NULL) == CT_ERR_INVALID_ARG);
    free(codes), free(base), free(ref), free(out);
    ct_codec_free(c);
}

/* ELU variants against the scalar reference (expm1f) over n elements spanning the
 * polynomial ranges, the -0.5 switch, the -88 clamp and the tails; bound 2e-7 absolute +
 * 2e-7 relative. Then thread- and split-invariance of ct_cv_elu_ex, in place, non-finite. */
static void test_elu(size_t n, ct_pool *const *pools) {
    float *x = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n),
          *y2 = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) {
        const float u = rndf();
        switch (i % 4) {
        case 0: x[i] = 0.6f * u; break;           /* around the -0.5 switch and 0 */
        case 1: x[i] = 12.0f * u; break;          /* the exp path */
        case 2: x[i] = -100.0f * fabsf(u); break; /* down to the clamp */
        default: x[i] = 1e-6f * u; break;         /* tiny: expm1 ~ x */
        }
    }
    static const float special[] = {0.0f, -0.0f, -0.5f, -0.49999997f, -0.50000006f, -88.0f, -88.5f, -1e30f,
                                    -1e-30f, 1e-30f, 3.5f, -17.0f, -0.3465736f};
    for (size_t i = 0; i < sizeof special / sizeof *special && i < n; i++) x[i] = special[i];
    ct_cv_elu_scalar(ref, x, 0, n);
    for (int v = 0; v < n_isas; v++) {
        ct_cv_exec ex;
        ct_cv_exec_init_isa(&ex, NULL, isas[v]);
        CHECK(ex.elu == ct_cv_elu_for(isas[v]));
        ex.elu(y, x, 0, n);
        int bad = 0;
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            const double d = fabs((double)y[i] - (double)ref[i]);
            if (d > worst) worst = d;
            if (!(d <= 2e-7 + 2e-7 * fabs((double)ref[i]))) bad++;
            if (x[i] > 0.0f && y[i] != x[i]) bad++;
        }
        CHECKF(bad == 0, "elu %s n %zu: %d elements off (max |diff| %g)", ct_isa_name(isas[v]), n, bad, worst);
        printf("elu %s n %zu: max |diff| vs expm1f %.2e\n", ct_isa_name(isas[v]), n, worst);
        for (int t = 0; t < 2; t++) {
            ct_cv_exec_init_isa(&ex, pools[t], isas[v]);
            ct_cv_elu_ex(&ex, y2, x, n);
            CHECKF(memcmp(y, y2, sizeof(float) * n) == 0, "elu %s: %d threads differ", ct_isa_name(isas[v]),
                   ct_pool_threads(pools[t]));
        }
        /* any split of the range gives the same bits (the tail is vector code too) */
        memset(y2, 0, sizeof(float) * n);
        for (size_t a = 0; a < n;) {
            size_t b = a + 1 + (size_t)(rnd32() % 37);
            if (b > n) b = n;
            ex.elu(y2, x, a, b);
            a = b;
        }
        CHECKF(memcmp(y, y2, sizeof(float) * n) == 0, "elu %s: a split range differs", ct_isa_name(isas[v]));
        memcpy(y2, x, sizeof(float) * n);
        ex.elu(y2, y2, 0, n);
        CHECKF(memcmp(y, y2, sizeof(float) * n) == 0, "elu %s: in place differs", ct_isa_name(isas[v]));
        float xi[20], yi[20];
        for (int i = 0; i < 20; i++) xi[i] = -(float)i;
        xi[2] = NAN;
        xi[5] = INFINITY;
        xi[7] = -INFINITY;
        ex.elu(yi, xi, 0, 20);
        CHECKF(isnan(yi[2]) && yi[5] == INFINITY && yi[7] == -1.0f && yi[0] == 0.0f,
               "elu %s non-finite handling", ct_isa_name(isas[v]));
    }
    free(x), free(ref), free(y), free(y2);
}

/* The kernel table carries the selected level's conv variants (the scalar reference where the
 * level has none), and ct_cv_kernels_for answers per level. */
static void test_dispatch(void) {
    const ct_kernel_table *kt = ct_kernels();
    ct_cv_gemm_fn g = ct_cv_gemm_range_scalar;
    ct_cv_snake_fn sn = ct_cv_snake_rows_scalar;
    ct_cv_kernels_for(kt->isa, &g, &sn);
#if defined(__x86_64__)
    if (kt->amx) g = ct_cv_gemm_range_amx; /* AMX takes the codec's GEMMs */
    CHECK(kt->amx == (kt->isa == CT_ISA_AVX512BF16 && ct_amx_available()));
#endif
    CHECKF(kt->cv_gemm == g && kt->cv_snake == sn, "kernel table conv entries for %s", ct_isa_name(kt->isa));
    CHECK(ct_cv_kernels_for(CT_ISA_SCALAR, &g, &sn) == 0 && g == ct_cv_gemm_range_scalar &&
          sn == ct_cv_snake_rows_scalar);
    ct_cv_exec ex;
    ct_cv_exec_init(&ex, NULL);
    CHECK(ex.gemm == kt->cv_gemm && ex.snake == kt->cv_snake && ex.elu == kt->cv_elu && ex.pool == NULL);
    CHECK(kt->cv_elu == (ct_cv_elu_for(kt->isa) ? ct_cv_elu_for(kt->isa) : ct_cv_elu_scalar));
    CHECK(ct_cv_elu_for(CT_ISA_SCALAR) == ct_cv_elu_scalar);
#if defined(__x86_64__)
    CHECK(ct_cv_kernels_for(CT_ISA_AVX512BF16, &g, &sn) == 0 && g == ct_cv_gemm_range_avx512 &&
          sn == ct_cv_snake_rows_avx512);
    CHECK(ct_cv_kernels_for(CT_ISA_NEON, &g, &sn) == -1);
    CHECK(ct_cv_exec_init_isa(&ex, NULL, CT_ISA_NEON) == -1 && ex.isa == CT_ISA_SCALAR &&
          ex.gemm == ct_cv_gemm_range_scalar && ex.elu == ct_cv_elu_scalar);
    CHECK(ct_cv_elu_for(CT_ISA_AVX512BF16) == ct_cv_elu_avx512 && ct_cv_elu_for(CT_ISA_AVX2) == ct_cv_elu_avx2);
#endif
}

int main(void) {
    find_isas();
    find_gemm_variants();
    test_dispatch();
    printf("variants:");
    for (int i = 0; i < n_isas; i++) printf(" %s", ct_isa_name(isas[i]));
    printf("; GEMM also:");
    for (int i = n_isas; i < n_gv; i++) printf(" %s", gv[i].name);
    printf("\n");
    ct_pool *pools[2] = {NULL, NULL};
    CHECK(ct_pool_create(2, NULL, 0, &pools[0]) == CT_OK);
    CHECK(ct_pool_create(3, NULL, 0, &pools[1]) == CT_OK);
    if (!pools[0] || !pools[1]) return ct_test_finish();

    static const int couts[] = {1, 5, 16, 17, 33, 48, 64, 80, 96, 100, 130};
    for (size_t i = 0; i < sizeof couts / sizeof couts[0]; i++) {
        test_gemm(7, couts[i], 3, 1, 13, 0, 1, pools);
        test_gemm(17, couts[i], 1, 1, 1, 1, 1, pools);
    }
    static const int rows[] = {1, 2, 3, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        test_gemm(24, 64, 7, 2, rows[i], 0, 1, pools);
        test_gemm(24, 48, 2, 1, rows[i], 1, 0, pools);
        test_gemm(9, 32, 1, 1, rows[i], 0, 0, pools);
    }
    test_gemm(200, 96, 7, 3, 40, 0, 1, pools);  /* K = 1400: several K blocks */
    test_gemm(160, 80, 7, 9, 23, 1, 1, pools);  /* K blocks ending mid-tap */
    test_gemm(1, 20, 7, 1, 300, 0, 1, pools);   /* cin 1, > row block */
    test_gemm(96, 1, 7, 1, 400, 0, 1, pools);   /* final conv shape */
    test_gemm(64, 256, 1, 1, 70, 0, 1, pools);  /* enough panels for the panel split */
    test_gemm(300, 192, 1, 1, 2, 1, 1, pools);  /* few rows, many panels */
    test_gemm(32, 192, 3, 1, 300, 0, 1, pools); /* 3 panel chunks: split into row parts */
    test_gemm(40, 160, 1, 1, 203, 1, 1, pools); /* panel chunks of 4, 4, 2 x row parts */
    test_tconv_threads(24, 12, 16, 8, 9, pools);
    test_tconv_threads(40, 20, 6, 3, 30, pools);
    test_tconv_threads(64, 64, 2, 2, 5, pools);
    test_snake(37, 19, pools);
    test_snake(300, 96, pools);
    test_snake(3, 1, pools);
    test_elu(100003, pools);
    test_elu(7, pools);

    char tmp[] = "/tmp/ct_codec_kernels_XXXXXX";
    if (!mkdtemp(tmp)) {
        CHECKF(0, "mkdtemp failed");
    } else {
        char dir[1024], err[512] = "";
        snprintf(dir, sizeof dir, "%s/tiny", tmp);
        ct_status st = ct_make_model("tiny", 11, dir, CT_SRC_DIR "/assets/qwen3-tokenizer", 1, NULL, NULL, err, sizeof err);
        CHECKF(st == CT_OK, "make_model: %s", err);
        if (st == CT_OK) test_decoder(dir, pools);
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    }
    CHECKF(emu_bad == 0, "the AMX body broke a tile rule %d times", emu_bad);
    ct_pool_free(pools[0]);
    ct_pool_free(pools[1]);
    return ct_test_finish();
}
