/* Session state (private): KV caches, scratch, prompt buffers, sampler state. Tests use the
   step entry points below (model/step.c) to run teacher-forced steps. */
#ifndef CT_SESSION_INTERNAL_H
#define CT_SESSION_INTERNAL_H

#include "core/rng.h"
#include "model/model_internal.h"
#include "model/sampler.h"
#include "model/step.h"

#define CT_PREFILL_CHUNK 64 /* default tokens per stack call during prefill */
#define CT_PREFILL_CHUNK_MAX 4096 /* largest prefill pass a session may reserve */

struct ct_session {
    const ct_model *m;
    int cap;                 /* talker KV positions */
    ct_pool *pool;           /* worker pool: n_threads of its own, or borrowed (ct_session_create_on) */
    int own_pool;            /* pool is freed with the session */
    ct_batch *solo;          /* decode-step working set of one stream (this session) on pool */
    ct_kv tkv;               /* talker per-layer caches */
    ct_kv pkv;               /* predictor per-layer caches (n_groups positions) */
    int prefill_chunk;       /* tokens per prefill pass (stack call) */
    int prefill_passes;      /* passes the last start's prefill took */
    ct_stack_scratch ts;     /* talker prefill scratch, prefill_chunk tokens */
    float *prompt;           /* [cap][H] prefill embeddings */
    uint8_t (*row_key)[32];  /* [cap] SHA-256 of each prompt row of the last prefill */
    int kept;                /* positions 0..kept-1 of the KV hold the last prefill, whose rows
                                row_key names (prompt reuse, docs/STREAMING.md) */
    int prefilling;          /* 1 between a successful ct_session_begin and ct_session_finish */
    int prompt_reused;       /* positions this run's prefill did not run: kept from the last
                                one, or copied from another member of the group */
    int prompt_shared;       /* of those, copied from another member of the group's KV */
    int prompt_cached;       /* of those, copied from the group's prompt cache */
    int voice_rows;          /* leading prompt rows that do not depend on the text (instruction,
                                role block, codec header; an ICL clone's reference transcript
                                rows): what the group's cache keeps of a prefill */
    ct_prompt_group *group;  /* the sessions whose last prefills a start may copy leading
                                positions from (ct_session_join_prompts), or NULL */
    float *trailing;         /* [cap][H] trailing text overlay rows */
    float *pad_row;          /* [H] t(tts_pad) */
    int32_t *ids;            /* [cap + 64] token scratch */
    float *h;                /* [H] post-norm hidden of the last talker position */
    float *x;                /* [prefill_chunk][H] prefill stack input/output */
    float *etmp;             /* [2*text_hidden] text-projection temp */
    float *logits;           /* [talker vocab] */
    uint8_t *seen;           /* [talker vocab] distinct generated c0 ids */
    void *samp_scratch;      /* sampler scratch for max(talker vocab, codebook) logits */
    /* current run */
    int limit_is_budget;
    int running, prompt_len, n_trailing, text_tokens, frames, frame_limit, n_generated;
    int c0;                  /* sampled codebook-0 code pending residuals */
    int advance_pending;     /* ct_session_frame_codes gave a frame whose talker step is due */
    int32_t pend_codes[CT_MAX_GROUPS]; /* that frame's codes */
    int pos;                 /* next talker position */
    ct_stop_reason stop;
    /* incremental text (ct_session_start_ids): rows past n_trailing are not known yet while
       text_open; the frame limit follows the tokens known */
    const int32_t *text_ids; /* [text_n] the utterance's tokens during ct_session_start_ids */
    int text_n, text_open;
    int limit_by_text;       /* the text-length budget sets frame_limit */
    int lim_mnt, lim_max_frames, lim_budget_base;
    float lim_budget_per_token;
    ct_sample_cfg tcfg, scfg;
    int min_new_tokens;
    ct_rng trng, srng;
    double t_pred_ms, t_talker_ms; /* accumulated stage times of this run (a batched step's
                                      whole time counts for each of its sessions) */
    char err[1024];
};

/* Prompt groups (model/prompt_group.c). The lock guards every member's row_key and kept: a
   member holds it while it keys a new prompt and copies from the others (begin) and while it
   marks its prefill done (finish). No-ops outside a group. */
void ct_prompt_group_lock(ct_session *s);
void ct_prompt_group_unlock(ct_session *s);
/* With the lock held: extends reuse (the positions s's own KV holds) from the member whose last
   prefill, or the cached entry, shares the most leading rows with s's keyed prompt, copying
   their K/V; returns the new count and sets s->prompt_shared (from a member) or
   s->prompt_cached (from the cache) to the positions copied. */
int ct_prompt_group_share(ct_session *s, int reuse);
/* With the lock held, after s's prefill: keeps its voice rows' keys and K/V in the group's
   cache unless held already (the least recently used entries make room; nothing when they
   cannot or the budget is 0). */
void ct_prompt_group_keep(ct_session *s);
/* Bytes the group's cache holds (tests). */
size_t ct_prompt_group_cached_bytes(ct_prompt_group *g);
/* Takes s out of its group (ct_session_free). */
void ct_session_leave_group(ct_session *s);

/* Builds s->prompt / s->trailing for the request. Sets prompt_len, n_trailing, text_tokens. */
ct_status ct_prompt_build(ct_session *s, const ct_gen_params *g);
/* Text embeddings of ids[n] into out[n][hidden], batched over the session pool; every row
   bit-identical to ct_embed_text of its id. */
void ct_embed_text_rows(ct_session *s, const int32_t *ids, int n, float *out);

/* Runs n embeddings x[n][H] through the talker from position s->pos in passes of
   s->prefill_chunk tokens (ct_talker_pass each), advancing s->pos and leaving the last
   position's post-norm hidden in s->h. */
void ct_talker_run(ct_session *s, const float *x, int n);
/* One pass of k embeddings x[k][H] from position s->pos (counted in s->prefill_passes); last = 1
   leaves the last position's post-norm hidden in s->h, last = 0 writes only the K/V. */
void ct_talker_pass(ct_session *s, const float *x, int k, int last);

/* A start in pieces, so that the engine can run other streams' decode steps between a prompt's
   passes (docs/STREAMING.md step 2). begin validates the request, builds the prompt and takes
   what prompt reuse keeps (ids == NULL: g->text, as ct_session_start; else the tokens ids[n], as
   ct_session_start_ids, read during the call only); prefill_pass runs the next prefill_chunk
   positions and returns the positions left (0 also when no begin is pending); finish, once none
   are left, samples the first code. begin, the passes and finish give ct_session_start's
   results bit for bit; a begin that fails leaves nothing to finish. A new begin drops a pending
   one. */
ct_status ct_session_begin(ct_session *s, const ct_gen_params *g, const int32_t *ids, int n, int open);
int ct_session_prefill_pass(ct_session *s);
ct_status ct_session_finish(ct_session *s);

/* Raw talker logits [vocab] from s->h into out. */
void ct_talker_logits(const ct_session *s, float *out);

/* Runs the code predictor for one frame given hidden h[H] and c0 (the step's predictor with
   N = 1 on s->solo). codes[0] = c0 on return, codes[1..G-1] sampled (or taken from forced[1..]
   when forced != NULL). If logits_out is non-NULL it receives the raw logits of every sub-step
   [G-1][codebook]. */
void ct_predict_frame(ct_session *s, const float *h, int c0, const int32_t *forced,
                      int32_t *codes, float *logits_out);

/* Talker input embedding for a finished frame: c(c0) + sum_g emb_g(c_g) + overlay row. */
void ct_frame_embedding(const ct_session *s, const int32_t *codes, const float *overlay,
                        float *out);

/* Samples c0 from s->logits (already computed) with the talker chain; marks it seen.
   Returns the id or -1 (error message set). */
int ct_session_sample_c0(ct_session *s);
/* Counts a produced frame; returns 0 (and sets the stop reason) when the frame limit is hit,
   1 when a talker step must follow. */
int ct_session_frame_done(ct_session *s);
/* Text overlay row for the talker input of the frame just counted. */
const float *ct_session_overlay(const ct_session *s);
/* After a talker step left logits in s->logits: samples the next c0, handles EOS. */
ct_status ct_session_take_c0(ct_session *s);

/* ct_session_next_frame in two halves, so a caller can hand the codes on before the talker
   step that follows them: frame_codes runs the code predictor and writes the frame (*got = 0
   when generation has finished); frame_advance runs the talker step for the next frame (a
   no-op when the frame was the last). next_frame = frame_codes + frame_advance; the codes do
   not depend on the split. frame_codes twice without an advance is CT_ERR_STATE. They are
   ct_batch_codes / ct_batch_advance with N = 1 on s->solo. */
ct_status ct_session_frame_codes(ct_session *s, int32_t *codes, int *got);
ct_status ct_session_frame_advance(ct_session *s);

/* Incremental text (the stream engine's text_incremental). start_ids is ct_session_start with
   the utterance's text tokens given (ids[n], n >= 1, the streaming-text layout: the prefill
   holds T_1) instead of g->text; open = 1: more tokens may follow (no tts_eos row yet).
   text_more appends tokens (their overlay rows; the frame budget follows), text_close appends
   the tts_eos row; both are no-ops once the run stopped, and CT_ERR_LIMIT past the context.
   text_wait is 1 while the session's next half step needs what the text has not given: the
   talker half of a frame whose codes are out (ct_session_frame_codes) its overlay token, or the
   code half a frame budget that more tokens may still raise. */
ct_status ct_session_start_ids(ct_session *s, const ct_gen_params *g, const int32_t *ids, int n, int open);
ct_status ct_session_text_more(ct_session *s, const int32_t *ids, int n);
ct_status ct_session_text_close(ct_session *s);
int ct_session_text_wait(const ct_session *s);

#endif
