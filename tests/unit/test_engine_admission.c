/* The stream engine's deploy-profile features: prefill passes of prefill_chunk_tokens (same
   audio for every size), request deadlines (CT_ERR_TIMEOUT, also while queued), compute
   admission under a virtual clock (ct_engine_test_clock: deterministic, not timed), the queue
   limit and Retry-After from the earliest expected finish, and CPU pinning reaching the
   engine's threads. */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codectalk.h"
#include "core/clock.h"
#include "ct_test.h"
#include "serve/metrics.h"
#include "stream/engine_internal.h" /* ct_engine_test_clock, CT_ENGINE_FRAMES_PER_BYTE */
#include "test_models.h"

static ct_model *M;
static ct_codec *C;
#define SPF 1920
#define CAP (400 * SPF)

static const char *TEXT = "The engine must match the plain loop, sample for sample.";

typedef struct {
    ct_stream *s;
    float *pcm;
    long n;
} reader;

/* Reads r->s to the end into r->pcm. */
static void *read_all(void *arg) {
    reader *r = arg;
    int fin = 0;
    while (!fin && r->n < CAP) {
        size_t want = (size_t)(CAP - r->n < 4096 ? CAP - r->n : 4096);
        r->n += (long)ct_stream_read(r->s, r->pcm + r->n, want, 5000, &fin);
    }
    return NULL;
}

static ct_engine *engine(ct_engine_params p) {
    char err[512];
    ct_engine *e = NULL;
    CHECKF(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK, "%s", err);
    return e;
}

/* Defaults for the tests below: serial (the virtual clock needs it), small context. */
static ct_engine_params base(int streams) {
    ct_engine_params p = ct_engine_params_default();
    p.placement = CT_PLACEMENT_SERIAL;
    p.talker_threads = 1;
    p.max_streams = streams;
    p.max_context = 512;
    return p;
}

static ct_stream *submit(ct_engine *e, const ct_gen_params *g, const ct_stream_params *sp) {
    char err[512];
    ct_stream *s = NULL;
    CHECKF(e && ct_engine_submit(e, g, sp, &s, err, sizeof err) == CT_OK, "%s", err);
    return s;
}

/* Waits (up to 10 s) until s made at least frames frames; returns its frame count. */
static int wait_frames(ct_stream *s, int frames) {
    int f = 0;
    for (int t = 0; t < 1000 && (f = ct_stream_get_info(s).frames) < frames; t++) ct_test_sleep_ms(10);
    return f;
}

/* Waits (up to 10 s) until the counter at offset off of the engine's counters is >= want. */
static uint64_t wait_counter(ct_engine *e, size_t off, uint64_t want) {
    uint64_t v = 0;
    for (int t = 0; t < 1000; t++) {
        ct_engine_counters k = ct_engine_get_counters(e);
        memcpy(&v, (const char *)&k + off, sizeof v);
        if (v >= want) break;
        ct_test_sleep_ms(10);
    }
    return v;
}

/* Checks that the server's /metrics page for e holds every line of want[n]. */
static void expect_metrics(ct_engine *e, const char *const *want, int n) {
    ct_srv_metrics m;
    ct_srv_metrics_init(&m);
    char *page = ct_srv_metrics_text(&m, e);
    for (int i = 0; i < n; i++) CHECKF(page && strstr(page, want[i]), "metrics lack '%s'", want[i]);
    free(page);
    ct_srv_metrics_destroy(&m);
}

/* 1. prefill passes of 1, 7 and 64 tokens: passes = sum of ceil(prompt_len / chunk) over the
   utterances, and the same audio */
static void test_prefill_chunk(void) {
    char err[512];
    const char *three = "One sentence comes first. A second sentence follows it! Does the third one ask?";
    const char *utts[3] = {"One sentence comes first.", "A second sentence follows it!", "Does the third one ask?"};
    ct_gen_params g = ct_test_gen(three, 21, 8);
    /* the utterances in turn on one session, as the stream's slot runs them: the later ones
       keep the prompt positions of the voice (prompt reuse) */
    int plen[3], reused[3];
    ct_session *s = NULL;
    CHECK(ct_session_create(M, NULL, &s, err, sizeof err) == CT_OK);
    for (int u = 0; u < 3 && s; u++) {
        ct_gen_params gu = g;
        gu.text = utts[u];
        CHECK(ct_session_start(s, &gu) == CT_OK);
        plen[u] = ct_session_run_info(s).prompt_len;
        reused[u] = ct_session_run_info(s).prompt_reused;
    }
    ct_session_free(s);
    CHECKF(reused[0] == 0 && reused[1] > 0 && reused[2] == reused[1], "reused %d %d %d", reused[0], reused[1],
           reused[2]);
    static float pcm[3][CAP];
    long n[3] = {0};
    const int chunks[3] = {1, 7, 64};
    for (int i = 0; i < 3; i++) {
        ct_engine_params p = base(1);
        p.prefill_chunk_tokens = i == 2 ? 0 : chunks[i]; /* 0 = 64 */
        ct_engine *e = engine(p);
        if (!e) continue;
        CHECK(ct_engine_get_limits(e).prefill_chunk_tokens == chunks[i]);
        ct_stream_params sp = ct_stream_params_default();
        sp.utterance_bytes = 30;
        reader r = {submit(e, &g, &sp), pcm[i], 0};
        read_all(&r);
        n[i] = r.n;
        ct_stream_info in = ct_stream_get_info(r.s);
        int want = 0;
        for (int u = 0; u < 3; u++) want += (plen[u] - reused[u] + chunks[i] - 1) / chunks[i];
        CHECKF(in.state == CT_STREAM_DONE && in.utterances == 3 && in.prefill_passes == want,
               "chunk %d: %d prefill passes, want %d", chunks[i], in.prefill_passes, want);
        CHECK(in.prompt_len == plen[0] + plen[1] + plen[2]);
        CHECK(in.prompt_reused == reused[1] + reused[2]);
        ct_stream_release(r.s);
        ct_engine_free(e);
    }
    CHECK(n[0] == 24 * SPF && n[1] == n[0] && n[2] == n[0]);
    CHECK(memcmp(pcm[0], pcm[2], sizeof(float) * (size_t)n[0]) == 0);
    CHECK(memcmp(pcm[1], pcm[2], sizeof(float) * (size_t)n[0]) == 0);
    ct_engine_params p = base(1);
    p.prefill_chunk_tokens = 4097;
    ct_engine *e = NULL;
    CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "prefill_chunk_tokens"));
}

/* 2. deadlines: whole request and first audio, while queued and while generating */
static void test_deadlines(void) {
    char err[512];
    static float got[CAP];
    CHECK(strcmp(ct_status_str(CT_ERR_TIMEOUT), "timed out") == 0);
    ct_gen_params lg = ct_test_gen(TEXT, 9, 0); /* runs until cancelled */
    lg.min_new_tokens = 100000;
    lg.budget_base = 100000;
    ct_gen_params g = ct_test_gen(TEXT, 3, 10);
    { /* real clock: a stream queued behind a paused one expires on time, the idle engine wakes */
        ct_engine_params p = base(1);
        p.buffer_ms = 400;
        p.max_chunk_frames = 4;
        ct_engine *e = engine(p);
        ct_stream *a = submit(e, &lg, NULL);
        ct_stream_params sp = ct_stream_params_default();
        sp.deadline_ms = 300;
        ct_stream *b = submit(e, &g, &sp);
        CHECK(ct_stream_wait_started(b, 10000) == CT_STREAM_FAILED);
        ct_stream_info ib = ct_stream_get_info(b);
        CHECKF(ib.status == CT_ERR_TIMEOUT && ib.done_ms >= 300 && strstr(ct_stream_errmsg(b), "deadline_ms 300") &&
                   strstr(ct_stream_errmsg(b), "queued"),
               "%s (%.0f ms)", ct_stream_errmsg(b), ib.done_ms);
        int fin = 0;
        CHECK(ct_stream_read(b, got, 16, 1000, &fin) == 0 && fin == 1);
        ct_engine_counters k = ct_engine_get_counters(e);
        CHECK(k.timed_out == 1 && k.failed == 1 && k.queued == 0 && k.deferred_kv == 1); /* b waited for a's slot */
        sp = ct_stream_params_default();
        sp.first_audio_timeout_ms = -1;
        ct_stream *x = NULL;
        CHECK(ct_engine_submit(e, &g, &sp, &x, err, sizeof err) == CT_ERR_INVALID_ARG && !x &&
              strstr(err, "first_audio_timeout_ms"));
        sp.first_audio_timeout_ms = 0;
        sp.deadline_ms = -5;
        CHECK(ct_engine_submit(e, &g, &sp, &x, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "deadline_ms -5"));
        ct_stream_release(a);
        ct_stream_release(b);
        ct_engine_free(e);
    }
    { /* virtual clock, 100 ms a step: each limit passes at a known point */
        ct_engine_params p = base(1);
        p.safety_margin_ms = -1;
        ct_engine *e = engine(p);
        ct_engine_test_clock(e, 100, 0, 0);
        ct_stream_params sp = ct_stream_params_default();
        sp.deadline_ms = 1000; /* passes during the 10th step */
        ct_stream *a = submit(e, &lg, &sp);
        ct_stream_params sq = ct_stream_params_default();
        sq.first_audio_timeout_ms = 500; /* queued behind a for 1000 ms */
        ct_stream *b = submit(e, &g, &sq);
        reader ra = {a, got, 0};
        read_all(&ra);
        ct_stream_info ia = ct_stream_get_info(a);
        CHECKF(ia.status == CT_ERR_TIMEOUT &&
                   strstr(ct_stream_errmsg(a), "deadline_ms 1000 passed (while generating)") && ia.frames == 10 &&
                   ra.n == 10 * SPF,
               "%s: %d frames, %ld samples read", ct_stream_errmsg(a), ia.frames, ra.n);
        CHECK(ct_stream_wait_started(b, 10000) == CT_STREAM_FAILED);
        CHECKF(ct_stream_get_info(b).status == CT_ERR_TIMEOUT &&
                   strstr(ct_stream_errmsg(b), "first_audio_timeout_ms 500") && strstr(ct_stream_errmsg(b), "queued"),
               "%s", ct_stream_errmsg(b));
        ct_stream_params sr = ct_stream_params_default();
        sr.schedule = "fixed:8,8"; /* its first chunk needs 8 steps = 800 ms */
        sr.first_audio_timeout_ms = 500;
        ct_stream *c = submit(e, &g, &sr);
        reader rc = {c, got, 0};
        read_all(&rc);
        ct_stream_info ic = ct_stream_get_info(c);
        CHECKF(ic.status == CT_ERR_TIMEOUT &&
                   strstr(ct_stream_errmsg(c), "before the first audio (while generating)") && rc.n == 0 &&
                   ic.frames == 5,
               "%s: %d frames", ct_stream_errmsg(c), ic.frames);
        ct_engine_counters k = {0};
        for (int t = 0; t < 500 && (k = ct_engine_get_counters(e)).active > 0; t++) ct_test_sleep_ms(10);
        CHECK(k.timed_out == 3 && k.active == 0 && k.kv_bytes_in_use == 0);
        const char *lines[] = {"codectalk_requests_timed_out_total 3", "codectalk_requests_failed_total 3"};
        expect_metrics(e, lines, 2);
        reader rd = {submit(e, &g, NULL), got, 0}; /* the slot is free again */
        read_all(&rd);
        CHECK(rd.n == 10 * SPF && ct_stream_get_info(rd.s).state == CT_STREAM_DONE);
        ct_stream_release(a);
        ct_stream_release(b);
        ct_stream_release(c);
        ct_stream_release(rd.s);
        ct_engine_free(e);
    }
}

/* 3a. the playback-slack throttle under the virtual clock (10 ms a prefill pass): stream a's
   5-frame buffer is full and unread when b, in the same voice, comes.
   - a falls behind (200 ms a frame): b waits until a ends (no max_defer_ms);
   - a runs ahead (40 ms a frame) and prompts run in 1-token passes: a waits at most one pass
     before each of its steps, so its 240 ms of slack holds 4 passes and a step, not the whole
     prefill (about 220 ms): b starts at once */
static void test_throttle(void) {
    static float ga[CAP], gb[CAP];
    for (int c = 0; c < 2; c++) {
        ct_engine_params p = base(2);
        p.buffer_ms = 400; /* 5 frames */
        p.max_chunk_frames = 4;
        p.max_defer_ms = 0;
        p.prefill_chunk_tokens = c ? 1 : 0;
        ct_engine *e = engine(p);
        if (!e) return;
        ct_engine_test_clock(e, c ? 40 : 200, 0, 10);
        ct_gen_params g = ct_test_gen(TEXT, 9, 30);
        ct_stream *a = submit(e, &g, NULL);
        CHECK(wait_frames(a, 5) == 5); /* its buffer is full: it waits for its reader */
        ct_stream *b = submit(e, &g, NULL);
        if (c) {
            CHECKF(wait_frames(b, 1) >= 1, "the newcomer is %s",
                   ct_stream_get_info(b).state == CT_STREAM_QUEUED ? "held" : "slow");
        } else {
            CHECK(wait_counter(e, offsetof(ct_engine_counters, deferrals), 1) >= 1);
            CHECK(ct_stream_get_info(b).state == CT_STREAM_QUEUED);
        }
        reader ra = {a, ga, 0}, rb = {b, gb, 0};
        pthread_t th;
        pthread_create(&th, NULL, read_all, &ra);
        read_all(&rb);
        pthread_join(th, NULL);
        ct_stream_info ia = ct_stream_get_info(a), ib = ct_stream_get_info(b);
        ct_engine_counters k = ct_engine_get_counters(e);
        if (c)
            CHECKF(k.deferrals == 0 && ib.queue_ms < 1 && ia.prefill_passes == ia.prompt_len &&
                       ia.prefill_ms == 10 * ia.prompt_len,
                   "%llu deferrals, queued %.0f ms, %d passes of %d positions in %.0f ms",
                   (unsigned long long)k.deferrals, ib.queue_ms, ia.prefill_passes, ia.prompt_len, ia.prefill_ms);
        else
            CHECKF(ib.queue_ms >= 25 * 200 && k.forced_admissions == 0 && k.deferred_compute == 0 && k.completed == 2,
                   "queued %.0f ms", ib.queue_ms);
        CHECK(ra.n == 30 * SPF && rb.n == 30 * SPF && memcmp(ga, gb, sizeof(float) * 30 * SPF) == 0);
        ct_stream_release(a);
        ct_stream_release(b);
        ct_engine_free(e);
    }
}

/* 3b. compute admission: 2 streams need 130 ms a frame (predicted and virtual), 1 stream 70 ms:
   the second waits until the first ends, the queue limit holds, Retry-After comes from the
   first's expected finish, nobody stalls */
static void test_compute(void) {
    char err[512];
    static float ga[CAP], gb[CAP];
    ct_engine_params p = base(2);
    p.queue_cap = 1;
    p.buffer_ms = 400; /* 5 frames */
    p.max_chunk_frames = 4;
    p.safety_margin_ms = 2000; /* a's slack (10 ms a frame) never absorbs a 60 ms deficit */
    p.frame_ms_fixed = 10;
    p.frame_ms_per_stream = 60;
    ct_engine *e = engine(p);
    if (!e) return;
    ct_engine_test_clock(e, 10, 60, 10);
    ct_gen_params g1 = ct_test_gen(TEXT, 9, 100), g2 = ct_test_gen(TEXT, 10, 30);
    ct_stream *a = submit(e, &g1, NULL);
    CHECK(wait_frames(a, 5) == 5); /* its buffer is full: it waits for its reader */
    ct_stream *b = submit(e, &g2, NULL);
    CHECK(wait_counter(e, offsetof(ct_engine_counters, deferred_compute), 1) == 1);
    CHECK(ct_stream_get_info(b).state == CT_STREAM_QUEUED);
    /* a free slot, but the held-back head takes none: full (the /health readiness of the server) */
    CHECK(ct_engine_get_counters(e).full == 1);
    ct_stream *c = NULL;
    CHECK(ct_engine_submit(e, &g2, NULL, &c, err, sizeof err) == CT_ERR_LIMIT && !c && strstr(err, "queue"));
    /* a's expected frames: the text's estimate (under its 100-frame cap), less the 5 it made,
       at the predicted 70 ms a frame */
    double left = fmin(strlen(TEXT) * CT_ENGINE_FRAMES_PER_BYTE, 100) - 5;
    int want = (int)ceil(left * 70 / 1000);
    CHECKF(ct_engine_retry_after_s(e) == want, "retry after %d s, want %d", ct_engine_retry_after_s(e), want);
    reader ra = {a, ga, 0}, rb = {b, gb, 0};
    pthread_t th;
    pthread_create(&th, NULL, read_all, &ra);
    read_all(&rb);
    pthread_join(th, NULL);
    CHECK(ct_engine_get_counters(e).full == 0);
    ct_stream_info ia = ct_stream_get_info(a), ib = ct_stream_get_info(b);
    ct_engine_counters k = ct_engine_get_counters(e);
    CHECKF(ib.queue_ms >= 95 * 70 && ia.state == CT_STREAM_DONE && ib.state == CT_STREAM_DONE,
           "b queued %.0f ms", ib.queue_ms);
    CHECKF(ia.stalls == 0 && ib.stalls == 0, "stalls %d %d", ia.stalls, ib.stalls);
    CHECK(ra.n == 100 * SPF && rb.n == 30 * SPF);
    CHECKF(ia.prefill_ms == 10 && ib.prefill_ms == 10, "prefills of %.1f and %.1f ms on the virtual clock, want 10",
           ia.prefill_ms, ib.prefill_ms); /* one utterance each: the clock's prefill, once */
    CHECKF(k.admitted == 2 && k.deferred_compute == 1 && k.deferrals == 0 && k.deferred_kv == 0 &&
               k.rejected == 1 && k.forced_admissions == 0,
           "admitted %llu, compute %llu, slack %llu, kv %llu, rejected %llu", (unsigned long long)k.admitted,
           (unsigned long long)k.deferred_compute, (unsigned long long)k.deferrals,
           (unsigned long long)k.deferred_kv, (unsigned long long)k.rejected);
    const char *lines[] = {"codectalk_requests_deferred_compute_total 1", "codectalk_requests_deferred_kv_total 0",
                           "codectalk_requests_rejected_total 1", "codectalk_prefill_deferrals_total 0"};
    expect_metrics(e, lines, 4);
    ct_stream_release(a);
    ct_stream_release(b);
    ct_engine_free(e);
    /* bad predictions; a negative margin switches the rule off (b joins at once) */
    p = base(2);
    p.frame_ms_per_stream = -1;
    CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "frame_ms_per_stream"));
    p.frame_ms_per_stream = 0;
    p.frame_ms_fixed = NAN;
    CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "frame_ms_fixed"));
    p = base(2);
    p.buffer_ms = 400;
    p.max_chunk_frames = 4;
    p.safety_margin_ms = -1;
    p.frame_ms_per_stream = 60;
    e = engine(p);
    if (!e) return;
    ct_engine_test_clock(e, 10, 60, 10);
    a = submit(e, &g1, NULL);
    CHECK(wait_frames(a, 5) == 5);
    b = submit(e, &g2, NULL);
    CHECK(ct_stream_wait_started(b, 10000) == CT_STREAM_RUNNING && ct_engine_get_counters(e).deferred_compute == 0);
    ct_stream_release(a);
    ct_stream_release(b);
    ct_engine_free(e);
}

/* 3c. measured frame periods replace the prediction: predicted 60 ms for 2 streams, measured
   (virtual) 130 ms, so a newcomer next to a stream without slack is held back for compute */
static void test_measured(void) {
    static float gb[CAP], gc[CAP];
    ct_engine_params p = base(2);
    p.buffer_ms = 1200; /* 15 frames */
    p.max_chunk_frames = 4;
    p.safety_margin_ms = 0;
    p.max_defer_ms = 1; /* the throttle lets b in after one step */
    p.frame_ms_per_stream = 30;
    ct_engine *e = engine(p);
    if (!e) return;
    ct_engine_test_clock(e, 10, 60, 10);
    ct_gen_params g1 = ct_test_gen(TEXT, 9, 100), g2 = ct_test_gen(TEXT, 10, 20), g3 = ct_test_gen(TEXT, 11, 10);
    ct_stream *a = submit(e, &g1, NULL), *b = submit(e, &g2, NULL);
    reader rb = {b, gb, 0};
    read_all(&rb); /* a is not read: it pauses after 15 frames, most of them shared with b */
    CHECK(rb.n == 20 * SPF && wait_frames(a, 15) == 15);
    ct_stream *c = submit(e, &g3, NULL);
    CHECK(wait_counter(e, offsetof(ct_engine_counters, deferred_compute), 1) == 1);
    CHECK(ct_stream_get_info(c).state == CT_STREAM_QUEUED);
    ct_stream_cancel(a); /* a's slot frees: c runs alone */
    reader rc = {c, gc, 0};
    read_all(&rc);
    CHECK(rc.n == 10 * SPF && ct_stream_get_info(c).state == CT_STREAM_DONE);
    ct_stream_release(a);
    ct_stream_release(b);
    ct_stream_release(c);
    ct_engine_free(e);
}

/* 3d. a deficit that the admitted stream's slack absorbs: 2 streams need 90 ms a frame, a
   paused stream holds 640 ms of slack and a newcomer of 10 frames costs it 10 x 10 ms */
static void test_absorb(void) {
    ct_engine_params p = base(2);
    p.buffer_ms = 1200; /* 15 frames */
    p.max_chunk_frames = 4;
    p.safety_margin_ms = 300; /* over 640 - 42 x 10: the newcomer's 10 frames bound the deficit */
    p.frame_ms_fixed = 10;
    p.frame_ms_per_stream = 40;
    ct_engine *e = engine(p);
    if (!e) return;
    ct_engine_test_clock(e, 10, 30, 10);
    ct_gen_params g1 = ct_test_gen(TEXT, 9, 100), g2 = ct_test_gen(TEXT, 10, 10);
    ct_stream *a = submit(e, &g1, NULL);
    CHECK(wait_frames(a, 15) == 15);
    ct_stream *b = submit(e, &g2, NULL);
    CHECK(ct_stream_wait_started(b, 10000) == CT_STREAM_RUNNING);
    ct_engine_counters k = ct_engine_get_counters(e);
    CHECK(k.admitted == 2 && k.deferred_compute == 0 && k.deferrals == 0);
    ct_stream_release(a);
    ct_stream_release(b);
    ct_engine_free(e);
}

/* The Cpus_allowed_list of every thread of this process, by thread id, into ids/lists. */
static int threads(int *ids, char (*lists)[64], int cap) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) && n < cap) {
        if (de->d_name[0] == '.') continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        ids[n] = atoi(de->d_name);
        lists[n][0] = 0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Cpus_allowed_list: %63s", lists[n]) == 1) break;
        fclose(f);
        n++;
    }
    if (d) closedir(d);
    return n;
}

/* 4. pinning reaches the engine's threads: serial, and overlapped with the stages apart */
static void test_pinning(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    int first = -1, last = -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set)) last = i, first = first < 0 ? i : first;
    static float got[CAP];
    for (int pl = 0; pl < 2; pl++) {
        int ids0[64], ids1[64];
        static char l0[64][64], l1[64][64];
        int n0 = threads(ids0, l0, 64);
        ct_engine_params p = base(1);
        p.placement = pl == 0 ? CT_PLACEMENT_SERIAL : CT_PLACEMENT_OVERLAPPED;
        p.talker_threads = 2;
        p.talker_cpus = &last;
        p.n_talker_cpus = 1;
        if (pl == 1) {
            p.codec_cpus = &first;
            p.n_codec_cpus = 1;
        }
        ct_engine *e = engine(p);
        if (!e) continue;
        ct_gen_params g = ct_test_gen(TEXT, 3, 4);
        reader r = {submit(e, &g, NULL), got, 0};
        read_all(&r); /* every thread has run by now */
        CHECK(r.n == 4 * SPF);
        int n1 = threads(ids1, l1, 64), fresh = 0, talker = 0, codec = 0;
        char want_t[16], want_c[16];
        snprintf(want_t, sizeof want_t, "%d", last);
        snprintf(want_c, sizeof want_c, "%d", first);
        for (int i = 0; i < n1; i++) {
            int old = 0;
            for (int j = 0; j < n0 && !old; j++) old = ids0[j] == ids1[i];
            if (old) continue;
            fresh++;
            int is_t = strcmp(l1[i], want_t) == 0, is_c = pl == 1 && strcmp(l1[i], want_c) == 0;
            talker += is_t;
            codec += is_c && !is_t;
            CHECKF(is_t || is_c, "%s: thread %d runs on %s", ct_placement_str(p.placement), ids1[i], l1[i]);
        }
        /* serial: the engine thread and one pool worker; overlapped: those and the codec thread */
        CHECKF(fresh == (pl == 0 ? 2 : 3) && talker >= 2 && (pl == 0 || first == last || codec == 1),
               "%s: %d new threads, %d on the talker's CPU, %d on the codec's", ct_placement_str(p.placement), fresh,
               talker, codec);
        ct_stream_release(r.s);
        ct_engine_free(e);
    }
}

/* Admission binds a request to the free slot that last ran its voice, whose KV the prefill
   reuses: on 2 slots, requests of voices A, B, A in turn give the second A the first's slot
   (every position but the last reused) and its samples; B takes the unused slot. */
/* Positions a start of b keeps from a start of a on one session (prompt reuse). */
static int kept_after(const ct_gen_params *a, const ct_gen_params *b) {
    char err[512];
    ct_session *s = NULL;
    int k = -1;
    CHECK(ct_session_create(M, NULL, &s, err, sizeof err) == CT_OK);
    if (s && ct_session_start(s, a) == CT_OK && ct_session_start(s, b) == CT_OK) k = ct_session_run_info(s).prompt_reused;
    ct_session_free(s);
    return k;
}

/* 1d. one pass per scheduler pass: with 1-token passes, a stream running beside a newcomer
   keeps making frames while the newcomer's prompt runs (its chunks released inside the
   newcomer's prefill window, on one clock), and both give their solo audio */
static void test_prefill_interleave(void) {
    const char *tb = "A second request arrives while the first one speaks.";
    ct_gen_params ga = ct_test_gen(TEXT, 11, 30), gb = ct_test_gen(tb, 12, 5);
    ga.prompt_reuse = gb.prompt_reuse = 0; /* every position a pass */
    static float solo[2][CAP], pcm[2][CAP];
    long ns[2] = {0};
    for (int i = 0; i < 2; i++) { /* solo, one slot, one pass each */
        ct_engine *e = engine(base(1));
        if (!e) return;
        reader r = {submit(e, i ? &gb : &ga, NULL), solo[i], 0};
        if (r.s) read_all(&r), ct_stream_release(r.s);
        ns[i] = r.n;
        ct_engine_free(e);
    }
    ct_engine_params p = base(2);
    p.prefill_chunk_tokens = 1;
    p.safety_margin_ms = -1;
    ct_engine *e = engine(p);
    if (!e) return;
    const double t_a = ct_now_ms();
    reader ra = {submit(e, &ga, NULL), pcm[0], 0};
    pthread_t th;
    int joined = ra.s && pthread_create(&th, NULL, read_all, &ra) == 0;
    if (joined && wait_frames(ra.s, 3) >= 3) {
        const double t_b = ct_now_ms();
        reader rb = {submit(e, &gb, NULL), pcm[1], 0};
        if (rb.s) {
            read_all(&rb);
            pthread_join(th, NULL);
            joined = 0;
            ct_stream_info a = ct_stream_get_info(ra.s), b = ct_stream_get_info(rb.s);
            CHECKF(b.prefill_passes == b.prompt_len && b.prompt_len > 8, "%d passes for %d positions",
                   b.prefill_passes, b.prompt_len);
            double tl[64];
            const int nc = ct_stream_timeline(ra.s, tl, NULL, 64);
            const double w0 = t_b - t_a + b.queue_ms, w1 = t_b - t_a + b.first_frame_ms; /* on A's clock */
            int inside = 0;
            for (int k = 0; k < nc && k < 64; k++) inside += tl[k] > w0 && tl[k] < w1;
            CHECKF(inside >= b.prompt_len / 2, "%d of the running stream's chunks inside the newcomer's %d-pass "
                   "prefill (%.1f-%.1f ms)", inside, b.prefill_passes, w0, w1);
            CHECK(a.state == CT_STREAM_DONE && b.state == CT_STREAM_DONE);
            CHECK(ra.n == ns[0] && rb.n == ns[1] && ns[0] == 30 * SPF && ns[1] == 5 * SPF);
            CHECK(memcmp(pcm[0], solo[0], sizeof(float) * (size_t)ns[0]) == 0);
            CHECK(memcmp(pcm[1], solo[1], sizeof(float) * (size_t)ns[1]) == 0);
            ct_stream_release(rb.s);
        }
    }
    if (joined) pthread_join(th, NULL);
    if (ra.s) ct_stream_release(ra.s);
    ct_engine_free(e);
}

/* 1b. voices A, B, A on 2 slots: B takes the unused slot and copies the prefix it shares with A
   from A's slot; the second A returns to A's slot and keeps all but its last position; B's
   audio equals B's without reuse */
static void test_voice_slot(void) {
    ct_engine *e = engine(base(2));
    if (!e) return;
    ct_gen_params a = ct_test_gen(TEXT, 5, 6), b = a;
    b.speaker = ct_model_speaker(M, 1);
    CHECK(b.speaker && strcmp(b.speaker, a.speaker));
    const int kab = kept_after(&a, &b);
    CHECKF(kab > 0, "speakers share %d positions", kab);
    static float pcm[4][CAP];
    long n[4];
    ct_stream_info in[4];
    for (int i = 0; i < 4; i++) {
        ct_gen_params g = i == 0 || i == 2 ? a : b;
        g.prompt_reuse = i != 3;
        reader r = {submit(e, &g, NULL), pcm[i], 0};
        if (!r.s) return;
        read_all(&r);
        n[i] = r.n;
        in[i] = ct_stream_get_info(r.s);
        ct_stream_release(r.s);
        CHECK(in[i].state == CT_STREAM_DONE && n[i] == 6 * SPF);
    }
    CHECKF(in[0].prompt_reused == 0 && in[1].prompt_reused == kab && in[2].prompt_reused == in[2].prompt_len - 1 &&
               in[3].prompt_reused == 0,
           "prompt positions reused: %d %d %d %d of %d", in[0].prompt_reused, in[1].prompt_reused,
           in[2].prompt_reused, in[3].prompt_reused, in[2].prompt_len);
    CHECK(memcmp(pcm[0], pcm[2], sizeof(float) * 6 * SPF) == 0);
    CHECK(memcmp(pcm[1], pcm[3], sizeof(float) * 6 * SPF) == 0);
    CHECK(memcmp(pcm[0], pcm[1], sizeof(float) * 6 * SPF) != 0);
    const ct_engine_counters k = ct_engine_get_counters(e);
    int all = 0;
    for (int i = 0; i < 4; i++) all += in[i].prompt_len;
    const int reused = in[1].prompt_reused + in[2].prompt_reused;
    CHECKF(k.prompt_positions == (uint64_t)all && k.prompt_reused == (uint64_t)reused &&
               k.prompt_shared == (uint64_t)kab,
           "counters: %llu prompt positions, %llu reused, %llu shared", (unsigned long long)k.prompt_positions,
           (unsigned long long)k.prompt_reused, (unsigned long long)k.prompt_shared);
    char lines[3][96];
    snprintf(lines[0], sizeof lines[0], "\ncodectalk_prompt_positions_total %d\n", all);
    snprintf(lines[1], sizeof lines[1], "\ncodectalk_prompt_reused_positions_total %d\n", reused);
    snprintf(lines[2], sizeof lines[2], "\ncodectalk_prompt_shared_positions_total %d\n", kab);
    const char *want[3] = {lines[0], lines[1], lines[2]};
    expect_metrics(e, want, 3);
    ct_engine_free(e);
}

/* 1e. the prompt cache: voices A, B, A on one slot. The second A finds B in the slot (the
   positions both share) and the rest of A's voice rows in the cache; its audio is the first
   A's. Without the cache (prompt_cache_bytes 0) it keeps only what B shares. */
static void test_prompt_cache(void) {
    ct_gen_params a = ct_test_gen(TEXT, 5, 4), b = a, a2 = a;
    b.speaker = ct_model_speaker(M, 1);
    a2.text = "Another text in the first voice.";
    const int kab = kept_after(&b, &a), voice = kept_after(&a2, &a);
    CHECKF(kab > 0 && voice > kab, "B shares %d positions with A, A's voice rows %d", kab, voice);
    for (int cache = 1; cache >= 0; cache--) {
        ct_engine_params p = base(1);
        p.prompt_cache_bytes = cache ? p.prompt_cache_bytes : 0;
        ct_engine *e = engine(p);
        if (!e) return;
        static float pcm[3][CAP];
        ct_stream_info in[3];
        for (int i = 0; i < 3; i++) {
            reader r = {submit(e, i == 1 ? &b : &a, NULL), pcm[i], 0};
            if (!r.s) return;
            read_all(&r);
            in[i] = ct_stream_get_info(r.s);
            ct_stream_release(r.s);
            CHECK(in[i].state == CT_STREAM_DONE && r.n == 4 * SPF);
        }
        const int want = cache ? voice : kab;
        CHECKF(in[2].prompt_reused == want, "cache %d: the second A kept %d positions, want %d", cache,
               in[2].prompt_reused, want);
        CHECK(memcmp(pcm[0], pcm[2], sizeof(float) * 4 * SPF) == 0);
        const ct_engine_counters k = ct_engine_get_counters(e);
        CHECKF(k.prompt_cached == (uint64_t)(want - kab) && k.prompt_shared == 0, "cache %d: %llu cached, %llu shared",
               cache, (unsigned long long)k.prompt_cached, (unsigned long long)k.prompt_shared);
        if (cache) {
            char line[96];
            snprintf(line, sizeof line, "\ncodectalk_prompt_cached_positions_total %d\n", voice - kab);
            const char *w[1] = {line};
            expect_metrics(e, w, 1);
        }
        ct_engine_free(e);
    }
}

/* 1c. the same voice twice at once on 2 slots: the first holds its slot (its 3-frame buffer is
   not read), so the second starts on the other slot and copies all but its last prompt position
   from the busy one; the same audio */
static void test_shared_prefix(void) {
    ct_engine_params p = base(2);
    p.max_chunk_frames = 2;
    p.buffer_ms = 80; /* 3 frames (max_chunk_frames + 1) */
    p.safety_margin_ms = -1;
    ct_engine *e = engine(p);
    if (!e) return;
    ct_gen_params g = ct_test_gen(TEXT, 9, 8);
    static float pcm[2][CAP];
    reader r[2] = {{submit(e, &g, NULL), pcm[0], 0}, {submit(e, &g, NULL), pcm[1], 0}};
    if (r[0].s && r[1].s) {
        read_all(&r[1]);
        read_all(&r[0]);
        ct_stream_info a = ct_stream_get_info(r[0].s), b = ct_stream_get_info(r[1].s);
        CHECK(a.state == CT_STREAM_DONE && b.state == CT_STREAM_DONE && r[0].n == 8 * SPF && r[1].n == 8 * SPF);
        CHECKF(a.prompt_reused == 0 && b.prompt_reused == b.prompt_len - 1, "reused %d and %d of %d",
               a.prompt_reused, b.prompt_reused, b.prompt_len);
        CHECK(ct_engine_get_counters(e).prompt_shared == (uint64_t)(b.prompt_len - 1));
        CHECK(memcmp(pcm[0], pcm[1], sizeof(float) * 8 * SPF) == 0);
    }
    for (int i = 0; i < 2; i++)
        if (r[i].s) ct_stream_release(r[i].s);
    ct_engine_free(e);
}

int main(void) {
    CHECK(ct_test_load("tiny", "admission-tiny", 8, &M, &C));
    if (!M || !C) return ct_test_finish();
    test_prefill_chunk();
    test_voice_slot();
    test_shared_prefix();
    test_prompt_cache();
    test_prefill_interleave();
    test_deadlines();
    test_throttle();
    test_compute();
    test_measured();
    test_absorb();
    test_pinning();
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
