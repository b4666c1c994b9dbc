/* The stream engine through the public API: a stream's PCM equals the sequential reference
   (session frames + one-shot decode) for every exact-decoder schedule in both placements; a
   stream decoded in a batch of 4 equals its solo run byte for byte in both placements, its due
   chunks decoded together with the other streams' (codec.batch_push_ms step stat); a slow
   reader pauses only its own stream and loses nothing; cancel frees the slot within a step; a
   failing stream fails alone; long text runs utterance by utterance (seed + k); windowed
   decode follows the ramp; codes output equals the session's frames; admission limits. */
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h" /* ct_codec_decode until it is public */
#include "codectalk.h"
#include "core/stepstats.h"
#include "ct_test.h"
#include "test_models.h"

static ct_model *M;
static ct_codec *C;
#define SPF 1920
#define CAP (200 * SPF)

/* Sequential reference: session frames of each utterance (seed + k), one-shot decode each. */
static long reference(const ct_gen_params *g0, const char *const *utts, int n_utts, float *pcm, long cap) {
    char err[256];
    long n = 0;
    for (int u = 0; u < n_utts; u++) {
        ct_session *s = NULL;
        if (ct_session_create(M, NULL, &s, err, sizeof err) != CT_OK) return -1;
        ct_gen_params g = *g0;
        g.text = utts[u];
        g.seed = g0->seed + (uint64_t)u;
        static int32_t codes[256 * 16];
        int nf = 0, got = 1;
        if (ct_session_start(s, &g) != CT_OK) return -1;
        while (got && nf < 256 && ct_session_next_frame(s, codes + 16 * nf, &got) == CT_OK && got) nf++;
        ct_session_free(s);
        if (n + (long)nf * SPF > cap || ct_codec_decode(C, codes, nf, pcm + n, err, sizeof err) != CT_OK) return -1;
        n += (long)nf * SPF;
    }
    return n;
}

typedef struct {
    ct_stream *s;
    float *pcm;
    long n;
    int sleep_ms, cancel_after_samples;
} reader;

/* Reads s to the end into r->pcm (sleeping between reads when asked). */
static void *read_all(void *arg) {
    reader *r = arg;
    int fin = 0;
    while (!fin) {
        size_t got = ct_stream_read(r->s, r->pcm + r->n, (size_t)(CAP - r->n < 4096 ? CAP - r->n : 4096), 2000, &fin);
        r->n += (long)got;
        if (r->cancel_after_samples && r->n >= r->cancel_after_samples) ct_stream_cancel(r->s);
        if (r->sleep_ms && got) ct_test_sleep_ms(r->sleep_ms);
        if (r->n >= CAP) break;
    }
    return NULL;
}

static ct_engine *engine(int placement, int streams, int threads, int buffer_ms) {
    ct_engine_params p = ct_engine_params_default();
    p.placement = placement;
    p.max_streams = streams;
    p.talker_threads = threads;
    p.max_context = 512;
    p.queue_cap = 16;
    p.safety_margin_ms = -1; /* no throttle: every submitted stream joins the batch at once */
    if (buffer_ms) { /* a small ring: max_chunk_frames + 1 frames at least */
        p.buffer_ms = buffer_ms;
        p.max_chunk_frames = 4;
    }
    char err[512];
    ct_engine *e = NULL;
    CHECKF(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK, "%s", err);
    return e;
}

/* Submits g with schedule sched (windowed when asked) and reads it to the end. */
static long run_one(ct_engine *e, const ct_gen_params *g, const char *sched, int windowed, float *pcm,
                    ct_stream_info *info) {
    ct_stream_params sp = ct_stream_params_default();
    sp.schedule = sched;
    sp.windowed = windowed;
    ct_stream *s = NULL;
    char err[512];
    if (ct_engine_submit(e, g, &sp, &s, err, sizeof err) != CT_OK) {
        printf("submit: %s\n", err);
        return -1;
    }
    reader r = {s, pcm, 0, 0, 0};
    read_all(&r);
    if (info) *info = ct_stream_get_info(s);
    ct_status st = ct_stream_get_info(s).status;
    if (st != CT_OK) printf("stream: %s\n", ct_stream_errmsg(s));
    ct_stream_release(s);
    return st == CT_OK ? r.n : -1;
}

static int same(const float *a, long na, const float *b, long nb) {
    return na == nb && na > 0 && memcmp(a, b, sizeof(float) * (size_t)na) == 0;
}

static const char *TEXT = "The engine must match the plain loop, sample for sample.";

int main(void) {
    char err[1024];
    CHECK(ct_test_load("tiny", "engine-tiny", 8, &M, &C));
    if (!M || !C) return ct_test_finish();
    float *ref = malloc(sizeof(float) * CAP), *got = malloc(sizeof(float) * CAP);
    ct_gen_params g = ct_test_gen(TEXT, 77, 30);
    long nref = reference(&g, &TEXT, 1, ref, CAP);
    CHECK(nref == 30 * SPF);

    /* 1. every exact-decoder schedule, both placements, 1 and 2 threads: the reference PCM */
    const char *scheds[] = {"exact", "ramp:2,4,8,16,25", "fixed:3,10", "adaptive", "dynamic"};
    for (int pl = 0; pl < 2; pl++)
        for (int i = 0; i < 5; i++) {
            ct_engine *e = engine(pl, 1, i == 1 ? 2 : 1, 0);
            if (!e) continue;
            ct_stream_info in;
            long n = run_one(e, &g, scheds[i], 0, got, &in);
            CHECKF(same(got, n, ref, nref), "%s %s: %ld samples differ from the reference", ct_placement_str(pl),
                   scheds[i], n);
            CHECK(in.state == CT_STREAM_DONE && in.frames == 30 && in.stop == CT_STOP_MAX_FRAMES);
            CHECK(in.samples == (uint64_t)nref && in.ttfa_ms > 0 && in.ttfa_ms <= in.done_ms && in.utterances == 1);
            CHECK(in.prefill_ms > 0 && in.step_ms > 0 && in.codec_ms > 0);
            if (i == 0) CHECK(in.chunks == 30);
            if (i == 2) { /* both stages pinned (borrowed lists): the same audio */
                ct_engine_params pp = ct_engine_params_default();
                int cpu0 = 0;
                pp.placement = pl;
                pp.max_context = 512;
                pp.talker_cpus = &cpu0;
                pp.n_talker_cpus = 1;
                pp.codec_cpus = &cpu0;
                pp.n_codec_cpus = 1;
                ct_engine *ep = NULL;
                CHECKF(ct_engine_create(M, C, &pp, &ep, err, sizeof err) == CT_OK, "%s", err);
                cpu0 = 99; /* the engine keeps its own copy */
                long np = ep ? run_one(ep, &g, scheds[i], 0, got, NULL) : -1;
                CHECKF(same(got, np, ref, nref), "%s pinned: differs", ct_placement_str(pl));
                ct_engine_free(ep);
            }
            ct_engine_limits l = ct_engine_get_limits(e);
            CHECK(l.placement == pl && l.sample_rate == 24000 && l.samples_per_frame == SPF);
            ct_engine_free(e);
        }

    /* 2. a batch of 4 equals each stream's solo run, both placements (one windowed stream) */
    {
        const char *texts[4] = {"First stream, short.", "Second stream speaks a little longer than that.",
                                "Third.", "The fourth stream is windowed and ramps."};
        const char *sc[4] = {"exact", "ramp:2,4,8", "fixed:3,10", "ramp:2,4,8,16,25"};
        int frames[4] = {25, 40, 12, 33};
        static float solo[4][CAP];
        long nsolo[4];
        ct_engine *e1 = engine(CT_PLACEMENT_SERIAL, 1, 1, 0);
        for (int k = 0; k < 4 && e1; k++) {
            ct_gen_params gk = ct_test_gen(texts[k], 100 + (uint64_t)k, frames[k]);
            nsolo[k] = run_one(e1, &gk, sc[k], k == 3, solo[k], NULL);
            CHECK(nsolo[k] == (long)frames[k] * SPF);
        }
        ct_engine_free(e1);
        char sdir[] = "/tmp/ct_test_engine_stats_XXXXXX";
        CHECK(mkdtemp(sdir) != NULL && ct_stats_configure(sdir, err, sizeof err) == CT_OK);
        for (int pl = 0; pl < 2; pl++) {
            ct_stats_reset();
            ct_engine *e = engine(pl, 4, 2, 0);
            if (!e) continue;
            ct_stream *s[4] = {0};
            reader r[4];
            pthread_t th[4];
            static float out[4][CAP];
            for (int k = 0; k < 4; k++) {
                ct_gen_params gk = ct_test_gen(texts[k], 100 + (uint64_t)k, frames[k]);
                ct_stream_params sp = ct_stream_params_default();
                sp.schedule = sc[k];
                sp.windowed = k == 3;
                CHECK(ct_engine_submit(e, &gk, &sp, &s[k], err, sizeof err) == CT_OK);
                r[k] = (reader){s[k], out[k], 0, 0, 0};
            }
            for (int k = 0; k < 4; k++) pthread_create(&th[k], NULL, read_all, &r[k]);
            for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
            for (int k = 0; k < 4; k++) {
                CHECKF(same(out[k], r[k].n, solo[k], nsolo[k]), "%s: stream %d in a batch of 4 differs from solo",
                       ct_placement_str(pl), k);
                ct_stream_release(s[k]);
            }
            ct_engine_counters kc = ct_engine_get_counters(e);
            CHECK(kc.completed == 4 && kc.admitted == 4 && kc.active == 0 && kc.failed == 0);
            CHECK(kc.deferrals == 0 && kc.forced_admissions == 0); /* margin < 0: no throttle */
            CHECK(kc.steps < 25 + 40 + 12 + 33); /* streams shared steps */
            ct_engine_free(e);
            /* chunks of several streams due at one step went through one batched decode */
            ct_stat_summary bs;
            CHECKF(ct_stats_get(pl == CT_PLACEMENT_SERIAL ? "engine" : "codec", "codec.batch_push_ms", &bs) == 1 &&
                       bs.count > 0,
                   "%s: no batched decode", ct_placement_str(pl));
        }
        ct_stats_configure(NULL, err, sizeof err);
        ct_stats_reset();
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", sdir);
        CHECK(system(cmd) == 0);
    }

    /* 3. a slow reader pauses only its own stream and loses nothing (small buffers) */
    {
        ct_engine *e = engine(CT_PLACEMENT_OVERLAPPED, 2, 1, 400);
        ct_gen_params g2 = ct_test_gen("A second voice keeps going.", 5, 30);
        static float other_ref[CAP], other[CAP];
        long nother = reference(&g2, &g2.text, 1, other_ref, CAP);
        ct_stream *a = NULL, *b = NULL;
        CHECK(e && ct_engine_submit(e, &g, NULL, &a, err, sizeof err) == CT_OK);
        CHECK(e && ct_engine_submit(e, &g2, NULL, &b, err, sizeof err) == CT_OK);
        reader ra = {a, got, 0, 5, 0}, rb = {b, other, 0, 0, 0};
        read_all(&rb); /* nobody reads a meanwhile: its 5-frame ring fills and it pauses alone */
        ct_stream_info ia = ct_stream_get_info(a);
        CHECKF(ia.state == CT_STREAM_RUNNING && ia.frames <= 6, "the unread stream paused (state %d, %d frames)",
               ia.state, ia.frames);
        read_all(&ra);
        CHECK(same(got, ra.n, ref, nref));
        CHECK(same(other, rb.n, other_ref, nother));
        ct_stream_release(a);
        ct_stream_release(b);
        ct_engine_free(e);
    }

    /* 4. cancel frees the slot within a step; a failing stream fails alone */
    for (int pl = 0; pl < 2; pl++) {
        ct_engine *e = engine(pl, 3, 1, 0);
        if (!e) continue;
        ct_gen_params lg = ct_test_gen(TEXT, 9, 0);
        lg.min_new_tokens = 100000;
        lg.budget_base = 100000;
        ct_gen_params bad = ct_test_gen(TEXT, 1, 10);
        bad.speaker = "nobody_here";
        ct_stream *a = NULL, *b = NULL, *c = NULL;
        CHECK(ct_engine_submit(e, &lg, NULL, &a, err, sizeof err) == CT_OK);
        CHECK(ct_engine_submit(e, &bad, NULL, &b, err, sizeof err) == CT_OK);
        CHECK(ct_engine_submit(e, &g, NULL, &c, err, sizeof err) == CT_OK);
        CHECK(ct_stream_wait_started(b, 20000) == CT_STREAM_FAILED);
        CHECKF(strstr(ct_stream_errmsg(b), "nobody_here") != NULL, "message: %s", ct_stream_errmsg(b));
        CHECK(ct_stream_get_info(b).status == CT_ERR_INVALID_ARG);
        reader ra = {a, got + 0, 0, 0, 10 * SPF}, rc = {c, malloc(sizeof(float) * CAP), 0, 0, 0};
        read_all(&rc);
        CHECK(same(rc.pcm, rc.n, ref, nref));
        read_all(&ra);
        ct_stream_info ia = ct_stream_get_info(a);
        CHECK(ia.state == CT_STREAM_FAILED && ia.status == CT_ERR_ABORTED && ra.n >= 10 * SPF);
        ct_engine_counters k = {0};
        for (int t = 0; t < 200; t++) {
            k = ct_engine_get_counters(e);
            if (k.active == 0) break;
            ct_test_sleep_ms(10);
        }
        CHECK(k.active == 0 && k.kv_bytes_in_use == 0 && k.cancelled == 1 && k.failed == 1 && k.completed == 1);
        free(rc.pcm);
        ct_stream_release(a);
        ct_stream_release(b);
        ct_stream_release(c);
        ct_engine_free(e);
    }

    /* 5. long text: utterance by utterance, seed + k, audio back to back */
    {
        const char *three = "One sentence comes first. A second sentence follows it! Does the third one ask?";
        const char *utts[3] = {"One sentence comes first.", "A second sentence follows it!", "Does the third one ask?"};
        ct_gen_params g3 = ct_test_gen(three, 21, 8);
        static float r3[CAP];
        long n3 = reference(&g3, utts, 3, r3, CAP);
        ct_engine *e = engine(CT_PLACEMENT_SERIAL, 1, 1, 0);
        ct_stream_params sp = ct_stream_params_default();
        sp.utterance_bytes = 30;
        ct_stream *s = NULL;
        CHECK(e && ct_engine_submit(e, &g3, &sp, &s, err, sizeof err) == CT_OK);
        reader r = {s, got, 0, 0, 0};
        if (s) read_all(&r);
        ct_stream_info in = ct_stream_get_info(s);
        CHECK(in.utterances == 3 && in.utterance == 2 && in.frames == 24);
        CHECK(same(got, r.n, r3, n3));
        ct_stream_release(s);
        /* utterance_bytes 0: the whole text is one utterance */
        sp.utterance_bytes = 0;
        CHECK(ct_engine_submit(e, &g3, &sp, &s, err, sizeof err) == CT_OK);
        CHECK(ct_stream_wait_started(s, 20000) >= CT_STREAM_RUNNING && ct_stream_get_info(s).utterances == 1);
        ct_stream_release(s);
        ct_engine_free(e);
    }

    /* 6. windowed decode follows the ramp and stays close to the exact decode */
    {
        ct_engine *e = engine(CT_PLACEMENT_OVERLAPPED, 1, 1, 0);
        ct_stream_params sp = ct_stream_params_default();
        sp.schedule = "ramp:2,4,8,16,25";
        sp.windowed = 1;
        ct_stream *s = NULL;
        CHECK(e && ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_OK);
        reader r = {s, got, 0, 0, 0};
        if (s) read_all(&r);
        int ns[16];
        CHECK(ct_stream_timeline(s, NULL, ns, 16) == 4 && ns[0] == 2 * SPF && ns[1] == 4 * SPF &&
              ns[2] == 8 * SPF && ns[3] == 16 * SPF); /* 2 + 4 + 8 + 16 = the 30 frames */
        CHECK(r.n == nref && memcmp(got, ref, sizeof(float) * 2 * SPF) == 0);
        double d = ct_nmse(got, ref, (size_t)nref);
        printf("windowed ramp vs exact: NMSE %.2e\n", d);
        CHECK(d < 1e-2);
        ct_stream_release(s);
        ct_engine_free(e);
    }

    /* 7. codes output: the session's frames, no audio */
    {
        ct_session *se = NULL;
        CHECK(ct_session_create(M, NULL, &se, err, sizeof err) == CT_OK);
        int32_t want[30 * 16], have[30 * 16];
        int nf = 0, gf = 1;
        ct_session_start(se, &g);
        while (gf && nf < 30 && ct_session_next_frame(se, want + 16 * nf, &gf) == CT_OK && gf) nf++;
        ct_session_free(se);
        ct_engine *e = engine(CT_PLACEMENT_SERIAL, 1, 1, 0);
        ct_stream_params sp = ct_stream_params_default();
        sp.output = CT_OUTPUT_CODES;
        ct_stream *s = NULL;
        CHECK(e && ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_OK);
        size_t have_n = 0;
        int fin = 0;
        float dummy[4];
        CHECK(ct_stream_read(s, dummy, 4, 0, &fin) == 0 && fin == 1); /* a codes stream has no PCM */
        fin = 0;
        while (!fin && have_n < 30) have_n += ct_stream_read_codes(s, have + 16 * have_n, 30 - have_n, 5000, &fin);
        CHECK(nf == 30 && have_n == 30 && memcmp(want, have, sizeof want) == 0);
        ct_stream_release(s);
        ct_engine_free(e);
        /* an engine without a codec serves codes only */
        ct_engine_params p = ct_engine_params_default();
        p.max_context = 512;
        CHECK(ct_engine_create(M, NULL, &p, &e, err, sizeof err) == CT_OK);
        CHECK(e && ct_engine_submit(e, &g, NULL, &s, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "codec"));
        CHECK(e && ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_OK);
        have_n = 0;
        fin = 0;
        while (!fin && have_n < 30) have_n += ct_stream_read_codes(s, have + 16 * have_n, 30 - have_n, 5000, &fin);
        CHECK(have_n == 30 && memcmp(want, have, sizeof want) == 0);
        ct_stream_release(s);
        ct_engine_free(e);
    }

    /* 8. admission limits and bad input */
    {
        ct_engine_params p = ct_engine_params_default();
        p.max_streams = 1;
        p.queue_cap = 0;
        p.max_context = 512;
        ct_engine *e = NULL;
        CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK);
        ct_gen_params lg = ct_test_gen(TEXT, 3, 0);
        lg.min_new_tokens = 100000;
        lg.budget_base = 100000;
        ct_stream *a = NULL, *b = NULL;
        CHECK(e && ct_engine_submit(e, &lg, NULL, &a, err, sizeof err) == CT_OK);
        CHECK(ct_stream_wait_started(a, 20000) == CT_STREAM_RUNNING);
        CHECK(ct_engine_submit(e, &g, NULL, &b, err, sizeof err) == CT_ERR_LIMIT && b == NULL && strstr(err, "busy"));
        CHECK(ct_engine_get_counters(e).rejected == 1 && ct_engine_retry_after_s(e) >= 1);
        ct_stream_params bad = ct_stream_params_default();
        bad.schedule = "fixed:3,999";
        CHECK(ct_engine_submit(e, &g, &bad, &b, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "max_chunk"));
        bad = ct_stream_params_default();
        bad.schedule = "sometimes";
        CHECK(ct_engine_submit(e, &g, &bad, &b, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "sometimes"));
        ct_gen_params empty = ct_test_gen("  \n ", 1, 5);
        CHECK(ct_engine_submit(e, &empty, NULL, &b, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "empty"));
        /* the request is read through its size: an older, shorter struct gets defaults (no text) */
        ct_gen_params shortg = g;
        shortg.size = offsetof(ct_gen_params, text);
        CHECK(ct_engine_submit(e, &shortg, NULL, &b, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "no text"));
        shortg = g;
        shortg.text = NULL;
        CHECK(ct_engine_submit(e, &shortg, NULL, &b, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "no text"));
        /* freeing the engine under a held stream: the stream reads as finished, release is safe */
        ct_engine_free(e);
        int fin = 0;
        CHECK(ct_stream_read(a, got, 16, 1000, &fin) <= 16);
        for (int t = 0; t < 100 && !fin; t++) ct_stream_read(a, got, 4096, 100, &fin);
        CHECK(fin == 1 && ct_stream_get_info(a).status == CT_ERR_ABORTED);
        ct_stream_release(a);
        p.max_streams = 0;
        CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "max_streams"));
        p = ct_engine_params_default();
        p.kv_budget_bytes = 1000;
        CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_ERR_LIMIT && strstr(err, "KV budget"));
        p = ct_engine_params_default();
        p.placement = 7;
        CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "placement"));
        /* the size rule: an older caller's shorter struct keeps the defaults past its end */
        p = ct_engine_params_default();
        p.size = offsetof(ct_engine_params, placement);
        p.placement = 7; /* beyond the caller's size: not read */
        CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK);
        CHECK(e && ct_engine_get_limits(e).placement != 7);
        ct_engine_free(e);
        ct_stream_params big[2];
        memset(big, 0, sizeof big);
        big[0] = ct_stream_params_default();
        big[0].size = sizeof big;
        ((unsigned char *)big)[sizeof big - 1] = 1; /* a newer caller's field we do not know */
        p = ct_engine_params_default();
        CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK);
        CHECK(ct_engine_submit(e, &g, big, &b, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "newer"));
        ct_engine_free(e);
        int pl = -1;
        CHECK(ct_placement_parse("serial", &pl) == CT_OK && pl == CT_PLACEMENT_SERIAL);
        CHECK(ct_placement_parse("fast", &pl) == CT_ERR_INVALID_ARG);
    }

    /* 9. the playback-slack throttle defers a newcomer, then admits it after max_defer_ms */
    {
        ct_engine_params p = ct_engine_params_default();
        p.max_streams = 2;
        p.max_context = 512;
        p.safety_margin_ms = 1e9; /* no stream ever has that much slack */
        p.max_defer_ms = 300;
        ct_engine *e = NULL;
        CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK);
        ct_stream *a = NULL, *b = NULL;
        ct_gen_params lg = ct_test_gen(TEXT, 9, 0); /* runs until cancelled */
        lg.min_new_tokens = 100000;
        lg.budget_base = 100000;
        CHECK(e && ct_engine_submit(e, &lg, NULL, &a, err, sizeof err) == CT_OK);
        CHECK(e && ct_stream_wait_started(a, 20000) == CT_STREAM_RUNNING);
        CHECK(e && ct_engine_submit(e, &g, NULL, &b, err, sizeof err) == CT_OK);
        static float gb[CAP];
        reader rb = {b, gb, 0, 0, 0};
        read_all(&rb); /* nobody reads a: it stays admitted (paused when its buffer is full) */
        ct_stream_info ib = ct_stream_get_info(b);
        ct_engine_counters k = ct_engine_get_counters(e);
        CHECKF(ib.queue_ms >= 290 && k.deferrals > 0 && k.forced_admissions == 1,
               "queued %.0f ms, %llu deferrals, %llu forced", ib.queue_ms, (unsigned long long)k.deferrals,
               (unsigned long long)k.forced_admissions);
        CHECK(same(gb, rb.n, ref, nref));
        ct_stream_release(a);
        ct_stream_release(b);
        ct_engine_free(e);
    }

    /* 10. warm-up: ready after two frames; not counted as a request */
    {
        ct_engine_params p = ct_engine_params_default();
        p.warmup = 1;
        p.max_context = 512;
        ct_engine *e = NULL;
        CHECK(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK);
        int r = 0;
        for (int t = 0; t < 500 && (r = ct_engine_ready(e, err, sizeof err)) == 0; t++) ct_test_sleep_ms(10);
        CHECK(r == 1);
        ct_engine_counters k = ct_engine_get_counters(e);
        CHECK(k.admitted == 0 && k.completed == 0 && k.active == 0);
        CHECK(run_one(e, &g, "exact", 0, got, NULL) == nref && memcmp(got, ref, sizeof(float) * (size_t)nref) == 0);
        ct_engine_free(e);
    }
    free(ref);
    free(got);
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
