/* Every matmul variant this CPU runs matches the scalar reference (f32 accumulation in a
   different order: NMSE <= 1e-8 and |err| <= 1e-5 * (sum |w x|) per output), for BF16, F16,
   F32, INT8 and INT4 weights over edge shapes and token counts 1..13 (GEMV and blocked GEMM
   paths), including AMX prefill on split activations; the bf16-activation mode (VDPBF16PS
   and single-term AMX, BF16 weights, n >= CT_DP_MIN_TOKENS) matches the scalar reference
   run on bf16-rounded activations to the same bound, and its error against f32 activations
   is printed; INT4 prefill through AMX rounds the dequantized weights to bf16 and is held to
   8e-3 * (sum |w x|) and NMSE <= 1e-4; quantization round-trips within half a step; the scalar reference
   matches a double-precision dot of the dequantized rows; the pool's row split gives
   bit-identical results for any thread count in every format; a forced ISA the CPU lacks is
   an error. */
#define _GNU_SOURCE
#include <limits.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "core/pool.h"
#include "core/rng.h"
#include "ct_test.h"
#include "kernels/cpu.h"
#include "kernels/tbuf.h"

static float urand(ct_rng *r) { return (float)(ct_rng_uniform(r) * 2.0 - 1.0); }

static uint16_t f32_to_f16(float f) { /* tests only: round-to-nearest via double */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    float a = fabsf(f);
    if (a < 6.1e-5f) return (uint16_t)(sign | (uint16_t)lrintf(a / 5.9604645e-8f));
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5,1) */
    int exp = e + 14;
    uint32_t man = (uint32_t)lrintf((m * 2.0f - 1.0f) * 1024.0f);
    if (man == 1024) {
        man = 0;
        exp++;
    }
    return (uint16_t)(sign | ((uint32_t)exp << 10) | man);
}

typedef struct {
    ct_matmul_rows_fn fn;
    const ct_mat *w;
    const float *b, *x;
    float *y;
    int n;
    int prompt; /* ct_mm_prompt in every thread of the job */
} mm_job;

static void run_mm(void *ctx, int ith, int nth) {
    mm_job *j = ctx;
    int lo, hi;
    ct_pool_split(j->w->rows, ith, nth, CT_ROW_ALIGN, &lo, &hi);
    ct_mm_prompt = j->prompt;
    j->fn(j->w, j->b, j->x, j->y, j->n, lo, hi);
    ct_mm_prompt = 0;
}

/* A token's output must not depend on how many tokens share the call, bit for bit, for every
   variant and weight format (f32 activations): batched decode == solo decode, and a prompt's
   result is the same for any prefill pass size (the prefill GEMMs compute the one-token
   arithmetic). Token counts past every GEMM threshold and token block, odd shapes (row and
   column tails; INT4 needs whole 32-column groups). */
static void check_batch_invariance(void) {
    ct_rng r0, *rng = &r0; /* its own stream: the other checks' data stay as they were */
    ct_rng_init(rng, 11, 0);
    const int R = 37, N = 40;
    /* columns: a tail only, 16-column chunks with a leftover 8, several K blocks and tails; 2100:
       from 3 tokens, activations past 24 KiB (the AVX-512 streaming pass in K blocks over row groups,
       the last group of 5 rows, the last K block with the ragged tail) */
    const int Cs[6] = {13, 200, 1100, 2100, 224, 1088}; /* the last two for INT4 (whole groups) */
    const int ns[] = {2, 3, 4, 5, 6, 7, 8, 12, 13, 16, 17, 37, 40};
    enum { CMAX = 2100 };
    float *wf = malloc(sizeof(float) * R * CMAX), *x = malloc(sizeof(float) * N * CMAX);
    uint16_t *wh = malloc(2 * (size_t)R * CMAX);
    int8_t *q8 = malloc((size_t)R * CMAX);
    uint8_t *q4 = malloc((size_t)R * CMAX / 2);
    float *sc = malloc(sizeof(float) * R * (CMAX / CT_Q4_GROUP));
    float *yb = malloc(sizeof(float) * N * R), *y1 = malloc(sizeof(float) * R);
    float *bias = malloc(sizeof(float) * R);
    for (int i = 0; i < R * CMAX; i++) wf[i] = (float)(ct_rng_uniform(rng) * 2 - 1);
    for (int i = 0; i < N * CMAX; i++) x[i] = (float)(ct_rng_uniform(rng) * 2 - 1);
    for (int i = 0; i < R; i++) bias[i] = (float)(ct_rng_uniform(rng) * 2 - 1);
    static const char *dn[5] = {"bf16", "f32", "f16", "int8", "int4"};
    for (int isa = 0; isa < CT_ISA_COUNT; isa++) {
        ct_cpu_features f;
        ct_cpu_detect(&f);
        ct_matmul_rows_fn fn = ct_matmul_rows_for((ct_isa)isa);
        if (!fn || !ct_isa_supported((ct_isa)isa, &f)) continue;
        for (int dt = 0; dt < 5; dt++)
            for (int ci = dt == 4 ? 4 : 0; ci < (dt == 4 ? 6 : 4); ci++) {
                const int C = Cs[ci];
                ct_mat w;
                memset(&w, 0, sizeof w);
                w.rows = R;
                w.cols = C;
                if (dt == 0 || dt == 2)
                    for (int i = 0; i < R * C; i++) wh[i] = dt == 0 ? ct_f32_to_bf16(wf[i]) : f32_to_f16(wf[i]);
                if (dt == 0) w.data = wh, w.dtype = CT_DT_BF16;
                if (dt == 1) w.data = wf, w.dtype = CT_DT_F32;
                if (dt == 2) w.data = wh, w.dtype = CT_DT_F16;
                if (dt == 3) {
                    ct_quantize_i8(wf, CT_DT_F32, R, C, q8, sc);
                    w.data = q8, w.dtype = CT_DT_I8, w.scales = sc;
                }
                if (dt == 4) {
                    ct_quantize_q4(wf, CT_DT_F32, R, C, q4, sc);
                    w.data = q4, w.dtype = CT_DT_U8, w.scales = sc;
                }
                int same = 1;
                for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                    const int n = ns[ni];
                    const float *bp = ni % 2 ? bias : NULL;
                    fn(&w, bp, x, yb, n, 0, R);
                    for (int t = 0; t < n; t++) {
                        fn(&w, bp, x + (size_t)t * C, y1, 1, 0, R);
                        same &= memcmp(y1, yb + (size_t)t * R, sizeof(float) * R) == 0;
                    }
                }
                CHECKF(same, "%s %s, %d columns: a token's result depends on the batch size",
                       ct_isa_name((ct_isa)isa), dn[dt], C);
            }
    }
#if defined(__x86_64__)
    /* the bf16-activation mode (VDPBF16PS from CT_DP_MIN_TOKENS tokens): a token's result is the
       same in any call of at least that many tokens */
    ct_cpu_features f;
    ct_cpu_detect(&f);
    if (ct_isa_supported(CT_ISA_AVX512BF16, &f)) {
        ct_matmul_bf16act_enable(1);
        int same = 1;
        for (int ci = 0; ci < 3; ci++) {
            const int C = Cs[ci];
            for (int i = 0; i < R * C; i++) wh[i] = ct_f32_to_bf16(wf[i]);
            ct_mat w = {wh, CT_DT_BF16, R, C, NULL, 0, NULL};
            ct_matmul_rows_avx512bf16(&w, bias, x, yb, N, 0, R);
            for (int t0 = 0; t0 + CT_DP_MIN_TOKENS <= N; t0 += 3) {
                float yk[CT_DP_MIN_TOKENS * 37];
                ct_matmul_rows_avx512bf16(&w, bias, x + (size_t)t0 * C, yk, CT_DP_MIN_TOKENS, 0, R);
                same &= memcmp(yk, yb + (size_t)t0 * R, sizeof yk) == 0;
            }
        }
        ct_matmul_bf16act_enable(0);
        CHECKF(same, "bf16-activation mode: a token's result depends on the batch");
    }
#endif
    free(wf);
    free(x);
    free(wh);
    free(q8);
    free(q4);
    free(sc);
    free(yb);
    free(y1);
    free(bias);
}

/* Integer-dot mode (ct_mat.xq): the quantizer's contract, the scalar reference against the
   exact integer formula in double, every variant against the reference (|err| <= 1e-5 *
   sum |w q s| per output, rows in several passes and token counts past one quantization
   pass), bit-identical results for any batch size and thread count, and the extra error of
   int8 activations against f32 activations (printed; NMSE <= 2e-2 over cases of 16 or more
   outputs on these inputs, whose 30x outliers coarsen the step of their group). */
/* The integer-dot kernels this CPU runs, to call directly: exact = 1 where they do the
   reference's arithmetic bit for bit. */
typedef struct {
    ct_matmul_rows_fn fn;
    const char *name;
    int exact;
} dot_kernel;
static int dot_kernels(const ct_cpu_features *f, dot_kernel *dk) {
    int ndk = 0;
#if defined(__x86_64__)
    if (ct_isa_supported(CT_ISA_AVX512BF16, f)) dk[ndk++] = (dot_kernel){ct_matmul_rows_vnni, "VNNI", 0};
    if (ct_isa_supported(CT_ISA_AVX2, f)) dk[ndk++] = (dot_kernel){ct_matmul_rows_dot_avx2, "VPMADDUBSW", 1};
    if (ct_isa_supported(CT_ISA_AVX2, f) && f->avx_vnni)
        dk[ndk++] = (dot_kernel){ct_matmul_rows_dot_avxvnni, "AVX-VNNI", 1};
    if (ct_isa_supported(CT_ISA_AVX2, f) && f->avx512vnni && f->avx512vl)
        dk[ndk++] = (dot_kernel){ct_matmul_rows_dot_vnni256, "VNNI-256", 1};
#elif defined(__aarch64__)
    if (ct_isa_supported(CT_ISA_NEON_DOTPROD, f)) dk[ndk++] = (dot_kernel){ct_matmul_rows_sdot, "SDOT", 1};
    if (ct_isa_supported(CT_ISA_NEON, f)) dk[ndk++] = (dot_kernel){ct_matmul_rows_smull, "SMULL", 1};
#else
    (void)f;
#endif
    return ndk;
}

static void check_xq(ct_rng *rng, const ct_cpu_features *f) {
    enum { MR = 300, MC = 4160, MT = 70 };
    float *wf = malloc(sizeof(float) * MR * MC), *x = malloc(sizeof(float) * MT * MC);
    float *y0 = malloc(sizeof(float) * MT * MR), *y1 = malloc(sizeof(float) * MT * MR);
    float *yf = malloc(sizeof(float) * MT * MR), *mag = malloc(sizeof(float) * MT * MR);
    float *deq = malloc(sizeof(float) * MR * MC), *sx = malloc(sizeof(float) * MT * MC / 32);
    int8_t *q8 = malloc((size_t)MR * MC), *qx = malloc((size_t)MT * MC);
    uint8_t *q4 = malloc((size_t)MR * MC / 2);
    float *sc = malloc(sizeof(float) * MR * MC / 32);
    /* quantizer: |q| <= 127, |s q - x| <= s / 2, zero and tiny groups give s = q = 0 */
    {
        float xs[128];
        int8_t q[128];
        float s[4];
        for (int i = 0; i < 128; i++) xs[i] = urand(rng) * (i == 70 ? 1000.0f : 1.0f);
        for (int i = 32; i < 64; i++) xs[i] = 0.0f;
        for (int i = 96; i < 128; i++) xs[i] = 1e-32f * (float)(i - 100);
        ct_xq_quantize(xs, 128, q, s);
        int bad = 0;
        for (int i = 0; i < 128; i++) {
            float st = s[i / 32];
            if (q[i] < -127 || fabsf(st * q[i] - xs[i]) > 0.5f * st * 1.0001f + (st == 0 ? fabsf(xs[i]) : 0)) bad++;
        }
        CHECKF(bad == 0 && s[1] == 0 && s[3] == 0 && s[0] > 0, "xq quantizer contract (%d bad)", bad);
    }
    /* 4160 columns: past the VNNI panels' width; 8 tokens and more: the VNNI panels (5: the row
       blocks); 70: two passes of the 64-token panel calls */
    static const int cols[] = {64, 192, 1024, 3072, 4160};
    static const int rows[] = {1, 5, 17, 70, 300};
    static const int toks[] = {1, 2, 3, 4, 5, 8, 13, 15, 16, 20, 33, 70};
    int variants = 0;
    for (int isa = 0; isa < CT_ISA_COUNT; isa++) {
        ct_matmul_rows_fn fn = ct_matmul_rows_for((ct_isa)isa);
        if (!fn || !ct_isa_supported((ct_isa)isa, f)) continue;
        variants++;
        int bad = 0, bad_ref = 0, cases = 0, same = 1;
        double worst = 0, vs_f32 = 0;
        for (int fmt = 0; fmt < 2; fmt++)
            for (size_t ci = 0; ci < sizeof cols / sizeof *cols; ci++)
                for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++)
                    for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++) {
                        const int C = cols[ci], R = rows[ri], n = toks[ti];
                        if ((size_t)R * C > 300 * 1024 || (R == 300 && ti % 3) || (n > MT / 2 && (size_t)R * C > 72 * 1024))
                            continue;
                        for (int i = 0; i < R * C; i++) wf[i] = urand(rng) * (i % 97 == 0 ? 8.0f : 1.0f);
                        for (int i = 0; i < n * C; i++) x[i] = urand(rng) * (i % 211 == 0 ? 30.0f : 1.0f);
                        for (int i = 0; i < C && n > 1; i++) x[C + i] = i < 64 ? 0.0f : x[C + i];
                        ct_mat w = {fmt ? (const void *)q4 : (const void *)q8, fmt ? CT_DT_U8 : CT_DT_I8, R, C, sc, 1, NULL};
                        if (fmt) ct_quantize_q4(wf, CT_DT_F32, R, C, q4, sc);
                        else ct_quantize_i8(wf, CT_DT_F32, R, C, q8, sc);
                        for (int r = 0; r < R; r++) ct_mat_row(&w, r, deq + (size_t)r * C);
                        for (int t = 0; t < n; t++) ct_xq_quantize(x + (size_t)t * C, C, qx + (size_t)t * C, sx + (size_t)t * C / 32);
                        ct_matmul_rows_scalar(&w, NULL, x, y0, n, 0, R);
                        fn(&w, NULL, x, y1, n, 0, R);
                        ct_mat wf32 = w;
                        wf32.xq = 0;
                        ct_matmul_rows_scalar(&wf32, NULL, x, yf, n, 0, R);
                        for (int t = 0; t < n; t++)
                            for (int r = 0; r < R; r++) {
                                double d = 0, m = 0;
                                for (int k = 0; k < C; k++) {
                                    double v = (double)deq[(size_t)r * C + k] * sx[(t * C + k) / 32] * qx[(size_t)t * C + k];
                                    d += v;
                                    m += fabs(v);
                                }
                                mag[t * R + r] = (float)m;
                                if (fabs(y0[t * R + r] - d) > 1e-5 * m + 1e-30) bad_ref++;
                            }
                        for (int i = 0; i < n * R; i++)
                            if (fabsf(y1[i] - y0[i]) > 1e-5f * mag[i] + 1e-30f) bad++;
                        double e = ct_nmse(y1, y0, (size_t)n * R), ef = ct_nmse(y0, yf, (size_t)n * R);
                        if (e > worst) worst = e;
                        if (ef > vs_f32 && n * R >= 16) vs_f32 = ef; /* an NMSE of fewer outputs says little */
                        cases++;
                        if (n > 1 && (ti % 2 == 0 || n <= 4)) /* each token alone gives bit-for-bit its batched result
                                                       (2-4 tokens: every decode block, INT8's transposed-row one
                                                       up to 16 KiB of repeated activations) */
                            for (int t = 0; t < n; t++) {
                                fn(&w, NULL, x + (size_t)t * C, yf, 1, 0, R);
                                for (int r = 0; r < R; r++) same &= memcmp(&yf[r], &y1[t * R + r], 4) == 0;
                            }
                    }
        printf("%s, integer-dot mode: %d cases, worst NMSE vs scalar %.2e, %d outputs over the bound; "
               "int8 activations vs f32 activations NMSE <= %.2e\n",
               ct_isa_name((ct_isa)isa), cases, worst, bad, vs_f32);
        CHECKF(bad_ref == 0, "%d scalar integer-dot outputs off the exact formula", bad_ref);
        CHECKF(bad == 0, "%s: %d integer-dot outputs off the reference", ct_isa_name((ct_isa)isa), bad);
        CHECKF(same, "%s: integer-dot results depend on the batch size", ct_isa_name((ct_isa)isa));
        CHECKF(vs_f32 <= 2e-2, "int8-activation error %.2e", vs_f32);
        /* thread-count invariance (5 tokens: 4-row blocks; 33: the VNNI panels) */
        const int R = 301, C = 1024;
        for (int n = 5; n <= 33; n += 28) {
            for (int i = 0; i < R * C; i++) wf[i] = urand(rng);
            for (int i = 0; i < n * C; i++) x[i] = urand(rng);
            for (int fmt = 0; fmt < 2; fmt++) {
                ct_mat w = {fmt ? (const void *)q4 : (const void *)q8, fmt ? CT_DT_U8 : CT_DT_I8, R, C, sc, 1, NULL};
                if (fmt) ct_quantize_q4(wf, CT_DT_F32, R, C, q4, sc);
                else ct_quantize_i8(wf, CT_DT_F32, R, C, q8, sc);
                for (int nt = 1; nt <= 3; nt++) {
                    ct_pool *p = NULL;
                    CHECK(ct_pool_create(nt, NULL, 0, &p) == CT_OK);
                    mm_job j = {fn, &w, NULL, x, nt == 1 ? y0 : y1, n, 0};
                    ct_pool_run(p, run_mm, &j);
                    if (nt > 1) same &= memcmp(y0, y1, sizeof(float) * n * R) == 0;
                    ct_pool_free(p);
                }
            }
        }
        CHECKF(same, "%s: integer-dot results depend on the thread count", ct_isa_name((ct_isa)isa));
        /* prompt passes on xq matrices run the integer-dot mode whether AMX is on or not: each
           token bit for bit its solo (decode) result, not the f32-activation one */
        enum { NP = 16 };
#if defined(__x86_64__)
        const int amx_max = isa == CT_ISA_AVX512BF16 && ct_amx_available();
#else
        const int amx_max = 0;
#endif
        for (int amx = 0; amx <= amx_max; amx++) {
#if defined(__x86_64__)
            ct_matmul_amx_enable(amx);
#endif
            ct_mm_prompt = 1;
            for (int fmt = 0; fmt < 2; fmt++) {
                ct_mat w = {fmt ? (const void *)q4 : (const void *)q8, fmt ? CT_DT_U8 : CT_DT_I8, R, C, sc, 1, NULL};
                if (fmt) ct_quantize_q4(wf, CT_DT_F32, R, C, q4, sc);
                else ct_quantize_i8(wf, CT_DT_F32, R, C, q8, sc);
                ct_mat wn = w;
                wn.xq = 0;
                for (int i = 0; i < NP * C; i++) x[i] = urand(rng);
                fn(&w, NULL, x, y0, NP, 0, R);
                ct_mm_prompt = 0; /* the tokens alone, as decode runs them */
                for (int t = 0; t < NP; t++) fn(&w, NULL, x + (size_t)t * C, y1 + (size_t)t * R, 1, 0, R);
                ct_mm_prompt = 1;
                fn(&wn, NULL, x, yf, NP, 0, R);
                CHECKF(memcmp(y0, yf, sizeof(float) * NP * R) != 0,
                       "%s%s: a %d-token prompt pass on an xq matrix kept f32 activations", ct_isa_name((ct_isa)isa),
                       amx ? "+amx" : "", NP);
                CHECKF(memcmp(y0, y1, sizeof(float) * NP * R) == 0,
                       "%s%s: a %d-token prompt pass on an xq matrix is not the one-token integer-dot result",
                       ct_isa_name((ct_isa)isa), amx ? "+amx" : "", NP);
            }
            ct_mm_prompt = 0;
        }
#if defined(__x86_64__)
        ct_matmul_amx_enable(0); /* as in a process that selected no kernels yet (this one) */
#endif
    }
    CHECK(variants > 0);
#if defined(__x86_64__)
    /* the avx512 variant runs the integer-dot mode with VNNI when ct_matmul_vnni_enable says so
       (set at selection where the CPU has VNNI: Ice Lake class), else with VPMADDUBSW: bit for
       bit that kernel's results, both settings where the CPU allows */
    if (ct_isa_supported(CT_ISA_AVX512, f)) {
        const int R = 70, C = 1024, n = 3;
        for (int i = 0; i < R * C; i++) wf[i] = urand(rng);
        for (int i = 0; i < n * C; i++) x[i] = urand(rng);
        for (int vnni = 0; vnni <= f->avx512vnni; vnni++) {
            const ct_matmul_rows_fn want = vnni ? ct_matmul_rows_vnni : ct_matmul_rows_dot_avx2;
            int same = 1;
            ct_matmul_vnni_enable(vnni);
            for (int fmt = 0; fmt < 2; fmt++) {
                ct_mat w = {fmt ? (const void *)q4 : (const void *)q8, fmt ? CT_DT_U8 : CT_DT_I8, R, C, sc, 1, NULL};
                if (fmt) ct_quantize_q4(wf, CT_DT_F32, R, C, q4, sc);
                else ct_quantize_i8(wf, CT_DT_F32, R, C, q8, sc);
                ct_matmul_rows_avx512(&w, NULL, x, y0, n, 0, R);
                want(&w, NULL, x, y1, n, 0, R);
                same &= memcmp(y0, y1, sizeof(float) * n * R) == 0;
            }
            CHECKF(same, "avx512: the integer-dot mode is not the %s kernel's", vnni ? "VNNI" : "VPMADDUBSW");
        }
        ct_matmul_vnni_enable(0); /* the default: this binary selects no level before its end */
    }
    /* the avx2 variant runs the integer-dot mode with the 256-bit kernel ct_matmul_avx2_dot_select
       names: bit for bit that kernel's results, for every kind this CPU runs */
    if (ct_isa_supported(CT_ISA_AVX2, f)) {
        const int R = 70, C = 1024, n = 3;
        for (int i = 0; i < R * C; i++) wf[i] = urand(rng);
        for (int i = 0; i < n * C; i++) x[i] = urand(rng);
        const struct {
            int kind, ok;
            ct_matmul_rows_fn fn;
            const char *name;
        } kinds[3] = {{CT_VNNI_NONE, 1, ct_matmul_rows_dot_avx2, "VPMADDUBSW"},
                      {CT_VNNI_AVX, f->avx_vnni, ct_matmul_rows_dot_avxvnni, "AVX-VNNI"},
                      {CT_VNNI_256, f->avx512vnni && f->avx512vl, ct_matmul_rows_dot_vnni256, "VNNI-256"}};
        for (int k = 0; k < 3; k++) {
            if (!kinds[k].ok) continue;
            int same = 1;
            CHECK(ct_matmul_avx2_dot_select(kinds[k].kind) == kinds[k].kind);
            for (int fmt = 0; fmt < 2; fmt++) {
                ct_mat w = {fmt ? (const void *)q4 : (const void *)q8, fmt ? CT_DT_U8 : CT_DT_I8, R, C, sc, 1, NULL};
                if (fmt) ct_quantize_q4(wf, CT_DT_F32, R, C, q4, sc);
                else ct_quantize_i8(wf, CT_DT_F32, R, C, q8, sc);
                ct_matmul_rows_avx2(&w, NULL, x, y0, n, 0, R);
                kinds[k].fn(&w, NULL, x, y1, n, 0, R);
                same &= memcmp(y0, y1, sizeof(float) * n * R) == 0;
            }
            CHECKF(same, "avx2: the integer-dot mode is not the %s kernel's", kinds[k].name);
        }
        CHECK(ct_matmul_avx2_dot_select(CT_VNNI_NONE) == CT_VNNI_NONE); /* the default */
    }
    { /* the selection rule: 512-bit VNNI at the AVX-512 levels where the CPU has it; at avx2
         AVX-VNNI, else AVX-512 VNNI with VL on 256-bit registers, else none */
        ct_cpu_features v = *f;
        v.avx512vnni = 1;
        v.avx512vl = 1;
        v.avx_vnni = 0;
        CHECK(ct_isa_uses_vnni(CT_ISA_AVX512, &v) == CT_VNNI_512 && ct_isa_uses_vnni(CT_ISA_AVX512BF16, &v) == CT_VNNI_512);
        CHECK(ct_isa_uses_vnni(CT_ISA_AVX2, &v) == CT_VNNI_256 && !ct_isa_uses_vnni(CT_ISA_SCALAR, &v));
        v.avx_vnni = 1;
        CHECK(ct_isa_uses_vnni(CT_ISA_AVX2, &v) == CT_VNNI_AVX && ct_isa_uses_vnni(CT_ISA_AVX512, &v) == CT_VNNI_512);
        v.avx512vnni = 0;
        CHECK(!ct_isa_uses_vnni(CT_ISA_AVX512, &v) && ct_isa_uses_vnni(CT_ISA_AVX2, &v) == CT_VNNI_AVX);
        v.avx_vnni = 0;
        CHECK(!ct_isa_uses_vnni(CT_ISA_AVX2, &v));
        v.avx512vnni = 1;
        v.avx512vl = 0;
        CHECK(!ct_isa_uses_vnni(CT_ISA_AVX2, &v));
    }
#endif
    /* the integer-dot kernels (VNNI, VPMADDUBSW, SDOT, SMULL) called directly with 4, 8, 37 and 70
       tokens (37: past one quantization pass of the decode kernels, 70: of the panel calls; the
       panels from 8 tokens, the 256-bit VPDPBUSD INT8 from 4 tokens) on 300 rows in two row ranges, with a bias: each token bit-for-bit its solo result,
       and within the bound of the reference; the outputs that differ from it in any bit are
       counted and printed, and must be none for the kernels that do the reference's arithmetic
       (VPMADDUBSW, the 256-bit VPDPBUSD, SDOT, SMULL) */
    dot_kernel dk[4];
    const int ndk = dot_kernels(f, dk);
    for (int di = 0; di < ndk; di++) {
        const ct_matmul_rows_fn direct = dk[di].fn;
        const char *dname = dk[di].name;
        for (int ni = 0; ni < 4; ni++) {
            const int R = 300, C = 1024, n = ni == 0 ? 4 : ni == 1 ? 8 : ni == 2 ? 37 : 70;
            int bad = 0, same = 1, differ = 0;
            float bias[300];
            for (int i = 0; i < R * C; i++) wf[i] = urand(rng);
            for (int i = 0; i < n * C; i++) x[i] = urand(rng);
            for (int i = 0; i < R; i++) bias[i] = urand(rng);
            for (int fmt = 0; fmt < 2; fmt++) {
                ct_mat w = {fmt ? (const void *)q4 : (const void *)q8, fmt ? CT_DT_U8 : CT_DT_I8, R, C, sc, 1, NULL};
                if (fmt) ct_quantize_q4(wf, CT_DT_F32, R, C, q4, sc);
                else ct_quantize_i8(wf, CT_DT_F32, R, C, q8, sc);
                direct(&w, bias, x, y1, n, 0, 112);
                direct(&w, bias, x, y1, n, 112, R);
                for (int t = 0; t < n; t++) {
                    direct(&w, bias, x + (size_t)t * C, yf, 1, 0, R);
                    ct_matmul_rows_scalar(&w, bias, x + (size_t)t * C, y0, 1, 0, R);
                    same &= memcmp(yf, y1 + (size_t)t * R, sizeof(float) * R) == 0;
                    for (int r = 0; r < R; r++) {
                        bad += fabsf(yf[r] - y0[r]) > 1e-5f * (fabsf(y0[r]) + 1.0f);
                        differ += memcmp(&yf[r], &y0[r], 4) != 0;
                    }
                }
            }
            printf("%s kernel, %d tokens: %d of %d outputs not bit-identical to the reference\n", dname, n,
                   differ, 2 * n * R);
            CHECKF(same && bad == 0, "%s kernel, %d tokens: same %d, %d off", dname, n, same, bad);
            CHECKF(!dk[di].exact || differ == 0, "%s kernel, %d tokens: %d outputs not the reference's bit for bit",
                   dname, n, differ);
        }
        /* quantized-activation reuse (ct_xq_scope_begin): inside a scope, row chunks of one matrix
           and other matrices of either format over the same x give bit-for-bit the unscoped
           results; a changed x is not re-read inside the scope (the reuse happens: the contract
           makes the caller keep x fixed) and is re-read after it */
        {
            const int R = 300, C = 1024, n = 3;
            int same = 1, stale = 1, fresh = 1;
            for (int i = 0; i < R * C; i++) wf[i] = urand(rng);
            for (int i = 0; i < n * C; i++) x[i] = urand(rng);
            ct_quantize_q4(wf, CT_DT_F32, R, C, q4, sc);
            ct_quantize_i8(wf, CT_DT_F32, R, C, q8, sc + R * C / 32);
            ct_mat w4 = {q4, CT_DT_U8, R, C, sc, 1, NULL}, w8 = {q8, CT_DT_I8, R, C, sc + R * C / 32, 1, NULL};
            float *r4 = malloc(sizeof(float) * n * R), *r8 = malloc(sizeof(float) * n * R);
            direct(&w4, NULL, x, r4, n, 0, R);
            direct(&w8, NULL, x, r8, n, 0, R);
            ct_xq_scope_begin();
            for (int r0 = 0; r0 < R; r0 += 32) { /* chunks, alternating formats and token counts */
                const int r1 = r0 + 32 < R ? r0 + 32 : R;
                direct(&w4, NULL, x, yf, 1, r0, r1);
                direct(&w4, NULL, x, y0, n, r0, r1);
                direct(&w8, NULL, x, y1, n, r0, r1);
                for (int t = 0; t < n; t++)
                    for (int r = r0; r < r1; r++) {
                        same &= memcmp(&y0[t * R + r], &r4[t * R + r], 4) == 0;
                        same &= memcmp(&y1[t * R + r], &r8[t * R + r], 4) == 0;
                    }
                for (int r = r0; r < r1; r++) same &= memcmp(&yf[r], &r4[r], 4) == 0;
            }
            for (int i = 0; i < n * C; i++) x[i] = -x[i];
            direct(&w8, NULL, x, y0, n, 0, R); /* the last call's key: the quantized x of before */
            stale = memcmp(y0, r8, sizeof(float) * n * R) == 0;
            ct_xq_scope_end();
            direct(&w8, NULL, x, y0, n, 0, R);
            for (int i = 0; i < n * R; i++) fresh &= y0[i] == -r8[i];
            CHECKF(same, "%s: results inside an activation-reuse scope differ from the unscoped ones", dname);
            CHECKF(stale, "%s: a call inside the scope quantized x again (no reuse)", dname);
            CHECKF(fresh, "%s: a call after the scope did not quantize the changed x", dname);
            free(r4);
            free(r8);
        }
    }
    free(wf);
    free(x);
    free(y0);
    free(y1);
    free(yf);
    free(mag);
    free(deq);
    free(sx);
    free(q8);
    free(qx);
    free(q4);
    free(sc);
}

/* Attention over one KV head: every variant against the scalar reference (|err| <= 1e-5 *
   (sum_t p_t |v_t| + 1e-30) per output) for head sizes with and without SIMD tails, 1..300
   positions and 1..9 grouped query heads (past one 8-head pass), outputs of a row of equal
   scores = the mean of V, and a one-position cache returning V exactly. */
/* SwiGLU variants against the scalar reference (expf) within 1e-6 relative + 1e-30 absolute
   over gates spanning the exp range, the -88 cut and the tails; any split of the range, and
   in place, give the same bits; a NaN gate stays NaN, +inf stays inf. */
static void check_swiglu(const ct_cpu_features *f) {
    ct_rng own, *rng = &own; /* its own stream: the matmul cases' data stay as they were */
    ct_rng_init(rng, 21, 0);
    enum { N = 3100 };
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N), *ref = malloc(sizeof(float) * N),
          *y = malloc(sizeof(float) * N), *y2 = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        const float u = urand(rng);
        a[i] = i % 3 == 0 ? 4.0f * u : i % 3 == 1 ? 30.0f * u : 100.0f * u;
        b[i] = urand(rng) * 3.0f;
    }
    static const float special[] = {0.0f, -0.0f, -88.0f, -87.9f, -88.1f, 88.0f, 89.0f, -1e30f, 1e30f, 1e-30f, -1e-30f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) a[i] = special[i];
    ct_swiglu_scalar(ref, a, b, N);
    int tested = 0;
    for (int isa = 1; isa < CT_ISA_COUNT; isa++) {
        ct_swiglu_fn fn = ct_swiglu_for((ct_isa)isa);
        if (!fn || !ct_isa_supported((ct_isa)isa, f)) continue;
        tested++;
        const char *name = ct_isa_name((ct_isa)isa);
        int bad = 0;
        double worst = 0;
        fn(y, a, b, N);
        for (int i = 0; i < N; i++) {
            const double d = fabs((double)y[i] - (double)ref[i]);
            const double rel = d / (fabs((double)ref[i]) + 1e-30);
            if (fabs((double)ref[i]) > 1e-30 && rel > worst) worst = rel;
            if (!(d <= 1e-6 * fabs((double)ref[i]) + 1e-30)) bad++;
        }
        CHECKF(bad == 0, "swiglu %s: %d elements off the reference (worst relative %g)", name, bad, worst);
        printf("swiglu %s: worst relative difference vs expf %.2e\n", name, worst);
        memset(y2, 0, sizeof(float) * N);
        for (int lo = 0; lo < N;) {
            int hi = lo + 1 + (int)(ct_rng_uniform(rng) * 37.0);
            if (hi > N) hi = N;
            fn(y2 + lo, a + lo, b + lo, hi - lo);
            lo = hi;
        }
        CHECKF(memcmp(y, y2, sizeof(float) * N) == 0, "swiglu %s: a split range differs", name);
        for (int n = 1; n <= 40; n++) { /* every tail length: the same bits, nothing past n written */
            for (int i = 0; i <= n; i++) y2[i] = -1234.5f;
            fn(y2, a, b, n);
            CHECKF(memcmp(y, y2, sizeof(float) * (size_t)n) == 0 && y2[n] == -1234.5f, "swiglu %s: n = %d", name, n);
        }
        memcpy(y2, a, sizeof(float) * N);
        fn(y2, y2, b, N);
        CHECKF(memcmp(y, y2, sizeof(float) * N) == 0, "swiglu %s: in place differs", name);
        float an[3] = {NAN, INFINITY, 1.0f}, bn[3] = {1.0f, 1.0f, 1.0f}, yn[3];
        fn(yn, an, bn, 3);
        CHECKF(isnan(yn[0]) && yn[1] == INFINITY, "swiglu %s: non-finite handling", name);
    }
    printf("swiglu: %d SIMD variant(s) tested\n", tested);
    free(a), free(b), free(ref), free(y), free(y2);
}

/* RMSNorm variants against the scalar reference within 2e-6 relative + 1e-30 absolute for
   every length 1..70 and the model's 128, 512, 1024 (and 1031), in place the same bits. */
static void check_rmsnorm(const ct_cpu_features *f) {
    ct_rng own, *rng = &own; /* its own stream, likewise */
    ct_rng_init(rng, 23, 0);
    enum { N = 1031 };
    float *x = malloc(sizeof(float) * N), *w = malloc(sizeof(float) * N), *ref = malloc(sizeof(float) * N),
          *y = malloc(sizeof(float) * N), *y2 = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        x[i] = urand(rng) * (i % 53 == 0 ? 40.0f : 1.0f);
        w[i] = 1.0f + urand(rng) * 0.5f;
    }
    int tested = 0;
    for (int isa = 1; isa < CT_ISA_COUNT; isa++) {
        ct_rmsnorm_fn fn = ct_rmsnorm_for((ct_isa)isa);
        if (!fn || !ct_isa_supported((ct_isa)isa, f)) continue;
        tested++;
        const char *name = ct_isa_name((ct_isa)isa);
        int bad = 0, cases = 0;
        double worst = 0;
        for (int n = 1; n <= N; n = n < 70 ? n + 1 : n == 70 ? 128 : n == 128 ? 512 : n == 512 ? 1024 : n + 7) {
            cases++;
            ct_rmsnorm_scalar(ref, x, w, n, 1e-6f);
            for (int i = 0; i <= n && i < N; i++) y[i] = -1234.5f;
            fn(y, x, w, n, 1e-6f);
            if (n < N && y[n] != -1234.5f) bad++; /* nothing past n written */
            for (int i = 0; i < n; i++) {
                const double d = fabs((double)y[i] - (double)ref[i]), rel = d / (fabs((double)ref[i]) + 1e-30);
                if (rel > worst && fabs((double)ref[i]) > 1e-30) worst = rel;
                if (!(d <= 2e-6 * fabs((double)ref[i]) + 1e-30)) bad++;
            }
            memcpy(y2, x, sizeof(float) * (size_t)n);
            fn(y2, y2, w, n, 1e-6f);
            if (memcmp(y, y2, sizeof(float) * (size_t)n) != 0) bad++;
        }
        CHECKF(bad == 0, "rmsnorm %s: %d elements off the reference over %d lengths (worst relative %g)", name, bad,
               cases, worst);
        printf("rmsnorm %s: worst relative difference vs the in-order sum %.2e (%d lengths)\n", name, worst, cases);
    }
    printf("rmsnorm: %d SIMD variant(s) tested\n", tested);
    free(x), free(w), free(ref), free(y), free(y2);
}

static void check_attention(ct_rng *rng) {
    enum { MP = 300, MH = 160, MG = 9 };
    float *K = malloc(sizeof(float) * MP * MH), *V = malloc(sizeof(float) * MP * MH);
    float *q = malloc(sizeof(float) * MG * MH), *o0 = malloc(sizeof(float) * MG * MH),
          *o1 = malloc(sizeof(float) * MG * MH), *sc = malloc(sizeof(float) * MG * MP);
    struct {
        const char *name;
        ct_attend_head_fn fn;
        ct_isa isa;
    } v[] = {{"scalar", ct_attend_head_scalar, CT_ISA_SCALAR},
#if defined(__x86_64__)
             {"avx2", ct_attend_head_avx2, CT_ISA_AVX2},
             {"avx512", ct_attend_head_avx512, CT_ISA_AVX512},
#endif
#if defined(__aarch64__)
             {"neon", ct_attend_head_neon, CT_ISA_NEON},
#endif
    };
    ct_cpu_features f;
    ct_cpu_detect(&f);
    static const int hds[] = {8, 12, 16, 64, 128, 160};
    static const int nps[] = {1, 2, 7, 64, 300};
    static const int gs[] = {1, 2, 3, 9};
    for (size_t vi = 0; vi < sizeof v / sizeof *v; vi++) {
        if (!ct_isa_supported(v[vi].isa, &f)) continue;
        int bad = 0, exact = 1;
        double worst = 0;
        for (size_t hi = 0; hi < sizeof hds / sizeof *hds; hi++)
            for (size_t pi = 0; pi < sizeof nps / sizeof *nps; pi++)
                for (size_t gi = 0; gi < sizeof gs / sizeof *gs; gi++) {
                    const int hd = hds[hi], np = nps[pi], G = gs[gi];
                    for (int i = 0; i < np * hd; i++) {
                        K[i] = urand(rng) * 2.0f;
                        V[i] = urand(rng);
                    }
                    for (int i = 0; i < G * hd; i++) q[i] = urand(rng) * 2.0f;
                    ct_attend_head_scalar(K, V, hd, q, o0, np, G, sc);
                    v[vi].fn(K, V, hd, q, o1, np, G, sc);
                    for (int i = 0; i < G * hd; i++) {
                        double m = 0; /* sum_t |v_t| bounds sum_t p_t |v_t| */
                        for (int t = 0; t < np; t++) m += fabs(V[(size_t)t * hd + i % hd]);
                        if (fabsf(o1[i] - o0[i]) > 1e-5f * (float)m + 1e-30f) bad++;
                    }
                    double e = ct_nmse(o1, o0, (size_t)G * hd);
                    if (e > worst) worst = e;
                    if (np == 1) exact &= memcmp(o1, V, sizeof(float) * (size_t)hd) == 0;
                }
        /* zero queries: every position weighs 1/n, the output is the mean of V */
        const int hd = 64, np = 7;
        for (int i = 0; i < np * hd; i++) V[i] = urand(rng);
        memset(q, 0, sizeof(float) * hd);
        v[vi].fn(K, V, hd, q, o1, np, 1, sc);
        int mean_ok = 1;
        for (int i = 0; i < hd; i++) {
            double m = 0;
            for (int t = 0; t < np; t++) m += V[t * hd + i];
            mean_ok &= fabs(o1[i] - m / np) <= 1e-6;
        }
        printf("attention %s: worst NMSE vs scalar %.2e, %d outputs over the bound\n", v[vi].name, worst, bad);
        CHECKF(bad == 0, "attention %s: %d outputs off the reference", v[vi].name, bad);
        CHECKF(exact, "attention %s: one position does not return V", v[vi].name);
        CHECKF(mean_ok, "attention %s: zero query is not the mean of V", v[vi].name);
    }
    free(K);
    free(V);
    free(q);
    free(o0);
    free(o1);
    free(sc);
}

#if defined(__x86_64__)
/* INT8 and INT4 panels packed at load (ct_mat.pan) for the VNNI kernel: for 1, 2 and (INT8) 3
   (which keep the row blocks), 3-5, 16, 37 and 70 tokens (70: two quantization passes), shapes with a partial
   last panel (INT8: a last 32 rows with one panel and with a partial second one), a last 64-column
   half step and a bias, called over two row ranges (one starting at the second panel of an INT8
   pair), every output is bit for bit the same call's without panels; so is a 3-thread pool run;
   inside an activation-reuse scope, calls with and without panels alternating on one x (the same
   token count, two layouts of the quantized x) give the unscoped results; shapes and formats the
   kernel has no panels for report 0 bytes. */
static void check_pan(ct_rng *rng, const ct_cpu_features *f) {
    if (!ct_isa_supported(CT_ISA_AVX512BF16, f)) return;
    enum { MR = 300, MC = 1088, MT = 70 };
    float *wf = malloc(sizeof(float) * MR * MC), *x = malloc(sizeof(float) * MT * MC);
    float *y0 = malloc(sizeof(float) * MT * MR), *y1 = malloc(sizeof(float) * MT * MR);
    float *bias = malloc(sizeof(float) * MR), *sc = malloc(sizeof(float) * MR * MC / 32);
    uint8_t *qw = malloc((size_t)MR * MC);
    static const int shapes[][2] = {{300, 1024}, {150, 1088}, {37, 192}, {16, 64}};
    static const int toks[] = {1, 2, 3, 4, 5, 16, 37, 70};
    for (int fmt = 0; fmt < 2; fmt++) { /* 0: INT8, 1: INT4 */
        const ct_dtype dt = fmt ? CT_DT_U8 : CT_DT_I8;
        const char *name = fmt ? "INT4" : "INT8";
        int cases = 0, same = 1;
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            const int R = shapes[si][0], C = shapes[si][1];
            for (int i = 0; i < R * C; i++) wf[i] = urand(rng) * (i % 97 == 0 ? 8.0f : 1.0f);
            for (int i = 0; i < R; i++) bias[i] = urand(rng);
            if (fmt)
                ct_quantize_q4(wf, CT_DT_F32, R, C, qw, sc);
            else
                ct_quantize_i8(wf, CT_DT_F32, R, C, (int8_t *)qw, sc);
            const size_t nb = ct_xq_pan_bytes(dt, R, C);
            CHECKF(nb > 0, "no %s panels for %d x %d", name, R, C);
            uint8_t *pan = aligned_alloc(64, (nb + 63) & ~(size_t)63);
            ct_mat w = {qw, dt, R, C, sc, 1, NULL}, wp = w;
            ct_xq_pan_pack(&w, pan);
            wp.pan = pan;
            for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++) {
                const int n = toks[ti], rs = R > 16 ? 16 * ((R / 2) / 16) : R;
                if ((size_t)n * R > (size_t)MT * MR) continue;
                for (int i = 0; i < n * C; i++) x[i] = urand(rng) * (i % 211 == 0 ? 30.0f : 1.0f);
                ct_matmul_rows_vnni(&w, bias, x, y0, n, 0, R);
                ct_matmul_rows_vnni(&wp, bias, x, y1, n, 0, rs);
                if (rs < R) ct_matmul_rows_vnni(&wp, bias, x, y1, n, rs, R);
                same &= memcmp(y0, y1, sizeof(float) * n * R) == 0;
                if (n == 5) { /* the pool's row split */
                    ct_pool *p = NULL;
                    CHECK(ct_pool_create(3, NULL, 0, &p) == CT_OK);
                    mm_job j = {ct_matmul_rows_vnni, &wp, NULL, x, y1, n, 0};
                    ct_matmul_rows_vnni(&w, NULL, x, y0, n, 0, R);
                    ct_pool_run(p, run_mm, &j);
                    same &= memcmp(y0, y1, sizeof(float) * n * R) == 0;
                    ct_pool_free(p);
                }
                cases++;
            }
            if (si == 0) { /* one x, the fewest tokens that read the panels (INT8 4, INT4 3): panels
                              and row blocks alternating inside a scope */
                const int n = fmt ? 3 : 4;
                float *r = malloc(sizeof(float) * n * R);
                ct_matmul_rows_vnni(&w, NULL, x, r, n, 0, R);
                ct_xq_scope_begin();
                for (int r0 = 0; r0 < R; r0 += 32) {
                    const int r1 = r0 + 32 < R ? r0 + 32 : R;
                    ct_matmul_rows_vnni(r0 % 64 ? &w : &wp, NULL, x, y0, n, r0, r1);
                    ct_matmul_rows_vnni(r0 % 64 ? &wp : &w, NULL, x, y1, n, r0, r1);
                    for (int t = 0; t < n; t++)
                        for (int k = r0; k < r1; k++)
                            same &= memcmp(&y0[t * R + k], &r[t * R + k], 4) == 0 &&
                                    memcmp(&y1[t * R + k], &r[t * R + k], 4) == 0;
                }
                ct_xq_scope_end();
                free(r);
            }
            free(pan);
        }
        printf("VNNI %s panels packed at load: %d cases, bit for bit the row blocks' results: %s\n", name, cases,
               same ? "yes" : "no");
        CHECKF(same, "%s panels packed at load differ from the row blocks", name);
        CHECK(ct_xq_pan_bytes(dt, 16, 96) == 0 && ct_xq_pan_bytes(dt, 16, 8192) == 0 &&
              ct_xq_pan_bytes(dt, 0, 1024) == 0);
    }
    CHECK(ct_xq_pan_bytes(CT_DT_BF16, 32, 1024) == 0);
    free(wf);
    free(x);
    free(y0);
    free(y1);
    free(bias);
    free(sc);
    free(qw);
}
#endif

#if defined(__x86_64__) /* the x86 kernels are the ones with such buffers */
/* The kernels' per-thread buffers (kernels/tbuf.h) when a thread cannot get them (ct_tbuf_fail,
   as a failed allocation): the avx2 and avx512 GEMMs read the activations in place, bit for bit
   the result with their buffer; the bf16-activation mode runs the avx512 kernel. Each call in a
   thread of its own, which holds no buffer yet. */
typedef struct {
    ct_matmul_rows_fn fn;
    const ct_mat *w;
    const float *x;
    float *y;
    int n, fail;
} tbuf_job;
static void *tbuf_run(void *p) {
    tbuf_job *j = p;
    __atomic_store_n(&ct_tbuf_fail, j->fail, __ATOMIC_RELAXED);
    j->fn(j->w, NULL, j->x, j->y, j->n, 0, j->w->rows);
    __atomic_store_n(&ct_tbuf_fail, 0, __ATOMIC_RELAXED);
    return NULL;
}
static void tbuf_call(tbuf_job *j) {
    pthread_t t;
    if (pthread_create(&t, NULL, tbuf_run, j) != 0) {
        CHECKF(0, "pthread_create");
        return;
    }
    pthread_join(t, NULL);
}
static void check_tbuf(const ct_cpu_features *f) {
    enum { R = 70, C = 1024, N = 37 };
    ct_rng own, *rng = &own; /* its own stream: the checks after it keep their data */
    ct_rng_init(rng, 11, 0);
    uint16_t *wh = malloc(sizeof(uint16_t) * R * C);
    float *x = malloc(sizeof(float) * N * C), *y0 = malloc(sizeof(float) * N * R), *y1 = malloc(sizeof(float) * N * R);
    for (int i = 0; i < R * C; i++) wh[i] = ct_f32_to_bf16(urand(rng));
    for (int i = 0; i < N * C; i++) x[i] = urand(rng);
    ct_mat w = {wh, CT_DT_BF16, R, C, NULL, 0, NULL};
    int tested = 0;
    static const ct_isa lv[2] = {CT_ISA_AVX2, CT_ISA_AVX512};
    for (int i = 0; i < 2; i++) {
        if (!ct_isa_supported(lv[i], f)) continue;
        tbuf_job a = {ct_matmul_rows_for(lv[i]), &w, x, y0, N, 0}, b = a;
        b.y = y1;
        b.fail = 1;
        tbuf_call(&a);
        tbuf_call(&b);
        CHECKF(memcmp(y0, y1, sizeof(float) * N * R) == 0, "%s GEMM without its activation buffer differs",
               ct_isa_name(lv[i]));
        tested++;
    }
    if (ct_isa_supported(CT_ISA_AVX512BF16, f) && !ct_amx_available()) {
        ct_matmul_bf16act_enable(1);
        tbuf_job a = {ct_matmul_rows_avx512, &w, x, y0, N, 0}, b = {ct_matmul_rows_avx512bf16, &w, x, y1, N, 1};
        tbuf_call(&a);
        tbuf_call(&b);
        ct_matmul_bf16act_enable(0);
        CHECKF(memcmp(y0, y1, sizeof(float) * N * R) == 0, "bf16-activation mode without its buffer: not the avx512 kernel");
        tested++;
    }
    printf("per-thread buffers refused: %d checks\n", tested);
    free(wh), free(x), free(y0), free(y1);
}
#endif

/* The integer-dot kernels' buffers (kernels/tbuf.h) when threads cannot allocate their own
   (ct_tbuf_fail, as failed allocations): they borrow the kind's spare, one at a time. Three
   borrowing threads at once must each get bit for bit the result of a thread with its own
   buffers, and a borrowing thread inside a reuse scope (ct_xq_scope_begin) must quantize its x
   again after another thread has used the spare. */
typedef struct {
    ct_matmul_rows_fn fn;
    const ct_mat *w;
    const float *x, *x2;
    float *y, *y2;
    int n, rows, reps;
} xqb_job;
static void *xqb_run(void *p) {
    const xqb_job *j = p;
    for (int i = 0; i < j->reps; i++) j->fn(j->w, NULL, j->x, j->y, j->n, 0, j->rows);
    return NULL;
}
static void *xqb_scoped(void *p) { /* y: x's rows in two calls (split at a multiple of 32, as
                                      the panels need), with another thread's x2 between */
    const xqb_job *j = p, o = {j->fn, j->w, j->x2, NULL, j->y2, NULL, j->n, j->rows, 1};
    const int rs = j->rows / 64 * 32;
    ct_xq_scope_begin();
    j->fn(j->w, NULL, j->x, j->y, j->n, 0, rs);
    pthread_t t;
    if (pthread_create(&t, NULL, xqb_run, (void *)&o) == 0) pthread_join(t, NULL);
    j->fn(j->w, NULL, j->x, j->y, j->n, rs, j->rows);
    ct_xq_scope_end();
    return NULL;
}
static void check_xq_borrow(ct_rng *rng, const ct_cpu_features *f) {
    enum { R = 200, C = 1024, MT = 37 };
    dot_kernel dk[4];
    const int ndk = dot_kernels(f, dk);
    float *wf = malloc(sizeof(float) * R * C), *sc = malloc(sizeof(float) * R * C / 32);
    float *x = malloc(sizeof(float) * 2 * MT * C), *ref = malloc(sizeof(float) * 2 * MT * R);
    float *y = malloc(sizeof(float) * 4 * MT * R);
    void *qw = malloc((size_t)R * C);
    for (int i = 0; i < R * C; i++) wf[i] = urand(rng);
    for (int i = 0; i < 2 * MT * C; i++) x[i] = urand(rng);
    static const int toks[] = {1, 3, 4, 20, 37};
    int cases = 0;
    for (int fmt = 0; fmt < 2; fmt++) {
        ct_mat wv[2] = {{qw, fmt ? CT_DT_U8 : CT_DT_I8, R, C, sc, 1, NULL}};
        if (fmt) ct_quantize_q4(wf, CT_DT_F32, R, C, qw, sc);
        else ct_quantize_i8(wf, CT_DT_F32, R, C, qw, sc);
        int nw = 1;
        uint8_t *pan = NULL;
#if defined(__x86_64__) /* the VNNI kernel's panels packed at load: their own path */
        if (ct_isa_supported(CT_ISA_AVX512BF16, f)) {
            pan = aligned_alloc(64, (ct_xq_pan_bytes(wv[0].dtype, R, C) + 63) & ~(size_t)63);
            ct_xq_pan_pack(&wv[0], pan);
            wv[1] = wv[0];
            wv[1].pan = pan;
            nw = 2;
        }
#endif
        for (int di = 0; di < ndk; di++)
            for (int wi = 0; wi < (dk[di].fn == dk[0].fn ? nw : 1); wi++)
                for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++) {
                    const int n = toks[ti];
                    const float *x1 = x, *x2 = x + (size_t)MT * C;
                    float *r1 = ref, *r2 = ref + (size_t)MT * R;
                    dk[di].fn(&wv[wi], NULL, x1, r1, n, 0, R); /* this thread holds its buffers */
                    dk[di].fn(&wv[wi], NULL, x2, r2, n, 0, R);
                    __atomic_store_n(&ct_tbuf_fail, 1, __ATOMIC_RELAXED);
                    xqb_job j[3];
                    pthread_t t[3];
                    int made = 0;
                    for (int k = 0; k < 3; k++) {
                        j[k] = (xqb_job){dk[di].fn, &wv[wi], k == 1 ? x2 : x1, NULL, y + (size_t)k * MT * R, NULL, n, R, 4};
                        made += pthread_create(&t[k], NULL, xqb_run, &j[k]) == 0;
                    }
                    for (int k = 0; k < made; k++) pthread_join(t[k], NULL);
                    xqb_job js = {dk[di].fn, &wv[wi], x1, x2, y + (size_t)3 * MT * R, y, n, R, 1};
                    pthread_t ts;
                    made += pthread_create(&ts, NULL, xqb_scoped, &js) == 0;
                    if (made == 4) pthread_join(ts, NULL);
                    __atomic_store_n(&ct_tbuf_fail, 0, __ATOMIC_RELAXED);
                    const size_t b = sizeof(float) * (size_t)n * R;
                    CHECKF(made == 4, "pthread_create");
                    CHECKF(memcmp(y, r2, b) == 0 && memcmp(y + (size_t)MT * R, r2, b) == 0 &&
                               memcmp(y + (size_t)2 * MT * R, r1, b) == 0,
                           "%s %s, %d tokens%s: borrowing threads at once differ from a thread's own buffers",
                           dk[di].name, fmt ? "INT4" : "INT8", n, wi ? " (panels)" : "");
                    CHECKF(memcmp(y + (size_t)3 * MT * R, r1, b) == 0,
                           "%s %s, %d tokens%s: a borrowing thread reused activations another thread overwrote",
                           dk[di].name, fmt ? "INT4" : "INT8", n, wi ? " (panels)" : "");
                    cases++;
                }
        free(pan);
    }
    printf("integer-dot kernels on the borrowed spare buffer: %d cases\n", cases);
    CHECK(cases > 0 || ndk == 0);
    free(wf), free(sc), free(x), free(ref), free(y), free(qw);
}

/* The library's thread-local block (the main program's PT_TLS: this test links the static
   library with every kernel) stays small: glibc zero-fills it in every thread a process creates,
   whether the thread runs a kernel or not (docs/KERNELS.md "Dispatch": the kernels' buffers are
   per-thread heap buffers). It was 1.69 MB while the integer-dot kernels' buffers were
   thread-local arrays. */
static int tls_size(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name && info->dlpi_name[0]) return 0; /* the main program only */
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS) *(size_t *)data = info->dlpi_phdr[i].p_memsz;
    return 1;
}

#if defined(__x86_64__)
/* The activations' reuse (ct_xq_scope_begin) of the kernel fn in its current mode (bf16 packs,
   converted bf16 rows, the f32 GEMMs' copies): inside a scope, row chunks of w (n tokens) and w2 (n2 < n tokens, first in each chunk, so a pack
   of fewer tokens comes before a call of more) over one x give the unscoped results bit for bit; a
   changed x is not packed again inside the scope (the reuse happens) and is after it. */
static void act_reuse(const char *what, ct_matmul_rows_fn fn, const ct_mat *w, const ct_mat *w2, float *x, int n, int n2, float *y0,
                      float *y1, float *y2) {
    const int R = w->rows, C = w->cols, R2 = w2->rows;
    int same = 1, stale, fresh = 1;
    fn(w, NULL, x, y1, n, 0, R);
    fn(w2, NULL, x, y2, n2, 0, R2);
    for (int i = 0; i < n * C; i++) x[i] = -x[i]; /* the buffers hold another x's tokens */
    fn(w, NULL, x, y0, n, 0, R);
    for (int i = 0; i < n * C; i++) x[i] = -x[i];
    ct_xq_scope_begin();
    for (int r0 = 0; r0 < R; r0 += 16) {
        if (r0 + 16 <= R2) {
            fn(w2, NULL, x, y0, n2, r0, r0 + 16);
            for (int t = 0; t < n2; t++)
                same &= memcmp(y0 + (size_t)t * R2 + r0, y2 + (size_t)t * R2 + r0, 64) == 0;
        }
        fn(w, NULL, x, y0, n, r0, r0 + 16);
        for (int t = 0; t < n; t++) same &= memcmp(y0 + (size_t)t * R + r0, y1 + (size_t)t * R + r0, 64) == 0;
    }
    for (int i = 0; i < n * C; i++) x[i] = -x[i];
    fn(w, NULL, x, y0, n, 0, R); /* the last call's key: x of before */
    stale = memcmp(y0, y1, sizeof(float) * (size_t)n * R) == 0;
    ct_xq_scope_end();
    fn(w, NULL, x, y0, n, 0, R);
    for (int i = 0; i < n * R; i++) fresh &= y0[i] == -y1[i];
    for (int i = 0; i < n * C; i++) x[i] = -x[i];
    CHECKF(same, "%s: calls inside an activation-reuse scope differ from the unscoped ones", what);
    CHECKF(stale, "%s: a call inside the scope packed x again (no reuse)", what);
    CHECKF(fresh, "%s: a call after the scope did not pack the changed x", what);
    printf("%s: activations packed once per x in a reuse scope\n", what);
}

/* A call too long for one pack (200 tokens of 1024 columns) reuses the buffer pass by pass: a later
   call in the scope over the x packed before it must pack x again. */
static void multipass_reuse(const char *what, ct_matmul_rows_fn fn, const ct_mat *w, const float *x, int n, float *y0, float *y1,
                            ct_rng *rng) {
    enum { NB = 200 };
    const int R = w->rows, C = w->cols;
    float *xb = malloc(sizeof(float) * NB * C), *yb = malloc(sizeof(float) * NB * R);
    for (int i = 0; i < NB * C; i++) xb[i] = urand(rng);
    fn(w, NULL, x, y1, n, 0, R);
    ct_xq_scope_begin();
    fn(w, NULL, x, y0, n, 0, 16);
    fn(w, NULL, xb, yb, NB, 0, 16);
    fn(w, NULL, x, y0, n, 16, R);
    ct_xq_scope_end();
    int ok = 1;
    for (int t = 0; t < n; t++) ok &= memcmp(y0 + (size_t)t * R + 16, y1 + (size_t)t * R + 16, sizeof(float) * (R - 16)) == 0;
    CHECKF(ok, "%s: a call after a multi-pass one in the scope reused a stale pack", what);
    free(xb);
    free(yb);
}
#endif

/* Where AMX is on, BF16 calls outside a prompt (decode, batched decode) run the f32 kernel bit
   for bit at every token count (faster there, docs/KERNELS.md "Dispatch"), and a prompt's calls
   (ct_mm_prompt) the tiles at every token count, whose split-activation arithmetic rounds
   otherwise: each token of a prompt pass bit for bit its result in a one-token pass. Then the
   activation reuse of the tiles' prompt calls and of the bf16-activation GEMM; first that of
   the f32 prefill GEMMs (AVX-512, AVX2). */
static void check_bf16_tiles(ct_rng *rng) {
#if defined(__x86_64__)
    ct_cpu_features f;
    ct_cpu_detect(&f);
    enum { R = 64, C = 1024, N = 64 };
    uint16_t *wh = malloc(sizeof(uint16_t) * R * C);
    float *x = malloc(sizeof(float) * N * C), *y0 = malloc(sizeof(float) * N * R), *y1 = malloc(sizeof(float) * N * R);
    float *y2 = malloc(sizeof(float) * N * R);
    for (int i = 0; i < R * C; i++) wh[i] = ct_f32_to_bf16(urand(rng));
    for (int i = 0; i < N * C; i++) x[i] = urand(rng);
    const ct_mat w = {wh, CT_DT_BF16, R, C, NULL, 0, NULL}, w2 = {wh + 16 * C, CT_DT_BF16, R - 16, C, NULL, 0, NULL};
    /* the f32 prefill GEMMs' activation copies (n from 3 at avx512, 2 at avx2) */
    if (ct_isa_supported(CT_ISA_AVX512, &f)) {
        act_reuse("AVX-512 f32 GEMM", ct_matmul_rows_avx512, &w, &w2, x, N, 7, y0, y1, y2);
        multipass_reuse("AVX-512 f32 GEMM", ct_matmul_rows_avx512, &w, x, N, y0, y1, rng);
    }
    if (ct_isa_supported(CT_ISA_AVX2, &f)) {
        act_reuse("AVX2 f32 GEMM", ct_matmul_rows_avx2, &w, &w2, x, N, 7, y0, y1, y2);
        multipass_reuse("AVX2 f32 GEMM", ct_matmul_rows_avx2, &w, x, N, y0, y1, rng);
    }
    if (!ct_isa_supported(CT_ISA_AVX512BF16, &f)) {
        printf("AMX dispatch, bf16 activation reuse: no AVX-512 BF16 here\n");
        goto done;
    }
    ct_matmul_amx_enable(1);
    ct_matmul_bf16act_enable(0);
    static const int ns[] = {1, 2, 4, 15, 16, 40, 49, 64}; /* 33-64: one pass per 16 rows */
    for (size_t i = 0; ct_amx_available() && i < sizeof ns / sizeof *ns; i++) {
        const int n = ns[i];
        ct_matmul_rows_avx512(&w, NULL, x, y1, n, 0, R);
        ct_mm_prompt = 0;
        ct_matmul_rows_avx512bf16(&w, NULL, x, y0, n, 0, R);
        CHECKF(memcmp(y0, y1, sizeof(float) * n * R) == 0, "AMX on, BF16, %d tokens outside a prompt: not the f32 "
               "kernel's result", n);
        ct_mm_prompt = 1;
        ct_matmul_rows_avx512bf16(&w, NULL, x, y0, n, 0, R);
        for (int t = 0; t < n; t++)
            ct_matmul_rows_avx512bf16(&w, NULL, x + (size_t)t * C, y2 + (size_t)t * R, 1, 0, R);
        ct_mm_prompt = 0;
        CHECKF(memcmp(y0, y1, sizeof(float) * n * R) != 0, "AMX on, BF16, a %d-token prompt pass: the f32 kernel's "
               "result, not the tiles'", n);
        CHECKF(memcmp(y0, y2, sizeof(float) * n * R) == 0, "AMX on, BF16, a %d-token prompt pass: not each token's "
               "one-token result", n);
    }
    if (ct_amx_available()) {
        printf("AMX dispatch: BF16 calls of 1-64 tokens on the f32 kernel outside a prompt, on the tiles in one "
               "(pass-size invariant)\n");
        ct_mm_prompt = 1;
        /* the single-term tiles of the bf16-activation mode: pass-size invariant too (40 and 64
           tokens take the three- and four-block passes, one token the 2 x 2 blocking) */
        ct_matmul_bf16act_enable(1);
        for (int n = 40; n <= N; n += N - 40) {
            ct_matmul_rows_avx512bf16(&w, NULL, x, y0, n, 0, R);
            for (int t = 0; t < n; t++)
                ct_matmul_rows_avx512bf16(&w, NULL, x + (size_t)t * C, y2 + (size_t)t * R, 1, 0, R);
            CHECKF(memcmp(y0, y2, sizeof(float) * n * R) == 0,
                   "AMX on, bf16 activations, a %d-token prompt pass: not each token's one-token result", n);
        }
        ct_matmul_bf16act_enable(0);
        act_reuse("AMX prompt calls", ct_matmul_rows_avx512bf16, &w, &w2, x, N, 7, y0, y1, y2);
        multipass_reuse("AMX prompt calls", ct_matmul_rows_avx512bf16, &w, x, N, y0, y1, rng);
        ct_mm_prompt = 0;
    }
    ct_matmul_amx_enable(0); /* as in a process that selected no kernels yet (this one) */
    ct_matmul_bf16act_enable(1);
    act_reuse("bf16-activation GEMM", ct_matmul_rows_avx512bf16, &w, &w2, x, N, CT_DP_MIN_TOKENS + 1, y0, y1, y2);
    multipass_reuse("bf16-activation GEMM", ct_matmul_rows_avx512bf16, &w, x, N, y0, y1, rng);
    ct_matmul_bf16act_enable(0);
done:
    free(wh);
    free(x);
    free(y0);
    free(y1);
    free(y2);
#else
    (void)rng;
#endif
}

static void check_tls_block(void) {
    size_t tls = 0;
    dl_iterate_phdr(tls_size, &tls);
    printf("thread-local block of the program: %zu bytes\n", tls);
    CHECKF(tls > 0 && tls <= 4096, "the thread-local block is %zu bytes (at most 4096: no buffers in it)", tls);
}

int main(void) {
    ct_cpu_features f;
    ct_cpu_detect(&f);
    ct_rng rng;
    ct_rng_init(&rng, 7, 0);
    for (int i = 0; i < 37 * 200 + 7 * 200; i++) ct_rng_uniform(&rng); /* the data below predate
                                                                          check_batch_invariance's own stream */
    check_batch_invariance();
    check_xq(&rng, &f);
#if defined(__x86_64__)
    check_pan(&rng, &f);
#endif
    check_attention(&rng);
#if defined(__x86_64__)
    check_tbuf(&f);
#endif
    check_xq_borrow(&rng, &f);
    check_tls_block();
    check_bf16_tiles(&rng);
    check_swiglu(&f);
    check_rmsnorm(&f);
    const int cols[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 100, 128, 1024};
    const int rows[] = {1, 3, 4, 5, 9, 70};
    const int toks[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 37};
    enum { MAXR = 70, MAXT = 37, MAXC = 1024 };
    float *x = malloc(sizeof(float) * MAXT * MAXC), *bias = malloc(sizeof(float) * MAXR);
    float *xr = malloc(sizeof(float) * MAXT * MAXC), *deq = malloc(sizeof(float) * MAXC);
    float *wf = malloc(sizeof(float) * MAXR * MAXC), *y0 = malloc(sizeof(float) * MAXT * MAXR),
          *y1 = malloc(sizeof(float) * MAXT * MAXR), *mag = malloc(sizeof(float) * MAXT * MAXR),
          *yx = malloc(sizeof(float) * MAXT * MAXR);
    uint16_t *wh = malloc(2 * MAXR * MAXC);
    int8_t *wq8 = malloc(MAXR * MAXC);
    uint8_t *wq4 = malloc(MAXR * MAXC / 2);
    float *wsc = malloc(sizeof(float) * MAXR * MAXC / CT_Q4_GROUP);

    /* quantization round trip and the scalar reference against double precision */
    {
        int bad_rt = 0, bad_ref = 0;
        const int R = 5, C = 128;
        for (int i = 0; i < R * C; i++) wf[i] = urand(&rng) * (i % 41 == 0 ? 10.0f : 1.0f);
        for (int i = 0; i < 3 * C; i++) x[i] = urand(&rng);
        for (int fmt = 0; fmt < 2; fmt++) {
            ct_mat w = {fmt ? (const void *)wq4 : (const void *)wq8, fmt ? CT_DT_U8 : CT_DT_I8, R, C, wsc, 0, NULL};
            if (fmt) ct_quantize_q4(wf, CT_DT_F32, R, C, wq4, wsc);
            else ct_quantize_i8(wf, CT_DT_F32, R, C, wq8, wsc);
            ct_matmul_rows_scalar(&w, NULL, x, y0, 3, 0, R);
            for (int r = 0; r < R; r++) {
                ct_mat_row(&w, r, deq);
                for (int c = 0; c < C; c++) {
                    float step = fmt ? wsc[r * (C / CT_Q4_GROUP) + c / CT_Q4_GROUP] : wsc[r];
                    if (fabsf(deq[c] - wf[r * C + c]) > 0.5f * step * 1.0001f + 1e-30f) bad_rt++;
                }
                for (int t = 0; t < 3; t++) {
                    double d = 0, m = 0;
                    for (int c = 0; c < C; c++) {
                        d += (double)deq[c] * x[t * C + c];
                        m += fabs((double)deq[c] * x[t * C + c]);
                    }
                    if (fabs(y0[t * R + r] - d) > 1e-5 * m + 1e-30) bad_ref++;
                }
            }
            CHECK(ct_mat_bytes(&w) == (fmt ? (size_t)R * C / 2 + (size_t)R * C / 32 * 4
                                           : (size_t)R * C + (size_t)R * 4));
        }
        CHECKF(bad_rt == 0, "%d quantized weights off by more than half a step", bad_rt);
        CHECKF(bad_ref == 0, "%d scalar outputs off the double-precision dot", bad_ref);
    }

    int variants = 0;
    const int amx = ct_amx_available();
    printf("AMX-BF16 %s\n", amx ? "available: avx512bf16 is tested with and without it" : "not available");
    for (int pass = 1; pass < CT_ISA_COUNT + 3; pass++) {
        /* extra passes: avx512bf16 in bf16-activation mode (VDPBF16PS), with AMX on split
           activations, and with AMX in bf16-activation mode */
        int isa = pass < CT_ISA_COUNT ? pass : CT_ISA_AVX512BF16;
        int use_amx = pass > CT_ISA_COUNT, bf16act = pass == CT_ISA_COUNT || pass == CT_ISA_COUNT + 2;
        if (use_amx && !amx) continue;
#if defined(__x86_64__)
        ct_matmul_amx_enable(use_amx);
        ct_matmul_bf16act_enable(bf16act);
#endif
        ct_mm_prompt = use_amx; /* the tiles take a prompt's calls */
        ct_matmul_rows_fn fn = ct_matmul_rows_for((ct_isa)isa);
        if (!fn || !ct_isa_supported((ct_isa)isa, &f)) continue;
        variants++;
        static const char *names[3] = {"avx512bf16 (bf16 activations)", "avx512bf16+amx",
                                       "avx512bf16+amx (bf16 activations)"};
        const char *vname = pass < CT_ISA_COUNT ? ct_isa_name((ct_isa)isa) : names[pass - CT_ISA_COUNT];
        double worst = 0, dp_worst = 0, dp_vs_f32 = 0, q4_worst = 0;
        int bad = 0, dp_cases = 0, q4_cases = 0;
        for (int dt = 0; dt < 5; dt++) {
            static const ct_dtype dts[5] = {CT_DT_BF16, CT_DT_F16, CT_DT_F32, CT_DT_I8, CT_DT_U8};
            ct_dtype dtype = dts[dt];
            for (size_t ci = 0; ci < sizeof cols / sizeof *cols; ci++)
                for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++)
                    for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++) {
                        int C = cols[ci], R = rows[ri], n = toks[ti];
                        if (dtype == CT_DT_U8 && C % CT_Q4_GROUP) continue;
                        if (R * C > MAXR * 128 && R > 9) continue; /* keep the big-R cases small */
                        for (int i = 0; i < R * C; i++) {
                            float v = urand(&rng) * (i % 97 == 0 ? 100.0f : 1.0f);
                            if (i % 31 == 0) v = 0.0f;
                            if (dtype == CT_DT_BF16) {
                                wh[i] = ct_f32_to_bf16(v);
                                wf[i] = ct_bf16_to_f32(wh[i]);
                            } else if (dtype == CT_DT_F16) {
                                wh[i] = f32_to_f16(v);
                                wf[i] = ct_f16_to_f32(wh[i]);
                            } else {
                                wf[i] = v;
                            }
                        }
                        const void *data = dtype == CT_DT_F32 ? (const void *)wf : (const void *)wh;
                        if (dtype == CT_DT_I8) {
                            ct_quantize_i8(wf, CT_DT_F32, R, C, wq8, wsc);
                            data = wq8;
                        } else if (dtype == CT_DT_U8) {
                            ct_quantize_q4(wf, CT_DT_F32, R, C, wq4, wsc);
                            data = wq4;
                        }
                        ct_mat w = {data, dtype, R, C, dtype == CT_DT_I8 || dtype == CT_DT_U8 ? wsc : NULL, 0, NULL};
                        if (dtype == CT_DT_I8 || dtype == CT_DT_U8)
                            for (int r = 0; r < R; r++) ct_mat_row(&w, r, wf + (size_t)r * C);
                        for (int i = 0; i < n * C; i++) x[i] = urand(&rng);
                        for (int i = 0; i < R; i++) bias[i] = urand(&rng);
                        const float *bp = (ci + ti) % 2 ? bias : NULL;
                        /* the bf16 dot-product path and the single-term tiles round activations:
                           their reference does too */
                        int dp = bf16act && dtype == CT_DT_BF16 && (n >= CT_DP_MIN_TOKENS || (use_amx && C % 32 == 0));
                        for (int i = 0; i < n * C; i++) xr[i] = dp ? ct_bf16_to_f32(ct_f32_to_bf16(x[i])) : x[i];
                        ct_matmul_rows_scalar(&w, bp, xr, y0, n, 0, R);
                        if (dp) ct_matmul_rows_scalar(&w, bp, x, yx, n, 0, R);
                        fn(&w, bp, x, y1, n, 0, R);
                        for (int t = 0; t < n; t++)
                            for (int r = 0; r < R; r++) {
                                double m = bp ? fabs(bp[r]) : 0;
                                for (int k = 0; k < C; k++) m += fabs((double)wf[r * C + k] * xr[t * C + k]);
                                mag[t * R + r] = (float)m;
                            }
                        double e = ct_nmse(y1, y0, (size_t)(n * R));
                        /* AMX prompt passes over INT4 round the dequantized weights to bf16 */
                        int wround = use_amx && dtype == CT_DT_U8 && C % 32 == 0;
                        if (wround) {
                            q4_cases++;
                            if (e > q4_worst) q4_worst = e;
                        } else if (e > worst) {
                            worst = e;
                        }
                        for (int i = 0; i < n * R; i++)
                            if (fabsf(y1[i] - y0[i]) > (wround ? 8e-3f : 1e-5f) * mag[i] + 1e-30f) bad++;
                        if (dp) {
                            dp_cases++;
                            if (e > dp_worst) dp_worst = e;
                            double ex = ct_nmse(y1, yx, (size_t)(n * R));
                            if (ex > dp_vs_f32 && n * R >= 16) dp_vs_f32 = ex; /* fewer outputs say little */
                        }
                    }
        }
        printf("%s: worst NMSE vs scalar %.2e, %d outputs over the abs bound\n", vname, worst, bad);
        if (dp_cases)
            printf("%s: bf16-activation path (%d cases): NMSE %.2e vs scalar on bf16-rounded "
                   "activations, %.2e vs scalar on f32 activations\n",
                   vname, dp_cases, dp_worst, dp_vs_f32);
        CHECK(worst <= 1e-8); /* one-output cases with cancellation; the abs bound is the real test */
        CHECK(bad == 0);
        CHECK(!bf16act || dp_cases > 0);
        if (q4_cases)
            printf("%s: INT4 through bf16 tiles (%d cases): NMSE %.2e vs scalar\n", vname, q4_cases, q4_worst);
        CHECK(q4_worst <= 1e-4);
        CHECKF(dp_vs_f32 <= 1e-4, "bf16-activation error %.2e", dp_vs_f32);

        /* thread-count invariance on a realistic shape */
        const int R = 301, C = 1024, n = 17;
        float *W = malloc(sizeof(float) * R * C), *X = malloc(sizeof(float) * n * C);
        float *Y1 = malloc(sizeof(float) * n * R), *Y3 = malloc(sizeof(float) * n * R);
        uint16_t *WB = malloc(2 * (size_t)R * C);
        for (int i = 0; i < R * C; i++) W[i] = urand(&rng);
        for (int i = 0; i < R * C; i++) WB[i] = ct_f32_to_bf16(W[i]);
        for (int i = 0; i < n * C; i++) X[i] = urand(&rng);
        int8_t *Q8 = malloc((size_t)R * C);
        uint8_t *Q4 = malloc((size_t)R * C / 2);
        float *SC = malloc(sizeof(float) * R * (C / CT_Q4_GROUP));
        int same = 1;
        for (int fmt = 0; fmt < 4; fmt++) {
            ct_mat w = {WB, CT_DT_BF16, R, C, NULL, 0, NULL};
            if (fmt == 1) w = (ct_mat){W, CT_DT_F32, R, C, NULL, 0, NULL};
            if (fmt == 2) {
                ct_quantize_i8(W, CT_DT_F32, R, C, Q8, SC);
                w = (ct_mat){Q8, CT_DT_I8, R, C, SC, 0, NULL};
            }
            if (fmt == 3) {
                ct_quantize_q4(W, CT_DT_F32, R, C, Q4, SC);
                w = (ct_mat){Q4, CT_DT_U8, R, C, SC, 0, NULL};
            }
            for (int nn = 1; nn <= n; nn += 2) {
                for (int nt = 1; nt <= 3; nt++) {
                    ct_pool *p = NULL;
                    CHECK(ct_pool_create(nt, NULL, 0, &p) == CT_OK);
                    mm_job j = {fn, &w, NULL, X, nt == 1 ? Y1 : Y3, nn, use_amx};
                    for (int rep = 0; rep < 20; rep++) ct_pool_run(p, run_mm, &j);
                    if (nt > 1) same &= memcmp(Y1, Y3, sizeof(float) * nn * R) == 0;
                    ct_pool_free(p);
                }
            }
        }
        CHECKF(same, "%s: results depend on the thread count", vname);
        free(Q8);
        free(Q4);
        free(SC);
        free(W);
        free(X);
        free(Y1);
        free(Y3);
        free(WB);
    }
#if defined(__x86_64__)
    ct_matmul_amx_enable(0);
    ct_matmul_bf16act_enable(0);
#endif
    ct_mm_prompt = 0;
    printf("%d SIMD variant(s) tested on this CPU\n", variants);

    /* pool split covers [0,n) exactly, aligned */
    for (int nth = 1; nth <= 5; nth++) {
        int covered = 0, prev = 0, ok = 1;
        for (int i = 0; i < nth; i++) {
            int lo, hi;
            ct_pool_split(103, i, nth, 4, &lo, &hi);
            ok &= lo == prev && hi >= lo && (lo % 4 == 0);
            covered += hi - lo;
            prev = hi;
        }
        CHECK(ok && covered == 103);
    }

    /* forcing an ISA: parse errors and unsupported levels are reported, not executed */
    char err[256];
    ct_isa isa;
    CHECK(ct_isa_parse("avx512", &isa) == CT_OK && isa == CT_ISA_AVX512);
    CHECK(ct_isa_parse("sse9", &isa) == CT_ERR_INVALID_ARG);
    CHECK(ct_kernels_init("sse9", err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "sse9"));
#if defined(__x86_64__)
    CHECK(ct_kernels_init("neon", err, sizeof err) == CT_ERR_UNSUPPORTED && strstr(err, "neon"));
#else
    CHECK(ct_kernels_init("avx2", err, sizeof err) == CT_ERR_UNSUPPORTED);
#endif
    CHECK(ct_kernels_init("scalar", err, sizeof err) == CT_OK);
    CHECK(ct_kernels()->isa == CT_ISA_SCALAR);
    CHECK(ct_kernels_init(ct_isa_name(ct_isa_best(&f)), err, sizeof err) ==
          (ct_isa_best(&f) == CT_ISA_SCALAR ? CT_OK : CT_ERR_STATE));
    free(x);
    free(bias);
    free(wf);
    free(y0);
    free(y1);
    free(mag);
    free(wh);
    free(xr);
    free(deq);
    free(yx);
    free(wq8);
    free(wq4);
    free(wsc);
    return ct_test_finish();
}
