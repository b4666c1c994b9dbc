/* Streaming pipeline: stage threads produce exactly the audio of the sequential path for every
   exact-decoder schedule, a slow sink loses nothing, cancellation stops both stages, the
   windowed schedule emits the ramp's chunk sizes. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "codectalk.h"
#include "ct_test.h"
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

static void *canceller(void *arg) {
    struct timespec ts = {0, 30 * 1000000L};
    nanosleep(&ts, NULL);
    ct_synth_cancel(arg);
    return NULL;
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
        ct_synth *sy = NULL;
        CHECK(ct_synth_create(M, C, &sp, &sy, err, sizeof err) == CT_OK);
        c.n = c.chunks = 0;
        c.cancel_after = 3;
        ct_gen_params g = gen();
        g.max_frames = 0;
        g.min_new_tokens = 1000;
        g.budget_base = 100000;
        CHECK(ct_synth_run(sy, &g, sink, &c) == CT_ERR_ABORTED);
        CHECK(c.chunks == 3);
        CHECK(ct_synth_get_stats(sy).stop == CT_STOP_ABORTED);
        c.cancel_after = 0;
        c.sleep_us = 1000;
        c.n = c.chunks = 0;
        pthread_t th;
        pthread_create(&th, NULL, canceller, sy);
        CHECK(ct_synth_run(sy, &g, sink, &c) == CT_ERR_ABORTED);
        pthread_join(th, NULL);
        CHECK(c.chunks < 1000);
        /* the object is reusable after a cancel */
        c.sleep_us = 0;
        c.n = c.chunks = 0;
        g = gen();
        CHECK(ct_synth_run(sy, &g, sink, &c) == CT_OK && c.n == nref &&
              memcmp(c.pcm, ref, sizeof(float) * (size_t)nref) == 0);
        ct_synth_free(sy);
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
    free(ref);
    free(c.pcm);
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
