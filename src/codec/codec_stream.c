/* Stateful streaming codec decoder: every stage of docs/CODEC.md run on a chunk of new
 * frames, with per-causal-op history tails, a KV ring per transformer layer masked to the
 * sliding window, and absolute RoPE positions. All memory is sized at create time. GEMMs and
 * SnakeBeta go through the stream's ct_cv_exec (dispatched SIMD variant + optional pool);
 * decoder blocks after the first run on time sub-pieces so their activations stay in cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec_internal.h"
#include "kernels/ops.h"

#define K7 CT_CODEC_CONV_K
#define H7 (CT_CODEC_CONV_K - 1)
#define HPRE (CT_CODEC_PRE_K - 1)

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }

/* Output floats of one decoder-block sub-piece: later blocks run on time slices of their
 * input so their activations stay in cache (exact: the same as streaming smaller chunks). */
#define BLOCK_PIECE_FLOATS (192 * 1024)

/* Sub-piece sizes (block input rows) for chunks of up to n frames. Block 0 takes the whole
 * chunk (its weights are the largest, streaming them once per chunk matters more). */
static void block_pieces(const ct_codec *c, int n, int *piece) {
    int m = n;
    for (int u = 0; u < c->n_up; u++) m *= c->up[u].ratio;
    for (int b = 0; b < c->n_blocks; b++) {
        const ct_codec_block *bl = &c->blocks[b];
        if (b == 0) {
            piece[b] = m;
        } else {
            int in_max = piece[b - 1] * c->blocks[b - 1].rate;
            int p = BLOCK_PIECE_FLOATS / (bl->rate * bl->cout);
            if (p < 1) p = 1;
            piece[b] = p < in_max ? p : in_max;
        }
    }
}

/* Floats needed by each of the shared work buffers A, B, X for n frames per chunk. */
static size_t work_floats(const ct_codec *c, int n, const int *piece) {
    size_t N = (size_t)n, w = 0, Lt = (size_t)c->latent;
    w = zmax(w, (HPRE + N) * (size_t)c->vq_dim);
    w = zmax(w, N * Lt);
    size_t m = N;
    for (int u = 0; u < c->n_up; u++) {
        size_t r = (size_t)c->up[u].ratio;
        size_t h = (size_t)ct_cv_tconv_history(c->up[u].ratio, c->up[u].ratio);
        w = zmax(w, (h + m) * Lt);
        w = zmax(w, (H7 + m * r) * Lt);
        w = zmax(w, m * r * 4 * Lt);
        m *= r;
    }
    w = zmax(w, (H7 + m) * Lt);
    w = zmax(w, m * (size_t)c->decoder_dim);
    for (int b = 0; b < c->n_blocks; b++) {
        const ct_codec_block *bl = &c->blocks[b];
        size_t h = (size_t)ct_cv_tconv_history(2 * bl->rate, bl->rate);
        m = (size_t)piece[b];
        w = zmax(w, (h + m) * (size_t)bl->cin);
        m *= (size_t)bl->rate;
        w = zmax(w, (H7 * 9 + m) * (size_t)bl->cout);
    }
    w = zmax(w, (H7 + m) * (size_t)(c->decoder_dim >> c->n_blocks));
    return w;
}

void ct_codec_stream_free(ct_codec_stream *s) {
    if (!s) return;
    free(s->kv_k);
    free(s->kv_v);
    free(s->t_pre);
    for (int u = 0; u < CT_CODEC_MAX_UP; u++) {
        free(s->t_up_in[u]);
        free(s->t_dw[u]);
    }
    free(s->t_dec0);
    for (int b = 0; b < CT_CODEC_MAX_BLOCKS; b++) {
        free(s->t_tc[b]);
        for (int j = 0; j < CT_CODEC_N_RU; j++) free(s->t_ru[b][j]);
    }
    free(s->t_fin);
    for (int b = 0; b < CT_CODEC_MAX_BLOCKS; b++) free(s->O[b]);
    free(s->A);
    free(s->B);
    free(s->X);
    free(s->tx);
    free(s->th);
    free(s->tq);
    free(s->tk);
    free(s->tv);
    free(s->ta);
    free(s->tt);
    free(s->tg);
    free(s->tu);
    free(s->e0);
    free(s->er);
    free(s->rc);
    free(s->rs);
    free(s->sc);
    free(s);
}

static float *fz(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

/* Sizes of every tail, for create and reset. */
typedef struct {
    float **p;
    size_t n;
} tail_ref;

static int list_tails(ct_codec_stream *s, tail_ref *t) {
    const ct_codec *c = s->c;
    int k = 0;
    t[k++] = (tail_ref){&s->t_pre, (size_t)HPRE * (size_t)c->vq_dim};
    for (int u = 0; u < c->n_up; u++) {
        t[k++] = (tail_ref){&s->t_up_in[u], (size_t)s->h_up[u] * (size_t)c->latent};
        t[k++] = (tail_ref){&s->t_dw[u], (size_t)H7 * (size_t)c->latent};
    }
    t[k++] = (tail_ref){&s->t_dec0, (size_t)H7 * (size_t)c->latent};
    for (int b = 0; b < c->n_blocks; b++) {
        const ct_codec_block *bl = &c->blocks[b];
        t[k++] = (tail_ref){&s->t_tc[b], (size_t)s->h_tc[b] * (size_t)bl->cin};
        for (int j = 0; j < CT_CODEC_N_RU; j++)
            t[k++] = (tail_ref){&s->t_ru[b][j], (size_t)H7 * (size_t)bl->ru[j].dil * (size_t)bl->cout};
    }
    t[k++] = (tail_ref){&s->t_fin, (size_t)H7 * (size_t)(c->decoder_dim >> c->n_blocks)};
    return k;
}

#define MAX_TAILS (2 + 2 * CT_CODEC_MAX_UP + CT_CODEC_MAX_BLOCKS * (1 + CT_CODEC_N_RU) + 2)

ct_status ct_codec_stream_create(const ct_codec *c, int max_chunk, ct_codec_stream **out,
                                 char *err, size_t errcap) {
    if (!c || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_stream_create: NULL argument");
    *out = NULL;
    if (max_chunk < 1 || max_chunk > (1 << 16))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_stream_create: max_chunk %d outside [1, 65536]",
                       max_chunk);
    ct_codec_stream *s = calloc(1, sizeof *s);
    if (!s) return ct_errf(err, errcap, CT_ERR_NOMEM, "ct_codec_stream_create: out of memory");
    s->c = c;
    ct_cv_exec_init(&s->ex, NULL);
    s->max_chunk = max_chunk;
    s->ring = c->window - 1 + max_chunk;
    const size_t N = (size_t)max_chunk, H = (size_t)c->hidden;
    const size_t qd = (size_t)c->n_heads * (size_t)c->head_dim, kvd = (size_t)c->n_kv * (size_t)c->head_dim;
    for (int u = 0; u < c->n_up; u++) s->h_up[u] = ct_cv_tconv_history(c->up[u].ratio, c->up[u].ratio);
    for (int b = 0; b < c->n_blocks; b++) s->h_tc[b] = ct_cv_tconv_history(2 * c->blocks[b].rate, c->blocks[b].rate);

    int ok = 1;
    size_t ringn = (size_t)c->n_layers * (size_t)s->ring * kvd;
    ok &= (s->kv_k = fz(ringn)) != NULL;
    ok &= (s->kv_v = fz(ringn)) != NULL;
    tail_ref tails[MAX_TAILS];
    int nt = list_tails(s, tails);
    for (int i = 0; i < nt; i++) ok &= (*tails[i].p = fz(tails[i].n)) != NULL;
    block_pieces(c, max_chunk, s->piece);
    for (int b = 0; b < c->n_blocks; b++)
        ok &= (s->O[b] = fz((size_t)s->piece[b] * (size_t)c->blocks[b].rate * (size_t)c->blocks[b].cout)) != NULL;
    s->work = work_floats(c, max_chunk, s->piece);
    ok &= (s->A = fz(s->work)) != NULL;
    ok &= (s->B = fz(s->work)) != NULL;
    ok &= (s->X = fz(s->work)) != NULL;
    ok &= (s->tx = fz(N * H)) != NULL;
    ok &= (s->th = fz(N * H)) != NULL;
    ok &= (s->tq = fz(N * qd)) != NULL;
    ok &= (s->tk = fz(N * kvd)) != NULL;
    ok &= (s->tv = fz(N * kvd)) != NULL;
    ok &= (s->ta = fz(N * qd)) != NULL;
    ok &= (s->tt = fz(N * H)) != NULL;
    ok &= (s->tg = fz(N * (size_t)c->ffn)) != NULL;
    ok &= (s->tu = fz(N * (size_t)c->ffn)) != NULL;
    ok &= (s->e0 = fz(N * (size_t)c->entry_dim)) != NULL;
    ok &= (s->er = fz(N * (size_t)c->entry_dim)) != NULL;
    ok &= (s->rc = fz(N * (size_t)(c->head_dim / 2))) != NULL;
    ok &= (s->rs = fz(N * (size_t)(c->head_dim / 2))) != NULL;
    ok &= (s->sc = fz((size_t)c->window)) != NULL;
    if (!ok) {
        ct_codec_stream_free(s);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "ct_codec_stream_create: out of memory (max_chunk %d)", max_chunk);
    }
    *out = s;
    return CT_OK;
}

ct_status ct_codec_stream_set_pool(ct_codec_stream *s, ct_pool *pool) {
    if (!s) return CT_ERR_INVALID_ARG;
    s->ex.pool = pool;
    return CT_OK;
}

ct_status ct_codec_stream_set_isa(ct_codec_stream *s, ct_isa isa) {
    if (!s) return CT_ERR_INVALID_ARG;
    ct_cpu_features f;
    ct_cpu_detect(&f);
    ct_cv_exec ex;
    if (!ct_isa_supported(isa, &f) || ct_cv_exec_init_isa(&ex, s->ex.pool, isa) != 0) return CT_ERR_UNSUPPORTED;
    s->ex = ex;
    return CT_OK;
}

void ct_codec_stream_profile(ct_codec_stream *s, int enable) {
    if (!s) return;
    s->prof_on = enable;
    memset(s->prof, 0, sizeof s->prof);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}


void ct_codec_stream_reset(ct_codec_stream *s) {
    if (!s) return;
    tail_ref tails[MAX_TAILS];
    int nt = list_tails(s, tails);
    for (int i = 0; i < nt; i++) memset(*tails[i].p, 0, tails[i].n * sizeof(float));
    s->pos = 0;
}

size_t ct_codec_stream_state_floats(const ct_codec_stream *s) {
    tail_ref tails[MAX_TAILS];
    int nt = list_tails((ct_codec_stream *)s, tails);
    size_t n = 0;
    for (int i = 0; i < nt; i++) n += tails[i].n;
    const ct_codec *c = s->c;
    return n + 2 * (size_t)c->n_layers * (size_t)(c->window - 1) * (size_t)c->n_kv * (size_t)c->head_dim;
}

/* Frame positions whose KV entries the next push can still attend to: [p0, pos). */
static int64_t kv_first(const ct_codec_stream *s) {
    int64_t p0 = s->pos - (s->c->window - 1);
    return p0 > 0 ? p0 : 0;
}

void ct_codec_stream_state_save(const ct_codec_stream *s, float *buf, int64_t *pos) {
    tail_ref tails[MAX_TAILS];
    int nt = list_tails((ct_codec_stream *)s, tails);
    for (int i = 0; i < nt; i++) {
        memcpy(buf, *tails[i].p, tails[i].n * sizeof(float));
        buf += tails[i].n;
    }
    const ct_codec *c = s->c;
    const size_t kvd = (size_t)c->n_kv * (size_t)c->head_dim, W1 = (size_t)(c->window - 1);
    for (int l = 0; l < c->n_layers; l++)
        for (int64_t p = kv_first(s), j = 0; p < s->pos; p++, j++) {
            size_t slot = (size_t)(p % s->ring), at = ((size_t)l * W1 + (size_t)j) * kvd;
            memcpy(buf + at, s->kv_k + ((size_t)l * (size_t)s->ring + slot) * kvd, kvd * sizeof(float));
            memcpy(buf + (size_t)c->n_layers * W1 * kvd + at, s->kv_v + ((size_t)l * (size_t)s->ring + slot) * kvd,
                   kvd * sizeof(float));
        }
    *pos = s->pos;
}

void ct_codec_stream_state_load(ct_codec_stream *s, const float *buf, int64_t pos) {
    tail_ref tails[MAX_TAILS];
    int nt = list_tails(s, tails);
    for (int i = 0; i < nt; i++) {
        memcpy(*tails[i].p, buf, tails[i].n * sizeof(float));
        buf += tails[i].n;
    }
    s->pos = pos;
    const ct_codec *c = s->c;
    const size_t kvd = (size_t)c->n_kv * (size_t)c->head_dim, W1 = (size_t)(c->window - 1);
    for (int l = 0; l < c->n_layers; l++)
        for (int64_t p = kv_first(s), j = 0; p < s->pos; p++, j++) {
            size_t slot = (size_t)(p % s->ring), at = ((size_t)l * W1 + (size_t)j) * kvd;
            memcpy(s->kv_k + ((size_t)l * (size_t)s->ring + slot) * kvd, buf + at, kvd * sizeof(float));
            memcpy(s->kv_v + ((size_t)l * (size_t)s->ring + slot) * kvd, buf + (size_t)c->n_layers * W1 * kvd + at,
                   kvd * sizeof(float));
        }
}

ct_status ct_codec_check_codes(const ct_codec *c, const int32_t *codes, int n, int frame0,
                               char *err, size_t errcap) {
    for (int t = 0; t < n; t++)
        for (int g = 0; g < c->n_q; g++) {
            int32_t v = codes[(size_t)t * (size_t)c->n_q + (size_t)g];
            if (v < 0 || v >= c->codebook_size)
                return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "codec: code %ld at frame %d group %d outside [0, %d)",
                               (long)v, frame0 + t, g, c->codebook_size);
        }
    return CT_OK;
}

ct_status ct_codec_stream_push(ct_codec_stream *s, const int32_t *codes, int n_frames, float *pcm,
                               char *err, size_t errcap) {
    if (!s || !codes || !pcm)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_stream_push: NULL argument");
    if (n_frames < 1 || n_frames > s->max_chunk)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_stream_push: %d frames outside [1, %d]", n_frames,
                       s->max_chunk);
    ct_status st = ct_codec_check_codes(s->c, codes, n_frames, 0, err, errcap);
    if (st != CT_OK) return st;
    ct_codec_run_chunk(s, codes, n_frames, pcm);
    return CT_OK;
}

/* ---------------------------------------------------------------------------------------
 * The pipeline */

/* Copies the H-row tail in front of buf and returns the row-0 pointer of the new data. */
static float *hist_in(float *buf, const float *tail, int H, int C) {
    if (H > 0) memcpy(buf, tail, (size_t)H * (size_t)C * sizeof(float));
    return buf + (size_t)H * (size_t)C;
}

/* tail <- the last H rows of (history ++ data[0..n)), data preceded by its H history rows. */
static void hist_save(float *tail, const float *data, int n, int H, int C) {
    if (H > 0) memcpy(tail, data + ((ptrdiff_t)n - H) * (ptrdiff_t)C, (size_t)H * (size_t)C * sizeof(float));
}

#define MB CT_CV_MAX_BATCH

/* Pointer arrays of one batch: per stream i, a buffer pointer. */
typedef float *fptrs[MB];

/* Adds the time since *t0 to stage i of every profiling stream of the batch. */
static void prof_mark_batch(ct_codec_stream *const *S, int ns, int i, double *t0) {
    int on = 0;
    for (int k = 0; k < ns; k++) on |= S[k]->prof_on;
    if (!on) return;
    double t = now_s();
    for (int k = 0; k < ns; k++)
        if (S[k]->prof_on) S[k]->prof[i] += t - *t0;
    *t0 = t;
}

static void transformer(ct_codec_stream *const *S, int ns, const ct_cv_exec *ex, float *const *in, const int *nr,
                        float *const *out_rows) {
    const ct_codec *c = S[0]->c;
    const int H = c->hidden, hd = c->head_dim, hh = hd / 2, nh = c->n_heads, nkv = c->n_kv;
    const int qd = nh * hd, kvd = nkv * hd, grp = nh / nkv, W = c->window;
    const float scale = 1.0f / sqrtf((float)hd);
    fptrs x = {0}, h = {0}, tq = {0}, tk = {0}, tv = {0}, ta = {0}, tt = {0}, tg = {0}, tu = {0};
    for (int k = 0; k < ns; k++) {
        x[k] = S[k]->tx, h[k] = S[k]->th, tq[k] = S[k]->tq, tk[k] = S[k]->tk, tv[k] = S[k]->tv;
        ta[k] = S[k]->ta, tt[k] = S[k]->tt, tg[k] = S[k]->tg, tu[k] = S[k]->tu;
    }
#define CF(a) ((const float *const *)(a))
    ct_cv_linear_batch_ex(ex, ns, x, CF(in), nr, &c->in_proj, c->in_proj_b, 0);
    for (int k = 0; k < ns; k++)
        for (int t = 0; t < nr[k]; t++)
            ct_rope_angles((int)(S[k]->pos + t), hd, c->rope_theta, S[k]->rc + (size_t)t * hh, S[k]->rs + (size_t)t * hh);
    for (int l = 0; l < c->n_layers; l++) {
        const ct_codec_layer *ly = &c->layers[l];
        for (int k = 0; k < ns; k++)
            for (int t = 0; t < nr[k]; t++) ct_rmsnorm(h[k] + (size_t)t * H, x[k] + (size_t)t * H, ly->ln1, H, c->rms_eps);
        ct_cv_linear_batch_ex(ex, ns, tq, CF(h), nr, &ly->q, NULL, 0);
        ct_cv_linear_batch_ex(ex, ns, tk, CF(h), nr, &ly->k, NULL, 0);
        ct_cv_linear_batch_ex(ex, ns, tv, CF(h), nr, &ly->v, NULL, 0);
        for (int k = 0; k < ns; k++) { /* RoPE, KV ring and attention: per stream */
            ct_codec_stream *s = S[k];
            const int n = nr[k], R = s->ring;
            float *kr = s->kv_k + (size_t)l * (size_t)R * (size_t)kvd;
            float *vr = s->kv_v + (size_t)l * (size_t)R * (size_t)kvd;
            for (int t = 0; t < n; t++) {
                const float *cs = s->rc + (size_t)t * hh, *sn = s->rs + (size_t)t * hh;
                for (int i = 0; i < nh; i++) ct_rope_apply(s->tq + (size_t)t * qd + (size_t)i * hd, cs, sn, hd);
                for (int i = 0; i < nkv; i++) ct_rope_apply(s->tk + (size_t)t * kvd + (size_t)i * hd, cs, sn, hd);
                size_t slot = (size_t)((s->pos + t) % R);
                memcpy(kr + slot * kvd, s->tk + (size_t)t * kvd, (size_t)kvd * sizeof(float));
                memcpy(vr + slot * kvd, s->tv + (size_t)t * kvd, (size_t)kvd * sizeof(float));
            }
            for (int t = 0; t < n; t++) {
                int64_t p = s->pos + t, j0 = p - W + 1 > 0 ? p - W + 1 : 0;
                int nk = (int)(p - j0 + 1);
                for (int i = 0; i < nh; i++) {
                    const float *q = s->tq + (size_t)t * qd + (size_t)i * hd;
                    const size_t ko = (size_t)(i / grp) * (size_t)hd;
                    for (int j = 0; j < nk; j++) {
                        const float *kk = kr + (size_t)((j0 + j) % R) * kvd + ko;
                        float d = 0.0f;
                        for (int e = 0; e < hd; e++) d += q[e] * kk[e];
                        s->sc[j] = d * scale;
                    }
                    ct_softmax(s->sc, nk);
                    float *o = s->ta + (size_t)t * qd + (size_t)i * hd;
                    memset(o, 0, (size_t)hd * sizeof(float));
                    for (int j = 0; j < nk; j++) {
                        const float *v = vr + (size_t)((j0 + j) % R) * kvd + ko;
                        const float w = s->sc[j];
                        for (int e = 0; e < hd; e++) o[e] += w * v[e];
                    }
                }
            }
        }
        ct_cv_linear_batch_ex(ex, ns, tt, CF(ta), nr, &ly->o, NULL, 0);
        for (int k = 0; k < ns; k++) {
            for (size_t r = 0; r < (size_t)nr[k]; r++)
                for (int e = 0; e < H; e++) x[k][r * H + e] += ly->ls_attn[e] * tt[k][r * H + e];
            for (int t = 0; t < nr[k]; t++) ct_rmsnorm(h[k] + (size_t)t * H, x[k] + (size_t)t * H, ly->ln2, H, c->rms_eps);
        }
        ct_cv_linear_batch_ex(ex, ns, tg, CF(h), nr, &ly->gate, NULL, 0);
        ct_cv_linear_batch_ex(ex, ns, tu, CF(h), nr, &ly->up, NULL, 0);
        for (int k = 0; k < ns; k++) ct_swiglu(tg[k], tg[k], tu[k], nr[k] * c->ffn);
        ct_cv_linear_batch_ex(ex, ns, tt, CF(tg), nr, &ly->down, NULL, 0);
        for (int k = 0; k < ns; k++)
            for (size_t r = 0; r < (size_t)nr[k]; r++)
                for (int e = 0; e < H; e++) x[k][r * H + e] += ly->ls_mlp[e] * tt[k][r * H + e];
    }
    for (int k = 0; k < ns; k++)
        for (int t = 0; t < nr[k]; t++) ct_rmsnorm(h[k] + (size_t)t * H, x[k] + (size_t)t * H, c->norm, H, c->rms_eps);
    ct_cv_linear_batch_ex(ex, ns, out_rows, CF(h), nr, &c->out_proj, c->out_proj_b, 0);
}

/* Decoder block b (and everything after it) on m[k] rows of the input in[k] of every stream
 * of the batch, in rounds of sub-pieces (the smallest of the streams' piece[b] rows; block 0
 * takes each stream's whole chunk); writes m[k] * (product of the remaining rates) samples
 * to pcm[k]. */
static void run_blocks(ct_codec_stream *const *S, int ns, const ct_cv_exec *ex, int b, float *const *in,
                       const int *m, float *const *pcm, double *t0) {
    const ct_codec *c = S[0]->c;
    fptrs a = {0};
    if (b >= c->n_blocks || b >= CT_CODEC_MAX_BLOCKS) {
        /* 11. final SnakeBeta, conv k7 -> 1 channel, clamp */
        const int cf = c->decoder_dim >> c->n_blocks;
        for (int k = 0; k < ns; k++) {
            a[k] = hist_in(S[k]->A, S[k]->t_fin, H7, cf);
            ct_cv_snake_ex(ex, a[k], in[k], m[k], cf, c->fin_snake.ea, c->fin_snake.ib);
        }
        ct_cv_conv_causal_batch_ex(ex, ns, pcm, CF(a), m, &c->fin, 1, c->fin_b);
        for (int k = 0; k < ns; k++) {
            hist_save(S[k]->t_fin, a[k], m[k], H7, cf);
            float *pk = pcm[k];
            for (int i = 0; i < m[k]; i++) {
                if (pk[i] > 1.0f) pk[i] = 1.0f;
                else if (pk[i] < -1.0f) pk[i] = -1.0f;
            }
        }
        prof_mark_batch(S, ns, CT_CODEC_PROF_FIN, t0);
        return;
    }
    const ct_codec_block *bl = &c->blocks[b];
    size_t spr = 1; /* samples per input row of this block */
    for (int j = b; j < c->n_blocks; j++) spr *= (size_t)c->blocks[j].rate;
    int piece = 0, mmax = 0;
    for (int k = 0; k < ns; k++) {
        if (b > 0 && (piece == 0 || S[k]->piece[b] < piece)) piece = S[k]->piece[b];
        if (m[k] > mmax) mmax = m[k];
    }
    if (b == 0) piece = mmax; /* each stream's whole chunk (within its piece[0]) */
    for (int p0 = 0; p0 < mmax; p0 += piece) {
        ct_codec_stream *A[MB];
        int n[MB] = {0}, mo[MB] = {0}, na = 0;
        fptrs o = {0}, bb = {0}, xin = {0}, po = {0};
        for (int k = 0; k < ns; k++) {
            if (p0 >= m[k]) continue;
            A[na] = S[k];
            n[na] = m[k] - p0 < piece ? m[k] - p0 : piece;
            mo[na] = n[na] * bl->rate;
            o[na] = S[k]->O[b];
            bb[na] = S[k]->B;
            xin[na] = in[k] + (size_t)p0 * (size_t)bl->cin;
            po[na] = pcm[k] + (size_t)p0 * spr;
            na++;
        }
        for (int k = 0; k < na; k++) {
            a[k] = hist_in(A[k]->A, A[k]->t_tc[b], A[k]->h_tc[b], bl->cin);
            ct_cv_snake_ex(ex, a[k], xin[k], n[k], bl->cin, bl->snake.ea, bl->snake.ib);
        }
        ct_cv_tconv_causal_batch_ex(ex, na, o, CF(a), n, &bl->tconv, bl->rate, bl->tconv_b);
        for (int k = 0; k < na; k++) hist_save(A[k]->t_tc[b], a[k], n[k], A[k]->h_tc[b], bl->cin);
        for (int j = 0; j < CT_CODEC_N_RU; j++) {
            const ct_codec_ru *ru = &bl->ru[j];
            const int hr = H7 * ru->dil;
            for (int k = 0; k < na; k++) {
                a[k] = hist_in(A[k]->A, A[k]->t_ru[b][j], hr, bl->cout);
                ct_cv_snake_ex(ex, a[k], o[k], mo[k], bl->cout, ru->a1.ea, ru->a1.ib);
            }
            ct_cv_conv_causal_batch_ex(ex, na, bb, CF(a), mo, &ru->c1, ru->dil, ru->c1_b);
            for (int k = 0; k < na; k++) {
                hist_save(A[k]->t_ru[b][j], a[k], mo[k], hr, bl->cout);
                ct_cv_snake_ex(ex, bb[k], bb[k], mo[k], bl->cout, ru->a2.ea, ru->a2.ib);
            }
            ct_cv_linear_batch_ex(ex, na, o, CF(bb), mo, &ru->c2, ru->c2_b, 1);
        }
        prof_mark_batch(A, na, CT_CODEC_PROF_BLOCK0 + b, t0);
        run_blocks(A, na, ex, b + 1, o, mo, po, t0);
    }
}

/* Decodes n[k] (1..max_chunk) checked frames of every stream of a batch of ns <= MB streams
 * (distinct, one codec), the GEMMs through ex, advancing each stream's state. */
static void run_batch(ct_codec_stream *const *S, int ns, const ct_cv_exec *ex, const int32_t *const *codes,
                      const int *n, float *const *pcm) {
    const ct_codec *c = S[0]->c;
    const int D = c->entry_dim, O = c->vq_dim, Lt = c->latent, nq = c->n_q;
    const size_t cbs = (size_t)c->codebook_size * (size_t)D;
    double t0 = 0.0;
    for (int k = 0; k < ns; k++)
        if (S[k]->prof_on) t0 = now_s();
    fptrs a = {0}, e0 = {0}, er = {0}, B = {0}, X = {0}, SA = {0}, bx = {0};
    int m[MB] = {0};

    /* 1. split RVQ dequant -> pre_conv input */
    for (int k = 0; k < ns; k++) {
        ct_codec_stream *s = S[k];
        for (int t = 0; t < n[k]; t++) {
            const int32_t *cd = codes[k] + (size_t)t * (size_t)nq;
            memcpy(s->e0 + (size_t)t * D, c->codebooks + (size_t)cd[0] * D, (size_t)D * sizeof(float));
            float *r = s->er + (size_t)t * D;
            memcpy(r, c->codebooks + cbs + (size_t)cd[1] * D, (size_t)D * sizeof(float));
            for (int g = 2; g < nq; g++) {
                const float *e = c->codebooks + (size_t)g * cbs + (size_t)cd[g] * D;
                for (int i = 0; i < D; i++) r[i] += e[i];
            }
        }
        e0[k] = s->e0, er[k] = s->er, B[k] = s->B, X[k] = s->X, SA[k] = s->A;
        a[k] = hist_in(s->A, s->t_pre, HPRE, O);
        m[k] = n[k];
    }
    ct_cv_linear_batch_ex(ex, ns, a, CF(e0), n, &c->proj_first, NULL, 0);
    ct_cv_linear_batch_ex(ex, ns, a, CF(er), n, &c->proj_rest, NULL, 1);
    /* 2. pre_conv */
    ct_cv_conv_causal_batch_ex(ex, ns, B, CF(a), n, &c->pre_conv, 1, c->pre_conv_b);
    for (int k = 0; k < ns; k++) {
        hist_save(S[k]->t_pre, a[k], n[k], HPRE, O);
        a[k] = hist_in(S[k]->A, S[k]->t_up_in[0], S[k]->h_up[0], Lt);
    }
    prof_mark_batch(S, ns, CT_CODEC_PROF_PRE, &t0);

    /* 3. transformer -> input of the first upsample stage */
    transformer(S, ns, ex, B, n, a);
    prof_mark_batch(S, ns, CT_CODEC_PROF_TX, &t0);

    /* 4-5. ConvNeXt upsample stages */
    for (int u = 0; u < c->n_up; u++) {
        const ct_codec_up *up = &c->up[u];
        for (int k = 0; k < ns; k++) bx[k] = hist_in(S[k]->B, S[k]->t_dw[u], H7, Lt);
        ct_cv_tconv_causal_batch_ex(ex, ns, bx, CF(a), m, &up->tconv, up->ratio, up->tconv_b);
        for (int k = 0; k < ns; k++) {
            hist_save(S[k]->t_up_in[u], a[k], m[k], S[k]->h_up[u], Lt);
            m[k] *= up->ratio;
            ct_cv_dwconv_causal(X[k], bx[k], m[k], Lt, K7, up->dw, up->dw_b);
            hist_save(S[k]->t_dw[u], bx[k], m[k], H7, Lt);
            ct_cv_layernorm(X[k], X[k], m[k], Lt, up->ln_w, up->ln_b, 1e-6f);
        }
        ct_cv_linear_batch_ex(ex, ns, SA, CF(X), m, &up->pw1, up->pw1_b, 0);
        for (int k = 0; k < ns; k++) ct_cv_gelu_erf(SA[k], (size_t)m[k] * 4 * (size_t)Lt);
        ct_cv_linear_batch_ex(ex, ns, X, CF(SA), m, &up->pw2, up->pw2_b, 0);
        int last = u + 1 == c->n_up;
        for (int k = 0; k < ns; k++) {
            ct_codec_stream *s = S[k];
            a[k] = hist_in(s->A, last ? s->t_dec0 : s->t_up_in[u + 1], last ? H7 : s->h_up[u + 1], Lt);
            for (size_t r = 0; r < (size_t)m[k]; r++)
                for (int e = 0; e < Lt; e++)
                    a[k][r * Lt + e] = bx[k][r * Lt + e] + up->gamma[e] * s->X[r * Lt + e];
        }
    }
    prof_mark_batch(S, ns, CT_CODEC_PROF_UP, &t0);

    /* 6. decoder.0 */
    ct_cv_conv_causal_batch_ex(ex, ns, X, CF(a), m, &c->dec0, 1, c->dec0_b);
    for (int k = 0; k < ns; k++) hist_save(S[k]->t_dec0, a[k], m[k], H7, Lt);
    prof_mark_batch(S, ns, CT_CODEC_PROF_DEC0, &t0);

    /* 7-11. decoder blocks and the final conv, on sub-pieces */
    run_blocks(S, ns, ex, 0, X, m, pcm, &t0);
    for (int k = 0; k < ns; k++) S[k]->pos += n[k];
}
#undef CF

void ct_codec_run_chunk(ct_codec_stream *s, const int32_t *codes, int n, float *pcm) {
    run_batch(&s, 1, &s->ex, &codes, &n, &pcm);
}

ct_status ct_codec_stream_push_batch(ct_codec_stream *const *s, int ns, const int32_t *const *codes,
                                     const int *n_frames, float *const *pcm, char *err, size_t errcap) {
    if (!s || !codes || !n_frames || !pcm || ns < 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_stream_push_batch: NULL argument or %d streams",
                       ns);
    for (int k = 0; k < ns; k++) {
        if (!s[k] || !codes[k] || !pcm[k])
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_stream_push_batch: stream %d: NULL argument", k);
        if (s[k]->c != s[0]->c || s[k]->ex.gemm != s[0]->ex.gemm)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                           "ct_codec_stream_push_batch: stream %d has another codec or kernel level than stream 0", k);
        for (int j = 0; j < k; j++)
            if (s[j] == s[k])
                return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                               "ct_codec_stream_push_batch: streams %d and %d are the same decoder", j, k);
        if (n_frames[k] < 1 || n_frames[k] > s[k]->max_chunk)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_stream_push_batch: stream %d: %d frames outside [1, %d]",
                           k, n_frames[k], s[k]->max_chunk);
        char e2[300];
        ct_status st = ct_codec_check_codes(s[k]->c, codes[k], n_frames[k], 0, e2, sizeof e2);
        if (st != CT_OK) return ct_errf(err, errcap, st, "ct_codec_stream_push_batch: stream %d: %s", k, e2);
    }
    for (int k0 = 0; k0 < ns; k0 += MB) {
        int k = ns - k0 < MB ? ns - k0 : MB;
        run_batch(s + k0, k, &s[0]->ex, codes + k0, n_frames + k0, pcm + k0);
    }
    return CT_OK;
}
