/* The decode step over N sessions (a lone session is N = 1 of the same code): the code
   predictor's sub-steps, the talker step that follows them, and the chunked prefill. The
   per-frame hot path; no allocation (the working set is a ct_batch reserved at create). */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/stepstats.h"
#include "model/session_internal.h"

void ct_talker_pass(ct_session *s, const float *x, int k, int last) {
    const int H = s->m->cfg.talker.hidden;
    memcpy(s->x, x, (size_t)k * H * sizeof(float));
    /* the output of the last position only: earlier passes only write their K/V */
    ct_stack_forward(&s->m->talker, &s->tkv, &s->ts, s->pos, k, s->x, last ? k - 1 : k);
    s->prefill_passes++;
    s->pos += k;
    if (last) memcpy(s->h, s->x + (size_t)(k - 1) * H, (size_t)H * sizeof(float));
}

void ct_talker_run(ct_session *s, const float *x, int n) {
    const int H = s->m->cfg.talker.hidden;
    while (n > 0) {
        int k = n < s->prefill_chunk ? n : s->prefill_chunk;
        ct_talker_pass(s, x, k, n == k);
        x += (size_t)k * H;
        n -= k;
    }
}

void ct_talker_logits(const ct_session *s, float *out) {
    ct_matmul_pool(s->pool, &s->m->codec_head, NULL, s->h, out, 1);
}

void ct_frame_embedding(const ct_session *s, const int32_t *codes, const float *overlay,
                        float *out) {
    const ct_model *m = s->m;
    const int H = m->cfg.talker.hidden;
    memcpy(out, overlay, (size_t)H * sizeof(float));
    ct_embed_codec_add(m, codes[0], out);
    for (int g = 1; g < m->cfg.n_groups; g++) ct_embed_group_add(m, g, codes[g], out);
}

/* proj(v) for n rows in[n][H] -> out[n][PH]: small_to_mtp_projection on 1.7B, a copy otherwise
   (then H == PH). Calls of at most CT_DECODE_TOK_CAP tokens: a row's result is its solo one. */
static void pred_inputs(ct_batch *b, const float *in, float *out, int n) {
    const ct_model *m = b->m;
    if (m->has_proj) ct_matmul_pool_capped(b->pool, &m->mtp_proj, m->mtp_b, in, out, n, CT_DECODE_TOK_CAP);
    else memcpy(out, in, sizeof(float) * (size_t)n * (size_t)m->cfg.pred.hidden);
}

/* One sub-talker code from logits lg[PV] (modified) with the session's chain and RNG. */
static int sample_sub(ct_session *s, float *lg, int PV) {
    double t_s = CT_STATS_T0();
    int code = ct_sample_plain(lg, PV, &s->scfg, &s->srng, s->samp_scratch);
    CT_STATS_ADD_SINCE("sampler.sub_talker_ms", t_s);
    return code < 0 ? 0 : code; /* all logits non-finite: cannot happen with finite weights */
}

/* The code predictor for the B streams in b->act / b->slot / b->hin. Stream i (row r = slot[i])
   starts from the talker hidden hin[i] [H] and c0 = codes[r*G]; its predictor cache restarts
   with the 2-token prefill [proj(h), proj(c(c0))], then sub-step g feeds proj(emb_g(c_g)) at
   position g + 1. Writes codes[r*G + 1 .. r*G + G-1]: sampled with the session's sub-talker
   chain, or forced[r*G + g] when forced != NULL (nothing sampled). logits_out (may be NULL)
   receives every sub-step's raw logits at [r][G-1][PV]. Adds the time to each t_pred_ms. */
static void predict(ct_batch *b, int B, const int32_t *forced, float *logits_out, int32_t *codes) {
    const ct_model *m = b->m;
    const ct_config *c = &m->cfg;
    const int H = c->talker.hidden, PH = c->pred.hidden, PV = c->pred.vocab, G = c->n_groups;
    double t0 = ct_now_ms(), t_sub = CT_STATS_T0();
    for (int i = 0; i < B; i++) {
        float *e = b->e + (size_t)(2 * i) * H;
        memcpy(e, b->hin[i], sizeof(float) * (size_t)H);
        memset(e + H, 0, sizeof(float) * (size_t)H);
        ct_embed_codec_add(m, codes[(size_t)b->slot[i] * G], e + H);
        b->kvs[2 * i] = b->kvs[2 * i + 1] = &b->act[i]->pkv;
        b->pos[2 * i] = 0;
        b->pos[2 * i + 1] = 1;
    }
    pred_inputs(b, b->e, b->x, 2 * B);
    ct_stack_forward_multi(&m->pred, b->kvs, b->pos, 2 * B, &b->ps, b->x);
    for (int i = 0; i < B; i++)
        memcpy(b->hid + (size_t)i * PH, b->x + (size_t)(2 * i + 1) * PH, sizeof(float) * (size_t)PH);
    for (int g = 1; g < G; g++) {
        ct_matmul_pool_capped(b->pool, &m->pred_head[g - 1], NULL, b->hid, b->logits, B, CT_DECODE_TOK_CAP);
        for (int i = 0; i < B; i++) {
            const size_t r = (size_t)b->slot[i];
            float *lg = b->logits + (size_t)i * PV;
            if (logits_out) memcpy(logits_out + (r * (G - 1) + (size_t)(g - 1)) * PV, lg, sizeof(float) * (size_t)PV);
            int code = forced ? forced[r * G + g] : sample_sub(b->act[i], lg, PV);
            codes[r * G + g] = code;
            if (g == G - 1) continue;
            memset(b->e + (size_t)i * H, 0, sizeof(float) * (size_t)H);
            ct_embed_group_add(m, g, code, b->e + (size_t)i * H);
            b->kvs[i] = &b->act[i]->pkv;
            b->pos[i] = g + 1;
        }
        CT_STATS_ADD_SINCE("predictor.substep_ms", t_sub);
        t_sub = CT_STATS_T0();
        if (g == G - 1) break;
        pred_inputs(b, b->e, b->x, B);
        ct_stack_forward_multi(&m->pred, b->kvs, b->pos, B, &b->ps, b->x);
        memcpy(b->hid, b->x, sizeof(float) * (size_t)B * PH);
    }
    double dt = ct_now_ms() - t0;
    for (int i = 0; i < B; i++) b->act[i]->t_pred_ms += dt;
    if (ct_stats_enabled()) ct_stats_add("predictor.frame_ms", dt);
}

void ct_predict_frame(ct_session *s, const float *h, int c0, const int32_t *forced,
                      int32_t *codes, float *logits_out) {
    ct_batch *b = s->solo;
    b->act[0] = s;
    b->slot[0] = 0;
    b->hin[0] = h;
    codes[0] = c0;
    predict(b, 1, forced, logits_out, codes);
}

/* Gathers into b->act / b->slot the sessions of ss[n] that take part: the running ones for the
   predictor half (want_advance 0), those whose talker step is due for the talker half. Returns
   their count, or -1 with *st and b->err set (nothing gathered is to be used then). */
static int gather(ct_batch *b, ct_session *const *ss, int n, int want_advance, ct_status *st) {
    int B = 0;
    b->err[0] = 0;
    *st = CT_OK;
    for (int i = 0; i < n; i++) {
        ct_session *s = ss[i];
        if (!s || !(want_advance ? s->advance_pending : s->running)) continue;
        if (s->m != b->m)
            *st = ct_errf(b->err, sizeof b->err, CT_ERR_INVALID_ARG, "batch: session %d is of another model", i);
        else if (s->cap > b->cap)
            *st = ct_errf(b->err, sizeof b->err, CT_ERR_INVALID_ARG, "batch: session %d has max_context "
                          "%d, over the batch's %d", i, s->cap, b->cap);
        else if (B == b->max)
            *st = ct_errf(b->err, sizeof b->err, CT_ERR_INVALID_ARG, "batch: more than max_streams %d "
                          "sessions (at %d)", b->max, i);
        else if (!want_advance && s->advance_pending)
            *st = ct_errf(b->err, sizeof b->err, CT_ERR_STATE, "session %d: frame codes before the "
                          "previous frame's advance", i);
        if (*st != CT_OK) return -1;
        b->act[B] = s;
        b->slot[B++] = i;
    }
    return B;
}

ct_status ct_batch_codes(ct_batch *b, ct_session *const *ss, int n, int32_t *codes, int *got) {
    if (!b) return CT_ERR_INVALID_ARG;
    if (n < 0 || (n > 0 && (!ss || !codes || !got)))
        return ct_errf(b->err, sizeof b->err, CT_ERR_INVALID_ARG, "batch: NULL array or negative count");
    for (int i = 0; i < n; i++) got[i] = 0;
    ct_status st;
    const int B = gather(b, ss, n, 0, &st), G = b->m->cfg.n_groups;
    if (B <= 0) return st;
    for (int i = 0; i < B; i++) {
        b->hin[i] = b->act[i]->h;
        codes[(size_t)b->slot[i] * G] = b->act[i]->c0;
    }
    predict(b, B, NULL, NULL, codes);
    for (int i = 0; i < B; i++) {
        ct_session *s = b->act[i];
        got[b->slot[i]] = 1;
        if (!ct_session_frame_done(s)) continue;
        memcpy(s->pend_codes, codes + (size_t)b->slot[i] * G, sizeof(int32_t) * (size_t)G);
        s->advance_pending = 1;
    }
    return CT_OK;
}

ct_status ct_batch_advance(ct_batch *b, ct_session *const *ss, int n) {
    if (!b) return CT_ERR_INVALID_ARG;
    if (n < 0 || (n > 0 && !ss))
        return ct_errf(b->err, sizeof b->err, CT_ERR_INVALID_ARG, "batch: NULL array or negative count");
    ct_status st;
    const int K = gather(b, ss, n, 1, &st);
    if (K <= 0) return st;
    const ct_model *m = b->m;
    const int H = m->cfg.talker.hidden, TV = m->cfg.talker.vocab;
    double t0 = ct_now_ms();
    for (int i = 0; i < K; i++) {
        ct_session *s = b->act[i];
        s->advance_pending = 0;
        ct_frame_embedding(s, s->pend_codes, ct_session_overlay(s), b->x + (size_t)i * H);
        b->kvs[i] = &s->tkv;
        b->pos[i] = s->pos;
    }
    ct_stack_forward_multi(&m->talker, b->kvs, b->pos, K, &b->ts, b->x);
    ct_matmul_pool_capped(b->pool, &m->codec_head, NULL, b->x, b->logits, K, CT_DECODE_TOK_CAP);
    for (int i = 0; i < K; i++) {
        ct_session *s = b->act[i];
        memcpy(s->h, b->x + (size_t)i * H, sizeof(float) * (size_t)H);
        s->pos++;
        memcpy(s->logits, b->logits + (size_t)i * TV, sizeof(float) * (size_t)TV);
        if (ct_session_take_c0(s) != CT_OK) {
            st = CT_ERR_INTERNAL;
            snprintf(b->err, sizeof b->err, "session %d: %.400s", b->slot[i], s->err);
        }
    }
    double dt = ct_now_ms() - t0;
    for (int i = 0; i < K; i++) b->act[i]->t_talker_ms += dt;
    if (ct_stats_enabled()) ct_stats_add("talker.step_ms", dt);
    return st;
}
