/* Talker and code-predictor steps on a session's caches (the per-frame hot path; no allocation). */
#include <string.h>

#include "core/stepstats.h"
#include "model/session_internal.h"

void ct_talker_run(ct_session *s, const float *x, int n) {
    const ct_model *m = s->m;
    const int H = m->cfg.talker.hidden;
    while (n > 0) {
        int k = n < CT_PREFILL_CHUNK ? n : CT_PREFILL_CHUNK;
        memcpy(s->x, x, (size_t)k * H * sizeof(float));
        ct_stack_forward(&m->talker, &s->tkv, &s->ts, s->pos, k, s->x);
        s->pos += k;
        x += (size_t)k * H;
        n -= k;
        memcpy(s->h, s->x + (size_t)(k - 1) * H, (size_t)H * sizeof(float));
    }
}

void ct_talker_logits(const ct_session *s, float *out) {
    ct_matmul_pool(s->pool, &s->m->codec_head, NULL, s->h, out, 1);
}

/* proj(v): small_to_mtp_projection on 1.7B, identity otherwise. */
static void pred_input(const ct_session *s, const float *v, float *out) {
    const ct_model *m = s->m;
    if (m->has_proj) ct_matmul_pool(s->pool, &m->mtp_proj, m->mtp_b, v, out, 1);
    else memcpy(out, v, (size_t)m->cfg.pred.hidden * sizeof(float));
}

void ct_predict_frame(ct_session *s, const float *h, int c0, const int32_t *forced,
                      int32_t *codes, float *logits_out) {
    const ct_model *m = s->m;
    const int H = m->cfg.talker.hidden, PH = m->cfg.pred.hidden, V = m->cfg.pred.vocab;
    const int G = m->cfg.n_groups;
    codes[0] = c0;
    /* positions 0-1: proj(h), proj(c(c0)) as a 2-token prefill; the cache restarts per frame */
    pred_input(s, h, s->px);
    memset(s->ptmp, 0, (size_t)H * sizeof(float));
    ct_embed_codec_add(m, c0, s->ptmp);
    pred_input(s, s->ptmp, s->px + PH);
    double t_frame = CT_STATS_T0(), t_sub = t_frame;
    ct_stack_forward(&m->pred, &s->pkv, &s->ps, 0, 2, s->px);
    const float *hid = s->px + PH;
    for (int g = 1; g < G; g++) {
        float *lg = logits_out ? logits_out + (size_t)(g - 1) * V : s->plogits;
        ct_matmul_pool(s->pool, &m->pred_head[g - 1], NULL, hid, lg, 1);
        int code;
        if (forced) {
            code = forced[g];
        } else {
            if (lg != s->plogits) memcpy(s->plogits, lg, (size_t)V * sizeof(float));
            double t_s = CT_STATS_T0();
            code = ct_sample_plain(s->plogits, V, &s->scfg, &s->srng, s->samp_scratch);
            CT_STATS_ADD_SINCE("sampler.sub_talker_ms", t_s);
            if (code < 0) code = 0; /* all logits non-finite: cannot happen with finite weights */
        }
        codes[g] = code;
        CT_STATS_ADD_SINCE("predictor.substep_ms", t_sub);
        t_sub = CT_STATS_T0();
        if (g == G - 1) break;
        memset(s->ptmp, 0, (size_t)H * sizeof(float));
        ct_embed_group_add(m, g, code, s->ptmp);
        pred_input(s, s->ptmp, s->px);
        ct_stack_forward(&m->pred, &s->pkv, &s->ps, g + 1, 1, s->px);
        hid = s->px;
    }
    CT_STATS_ADD_SINCE("predictor.frame_ms", t_frame);
}

void ct_frame_embedding(const ct_session *s, const int32_t *codes, const float *overlay,
                        float *out) {
    const ct_model *m = s->m;
    const int H = m->cfg.talker.hidden;
    memcpy(out, overlay, (size_t)H * sizeof(float));
    ct_embed_codec_add(m, codes[0], out);
    for (int g = 1; g < m->cfg.n_groups; g++) ct_embed_group_add(m, g, codes[g], out);
}
