/* Sessions: working-set reservation, request validation, prefill and the per-frame calls (both halves of the step, N = 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/params.h"
#include "core/sha256.h"
#include "core/stepstats.h"
#include "model/session_internal.h"

ct_session_params ct_session_params_default(void) {
    ct_session_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.max_context = 2048;
    p.n_threads = 1;
    return p;
}

ct_gen_params ct_gen_params_default(void) {
    ct_gen_params g;
    memset(&g, 0, sizeof g);
    g.size = sizeof g;
    g.non_streaming = -1;
    g.temperature = g.top_p = g.repetition_penalty = -1.0f;
    g.top_k = -1;
    g.sub_temperature = g.sub_top_p = -1.0f;
    g.sub_top_k = -1;
    g.min_new_tokens = 2;
    g.budget_base = 50;
    g.budget_per_token = 12.0f;
    g.prompt_reuse = 1;
    return g;
}

const char *ct_stop_reason_str(ct_stop_reason r) {
    switch (r) {
    case CT_STOP_NONE: return "running";
    case CT_STOP_EOS: return "eos";
    case CT_STOP_MAX_FRAMES: return "max_frames";
    case CT_STOP_BUDGET: return "budget";
    case CT_STOP_ABORTED: return "aborted";
    }
    return "?";
}

void ct_session_free(ct_session *s) {
    if (!s) return;
    ct_session_leave_group(s);
    ct_batch_free(s->solo);
    if (s->own_pool) ct_pool_free(s->pool);
    ct_kv_free(&s->tkv);
    ct_kv_free(&s->pkv);
    ct_stack_scratch_free(&s->ts);
    free(s->prompt);
    free(s->row_key);
    free(s->trailing);
    free(s->pad_row);
    free(s->ids);
    free(s->h);
    free(s->x);
    free(s->etmp);
    free(s->logits);
    free(s->seen);
    free(s->samp_scratch);
    free(s);
}

/* CT_OK when max_context is a talker context the model supports; else the message in err. */
static ct_status check_context(const ct_model *m, int max_context, char *err, size_t errcap) {
    if (max_context < 16 || max_context > m->cfg.talker.max_pos)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "session: max_context %d is outside [16, %d] "
                       "(the talker's max_position_embeddings)", max_context, m->cfg.talker.max_pos);
    return CT_OK;
}

/* Reserves a session's whole working set (its one-stream step included) on pool; own_pool:
   the session frees the pool, also when this fails. max_context already checked. */
static ct_status session_new(const ct_model *m, int max_context, int prefill_chunk, ct_pool *pool,
                             int own_pool, ct_session **out, char *err, size_t errcap) {
    const ct_config *c = &m->cfg;
    ct_session *s = calloc(1, sizeof *s);
    if (!s) {
        if (own_pool) ct_pool_free(pool);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    }
    s->m = m;
    s->cap = max_context;
    s->prefill_chunk = prefill_chunk;
    s->pool = pool;
    s->own_pool = own_pool;
    const size_t H = (size_t)c->talker.hidden;
    int vmax = c->talker.vocab > c->pred.vocab ? c->talker.vocab : c->pred.vocab;
    int ok = ct_kv_init(&s->tkv, &c->talker, s->cap) == CT_OK &&
             ct_kv_init(&s->pkv, &c->pred, c->n_groups) == CT_OK &&
             ct_stack_scratch_init(&s->ts, &c->talker, prefill_chunk, s->cap, pool) == CT_OK &&
             ct_batch_create_on(m, 1, s->cap, pool, &s->solo, NULL, 0) == CT_OK;
    if (ok) {
        s->prompt = malloc((size_t)s->cap * H * sizeof(float));
        s->row_key = malloc((size_t)s->cap * sizeof *s->row_key);
        s->trailing = malloc((size_t)s->cap * H * sizeof(float));
        s->pad_row = malloc(H * sizeof(float));
        s->ids = malloc(((size_t)s->cap + 64) * 2 * sizeof(int32_t));
        s->h = malloc(H * sizeof(float));
        s->x = malloc((size_t)prefill_chunk * H * sizeof(float));
        s->etmp = malloc(2 * (size_t)c->text_hidden * sizeof(float));
        s->logits = malloc((size_t)c->talker.vocab * sizeof(float));
        s->seen = malloc((size_t)c->talker.vocab);
        s->samp_scratch = malloc(ct_sampler_scratch_bytes(vmax));
        ok = s->prompt && s->row_key && s->trailing && s->pad_row && s->ids && s->h && s->x && s->etmp &&
             s->logits && s->seen && s->samp_scratch;
    }
    if (!ok) {
        size_t kvb = ct_kv_bytes(&c->talker, s->cap);
        ct_session_free(s);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "session: cannot reserve the working set "
                       "(talker KV alone is %zu MiB for %d positions)", kvb >> 20, max_context);
    }
    ct_embed_text(m, c->tts_pad, s->pad_row, s->etmp);
    *out = s;
    return CT_OK;
}

ct_status ct_session_create(const ct_model *m, const ct_session_params *p, ct_session **out,
                            char *err, size_t errcap) {
    if (!m || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "session: NULL argument");
    *out = NULL;
    ct_session_params sp = ct_session_params_default();
    ct_status st = p ? ct_params_take(&sp, sizeof sp, p, p->size, "ct_session_params", err, errcap) : CT_OK;
    if (st == CT_OK) st = check_context(m, sp.max_context, err, errcap);
    if (st != CT_OK) return st;
    int nt = sp.n_threads;
    if (nt <= 0) {
        long onl = sysconf(_SC_NPROCESSORS_ONLN);
        nt = onl > 0 ? (int)onl : 1;
    }
    if (nt > 256) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "session: n_threads %d is over 256", nt);
    ct_pool *pool = NULL;
    if (ct_pool_create(nt, sp.cpus, sp.n_cpus, &pool) != CT_OK)
        return ct_errf(err, errcap, CT_ERR_NOMEM, "session: cannot start %d threads", nt);
    return session_new(m, sp.max_context, CT_PREFILL_CHUNK, pool, 1, out, err, errcap);
}

ct_status ct_session_create_chunked(const ct_model *m, int max_context, int prefill_chunk, ct_pool *pool,
                                    ct_session **out, char *err, size_t errcap) {
    if (!m || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "session: NULL argument");
    *out = NULL;
    if (prefill_chunk < 1 || prefill_chunk > CT_PREFILL_CHUNK_MAX)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "session: prefill_chunk %d is outside [1, %d]",
                       prefill_chunk, CT_PREFILL_CHUNK_MAX);
    ct_status st = check_context(m, max_context, err, errcap);
    if (st != CT_OK) return st;
    return session_new(m, max_context, prefill_chunk, pool, 0, out, err, errcap);
}

ct_status ct_session_create_on(const ct_model *m, int max_context, ct_pool *pool, ct_session **out,
                               char *err, size_t errcap) {
    return ct_session_create_chunked(m, max_context, CT_PREFILL_CHUNK, pool, out, err, errcap);
}

const char *ct_session_errmsg(const ct_session *s) { return s ? s->err : "no session"; }

ct_stop_reason ct_session_stop_reason(const ct_session *s) { return s ? s->stop : CT_STOP_NONE; }

ct_run_info ct_session_run_info(const ct_session *s) {
    ct_run_info r;
    memset(&r, 0, sizeof r);
    if (!s) return r;
    r.prompt_len = s->prompt_len;
    r.prompt_reused = s->prompt_reused;
    r.text_tokens = s->text_tokens;
    r.frames = s->frames;
    r.frame_limit = s->frame_limit;
    return r;
}

/* Samples c0 from s->h; returns the code or -1 (error set). */
int ct_session_sample_c0(ct_session *s) {
    const ct_config *c = &s->m->cfg;
    double t_s = CT_STATS_T0();
    int id = ct_sample_talker(s->logits, c->talker.vocab, &s->tcfg, s->seen, s->n_generated,
                              s->min_new_tokens, c->codec_eos, c->pred.vocab, c->talker.vocab - 1,
                              &s->trng, s->samp_scratch);
    CT_STATS_ADD_SINCE("sampler.talker_ms", t_s);
    if (id < 0) {
        ct_errf(s->err, sizeof s->err, CT_ERR_INTERNAL, "talker logits are all non-finite at frame %d",
                s->frames);
        return -1;
    }
    s->seen[id] = 1;
    s->n_generated++;
    return id;
}

static float pick(float v, float def) { return v >= 0.0f ? v : def; }

/* frame limit: reference max_new_tokens-1, user cap, text budget (of the tokens known), context
   capacity */
static void set_frame_limit(ct_session *s) {
    long lim = s->lim_mnt - 1;
    if (s->lim_max_frames > 0 && s->lim_max_frames < lim) lim = s->lim_max_frames;
    double budget = (double)s->lim_budget_base + (double)s->lim_budget_per_token * s->text_tokens;
    int why_budget = 0;
    s->limit_by_text = 0;
    if (budget < (double)lim) lim = (long)budget, why_budget = 1, s->limit_by_text = 1;
    long ctx_room = s->cap - s->prompt_len;
    if (ctx_room < lim) lim = ctx_room, why_budget = 1, s->limit_by_text = 0;
    if (lim < 1) lim = 1;
    s->frame_limit = (int)lim;
    s->limit_is_budget = why_budget;
}

static ct_status session_begin(ct_session *s, const ct_gen_params *gp);

ct_status ct_session_begin(ct_session *s, const ct_gen_params *gp, const int32_t *ids, int n, int open) {
    if (!s || !gp || (ids && n < 1)) return CT_ERR_INVALID_ARG;
    s->text_ids = ids;
    s->text_n = ids ? n : 0;
    s->text_open = ids && open;
    ct_status st = session_begin(s, gp);
    s->text_ids = NULL;
    if (st != CT_OK) s->text_open = 0;
    return st;
}

int ct_session_prefill_pass(ct_session *s) {
    if (!s || !s->prefilling) return 0;
    const int H = s->m->cfg.talker.hidden, left = s->prompt_len - s->pos;
    const int k = left < s->prefill_chunk ? left : s->prefill_chunk;
    ct_talker_pass(s, s->prompt + (size_t)s->pos * H, k, k == left);
    return left - k;
}

ct_status ct_session_finish(ct_session *s) {
    if (!s) return CT_ERR_INVALID_ARG;
    if (!s->prefilling || s->pos < s->prompt_len)
        return ct_errf(s->err, sizeof s->err, CT_ERR_STATE, "finish before the prefill's last pass");
    s->prefilling = 0;
    ct_prompt_group_lock(s);
    s->kept = s->prompt_len;
    ct_prompt_group_keep(s);
    ct_prompt_group_unlock(s);
    ct_talker_logits(s, s->logits);
    int c0 = ct_session_sample_c0(s);
    if (c0 < 0) {
        s->text_open = 0;
        return CT_ERR_INTERNAL;
    }
    s->c0 = c0;
    s->running = 1;
    if (c0 == s->m->cfg.codec_eos) { /* only possible when min_new_tokens is 0 */
        s->running = 0;
        s->stop = CT_STOP_EOS;
    }
    return CT_OK;
}

/* begin, every pass, finish */
static ct_status session_start(ct_session *s, const ct_gen_params *gp, const int32_t *ids, int n, int open) {
    ct_status st = ct_session_begin(s, gp, ids, n, open);
    if (st != CT_OK) return st;
    while (ct_session_prefill_pass(s) > 0) {
    }
    return ct_session_finish(s);
}

ct_status ct_session_start(ct_session *s, const ct_gen_params *gp) {
    if (!s || !gp) return CT_ERR_INVALID_ARG;
    return session_start(s, gp, NULL, 0, 0);
}

ct_status ct_session_start_ids(ct_session *s, const ct_gen_params *gp, const int32_t *ids, int n, int open) {
    if (!s || !gp || !ids || n < 1) return CT_ERR_INVALID_ARG;
    return session_start(s, gp, ids, n, open);
}

ct_status ct_session_text_more(ct_session *s, const int32_t *ids, int n) {
    if (!s || n < 0 || (n && !ids)) return CT_ERR_INVALID_ARG;
    if (!s->text_open || !s->running || n == 0) return CT_OK;
    if (s->n_trailing + n + 1 > s->cap)
        return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: the utterance's text of %d tokens does "
                       "not fit the session context of %d positions", s->text_tokens + n, s->cap);
    const int H = s->m->cfg.talker.hidden;
    ct_embed_text_rows(s, ids, n, s->trailing + (size_t)s->n_trailing * H);
    s->n_trailing += n;
    s->text_tokens += n;
    set_frame_limit(s);
    return CT_OK;
}

ct_status ct_session_text_close(ct_session *s) {
    if (!s) return CT_ERR_INVALID_ARG;
    if (!s->text_open) return CT_OK;
    s->text_open = 0;
    if (!s->running) return CT_OK;
    const int H = s->m->cfg.talker.hidden;
    ct_embed_text_rows(s, &s->m->cfg.tts_eos, 1, s->trailing + (size_t)s->n_trailing * H);
    s->n_trailing++;
    return CT_OK;
}

int ct_session_text_wait(const ct_session *s) {
    if (!s || !s->text_open || !s->running) return 0;
    if (s->advance_pending) return s->frames - 1 >= s->n_trailing; /* its overlay row has not come */
    return s->frames + 1 >= s->frame_limit && s->limit_by_text;     /* the budget may still grow */
}

/* Keys the rows of the prompt just built (s->row_key) and returns how many leading positions
   the KV already holds from the last prefill: the rows that match its keys, at most
   prompt_len - 1 (the last position is always run, for its hidden state); 0 without reuse. */
static int prompt_keys(ct_session *s, int reuse) {
    const size_t H = (size_t)s->m->cfg.talker.hidden;
    const int L = s->prompt_len, prev = s->kept;
    int n = 0;
    s->kept = 0; /* the keys change below; the prefill that follows makes them true */
    for (int i = 0; i < L; i++) {
        uint8_t k[32];
        ct_sha256_ctx h;
        ct_sha256_init(&h);
        ct_sha256_update(&h, s->prompt + (size_t)i * H, H * sizeof(float));
        ct_sha256_final(&h, k);
        if (reuse && n == i && i < prev && i < L - 1 && !memcmp(k, s->row_key[i], sizeof k)) n++;
        memcpy(s->row_key[i], k, sizeof k);
    }
    return n;
}

static ct_status session_begin(ct_session *s, const ct_gen_params *gp) {
    const ct_model *m = s->m;
    const ct_config *c = &m->cfg;
    s->err[0] = 0;
    s->running = s->prefilling = 0;
    s->stop = CT_STOP_NONE;
    s->frames = s->n_generated = s->pos = s->prefill_passes = s->prompt_reused = s->prompt_shared = s->prompt_cached = 0;
    s->advance_pending = 0;
    s->t_pred_ms = s->t_talker_ms = 0;
    ct_gen_params g = ct_gen_params_default();
    ct_status st = ct_params_take(&g, sizeof g, gp, gp->size, "ct_gen_params", s->err, sizeof s->err);
    if (st != CT_OK) return st;
    s->tcfg.do_sample = g.greedy ? 0 : c->do_sample;
    s->tcfg.temperature = pick(g.temperature, c->temperature);
    s->tcfg.top_k = g.top_k >= 0 ? g.top_k : c->top_k;
    s->tcfg.top_p = pick(g.top_p, c->top_p);
    s->tcfg.repetition_penalty = pick(g.repetition_penalty, c->repetition_penalty);
    s->scfg.do_sample = g.greedy ? 0 : c->sub_do_sample;
    s->scfg.temperature = pick(g.sub_temperature, c->sub_temperature);
    s->scfg.top_k = g.sub_top_k >= 0 ? g.sub_top_k : c->sub_top_k;
    s->scfg.top_p = pick(g.sub_top_p, c->sub_top_p);
    s->scfg.repetition_penalty = 1.0f;
    char inner[512];
    st = ct_sample_cfg_check(&s->tcfg, inner, sizeof inner);
    if (st != CT_OK) return ct_errf(s->err, sizeof s->err, st, "talker sampling: %s", inner);
    st = ct_sample_cfg_check(&s->scfg, inner, sizeof inner);
    if (st != CT_OK) return ct_errf(s->err, sizeof s->err, st, "sub-talker sampling: %s", inner);
    if (g.min_new_tokens < 0)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "min_new_tokens must be >= 0");
    if (g.budget_base < 0 || !(g.budget_per_token >= 0.0f))
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "frame budget must be >= 0");
    s->min_new_tokens = g.min_new_tokens;
    st = ct_prompt_build(s, &g);
    if (st != CT_OK) return st;

    s->lim_mnt = g.max_new_tokens > 0 ? g.max_new_tokens : c->max_new_tokens;
    s->lim_max_frames = g.max_frames;
    s->lim_budget_base = g.budget_base;
    s->lim_budget_per_token = g.budget_per_token;
    set_frame_limit(s);

    ct_rng_init(&s->trng, g.seed, 0);
    ct_rng_init(&s->srng, g.seed, 1);
    memset(s->seen, 0, (size_t)c->talker.vocab);
    ct_prompt_group_lock(s);
    int reuse = prompt_keys(s, g.prompt_reuse);
    if (g.prompt_reuse) reuse = ct_prompt_group_share(s, reuse);
    ct_prompt_group_unlock(s);
    s->pos = reuse;
    s->prompt_reused = reuse;
    s->prefilling = 1;
    return CT_OK;
}

int ct_session_frame_done(ct_session *s) {
    s->frames++;
    if (s->frames >= s->frame_limit) {
        s->running = 0;
        s->stop = s->limit_is_budget ? CT_STOP_BUDGET : CT_STOP_MAX_FRAMES;
        return 0;
    }
    return 1;
}

const float *ct_session_overlay(const ct_session *s) {
    int step = s->frames - 1;
    return step < s->n_trailing ? s->trailing + (size_t)step * s->m->cfg.talker.hidden : s->pad_row;
}

ct_status ct_session_take_c0(ct_session *s) {
    int c0 = ct_session_sample_c0(s);
    if (c0 < 0) {
        s->running = 0;
        s->stop = CT_STOP_ABORTED;
        return CT_ERR_INTERNAL;
    }
    s->c0 = c0;
    if (c0 == s->m->cfg.codec_eos) {
        s->running = 0;
        s->stop = CT_STOP_EOS;
    }
    return CT_OK;
}

ct_status ct_session_frame_codes(ct_session *s, int32_t *codes, int *got) {
    if (!s || !codes || !got) return CT_ERR_INVALID_ARG;
    *got = 0;
    if (!s->running && s->stop == CT_STOP_NONE)
        return ct_errf(s->err, sizeof s->err, CT_ERR_STATE, "next_frame before a successful start");
    ct_status st = ct_batch_codes(s->solo, &s, 1, codes, got);
    if (st != CT_OK) snprintf(s->err, sizeof s->err, "%s", ct_batch_errmsg(s->solo));
    return st;
}

ct_status ct_session_frame_advance(ct_session *s) {
    if (!s) return CT_ERR_INVALID_ARG;
    return ct_batch_advance(s->solo, &s, 1);
}

ct_status ct_session_next_frame(ct_session *s, int32_t *codes, int *got) {
    ct_status st = ct_session_frame_codes(s, codes, got);
    if (st != CT_OK || !*got) return st;
    return ct_session_frame_advance(s);
}
