/* Batched decode: advances several sessions by one frame with shared weight passes. The code
   predictor's 15 sub-steps and the talker step run as one matrix-matrix pass over the weights
   for all streams; attention, sampling and stop rules stay per stream, so a stream's codes are
   the same whether it runs alone or in a batch. */
#include <stdlib.h>
#include <string.h>

#include "core/stepstats.h"
#include "model/session_internal.h"

struct ct_batch {
    const ct_model *m;
    int max, cap;
    ct_pool *pool;
    ct_stack_scratch ts; /* talker, max tokens */
    ct_stack_scratch ps; /* predictor, 2*max tokens */
    float *x;            /* [2*max][max(H, PH)] stack inputs/outputs */
    float *e;            /* [2*max][H] embeddings before the projection */
    float *hid;          /* [max][PH] gathered predictor hidden */
    float *logits;       /* [max][max(V, PV)] */
    ct_kv **kvs;         /* [2*max] */
    int *pos;            /* [2*max] */
    ct_session **act;    /* [max] */
    int *slot;           /* [max] index into the caller's arrays */
};

void ct_batch_free(ct_batch *b) {
    if (!b) return;
    ct_stack_scratch_free(&b->ts);
    ct_stack_scratch_free(&b->ps);
    ct_pool_free(b->pool);
    free(b->x);
    free(b->e);
    free(b->hid);
    free(b->logits);
    free(b->kvs);
    free(b->pos);
    free(b->act);
    free(b->slot);
    free(b);
}

ct_status ct_batch_create(const ct_model *m, int max_streams, int max_context, int n_threads,
                          ct_batch **out, char *err, size_t errcap) {
    if (!m || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "batch: NULL argument");
    *out = NULL;
    if (max_streams < 1 || max_streams > 256 || max_context < 16 || max_context > m->cfg.talker.max_pos)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "batch: max_streams %d (1..256) or max_context %d "
                       "out of range", max_streams, max_context);
    if (n_threads <= 0) n_threads = 1;
    ct_batch *b = calloc(1, sizeof *b);
    if (!b) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    b->m = m;
    b->max = max_streams;
    b->cap = max_context;
    const ct_config *c = &m->cfg;
    size_t H = (size_t)c->talker.hidden, PH = (size_t)c->pred.hidden;
    size_t W = H > PH ? H : PH, V = (size_t)(c->talker.vocab > c->pred.vocab ? c->talker.vocab : c->pred.vocab);
    size_t n2 = 2 * (size_t)max_streams;
    int ok = ct_pool_create(n_threads, NULL, 0, &b->pool) == CT_OK &&
             ct_stack_scratch_init(&b->ts, &c->talker, max_streams, max_context, b->pool) == CT_OK &&
             ct_stack_scratch_init(&b->ps, &c->pred, (int)n2, c->n_groups, b->pool) == CT_OK;
    if (ok) {
        b->x = malloc(sizeof(float) * n2 * W);
        b->e = malloc(sizeof(float) * n2 * H);
        b->hid = malloc(sizeof(float) * (size_t)max_streams * PH);
        b->logits = malloc(sizeof(float) * (size_t)max_streams * V);
        b->kvs = malloc(sizeof(ct_kv *) * n2);
        b->pos = malloc(sizeof(int) * n2);
        b->act = malloc(sizeof(ct_session *) * (size_t)max_streams);
        b->slot = malloc(sizeof(int) * (size_t)max_streams);
        ok = b->x && b->e && b->hid && b->logits && b->kvs && b->pos && b->act && b->slot;
    }
    if (!ok) {
        ct_batch_free(b);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "batch: cannot reserve the working set");
    }
    b->ts.tok_cap = b->ps.tok_cap = CT_DECODE_TOK_CAP;
    *out = b;
    return CT_OK;
}

/* proj(v) for n rows: small_to_mtp_projection on 1.7B, a copy otherwise. */
static void pred_inputs(ct_batch *b, const float *in, float *out, int n) {
    const ct_model *m = b->m;
    if (m->has_proj) ct_matmul_pool_capped(b->pool, &m->mtp_proj, m->mtp_b, in, out, n, CT_DECODE_TOK_CAP);
    else memcpy(out, in, sizeof(float) * (size_t)n * (size_t)m->cfg.pred.hidden);
}

ct_status ct_batch_step(ct_batch *b, ct_session *const *ss, int n, int32_t *codes, int *got) {
    if (!b || (!ss && n) || n < 0) return CT_ERR_INVALID_ARG;
    const ct_model *m = b->m;
    const ct_config *c = &m->cfg;
    const int H = c->talker.hidden, PH = c->pred.hidden, PV = c->pred.vocab, G = c->n_groups;
    const int TV = c->talker.vocab;
    int B = 0;
    for (int i = 0; i < n; i++) {
        got[i] = 0;
        ct_session *s = ss[i];
        if (!s || !s->running) continue;
        if (s->m != m || s->cap > b->cap || B == b->max) return CT_ERR_INVALID_ARG;
        b->act[B] = s;
        b->slot[B++] = i;
    }
    if (!B) return CT_OK;
    double t0 = CT_STATS_T0();
    /* predictor positions 0-1 of every stream: proj(h), proj(c(c0)) */
    for (int i = 0; i < B; i++) {
        ct_session *s = b->act[i];
        memcpy(b->e + (size_t)(2 * i) * H, s->h, sizeof(float) * (size_t)H);
        memset(b->e + (size_t)(2 * i + 1) * H, 0, sizeof(float) * (size_t)H);
        ct_embed_codec_add(m, s->c0, b->e + (size_t)(2 * i + 1) * H);
        b->kvs[2 * i] = b->kvs[2 * i + 1] = &s->pkv;
        b->pos[2 * i] = 0;
        b->pos[2 * i + 1] = 1;
        codes[(size_t)b->slot[i] * G] = s->c0;
    }
    pred_inputs(b, b->e, b->x, 2 * B);
    ct_stack_forward_multi(&m->pred, b->kvs, b->pos, 2 * B, &b->ps, b->x);
    for (int i = 0; i < B; i++)
        memcpy(b->hid + (size_t)i * PH, b->x + (size_t)(2 * i + 1) * PH, sizeof(float) * (size_t)PH);
    for (int g = 1; g < G; g++) {
        ct_matmul_pool_capped(b->pool, &m->pred_head[g - 1], NULL, b->hid, b->logits, B, CT_DECODE_TOK_CAP);
        for (int i = 0; i < B; i++) {
            ct_session *s = b->act[i];
            memcpy(s->plogits, b->logits + (size_t)i * PV, sizeof(float) * (size_t)PV);
            int code = ct_sample_plain(s->plogits, PV, &s->scfg, &s->srng, s->samp_scratch);
            if (code < 0) code = 0;
            codes[(size_t)b->slot[i] * G + g] = code;
            if (g < G - 1) {
                memset(b->e + (size_t)i * H, 0, sizeof(float) * (size_t)H);
                ct_embed_group_add(m, g, code, b->e + (size_t)i * H);
                b->kvs[i] = &s->pkv;
                b->pos[i] = g + 1;
            }
        }
        if (g == G - 1) break;
        pred_inputs(b, b->e, b->x, B);
        ct_stack_forward_multi(&m->pred, b->kvs, b->pos, B, &b->ps, b->x);
        memcpy(b->hid, b->x, sizeof(float) * (size_t)B * PH);
    }
    CT_STATS_ADD_SINCE("batch.predictor_ms", t0);
    /* talker step for the streams that go on */
    double t1 = CT_STATS_T0();
    int K = 0;
    for (int i = 0; i < B; i++) {
        ct_session *s = b->act[i];
        got[b->slot[i]] = 1;
        if (!ct_session_frame_done(s)) continue;
        ct_frame_embedding(s, codes + (size_t)b->slot[i] * G, ct_session_overlay(s), b->x + (size_t)K * H);
        b->kvs[K] = &s->tkv;
        b->pos[K] = s->pos;
        b->act[K++] = s;
    }
    if (K) {
        ct_stack_forward_multi(&m->talker, b->kvs, b->pos, K, &b->ts, b->x);
        ct_matmul_pool_capped(b->pool, &m->codec_head, NULL, b->x, b->logits, K, CT_DECODE_TOK_CAP);
    }
    ct_status st = CT_OK;
    for (int i = 0; i < K; i++) {
        ct_session *s = b->act[i];
        memcpy(s->h, b->x + (size_t)i * H, sizeof(float) * (size_t)H);
        s->pos++;
        memcpy(s->logits, b->logits + (size_t)i * TV, sizeof(float) * (size_t)TV);
        if (ct_session_take_c0(s) != CT_OK) st = CT_ERR_INTERNAL;
    }
    CT_STATS_ADD_SINCE("batch.talker_ms", t1);
    return st;
}
