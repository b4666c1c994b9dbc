/* Allocation-failure injection (sqlite's method): malloc/calloc/realloc/strdup are wrapped at
   link time; for each scenario the allocations of one clean run are counted, then the scenario
   is re-run once for every N with the Nth allocation failing. Every run must end in success
   (the allocation was optional) or in a clear error (non-OK status or failed stream with a
   message), never a crash or a hang (a per-run alarm); leaks are LeakSanitizer's job in the
   sanitizer build (make test-asan), which runs this file too. Scenarios: model load, session
   create/start/frames, codec load/push/decode, the multi-stream engine, one server request. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codectalk.h"
#include "ct_test.h"
#include "serve/client.h"
#include "serve/http.h"
#include "test_models.h"

static atomic_long n_seen;    /* allocations counted in this run */
static atomic_long fail_at;   /* the allocation to fail (1-based); 0 = none */
static atomic_int counting;
static atomic_long n_failed;  /* injected failures that happened in this run */

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static int inject(void) {
    if (!atomic_load(&counting)) return 0;
    long k = atomic_fetch_add(&n_seen, 1) + 1;
    if (k == atomic_load(&fail_at)) {
        atomic_fetch_add(&n_failed, 1);
        return 1;
    }
    return 0;
}
void *__wrap_malloc(size_t n) { return inject() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { return inject() ? NULL : __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { return inject() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return inject() ? NULL : __real_strdup(s); }

static const char *DIR_;
static ct_model *M;
static ct_codec *C;
static const char *scenario_name;
static long current_n;

static void on_alarm(int sig) {
    (void)sig;
    char b[160];
    int l = snprintf(b, sizeof b, "HANG: scenario %s with allocation %ld failing\n", scenario_name, current_n);
    if (write(2, b, (size_t)l) < 0) _exit(3);
    _exit(2);
}

/* Each scenario returns 0 when it ended cleanly (success, or an error with a message) and
   fills why[] otherwise. */
typedef int (*scenario_fn)(char *why, size_t cap);

static int need_msg(ct_status st, const char *err, const char *what, char *why, size_t cap) {
    if (st == CT_OK) return 0;
    if (!err || !*err) {
        snprintf(why, cap, "%s failed with %s and no message", what, ct_status_str(st));
        return 1;
    }
    return 0;
}

static int sc_model_load(char *why, size_t cap) {
    char err[1024] = "";
    ct_model *m = NULL;
    ct_status st = ct_model_load(DIR_, NULL, &m, err, sizeof err);
    if (need_msg(st, err, "ct_model_load", why, cap)) return 1;
    if (st == CT_OK && !m) return snprintf(why, cap, "CT_OK without a model"), 1;
    ct_model_free(m);
    return 0;
}

static int sc_session(char *why, size_t cap) {
    char err[1024] = "";
    ct_session *s = NULL;
    ct_status st = ct_session_create(M, NULL, &s, err, sizeof err);
    if (need_msg(st, err, "ct_session_create", why, cap)) return 1;
    if (st != CT_OK) return 0;
    ct_gen_params g = ct_test_gen("Failing allocations end cleanly.", 3, 3);
    st = ct_session_start(s, &g);
    if (need_msg(st, ct_session_errmsg(s), "ct_session_start", why, cap)) return ct_session_free(s), 1;
    int got = 1;
    int32_t codes[16];
    while (st == CT_OK && got) st = ct_session_next_frame(s, codes, &got);
    int bad = need_msg(st, ct_session_errmsg(s), "ct_session_next_frame", why, cap);
    ct_session_free(s);
    return bad;
}

static int sc_codec(char *why, size_t cap) {
    char err[1024] = "";
    ct_codec *c = NULL;
    ct_status st = ct_codec_load(DIR_, &c, err, sizeof err);
    if (need_msg(st, err, "ct_codec_load", why, cap)) return 1;
    if (st != CT_OK) return 0;
    int32_t codes[3 * 16];
    for (int i = 0; i < 3 * 16; i++) codes[i] = (i * 37) % 2048;
    float *pcm = __real_malloc(sizeof(float) * 3 * 1920);
    ct_codec_stream *cs = NULL;
    st = ct_codec_stream_create(c, 2, &cs, err, sizeof err);
    int bad = need_msg(st, err, "ct_codec_stream_create", why, cap);
    if (st == CT_OK) {
        st = ct_codec_stream_push(cs, codes, 2, pcm, err, sizeof err);
        bad |= need_msg(st, err, "ct_codec_stream_push", why, cap);
        ct_codec_stream_free(cs);
    }
    err[0] = 0;
    st = ct_codec_decode(c, codes, 3, pcm, err, sizeof err);
    bad |= need_msg(st, err, "ct_codec_decode", why, cap);
    free(pcm);
    ct_codec_free(c);
    return bad;
}

static int sc_engine(char *why, size_t cap) {
    char err[1024] = "";
    ct_engine_params ep = ct_engine_params_default();
    ep.max_streams = 2;
    ep.max_context = 256;
    ep.talker_threads = 1;
    ep.buffer_ms = 2000;
    ct_engine *e = NULL;
    ct_status st = ct_engine_create(M, C, &ep, &e, err, sizeof err);
    if (need_msg(st, err, "ct_engine_create", why, cap)) return 1;
    if (st != CT_OK) return 0;
    int bad = 0;
    ct_stream *s[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        ct_gen_params g = ct_test_gen("Two streams, one failing allocation.", 10 + (uint64_t)i, 3);
        ct_stream_params sp = ct_stream_params_default();
        err[0] = 0;
        st = ct_engine_submit(e, &g, &sp, &s[i], err, sizeof err);
        bad |= need_msg(st, err, "ct_engine_submit", why, cap);
    }
    float pcm[4096];
    for (int i = 0; i < 2; i++) {
        if (!s[i]) continue;
        int fin = 0;
        while (!fin) ct_stream_read(s[i], pcm, 4096, 20000, &fin);
        ct_stream_info in = ct_stream_get_info(s[i]);
        if (in.state == CT_STREAM_FAILED && !*ct_stream_errmsg(s[i])) {
            snprintf(why, cap, "stream %d failed (%s) with no message", i, ct_status_str(in.status));
            bad = 1;
        } else if (in.state != CT_STREAM_FAILED && in.samples != 3 * 1920) {
            snprintf(why, cap, "stream %d ended %d with %llu samples, not 3 frames", i, (int)in.state,
                     (unsigned long long)in.samples);
            bad = 1;
        }
        ct_stream_release(s[i]);
    }
    ct_engine_free(e);
    return bad;
}

static int sc_server(char *why, size_t cap) {
    char err[1024] = "";
    ct_engine_params ep = ct_engine_params_default();
    ep.max_context = 256;
    ep.talker_threads = 1;
    ep.buffer_ms = 2000;
    ct_engine *e = NULL;
    /* the engine is the scenario above; here only the server's own allocations count */
    atomic_store(&counting, 0);
    ct_status st = ct_engine_create(M, C, &ep, &e, err, sizeof err);
    atomic_store(&counting, 1);
    if (st != CT_OK) return snprintf(why, cap, "engine: %s", err), 1;
    ct_http_params hp = ct_http_params_default();
    hp.model_id = "tiny";
    ct_http *h = NULL;
    st = ct_http_start(e, M, &hp, &h, err, sizeof err);
    int bad = need_msg(st, err, "ct_http_start", why, cap);
    if (st == CT_OK) {
        const char *body = "{\"model\":\"tiny\",\"input\":\"One request.\",\"voice\":\"uncle_fu\","
                           "\"response_format\":\"pcm\",\"max_frames\":3,\"seed\":4}";
        ct_http_resp r;
        err[0] = 0;
        st = ct_http_request("127.0.0.1", ct_http_port(h), "POST", "/v1/audio/speech", NULL, body, strlen(body),
                             20000, NULL, NULL, &r, err, sizeof err);
        bad |= need_msg(st, err, "ct_http_request", why, cap);
        if (st == CT_OK) {
            /* a whole answer, or an error status; never a 200 with a short body of raw PCM
               unless the stream was cut (then the length is not a whole frame count) */
            if (r.status == 200 && r.body_len != 3 * 1920 * 2 && r.body_len % (1920 * 2) == 0 && r.body_len) {
                snprintf(why, cap, "200 with %zu bytes (a whole-looking short body)", r.body_len);
                bad = 1;
            }
            ct_http_resp_free(&r);
        }
        ct_http_stop(h);
    }
    atomic_store(&counting, 0);
    ct_engine_free(e);
    atomic_store(&counting, 1);
    return bad;
}

/* Counts a clean run's allocations, then fails each one in turn. */
static void sweep(const char *name, scenario_fn fn, long max_runs) {
    char why[512] = "";
    scenario_name = name;
    current_n = 0;
    atomic_store(&fail_at, 0);
    atomic_store(&n_seen, 0);
    atomic_store(&counting, 1);
    alarm(120);
    int bad = fn(why, sizeof why);
    alarm(0);
    atomic_store(&counting, 0);
    long total = atomic_load(&n_seen);
    CHECKF(!bad, "%s, clean run: %s", name, why);
    CHECKF(total > 0, "%s: no allocation counted (the wrap is not linked?)", name);
    long step = total > max_runs ? (total + max_runs - 1) / max_runs : 1;
    long runs = 0, failures_hit = 0;
    for (long k = 1; k <= total; k += step) {
        current_n = k;
        why[0] = 0;
        atomic_store(&n_seen, 0);
        atomic_store(&n_failed, 0);
        atomic_store(&fail_at, k);
        atomic_store(&counting, 1);
        alarm(120);
        bad = fn(why, sizeof why);
        alarm(0);
        atomic_store(&counting, 0);
        atomic_store(&fail_at, 0);
        runs++;
        failures_hit += atomic_load(&n_failed) > 0;
        CHECKF(!bad, "%s with allocation %ld of %ld failing: %s", name, k, total, why);
    }
    printf("%-12s %5ld allocations, %5ld runs (every %ld), %ld with the failure injected\n", name, total, runs,
           step, failures_hit);
    CHECKF(failures_hit == runs, "%s: %ld of %ld runs hit their injected failure", name, failures_hit, runs);
}

int main(void) {
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    char err[1024];
    DIR_ = ct_test_make("tiny", "alloc-fail-tiny", 2);
    CHECK(DIR_ != NULL);
    if (!DIR_) return ct_test_finish();
    CHECK(ct_model_load(DIR_, NULL, &M, err, sizeof err) == CT_OK);
    CHECK(ct_codec_load(DIR_, &C, err, sizeof err) == CT_OK);
    if (!M || !C) return ct_test_finish();
    /* CT_ALLOC_FAIL_MAX_RUNS bounds the runs per scenario (every Nth allocation); 0 = all */
    const char *mr = getenv("CT_ALLOC_FAIL_MAX_RUNS");
    long max_runs = mr ? atol(mr) : 0;
    if (max_runs <= 0) max_runs = 1L << 30;
    sweep("model-load", sc_model_load, max_runs);
    sweep("session", sc_session, max_runs);
    sweep("codec", sc_codec, max_runs);
    sweep("engine", sc_engine, max_runs);
    sweep("server", sc_server, max_runs);
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
