/* Decoder-stack forward pass (shared by the talker and the code predictor). */
#include "model/stack.h"

#include "kernels/cpu.h"

#ifndef CT_ROW_ALIGN
#define CT_ROW_ALIGN 4 /* row split granularity of the matmul kernels */
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t ct_kv_bytes(const ct_stack_cfg *cfg, int cap) {
    return (size_t)cfg->layers * 2 * (size_t)cfg->kv_heads * (size_t)cap * (size_t)cfg->head_dim *
           sizeof(float);
}

ct_status ct_kv_init(ct_kv *kv, const ct_stack_cfg *cfg, int cap) {
    memset(kv, 0, sizeof *kv);
    kv->layers = cfg->layers;
    kv->cap = cap;
    kv->kv_heads = cfg->kv_heads;
    kv->head_dim = cfg->head_dim;
    kv->k = calloc((size_t)cfg->layers, sizeof(float *));
    kv->v = calloc((size_t)cfg->layers, sizeof(float *));
    if (!kv->k || !kv->v) goto fail;
    size_t per = (size_t)cfg->kv_heads * (size_t)cap * (size_t)cfg->head_dim;
    for (int l = 0; l < cfg->layers; l++) {
        kv->k[l] = calloc(per, sizeof(float));
        kv->v[l] = calloc(per, sizeof(float));
        if (!kv->k[l] || !kv->v[l]) goto fail;
    }
    return CT_OK;
fail:
    ct_kv_free(kv);
    return CT_ERR_NOMEM;
}

void ct_kv_free(ct_kv *kv) {
    if (kv->k)
        for (int l = 0; l < kv->layers; l++) free(kv->k[l]);
    if (kv->v)
        for (int l = 0; l < kv->layers; l++) free(kv->v[l]);
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

ct_status ct_stack_scratch_init(ct_stack_scratch *s, const ct_stack_cfg *c, int n_max, int cap,
                                ct_pool *pool) {
    memset(s, 0, sizeof *s);
    s->pool = pool;
    s->n_threads = ct_pool_threads(pool);
    s->n_max = n_max;
    s->cap = cap;
    size_t n = (size_t)n_max;
    size_t qd = (size_t)c->heads * c->head_dim, kd = (size_t)c->kv_heads * c->head_dim;
    s->h = malloc(n * c->hidden * sizeof(float));
    s->q = malloc(n * qd * sizeof(float));
    s->k = malloc(n * kd * sizeof(float));
    s->v = malloc(n * kd * sizeof(float));
    s->att = malloc(n * qd * sizeof(float));
    s->proj = malloc(n * c->hidden * sizeof(float));
    s->g = malloc(n * c->ffn * sizeof(float));
    s->u = malloc(n * c->ffn * sizeof(float));
    s->scores = malloc((size_t)s->n_threads * (size_t)cap * (size_t)(c->heads / c->kv_heads) * sizeof(float));
    s->cosv = malloc(n * (c->head_dim / 2) * sizeof(float));
    s->sinv = malloc(n * (c->head_dim / 2) * sizeof(float));
    s->kvs = malloc(n * sizeof(ct_kv *));
    s->pos = malloc(n * sizeof(int));
    if (!s->h || !s->q || !s->k || !s->v || !s->att || !s->proj || !s->g || !s->u || !s->scores ||
        !s->cosv || !s->sinv || !s->kvs || !s->pos) {
        ct_stack_scratch_free(s);
        return CT_ERR_NOMEM;
    }
    return CT_OK;
}

void ct_stack_scratch_free(ct_stack_scratch *s) {
    free(s->h);
    free(s->q);
    free(s->k);
    free(s->v);
    free(s->att);
    free(s->proj);
    free(s->g);
    free(s->u);
    free(s->scores);
    free(s->cosv);
    free(s->sinv);
    free(s->kvs);
    free(s->pos);
    memset(s, 0, sizeof *s);
}

/* Attention for one query token at position pos against cache entries 0..pos, KV heads
   [j0, j1). Query heads are grouped over their KV head: head h uses KV head h / group. */
static void attend(const ct_stack_cfg *c, const float *kc, const float *vc, int cap,
                   const float *q, float *out, int pos, float *scores, int j0, int j1, int group) {
    const int hd = c->head_dim;
    const ct_attend_head_fn fn = ct_kernels()->attend_head;
    for (int j = j0; j < j1; j++)
        fn(kc + (size_t)j * cap * hd, vc + (size_t)j * cap * hd, hd, q + (size_t)j * group * hd,
           out + (size_t)j * group * hd, pos + 1, group, scores);
}

/* Up to three independent matmuls in one pool dispatch, each handed out in row chunks (aligned
   to CT_ROW_ALIGN so the SIMD kernels' row grouping, and so the arithmetic, is the same
   whichever thread takes a chunk and for any thread count). */
typedef struct {
    int k;
    const ct_mat *w[3];
    const float *x[3];
    float *y[3];
    int n;
    int cap;    /* tokens per kernel call (0 = all n at once) */
    int prompt; /* the kernels' ct_mm_prompt while the job runs */
    ct_pool_range r[3]; /* rows of w[i] */
} mm_job;

/* Row chunks of w over pool. */
static void rows_range(ct_pool_range *r, ct_pool *pool, const ct_mat *w) {
    ct_pool_range_init(r, w->rows, CT_ROW_ALIGN, ct_pool_chunk(pool, w->rows, CT_ROW_ALIGN));
}

/* Rows [lo, hi) of w for n tokens, in calls of at most cap tokens. With cap below the kernels'
   GEMM thresholds every token takes the same arithmetic as a lone token (batched decode). */
static void rows_capped(const ct_mat *w, const float *b, const float *x, float *y, int n, int cap,
                        int lo, int hi) {
    const ct_matmul_rows_fn fn = ct_kernels()->matmul_rows;
    if (cap <= 0 || n <= cap) {
        fn(w, b, x, y, n, lo, hi);
        return;
    }
    for (int t = 0; t < n; t += cap) {
        int k = n - t < cap ? n - t : cap;
        fn(w, b, x + (size_t)t * w->cols, y + (size_t)t * w->rows, k, lo, hi);
    }
}

static void mm_run(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    mm_job *j = ctx;
    ct_xq_scope_begin(); /* the job only reads its x */
    ct_mm_prompt = j->prompt;
    for (int i = 0; i < j->k; i++) {
        int lo, hi;
        while (ct_pool_range_next(&j->r[i], &lo, &hi))
            rows_capped(j->w[i], NULL, j->x[i], j->y[i], j->n, j->cap, lo, hi);
    }
    ct_mm_prompt = 0;
    ct_xq_scope_end();
}

typedef struct {
    const ct_mat *w;
    const float *b, *x;
    float *y;
    int n, cap, prompt;
    ct_pool_range r;
} mm1_job;

static void mm1_run(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    mm1_job *j = ctx;
    int lo, hi;
    ct_xq_scope_begin(); /* the job only reads its x (x and y never alias) */
    ct_mm_prompt = j->prompt;
    while (ct_pool_range_next(&j->r, &lo, &hi)) rows_capped(j->w, j->b, j->x, j->y, j->n, j->cap, lo, hi);
    ct_mm_prompt = 0;
    ct_xq_scope_end();
}

void ct_matmul_pool(ct_pool *pool, const ct_mat *w, const float *bias, const float *x, float *y,
                    int n) {
    ct_matmul_pool_capped(pool, w, bias, x, y, n, 0);
}

static void matmul_pool_job(ct_pool *pool, const ct_mat *w, const float *bias, const float *x, float *y,
                            int n, int cap, int prompt) {
    mm1_job j = {w, bias, x, y, n, cap, prompt, {0}};
    rows_range(&j.r, pool, w);
    ct_pool_run_dyn(pool, mm1_run, &j);
}

void ct_matmul_pool_capped(ct_pool *pool, const ct_mat *w, const float *bias, const float *x,
                           float *y, int n, int cap) {
    matmul_pool_job(pool, w, bias, x, y, n, cap, 0);
}

void ct_matmul_pool_prompt(ct_pool *pool, const ct_mat *w, const float *bias, const float *x, float *y,
                           int n) {
    matmul_pool_job(pool, w, bias, x, y, n, 0, 1);
}

/* gate and up rows of one chunk (the same rows of both), then SiLU(gate) * up on those rows
   for every token: the MLP's elementwise step runs in parallel without another dispatch. */
typedef struct {
    const ct_mat *gate, *up;
    const float *x;
    float *g, *u;
    int n, cap, prompt;
    ct_pool_range r; /* rows of gate and up */
} mlp_job;

static void mlp_run(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    mlp_job *j = ctx;
    const int F = j->gate->rows;
    int lo, hi;
    ct_xq_scope_begin(); /* x is only read (the job writes g and u) */
    ct_mm_prompt = j->prompt;
    while (ct_pool_range_next(&j->r, &lo, &hi)) {
        rows_capped(j->gate, NULL, j->x, j->g, j->n, j->cap, lo, hi);
        rows_capped(j->up, NULL, j->x, j->u, j->n, j->cap, lo, hi);
        for (int t = 0; t < j->n; t++)
            ct_swiglu(j->g + (size_t)t * F + lo, j->g + (size_t)t * F + lo, j->u + (size_t)t * F + lo,
                      hi - lo);
    }
    ct_mm_prompt = 0;
    ct_xq_scope_end();
}

static void matmuls(ct_stack_scratch *s, int prompt, int n, int k, const ct_mat *w0, float *x0, float *y0,
                    const ct_mat *w1, float *x1, float *y1, const ct_mat *w2, float *x2, float *y2) {
    mm_job j = {k, {w0, w1, w2}, {x0, x1, x2}, {y0, y1, y2}, n, s->tok_cap, prompt, {{0}}};
    for (int i = 0; i < k; i++) rows_range(&j.r[i], s->pool, j.w[i]);
    ct_pool_run_dyn(s->pool, mm_run, &j);
}

typedef struct {
    const ct_stack_cfg *c;
    ct_kv *const *kvs; /* [n] cache of each token */
    const int *pos;    /* [n] position of each token */
    int layer, n;
    int q0;            /* the first token whose query runs (the others only append K/V) */
    const ct_layer_w *L;
    ct_stack_scratch *s;
    ct_pool_range r; /* KV heads */
} att_job;

/* KV heads [lo, hi), every token: QK-norm and RoPE on those KV heads and their query heads,
   the K/V append at the token's position in its own cache (layer l), then attention. Heads
   are independent, so how they are chunked changes nothing but who computes. */
static void att_heads(const att_job *j, int lo, int hi, float *scores) {
    const ct_stack_cfg *c = j->c;
    const ct_layer_w *L = j->L;
    const int hd = c->head_dim, half = hd / 2, qd = c->heads * hd, kd = c->kv_heads * hd,
              group = c->heads / c->kv_heads;
    for (int t = 0; t < j->n; t++) {
        const float *cs = j->s->cosv + (size_t)t * half, *sn = j->s->sinv + (size_t)t * half;
        float *q = j->s->q + (size_t)t * qd, *k = j->s->k + (size_t)t * kd;
        const float *v = j->s->v + (size_t)t * kd;
        ct_kv *kvw = j->kvs[t];
        const int p = j->pos[t];
        for (int h = lo * group; t >= j->q0 && h < hi * group; h++) {
            ct_rmsnorm(q + (size_t)h * hd, q + (size_t)h * hd, L->q_norm, hd, c->eps);
            ct_rope_apply(q + (size_t)h * hd, cs, sn, hd);
        }
        for (int h = lo; h < hi; h++) {
            ct_rmsnorm(k + (size_t)h * hd, k + (size_t)h * hd, L->k_norm, hd, c->eps);
            ct_rope_apply(k + (size_t)h * hd, cs, sn, hd);
            memcpy(kvw->k[j->layer] + ((size_t)h * kvw->cap + p) * hd, k + (size_t)h * hd,
                   (size_t)hd * sizeof(float));
            memcpy(kvw->v[j->layer] + ((size_t)h * kvw->cap + p) * hd, v + (size_t)h * hd,
                   (size_t)hd * sizeof(float));
        }
    }
    for (int t = j->q0; t < j->n; t++) {
        const ct_kv *kv = j->kvs[t];
        attend(c, kv->k[j->layer], kv->v[j->layer], kv->cap, j->s->q + (size_t)t * qd,
               j->s->att + (size_t)t * qd, j->pos[t], scores, lo, hi, group);
    }
}

/* Chunks of KV heads; the scores scratch is the taking thread's own. */
static void att_run(void *ctx, int ith, int nth) {
    (void)nth;
    att_job *j = ctx;
    const int group = j->c->heads / j->c->kv_heads;
    float *scores = j->s->scores + (size_t)ith * j->s->cap * (size_t)group;
    int lo, hi;
    while (ct_pool_range_next(&j->r, &lo, &hi)) att_heads(j, lo, hi, scores);
}

static void forward(const ct_stack_w *w, ct_kv *const *kvs, const int *pos, int n, ct_stack_scratch *s,
                    float *x, int prompt, int out_from);

void ct_stack_forward(const ct_stack_w *w, ct_kv *kv, ct_stack_scratch *s, int pos0, int n,
                      float *x, int out_from) {
    for (int t = 0; t < n; t++) {
        s->kvs[t] = kv;
        s->pos[t] = pos0 + t;
    }
    forward(w, s->kvs, s->pos, n, s, x, 1, out_from);
}

void ct_stack_forward_multi(const ct_stack_w *w, ct_kv *const *kvs, const int *pos, int n,
                            ct_stack_scratch *s, float *x) {
    forward(w, kvs, pos, n, s, x, 0, 0);
}

/* prompt: the matmuls run as a prompt pass (ct_mm_prompt). out_from: the first token whose
   output is wanted; the last layer runs only its K/V for the tokens before it (their queries,
   attention, o_proj and MLP feed nothing that is kept). Each token computed gets the bits of a
   full pass: the matmuls' per-token arithmetic does not depend on the token count. */
static void forward(const ct_stack_w *w, ct_kv *const *kvs, const int *pos, int n, ct_stack_scratch *s,
                    float *x, int prompt, int out_from) {
    const ct_stack_cfg *c = w->cfg;
    const int H = c->hidden, hd = c->head_dim, half = hd / 2, qd = c->heads * hd;
    for (int t = 0; t < n; t++)
        ct_rope_angles(pos[t], hd, c->rope_theta, s->cosv + (size_t)t * half,
                       s->sinv + (size_t)t * half);
    for (int l = 0; l < c->layers; l++) {
        const ct_layer_w *L = &w->layers[l];
        const int q0 = l == c->layers - 1 ? out_from : 0, m = n - q0; /* tokens whose rows go on */
        for (int t = 0; t < n; t++)
            ct_rmsnorm(s->h + (size_t)t * H, x + (size_t)t * H, L->in_norm, H, c->eps);
        if (q0 == 0) {
            matmuls(s, prompt, n, 3, &L->q, s->h, s->q, &L->k, s->h, s->k, &L->v, s->h, s->v);
        } else {
            matmuls(s, prompt, n, 2, &L->k, s->h, s->k, &L->v, s->h, s->v, NULL, NULL, NULL);
            if (m > 0)
                matmuls(s, prompt, m, 1, &L->q, s->h + (size_t)q0 * H, s->q + (size_t)q0 * qd, NULL, NULL, NULL,
                        NULL, NULL, NULL);
        }
        att_job aj = {c, kvs, pos, l, n, q0, L, s, {0}};
        ct_pool_range_init(&aj.r, c->kv_heads, 1, ct_pool_chunk(s->pool, c->kv_heads, 1));
        ct_pool_run_dyn(s->pool, att_run, &aj);
        if (m == 0) continue;
        float *xo = x + (size_t)q0 * H; /* rows [q0, n) */
        matmuls(s, prompt, m, 1, &L->o, s->att + (size_t)q0 * qd, s->proj, NULL, NULL, NULL, NULL, NULL, NULL);
        for (size_t i = 0; i < (size_t)m * H; i++) xo[i] += s->proj[i];
        for (int t = 0; t < m; t++)
            ct_rmsnorm(s->h + (size_t)t * H, xo + (size_t)t * H, L->post_norm, H, c->eps);
        mlp_job mj = {&L->gate, &L->up, s->h, s->g, s->u, m, s->tok_cap, prompt, {0}};
        rows_range(&mj.r, s->pool, &L->gate);
        ct_pool_run_dyn(s->pool, mlp_run, &mj);
        matmuls(s, prompt, m, 1, &L->down, s->g, s->proj, NULL, NULL, NULL, NULL, NULL, NULL);
        for (size_t i = 0; i < (size_t)m * H; i++) xo[i] += s->proj[i];
    }
    for (int t = out_from; t < n; t++)
        ct_rmsnorm(x + (size_t)t * H, x + (size_t)t * H, w->final_norm, H, c->eps);
}
