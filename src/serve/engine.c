/* Serving engine (see engine.h): slots, admission, the playback-slack prefill throttle, the
   per-frame step loop and the Prometheus metrics. One mutex guards every piece of shared state;
   model work (prefill, steps, codec decode) runs on the engine thread without it. */
#define _GNU_SOURCE
#include "serve/engine.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "core/clock.h"
#include "core/pool.h"
#include "edge/derive.h"

#define N_TTFA_BUCKETS 12
#define N_RTF_BUCKETS 11
static const double TTFA_BUCKETS[N_TTFA_BUCKETS] = {0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10};
static const double RTF_BUCKETS[N_RTF_BUCKETS] = {0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 5};

struct ct_job {
    ct_srv_engine *e;
    int refs;                 /* engine + caller */
    /* request (immutable after submit) */
    ct_gen_params g;
    char *text, *instruct;
    char speaker[64], language[64];
    int initial_frames;
    /* state */
    ct_job_state state;
    int cancelled;
    ct_status status;
    char err[512];
    int text_tokens, prompt_len, frames;
    ct_stop_reason stop;
    /* PCM ring: absolute sample counters; [head, released) readable, [released, tail) held */
    int16_t *ring;            /* [cap] */
    size_t cap, head, released, tail;
    double t_submit, t_admit, t_first_audio, t_done;
    pthread_cond_t cv;
    ct_job *next;             /* queue link */
};

typedef struct stream {
    int idx;
    ct_session *sess;
    ct_codec_stream *cs;
    ct_job *job;              /* NULL = free slot */
    int32_t codes[64];        /* [n_groups] of the frame made by the last step */
    int got;                  /* 1: the last step produced a frame */
    ct_status step_status;
    int32_t *pend;            /* [chunk][n_groups] frames made but not decoded yet */
    int npend;                /* frames in pend */
    int ndec;                 /* frames decoded into pcm/s16 by the last step */
    float *pcm;               /* [chunk * spf] decoded frames */
    int16_t *s16;             /* [chunk * spf] */
    int frame_limit;
    /* playback model (engine clock, ms) */
    double t_play;            /* first release, NAN before */
    double released_ms;       /* audio released so far */
    double stall_ms;          /* ring-buffer player stalls so far */
} stream;

struct ct_srv_engine {
    const ct_model *m;
    const ct_codec *codec;
    ct_srv_engine_params p;
    int G, spf, rate;
    int chunk;                /* codec_chunk in force */
    uint64_t kv_per_stream, kv_budget, kv_per_token, kv_used;
    stream *slots;            /* [max_streams] */
    stream **active;          /* [max_streams] scratch for the step */
    ct_pool *codec_pool;
    ct_batch *batch;          /* shared weight passes for all active streams */
    ct_session **bsess;       /* [max_streams] step scratch */
    int32_t *bcodes;          /* [max_streams][G] */
    int *bgot;                /* [max_streams] */
    pthread_t th;
    int th_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* wakes the engine thread */
    pthread_cond_t cv_jobs;   /* signalled when a job is freed */
    int stop, ready;
    char ready_err[512];
    ct_job *q_head, *q_tail;
    int q_len, n_active, n_jobs;
    double defer_since;       /* NAN = not deferring */
    /* counters */
    uint64_t admitted, rejected, queued_total, completed, failed, cancelled;
    uint64_t deferrals, forced, underruns;
    double underrun_ms, audio_s;
    double step_ms, prefill_ms; /* EWMAs, 0 = unknown */
    uint64_t ttfa_hist[N_TTFA_BUCKETS + 1], rtf_hist[N_RTF_BUCKETS + 1];
    double ttfa_sum, rtf_sum;
    uint64_t ttfa_n, rtf_n;
};

int16_t ct_pcm16_of(float v) {
    if (!(v >= -1.0f)) v = -1.0f;
    if (v > 1.0f) v = 1.0f;
    float s = v * 32767.0f;
    return (int16_t)(int)(s < 0 ? s - 0.5f : s + 0.5f);
}

ct_srv_engine_params ct_srv_engine_params_default(void) {
    ct_srv_engine_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.max_streams = 1;
    p.queue_cap = 8;
    p.max_context = 2048;
    p.n_threads = 1;
    p.safety_margin_ms = 120;
    p.max_defer_ms = 5000;
    p.pcm_buffer_ms = 10000;
    p.warmup = 1;
    p.codec_chunk = 1;
    return p;
}

/* ---- jobs ------------------------------------------------------------------------------ */

static void job_unref_locked(ct_job *j) {
    if (--j->refs > 0) return;
    ct_srv_engine *e = j->e;
    pthread_cond_destroy(&j->cv);
    free(j->ring);
    free(j->text);
    free(j->instruct);
    free(j);
    e->n_jobs--;
    pthread_cond_broadcast(&e->cv_jobs);
}

static void job_fail_locked(ct_job *j, ct_status st, const char *msg) {
    j->state = CT_JOB_FAILED;
    j->status = st;
    snprintf(j->err, sizeof j->err, "%s", msg);
    j->t_done = ct_now_ms();
    pthread_cond_broadcast(&j->cv);
}

static void hist_add(uint64_t *h, const double *b, int nb, double v) {
    int i = 0;
    while (i < nb && v > b[i]) i++;
    h[i]++;
}

/* Frees slot s (its job leaves the engine). */
static void slot_finish_locked(ct_srv_engine *e, stream *s) {
    ct_job *j = s->job;
    if (!j) return;
    if (j->state == CT_JOB_DONE) {
        e->completed++;
        double audio = (double)j->tail / e->rate;
        if (audio > 0) {
            double rtf = (j->t_done - j->t_submit) / 1e3 / audio;
            hist_add(e->rtf_hist, RTF_BUCKETS, N_RTF_BUCKETS, rtf);
            e->rtf_sum += rtf;
            e->rtf_n++;
        }
    } else if (j->cancelled) {
        e->cancelled++;
    } else {
        e->failed++;
    }
    s->job = NULL;
    e->kv_used -= e->kv_per_stream;
    e->n_active--;
    job_unref_locked(j);
}

static double retry_after_locked(ct_srv_engine *e) {
    double best = 1e30;
    for (int i = 0; i < e->p.max_streams; i++) {
        stream *s = &e->slots[i];
        if (!s->job) continue;
        double left = (double)(s->frame_limit - s->job->frames) * (e->step_ms > 0 ? e->step_ms : 80);
        if (left < best) best = left;
    }
    double sec = best < 1e29 ? ceil(best / 1e3) : 1;
    return sec < 1 ? 1 : sec > 120 ? 120 : sec;
}

ct_status ct_srv_engine_submit(ct_srv_engine *e, const ct_gen_params *g, int initial_frames, ct_job **out,
                           int *retry_after_s) {
    *out = NULL;
    if (retry_after_s) *retry_after_s = 1;
    if (!e || !g || !g->text || g->xvector) return CT_ERR_INVALID_ARG;
    ct_job *j = calloc(1, sizeof *j);
    if (!j) return CT_ERR_NOMEM;
    j->cap = (size_t)((double)e->p.pcm_buffer_ms * e->rate / 1000.0);
    if (j->cap < (size_t)e->spf * 2) j->cap = (size_t)e->spf * 2;
    j->ring = malloc(sizeof(int16_t) * j->cap);
    j->text = strdup(g->text);
    j->instruct = g->instruct ? strdup(g->instruct) : NULL;
    if (!j->ring || !j->text || (g->instruct && !j->instruct)) {
        free(j->ring);
        free(j->text);
        free(j->instruct);
        free(j);
        return CT_ERR_NOMEM;
    }
    j->e = e;
    j->g = *g;
    j->g.text = j->text;
    j->g.instruct = j->instruct;
    if (g->speaker) snprintf(j->speaker, sizeof j->speaker, "%s", g->speaker);
    if (g->language) snprintf(j->language, sizeof j->language, "%s", g->language);
    j->g.speaker = g->speaker ? j->speaker : NULL;
    j->g.language = g->language ? j->language : NULL;
    int max_ic = (int)(j->cap / (size_t)e->spf) - 1;
    j->initial_frames = initial_frames < 1 ? 1 : initial_frames > max_ic ? max_ic : initial_frames;
    j->t_submit = ct_now_ms();
    j->t_first_audio = NAN;
    j->refs = 2;
    pthread_cond_init(&j->cv, NULL);
    pthread_mutex_lock(&e->mu);
    ct_status st = CT_OK;
    int free_slots = e->p.max_streams - e->n_active;
    int kv_fit = (int)((e->kv_budget - e->kv_used) / e->kv_per_stream);
    if (kv_fit < free_slots) free_slots = kv_fit;
    int slot_free = free_slots > e->q_len;
    if (e->stop || e->ready < 0) {
        st = CT_ERR_STATE;
    } else if (e->q_len >= e->p.queue_cap + free_slots) {
        /* requests that will get a free slot do not count against the queue */
        st = CT_ERR_LIMIT;
        e->rejected++;
        if (retry_after_s) *retry_after_s = (int)retry_after_locked(e);
    }
    if (st != CT_OK) {
        pthread_mutex_unlock(&e->mu);
        pthread_cond_destroy(&j->cv);
        free(j->ring);
        free(j->text);
        free(j->instruct);
        free(j);
        return st;
    }
    e->n_jobs++;
    if (e->q_tail) e->q_tail->next = j;
    else e->q_head = j;
    e->q_tail = j;
    e->q_len++;
    if (!slot_free || e->ready == 0) e->queued_total++;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    *out = j;
    return CT_OK;
}

static struct timespec deadline(int timeout_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    return ts;
}

ct_job_state ct_job_wait_started(ct_job *j, int timeout_ms) {
    ct_srv_engine *e = j->e;
    struct timespec ts = deadline(timeout_ms);
    pthread_mutex_lock(&e->mu);
    while (j->state < CT_JOB_RUNNING) {
        if (pthread_cond_timedwait(&j->cv, &e->mu, &ts) != 0) break;
    }
    ct_job_state s = j->state;
    pthread_mutex_unlock(&e->mu);
    return s;
}

size_t ct_job_read(ct_job *j, int16_t *dst, size_t cap, int timeout_ms, int *finished) {
    ct_srv_engine *e = j->e;
    struct timespec ts = deadline(timeout_ms);
    pthread_mutex_lock(&e->mu);
    while (j->released == j->head && j->state < CT_JOB_DONE) {
        if (pthread_cond_timedwait(&j->cv, &e->mu, &ts) != 0) break;
    }
    size_t n = j->released - j->head;
    if (n > cap) n = cap;
    for (size_t k = 0; k < n;) {
        size_t at = (j->head + k) % j->cap, run = j->cap - at;
        if (run > n - k) run = n - k;
        memcpy(dst + k, j->ring + at, run * sizeof(int16_t));
        k += run;
    }
    j->head += n;
    if (n) pthread_cond_signal(&e->cv); /* space for a paused stream */
    *finished = j->state >= CT_JOB_DONE && j->head == j->released;
    pthread_mutex_unlock(&e->mu);
    return n;
}

ct_job_info_t ct_job_info(ct_job *j) {
    ct_job_info_t r;
    memset(&r, 0, sizeof r);
    ct_srv_engine *e = j->e;
    pthread_mutex_lock(&e->mu);
    r.state = j->state;
    r.status = j->status;
    snprintf(r.err, sizeof r.err, "%s", j->err);
    r.text_tokens = j->text_tokens;
    r.prompt_len = j->prompt_len;
    r.frames = j->frames;
    r.stop = j->stop;
    r.ttfa_ms = j->t_first_audio - j->t_submit;
    r.queue_ms = j->t_admit > 0 ? j->t_admit - j->t_submit : NAN;
    r.samples = j->tail;
    pthread_mutex_unlock(&e->mu);
    return r;
}

void ct_job_release(ct_job *j) {
    if (!j) return;
    ct_srv_engine *e = j->e;
    pthread_mutex_lock(&e->mu);
    if (j->state < CT_JOB_DONE) j->cancelled = 1;
    pthread_cond_signal(&e->cv);
    job_unref_locked(j);
    pthread_mutex_unlock(&e->mu);
}

/* ---- the step ----------------------------------------------------------------------------- */

/* Advances every stream in active[n] by one frame with one batched step (one pass over the
   weights for all of them): codes into s->codes, s->got = 1 when a frame was made, 0 when its
   generation ended; s->step_status records a failure. Returns the number of frames produced. */
static int engine_step(ct_srv_engine *e, stream **active, int n) {
    for (int i = 0; i < n; i++) e->bsess[i] = active[i]->sess;
    ct_status st = ct_batch_step(e->batch, e->bsess, n, e->bcodes, e->bgot);
    int made = 0;
    for (int i = 0; i < n; i++) {
        stream *s = active[i];
        s->got = e->bgot[i];
        s->step_status = CT_OK;
        if (s->got) memcpy(s->codes, e->bcodes + (size_t)i * e->G, sizeof(int32_t) * (size_t)e->G);
        else if (st != CT_OK && ct_session_stop_reason(s->sess) == CT_STOP_ABORTED) s->step_status = st;
        made += s->got;
    }
    return made;
}

/* Frames the stream's next codec push waits for: the rest of the first chunk (initial_frames)
   while it is held back, then e->chunk, never more than the job's PCM ring holds. */
static int chunk_target(const ct_srv_engine *e, const stream *s) {
    const ct_job *j = s->job;
    int ch = e->chunk, room = (int)(j->cap / (size_t)e->spf) - 1;
    if (ch > room) ch = room;
    if (j->frames < j->initial_frames && j->initial_frames - j->frames < ch) ch = j->initial_frames - j->frames;
    return ch < 1 ? 1 : ch;
}

/* Slack minus next-chunk ETA of the most endangered active stream (ms); +inf when none. */
static double worst_margin_locked(ct_srv_engine *e, double now) {
    double worst = INFINITY;
    for (int i = 0; i < e->p.max_streams; i++) {
        stream *s = &e->slots[i];
        ct_job *j = s->job;
        if (!j || j->state != CT_JOB_RUNNING) continue;
        double slack = isnan(s->t_play) ? 0.0 : s->released_ms - (now - s->t_play);
        int need = isnan(s->t_play) ? j->initial_frames - j->frames - s->npend : chunk_target(e, s) - s->npend;
        if (need < 1) need = 1;
        double eta = e->prefill_ms + need * e->step_ms;
        double m = slack - eta;
        if (m < worst) worst = m;
    }
    return worst;
}

/* Makes newly decoded samples visible to the reader and updates the playback model. */
static void release_locked(ct_srv_engine *e, stream *s, int finished, double now) {
    ct_job *j = s->job;
    if (j->released == j->tail) return;
    if (!finished && isnan(s->t_play) && j->frames < j->initial_frames) return;
    double audio_ms = (double)(j->tail - j->released) * 1000.0 / e->rate;
    if (isnan(s->t_play)) {
        s->t_play = now;
        j->t_first_audio = now;
        double ttfa = (now - j->t_submit) / 1e3;
        hist_add(e->ttfa_hist, TTFA_BUCKETS, N_TTFA_BUCKETS, ttfa);
        e->ttfa_sum += ttfa;
        e->ttfa_n++;
    } else {
        /* ring-buffer player (EDGE.md 7.1): the chunk is needed when the audio before it ends */
        double needed = s->t_play + s->stall_ms + s->released_ms;
        if (now > needed) {
            s->stall_ms += now - needed;
            e->underruns++;
            e->underrun_ms += now - needed;
        }
    }
    s->released_ms += audio_ms;
    j->released = j->tail;
    pthread_cond_broadcast(&j->cv);
}

static void ewma(double *acc, double v) { *acc = *acc > 0 ? 0.7 * *acc + 0.3 * v : v; }

static void prefill(ct_srv_engine *e, stream *s) {
    ct_job *j = s->job;
    double t0 = ct_now_ms();
    ct_codec_stream_reset(s->cs);
    ct_status st = ct_session_start(s->sess, &j->g);
    double dt = ct_now_ms() - t0;
    ct_run_info ri = ct_session_run_info(s->sess);
    pthread_mutex_lock(&e->mu);
    ewma(&e->prefill_ms, dt);
    if (st != CT_OK) {
        job_fail_locked(j, st, ct_session_errmsg(s->sess));
        slot_finish_locked(e, s);
    } else if (j->cancelled) {
        job_fail_locked(j, CT_ERR_ABORTED, "cancelled");
        slot_finish_locked(e, s);
    } else {
        j->state = CT_JOB_RUNNING;
        j->text_tokens = ri.text_tokens;
        j->prompt_len = ri.prompt_len;
        s->frame_limit = ri.frame_limit;
        pthread_cond_broadcast(&j->cv);
    }
    pthread_mutex_unlock(&e->mu);
}

static void warmup(ct_srv_engine *e) {
    stream *s = &e->slots[0];
    ct_gen_params g = ct_gen_params_default();
    g.text = "Hello.";
    g.speaker = ct_model_speaker(e->m, 0);
    g.max_frames = 2;
    g.min_new_tokens = 2;
    ct_status st = ct_session_start(s->sess, &g);
    char err[400] = "";
    for (int k = 0; st == CT_OK && k < 2; k++) {
        int got = 0;
        st = ct_session_next_frame(s->sess, s->codes, &got);
        if (st == CT_OK && got) st = ct_codec_stream_push(s->cs, s->codes, 1, s->pcm, err, sizeof err);
        if (!got) break;
    }
    if (st != CT_OK && !err[0]) snprintf(err, sizeof err, "%s", ct_session_errmsg(s->sess));
    ct_codec_stream_reset(s->cs);
    pthread_mutex_lock(&e->mu);
    if (st == CT_OK) {
        e->ready = 1;
    } else {
        e->ready = -1;
        snprintf(e->ready_err, sizeof e->ready_err, "warm-up failed: %s", err);
    }
    pthread_mutex_unlock(&e->mu);
}

static void *engine_main(void *arg) {
    ct_srv_engine *e = arg;
    if (e->p.warmup) warmup(e);
    else {
        pthread_mutex_lock(&e->mu);
        e->ready = 1;
        pthread_mutex_unlock(&e->mu);
    }
    char err[512];
    pthread_mutex_lock(&e->mu);
    while (!e->stop && e->ready > 0) {
        double now = ct_now_ms();
        /* 1. cancelled work leaves at once */
        for (int i = 0; i < e->p.max_streams; i++) {
            stream *s = &e->slots[i];
            if (s->job && s->job->cancelled) {
                job_fail_locked(s->job, CT_ERR_ABORTED, "cancelled (client gone)");
                slot_finish_locked(e, s);
            }
        }
        for (ct_job **pp = &e->q_head; *pp;) {
            ct_job *j = *pp;
            if (!j->cancelled) {
                pp = &j->next;
                continue;
            }
            *pp = j->next;
            if (e->q_tail == j) {
                e->q_tail = NULL;
                for (ct_job *k = e->q_head; k; k = k->next) e->q_tail = k;
            }
            e->q_len--;
            e->cancelled++;
            job_fail_locked(j, CT_ERR_ABORTED, "cancelled while queued");
            job_unref_locked(j);
        }
        /* 2. admission (no preemption) with the playback-slack throttle */
        stream *pre = NULL;
        int deferring = 0;
        if (e->q_head && e->n_active < e->p.max_streams && e->kv_used + e->kv_per_stream <= e->kv_budget) {
            int go = 1;
            if (e->n_active > 0 && worst_margin_locked(e, now) < e->p.safety_margin_ms) {
                if (isnan(e->defer_since)) e->defer_since = now;
                if (e->p.max_defer_ms > 0 && now - e->defer_since >= e->p.max_defer_ms) {
                    e->forced++;
                } else {
                    go = 0;
                    deferring = 1;
                    e->deferrals++;
                }
            }
            if (go) {
                e->defer_since = NAN;
                ct_job *j = e->q_head;
                e->q_head = j->next;
                if (!e->q_head) e->q_tail = NULL;
                j->next = NULL;
                e->q_len--;
                for (int i = 0; i < e->p.max_streams; i++)
                    if (!e->slots[i].job) {
                        pre = &e->slots[i];
                        break;
                    }
                pre->job = j;
                pre->t_play = NAN;
                pre->released_ms = pre->stall_ms = 0;
                pre->frame_limit = 0;
                pre->npend = 0;
                e->kv_used += e->kv_per_stream;
                e->n_active++;
                e->admitted++;
                j->state = CT_JOB_PREFILL;
                j->t_admit = now;
            }
        } else {
            e->defer_since = NAN;
        }
        /* 3. streams that can take a frame (a full buffer pauses only its own stream) */
        int n = 0;
        for (int i = 0; i < e->p.max_streams; i++) {
            stream *s = &e->slots[i];
            if (s == pre || !s->job || s->job->state != CT_JOB_RUNNING) continue;
            if (s->job->cap - (s->job->tail - s->job->head) < (size_t)e->spf * (size_t)(s->npend + 1)) continue;
            e->active[n++] = s;
        }
        if (!pre && n == 0) {
            if (deferring) {
                struct timespec ts = deadline(10);
                pthread_cond_timedwait(&e->cv, &e->mu, &ts);
            } else {
                pthread_cond_wait(&e->cv, &e->mu);
            }
            continue;
        }
        pthread_mutex_unlock(&e->mu);
        if (pre) prefill(e, pre);
        if (n) {
            double t0 = ct_now_ms();
            engine_step(e, e->active, n);
            for (int i = 0; i < n; i++) { /* decode due chunks: full ones, and the rest at the end */
                stream *s = e->active[i];
                s->ndec = 0;
                if (s->got) memcpy(s->pend + (size_t)s->npend++ * e->G, s->codes, sizeof(int32_t) * (size_t)e->G);
                const int ended = !s->got && s->step_status == CT_OK;
                if (!s->npend || (s->npend < chunk_target(e, s) && !ended)) continue;
                ct_status st = ct_codec_stream_push(s->cs, s->pend, s->npend, s->pcm, err, sizeof err);
                if (st != CT_OK) {
                    s->step_status = st;
                    s->got = 0;
                    s->npend = 0;
                    continue;
                }
                for (size_t k = 0; k < (size_t)s->npend * (size_t)e->spf; k++) s->s16[k] = ct_pcm16_of(s->pcm[k]);
                s->ndec = s->npend;
                s->npend = 0;
            }
            double t1 = ct_now_ms();
            pthread_mutex_lock(&e->mu);
            ewma(&e->step_ms, t1 - t0);
            for (int i = 0; i < n; i++) {
                stream *s = e->active[i];
                ct_job *j = s->job;
                if (s->ndec) {
                    const size_t ns = (size_t)s->ndec * (size_t)e->spf;
                    for (size_t k = 0; k < ns;) {
                        size_t at = j->tail % j->cap, run = j->cap - at;
                        if (run > ns - k) run = ns - k;
                        memcpy(j->ring + at, s->s16 + k, run * sizeof(int16_t));
                        j->tail += run;
                        k += run;
                    }
                    j->frames += s->ndec;
                    e->audio_s += (double)ns / e->rate;
                    release_locked(e, s, 0, t1);
                }
                if (s->got) {
                } else if (s->step_status != CT_OK) {
                    job_fail_locked(j, s->step_status, ct_session_errmsg(s->sess));
                    slot_finish_locked(e, s);
                } else {
                    j->stop = ct_session_stop_reason(s->sess);
                    j->state = CT_JOB_DONE;
                    j->t_done = t1;
                    release_locked(e, s, 1, t1);
                    pthread_cond_broadcast(&j->cv);
                    slot_finish_locked(e, s);
                }
            }
            pthread_mutex_unlock(&e->mu);
        }
        pthread_mutex_lock(&e->mu);
    }
    /* shutdown: fail everything */
    for (int i = 0; i < e->p.max_streams; i++) {
        stream *s = &e->slots[i];
        if (s->job) {
            job_fail_locked(s->job, CT_ERR_ABORTED, "server shutting down");
            slot_finish_locked(e, s);
        }
    }
    while (e->q_head) {
        ct_job *j = e->q_head;
        e->q_head = j->next;
        e->q_len--;
        job_fail_locked(j, e->ready < 0 ? CT_ERR_STATE : CT_ERR_ABORTED,
                        e->ready < 0 ? e->ready_err : "server shutting down");
        e->failed++;
        job_unref_locked(j);
    }
    e->q_tail = NULL;
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static void slots_free(ct_srv_engine *e) {
    if (!e->slots) return;
    for (int i = 0; i < e->p.max_streams; i++) {
        ct_session_free(e->slots[i].sess);
        ct_codec_stream_free(e->slots[i].cs);
        free(e->slots[i].pcm);
        free(e->slots[i].s16);
        free(e->slots[i].pend);
    }
    free(e->slots);
}

ct_status ct_srv_engine_create(const ct_model *m, const ct_codec *c, const ct_srv_engine_params *p,
                           ct_srv_engine **out, char *err, size_t errcap) {
    if (out) *out = NULL;
    if (!m || !c || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: NULL argument");
    ct_srv_engine_params d = ct_srv_engine_params_default();
    const ct_srv_engine_params *pp = p ? p : &d;
    if (pp->max_streams < 1 || pp->max_streams > 256)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: max_streams %d not in [1, 256]", pp->max_streams);
    if (pp->queue_cap < 0 || pp->queue_cap > 65536)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: queue %d not in [0, 65536]", pp->queue_cap);
    if (pp->codec_chunk < 1 || pp->codec_chunk > 25)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: codec_chunk %d not in [1, 25]", pp->codec_chunk);
    if (pp->max_context < 16)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: max_context %d < 16", pp->max_context);
    if (ct_codec_n_groups(c) > 64 || ct_model_get_info(m).n_groups != ct_codec_n_groups(c))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: model and codec disagree on codes per frame");
    uint64_t per_tok = pp->kv_bytes_per_token;
    if (!per_tok) {
        ct_kv_geometry geo = {0, 0, 0};
        ct_status st = pp->model_dir ? ct_model_kv_geometry(pp->model_dir, &geo, err, errcap)
                                     : ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                                               "engine: neither kv_bytes_per_token nor model_dir given");
        if (st != CT_OK) return st;
        per_tok = ct_kv_bytes_per_token(&geo, 4);
        if (!per_tok) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "engine: unknown talker KV geometry");
    }
    uint64_t per_seq = ct_kv_bytes_for_seqs(1, pp->max_context, per_tok);
    uint64_t budget = pp->kv_budget_bytes ? pp->kv_budget_bytes : per_seq * (uint64_t)pp->max_streams;
    if (budget < per_seq)
        return ct_errf(err, errcap, CT_ERR_LIMIT,
                       "engine: KV budget %llu bytes holds no stream (one needs %llu bytes: %d positions x %llu bytes)",
                       (unsigned long long)budget, (unsigned long long)per_seq, pp->max_context,
                       (unsigned long long)per_tok);
    ct_srv_engine *e = calloc(1, sizeof *e);
    if (!e) return ct_errf(err, errcap, CT_ERR_NOMEM, "engine: out of memory");
    e->m = m;
    e->codec = c;
    e->p = *pp;
    e->p.model_dir = NULL;
    int fit = ct_kv_max_seqs(budget, pp->max_context, per_tok);
    if (fit < e->p.max_streams) e->p.max_streams = fit; /* slots the budget cannot back are useless */
    e->G = ct_codec_n_groups(c);
    e->chunk = e->p.codec_chunk;
    e->spf = ct_codec_samples_per_frame(c);
    e->rate = ct_codec_sample_rate(c);
    e->kv_per_stream = per_seq;
    e->kv_per_token = per_tok;
    e->kv_budget = budget;
    e->defer_since = NAN;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_cond_init(&e->cv_jobs, NULL);
    e->slots = calloc((size_t)e->p.max_streams, sizeof *e->slots);
    e->active = calloc((size_t)e->p.max_streams, sizeof *e->active);
    ct_status st = e->slots && e->active ? CT_OK : CT_ERR_NOMEM;
    if (st == CT_OK && e->p.n_threads > 1) st = ct_pool_create(e->p.n_threads, NULL, 0, &e->codec_pool);
    if (st != CT_OK) ct_errf(err, errcap, st, "engine: out of memory");
    ct_session_params sp = ct_session_params_default();
    sp.max_context = e->p.max_context;
    sp.n_threads = e->p.n_threads;
    for (int i = 0; st == CT_OK && i < e->p.max_streams; i++) {
        stream *s = &e->slots[i];
        s->idx = i;
        s->t_play = NAN;
        s->pcm = malloc(sizeof(float) * (size_t)e->spf * (size_t)e->chunk);
        s->s16 = malloc(sizeof(int16_t) * (size_t)e->spf * (size_t)e->chunk);
        s->pend = malloc(sizeof(int32_t) * (size_t)e->G * (size_t)e->chunk);
        if (!s->pcm || !s->s16 || !s->pend) st = ct_errf(err, errcap, CT_ERR_NOMEM, "engine: out of memory");
        if (st == CT_OK) st = ct_session_create(m, &sp, &s->sess, err, errcap);
        if (st == CT_OK) st = ct_codec_stream_create(c, e->chunk, &s->cs, err, errcap);
        if (st == CT_OK && e->codec_pool) st = ct_codec_stream_set_pool(s->cs, e->codec_pool);
    }
    if (st == CT_OK)
        st = ct_batch_create(m, e->p.max_streams, e->p.max_context, e->p.n_threads, &e->batch, err, errcap);
    if (st == CT_OK) {
        e->bsess = calloc((size_t)e->p.max_streams, sizeof *e->bsess);
        e->bcodes = calloc((size_t)e->p.max_streams * (size_t)e->G, sizeof *e->bcodes);
        e->bgot = calloc((size_t)e->p.max_streams, sizeof *e->bgot);
        if (!e->bsess || !e->bcodes || !e->bgot) st = ct_errf(err, errcap, CT_ERR_NOMEM, "engine: out of memory");
    }
    if (st == CT_OK && pthread_create(&e->th, NULL, engine_main, e) != 0)
        st = ct_errf(err, errcap, CT_ERR_INTERNAL, "engine: cannot start the engine thread");
    if (st != CT_OK) {
        slots_free(e);
        free(e->active);
        ct_batch_free(e->batch);
        free(e->bsess);
        free(e->bcodes);
        free(e->bgot);
        ct_pool_free(e->codec_pool);
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        pthread_cond_destroy(&e->cv_jobs);
        free(e);
        return st;
    }
    e->th_started = 1;
    *out = e;
    return CT_OK;
}

void ct_srv_engine_free(ct_srv_engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (e->th_started) pthread_join(e->th, NULL);
    pthread_mutex_lock(&e->mu);
    while (e->n_jobs > 0) pthread_cond_wait(&e->cv_jobs, &e->mu);
    pthread_mutex_unlock(&e->mu);
    slots_free(e);
    free(e->active);
    ct_batch_free(e->batch);
    free(e->bsess);
    free(e->bcodes);
    free(e->bgot);
    ct_pool_free(e->codec_pool);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_cond_destroy(&e->cv_jobs);
    free(e);
}

int ct_srv_engine_ready(ct_srv_engine *e, char *err, size_t errcap) {
    pthread_mutex_lock(&e->mu);
    int r = e->ready;
    if (r < 0 && err && errcap) snprintf(err, errcap, "%s", e->ready_err);
    pthread_mutex_unlock(&e->mu);
    return r;
}

ct_srv_engine_limits ct_srv_engine_get_limits(const ct_srv_engine *e) {
    ct_srv_engine_limits l;
    l.max_streams = e->p.max_streams;
    l.queue_cap = e->p.queue_cap;
    l.max_context = e->p.max_context;
    l.sample_rate = e->rate;
    l.samples_per_frame = e->spf;
    l.kv_budget_bytes = e->kv_budget;
    l.kv_bytes_per_token = e->kv_per_token;
    l.kv_bytes_per_stream = e->kv_per_stream;
    l.safety_margin_ms = e->p.safety_margin_ms;
    return l;
}

ct_srv_engine_counters ct_srv_engine_get_counters(ct_srv_engine *e) {
    ct_srv_engine_counters c;
    pthread_mutex_lock(&e->mu);
    c.active = e->n_active;
    c.queued = e->q_len;
    c.admitted = e->admitted;
    c.rejected = e->rejected;
    c.queued_total = e->queued_total;
    c.completed = e->completed;
    c.failed = e->failed;
    c.cancelled = e->cancelled;
    c.deferrals = e->deferrals;
    c.forced_admissions = e->forced;
    c.underruns = e->underruns;
    c.underrun_ms = e->underrun_ms;
    c.kv_bytes_in_use = e->kv_used;
    c.step_ms = e->step_ms;
    c.prefill_ms = e->prefill_ms;
    c.audio_s = e->audio_s;
    pthread_mutex_unlock(&e->mu);
    return c;
}

typedef struct {
    char *b;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(sbuf *s, const char *fmt, ...) {
    if (s->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(s->b + s->n, s->cap - s->n, fmt, ap);
        va_end(ap);
        if (w < 0) {
            s->oom = 1;
            return;
        }
        if ((size_t)w < s->cap - s->n) {
            s->n += (size_t)w;
            return;
        }
        size_t nc = s->cap * 2 + (size_t)w;
        char *nb = realloc(s->b, nc);
        if (!nb) {
            s->oom = 1;
            return;
        }
        s->b = nb;
        s->cap = nc;
    }
}

static void metric(sbuf *s, const char *name, const char *type, const char *help, double v) {
    sb_printf(s, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

static void histo(sbuf *s, const char *name, const char *help, const uint64_t *h, const double *b, int nb,
                  double sum, uint64_t n) {
    sb_printf(s, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t acc = 0;
    for (int i = 0; i < nb; i++) {
        acc += h[i];
        sb_printf(s, "%s_bucket{le=\"%g\"} %llu\n", name, b[i], (unsigned long long)acc);
    }
    acc += h[nb];
    sb_printf(s, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.17g\n%s_count %llu\n", name,
              (unsigned long long)acc, name, sum, name, (unsigned long long)n);
}

char *ct_srv_engine_metrics_text(ct_srv_engine *e) {
    sbuf s = {malloc(4096), 0, 4096, 0};
    if (!s.b) return NULL;
    s.b[0] = 0;
    pthread_mutex_lock(&e->mu);
    metric(&s, "codectalk_ready", "gauge", "1 after warm-up", e->ready > 0 ? 1 : 0);
    metric(&s, "codectalk_streams_active", "gauge", "streams holding a slot", e->n_active);
    metric(&s, "codectalk_streams_max", "gauge", "stream slots", e->p.max_streams);
    metric(&s, "codectalk_requests_waiting", "gauge", "requests in the admission queue", e->q_len);
    metric(&s, "codectalk_queue_capacity", "gauge", "admission queue size", e->p.queue_cap);
    metric(&s, "codectalk_requests_admitted_total", "counter", "requests given a stream slot", (double)e->admitted);
    metric(&s, "codectalk_requests_rejected_total", "counter", "requests refused with 503 (queue full)",
           (double)e->rejected);
    metric(&s, "codectalk_requests_queued_total", "counter", "requests that had to wait for a slot",
           (double)e->queued_total);
    metric(&s, "codectalk_requests_completed_total", "counter", "requests whose generation finished",
           (double)e->completed);
    metric(&s, "codectalk_requests_failed_total", "counter", "requests that failed", (double)e->failed);
    metric(&s, "codectalk_requests_cancelled_total", "counter", "requests cancelled (client gone)",
           (double)e->cancelled);
    metric(&s, "codectalk_prefill_deferrals_total", "counter",
           "engine steps on which a ready prefill was held back by the playback-slack throttle",
           (double)e->deferrals);
    metric(&s, "codectalk_prefill_forced_total", "counter", "prefills started after the longest deferral",
           (double)e->forced);
    metric(&s, "codectalk_underruns_total", "counter", "ring-buffer player stalls (engine clock)",
           (double)e->underruns);
    metric(&s, "codectalk_underrun_seconds_total", "counter", "total stall time", e->underrun_ms / 1e3);
    metric(&s, "codectalk_kv_bytes_in_use", "gauge", "worst-case talker KV reserved by admitted streams",
           (double)e->kv_used);
    metric(&s, "codectalk_kv_budget_bytes", "gauge", "talker KV budget", (double)e->kv_budget);
    metric(&s, "codectalk_audio_seconds_total", "counter", "audio produced", e->audio_s);
    metric(&s, "codectalk_step_seconds", "gauge", "EWMA of one engine step (all streams)", e->step_ms / 1e3);
    metric(&s, "codectalk_prefill_seconds", "gauge", "EWMA of one prefill", e->prefill_ms / 1e3);
    histo(&s, "codectalk_ttfa_seconds", "submission to first audio", e->ttfa_hist, TTFA_BUCKETS, N_TTFA_BUCKETS,
          e->ttfa_sum, e->ttfa_n);
    histo(&s, "codectalk_rtf", "wall time from submission over audio duration", e->rtf_hist, RTF_BUCKETS,
          N_RTF_BUCKETS, e->rtf_sum, e->rtf_n);
    pthread_mutex_unlock(&e->mu);
    if (s.oom) {
        free(s.b);
        return NULL;
    }
    return s.b;
}
