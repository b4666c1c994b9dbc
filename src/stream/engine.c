/* The stream engine: slots reserved up front, admission without preemption under a KV budget,
   the compute rule and the playback-slack prefill throttle, request deadlines, and the
   scheduler loop — the project's only frame loop. Each pass: reap cancelled and timed-out
   streams, run one due prefill (a newcomer or a stream's next utterance), then one batched
   step over every stream that has room for its output: the code predictor half, the frames
   handed to the codec stage, the talker half. The codec stage
   (engine_stream.c) runs inline (serial placement) or on its own thread behind a bounded frame
   queue (overlapped). docs/STREAMING.md 4-5. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/params.h"
#include "core/stepstats.h"
#include "stream/engine_internal.h"

const char *ct_placement_str(int placement) {
    switch (placement) {
    case CT_PLACEMENT_OVERLAPPED: return "overlapped";
    case CT_PLACEMENT_SERIAL: return "serial";
    case CT_PLACEMENT_AUTO: return "auto";
    }
    return "?";
}

ct_status ct_placement_parse(const char *name, int *placement) {
    if (!name || !placement) return CT_ERR_INVALID_ARG;
    for (int m = CT_PLACEMENT_OVERLAPPED; m <= CT_PLACEMENT_AUTO; m++)
        if (strcmp(name, ct_placement_str(m)) == 0) {
            *placement = m;
            return CT_OK;
        }
    return CT_ERR_INVALID_ARG;
}

ct_engine_params ct_engine_params_default(void) {
    ct_engine_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.max_streams = 1;
    p.queue_cap = 8;
    p.max_context = 2048;
    p.placement = CT_PLACEMENT_AUTO;
    p.codec_threads = 1;
    p.queue_frames = 64;
    p.max_chunk_frames = 64;
    p.safety_margin_ms = 120;
    p.max_defer_ms = 5000;
    p.buffer_ms = 10000;
    p.prompt_cache_bytes = 16u << 20;
    return p;
}

static void pin(const int *cpus, int n) {
    if (!cpus || n <= 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++)
        if (cpus[i] >= 0 && cpus[i] < CPU_SETSIZE) CPU_SET(cpus[i], &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* CPUs the engine may use: the union of both pinning lists when both stages are pinned, the
   process's CPU set when neither is; 0 when only one is (auto then stays overlapped). */
static int usable_cpus(const ct_engine_params *p) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if ((p->n_talker_cpus > 0) != (p->n_codec_cpus > 0)) return 0;
    if (p->n_talker_cpus > 0) {
        for (int i = 0; i < p->n_talker_cpus; i++)
            if (p->talker_cpus[i] >= 0 && p->talker_cpus[i] < CPU_SETSIZE) CPU_SET(p->talker_cpus[i], &set);
        for (int i = 0; i < p->n_codec_cpus; i++)
            if (p->codec_cpus[i] >= 0 && p->codec_cpus[i] < CPU_SETSIZE) CPU_SET(p->codec_cpus[i], &set);
    } else if (sched_getaffinity(0, sizeof set, &set) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int)n : 1;
    }
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

/* Resolves the placement and the thread counts (docs/STREAMING.md 4); the serial pool under
   auto runs on both stages' CPUs (talker's first, then the codec's others). */
static ct_status resolve_placement(ct_engine *e, char *err, size_t errcap) {
    ct_engine_params pinned = e->p; /* the owned CPU lists */
    pinned.talker_cpus = e->tcpus;
    pinned.n_talker_cpus = e->n_tcpus;
    pinned.codec_cpus = e->ccpus;
    pinned.n_codec_cpus = e->n_ccpus;
    const ct_engine_params *p = &pinned;
    int ncpu = usable_cpus(p), any = ncpu > 0 ? ncpu : usable_cpus(&(ct_engine_params){0});
    e->placement = p->placement == CT_PLACEMENT_SERIAL ? CT_PLACEMENT_SERIAL : CT_PLACEMENT_OVERLAPPED;
    e->codec_threads = p->codec_threads > 0 ? p->codec_threads : 1;
    e->talker_threads = p->talker_threads > 0 ? p->talker_threads : e->placement == CT_PLACEMENT_SERIAL ? any
                                                                   : any > 1 ? any - 1 : 1;
    if (p->placement == CT_PLACEMENT_AUTO && ncpu > 0 && ncpu <= 2) {
        e->placement = CT_PLACEMENT_SERIAL;
        int want = (p->talker_threads > 0 ? p->talker_threads : ncpu) + e->codec_threads;
        e->talker_threads = want < ncpu ? want : ncpu;
        if (e->n_ccpus) {
            int *u = realloc(e->tcpus, sizeof(int) * (size_t)(e->n_tcpus + e->n_ccpus));
            if (!u) return ct_errf(err, errcap, CT_ERR_NOMEM, "engine: out of memory");
            e->tcpus = u;
            for (int i = 0; i < e->n_ccpus; i++) {
                int dup = 0;
                for (int j = 0; j < e->n_tcpus && !dup; j++) dup = u[j] == e->ccpus[i];
                if (!dup) u[e->n_tcpus++] = e->ccpus[i];
            }
        }
    }
    if (e->talker_threads > 256 || e->codec_threads > 256)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: talker_threads %d or codec_threads %d is over 256",
                       e->talker_threads, e->codec_threads);
    return CT_OK;
}

/* ---- the clock ------------------------------------------------------------------------------- */

double ct_engine_now(const ct_engine *e) {
    if (atomic_load(&e->vclock_on)) return (double)atomic_load(&e->vclock_us) / 1e3;
    return ct_now_ms();
}

void (*ct_engine_test_after_pump)(ct_engine *e);

void ct_engine_test_clock(ct_engine *e, double step_fixed_ms, double step_per_stream_ms, double prefill_ms) {
    pthread_mutex_lock(&e->mu);
    e->v_fixed = step_fixed_ms;
    e->v_per_stream = step_per_stream_ms;
    e->v_prefill = prefill_ms;
    pthread_mutex_unlock(&e->mu);
    atomic_store(&e->vclock_us, 0);
    atomic_store(&e->vclock_on, 1);
}

/* Under the test clock: spends ms of virtual time (the work just done took that long). */
static void vclock_spend(ct_engine *e, double ms) {
    if (atomic_load(&e->vclock_on)) atomic_fetch_add(&e->vclock_us, (long long)llround(ms * 1e3));
}

/* ---- hand-off between the stages --------------------------------------------------------- */

/* Hands a record to the codec stage: inline (serial) or through the bounded queue. */
static void hand(ct_engine *e, ct_rec *r) {
    double t0 = ct_now_ms();
    r->t = t0;
    if (e->placement == CT_PLACEMENT_SERIAL) {
        ct_engine_take(e, r);
    } else {
        pthread_mutex_lock(&e->mu);
        double tw = CT_STATS_T0();
        while (e->q_n == e->q_cap) pthread_cond_wait(&e->cv_q_space, &e->mu);
        CT_STATS_ADD_SINCE("hop.queue_full_wait_ms", tw);
        e->q[(e->q_head + e->q_n) % e->q_cap] = *r;
        e->q_n++;
        pthread_cond_signal(&e->cv_q_data);
        pthread_mutex_unlock(&e->mu);
    }
    if (r->kind == CT_REC_FRAME) ct_stats_add("hop.frame_handoff_ms", ct_now_ms() - t0);
}

static void *codec_main(void *arg) {
    ct_engine *e = arg;
    pin(e->ccpus, e->n_ccpus);
    ct_stats_thread_role("codec");
    pthread_mutex_lock(&e->mu);
    for (;;) {
        double tw = CT_STATS_T0();
        while (e->q_n == 0 && !e->codec_stop) pthread_cond_wait(&e->cv_q_data, &e->mu);
        CT_STATS_ADD_SINCE("hop.wait_for_frames_ms", tw);
        if (e->q_n == 0) break;
        ct_rec r = e->q[e->q_head];
        e->q_head = (e->q_head + 1) % e->q_cap;
        e->q_n--;
        pthread_cond_signal(&e->cv_q_space);
        pthread_mutex_unlock(&e->mu);
        ct_engine_take(e, &r);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- slots ---------------------------------------------------------------------------------- */

static void ewma(double *acc, double v) { *acc = *acc > 0 ? 0.7 * *acc + 0.3 * v : v; }

/* The slot's stream leaves it (e->mu held): its KV and slot are free for the next admission. */
static void slot_clear_locked(ct_engine *e, ct_slot *sl) {
    if (!sl->st) return;
    sl->st = NULL;
    sl->prefilling = 0; /* a prefill cut short: the session's next begin drops it */
    e->kv_used -= e->kv_per_stream;
    e->n_active--;
    atomic_store(&e->active_snapshot, e->n_active);
}

/* Ends slot sl's stream from the step stage: the slot is freed now and the codec stage gets
   the closing record (which drops the engine's reference once the output is out). */
static void slot_end(ct_engine *e, ct_slot *sl) {
    pthread_mutex_lock(&e->mu);
    ct_stream *s = sl->st;
    s->info.stop = ct_session_stop_reason(sl->sess);
    slot_clear_locked(e, sl);
    pthread_mutex_unlock(&e->mu);
    ct_rec r = {.kind = CT_REC_END, .slot = sl->idx, .last = 1, .st = s};
    hand(e, &r);
}

/* An utterance of sl's stream ended: the next one's prefill is due, or the stream ends. */
static void utterance_end(ct_engine *e, ct_slot *sl) {
    ct_stream *s = sl->st;
    if (ct_session_stop_reason(sl->sess) == CT_STOP_ABORTED) {
        pthread_mutex_lock(&e->mu);
        ct_stream_fail_locked(s, CT_ERR_INTERNAL, ct_session_errmsg(sl->sess));
        pthread_mutex_unlock(&e->mu);
        slot_end(e, sl);
        return;
    }
    if (ct_engine_text_last_utt(sl)) {
        slot_end(e, sl);
        return;
    }
    ct_rec r = {.kind = CT_REC_END, .slot = sl->idx, .last = 0, .st = s};
    hand(e, &r);
    pthread_mutex_lock(&e->mu);
    sl->utt++;
    sl->prefill_due = 1;
    s->pump = s->incr; /* the next utterance's tokens */
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* The next piece of slot sl's prefill for its current utterance (no lock held): the first call
   begins it (ct_session_begin) and runs its first pass; each later call one more pass
   (prefill_chunk_tokens positions), so the other streams' decode steps run between them; the
   call that runs the last pass finishes it. */
static void prefill(ct_engine *e, ct_slot *sl) {
    ct_stream *s = sl->st;
    double t0 = ct_engine_now(e);
    ct_status st = CT_OK;
    if (!sl->prefilling) {
        ct_gen_params g = s->g;
        if (!s->incr) {
            const ct_span *u = &s->utts[sl->utt];
            memcpy(s->utt_text, s->text + u->off, u->len);
            s->utt_text[u->len] = 0;
            g.text = s->utt_text;
        }
        g.seed = s->g.seed + (uint64_t)sl->utt; /* each utterance its own reproducible stream */
        if (s->incr) { /* the tokens taken so far (engine_text.c); the rest follows as it comes */
            st = ct_session_begin(sl->sess, &g, s->tok, s->n_tok, !s->tok_final);
            s->tok_given = s->n_tok;
            s->tok_closed = s->tok_final;
        } else {
            st = ct_session_begin(sl->sess, &g, NULL, 0, 0);
        }
        sl->prefilling = st == CT_OK;
        sl->prefill_ms = 0;
    }
    const int left = st == CT_OK ? ct_session_prefill_pass(sl->sess) : 0;
    if (st == CT_OK && !left) {
        st = ct_session_finish(sl->sess);
        sl->prefilling = 0;
    }
    vclock_spend(e, e->v_prefill); /* the virtual clock: per pass */
    double dt = ct_engine_now(e) - t0;
    CT_STATS_ADD_SINCE("engine.prefill_ms", t0);
    sl->prefill_ms += dt;
    if (sl->prefilling) { /* passes left */
        pthread_mutex_lock(&e->mu);
        ewma(&e->pass_ms, dt);
        s->info.prefill_ms += dt;
        pthread_mutex_unlock(&e->mu);
        return;
    }
    ct_run_info ri = ct_session_run_info(sl->sess);
    if (st == CT_OK) {
        ct_rec r = {.kind = CT_REC_START, .slot = sl->idx, .st = s};
        hand(e, &r);
    }
    pthread_mutex_lock(&e->mu);
    ewma(&e->pass_ms, dt);
    ewma(&e->k.prefill_ms, sl->prefill_ms);
    s->info.prefill_ms += dt;
    s->info.prefill_passes += sl->sess->prefill_passes;
    s->info.utterance = sl->utt;
    sl->prefill_due = 0;
    sl->utt_frames = 0;
    if (st != CT_OK) {
        char msg[600];
        if (s->n_utts > 1 || s->incr) snprintf(msg, sizeof msg, "utterance %d: %s", sl->utt + 1, ct_session_errmsg(sl->sess));
        else snprintf(msg, sizeof msg, "%s", ct_session_errmsg(sl->sess));
        ct_stream_fail_locked(s, st, msg);
    } else {
        s->info.text_tokens += ri.text_tokens;
        s->info.prompt_len += ri.prompt_len;
        e->k.prompt_positions += (uint64_t)ri.prompt_len;
        e->k.prompt_reused += (uint64_t)ri.prompt_reused;
        e->k.prompt_shared += (uint64_t)sl->sess->prompt_shared;
        e->k.prompt_cached += (uint64_t)sl->sess->prompt_cached;
        s->info.prompt_reused += ri.prompt_reused;
        sl->frames_left = ri.frame_limit;
        if (s->state == CT_STREAM_PREFILL) s->state = CT_STREAM_RUNNING;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (st != CT_OK) slot_end(e, sl);
    else if (ct_session_stop_reason(sl->sess) != CT_STOP_NONE) utterance_end(e, sl); /* EOS as the first code */
}

/* One batched step over act[n]: predictor half, hand-off, talker half. A session whose talker
   logits go non-finite stops ABORTED alone (utterance_end fails its stream). */
/* Sessions of act[n] whose talker half is due (incremental text: the frames whose overlay token
   has come) into e->bs, the others NULL (skipped by the batch calls). */
static int due_advances(ct_engine *e, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        ct_session *s = e->act[i]->sess;
        int due = s->advance_pending && !ct_session_text_wait(s);
        e->bs[i] = due ? s : NULL;
        k += due;
    }
    return k;
}

static void step(ct_engine *e, int n) {
    const int G = e->G;
    /* incremental text: a frame whose codes went out while its token had not come gets its
       talker half first (the codes of a frame never wait for text) */
    if (due_advances(e, n)) ct_batch_advance(e->batch, e->bs, n);
    for (int i = 0; i < n; i++) e->bs[i] = e->act[i]->sess;
    double t0 = ct_engine_now(e);
    ct_status st = ct_batch_codes(e->batch, e->bs, n, e->bcodes, e->bgot);
    vclock_spend(e, e->v_fixed + e->v_per_stream * n); /* the test clock: the whole step here */
    double t1 = ct_engine_now(e);
    if (st != CT_OK) { /* an invariant broke: nothing was computed */
        pthread_mutex_lock(&e->mu);
        for (int i = 0; i < n; i++) ct_stream_fail_locked(e->act[i]->st, st, ct_batch_errmsg(e->batch));
        pthread_mutex_unlock(&e->mu);
        for (int i = 0; i < n; i++) slot_end(e, e->act[i]);
        return;
    }
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < n; i++) {
        if (!e->bgot[i]) continue;
        ct_slot *sl = e->act[i];
        sl->st->inflight++;
        sl->frames_left--;
        sl->utt_frames++;
        if (sl->st->info.frames++ == 0) sl->st->info.first_frame_ms = t1 - sl->st->t_submit;
    }
    pthread_mutex_unlock(&e->mu);
    int last = -1;
    for (int i = 0; i < n; i++)
        if (e->bgot[i]) last = i;
    for (int i = 0; i < n; i++) {
        if (!e->bgot[i]) continue;
        ct_rec r = {.kind = CT_REC_FRAME, .slot = e->act[i]->idx, .st = e->act[i]->st, .step_end = i == last};
        memcpy(r.codes, e->bcodes + (size_t)i * G, sizeof(int32_t) * (size_t)G);
        hand(e, &r);
    }
    double t2 = ct_engine_now(e);
    due_advances(e, n); /* a frame whose overlay token has not come waits for it */
    ct_batch_advance(e->batch, e->bs, n);
    double t3 = ct_engine_now(e);
    double busy = (t1 - t0) + (t3 - t2);
    ct_stats_add("engine.step_ms", busy);
    pthread_mutex_lock(&e->mu);
    e->k.steps++;
    ewma(&e->k.step_ms, busy);
    for (int i = 0; i < n; i++) {
        ct_stream *s = e->act[i]->st;
        s->info.step_ms += busy;
        s->info.predictor_ms += t1 - t0;
        s->info.talker_ms += t3 - t2;
    }
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < n; i++)
        if (ct_session_stop_reason(e->act[i]->sess) != CT_STOP_NONE) utterance_end(e, e->act[i]);
}

/* ---- the scheduler loop ------------------------------------------------------------------- */

/* Slack minus next-chunk ETA of the most endangered running stream (ms); +inf when none. The
   ETA: the frames its next chunk needs, each a step and at most one pass of the newcomer's
   prefill before it, and the whole prefill at most. */
static double worst_margin_locked(ct_engine *e, double now) {
    double worst = INFINITY;
    for (int i = 0; i < e->n_slots; i++) {
        ct_slot *sl = &e->slots[i];
        ct_stream *s = sl->st;
        if (!s || s->state != CT_STREAM_RUNNING) continue;
        double slack = s->tl_n ? ct_playback_slack_ms(s->tl, s->tl_n, e->rate, now - s->t_submit, NAN) : 0.0;
        /* the newcomer's prefill holds it up at most once per pass, before each of its steps */
        const int need = s->need > 0 ? s->need : 1;
        double eta = fmin(e->k.prefill_ms, need * e->pass_ms) + need * e->k.step_ms;
        if (slack - eta < worst) worst = slack - eta;
    }
    return worst;
}

/* Whether the caller predicted the frame cost (frame_ms_*): the compute rule is on. */
static int predicted(const ct_engine *e) { return e->p.frame_ms_fixed > 0 || e->p.frame_ms_per_stream > 0; }

/* The frame period (wall ms of one step) with n streams: measured once there are
   CT_ENGINE_COST_SAMPLES of that batch size, else predicted (frame_ms_*); NAN when neither. */
static double frame_period_locked(const ct_engine *e, int n) {
    if (n >= 0 && n <= CT_ENGINE_MAX_STREAMS && e->period_n[n] >= CT_ENGINE_COST_SAMPLES) return e->period_ms[n];
    return predicted(e) ? e->p.frame_ms_fixed + e->p.frame_ms_per_stream * n : NAN;
}

/* Frames s is expected to still make (docs/STREAMING.md 5): the text estimate of its utterances
   from the current one on (s->est), the current one's less the frames it made and capped by
   its frame limit once prefilled (sl: its slot, NULL while queued). At least 1. */
static double frames_left_locked(const ct_slot *sl, const ct_stream *s) {
    int u = sl ? sl->utt : 0;
    double cur = s->est[u] - s->est[u + 1], rest = s->est[u + 1];
    if (sl && !sl->prefill_due) {
        cur -= sl->utt_frames;
        if (cur > sl->frames_left) cur = sl->frames_left;
        if (cur < 1) cur = 1;
    }
    return cur + rest;
}

/* The compute rule (docs/STREAMING.md 5): with one more stream the frame period (measured, else
   predicted) keeps up with playback, or every admitted stream's slack absorbs the deficit over
   the frames it shares with the newcomer s while staying at or above safety_margin_ms. 1 when
   no cost was predicted. */
static int compute_fits_locked(ct_engine *e, const ct_stream *s, double now) {
    if (!predicted(e)) return 1;
    double cost = frame_period_locked(e, e->n_active + 1), deficit = cost - e->frame_ms;
    if (!(deficit > 0)) return 1;
    double mine = frames_left_locked(NULL, s);
    for (int i = 0; i < e->n_slots; i++) {
        const ct_slot *sl = &e->slots[i];
        const ct_stream *o = sl->st;
        if (!o) continue;
        double slack = o->tl_n ? ct_playback_slack_ms(o->tl, o->tl_n, e->rate, now - o->t_submit, NAN) : 0.0;
        double shared = frames_left_locked(sl, o);
        if (shared > mine) shared = mine;
        if (slack - shared * deficit < e->p.safety_margin_ms) return 0;
    }
    return 1;
}

/* Counts s as held back for why, once per request. */
static void held_locked(ct_stream *s, int why, uint64_t *counter) {
    if (s->internal || (s->held & why)) return;
    s->held |= why;
    (*counter)++;
}

/* The free slot that last ran voice (its KV holds the prompt's leading positions, which the
   prefill reuses), else the one unused longest, which keeps the most voices warm; NULL when
   none is free (e->mu held). */
static ct_slot *free_slot(ct_engine *e, const uint8_t voice[32]) {
    ct_slot *lru = NULL;
    for (int i = 0; i < e->n_slots; i++) {
        ct_slot *c = &e->slots[i];
        if (c->st) continue;
        if (c->used && !memcmp(c->voice, voice, sizeof c->voice)) return c;
        if (!lru || c->used < lru->used) lru = c;
    }
    return lru;
}

/* Admits the queue's head into a free slot when the KV budget, the compute rule and the
   throttle allow (e->mu held); returns the slot or NULL (*deferring = 1 when the throttle held
   it back: its max_defer_ms clock runs). */
static ct_slot *admit_locked(ct_engine *e, double now, int *deferring) {
    *deferring = 0;
    e->holding = 0;
    ct_stream *s = e->wq_head;
    if (!s) {
        e->defer_since = NAN;
        return NULL;
    }
    if (s->cancel || s->state == CT_STREAM_FAILED) return NULL; /* since this pass's reap (the lock
                                                                   was let go): the next reap takes it */
    ct_slot *sl = e->n_active < e->n_slots ? free_slot(e, s->voice) : NULL;
    if (!sl || e->kv_used + e->kv_per_stream > e->kv_budget) {
        held_locked(s, CT_HELD_KV, &e->k.deferred_kv);
        e->defer_since = NAN;
        return NULL;
    }
    if (e->n_active > 0 && !s->internal && e->p.safety_margin_ms >= 0 && !compute_fits_locked(e, s, now)) {
        held_locked(s, CT_HELD_COMPUTE, &e->k.deferred_compute); /* max_defer_ms does not force it */
        e->holding = 1;
        e->defer_since = NAN;
        return NULL;
    }
    if (e->n_active > 0 && !s->internal && e->p.safety_margin_ms >= 0 &&
        worst_margin_locked(e, now) < e->p.safety_margin_ms) {
        if (isnan(e->defer_since)) e->defer_since = now;
        if (e->p.max_defer_ms <= 0 || now - e->defer_since < e->p.max_defer_ms) {
            e->k.deferrals++;
            *deferring = 1;
            e->holding = 1;
            return NULL;
        }
        e->k.forced_admissions++;
    }
    e->defer_since = NAN;
    e->wq_head = s->next;
    if (!e->wq_head) e->wq_tail = NULL;
    s->next = NULL;
    e->wq_len--;
    memcpy(sl->voice, s->voice, sizeof sl->voice);
    sl->used = ++e->slot_tick;
    sl->st = s;
    sl->utt = 0;
    sl->prefill_due = 1;
    s->pump = s->incr;
    s->need = 1;
    e->kv_used += e->kv_per_stream;
    e->n_active++;
    atomic_store(&e->active_snapshot, e->n_active);
    if (!s->internal) e->k.admitted++;
    s->state = CT_STREAM_PREFILL;
    s->info.queue_ms = now - s->t_submit;
    return sl;
}

/* When s's next deadline (ms, engine clock) falls: deadline_ms, or first_audio_timeout_ms
   before its first output; +inf when none. */
static double deadline_of(const ct_stream *s) {
    double t = INFINITY;
    if (s->p.deadline_ms > 0) t = s->t_submit + s->p.deadline_ms;
    if (s->p.first_audio_timeout_ms > 0 && s->info.chunks == 0 && s->t_submit + s->p.first_audio_timeout_ms < t)
        t = s->t_submit + s->p.first_audio_timeout_ms;
    if (s->incr && !s->text_end && s->p.text_idle_timeout_ms > 0 && s->t_text + s->p.text_idle_timeout_ms < t)
        t = s->t_text + s->p.text_idle_timeout_ms;
    return t;
}

/* Fails s with CT_ERR_TIMEOUT when a deadline passed by now (e->mu held); returns 1 then. */
static int expire_locked(ct_stream *s, double now) {
    if (s->state == CT_STREAM_DONE || s->state == CT_STREAM_FAILED || now < deadline_of(s)) return 0;
    char msg[200];
    const char *where = s->state == CT_STREAM_QUEUED ? "while queued" : "while generating";
    if (s->p.first_audio_timeout_ms > 0 && s->info.chunks == 0 && now >= s->t_submit + s->p.first_audio_timeout_ms)
        snprintf(msg, sizeof msg, "first_audio_timeout_ms %d passed before the first audio (%s)",
                 s->p.first_audio_timeout_ms, where);
    else if (s->incr && !s->text_end && s->p.text_idle_timeout_ms > 0 && now >= s->t_text + s->p.text_idle_timeout_ms)
        snprintf(msg, sizeof msg, "text_idle_timeout_ms %d passed without more text or its end (%s)",
                 s->p.text_idle_timeout_ms, where);
    else snprintf(msg, sizeof msg, "deadline_ms %d passed (%s)", s->p.deadline_ms, where);
    ct_stream_fail_locked(s, CT_ERR_TIMEOUT, msg);
    return 1;
}

/* The earliest deadline of the queued and admitted streams (ms, engine clock); +inf if none. */
static double next_deadline_locked(const ct_engine *e) {
    double t = INFINITY;
    for (const ct_stream *s = e->wq_head; s; s = s->next)
        if (deadline_of(s) < t) t = deadline_of(s);
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].st && deadline_of(e->slots[i].st) < t) t = deadline_of(e->slots[i].st);
    return t;
}

/* Cancelled and timed-out streams leave at once: queued ones are failed, running ones (and
   ones the codec stage failed) free their slot. Returns a slot whose stream must be closed
   (one per call). */
static ct_slot *reap_locked(ct_engine *e, double now) {
    for (ct_stream **pp = &e->wq_head; *pp;) {
        ct_stream *s = *pp;
        if (!s->cancel && s->state != CT_STREAM_FAILED && !expire_locked(s, now)) { /* failed: bad text */
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        e->wq_len--;
        ct_stream_fail_locked(s, CT_ERR_ABORTED, "cancelled while queued");
        ct_stream_unref_locked(s);
    }
    e->wq_tail = NULL;
    for (ct_stream *s = e->wq_head; s; s = s->next) e->wq_tail = s;
    for (int i = 0; i < e->n_slots; i++) {
        ct_slot *sl = &e->slots[i];
        if (sl->st) expire_locked(sl->st, now);
        if (sl->st && (sl->st->cancel || sl->st->state == CT_STREAM_FAILED)) { /* failed: on the codec stage */
            ct_stream_fail_locked(sl->st, CT_ERR_ABORTED, "cancelled");
            return sl;
        }
    }
    return NULL;
}

/* Fails every queued stream (the engine is stopping); e->mu held. */
static void fail_queue_locked(ct_engine *e) {
    while (e->wq_head) {
        ct_stream *s = e->wq_head;
        e->wq_head = s->next;
        e->wq_len--;
        ct_stream_fail_locked(s, CT_ERR_ABORTED, "the engine is shutting down");
        ct_stream_unref_locked(s);
    }
    e->wq_tail = NULL;
}

static struct timespec deadline_in(double ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)(ms * 1e6);
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

static void *engine_main(void *arg) {
    ct_engine *e = arg;
    pin(e->tcpus, e->n_tcpus);
    ct_stats_thread_role("engine");
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        double td = CT_STATS_T0();
        double now = ct_engine_now(e);
        ct_slot *gone = reap_locked(e, now);
        if (gone) {
            pthread_mutex_unlock(&e->mu);
            slot_end(e, gone);
            pthread_mutex_lock(&e->mu);
            continue;
        }
        int let_go = 0; /* the lock was let go in this pass: what was signalled meanwhile woke nobody */
        for (int i = 0; i < e->n_slots; i++) { /* incremental text first: once per stream and pass, so
                                                   a client sending tiny pieces fast cannot hold up the steps */
            ct_slot *sl = &e->slots[i];
            if (!sl->st || !sl->st->pump) continue;
            pthread_mutex_unlock(&e->mu);
            if (ct_engine_text_pump(e, sl)) slot_end(e, sl);
            if (ct_engine_test_after_pump) ct_engine_test_after_pump(e);
            pthread_mutex_lock(&e->mu);
            let_go = 1;
        }
        ct_slot *pre = NULL;
        for (int i = 0; i < e->n_slots && !pre; i++) /* a prefill with passes left goes on first */
            if (e->slots[i].st && e->slots[i].prefilling) pre = &e->slots[i];
        for (int i = 0; i < e->n_slots && !pre; i++)
            if (e->slots[i].st && e->slots[i].prefill_due && e->slots[i].st->state != CT_STREAM_FAILED &&
                ct_engine_text_prefill_ready(&e->slots[i]))
                pre = &e->slots[i];
        int deferring = 0;
        if (!pre) {
            pre = admit_locked(e, now, &deferring);
            if (pre && !ct_engine_text_prefill_ready(pre)) pre = NULL; /* incremental: its text comes first */
        }
        int n = 0;
        for (int i = 0; i < e->n_slots; i++) {
            ct_slot *sl = &e->slots[i];
            ct_stream *s = sl->st;
            if (!s || sl == pre || sl->prefill_due || s->state != CT_STREAM_RUNNING) continue;
            if (ct_stream_room_locked(s) < (size_t)(s->inflight + 1) * (size_t)s->units_per_frame) continue;
            if (s->incr && ct_session_text_wait(sl->sess)) continue; /* its next token has not come */
            e->act[n++] = sl;
        }
        int pump = 0; /* a newcomer's incremental text (admitted just now) comes first */
        for (int i = 0; i < e->n_slots && !pump; i++) pump = e->slots[i].st && e->slots[i].st->pump;
        /* before sleeping, a pass that held the lock throughout: a cancel or a failure signalled
           while it was let go must meet the reap at the top, or the engine would sleep through it */
        if (!pre && !n && (pump || let_go)) continue;
        if (!pre && !n) { /* idle: wake for the throttle's clock and the next deadline */
            double wait = deferring ? 10 : next_deadline_locked(e) - now;
            if (wait > 1000) wait = 1000;
            if (isfinite(wait) && !atomic_load(&e->vclock_on)) {
                struct timespec ts = deadline_in(wait > 0 ? wait : 0);
                pthread_cond_timedwait(&e->cv, &e->mu, &ts);
            } else {
                pthread_cond_wait(&e->cv, &e->mu);
            }
            continue;
        }
        CT_STATS_ADD_SINCE("engine.decide_ms", td);
        pthread_mutex_unlock(&e->mu);
        if (pre) prefill(e, pre);
        double tp = ct_engine_now(e);
        if (n) step(e, n);
        double period = ct_engine_now(e) - tp;
        pthread_mutex_lock(&e->mu);
        if (n && !pre) { /* the frame period of a batch of n (a prefill in the pass is not part of it) */
            ewma(&e->period_ms[n], period);
            e->period_n[n]++;
        }
    }
    /* stopping: every stream fails; slots close on the codec stage */
    fail_queue_locked(e);
    for (int i = 0; i < e->n_slots; i++) {
        ct_slot *sl = &e->slots[i];
        if (!sl->st) continue;
        ct_stream_fail_locked(sl->st, CT_ERR_ABORTED, "the engine is shutting down");
        pthread_mutex_unlock(&e->mu);
        slot_end(e, sl);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

/* The warm-up stream: two frames through the whole path before the engine says it is ready. */
static ct_status submit_warmup(ct_engine *e, char *err, size_t errcap) {
    ct_gen_params g = ct_gen_params_default();
    g.text = "Hello.";
    g.speaker = ct_model_speaker(e->m, 0);
    if (e->m->cfg.kind == CT_KIND_VOICE_DESIGN) g.instruct = "A calm, clear voice.";
    g.max_frames = 2;
    g.min_new_tokens = 2;
    ct_stream_params sp = ct_stream_params_default();
    sp.output = e->codec ? CT_OUTPUT_PCM : CT_OUTPUT_CODES; /* a codes-only engine warms up on codes */
    ct_stream *s = NULL;
    ct_status st = ct_engine_submit(e, &g, &sp, &s, err, errcap);
    if (st != CT_OK) return st;
    pthread_mutex_lock(&e->mu);
    s->internal = 1;
    e->k.queued_total = 0;
    ct_stream_unref_locked(s); /* no caller holds it */
    pthread_mutex_unlock(&e->mu);
    return CT_OK;
}

static void slots_free(ct_engine *e) {
    for (int i = 0; e->slots && i < e->n_slots; i++) {
        ct_session_free(e->slots[i].sess);
        ct_codec_stream_free(e->slots[i].cs);
        free(e->slots[i].pend);
        free(e->slots[i].hist);
        free(e->slots[i].pcm);
    }
    free(e->slots);
    e->slots = NULL;
}

/* Stops the threads and frees everything but the core that streams still reference. */
static void engine_stop(ct_engine *e) {
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (e->th_on) pthread_join(e->th, NULL);
    pthread_mutex_lock(&e->mu);
    e->codec_stop = 1;
    pthread_cond_signal(&e->cv_q_data);
    pthread_mutex_unlock(&e->mu);
    if (e->cth_on) pthread_join(e->cth, NULL);
    e->th_on = e->cth_on = 0;
    pthread_mutex_lock(&e->mu);
    fail_queue_locked(e); /* the loop never ran (a failed create): the queue still holds streams */
    pthread_mutex_unlock(&e->mu);
    ct_batch_free(e->batch);
    e->batch = NULL;
    slots_free(e);
    ct_prompt_group_free(e->prompts);
    e->prompts = NULL;
    ct_pool_free(e->pool);
    ct_pool_free(e->cpool);
    e->pool = e->cpool = NULL;
    free(e->bs);
    free(e->act);
    free(e->bcodes);
    free(e->bgot);
    free(e->q);
    free(e->tcpus);
    free(e->ccpus);
    for (int i = 0; i < CT_ENGINE_PRIME_STATES; i++) {
        free(e->prime[i].state);
        e->prime[i].state = NULL;
        e->prime[i].used = 0;
    }
    e->bs = NULL, e->act = NULL, e->bcodes = NULL, e->bgot = NULL, e->q = NULL, e->tcpus = e->ccpus = NULL;
}

void ct_engine_core_free(ct_engine *e) {
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_cond_destroy(&e->cv_q_data);
    pthread_cond_destroy(&e->cv_q_space);
    free(e);
}

void ct_engine_free(ct_engine *e) {
    if (!e) return;
    engine_stop(e);
    pthread_mutex_lock(&e->mu);
    int last = --e->refs == 0;
    pthread_mutex_unlock(&e->mu);
    if (last) ct_engine_core_free(e);
}

static int *dup_ints(const int *a, int n) {
    if (!a || n <= 0) return NULL;
    int *b = malloc(sizeof(int) * (size_t)n);
    if (b) memcpy(b, a, sizeof(int) * (size_t)n);
    return b;
}

static ct_status check_params(const ct_model *m, const ct_engine_params *p, char *err, size_t errcap) {
#define RANGE(f, lo, hi)                                                                                   \
    if (p->f < (lo) || p->f > (hi))                                                                        \
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: " #f " %d is outside [%d, %d]", (int)p->f, \
                       (int)(lo), (int)(hi));
    RANGE(max_streams, 1, CT_ENGINE_MAX_STREAMS)
    RANGE(queue_cap, 0, 65536)
    RANGE(max_context, 16, m->cfg.talker.max_pos)
    RANGE(placement, CT_PLACEMENT_OVERLAPPED, CT_PLACEMENT_AUTO)
    RANGE(talker_threads, 0, 256)
    RANGE(codec_threads, 0, 256)
    RANGE(queue_frames, 1, 100000)
    RANGE(max_chunk_frames, 1, 4096)
    RANGE(buffer_ms, 80, 3600000)
    RANGE(n_talker_cpus, 0, 4096)
    RANGE(n_codec_cpus, 0, 4096)
    RANGE(prefill_chunk_tokens, 0, CT_PREFILL_CHUNK_MAX)
#undef RANGE
    if (p->prompt_cache_bytes > (1ull << 36))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: prompt_cache_bytes %llu is over 64 GiB",
                       (unsigned long long)p->prompt_cache_bytes);
    if (isnan(p->safety_margin_ms) || !(p->max_defer_ms >= 0))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: safety_margin_ms must be a number and "
                       "max_defer_ms >= 0");
    const double costs[2] = {p->frame_ms_fixed, p->frame_ms_per_stream};
    const char *names[2] = {"frame_ms_fixed", "frame_ms_per_stream"};
    for (int i = 0; i < 2; i++)
        if (!(costs[i] >= 0 && costs[i] < 1e9))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: %s %g is outside [0, 1e9) (both 0 = no "
                           "compute rule)", names[i], costs[i]);
    return CT_OK;
}

static ct_status create_slots(ct_engine *e, char *err, size_t errcap) {
    const int G = e->G, mc = e->p.max_chunk_frames;
    e->slots = calloc((size_t)e->n_slots, sizeof *e->slots);
    if (!e->slots) return ct_errf(err, errcap, CT_ERR_NOMEM, "engine: out of memory");
    for (int i = 0; i < e->n_slots; i++) {
        ct_slot *sl = &e->slots[i];
        sl->idx = i;
        ct_status st = ct_session_create_chunked(e->m, e->p.max_context, e->prefill_chunk, e->pool, &sl->sess, err,
                                                 errcap);
        if (st == CT_OK && e->codec) st = ct_codec_stream_create(e->codec, mc, &sl->cs, err, errcap);
        if (st != CT_OK) return st;
        if (!e->codec) continue; /* codes only */
        ct_codec_stream_set_pool(sl->cs, e->placement == CT_PLACEMENT_SERIAL ? e->pool : e->cpool);
        sl->pend = malloc(sizeof(int32_t) * (size_t)(mc + 1) * G);
        sl->hist = malloc(sizeof(int32_t) * (size_t)CT_ENGINE_MAX_WINDOW * G);
        sl->pcm = malloc(sizeof(float) * (size_t)mc * e->spf);
        if (!sl->pend || !sl->hist || !sl->pcm) return ct_errf(err, errcap, CT_ERR_NOMEM, "engine: out of memory");
    }
    return CT_OK;
}

ct_status ct_engine_create(const ct_model *m, const ct_codec *c, const ct_engine_params *pp, ct_engine **out,
                           char *err, size_t errcap) {
    if (out) *out = NULL;
    if (!m || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: NULL argument");
    ct_engine_params p = ct_engine_params_default();
    ct_status st = pp ? ct_params_take(&p, sizeof p, pp, pp->size, "ct_engine_params", err, errcap) : CT_OK;
    if (st == CT_OK) st = check_params(m, &p, err, errcap);
    if (st != CT_OK) return st;
    if (c && (ct_codec_n_groups(c) != m->cfg.n_groups || m->cfg.n_groups > CT_MAX_GROUPS))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "engine: the codec has %d codebooks, the model %d",
                       ct_codec_n_groups(c), m->cfg.n_groups);
    uint64_t per_stream = ct_kv_bytes(&m->cfg.talker, p.max_context);
    uint64_t budget = p.kv_budget_bytes ? p.kv_budget_bytes : per_stream * (uint64_t)p.max_streams;
    if (budget < per_stream)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "engine: KV budget %llu bytes holds no stream (one needs %llu "
                       "bytes for %d positions)", (unsigned long long)budget, (unsigned long long)per_stream,
                       p.max_context);
    ct_engine *e = calloc(1, sizeof *e);
    if (!e) return ct_errf(err, errcap, CT_ERR_NOMEM, "engine: out of memory");
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_cond_init(&e->cv_q_data, NULL);
    pthread_cond_init(&e->cv_q_space, NULL);
    e->refs = 1;
    e->m = m;
    e->codec = c;
    e->p = p;
    e->tcpus = dup_ints(p.talker_cpus, p.n_talker_cpus);
    e->ccpus = dup_ints(p.codec_cpus, p.n_codec_cpus);
    e->n_tcpus = e->tcpus ? p.n_talker_cpus : 0;
    e->n_ccpus = e->ccpus ? p.n_codec_cpus : 0;
    e->p.talker_cpus = e->p.codec_cpus = NULL; /* borrowed: the copies above are used */
    e->p.n_talker_cpus = e->p.n_codec_cpus = 0;
    e->G = m->cfg.n_groups;
    e->spf = c ? ct_codec_samples_per_frame(c) : 1920; /* codes only: the 12.5 Hz frame at 24 kHz */
    e->rate = c ? ct_codec_sample_rate(c) : 24000;
    e->kv_per_stream = per_stream;
    e->kv_per_tok = per_stream / (uint64_t)p.max_context;
    e->kv_budget = budget;
    e->defer_since = NAN;
    e->frame_ms = 1e3 * e->spf / e->rate;
    e->prefill_chunk = p.prefill_chunk_tokens > 0 ? p.prefill_chunk_tokens : CT_PREFILL_CHUNK;
    uint64_t fit = budget / per_stream;
    e->n_slots = fit < (uint64_t)p.max_streams ? (int)fit : p.max_streams; /* slots the budget cannot back */
    st = resolve_placement(e, err, errcap);
    if (st == CT_OK && ct_pool_create(e->talker_threads, e->tcpus, e->n_tcpus, &e->pool) != CT_OK)
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "engine: cannot start %d threads", e->talker_threads);
    if (st == CT_OK && e->placement == CT_PLACEMENT_OVERLAPPED && e->codec_threads > 1 &&
        ct_pool_create(e->codec_threads, e->ccpus, e->n_ccpus, &e->cpool) != CT_OK)
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "engine: cannot start %d codec threads", e->codec_threads);
    if (st == CT_OK) st = create_slots(e, err, errcap);
    if (st == CT_OK) st = ct_batch_create_on(m, e->n_slots, p.max_context, e->pool, &e->batch, err, errcap);
    if (st == CT_OK) {
        e->q_cap = p.queue_frames + 2 * e->n_slots; /* frames plus each stream's start/end records */
        e->q = malloc(sizeof(ct_rec) * (size_t)e->q_cap);
        e->bs = calloc((size_t)e->n_slots, sizeof *e->bs);
        e->act = calloc((size_t)e->n_slots, sizeof *e->act);
        e->bcodes = calloc((size_t)e->n_slots * (size_t)e->G, sizeof *e->bcodes);
        e->bgot = calloc((size_t)e->n_slots, sizeof *e->bgot);
        if (!e->q || !e->bs || !e->act || !e->bcodes || !e->bgot || ct_prompt_group_create((size_t)p.prompt_cache_bytes, &e->prompts) != CT_OK)
            st = ct_errf(err, errcap, CT_ERR_NOMEM, "engine: out of memory");
        for (int i = 0; st == CT_OK && i < e->n_slots; i++)
            if (ct_session_join_prompts(e->slots[i].sess, e->prompts) != CT_OK)
                st = ct_errf(err, errcap, CT_ERR_NOMEM, "engine: %s", ct_session_errmsg(e->slots[i].sess));
    }
    e->ready = p.warmup ? 0 : 1;
    if (st == CT_OK && p.warmup) st = submit_warmup(e, err, errcap);
    if (st == CT_OK && e->placement == CT_PLACEMENT_OVERLAPPED) {
        if (pthread_create(&e->cth, NULL, codec_main, e) != 0)
            st = ct_errf(err, errcap, CT_ERR_NOMEM, "engine: cannot start the codec thread");
        else e->cth_on = 1;
    }
    if (st == CT_OK) {
        if (pthread_create(&e->th, NULL, engine_main, e) != 0)
            st = ct_errf(err, errcap, CT_ERR_NOMEM, "engine: cannot start the engine thread");
        else e->th_on = 1;
    }
    if (st != CT_OK) {
        ct_engine_free(e);
        return st;
    }
    *out = e;
    return CT_OK;
}

int ct_engine_ready(ct_engine *e, char *err, size_t errcap) {
    if (!e) return -1;
    pthread_mutex_lock(&e->mu);
    int r = e->ready;
    if (r < 0 && err && errcap) snprintf(err, errcap, "%s", e->ready_err);
    pthread_mutex_unlock(&e->mu);
    return r;
}

ct_engine_limits ct_engine_get_limits(const ct_engine *e) {
    ct_engine_limits l;
    memset(&l, 0, sizeof l);
    if (!e) return l;
    l.max_streams = e->n_slots;
    l.queue_cap = e->p.queue_cap;
    l.max_context = e->p.max_context;
    l.sample_rate = e->rate;
    l.samples_per_frame = e->spf;
    l.n_groups = e->G;
    l.placement = e->placement;
    l.talker_threads = e->talker_threads;
    l.codec_threads = e->placement == CT_PLACEMENT_SERIAL ? 0 : e->codec_threads;
    l.max_chunk_frames = e->p.max_chunk_frames;
    l.kv_budget_bytes = e->kv_budget;
    l.kv_bytes_per_token = e->kv_per_tok;
    l.kv_bytes_per_stream = e->kv_per_stream;
    l.safety_margin_ms = e->p.safety_margin_ms;
    l.prefill_chunk_tokens = e->prefill_chunk;
    return l;
}

ct_engine_counters ct_engine_get_counters(ct_engine *e) {
    ct_engine_counters k;
    memset(&k, 0, sizeof k);
    if (!e) return k;
    pthread_mutex_lock(&e->mu);
    k = e->k;
    k.active = e->n_active;
    for (int i = 0; i < e->n_slots && e->slots; i++)
        if (e->slots[i].st && e->slots[i].st->internal) k.active--;
    k.queued = e->wq_len;
    k.kv_bytes_in_use = e->kv_used;
    k.full = ct_engine_full_locked(e);
    pthread_mutex_unlock(&e->mu);
    return k;
}

int ct_engine_retry_after_s(ct_engine *e) {
    if (!e) return 1;
    pthread_mutex_lock(&e->mu);
    double best = INFINITY, period = frame_period_locked(e, e->n_active);
    if (isnan(period)) period = e->k.step_ms > 0 ? e->k.step_ms : e->frame_ms;
    for (int i = 0; i < e->n_slots && e->slots; i++) {
        const ct_slot *sl = &e->slots[i];
        if (!sl->st) continue;
        double left = frames_left_locked(sl, sl->st) * period;
        if (left < best) best = left;
    }
    pthread_mutex_unlock(&e->mu);
    double sec = isfinite(best) ? ceil(best / 1e3) : 1;
    return sec < 1 ? 1 : sec > 120 ? 120 : (int)sec;
}
