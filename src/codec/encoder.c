/* Speech-tokenizer encoder forward (encoder.h): the SEANet runs on chunks of CHUNK_STEPS
 * 25 Hz steps with per-conv history tails (exactly the one-shot result: every conv is causal,
 * and the extra right padding of a strided conv is applied where the official code applies
 * it, at the end of that layer's input), then the transformer, the replicate-padded
 * downsample and the RVQ search over the whole clip. The nearest codebook entry maximises
 * x.e - |e|^2 / 2 (one GEMM per codebook, ties to the lowest index as torch's argmin). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/encoder.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"

/* 25 Hz steps of PCM per SEANet chunk (16 x 960 samples): small enough to bound the working
 * set (4 buffers of 15360 x 64 floats), large enough that the deep stages' weights (the last
 * strided conv has 8.4 M) are streamed once per 16 steps rather than per step. */
#define CHUNK_STEPS 16

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }

/* Copies the H-row tail in front of buf and returns the row-0 pointer of the new rows. */
static float *hist_in(float *buf, const float *tail, int H, int C) {
    if (H > 0) memcpy(buf, tail, (size_t)H * (size_t)C * sizeof(float));
    return buf + (size_t)H * (size_t)C;
}

/* tail <- the last H rows of (history ++ data[0..n)), data preceded by its H history rows. */
static void hist_save(float *tail, const float *data, int n, int H, int C) {
    if (H > 0) memmove(tail, data + ((ptrdiff_t)n - H) * (ptrdiff_t)C, (size_t)H * (size_t)C * sizeof(float));
}

/* Working memory of one call, carved from one allocation. */
typedef struct {
    float *t0;                                    /* [k0-1] conv0 input tail */
    float *t_res[CT_ENC_MAX_STAGES][CT_ENC_MAX_RES]; /* [(res_k-1)*dil][C] ELU tails */
    float *t_down[CT_ENC_MAX_STAGES];             /* [ratio][C] previous super-row */
    float *t_last;                                /* [k_last-1][C_last] */
    float *A, *B, *E, *Hb;                        /* SEANet chunk buffers (ping-pong, ELU, residual) */
    float *x, *h, *q, *k, *v, *kh, *vh, *att, *tt, *f; /* transformer */
    float *rc, *rs, *sc;                          /* RoPE tables [T][hd/2], scores [threads][group][T] */
    float *pad, *d;                               /* downsample input [(T+3)][H], output [F][H] */
    float *p, *s;                                 /* RVQ residual [F][cb_dim], scores [F][codebook_size] */
    float *mem;
} work;

/* Floats of every buffer for T 25 Hz steps; fills w's pointers when base is non-NULL. */
static size_t carve(const ct_speech_encoder *e, int T, int nth, work *w, float *base) {
    size_t off = 0;
#define TAKE(ptr, count)                                                             \
    do {                                                                             \
        size_t c_ = (count);                                                         \
        if (base) (ptr) = base + off;                                                \
        off += (c_ + 15) & ~(size_t)15;                                              \
    } while (0)
    const size_t TT = (size_t)T, H = (size_t)e->hidden, hd = (size_t)e->head_dim;
    const size_t qd = (size_t)e->n_heads * hd, kvd = (size_t)e->n_kv * hd;
    const int F = (T + 1) / 2;
    TAKE(w->t0, (size_t)(e->k0 - 1));
    size_t rows = (size_t)CHUNK_STEPS * (size_t)e->hop, buf = (size_t)(e->k0 - 1) + rows;
    for (int s = 0; s < e->n_stages; s++) {
        const ct_enc_stage *sg = &e->st[s];
        const size_t C = (size_t)sg->C, r = (size_t)sg->ratio;
        for (int j = 0; j < e->n_res; j++) {
            const size_t hr = (size_t)(e->res_k - 1) * (size_t)sg->res[j].dil;
            TAKE(w->t_res[s][j], hr * C);
            buf = zmax(buf, (hr + rows) * C);
        }
        TAKE(w->t_down[s], r * C);
        buf = zmax(buf, (r + rows + r) * C); /* history super-row, rows, right pad */
        rows = (rows + r - 1) / r;
        buf = zmax(buf, rows * 2 * C);
    }
    const size_t CL = (size_t)e->filters << e->n_stages;
    TAKE(w->t_last, (size_t)(e->k_last - 1) * CL);
    buf = zmax(buf, ((size_t)(e->k_last - 1) + rows) * CL);
    TAKE(w->A, buf);
    TAKE(w->B, buf);
    TAKE(w->E, buf);
    TAKE(w->Hb, buf);
    TAKE(w->x, TT * H);
    TAKE(w->h, TT * H);
    TAKE(w->q, TT * qd);
    TAKE(w->k, TT * kvd);
    TAKE(w->v, TT * kvd);
    TAKE(w->kh, TT * kvd);
    TAKE(w->vh, TT * kvd);
    TAKE(w->att, TT * qd);
    TAKE(w->tt, TT * H);
    TAKE(w->f, TT * (size_t)e->ffn);
    TAKE(w->rc, TT * hd / 2);
    TAKE(w->rs, TT * hd / 2);
    TAKE(w->sc, (size_t)nth * TT * (size_t)(e->n_heads / e->n_kv));
    TAKE(w->pad, (TT + 3) * H);
    TAKE(w->d, (size_t)F * H);
    TAKE(w->p, (size_t)F * (size_t)e->cb_dim);
    TAKE(w->s, (size_t)F * (size_t)e->codebook_size);
#undef TAKE
    return off;
}

/* ---------------------------------------------------------------------------------------
 * SEANet */

/* One chunk of m samples (m a multiple of hop except for the last chunk); appends its
 * ceil(m / hop) output rows at out. */
static void seanet_chunk(const ct_speech_encoder *e, const ct_cv_exec *ex, work *w, const float *pcm, int m,
                         float *out) {
    float *a = w->A, *b = w->B;
    float *xin = hist_in(w->E, w->t0, e->k0 - 1, 1);
    memcpy(xin, pcm, (size_t)m * sizeof(float));
    ct_cv_conv_causal_ex(ex, a, xin, m, &e->conv0, 1, e->conv0_b);
    hist_save(w->t0, xin, m, e->k0 - 1, 1);
    int R = m;
    for (int s = 0; s < e->n_stages; s++) {
        const ct_enc_stage *sg = &e->st[s];
        const int C = sg->C, r = sg->ratio, hc = C / e->compress;
        for (int j = 0; j < e->n_res; j++) {
            const ct_enc_res *rb = &sg->res[j];
            const int hr = (e->res_k - 1) * rb->dil;
            float *ein = hist_in(w->E, w->t_res[s][j], hr, C);
            ct_cv_elu_ex(ex, ein, a, (size_t)R * (size_t)C);
            ct_cv_conv_causal_ex(ex, w->Hb, ein, R, &rb->c1, rb->dil, rb->c1_b);
            hist_save(w->t_res[s][j], ein, R, hr, C);
            ct_cv_elu_ex(ex, w->Hb, w->Hb, (size_t)R * (size_t)hc);
            ct_cv_linear_ex(ex, a, w->Hb, R, &rb->c2, rb->c2_b, 1);
        }
        /* ELU, zero right pad to a whole super-row, conv k 2r stride r as k 2 over super-rows */
        const int Ro = (R + r - 1) / r;
        float *ein = hist_in(w->E, w->t_down[s], r, C);
        ct_cv_elu_ex(ex, ein, a, (size_t)R * (size_t)C);
        memset(ein + (size_t)R * (size_t)C, 0, (size_t)(Ro * r - R) * (size_t)C * sizeof(float));
        ct_cv_conv_causal_ex(ex, b, ein, Ro, &sg->down, 1, sg->down_b);
        memcpy(w->t_down[s], ein + (size_t)(Ro - 1) * (size_t)r * (size_t)C, (size_t)r * (size_t)C * sizeof(float));
        float *t = a;
        a = b;
        b = t;
        R = Ro;
    }
    const int CL = e->filters << e->n_stages;
    float *ein = hist_in(w->E, w->t_last, e->k_last - 1, CL);
    ct_cv_elu_ex(ex, ein, a, (size_t)R * (size_t)CL);
    ct_cv_conv_causal_ex(ex, out, ein, R, &e->conv_last, 1, e->conv_last_b);
    hist_save(w->t_last, ein, R, e->k_last - 1, CL);
}

/* ---------------------------------------------------------------------------------------
 * Transformer (in place on w->x, T rows) */

typedef struct {
    const ct_speech_encoder *e;
    work *w;
    int T;
    ct_attend_head_fn attend;
    ct_pool_range r; /* query rows */
} attn_job;

/* Attention of query rows taken from r over keys 0..t; scores scratch per thread (ith). */
static void attn_job_run(void *ctx, int ith, int nth) {
    (void)nth;
    attn_job *j = ctx;
    const ct_speech_encoder *e = j->e;
    const int T = j->T, hd = e->head_dim, grp = e->n_heads / e->n_kv, qd = e->n_heads * hd;
    float *sc = j->w->sc + (size_t)ith * (size_t)grp * (size_t)T;
    int lo, hi;
    while (ct_pool_range_next(&j->r, &lo, &hi))
        for (int t = lo; t < hi; t++)
            for (int i = 0; i < e->n_kv; i++)
                j->attend(j->w->kh + (size_t)i * T * hd, j->w->vh + (size_t)i * T * hd, hd,
                          j->w->q + (size_t)t * qd + (size_t)i * grp * hd,
                          j->w->att + (size_t)t * qd + (size_t)i * grp * hd, t + 1, grp, sc);
}

static void transformer(const ct_speech_encoder *e, const ct_cv_exec *ex, work *w, int T) {
    const int H = e->hidden, hd = e->head_dim, hh = hd / 2, nh = e->n_heads, nkv = e->n_kv;
    const int qd = nh * hd, kvd = nkv * hd;
    const ct_attend_head_fn attend = ct_kernels()->attend_head;
    float *x = w->x, *h = w->h;
    for (int t = 0; t < T; t++)
        ct_rope_angles(t, hd, e->rope_theta, w->rc + (size_t)t * hh, w->rs + (size_t)t * hh);
    for (int l = 0; l < e->n_layers; l++) {
        const ct_enc_layer *ly = &e->layers[l];
        ct_cv_layernorm(h, x, T, H, ly->ln1_w, ly->ln1_b, e->norm_eps);
        ct_cv_linear_ex(ex, w->q, h, T, &ly->q, NULL, 0);
        ct_cv_linear_ex(ex, w->k, h, T, &ly->k, NULL, 0);
        ct_cv_linear_ex(ex, w->v, h, T, &ly->v, NULL, 0);
        for (int t = 0; t < T; t++) {
            const float *cs = w->rc + (size_t)t * hh, *sn = w->rs + (size_t)t * hh;
            for (int i = 0; i < nh; i++) ct_rope_apply(w->q + (size_t)t * qd + (size_t)i * hd, cs, sn, hd);
            for (int i = 0; i < nkv; i++) {
                float *kt = w->k + (size_t)t * kvd + (size_t)i * hd;
                ct_rope_apply(kt, cs, sn, hd);
                /* per-head rows for the attention kernel: kh[i][t][hd] */
                memcpy(w->kh + ((size_t)i * T + (size_t)t) * hd, kt, (size_t)hd * sizeof(float));
                memcpy(w->vh + ((size_t)i * T + (size_t)t) * hd, w->v + (size_t)t * kvd + (size_t)i * hd,
                       (size_t)hd * sizeof(float));
            }
        }
        /* plain causal mask: query t sees keys 0..t (the config's sliding_window is not
         * applied by the official encoder; MODEL.md 5.4); queries split over the pool */
        attn_job aj = {e, w, T, attend, {0}};
        ct_pool_range_init(&aj.r, T, 1, ct_pool_chunk(ex->pool, T, 1));
        ct_pool_run_dyn(ex->pool, attn_job_run, &aj);
        ct_cv_linear_ex(ex, w->tt, w->att, T, &ly->o, NULL, 0);
        for (size_t r = 0; r < (size_t)T; r++)
            for (int c = 0; c < H; c++) x[r * H + c] += ly->ls_attn[c] * w->tt[r * H + c];
        ct_cv_layernorm(h, x, T, H, ly->ln2_w, ly->ln2_b, e->norm_eps);
        ct_cv_linear_ex(ex, w->f, h, T, &ly->fc1, NULL, 0);
        ct_cv_gelu_erf(w->f, (size_t)T * (size_t)e->ffn);
        ct_cv_linear_ex(ex, w->tt, w->f, T, &ly->fc2, NULL, 0);
        for (size_t r = 0; r < (size_t)T; r++)
            for (int c = 0; c < H; c++) x[r * H + c] += ly->ls_mlp[c] * w->tt[r * H + c];
    }
}

/* ---------------------------------------------------------------------------------------
 * RVQ */

/* Row r of codebook g (read back from its panel layout, kernels/conv.h). */
static float cb_entry(const ct_cv_packed *W, int r, int i) {
    return W->w[((size_t)(r / CT_CV_OB) * (size_t)W->cin + (size_t)i) * CT_CV_OB + (size_t)(r % CT_CV_OB)];
}

/* Codes of codebook g for F rows of p (cb_dim wide) into codes[t * n_codes + g]; with
 * subtract, p becomes the residual. */
static void rvq_step(const ct_speech_encoder *e, const ct_cv_exec *ex, work *w, int F, int g, int subtract,
                     int32_t *codes) {
    const int R = e->codebook_size, D = e->cb_dim;
    ct_cv_linear_ex(ex, w->s, w->p, F, &e->cb[g], e->cb_bias[g], 0);
    for (int t = 0; t < F; t++) {
        const float *sr = w->s + (size_t)t * (size_t)R;
        int best = 0;
        for (int r = 1; r < R; r++)
            if (sr[r] > sr[best]) best = r;
        codes[(size_t)t * (size_t)e->n_codes + (size_t)g] = best;
        if (subtract) {
            float *pr = w->p + (size_t)t * (size_t)D;
            for (int i = 0; i < D; i++) pr[i] -= cb_entry(&e->cb[g], best, i);
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Entry points */

ct_status ct_speech_encode_ex(const ct_speech_encoder *e, const ct_cv_exec *ex_in, const float *pcm, size_t n,
                              int32_t *codes, int max_frames, int *n_frames, ct_speech_enc_taps *taps,
                              char *err, size_t errcap) {
    if (!e || !pcm || !codes || !n_frames)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_speech_encode: NULL argument");
    if (n == 0) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_speech_encode: empty clip (0 samples)");
    if (n > (size_t)1 << 30)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "ct_speech_encode: %zu samples is more than the 2^30 supported", n);
    const int T = (int)((n + (size_t)e->hop - 1) / (size_t)e->hop), F = (T + 1) / 2;
    if (F > max_frames)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "ct_speech_encode: %zu samples make %d frames, more than max_frames %d",
                       n, F, max_frames);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(pcm[i]))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_speech_encode: sample %zu is not finite", i);
    ct_cv_exec exd;
    const ct_cv_exec *ex = ex_in;
    if (!ex) {
        ct_cv_exec_init(&exd, NULL);
        ex = &exd;
    }
    work w;
    memset(&w, 0, sizeof w);
    const int nth = ct_pool_threads(ex->pool);
    const size_t total = carve(e, T, nth, &w, NULL);
    float *mem = calloc(total, sizeof(float));
    if (!mem)
        return ct_errf(err, errcap, CT_ERR_NOMEM, "ct_speech_encode: out of memory (%zu MB of working memory)",
                       total * sizeof(float) >> 20);
    carve(e, T, nth, &w, mem);
    const int H = e->hidden;

    /* 1. SEANet -> x [T][H] */
    const size_t chunk = (size_t)CHUNK_STEPS * (size_t)e->hop;
    int row = 0;
    for (size_t s0 = 0; s0 < n; s0 += chunk) {
        const int m = (int)(n - s0 < chunk ? n - s0 : chunk);
        seanet_chunk(e, ex, &w, pcm + s0, m, w.x + (size_t)row * (size_t)H);
        row += (m + e->hop - 1) / e->hop;
    }
    if (taps && taps->seanet) memcpy(taps->seanet, w.x, (size_t)T * (size_t)H * sizeof(float));

    /* 2. transformer */
    transformer(e, ex, &w, T);
    if (taps && taps->transformer) memcpy(taps->transformer, w.x, (size_t)T * (size_t)H * sizeof(float));

    /* 3. downsample k4 s2, replicate padding: rows [x0, x0, x.., x_{T-1} if T odd] */
    memcpy(w.pad, w.x, (size_t)H * sizeof(float));
    memcpy(w.pad + H, w.x, (size_t)H * sizeof(float));
    memcpy(w.pad + 2 * (size_t)H, w.x, (size_t)T * (size_t)H * sizeof(float));
    if (T % 2) memcpy(w.pad + (size_t)(T + 2) * H, w.x + (size_t)(T - 1) * H, (size_t)H * sizeof(float));
    ct_cv_conv_causal_ex(ex, w.d, w.pad + 2 * (size_t)H, F, &e->down, 1, NULL);
    if (taps && taps->downsample) memcpy(taps->downsample, w.d, (size_t)F * (size_t)H * sizeof(float));

    /* 4. split RVQ: semantic codebook on its projection, acoustic residual chain on its own */
    if (e->has_in_proj) ct_cv_linear_ex(ex, w.p, w.d, F, &e->sem_in, NULL, 0);
    else memcpy(w.p, w.d, (size_t)F * (size_t)H * sizeof(float));
    rvq_step(e, ex, &w, F, 0, 0, codes);
    if (e->has_in_proj) ct_cv_linear_ex(ex, w.p, w.d, F, &e->ac_in, NULL, 0);
    else memcpy(w.p, w.d, (size_t)F * (size_t)H * sizeof(float));
    for (int g = 1; g < e->n_codes; g++) rvq_step(e, ex, &w, F, g, g + 1 < e->n_codes, codes);

    free(mem);
    *n_frames = F;
    return CT_OK;
}

ct_status ct_speech_encode(const ct_speech_encoder *e, const float *pcm, size_t n, int32_t *codes, int max_frames,
                           int *n_frames, char *err, size_t errcap) {
    return ct_speech_encode_ex(e, NULL, pcm, n, codes, max_frames, n_frames, NULL, err, errcap);
}
