/* Streaming synthesis: stage 0 (talker + code predictor) and stage 1 (codec decoder) on their
   own pinned threads, joined by a bounded frame queue (overlapped), or both on one thread and
   the session's pool, a due chunk decoded between frames (serial); PCM goes to the caller's
   sink in chunks sized by the request's schedule. Stage 0 hands a frame on as soon as the code
   predictor has it, before the talker step for the next frame. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec/codec.h"
#include "core/stepstats.h"
#include "model/session_internal.h"
#include "stream/schedule.h"

struct ct_synth {
    const ct_model *m;
    const ct_codec *codec;
    ct_synth_params p;
    int *tcpus, *ccpus;
    ct_session *sess;
    ct_codec_stream *cs;
    ct_scheduling mode; /* resolved: overlapped or serial */
    ct_pool *cpool;     /* overlapped, codec_threads > 1: stage 1's own pool (owned) */
    ct_pool *dpool;     /* the pool the decoder runs on: cpool, the session's (serial) or NULL */
    ct_sched_params sp;
    ct_sched sched;
    int G, spf, rate;
    /* bounded frame queue */
    pthread_mutex_t mu;
    pthread_cond_t cv_data, cv_space;
    int32_t *q;       /* [q_cap][G] */
    double *q_t;      /* [q_cap] enqueue time (ms) */
    int q_cap, q_head, q_count;
    int produced, producer_done;
    ct_status producer_status;
    atomic_int cancel;
    /* stage-1 buffers */
    int32_t *chunk;   /* [max_chunk][G] */
    int32_t *hist;    /* [context][G] windowed history, oldest first */
    int n_hist;
    float *pcm;       /* [max_chunk * spf] */
    /* run state */
    const ct_gen_params *g;
    ct_pcm_sink sink;
    void *ud;
    double t0;
    double *tl_t;
    int *tl_n;
    int tl_cap, tl_count;
    ct_synth_stats st;
    ct_status consumer_status;
    char err[1024];
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void pin(const int *cpus, int n) {
    if (!cpus || n <= 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++) CPU_SET(cpus[i], &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

const char *ct_scheduling_str(int mode) {
    switch (mode) {
    case CT_SCHEDULING_OVERLAPPED: return "overlapped";
    case CT_SCHEDULING_SERIAL: return "serial";
    case CT_SCHEDULING_AUTO: return "auto";
    }
    return "?";
}

ct_status ct_scheduling_parse(const char *name, int *mode) {
    if (!name || !mode) return CT_ERR_INVALID_ARG;
    for (int m = CT_SCHEDULING_OVERLAPPED; m <= CT_SCHEDULING_AUTO; m++)
        if (strcmp(name, ct_scheduling_str(m)) == 0) {
            *mode = m;
            return CT_OK;
        }
    return CT_ERR_INVALID_ARG;
}

/* CPUs the synthesiser may use: the union of the pinning lists when both stages are pinned,
   the process's CPU set when neither is; 0 when only one is (auto then stays overlapped). */
static int usable_cpus(const ct_synth_params *p) {
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

ct_synth_params ct_synth_params_default(void) {
    ct_synth_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.max_context = 2048;
    p.talker_threads = 1;
    p.codec_threads = 1;
    p.queue_frames = 64;
    p.schedule = "exact";
    p.context_frames = 72;
    p.max_chunk_frames = 64;
    return p;
}

static int *dup_ints(const int *a, int n) {
    if (!a || n <= 0) return NULL;
    int *b = malloc(sizeof(int) * (size_t)n);
    if (b) memcpy(b, a, sizeof(int) * (size_t)n);
    return b;
}

void ct_synth_free(ct_synth *s) {
    if (!s) return;
    ct_session_free(s->sess);
    ct_codec_stream_free(s->cs);
    ct_pool_free(s->cpool);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_data);
    pthread_cond_destroy(&s->cv_space);
    free(s->tcpus);
    free(s->ccpus);
    free(s->q);
    free(s->q_t);
    free(s->chunk);
    free(s->hist);
    free(s->pcm);
    free(s->tl_t);
    free(s->tl_n);
    free(s);
}

ct_status ct_synth_create(const ct_model *m, const ct_codec *c, const ct_synth_params *pp,
                          ct_synth **out, char *err, size_t errcap) {
    if (!m || !c || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "synth: NULL argument");
    *out = NULL;
    ct_synth_params p = pp ? *pp : ct_synth_params_default();
    if (p.queue_frames < 1 || p.queue_frames > 100000 || p.max_chunk_frames < 1 ||
        p.max_chunk_frames > 4096 || p.context_frames < 0 || p.context_frames > 4096 ||
        p.talker_threads < 0 || p.codec_threads < 0 || p.codec_threads > 256)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "synth: queue_frames, max_chunk_frames, "
                       "context_frames or thread counts out of range");
    if (p.scheduling < CT_SCHEDULING_OVERLAPPED || p.scheduling > CT_SCHEDULING_AUTO)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "synth: scheduling %d is not overlapped (%d), "
                       "serial (%d) or auto (%d)", p.scheduling, CT_SCHEDULING_OVERLAPPED,
                       CT_SCHEDULING_SERIAL, CT_SCHEDULING_AUTO);
    ct_synth *s = calloc(1, sizeof *s);
    if (!s) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_data, NULL);
    pthread_cond_init(&s->cv_space, NULL);
    s->m = m;
    s->codec = c;
    s->p = p;
    s->p.schedule = NULL; /* not kept: parsed below */
    s->tcpus = dup_ints(p.talker_cpus, p.n_talker_cpus);
    s->ccpus = dup_ints(p.codec_cpus, p.n_codec_cpus);
    s->p.talker_cpus = s->tcpus;
    s->p.codec_cpus = s->ccpus;
    s->G = ct_codec_n_groups(c);
    s->spf = ct_codec_samples_per_frame(c);
    s->rate = ct_codec_sample_rate(c);
    ct_status st;
    char inner[512];
    if (s->G != m->cfg.n_groups) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "synth: codec has %d codebooks, model %d", s->G,
                     m->cfg.n_groups);
        goto fail;
    }
    s->sp = ct_sched_params_default();
    st = ct_sched_parse(p.schedule ? p.schedule : "exact", &s->sp, inner, sizeof inner);
    if (st != CT_OK) {
        ct_errf(err, errcap, st, "synth: schedule: %s", inner);
        goto fail;
    }
    s->sp.left_context = p.context_frames;
    int biggest = s->sp.steady > s->sp.initial ? s->sp.steady : s->sp.initial;
    for (int i = 0; i < s->sp.n_ramp; i++)
        if (s->sp.ramp[i] > biggest) biggest = s->sp.ramp[i];
    if (biggest > p.max_chunk_frames) {
        st = ct_errf(err, errcap, CT_ERR_INVALID_ARG, "synth: the schedule asks for chunks of %d "
                     "frames, over max_chunk_frames %d", biggest, p.max_chunk_frames);
        goto fail;
    }
    s->mode = p.scheduling == CT_SCHEDULING_SERIAL ? CT_SCHEDULING_SERIAL : CT_SCHEDULING_OVERLAPPED;
    int n_threads = p.talker_threads;
    if (p.scheduling == CT_SCHEDULING_AUTO) {
        int ncpu = usable_cpus(&p);
        if (ncpu > 0 && ncpu <= 2) { /* docs/STREAMING.md 4: one pool over every core beats a 1+1 split */
            s->mode = CT_SCHEDULING_SERIAL;
            int want = (p.talker_threads > 0 ? p.talker_threads : ncpu) + (p.codec_threads > 0 ? p.codec_threads : 1);
            n_threads = want < ncpu ? want : ncpu;
            if (s->ccpus) { /* the pool runs on both stages' CPUs: talker's, then the codec's others */
                int *u = malloc(sizeof(int) * (size_t)(p.n_talker_cpus + p.n_codec_cpus));
                if (!u) {
                    st = ct_errf(err, errcap, CT_ERR_NOMEM, "synth: out of memory");
                    goto fail;
                }
                int nu = 0;
                for (int i = 0; i < p.n_talker_cpus; i++) u[nu++] = s->tcpus[i];
                for (int i = 0; i < p.n_codec_cpus; i++) {
                    int dup = 0;
                    for (int j = 0; j < nu && !dup; j++) dup = u[j] == s->ccpus[i];
                    if (!dup) u[nu++] = s->ccpus[i];
                }
                free(s->tcpus);
                s->tcpus = u;
                s->p.talker_cpus = u;
                s->p.n_talker_cpus = nu;
            }
        }
    }
    s->p.scheduling = s->mode;
    ct_session_params sp = ct_session_params_default();
    sp.max_context = p.max_context;
    sp.n_threads = n_threads;
    sp.cpus = s->p.talker_cpus;
    sp.n_cpus = s->p.n_talker_cpus;
    st = ct_session_create(m, &sp, &s->sess, err, errcap);
    if (st != CT_OK) goto fail;
    st = ct_codec_stream_create(c, p.max_chunk_frames, &s->cs, err, errcap);
    if (st != CT_OK) goto fail;
    if (s->mode == CT_SCHEDULING_SERIAL) {
        s->dpool = s->sess->pool;
    } else if (p.codec_threads > 1) {
        if (ct_pool_create(p.codec_threads, s->ccpus, p.n_codec_cpus, &s->cpool) != CT_OK) {
            st = ct_errf(err, errcap, CT_ERR_NOMEM, "synth: cannot start %d codec threads", p.codec_threads);
            goto fail;
        }
        s->dpool = s->cpool;
    }
    ct_codec_stream_set_pool(s->cs, s->dpool);
    /* serial: frames wait in the ring until their chunk is due, so it holds a whole chunk */
    s->q_cap = s->mode == CT_SCHEDULING_SERIAL && p.max_chunk_frames > p.queue_frames ? p.max_chunk_frames
                                                                                          : p.queue_frames;
    s->q = malloc(sizeof(int32_t) * (size_t)s->q_cap * s->G);
    s->q_t = malloc(sizeof(double) * (size_t)s->q_cap);
    s->chunk = malloc(sizeof(int32_t) * (size_t)p.max_chunk_frames * s->G);
    s->hist = malloc(sizeof(int32_t) * (size_t)(p.context_frames + 1) * s->G);
    s->pcm = malloc(sizeof(float) * (size_t)p.max_chunk_frames * s->spf);
    s->tl_cap = p.max_context + 1;
    s->tl_t = malloc(sizeof(double) * (size_t)s->tl_cap);
    s->tl_n = malloc(sizeof(int) * (size_t)s->tl_cap);
    if (!s->q || !s->q_t || !s->chunk || !s->hist || !s->pcm || !s->tl_t || !s->tl_n) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "synth: out of memory");
        goto fail;
    }
    st = ct_sched_init(&s->sched, &s->sp, inner, sizeof inner);
    if (st != CT_OK) {
        ct_errf(err, errcap, st, "synth: schedule: %s", inner);
        goto fail;
    }
    *out = s;
    return CT_OK;
fail:
    ct_synth_free(s);
    return st;
}

void ct_synth_cancel(ct_synth *s) {
    if (!s) return;
    atomic_store(&s->cancel, 1);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv_data);
    pthread_cond_broadcast(&s->cv_space);
    pthread_mutex_unlock(&s->mu);
}

const char *ct_synth_errmsg(const ct_synth *s) { return s ? s->err : "no synth"; }

ct_scheduling ct_synth_scheduling(const ct_synth *s) { return s ? s->mode : CT_SCHEDULING_OVERLAPPED; }

ct_synth_stats ct_synth_get_stats(const ct_synth *s) {
    ct_synth_stats z;
    memset(&z, 0, sizeof z);
    return s ? s->st : z;
}

int ct_synth_timeline(const ct_synth *s, double *t_ms, int *samples, int cap) {
    if (!s) return 0;
    for (int i = 0; i < s->tl_count && i < cap; i++) {
        if (t_ms) t_ms[i] = s->tl_t[i];
        if (samples) samples[i] = s->tl_n[i];
    }
    return s->tl_count;
}

/* ---- stage 0 ------------------------------------------------------------------------ */

/* Prefill (ct_session_start), timed. */
static ct_status run_prefill(ct_synth *s) {
    double t = now_ms();
    ct_status st = ct_session_start(s->sess, s->g);
    s->st.prefill_ms = now_ms() - t;
    s->st.stage0_ms += s->st.prefill_ms;
    return st;
}

/* The talker step after a frame handed on; adds the frame's stage-0 time. */
static ct_status advance(ct_synth *s, double pred_ms) {
    double t = now_ms();
    ct_status st = ct_session_frame_advance(s->sess);
    double t2 = now_ms();
    s->st.stage0_ms += t2 - t;
    ct_stats_add("stage0.frame_ms", pred_ms + (t2 - t));
    return st;
}

static void producer_finish(ct_synth *s, ct_status st) {
    pthread_mutex_lock(&s->mu);
    s->producer_done = 1;
    s->producer_status = st;
    if (st != CT_OK) snprintf(s->err, sizeof s->err, "%s", ct_session_errmsg(s->sess));
    pthread_cond_broadcast(&s->cv_data);
    pthread_mutex_unlock(&s->mu);
}

/* Appends a frame's codes to the queue (s->mu held, a free slot guaranteed) and counts it. */
static void queue_push_locked(ct_synth *s, const int32_t *codes) {
    int slot = (s->q_head + s->q_count) % s->q_cap;
    memcpy(s->q + (size_t)slot * s->G, codes, sizeof(int32_t) * (size_t)s->G);
    s->q_t[slot] = now_ms();
    s->q_count++;
    s->produced++;
    if (s->produced == 1) s->st.t_first_frame_ms = now_ms() - s->t0;
}

/* Stage-0 thread start: pinning, the stats role and the prefill. */
static ct_status stage0_enter(ct_synth *s) {
    pin(s->p.talker_cpus, s->p.n_talker_cpus);
    ct_stats_thread_role("stage0");
    return run_prefill(s);
}

/* The next frame's codes (code predictor) into codes: 1 when a frame came, 0 at the end or
   on an error (*st). Its time goes to *ms and to stage 0's busy time. */
static int next_codes(ct_synth *s, int32_t *codes, ct_status *st, double *ms) {
    int got = 0;
    const double t1 = now_ms();
    *st = ct_session_frame_codes(s->sess, codes, &got);
    *ms = now_ms() - t1;
    s->st.stage0_ms += *ms;
    return *st == CT_OK && got;
}

static void *stage0(void *arg) {
    ct_synth *s = arg;
    ct_status st = stage0_enter(s);
    int32_t codes[CT_MAX_GROUPS];
    while (st == CT_OK && !atomic_load(&s->cancel)) {
        double pred_ms = 0;
        if (!next_codes(s, codes, &st, &pred_ms)) break;
        pthread_mutex_lock(&s->mu);
        double tw = now_ms();
        while (s->q_count == s->q_cap && !atomic_load(&s->cancel)) pthread_cond_wait(&s->cv_space, &s->mu);
        ct_stats_add("hop.queue_full_wait_ms", now_ms() - tw);
        if (atomic_load(&s->cancel)) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        queue_push_locked(s, codes);
        pthread_cond_signal(&s->cv_data);
        pthread_mutex_unlock(&s->mu);
        st = advance(s, pred_ms);
    }
    producer_finish(s, st);
    return NULL;
}

/* ---- stage 1 ------------------------------------------------------------------------ */

static ct_status decode_chunk(ct_synth *s, int n, char *err, size_t cap) {
    if (!s->p.windowed) return ct_codec_stream_push(s->cs, s->chunk, n, s->pcm, err, cap);
    ct_status st = ct_codec_decode_window_pool(s->codec, s->dpool, s->hist, s->n_hist, s->chunk, n, s->pcm, err,
                                               cap);
    /* history keeps the last context_frames frames (oldest first) */
    int C = s->p.context_frames, G = s->G;
    if (C > 0) {
        int keep = s->n_hist + n > C ? C - n : s->n_hist;
        if (keep < 0) keep = 0;
        memmove(s->hist, s->hist + (size_t)(s->n_hist - keep) * G, sizeof(int32_t) * (size_t)keep * G);
        int add = n < C ? n : C;
        memcpy(s->hist + (size_t)keep * G, s->chunk + (size_t)(n - add) * G, sizeof(int32_t) * (size_t)add * G);
        s->n_hist = keep + add;
    }
    return st;
}

/* Pops n frames, decodes them, hands the PCM to the sink; 0 = go on, -1 = stop. */
static int emit_chunk(ct_synth *s, int n, int idx) {
    char err[512];
    pthread_mutex_lock(&s->mu);
    double tnow = now_ms();
    for (int i = 0; i < n; i++) {
        int slot = (s->q_head + i) % s->q_cap;
        memcpy(s->chunk + (size_t)i * s->G, s->q + (size_t)slot * s->G, sizeof(int32_t) * (size_t)s->G);
        ct_stats_add("hop.enqueue_to_dequeue_ms", tnow - s->q_t[slot]);
    }
    s->q_head = (s->q_head + n) % s->q_cap;
    s->q_count -= n;
    pthread_cond_signal(&s->cv_space);
    pthread_mutex_unlock(&s->mu);
    double t1 = now_ms();
    ct_status st = decode_chunk(s, n, err, sizeof err);
    double t2 = now_ms();
    s->st.stage1_ms += t2 - t1;
    ct_stats_add("codec.decode_chunk_ms", t2 - t1);
    if (st != CT_OK) {
        s->consumer_status = st;
        snprintf(s->err, sizeof s->err, "codec: %s", err);
        ct_synth_cancel(s);
        return -1;
    }
    double t_audio = now_ms() - s->t0;
    if (s->tl_count < s->tl_cap) {
        s->tl_t[s->tl_count] = t_audio;
        s->tl_n[s->tl_count] = n * s->spf;
        s->tl_count++;
    }
    if (s->st.chunks == 0) s->st.t_first_audio_ms = t_audio;
    s->st.frames += n;
    s->st.chunks++;
    if (s->sink && s->sink(s->ud, s->pcm, n * s->spf, idx) != 0) {
        s->consumer_status = CT_ERR_ABORTED;
        snprintf(s->err, sizeof s->err, "cancelled by the sink");
        ct_synth_cancel(s);
        return -1;
    }
    return 0;
}

/* Ships every chunk the schedule says is due for obs (several when frames came in a burst);
   0 = go on, -1 = stop (error or cancel, already recorded). */
static int ship_due(ct_synth *s, ct_sched_obs *obs, int *idx) {
    obs->now_ms = now_ms() - s->t0;
    int n;
    for (;;) {
        double t_sc = CT_STATS_T0();
        n = ct_sched_next_chunk(&s->sched, obs);
        CT_STATS_ADD_SINCE("sched.next_chunk_ms", t_sc);
        if (n <= 0) break;
        while (n > 0) { /* a flush may exceed the decoder's chunk capacity: split it */
            int k = n < s->p.max_chunk_frames ? n : s->p.max_chunk_frames;
            if (emit_chunk(s, k, (*idx)++) != 0) return -1;
            n -= k;
        }
    }
    if (n < 0) {
        s->consumer_status = CT_ERR_INTERNAL;
        snprintf(s->err, sizeof s->err, "schedule rejected the observation at frame %d", obs->frames_total);
        ct_synth_cancel(s);
        return -1;
    }
    return 0;
}

static void *stage1(void *arg) {
    ct_synth *s = arg;
    pin(s->p.codec_cpus, s->p.n_codec_cpus);
    ct_stats_thread_role("stage1");
    int seen = 0, idx = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        double tw = now_ms();
        while (s->produced == seen && !s->producer_done && !atomic_load(&s->cancel))
            pthread_cond_wait(&s->cv_data, &s->mu);
        ct_stats_add("hop.wait_for_frames_ms", now_ms() - tw);
        int cancelled = atomic_load(&s->cancel);
        ct_sched_obs obs;
        memset(&obs, 0, sizeof obs);
        obs.frames_total = seen = s->produced;
        obs.finished = s->producer_done;
        obs.active_streams = 1;
        pthread_mutex_unlock(&s->mu);
        if (cancelled) break;
        if (ship_due(s, &obs, &idx) != 0) return NULL;
        if (obs.finished) break;
    }
    return NULL;
}

/* ---- serial: both stages on one thread and its pool ------------------------------------ */

/* Per frame: code predictor, hand the frame to the schedule (decoding a due chunk on the same
   pool), then the talker step for the next frame; the same chunk sequence as an overlapped
   consumer that sees every frame as it comes. */
static void *serial_stage(void *arg) {
    ct_synth *s = arg;
    ct_status st = stage0_enter(s);
    int32_t codes[CT_MAX_GROUPS];
    int idx = 0, stopped = 0;
    ct_sched_obs obs;
    memset(&obs, 0, sizeof obs);
    obs.active_streams = 1;
    while (st == CT_OK && !atomic_load(&s->cancel)) {
        double pred_ms = 0;
        if (!next_codes(s, codes, &st, &pred_ms)) break;
        pthread_mutex_lock(&s->mu);
        int full = s->q_count == s->q_cap;
        if (!full) {
            queue_push_locked(s, codes);
        }
        pthread_mutex_unlock(&s->mu);
        if (full) { /* the schedule held back more frames than the ring has room for */
            s->consumer_status = CT_ERR_INTERNAL;
            snprintf(s->err, sizeof s->err, "schedule held back %d frames, over the queue capacity", s->q_cap);
            ct_synth_cancel(s);
            stopped = 1;
            break;
        }
        obs.frames_total = s->produced;
        if (ship_due(s, &obs, &idx) != 0) {
            stopped = 1;
            break;
        }
        if (atomic_load(&s->cancel)) break;
        st = advance(s, pred_ms);
    }
    if (st == CT_OK && !stopped && !atomic_load(&s->cancel)) {
        obs.finished = 1;
        ship_due(s, &obs, &idx);
    }
    producer_finish(s, st);
    return NULL;
}

ct_status ct_synth_run(ct_synth *s, const ct_gen_params *g, ct_pcm_sink sink, void *ud) {
    if (!s || !g) return CT_ERR_INVALID_ARG;
    s->err[0] = 0;
    memset(&s->st, 0, sizeof s->st);
    atomic_store(&s->cancel, 0);
    s->q_head = s->q_count = s->produced = s->producer_done = 0;
    s->producer_status = s->consumer_status = CT_OK;
    s->n_hist = 0;
    s->tl_count = 0;
    s->g = g;
    s->sink = sink;
    s->ud = ud;
    ct_codec_stream_reset(s->cs);
    ct_sched_reset(&s->sched);
    s->t0 = now_ms();
    pthread_t t0, t1;
    if (s->mode == CT_SCHEDULING_SERIAL) { /* own thread: pinning must not touch the caller's */
        if (pthread_create(&t0, NULL, serial_stage, s) != 0) {
            snprintf(s->err, sizeof s->err, "cannot start the stage thread");
            return CT_ERR_NOMEM;
        }
        pthread_join(t0, NULL);
    } else {
        if (pthread_create(&t0, NULL, stage0, s) != 0) {
            snprintf(s->err, sizeof s->err, "cannot start the stage-0 thread");
            return CT_ERR_NOMEM;
        }
        if (pthread_create(&t1, NULL, stage1, s) != 0) {
            ct_synth_cancel(s);
            pthread_join(t0, NULL);
            snprintf(s->err, sizeof s->err, "cannot start the stage-1 thread");
            return CT_ERR_NOMEM;
        }
        pthread_join(t1, NULL);
        ct_synth_cancel(s); /* stage 1 is done: release stage 0 if it waits on a full queue */
        pthread_join(t0, NULL);
    }
    s->st.t_done_ms = now_ms() - s->t0;
    s->st.talker_ms = s->sess->t_talker_ms;
    s->st.predictor_ms = s->sess->t_pred_ms;
    s->st.stop = ct_session_stop_reason(s->sess);
    if (s->producer_status != CT_OK) return s->producer_status;
    if (s->consumer_status != CT_OK) {
        if (s->consumer_status == CT_ERR_ABORTED) s->st.stop = CT_STOP_ABORTED;
        return s->consumer_status;
    }
    if (s->st.frames < s->produced || s->st.stop == CT_STOP_NONE) { /* external cancel */
        s->st.stop = CT_STOP_ABORTED;
        if (!s->err[0]) snprintf(s->err, sizeof s->err, "cancelled");
        return CT_ERR_ABORTED;
    }
    return CT_OK;
}
