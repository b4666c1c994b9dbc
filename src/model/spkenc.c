/* The speaker encoder (spkenc.h): ECAPA-TDNN forward on time-major activations. */
#include "model/spkenc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "kernels/conv.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"
#include "model/model_internal.h"

#define MAX_K 31 /* widest kernel the config allows */

/* One Conv1d (bias, "same" length, reflect padding). */
typedef struct {
    ct_cv_packed w; /* [k][cin][cout] panels */
    float *b;       /* [cout] */
    int k, dil, cin, cout;
} sconv;

typedef struct {
    sconv tdnn1, tdnn2, se1, se2;
    sconv *res; /* [res2net_scale - 1] */
} seblock;

struct ct_spkenc {
    ct_spk_cfg cfg;
    ct_mel *mel;
    sconv b0;                          /* mel_dim -> channels[0] */
    seblock blk[CT_SPK_MAX_LAYERS];    /* 1 .. n_layers-2 */
    sconv mfa;                         /* Cm -> Cm */
    sconv asp_x;                       /* the x columns of asp.tdnn: Cm -> attention */
    float *asp_ms;                     /* its [mean, std] columns: [attention][2 Cm] */
    float *asp_b;                      /* its bias [attention] */
    sconv asp_conv;                    /* attention -> Cm */
    sconv fc;                          /* 2 Cm -> enc_dim */
    int min_frames;
};

/* ---- loading ------------------------------------------------------------------------- */

/* The f32 copy of tensor name (shape dims[ndim], float dtype) or NULL with the error set. */
static float *take(const ct_st_file *st, const char *name, int ndim, const int64_t *dims,
                   ct_status *s, char *err, size_t errcap) {
    if (*s != CT_OK) return NULL;
    char want[96], got[96];
    ct_st_shape_str(dims, ndim, want, sizeof want);
    const ct_st_tensor *t = ct_st_find(st, name);
    if (!t) {
        *s = ct_errf(err, errcap, CT_ERR_FORMAT, "model.safetensors: missing tensor '%s' (expected "
                     "shape %s)", name, want);
        return NULL;
    }
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == dims[i];
    if (!same) {
        *s = ct_errf(err, errcap, CT_ERR_FORMAT, "model.safetensors: tensor '%s' has shape %s, "
                     "expected %s", name, ct_st_shape_str(t->shape, t->ndim, got, sizeof got), want);
        return NULL;
    }
    if (t->dtype != CT_DT_BF16 && t->dtype != CT_DT_F16 && t->dtype != CT_DT_F32) {
        *s = ct_errf(err, errcap, CT_ERR_FORMAT, "model.safetensors: tensor '%s' has dtype %s, "
                     "expected BF16, F16 or F32", name, ct_dtype_name(t->dtype));
        return NULL;
    }
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)dims[i];
    float *p = malloc(n * sizeof *p);
    if (!p) {
        *s = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory converting '%s'", name);
        return NULL;
    }
    ct_convert_to_f32(t->data, t->dtype, p, n);
    return p;
}

/* Binds <prefix>.weight [cout, cin, k] and <prefix>.bias [cout] into c (packed f32). */
static void bind_conv(const ct_st_file *st, sconv *c, int cout, int cin, int k, int dil, ct_status *s,
                      char *err, size_t errcap, const char *fmt, ...) {
    char pre[160], name[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    c->k = k, c->dil = dil, c->cin = cin, c->cout = cout;
    int64_t dw[3] = {cout, cin, k}, db[1] = {cout};
    snprintf(name, sizeof name, "%s.weight", pre);
    float *w = take(st, name, 3, dw, s, err, errcap);
    snprintf(name, sizeof name, "%s.bias", pre);
    c->b = take(st, name, 1, db, s, err, errcap);
    if (*s == CT_OK) {
        if (ct_cv_packed_alloc(&c->w, k, cin, cout) != 0)
            *s = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory packing '%s'", pre);
        else
            ct_cv_pack_conv(&c->w, w);
    }
    free(w);
}

static void free_conv(sconv *c) {
    ct_cv_packed_free(&c->w);
    free(c->b);
    memset(c, 0, sizeof *c);
}

/* Frames a "same" conv needs: torch's reflect pad must be shorter than the input. */
static int need_frames(int k, int dil) {
    int tot = dil * (k - 1), left = tot / 2, right = tot - left;
    return (left > right ? left : right) + 1;
}

ct_status ct_spkenc_load(const ct_st_file *st, const ct_spk_cfg *cfg, ct_spkenc **out, char *err,
                         size_t errcap) {
    *out = NULL;
    ct_spkenc *e = calloc(1, sizeof *e);
    if (!e) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    e->cfg = *cfg;
    const int L = cfg->n_layers, S = cfg->res2net_scale, Cm = cfg->channels[L - 1];
    const char *P = "speaker_encoder";
    ct_status s = CT_OK;
    bind_conv(st, &e->b0, cfg->channels[0], cfg->mel_dim, cfg->kernels[0], cfg->dilations[0], &s,
              err, errcap, "%s.blocks.0.conv", P);
    e->min_frames = need_frames(cfg->kernels[0], cfg->dilations[0]);
    for (int i = 1; i < L - 1 && s == CT_OK; i++) {
        const int C = cfg->channels[i], sub = C / S;
        seblock *b = &e->blk[i];
        bind_conv(st, &b->tdnn1, C, cfg->channels[i - 1], 1, 1, &s, err, errcap, "%s.blocks.%d.tdnn1.conv", P, i);
        b->res = calloc((size_t)(S - 1), sizeof *b->res);
        if (!b->res && s == CT_OK) s = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
        for (int j = 0; j < S - 1 && s == CT_OK; j++)
            bind_conv(st, &b->res[j], sub, sub, cfg->kernels[i], cfg->dilations[i], &s, err, errcap,
                      "%s.blocks.%d.res2net_block.blocks.%d.conv", P, i, j);
        bind_conv(st, &b->tdnn2, C, C, 1, 1, &s, err, errcap, "%s.blocks.%d.tdnn2.conv", P, i);
        bind_conv(st, &b->se1, cfg->se_channels, C, 1, 1, &s, err, errcap, "%s.blocks.%d.se_block.conv1", P, i);
        bind_conv(st, &b->se2, C, cfg->se_channels, 1, 1, &s, err, errcap, "%s.blocks.%d.se_block.conv2", P, i);
        int f = need_frames(cfg->kernels[i], cfg->dilations[i]);
        if (f > e->min_frames) e->min_frames = f;
    }
    bind_conv(st, &e->mfa, Cm, Cm, cfg->kernels[L - 1], cfg->dilations[L - 1], &s, err, errcap, "%s.mfa.conv", P);
    int f = need_frames(cfg->kernels[L - 1], cfg->dilations[L - 1]);
    if (f > e->min_frames) e->min_frames = f;
    /* asp.tdnn over [x, mean, std]: the mean/std columns are constant over time, so they fold
       into a per-call bias and only the x columns run as a GEMM */
    const int A = cfg->attention;
    int64_t dw[3] = {A, 3 * Cm, 1}, db[1] = {A};
    float *w = take(st, "speaker_encoder.asp.tdnn.conv.weight", 3, dw, &s, err, errcap);
    e->asp_b = take(st, "speaker_encoder.asp.tdnn.conv.bias", 1, db, &s, err, errcap);
    if (s == CT_OK) {
        float *wx = malloc((size_t)A * Cm * sizeof *wx);
        e->asp_ms = malloc((size_t)A * 2 * Cm * sizeof *e->asp_ms);
        if (!wx || !e->asp_ms || ct_cv_packed_alloc(&e->asp_x.w, 1, Cm, A) != 0) {
            s = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory packing speaker_encoder.asp.tdnn");
        } else {
            for (int o = 0; o < A; o++) {
                memcpy(wx + (size_t)o * Cm, w + (size_t)o * 3 * Cm, (size_t)Cm * sizeof *wx);
                memcpy(e->asp_ms + (size_t)o * 2 * Cm, w + (size_t)o * 3 * Cm + Cm, (size_t)2 * Cm * sizeof *wx);
            }
            ct_cv_pack_linear(&e->asp_x.w, wx);
            e->asp_x.k = 1, e->asp_x.dil = 1, e->asp_x.cin = Cm, e->asp_x.cout = A;
        }
        free(wx);
    }
    free(w);
    bind_conv(st, &e->asp_conv, Cm, A, 1, 1, &s, err, errcap, "%s.asp.conv", P);
    bind_conv(st, &e->fc, cfg->enc_dim, 2 * Cm, 1, 1, &s, err, errcap, "%s.fc", P);
    if (s == CT_OK) s = ct_mel_create(&e->mel, err, errcap);
    if (s != CT_OK) {
        ct_spkenc_free(e);
        return s;
    }
    *out = e;
    return CT_OK;
}

void ct_spkenc_free(ct_spkenc *e) {
    if (!e) return;
    free_conv(&e->b0);
    for (int i = 1; i < e->cfg.n_layers - 1; i++) {
        seblock *b = &e->blk[i];
        free_conv(&b->tdnn1);
        free_conv(&b->tdnn2);
        free_conv(&b->se1);
        free_conv(&b->se2);
        if (b->res)
            for (int j = 0; j < e->cfg.res2net_scale - 1; j++) free_conv(&b->res[j]);
        free(b->res);
    }
    free_conv(&e->mfa);
    free_conv(&e->asp_x);
    free(e->asp_ms);
    free(e->asp_b);
    free_conv(&e->asp_conv);
    free_conv(&e->fc);
    ct_mel_free(e->mel);
    free(e);
}

int ct_spkenc_min_frames(const ct_spkenc *e) { return e->min_frames; }

/* ---- forward ------------------------------------------------------------------------- */

/* y[t][o] (row stride ldy) = act(b + conv(x)) over T rows of x (row stride ldx, c->cin wide),
   "same" length with reflect padding (torch: left = total / 2); bias overrides c->b when
   non-NULL. pad holds (T + total) * cin floats. relu: 1 = ReLU after. */
static void conv_same(const sconv *c, const float *x, size_t ldx, int T, float *y, size_t ldy,
                      float *pad, int relu, const float *bias) {
    const int tot = c->dil * (c->k - 1), left = tot / 2;
    const float *X = x;
    size_t ld = ldx;
    if (tot > 0) {
        for (int r = 0; r < T + tot; r++) {
            int t = r - left;
            t = t < 0 ? -t : t >= T ? 2 * (T - 1) - t : t;
            memcpy(pad + (size_t)r * c->cin, x + (size_t)t * ldx, (size_t)c->cin * sizeof *pad);
        }
        X = pad + (size_t)left * c->cin;
        ld = (size_t)c->cin;
    }
    int tap[MAX_K], off[MAX_K];
    for (int j = 0; j < c->k; j++) tap[j] = j, off[j] = j * c->dil - left;
    ct_cv_gemm_args a = {y, ldy, X, ld, T, &c->w, c->k, tap, off, bias ? bias : c->b, 0};
    ct_kernels()->cv_gemm(&a, 0, c->w.nb, 0, T);
    if (relu)
        for (int t = 0; t < T; t++) {
            float *row = y + (size_t)t * ldy;
            for (int o = 0; o < c->cout; o++) row[o] = row[o] > 0.0f ? row[o] : 0.0f;
        }
}

/* Per-channel statistics over T rows, as the reference's sum((1/T) x) (mean) and
   sqrt(max(sum((1/T) (x - mean)^2), 1e-12)) (std); w (NULL = 1/T) weights row t per channel.
   Rows are walked in order (t ascending for every channel); acc holds 2 C doubles. */
static void stats(const float *x, size_t ldx, int T, int C, const float *w, float *mean, float *sd,
                  double *acc) {
    const float inv = 1.0f / (float)T;
    double *s = acc, *v = acc + C;
    memset(acc, 0, (size_t)2 * C * sizeof *acc);
    for (int t = 0; t < T; t++) {
        const float *xr = x + (size_t)t * ldx, *wr = w ? w + (size_t)t * C : NULL;
        for (int c = 0; c < C; c++) s[c] += (double)(wr ? wr[c] : inv) * xr[c];
    }
    for (int c = 0; c < C; c++) mean[c] = (float)s[c];
    for (int t = 0; t < T; t++) {
        const float *xr = x + (size_t)t * ldx, *wr = w ? w + (size_t)t * C : NULL;
        for (int c = 0; c < C; c++) {
            double d = (double)xr[c] - mean[c];
            v[c] += (double)(wr ? wr[c] : inv) * d * d;
        }
    }
    for (int c = 0; c < C; c++) sd[c] = (float)sqrt(v[c] > 1e-12 ? v[c] : 1e-12);
}

ct_status ct_spkenc_forward(const ct_spkenc *e, const float *mel, int T, float *xvec, char *err,
                            size_t errcap) {
    const ct_spk_cfg *g = &e->cfg;
    if (T < e->min_frames)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "speaker encoder: %d mel frames (at least "
                       "%d needed)", T, e->min_frames);
    const int L = g->n_layers, S = g->res2net_scale, Cm = g->channels[L - 1], A = g->attention;
    int cmax = g->mel_dim > Cm ? g->mel_dim : Cm, kmax = 0;
    for (int i = 0; i < L; i++) {
        if (g->channels[i] > cmax) cmax = g->channels[i];
        if (g->dilations[i] * (g->kernels[i] - 1) > kmax) kmax = g->dilations[i] * (g->kernels[i] - 1);
    }
    const size_t Tz = (size_t)T;
    float *h0 = malloc(Tz * (size_t)g->channels[0] * sizeof(float));
    float *cat = malloc(Tz * (size_t)Cm * sizeof(float));
    float *t1 = malloc(Tz * (size_t)cmax * sizeof(float));
    float *r2 = malloc(Tz * (size_t)cmax * sizeof(float));
    float *t2 = malloc(Tz * (size_t)cmax * sizeof(float));
    float *tmp = malloc(Tz * (size_t)cmax * sizeof(float));
    float *pad = malloc((Tz + (size_t)kmax) * (size_t)cmax * sizeof(float));
    float *M = malloc(Tz * (size_t)Cm * sizeof(float));
    float *a1 = malloc(Tz * (size_t)A * sizeof(float));
    float *vec = malloc((size_t)(4 * Cm + 2 * cmax + A + g->se_channels) * sizeof(float));
    double *acc = malloc((size_t)2 * (Cm > cmax ? Cm : cmax) * sizeof(double));
    ct_status st = CT_OK;
    if (!h0 || !cat || !t1 || !r2 || !t2 || !tmp || !pad || !M || !a1 || !vec || !acc) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "speaker encoder: out of memory for %d frames", T);
        goto done;
    }
    float *mean = vec, *sd = vec + Cm, *pooled = vec + 2 * Cm; /* pooled: [2 Cm] */
    float *cm = vec + 4 * Cm, *gate = cm + cmax, *beff = gate + cmax, *s1 = beff + A;

    conv_same(&e->b0, mel, (size_t)g->mel_dim, T, h0, (size_t)g->channels[0], pad, 1, NULL);
    const float *prev = h0;
    size_t ldprev = (size_t)g->channels[0];
    int col = 0;
    for (int i = 1; i < L - 1; i++) {
        const seblock *b = &e->blk[i];
        const int C = g->channels[i], sub = C / S;
        conv_same(&b->tdnn1, prev, ldprev, T, t1, (size_t)C, pad, 1, NULL);
        /* Res2Net: chunk 0 passes, chunk 1 -> conv 0, chunk j -> conv j-1 (chunk j + out j-1) */
        for (size_t t = 0; t < Tz; t++) memcpy(r2 + t * C, t1 + t * C, (size_t)sub * sizeof(float));
        for (int j = 1; j < S; j++) {
            const float *in = t1 + (size_t)j * sub;
            size_t ld = (size_t)C;
            if (j >= 2) {
                for (size_t t = 0; t < Tz; t++)
                    for (int c = 0; c < sub; c++)
                        tmp[t * sub + c] = t1[t * C + (size_t)j * sub + c] + r2[t * C + (size_t)(j - 1) * sub + c];
                in = tmp, ld = (size_t)sub;
            }
            conv_same(&b->res[j - 1], in, ld, T, r2 + (size_t)j * sub, (size_t)C, pad, 1, NULL);
        }
        conv_same(&b->tdnn2, r2, (size_t)C, T, t2, (size_t)C, pad, 1, NULL);
        /* squeeze-excitation: time mean -> conv1 + ReLU -> conv2 -> sigmoid -> channel scale */
        memset(acc, 0, (size_t)C * sizeof *acc);
        for (size_t t = 0; t < Tz; t++)
            for (int c = 0; c < C; c++) acc[c] += t2[t * C + c];
        for (int c = 0; c < C; c++) cm[c] = (float)(acc[c] / T);
        conv_same(&b->se1, cm, (size_t)C, 1, s1, (size_t)g->se_channels, pad, 1, NULL);
        conv_same(&b->se2, s1, (size_t)g->se_channels, 1, gate, (size_t)C, pad, 0, NULL);
        for (int c = 0; c < C; c++) gate[c] = 1.0f / (1.0f + expf(-gate[c]));
        float *o = cat + col; /* the block's output, also the MFA input's columns */
        for (size_t t = 0; t < Tz; t++)
            for (int c = 0; c < C; c++) o[t * Cm + c] = t2[t * C + c] * gate[c] + prev[t * ldprev + c];
        prev = o, ldprev = (size_t)Cm;
        col += C;
    }
    conv_same(&e->mfa, cat, (size_t)Cm, T, M, (size_t)Cm, pad, 1, NULL);

    /* attentive statistics pooling */
    stats(M, (size_t)Cm, T, Cm, NULL, mean, sd, acc);
    for (int o = 0; o < A; o++) {
        const float *w = e->asp_ms + (size_t)o * 2 * Cm;
        double s = e->asp_b[o];
        for (int c = 0; c < Cm; c++) s += (double)w[c] * mean[c] + (double)w[Cm + c] * sd[c];
        beff[o] = (float)s;
    }
    conv_same(&e->asp_x, M, (size_t)Cm, T, a1, (size_t)A, pad, 1, beff);
    for (size_t i = 0; i < Tz * (size_t)A; i++) a1[i] = tanhf(a1[i]);
    float *att = cat; /* cat is free now: the attention logits [T][Cm] */
    conv_same(&e->asp_conv, a1, (size_t)A, T, att, (size_t)Cm, pad, 0, NULL);
    /* softmax over time per channel, rows walked in order (maxima in pooled, which is written
       only afterwards; sums in acc) */
    float *mx = pooled;
    for (int c = 0; c < Cm; c++) mx[c] = -INFINITY;
    for (size_t t = 0; t < Tz; t++)
        for (int c = 0; c < Cm; c++) mx[c] = fmaxf(mx[c], att[t * Cm + c]);
    memset(acc, 0, (size_t)Cm * sizeof *acc);
    for (size_t t = 0; t < Tz; t++)
        for (int c = 0; c < Cm; c++) {
            float v = expf(att[t * Cm + c] - mx[c]);
            att[t * Cm + c] = v;
            acc[c] += v;
        }
    for (int c = 0; c < Cm; c++) mx[c] = (float)(1.0 / acc[c]);
    for (size_t t = 0; t < Tz; t++)
        for (int c = 0; c < Cm; c++) att[t * Cm + c] *= mx[c];
    stats(M, (size_t)Cm, T, Cm, att, pooled, pooled + Cm, acc);
    conv_same(&e->fc, pooled, (size_t)(2 * Cm), 1, xvec, (size_t)g->enc_dim, pad, 0, NULL);
done:
    free(h0), free(cat), free(t1), free(r2), free(t2), free(tmp), free(pad), free(M), free(a1), free(vec), free(acc);
    return st;
}

ct_status ct_spkenc_embed(const ct_spkenc *e, const float *pcm, size_t n, float *xvec, char *err,
                          size_t errcap) {
    const int T = ct_mel_frames(n);
    if (T < e->min_frames)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "speaker encoder: %zu samples make %d mel "
                       "frames (at least %d needed)", n, T, e->min_frames);
    float *mel = malloc((size_t)T * CT_MEL_BINS * sizeof *mel);
    if (!mel) return ct_errf(err, errcap, CT_ERR_NOMEM, "speaker encoder: out of memory");
    ct_status st = ct_mel_compute(e->mel, pcm, n, mel, err, errcap);
    if (st == CT_OK) st = ct_spkenc_forward(e, mel, T, xvec, err, errcap);
    free(mel);
    return st;
}

/* ---- public entry ----------------------------------------------------------------------- */

ct_status ct_model_speaker_embed(const ct_model *m, const float *pcm, size_t n, float *xvec,
                                 int cap, char *err, size_t errcap) {
    if (!m || (!pcm && n) || !xvec)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "speaker embed: NULL argument");
    if (!m->spk)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "speaker embed: the model is %s, not Base: "
                       "it has no speaker encoder", ct_model_kind_name(m->cfg.kind));
    if (cap < m->cfg.spk.enc_dim)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "speaker embed: room for %d floats, the "
                       "x-vector has %d", cap, m->cfg.spk.enc_dim);
    if (n < (size_t)CT_MEL_RATE)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "speaker embed: the clip is %.2f s long "
                       "(at least 1 s at 24 kHz)", (double)n / CT_MEL_RATE);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(pcm[i]))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "speaker embed: sample %zu is not a "
                           "finite number", i);
    return ct_spkenc_embed(m->spk, pcm, n, xvec, err, errcap);
}
