/* The engine's streams: submission (request copy, utterance split, chunk schedule), the codec
   stage that turns handed-on frames into released chunks by each stream's schedule, and the
   reader side (read, wait, info, timeline, cancel, release). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/params.h"
#include "core/sha256.h"
#include "core/stepstats.h"
#include "stream/engine_internal.h"
#include "text/normalize.h"

ct_stream_params ct_stream_params_default(void) {
    ct_stream_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.schedule = "exact";
    p.context_frames = 72;
    p.utterance_bytes = 300;
    p.output = CT_OUTPUT_PCM;
    return p;
}

/* ---- lifetime ------------------------------------------------------------------------- */

static void stream_free(ct_stream *s) {
    pthread_cond_destroy(&s->cv);
    free(s->text);
    free(s->speaker);
    free(s->language);
    free(s->instruct);
    free(s->xvector);
    free(s->ref_codes);
    free(s->ref_text);
    free(s->utt_text);
    free(s->utts);
    free(s->pauses);
    free(s->est);
    free(s->ring);
    free(s->tl);
    free(s->itext);
    free(s->etext);
    free(s->ssp);
    free(s->tok);
    free(s);
}

int ct_stream_unref_locked(ct_stream *s) {
    if (--s->refs > 0) return 0;
    ct_engine *e = s->e;
    stream_free(s);
    return --e->refs == 0;
}

void ct_stream_fail_locked(ct_stream *s, ct_status st, const char *msg) {
    if (s->state == CT_STREAM_DONE || s->state == CT_STREAM_FAILED) return;
    ct_engine *e = s->e;
    s->state = CT_STREAM_FAILED;
    s->status = st;
    snprintf(s->err, sizeof s->err, "%s", msg);
    s->info.done_ms = ct_engine_now(e) - s->t_submit;
    if (!s->internal) {
        if (st == CT_ERR_ABORTED && s->cancel) e->k.cancelled++;
        else e->k.failed++;
        if (st == CT_ERR_TIMEOUT) e->k.timed_out++;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_cond_signal(&e->cv); /* the engine thread frees its slot on the next pass */
}

size_t ct_stream_room_locked(const ct_stream *s) { return s->ring_cap - (size_t)(s->tail - s->head); }

/* ---- submission ------------------------------------------------------------------------- */

static char *dup_or_null(const char *v, int *oom) {
    if (!v) return NULL;
    char *d = strdup(v);
    if (!d) *oom = 1;
    return d;
}

/* Parses the stream's chunk schedule and checks it against the engine's chunk capacity. */
static ct_status parse_schedule(const ct_engine *e, const ct_stream_params *p, ct_sched_params *sp, char *err,
                                size_t errcap) {
    char inner[256];
    *sp = ct_sched_params_default();
    ct_status st = ct_sched_parse(p->schedule ? p->schedule : "exact", sp, inner, sizeof inner);
    if (st != CT_OK) return ct_errf(err, errcap, st, "stream: schedule: %s", inner);
    sp->left_context = p->context_frames;
    int biggest = sp->steady > sp->initial ? sp->steady : sp->initial;
    for (int i = 0; sp->kind == CT_SCHED_RAMP && i < sp->n_ramp; i++) /* the table is RAMP's only */
        if (sp->ramp[i] > biggest) biggest = sp->ramp[i];
    if (sp->kind != CT_SCHED_EXACT && biggest > e->p.max_chunk_frames)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream: the schedule asks for chunks of %d frames, over "
                       "the engine's max_chunk_frames %d", biggest, e->p.max_chunk_frames);
    st = ct_sched_params_check(sp, NULL, 0, inner, sizeof inner);
    if (st != CT_OK) return ct_errf(err, errcap, st, "stream: schedule: %s", inner);
    return CT_OK;
}

/* s->voice: SHA-256 of the request fields the prompt's leading rows come from (MODEL.md 2.6:
   instruction, role block, codec header with language and speaker, the ICL reference), each
   tagged with its length so that no two requests share a key by concatenation. */
static void voice_key(ct_stream *s) {
    const ct_gen_params *q = &s->g;
    ct_sha256_ctx h;
    ct_sha256_init(&h);
    const char *str[4] = {q->speaker, q->language, q->instruct, q->ref_text};
    for (int i = 0; i < 4; i++) {
        const int64_t n = str[i] ? (int64_t)strlen(str[i]) : -1;
        ct_sha256_update(&h, &n, sizeof n);
        if (n > 0) ct_sha256_update(&h, str[i], (size_t)n);
    }
    const int64_t nx = q->xvector ? q->xvector_len : -1, nr = q->ref_codes ? q->ref_frames : -1;
    const int64_t lay = q->non_streaming;
    ct_sha256_update(&h, &nx, sizeof nx);
    if (nx > 0) ct_sha256_update(&h, q->xvector, sizeof(float) * (size_t)nx);
    ct_sha256_update(&h, &nr, sizeof nr);
    if (nr > 0) ct_sha256_update(&h, q->ref_codes, sizeof(int32_t) * (size_t)nr * (size_t)s->e->G);
    ct_sha256_update(&h, &lay, sizeof lay);
    ct_sha256_final(&h, s->voice);
}

/* Copies the request into s and splits it into utterances. */
static ct_status take_request(ct_stream *s, const ct_gen_params *g, char *err, size_t errcap) {
    int oom = 0;
    s->g = ct_gen_params_default();
    ct_status st = ct_params_take(&s->g, sizeof s->g, g, g->size, "ct_gen_params", err, errcap);
    if (st != CT_OK) return st;
    const ct_gen_params *q = &s->g; /* the size-checked copy: fields past the caller's size are defaults */
    if (!q->text && !s->p.text_incremental)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: the request has no text");
    if (s->p.text_incremental && q->non_streaming > 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: incremental text needs the streaming-text "
                       "layout (non_streaming 0 or -1, not %d)", q->non_streaming);
    s->text = dup_or_null(q->text, &oom);
    s->speaker = dup_or_null(q->speaker, &oom);
    s->language = dup_or_null(q->language, &oom);
    s->instruct = dup_or_null(q->instruct, &oom);
    if (q->xvector) {
        if (q->xvector_len <= 0 || q->xvector_len > 1 << 20)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream: xvector_len %d is out of range", q->xvector_len);
        s->xvector = malloc(sizeof(float) * (size_t)q->xvector_len);
        if (s->xvector) memcpy(s->xvector, q->xvector, sizeof(float) * (size_t)q->xvector_len);
        else oom = 1;
    }
    s->ref_text = dup_or_null(q->ref_text, &oom);
    if (q->ref_codes || q->ref_frames) { /* ICL: the codes are checked at admission (prompt builder) */
        const ct_engine *e = s->e;
        if (!q->ref_codes || q->ref_frames < 1 || q->ref_frames > e->p.max_context)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream: ref_frames %d with %s ref_codes: ICL needs "
                           "both, 1 <= ref_frames <= max_context %d", q->ref_frames, q->ref_codes ? "" : "no",
                           e->p.max_context);
        size_t nb = sizeof(int32_t) * (size_t)q->ref_frames * (size_t)e->G;
        s->ref_codes = malloc(nb);
        if (s->ref_codes) memcpy(s->ref_codes, q->ref_codes, nb);
        else oom = 1;
    }
    if (s->p.normalize && s->text) { /* numbers, dates, units... as words (docs/TEXT.md), before splitting */
        char *nt = NULL;
        st = ct_normalize(s->text, strlen(s->text), s->language, &nt, err, errcap);
        if (st != CT_OK) return st;
        free(s->text);
        s->text = nt;
    }
    size_t len = strlen(s->text ? s->text : "");
    s->utt_text = malloc(len + 1);
    if (oom || !s->utt_text) return ct_errf(err, errcap, CT_ERR_NOMEM, "stream: out of memory");
    s->g.text = s->text;
    s->g.speaker = s->speaker;
    s->g.language = s->language;
    s->g.instruct = s->instruct;
    s->g.xvector = s->xvector;
    s->g.ref_codes = s->ref_codes;
    s->g.ref_text = s->ref_text;
    voice_key(s);
    if (s->p.text_incremental) { /* no utterances yet; every one in the streaming-text layout */
        s->g.non_streaming = 0;
        return ct_engine_text_first(s, q->text, err, errcap);
    }
    size_t max = s->p.utterance_bytes > 0 ? (size_t)s->p.utterance_bytes : len + 1;
    /* a sentence pause keeps every sentence its own utterance, so the pause falls between them */
    size_t (*split)(const char *, size_t, size_t, ct_span *, size_t) =
        s->p.sentence_pause_ms > 0 ? ct_split_sentences : ct_split_utterances;
    size_t ns = split(s->text, len, max, NULL, 0);
    s->utts = malloc(sizeof(ct_span) * (ns ? ns : 1));
    s->pauses = malloc(sizeof(ct_pause) * (ns ? ns : 1));
    if (!s->utts || !s->pauses) return ct_errf(err, errcap, CT_ERR_NOMEM, "stream: out of memory");
    ns = split(s->text, len, max, s->utts, ns);
    if (ns == 0) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream: the text is empty");
    if (ns > 100000) return ct_errf(err, errcap, CT_ERR_LIMIT, "stream: %zu utterances is over 100000", ns);
    s->n_utts = (int)ns;
    return CT_OK;
}

/* Reserves the output ring and the chunk timeline, and sets the expected frames of each
   utterance (docs/STREAMING.md 5): its bytes times CT_ENGINE_FRAMES_PER_BYTE, at most
   max_frames (when set) and max_context, at least 1; kept as suffix sums. */
static ct_status reserve_output(ct_stream *s, char *err, size_t errcap) {
    const ct_engine *e = s->e;
    s->est = malloc(sizeof(double) * (size_t)(s->n_utts + 2));
    if (!s->est) return ct_errf(err, errcap, CT_ERR_NOMEM, "stream: out of memory");
    s->est[s->n_utts] = s->est[s->n_utts + 1] = 0;
    if (s->incr) s->est[0] = 1; /* no utterance known yet (engine_text.c keeps it up to date) */
    for (int u = s->n_utts - 1; u >= 0; u--) {
        double f = (double)s->utts[u].len * CT_ENGINE_FRAMES_PER_BYTE;
        if (s->g.max_frames > 0 && f > s->g.max_frames) f = s->g.max_frames;
        if (f > e->p.max_context) f = e->p.max_context;
        s->est[u] = s->est[u + 1] + (f < 1 ? 1 : f);
    }
    int frames = (int)((double)e->p.buffer_ms / 80.0);
    if (frames < e->p.max_chunk_frames + 1) frames = e->p.max_chunk_frames + 1;
    s->units_per_frame = s->p.output == CT_OUTPUT_CODES ? 1 : e->spf;
    s->unit_bytes = s->p.output == CT_OUTPUT_CODES ? sizeof(int32_t) * (size_t)e->G : sizeof(float);
    s->ring_cap = (size_t)frames * (size_t)s->units_per_frame;
    s->ring = malloc(s->ring_cap * s->unit_bytes);
    s->tl_cap = (s->n_utts + s->incr) * (e->p.max_context + 2); /* each utterance's chunks and the pause before it */
    s->tl = malloc(sizeof(ct_chunk_rec) * (size_t)s->tl_cap);
    if (!s->ring || !s->tl) return ct_errf(err, errcap, CT_ERR_NOMEM, "stream: out of memory");
    return CT_OK;
}

/* Slots a queued request can take now: none while the head is held back, at most what the KV
   budget fits. Under e->mu. */
static int free_slots_locked(const ct_engine *e) {
    int free_slots = e->holding ? 0 : e->n_slots - e->n_active; /* a held-back head takes none */
    int kv_fit = (int)((e->kv_budget - e->kv_used) / e->kv_per_stream);
    return kv_fit < free_slots ? kv_fit : free_slots;
}

int ct_engine_full_locked(const ct_engine *e) {
    return e->wq_len >= e->p.queue_cap + free_slots_locked(e); /* those that get a free slot do not queue */
}

ct_status ct_engine_submit(ct_engine *e, const ct_gen_params *g, const ct_stream_params *sp, ct_stream **out,
                           char *err, size_t errcap) {
    if (out) *out = NULL;
    if (!e || !g || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: NULL argument");
    ct_stream_params p = ct_stream_params_default();
    if (sp && ct_params_take(&p, sizeof p, sp, sp->size, "ct_stream_params", err, errcap) != CT_OK)
        return CT_ERR_INVALID_ARG;
    if (p.output != CT_OUTPUT_PCM && p.output != CT_OUTPUT_CODES)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: output %d is not pcm (0) or codes (1)", p.output);
    if (p.output == CT_OUTPUT_PCM && !e->codec)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: this engine has no codec: only codes output");
    if (p.context_frames < 0 || p.context_frames > CT_ENGINE_MAX_WINDOW)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: context_frames %d is outside [0, %d]",
                       p.context_frames, CT_ENGINE_MAX_WINDOW);
    if (p.utterance_bytes != 0 && (p.utterance_bytes < 16 || p.utterance_bytes > 1000000))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: utterance_bytes %d is outside [16, 1000000] "
                       "(0 = no splitting)", p.utterance_bytes);
    if (p.sentence_pause_ms < 0 || p.sentence_pause_ms > 10000 || p.paragraph_pause_ms < 0 ||
        p.paragraph_pause_ms > 10000)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: %s %d is outside [0, 10000] ms",
                       p.sentence_pause_ms < 0 || p.sentence_pause_ms > 10000 ? "sentence_pause_ms" : "paragraph_pause_ms",
                       p.sentence_pause_ms < 0 || p.sentence_pause_ms > 10000 ? p.sentence_pause_ms : p.paragraph_pause_ms);
    if ((p.sentence_pause_ms > 0 || p.paragraph_pause_ms > 0) && (p.output != CT_OUTPUT_PCM || p.utterance_bytes == 0))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: pauses need PCM output and utterance splitting "
                       "(utterance_bytes > 0)%s", p.output != CT_OUTPUT_PCM ? ": codes output has no silence" : "");
    if (p.text_incremental != 0 && p.text_incremental != 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: text_incremental %d is not 0 or 1",
                       p.text_incremental);
    if (p.text_idle_timeout_ms < 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: text_idle_timeout_ms %d is negative (0 = none)",
                       p.text_idle_timeout_ms);
    if (p.text_incremental && (p.sentence_pause_ms > 0 || p.paragraph_pause_ms > 0))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: pauses are not available with incremental text");
    if (p.normalize != 0 && p.normalize != 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: normalize %d is not 0 or 1", p.normalize);
    if (p.text_incremental && p.normalize)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: normalize is not available with incremental text "
                       "(a number may be split between pieces)");
    if (p.deadline_ms < 0 || p.first_audio_timeout_ms < 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "submit: %s %d is negative (0 = none)",
                       p.deadline_ms < 0 ? "deadline_ms" : "first_audio_timeout_ms",
                       p.deadline_ms < 0 ? p.deadline_ms : p.first_audio_timeout_ms);
    ct_stream *s = calloc(1, sizeof *s);
    if (!s) return ct_errf(err, errcap, CT_ERR_NOMEM, "submit: out of memory");
    pthread_cond_init(&s->cv, NULL);
    s->e = e;
    s->p = p;
    s->p.schedule = NULL; /* parsed below, not kept */
    ct_status st = parse_schedule(e, &p, &s->sp, err, errcap);
    if (st == CT_OK) st = take_request(s, g, err, errcap);
    if (st == CT_OK) st = reserve_output(s, err, errcap);
    if (st != CT_OK) {
        stream_free(s);
        return st;
    }
    s->state = CT_STREAM_QUEUED;
    s->info.utterances = s->n_utts;
    s->info.queue_ms = s->info.first_frame_ms = s->info.ttfa_ms = s->info.done_ms = NAN;
    s->t_submit = s->t_text = ct_engine_now(e);
    s->refs = 2;
    pthread_mutex_lock(&e->mu);
    int free_slots = free_slots_locked(e);
    if (e->stop || e->ready < 0) {
        st = ct_errf(err, errcap, CT_ERR_STATE, "submit: the engine is %s", e->stop ? "stopping" : "not serving");
    } else if (ct_engine_full_locked(e)) {
        e->k.rejected++;
        st = ct_errf(err, errcap, CT_ERR_LIMIT, "submit: the queue (%d) is full and no stream can start now "
                     "(%d of %d slots busy%s)", e->p.queue_cap, e->n_active, e->n_slots,
                     e->holding ? ", admission held back by the compute rule or the throttle" : "");
    }
    if (st != CT_OK) {
        pthread_mutex_unlock(&e->mu);
        stream_free(s);
        return st;
    }
    if (e->wq_len >= free_slots) e->k.queued_total++;
    if (e->wq_tail) e->wq_tail->next = s;
    else e->wq_head = s;
    e->wq_tail = s;
    e->wq_len++;
    e->refs++;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    *out = s;
    return CT_OK;
}

/* ---- codec stage -------------------------------------------------------------------------- */

/* Decodes pend[0..n) of slot sl into sl->pcm (exact stateful or windowed). */
static ct_status decode(ct_engine *e, ct_slot *sl, int n, char *err, size_t errcap) {
    const ct_stream *s = sl->cst;
    if (!s->p.windowed) return ct_codec_stream_push(sl->cs, sl->pend, n, sl->pcm, err, errcap);
    ct_pool *pool = e->placement == CT_PLACEMENT_SERIAL ? e->pool : e->cpool;
    ct_status st = ct_codec_decode_window_pool(e->codec, pool, sl->hist, sl->n_hist, sl->pend, n, sl->pcm, err,
                                               errcap);
    int C = s->p.context_frames, G = e->G; /* history keeps the last C frames, oldest first */
    if (C > 0) {
        int keep = sl->n_hist + n > C ? C - n : sl->n_hist;
        if (keep < 0) keep = 0;
        memmove(sl->hist, sl->hist + (size_t)(sl->n_hist - keep) * G, sizeof(int32_t) * (size_t)keep * G);
        int add = n < C ? n : C;
        memcpy(sl->hist + (size_t)keep * G, sl->pend + (size_t)(n - add) * G, sizeof(int32_t) * (size_t)add * G);
        sl->n_hist = keep + add;
    }
    return st;
}

/* Appends n units of src to s's ring and records the chunk (e->mu held). */
static void release_locked(ct_engine *e, ct_slot *sl, ct_stream *s, const void *src, int frames, double busy_ms) {
    size_t n = (size_t)frames * (size_t)s->units_per_frame;
    const unsigned char *p = src;
    for (size_t k = 0; k < n;) {
        size_t at = (size_t)(s->tail % s->ring_cap), run = s->ring_cap - at;
        if (run > n - k) run = n - k;
        memcpy(s->ring + at * s->unit_bytes, p + k * s->unit_bytes, run * s->unit_bytes);
        s->tail += run;
        k += run;
    }
    s->inflight -= frames;
    double t = ct_engine_now(e) - s->t_submit;
    int samples = frames * e->spf;
    if (s->tl_n < s->tl_cap) s->tl[s->tl_n++] = (ct_chunk_rec){t, samples};
    if (s->info.chunks == 0) s->info.ttfa_ms = t;
    s->info.chunks++;
    s->info.samples += (uint64_t)samples;
    s->info.codec_ms += busy_ms;
    if (!s->internal) e->k.audio_s += (double)samples / e->rate;
    /* ring-buffer player from TTFA (stream/metrics): count the stalls this chunk added */
    double stall_ms = 0;
    int stalls = ct_underruns(s->tl, s->tl_n, e->rate, s->info.ttfa_ms, NULL, 0, &stall_ms);
    if (stalls > s->info.stalls && !s->internal) {
        e->k.underruns += (uint64_t)(stalls - s->info.stalls);
        e->k.underrun_ms += stall_ms - s->info.stall_ms;
    }
    if (stalls >= 0) {
        s->info.stalls = stalls;
        s->info.stall_ms = stall_ms;
    }
    pthread_cond_broadcast(&s->cv);
}

/* Releases the first n pending frames of sl once decoded into sl->pcm (st: the decode's status,
   err its message; busy_ms: the decode time charged to the stream); 0 = go on, -1 = the stream
   failed. */
static int emit_done(ct_engine *e, ct_slot *sl, int n, ct_status st, const char *err, double busy_ms) {
    pthread_mutex_lock(&e->mu);
    ct_stream *s = sl->cst;
    if (st != CT_OK) {
        char msg[480];
        snprintf(msg, sizeof msg, "codec: %s", err);
        ct_stream_fail_locked(s, st, msg);
    } else if (s->state != CT_STREAM_FAILED) {
        release_locked(e, sl, s, sl->pcm, n, busy_ms);
    }
    pthread_mutex_unlock(&e->mu);
    sl->npend -= n;
    memmove(sl->pend, sl->pend + (size_t)n * e->G, sizeof(int32_t) * (size_t)sl->npend * e->G);
    return st == CT_OK ? 0 : -1;
}

/* Decodes the first n pending frames of sl alone and releases them; 0 / -1 as emit_done. */
static int emit_one(ct_engine *e, ct_slot *sl, int n) {
    char err[400] = "";
    double t0 = ct_now_ms();
    ct_status st = decode(e, sl, n, err, sizeof err);
    double dt = ct_now_ms() - t0;
    ct_stats_add("codec.push_ms", dt);
    return emit_done(e, sl, n, st, err, dt);
}

/* Decodes the first k[i] pending frames of each slot sl[i] (i < nb, distinct slots) and
   releases them: the exact decoders' chunks in one ct_codec_stream_push_batch (the codec's
   weights read once for all of them; each stream's PCM as its own push would give), windowed
   ones alone. The batch's time is charged to its streams in proportion to their frames. A
   batch the codec refuses (a code out of range: nothing decoded) is decoded stream by stream,
   so only the stream at fault fails. res[i]: 0 / -1 as emit_done. */
static void emit_batch(ct_engine *e, ct_slot *const *sl, const int *k, int nb, int *res) {
    ct_codec_stream *cs[CT_ENGINE_MAX_STREAMS];
    const int32_t *cc[CT_ENGINE_MAX_STREAMS];
    float *cp[CT_ENGINE_MAX_STREAMS];
    int cn[CT_ENGINE_MAX_STREAMS], ci[CT_ENGINE_MAX_STREAMS], ne = 0, frames = 0;
    for (int i = 0; i < nb; i++) {
        if (sl[i]->cst->p.windowed) {
            res[i] = emit_one(e, sl[i], k[i]);
            continue;
        }
        cs[ne] = sl[i]->cs, cc[ne] = sl[i]->pend, cn[ne] = k[i], cp[ne] = sl[i]->pcm, ci[ne] = i;
        frames += k[i];
        ne++;
    }
    if (ne == 0) return;
    char err[400] = "";
    double t0 = ct_now_ms();
    ct_status st = ct_codec_stream_push_batch(cs, ne, cc, cn, cp, err, sizeof err);
    double dt = ct_now_ms() - t0;
    if (st != CT_OK) {
        for (int j = 0; j < ne; j++) res[ci[j]] = emit_one(e, sl[ci[j]], cn[j]);
        return;
    }
    ct_stats_add("codec.push_ms", dt);
    if (ne > 1) ct_stats_add("codec.batch_push_ms", dt);
    for (int j = 0; j < ne; j++) res[ci[j]] = emit_done(e, sl[ci[j]], cn[j], CT_OK, "", dt * cn[j] / frames);
}

/* Ships every chunk the schedules of slots sl[0..n) say is due (several after a burst; a flush
   larger than the decoder's chunk capacity in pieces), round by round: each round decodes the
   next chunk of every slot that has one in one emit_batch. */
static void ship(ct_engine *e, ct_slot *const *sl, int n, int finished) {
    ct_slot *bs[CT_ENGINE_MAX_STREAMS];
    int bk[CT_ENGINE_MAX_STREAMS], res[CT_ENGINE_MAX_STREAMS];
    for (int i = 0; i < n; i++) {
        ct_sched_obs *o = &sl[i]->obs;
        memset(o, 0, sizeof *o);
        o->frames_total = sl[i]->produced;
        o->finished = finished;
        o->active_streams = atomic_load(&e->active_snapshot);
        o->now_ms = ct_engine_now(e) - sl[i]->cst->t_submit;
        sl[i]->rem = 0;
        sl[i]->shipping = 1; /* 1 shipping, 0 done, -1 the schedule rejected the count, -2 failed */
    }
    for (;;) {
        int nb = 0;
        for (int i = 0; i < n; i++) {
            ct_slot *s = sl[i];
            if (s->shipping != 1) continue;
            if (s->rem == 0) {
                double t_sc = CT_STATS_T0();
                int c = ct_sched_next_chunk(&s->sched, &s->obs);
                CT_STATS_ADD_SINCE("sched.next_chunk_ms", t_sc);
                if (c <= 0) {
                    s->shipping = c < 0 ? -1 : 0;
                    continue;
                }
                s->rem = c;
            }
            bs[nb] = s;
            bk[nb] = s->rem < e->p.max_chunk_frames ? s->rem : e->p.max_chunk_frames;
            nb++;
        }
        if (nb == 0) break;
        emit_batch(e, bs, bk, nb, res);
        for (int j = 0; j < nb; j++) {
            bs[j]->rem -= bk[j];
            if (res[j] != 0) bs[j]->shipping = -2;
        }
    }
    for (int i = 0; i < n; i++) {
        if (sl[i]->shipping == -2) continue; /* failed: its stream is over */
        pthread_mutex_lock(&e->mu);
        if (sl[i]->shipping < 0) ct_stream_fail_locked(sl[i]->cst, CT_ERR_INTERNAL, "chunk schedule rejected the frame count");
        int need = sl[i]->sched.target - sl[i]->npend;
        sl[i]->cst->need = need > 1 ? need : 1;
        pthread_mutex_unlock(&e->mu);
    }
}

/* Ships the due chunks of every slot that received frames since its last shipping, together. */
static void flush(ct_engine *e) {
    ct_slot *d[CT_ENGINE_MAX_STREAMS];
    int n = 0;
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].dirty) {
            e->slots[i].dirty = 0;
            d[n++] = &e->slots[i];
        }
    if (n) ship(e, d, n, 0);
}

/* The stream's generation ended and its output is out: DONE (unless failed), counters. */
static void finish_locked(ct_engine *e, ct_stream *s) {
    if (s->cancel) ct_stream_fail_locked(s, CT_ERR_ABORTED, "cancelled");
    if (s->state != CT_STREAM_FAILED) {
        s->state = CT_STREAM_DONE;
        s->info.done_ms = ct_engine_now(e) - s->t_submit;
        if (!s->internal) e->k.completed++;
        pthread_cond_broadcast(&s->cv);
    }
    if (s->internal) { /* warm-up decides readiness */
        e->ready = s->state == CT_STREAM_DONE ? 1 : -1;
        if (e->ready < 0) snprintf(e->ready_err, sizeof e->ready_err, "warm-up failed: %s", s->err);
        pthread_cond_broadcast(&e->cv);
    }
}

/* ICL: the decoder state after reference codes `key` into sl's decoder when kept. 1 = done. */
static int prime_lookup(ct_engine *e, ct_slot *sl, const uint8_t key[32]) {
    for (int i = 0; i < CT_ENGINE_PRIME_STATES; i++)
        if (e->prime[i].used && !memcmp(e->prime[i].key, key, 32)) {
            ct_codec_stream_state_load(sl->cs, e->prime[i].state, e->prime[i].pos);
            e->prime[i].used = ++e->prime_tick;
            return 1;
        }
    return 0;
}

/* Keeps sl's decoder state (just primed with reference codes `key`) in an empty entry or the
   least recently used one. Without memory for it nothing is kept (the next request primes). */
static void prime_keep(ct_engine *e, ct_slot *sl, const uint8_t key[32]) {
    int v = 0;
    for (int i = 1; i < CT_ENGINE_PRIME_STATES; i++)
        if (e->prime[i].used < e->prime[v].used) v = i;
    if (!e->prime[v].state) {
        e->prime_floats = ct_codec_stream_state_floats(sl->cs);
        if (!(e->prime[v].state = malloc(e->prime_floats * sizeof(float)))) return;
    }
    ct_codec_stream_state_save(sl->cs, e->prime[v].state, &e->prime[v].pos);
    memcpy(e->prime[v].key, key, 32);
    e->prime[v].used = ++e->prime_tick;
}

/* ICL: primes the slot's decoder with the stream's reference frames, dropping their samples, so
   the utterance's audio is that of decoding reference + new frames with the reference part cut
   (MODEL.md 6.3). Exact: the frames go through the stateful decoder in pieces of the slot's
   chunk capacity (into its scratch); windowed: the last context_frames of them become the left
   context. 0 = done, -1 = the stream failed. */
static int prime(ct_engine *e, ct_slot *sl, const ct_stream *s) {
    const int F = s->g.ref_frames, G = e->G;
    if (s->p.windowed) {
        int k = F < s->p.context_frames ? F : s->p.context_frames;
        memcpy(sl->hist, s->ref_codes + (size_t)(F - k) * G, sizeof(int32_t) * (size_t)k * G);
        sl->n_hist = k;
        return 0;
    }
    uint8_t key[32];
    ct_sha256_ctx h;
    ct_sha256_init(&h);
    ct_sha256_update(&h, s->ref_codes, sizeof(int32_t) * (size_t)F * (size_t)G);
    ct_sha256_final(&h, key);
    int hit = prime_lookup(e, sl, key);
    pthread_mutex_lock(&e->mu);
    e->k.icl_primes++;
    e->k.icl_prime_reuses += (uint64_t)hit;
    pthread_mutex_unlock(&e->mu);
    if (hit) return 0;
    char err[400];
    for (int f = 0; f < F;) {
        int k = F - f < e->p.max_chunk_frames ? F - f : e->p.max_chunk_frames;
        ct_status st = ct_codec_stream_push(sl->cs, s->ref_codes + (size_t)f * G, k, sl->pcm, err, sizeof err);
        if (st != CT_OK) {
            char msg[480];
            snprintf(msg, sizeof msg, "codec: reference frames: %s", err);
            pthread_mutex_lock(&e->mu);
            ct_stream_fail_locked(sl->cst, st, msg);
            pthread_mutex_unlock(&e->mu);
            return -1;
        }
        f += k;
    }
    prime_keep(e, sl, key);
    return 0;
}

/* Utterance u (> 0) begins: the pause before it (sentence or paragraph) is recorded at the
   ring's tail, after everything of utterance u - 1, and counted as released audio. */
static void pause_before(ct_engine *e, ct_stream *s, int u) {
    if (s->incr || u < 1 || u >= s->n_utts) return; /* incremental text has no pauses */
    int ms = s->utts[u].para ? s->p.paragraph_pause_ms : s->p.sentence_pause_ms;
    size_t n = (size_t)((int64_t)ms * e->rate / 1000);
    if (!n) return;
    pthread_mutex_lock(&e->mu);
    s->pauses[s->n_pauses++] = (ct_pause){s->tail, n};
    if (s->tl_n < s->tl_cap) s->tl[s->tl_n++] = (ct_chunk_rec){ct_engine_now(e) - s->t_submit, (int)n};
    s->info.samples += n;
    if (!s->internal) e->k.audio_s += (double)n / e->rate;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&e->mu);
}

void ct_engine_take(ct_engine *e, const ct_rec *r) {
    ct_slot *sl = &e->slots[r->slot];
    ct_stream *s = r->st;
    pthread_mutex_lock(&e->mu);
    int failed = s->state == CT_STREAM_FAILED;
    pthread_mutex_unlock(&e->mu);
    if (r->kind != CT_REC_FRAME) flush(e); /* the frames before it go out first */
    switch (r->kind) {
    case CT_REC_START:
        if (!failed && s->p.output == CT_OUTPUT_PCM) pause_before(e, s, s->starts);
        s->starts++;
        sl->cst = s;
        sl->npend = sl->produced = sl->n_hist = 0;
        ct_codec_stream_reset(sl->cs);
        ct_sched_init(&sl->sched, &s->sp, NULL, 0); /* checked at submit */
        if (!failed && s->p.output == CT_OUTPUT_PCM && s->g.ref_frames > 0) prime(e, sl, s);
        return;
    case CT_REC_FRAME:
        if (!failed && s->p.output == CT_OUTPUT_CODES) {
            pthread_mutex_lock(&e->mu);
            release_locked(e, sl, s, r->codes, 1, 0.0);
            pthread_mutex_unlock(&e->mu);
        } else if (!failed) {
            ct_stats_add("hop.enqueue_to_dequeue_ms", ct_now_ms() - r->t);
            memcpy(sl->pend + (size_t)sl->npend * e->G, r->codes, sizeof(int32_t) * (size_t)e->G);
            sl->npend++;
            sl->produced++;
            sl->dirty = 1;
        }
        if (r->step_end) flush(e); /* the step's streams' due chunks, decoded together */
        return;
    case CT_REC_END:
        if (!failed && s->p.output == CT_OUTPUT_PCM && sl->cst == s) ship(e, &sl, 1, 1);
        if (!r->last) return;
        pthread_mutex_lock(&e->mu);
        finish_locked(e, s);
        int gone = ct_stream_unref_locked(s); /* the engine's reference */
        pthread_mutex_unlock(&e->mu);
        (void)gone; /* the engine handle holds a reference while its threads run */
        return;
    }
}

/* ---- reader side ------------------------------------------------------------------------- */

static int ended(const ct_stream *s) { return s->state == CT_STREAM_DONE || s->state == CT_STREAM_FAILED; }

/* Waits on s->cv until ready(s) or the timeout (ms, < 0 = none); e->mu held. */
static void wait_for(ct_stream *s, int (*ready)(const ct_stream *), int timeout_ms) {
    struct timespec ts;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += timeout_ms / 1000;
        ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    }
    while (!ready(s)) {
        if (timeout_ms < 0) pthread_cond_wait(&s->cv, &s->e->mu);
        else if (pthread_cond_timedwait(&s->cv, &s->e->mu, &ts) != 0) break;
    }
}

static int started(const ct_stream *s) { return s->state >= CT_STREAM_RUNNING; }
/* A pause is due at the reader's position. */
static int pause_due(const ct_stream *s) { return s->pause_rd < s->n_pauses && s->pauses[s->pause_rd].at == s->head; }
static int readable(const ct_stream *s) { return s->head < s->tail || pause_due(s) || ended(s); }

ct_stream_state ct_stream_wait_started(ct_stream *s, int timeout_ms) {
    if (!s) return CT_STREAM_FAILED;
    pthread_mutex_lock(&s->e->mu);
    wait_for(s, started, timeout_ms);
    ct_stream_state st = s->state;
    pthread_mutex_unlock(&s->e->mu);
    return st;
}

/* Copies up to cap units out of the ring. */
static size_t read_units(ct_stream *s, void *dst, size_t cap, int timeout_ms, int *finished, int want_codes) {
    if (finished) *finished = 0;
    if (!s || !dst) {
        if (finished) *finished = 1;
        return 0;
    }
    ct_engine *e = s->e;
    pthread_mutex_lock(&e->mu);
    size_t n = 0;
    if ((s->p.output == CT_OUTPUT_CODES) == want_codes) {
        wait_for(s, readable, timeout_ms);
        unsigned char *d = dst;
        while (n < cap) {
            if (pause_due(s)) { /* silence between utterances: zeros, no ring space */
                ct_pause *pz = &s->pauses[s->pause_rd];
                size_t k = pz->left < cap - n ? pz->left : cap - n;
                memset(d + n * s->unit_bytes, 0, k * s->unit_bytes);
                n += k;
                if ((pz->left -= k) == 0) s->pause_rd++;
                continue;
            }
            uint64_t lim = s->pause_rd < s->n_pauses ? s->pauses[s->pause_rd].at : s->tail;
            size_t run = (size_t)(lim - s->head), at = (size_t)(s->head % s->ring_cap);
            if (run == 0) break;
            if (run > s->ring_cap - at) run = s->ring_cap - at;
            if (run > cap - n) run = cap - n;
            memcpy(d + n * s->unit_bytes, s->ring + at * s->unit_bytes, run * s->unit_bytes);
            s->head += run;
            n += run;
        }
        if (n) pthread_cond_signal(&e->cv); /* room for a paused stream */
    }
    int rest = s->head < s->tail || (s->pause_rd < s->n_pauses && s->state != CT_STREAM_FAILED);
    if (finished) *finished = (ended(s) && !rest) || (s->p.output == CT_OUTPUT_CODES) != want_codes;
    pthread_mutex_unlock(&e->mu);
    return n;
}

size_t ct_stream_read(ct_stream *s, float *pcm, size_t cap, int timeout_ms, int *finished) {
    return read_units(s, pcm, cap, timeout_ms, finished, 0);
}

size_t ct_stream_read_codes(ct_stream *s, int32_t *codes, size_t max_frames, int timeout_ms, int *finished) {
    return read_units(s, codes, max_frames, timeout_ms, finished, 1);
}

void ct_stream_cancel(ct_stream *s) {
    if (!s) return;
    pthread_mutex_lock(&s->e->mu);
    if (!ended(s)) {
        s->cancel = 1;
        pthread_cond_signal(&s->e->cv);
    }
    pthread_mutex_unlock(&s->e->mu);
}

void ct_stream_release(ct_stream *s) {
    if (!s) return;
    ct_engine *e = s->e;
    pthread_mutex_lock(&e->mu);
    if (!ended(s)) {
        s->cancel = 1;
        pthread_cond_signal(&e->cv);
    }
    int last = ct_stream_unref_locked(s);
    pthread_mutex_unlock(&e->mu);
    if (last) ct_engine_core_free(e);
}

ct_stream_info ct_stream_get_info(ct_stream *s) {
    ct_stream_info i;
    memset(&i, 0, sizeof i);
    if (!s) {
        i.state = CT_STREAM_FAILED;
        i.status = CT_ERR_INVALID_ARG;
        return i;
    }
    pthread_mutex_lock(&s->e->mu);
    i = s->info;
    i.state = s->state;
    i.status = s->status;
    pthread_mutex_unlock(&s->e->mu);
    return i;
}

const char *ct_stream_errmsg(ct_stream *s) { return s ? s->err : "no stream"; }

int ct_stream_timeline(ct_stream *s, double *t_ms, int *samples, int cap) {
    if (!s) return 0;
    pthread_mutex_lock(&s->e->mu);
    int n = s->tl_n;
    for (int i = 0; i < n && i < cap; i++) {
        if (t_ms) t_ms[i] = s->tl[i].t_ms;
        if (samples) samples[i] = s->tl[i].samples;
    }
    pthread_mutex_unlock(&s->e->mu);
    return n;
}
