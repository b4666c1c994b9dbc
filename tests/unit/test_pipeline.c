/* Streaming pipeline: stage threads produce exactly the audio of the sequential path for every
   exact-decoder schedule, a slow sink loses nothing, cancellation stops both stages, the
   windowed schedule emits the ramp's chunk sizes; serial scheduling (both stages on one pool)
   gives the same audio and chunks as overlapped, and cancels as promptly. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "codectalk.h"
#include "ct_test.h"
#include "model/session_internal.h"
#include "test_models.h"

typedef struct {
    float *pcm;
    long n, cap;
    int chunks, cancel_after, sleep_us;
    int sizes[256];
} collect;

static int sink(void *ud, const float *pcm, int n, int index) {
    collect *c = ud;
    if (c->n + n <= c->cap) memcpy(c->pcm + c->n, pcm, sizeof(float) * (size_t)n);
    c->n += n;
    if (c->chunks < 256) c->sizes[c->chunks] = n;
    c->chunks++;
    (void)index;
    if (c->sleep_us) {
        struct timespec ts = {0, c->sleep_us * 1000L};
        nanosleep(&ts, NULL);
    }
    return c->cancel_after && c->chunks >= c->cancel_after;
}

static ct_model *M;
static ct_codec *C;

static ct_gen_params gen(void) {
    ct_gen_params g = ct_gen_params_default();
    g.text = "The pipeline must match the plain loop, sample for sample.";
    g.speaker = "uncle_fu";
    g.seed = 77;
    g.max_frames = 40;
    g.min_new_tokens = 40;
    return g;
}

/* Sequential reference: session frames, one-shot decode. */
static long reference(float *pcm, long cap) {
    ct_session *s = NULL;
    char err[256];
    ct_session_create(M, NULL, &s, err, sizeof err);
    ct_gen_params g = gen();
    static int32_t codes[64 * 16];
    int n = 0, got = 1;
    ct_session_start(s, &g);
    while (got && n < 64 && ct_session_next_frame(s, codes + 16 * n, &got) == CT_OK && got) n++;
    ct_session_free(s);
    if ((long)n * 1920 > cap) return -1;
    if (ct_codec_decode(C, codes, n, pcm, err, sizeof err) != CT_OK) return -1;
    return (long)n * 1920;
}

/* Runs one request with sp and g, collecting into c (reset first). */
static ct_status run_with(const ct_synth_params *sp, const ct_gen_params *g, collect *c, ct_synth **keep) {
    char err[512];
    ct_synth *sy = NULL;
    ct_status st = ct_synth_create(M, C, sp, &sy, err, sizeof err);
    if (st != CT_OK) {
        printf("create: %s\n", err);
        return st;
    }
    c->n = c->chunks = 0;
    st = ct_synth_run(sy, g, sink, c);
    if (keep) *keep = sy;
    else ct_synth_free(sy);
    return st;
}

static void *canceller(void *arg) {
    struct timespec ts = {0, 30 * 1000000L};
    nanosleep(&ts, NULL);
    ct_synth_cancel(arg);
    return NULL;
}

/* A synth with params sp cancelled by its sink after 3 chunks (serial: within that frame),
   then from another thread; afterwards it is reusable and gives the reference PCM again. */
static void check_cancel(const ct_synth_params *sp, collect *c, const float *ref, long nref) {
    char err[256];
    ct_synth *sy = NULL;
    CHECKF(ct_synth_create(M, C, sp, &sy, err, sizeof err) == CT_OK, "%s", err);
    if (!sy) return;
    c->n = c->chunks = 0;
    c->cancel_after = 3;
    ct_gen_params g = gen();
    g.max_frames = 0;
    g.min_new_tokens = 1000;
    g.budget_base = 100000;
    CHECK(ct_synth_run(sy, &g, sink, c) == CT_ERR_ABORTED);
    CHECK(c->chunks == 3);
    ct_synth_stats ss = ct_synth_get_stats(sy);
    CHECK(ss.stop == CT_STOP_ABORTED);
    if (sp->scheduling == CT_SCHEDULING_SERIAL) CHECK(ss.frames == 3); /* stopped within the frame */
    c->cancel_after = 0;
    c->sleep_us = 1000;
    c->n = c->chunks = 0;
    pthread_t th;
    pthread_create(&th, NULL, canceller, sy);
    CHECK(ct_synth_run(sy, &g, sink, c) == CT_ERR_ABORTED);
    pthread_join(th, NULL);
    CHECK(c->chunks < 1000);
    ss = ct_synth_get_stats(sy);
    CHECK(ss.stop == CT_STOP_ABORTED);
    if (sp->scheduling == CT_SCHEDULING_SERIAL) CHECK(ss.frames - c->chunks <= 1);
    c->sleep_us = 0;
    c->n = c->chunks = 0;
    g = gen();
    CHECK(ct_synth_run(sy, &g, sink, c) == CT_OK && c->n == nref &&
          memcmp(c->pcm, ref, sizeof(float) * (size_t)nref) == 0);
    ct_synth_free(sy);
}

int main(void) {
    const char *dir = ct_test_make("tiny", "pipeline-tiny", 8);
    char err[1024];
    CHECK(dir && ct_model_load(dir, NULL, &M, err, sizeof err) == CT_OK);
    CHECK(dir && ct_codec_load(dir, &C, err, sizeof err) == CT_OK);
    if (!M || !C) return ct_test_finish();
    const long cap = 64 * 1920;
    float *ref = malloc(sizeof(float) * cap);
    long nref = reference(ref, cap);
    CHECK(nref == 40 * 1920);
    collect c = {malloc(sizeof(float) * cap), 0, cap, 0, 0, 0, {0}};

    const char *exact_scheds[] = {"exact", "ramp:2,4,8,16,25", "fixed:3,10", "adaptive", "dynamic"};
    for (int i = 0; i < 5; i++) {
        ct_synth_params sp = ct_synth_params_default();
        sp.schedule = exact_scheds[i];
        sp.queue_frames = i == 0 ? 2 : 64; /* tiny queue: stage 0 must block, not drop */
        ct_synth *sy = NULL;
        CHECKF(ct_synth_create(M, C, &sp, &sy, err, sizeof err) == CT_OK, "%s", err);
        if (!sy) continue;
        c.n = c.chunks = 0;
        c.sleep_us = i == 0 ? 2000 : 0; /* slow sink on the first run */
        ct_gen_params g = gen();
        ct_status st = ct_synth_run(sy, &g, sink, &c);
        CHECKF(st == CT_OK, "%s: %s", exact_scheds[i], ct_synth_errmsg(sy));
        CHECKF(c.n == nref && memcmp(c.pcm, ref, sizeof(float) * (size_t)nref) == 0,
               "%s: %ld samples, differs from the sequential decode", exact_scheds[i], c.n);
        ct_synth_stats ss = ct_synth_get_stats(sy);
        CHECK(ss.frames == 40 && ss.chunks == c.chunks && ss.t_first_audio_ms > 0);
        CHECK(ss.stop == CT_STOP_MAX_FRAMES);
        double tl[256];
        int ns[256];
        CHECK(ct_synth_timeline(sy, tl, ns, 256) == c.chunks);
        int mono = 1;
        for (int k = 1; k < c.chunks && k < 256; k++) mono &= tl[k] >= tl[k - 1];
        CHECK(mono);
        if (i == 0) CHECK(c.chunks == 40);
        if (i == 1) /* ramp sizes, then steady 25 capped by what is left */
            CHECK(c.chunks >= 5 && c.sizes[0] == 2 * 1920 && c.sizes[1] == 4 * 1920 &&
                  c.sizes[2] == 8 * 1920 && c.sizes[3] == 16 * 1920);
        /* a second run on the same object gives the same audio */
        if (i == 1) {
            c.n = c.chunks = 0;
            CHECK(ct_synth_run(sy, &g, sink, &c) == CT_OK && c.n == nref &&
                  memcmp(c.pcm, ref, sizeof(float) * (size_t)nref) == 0);
        }
        ct_synth_free(sy);
    }

    /* windowed decode follows the ramp and stays close to the exact decode */
    {
        ct_synth_params sp = ct_synth_params_default();
        sp.schedule = "ramp:2,4,8,16,25";
        sp.windowed = 1;
        ct_synth *sy = NULL;
        CHECK(ct_synth_create(M, C, &sp, &sy, err, sizeof err) == CT_OK);
        c.n = c.chunks = 0;
        c.sleep_us = 0;
        ct_gen_params g = gen();
        CHECK(ct_synth_run(sy, &g, sink, &c) == CT_OK && c.n == nref);
        CHECK(c.sizes[0] == 2 * 1920 && c.sizes[1] == 4 * 1920);
        /* the first chunk has no missing history: exact */
        CHECK(memcmp(c.pcm, ref, sizeof(float) * 2 * 1920) == 0);
        double e = ct_nmse(c.pcm, ref, (size_t)nref);
        printf("windowed ramp vs exact: NMSE %.2e (%.1f dB)\n", e, -10 * log10(e > 1e-30 ? e : 1e-30));
        CHECK(e < 1e-2);
        ct_synth_free(sy);
    }

    /* cancellation from the sink after 3 chunks, and from another thread */
    {
        ct_synth_params sp = ct_synth_params_default();
        sp.queue_frames = 4;
        check_cancel(&sp, &c, ref, nref);
    }

    /* the session's two halves: codes first, then the talker step; codes twice is an error */
    {
        ct_session *se = NULL;
        CHECK(ct_session_create(M, NULL, &se, err, sizeof err) == CT_OK);
        ct_gen_params g = gen();
        int32_t a[16], b[16];
        int got = 0;
        CHECK(ct_session_start(se, &g) == CT_OK);
        CHECK(ct_session_frame_codes(se, a, &got) == CT_OK && got == 1);
        CHECK(ct_session_frame_codes(se, b, &got) == CT_ERR_STATE);
        CHECK(ct_session_frame_advance(se) == CT_OK);
        CHECK(ct_session_frame_advance(se) == CT_OK); /* nothing pending: a no-op */
        CHECK(ct_session_next_frame(se, b, &got) == CT_OK && got == 1);
        ct_session_free(se);
    }

    /* serial scheduling: the same PCM and chunk sizes as overlapped (exact and windowed), for 1
       and 2 pool threads */
    {
        const char *scheds[] = {"exact", "ramp:2,4,8,16,25", "fixed:3,10"};
        collect o = {malloc(sizeof(float) * cap), 0, cap, 0, 0, 0, {0}};
        for (int i = 0; i < 3; i++)
            for (int windowed = 0; windowed < 2; windowed++) {
                if (windowed && i == 0) continue; /* exact + windowed: a 73-frame window per frame; slow */
                ct_synth_params sp = ct_synth_params_default();
                sp.schedule = scheds[i];
                sp.windowed = windowed;
                ct_gen_params g = gen();
                CHECK(run_with(&sp, &g, &o, NULL) == CT_OK && o.n == nref);
                if (!windowed) CHECK(memcmp(o.pcm, ref, sizeof(float) * (size_t)nref) == 0);
                /* 2 pool threads once: a shared 2-core box makes pool barriers slow */
                for (int threads = 1; threads <= (i == 1 && !windowed ? 2 : 1); threads++) {
                    sp.scheduling = CT_SCHEDULING_SERIAL;
                    sp.talker_threads = threads;
                    sp.queue_frames = 2; /* serial holds a whole chunk regardless */
                    ct_synth *sy = NULL;
                    ct_status st = run_with(&sp, &g, &c, &sy);
                    CHECKF(st == CT_OK, "serial %s windowed %d threads %d: %s", scheds[i], windowed, threads,
                           sy ? ct_synth_errmsg(sy) : "create");
                    if (!sy) continue;
                    CHECK(ct_synth_scheduling(sy) == CT_SCHEDULING_SERIAL);
                    CHECKF(c.n == o.n && memcmp(c.pcm, o.pcm, sizeof(float) * (size_t)o.n) == 0,
                           "serial %s windowed %d threads %d: PCM differs from overlapped", scheds[i], windowed,
                           threads);
                    CHECK(c.chunks == o.chunks);
                    for (int k = 0; k < c.chunks && k < 256; k++) CHECK(c.sizes[k] == o.sizes[k]);
                    ct_synth_stats ss = ct_synth_get_stats(sy);
                    CHECK(ss.frames == 40 && ss.chunks == c.chunks && ss.stop == CT_STOP_MAX_FRAMES);
                    CHECK(ss.t_first_frame_ms > 0 && ss.t_first_audio_ms >= ss.t_first_frame_ms &&
                          ss.t_done_ms >= ss.t_first_audio_ms);
                    CHECK(ss.stage0_ms > 0 && ss.stage1_ms > 0 && ss.prefill_ms > 0 && ss.talker_ms > 0 &&
                          ss.predictor_ms > 0);
                    CHECK(ss.stage0_ms >= ss.prefill_ms + ss.talker_ms + ss.predictor_ms - 1e-6);
                    double tl[256];
                    int ns[256], mono = 1;
                    CHECK(ct_synth_timeline(sy, tl, ns, 256) == c.chunks);
                    for (int k = 1; k < c.chunks && k < 256; k++) mono &= tl[k] >= tl[k - 1];
                    CHECK(mono && ns[0] == c.sizes[0]);
                    ct_synth_free(sy);
                }
            }
        /* overlapped with a codec pool of its own: the same PCM */
        ct_synth_params sp = ct_synth_params_default();
        sp.codec_threads = 2;
        ct_gen_params g = gen();
        CHECK(run_with(&sp, &g, &c, NULL) == CT_OK && c.n == nref &&
              memcmp(c.pcm, ref, sizeof(float) * (size_t)nref) == 0);
        free(o.pcm);
    }

    /* serial cancellation: by the sink after 3 chunks, from another thread, then reuse */
    {
        ct_synth_params sp = ct_synth_params_default();
        sp.scheduling = CT_SCHEDULING_SERIAL;
        sp.talker_threads = 2;
        check_cancel(&sp, &c, ref, nref);
    }

    /* auto: serial on <= 2 CPUs (both stages pinned to CPU 0 here), overlapped when one stage
       alone is pinned; the names parse both ways */
    {
        int cpu0 = 0;
        ct_synth_params sp = ct_synth_params_default();
        sp.scheduling = CT_SCHEDULING_AUTO;
        sp.talker_cpus = sp.codec_cpus = &cpu0;
        sp.n_talker_cpus = sp.n_codec_cpus = 1;
        ct_synth *sy = NULL;
        ct_gen_params g = gen();
        CHECK(run_with(&sp, &g, &c, &sy) == CT_OK && c.n == nref &&
              memcmp(c.pcm, ref, sizeof(float) * (size_t)nref) == 0);
        CHECK(sy && ct_synth_scheduling(sy) == CT_SCHEDULING_SERIAL);
        ct_synth_free(sy);
        sp.n_codec_cpus = 0;
        sp.codec_cpus = NULL;
        CHECK(ct_synth_create(M, C, &sp, &sy, err, sizeof err) == CT_OK);
        CHECK(ct_synth_scheduling(sy) == CT_SCHEDULING_OVERLAPPED);
        ct_synth_free(sy);
        int mode = -1;
        for (int m = 0; m <= 2; m++) CHECK(ct_scheduling_parse(ct_scheduling_str(m), &mode) == CT_OK && mode == m);
        CHECK(ct_scheduling_parse("fastest", &mode) == CT_ERR_INVALID_ARG && mode == 2);
        CHECK(strcmp(ct_scheduling_str(9), "?") == 0);
        CHECK(ct_synth_params_default().scheduling == CT_SCHEDULING_OVERLAPPED);
    }

    /* bad parameters are reported */
    ct_synth_params sp = ct_synth_params_default();
    sp.schedule = "ramp:0,2";
    ct_synth *sy = NULL;
    CHECK(ct_synth_create(M, C, &sp, &sy, err, sizeof err) == CT_ERR_INVALID_ARG && sy == NULL);
    sp.schedule = "ramp:2,4,8,16,200";
    CHECK(ct_synth_create(M, C, &sp, &sy, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(strstr(err, "max_chunk_frames") != NULL);
    sp = ct_synth_params_default();
    sp.queue_frames = 0;
    CHECK(ct_synth_create(M, C, &sp, &sy, err, sizeof err) == CT_ERR_INVALID_ARG);
    sp = ct_synth_params_default();
    sp.scheduling = 3;
    CHECK(ct_synth_create(M, C, &sp, &sy, err, sizeof err) == CT_ERR_INVALID_ARG && sy == NULL);
    CHECK(strstr(err, "scheduling") != NULL);
    free(ref);
    free(c.pcm);
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
