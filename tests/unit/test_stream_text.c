/* Incremental text (ct_stream_params.text_incremental): the tokenizer's stable prefix gives the
   whole text's tokens for every way the text grows; a stream fed byte by byte (split UTF-8
   sequences included, slower than the engine steps, so steps wait for their token) equals the
   one-shot stream of the whole text with non_streaming 0, across utterances and under the
   text-length budget, and plays audio before its text has ended; bad bytes, a text that never
   ends, a cancel and misuse fail that stream alone with a message, its slot freed. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "stream/engine_internal.h" /* ct_engine_test_after_pump */
#include "test_models.h"
#include "text/bpe.h"

static ct_model *M;
static ct_codec *C;
#define SPF 1920
#define CAP (4000 * SPF)

/* ---- 1. the tokenizer: stable prefixes ------------------------------------------------ */

/* Encodes text incrementally as the engine does: after each character, the stable prefix of
   the untaken rest is taken; at the end the remainder. 1 when the ids equal encode(text). */
static int incremental_same(const ct_bpe *t, const char *text, int step_chars) {
    size_t len = strlen(text), at = 0, n = 0, nf = 0;
    static int32_t got[4096], want[4096];
    if (ct_bpe_encode(t, text, len, want, 4096, &nf, NULL, 0) != CT_OK) return 0;
    size_t L = 0;
    int chars = 0;
    while (L < len) {
        L++;
        while (L < len && ((unsigned char)text[L] & 0xC0) == 0x80) L++; /* whole characters */
        if (++chars % step_chars && L < len) continue;
        size_t b = 0, k = 0;
        if (ct_bpe_stable_prefix(t, text + at, L - at, &b, NULL, 0) != CT_OK) return 0;
        if (b && ct_bpe_encode(t, text + at, b, got + n, 4096 - n, &k, NULL, 0) != CT_OK) return 0;
        n += k;
        at += b;
    }
    size_t k = 0;
    if (at < len && ct_bpe_encode(t, text + at, len - at, got + n, 4096 - n, &k, NULL, 0) != CT_OK) return 0;
    n += k;
    return n == nf && memcmp(got, want, sizeof(int32_t) * n) == 0;
}

static void test_tokenizer(void) {
    ct_bpe *t = NULL;
    char err[512];
    CHECKF(ct_bpe_load(CT_SRC_DIR "/assets/qwen3-tokenizer", &t, err, sizeof err) == CT_OK, "%s", err);
    if (!t) return;
    static const char *texts[] = {
        "Hello, world! It's a test: don't stop... 3.14 and 42nd.\n\nNew   paragraph\twith  spaces   ",
        "They'll say we've; I'M HERE  \r\n  ok?!\"' -- (yes) [no] {maybe} $5.00 100% #1 @you",
        "Caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 \xe2\x80\x94 e\xcc\x81t\xc3\xa9 (e + combining acute) \xc3\x85ngstr\xc3\xb6m",
        "\xe4\xbb\x8a\xe5\xa4\xa9\xe5\xa4\xa9\xe6\xb0\x94\xe5\xbe\x88\xe5\xa5\xbd\xe3\x80\x82\xe6\x88\x91\xe4\xbb\xac\xe5\x8e\xbb\xe5\x85\xac\xe5\x9b\xad\xef\xbc\x81 \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xe3\x81\x93\xe3\x82\x93\xe3\x81\xab\xe3\x81\xa1\xe3\x81\xaf",
        "Special <|im_end|> inside, and <|im_start|>assistant\nthen <|endoftext|> end <|im",
        "emoji \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd ok \xe1\x84\x80\xe1\x85\xa1 (jamo) x\xcc\x80\xcc\x81y",
        "a  b   c    d\n\n\n e \n f"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        for (int step = 1; step <= 5; step++)
            CHECKF(incremental_same(t, texts[i], step), "text %zu, %d characters a step", i, step);
    size_t b = 9;
    CHECK(ct_bpe_stable_prefix(t, "ab\xff", 3, &b, NULL, 0) == CT_ERR_INVALID_ARG && b == 0);
    CHECK(ct_bpe_stable_prefix(t, "Hello world", 11, &b, NULL, 0) == CT_OK && b == 5); /* " world" may grow */
    CHECK(ct_bpe_stable_prefix(t, "Hi <|im_e", 9, &b, NULL, 0) == CT_OK && b <= 3);   /* a token may be starting */
    ct_bpe_free(t);
}

/* ---- 2. the engine -------------------------------------------------------------------- */

static ct_engine *engine(int streams) {
    ct_engine_params p = ct_engine_params_default();
    p.placement = CT_PLACEMENT_SERIAL;
    p.max_streams = streams;
    p.talker_threads = 1;
    p.max_context = 512;
    p.safety_margin_ms = -1;
    char err[512];
    ct_engine *e = NULL;
    CHECKF(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK, "%s", err);
    return e;
}

typedef struct {
    ct_stream *s;
    float *pcm;
    long n;
    double first_ms; /* when the first samples were read (ms since the reader started) */
} reader;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *read_all(void *arg) {
    reader *r = arg;
    double t0 = now_ms();
    r->first_ms = -1;
    int fin = 0;
    while (!fin && r->n < CAP) {
        size_t got = ct_stream_read(r->s, r->pcm + r->n, (size_t)(CAP - r->n < 8192 ? CAP - r->n : 8192), 5000, &fin);
        if (got && r->first_ms < 0) r->first_ms = now_ms() - t0;
        r->n += (long)got;
    }
    return NULL;
}

/* One-shot: the whole text submitted at once with the streaming-text layout. */
static long one_shot(ct_engine *e, const ct_gen_params *g0, int utt_bytes, float *pcm) {
    ct_gen_params g = *g0;
    g.non_streaming = 0;
    ct_stream_params sp = ct_stream_params_default();
    sp.utterance_bytes = utt_bytes;
    ct_stream *s = NULL;
    char err[512];
    if (ct_engine_submit(e, &g, &sp, &s, err, sizeof err) != CT_OK) return -1;
    reader r = {s, pcm, 0, 0};
    read_all(&r);
    ct_status st = ct_stream_get_info(s).status;
    ct_stream_release(s);
    return st == CT_OK ? r.n : -1;
}

/* Incremental: the same text fed in pieces of `piece` bytes (1 = byte by byte, splitting every
   multi-byte character), sleeping sleep_us after each, while a thread reads. *before_end: the
   samples read before the end was sent. */
static long fed(ct_engine *e, const ct_gen_params *g0, int utt_bytes, int piece, int sleep_us, float *pcm,
                long *before_end, ct_stream_info *info) {
    ct_gen_params g = *g0;
    const char *text = g.text;
    g.text = NULL;
    ct_stream_params sp = ct_stream_params_default();
    sp.utterance_bytes = utt_bytes;
    sp.text_incremental = 1;
    ct_stream *s = NULL;
    char err[512];
    if (ct_engine_submit(e, &g, &sp, &s, err, sizeof err) != CT_OK) {
        printf("submit: %s\n", err);
        return -1;
    }
    reader r = {s, pcm, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, read_all, &r);
    size_t len = strlen(text);
    for (size_t i = 0; i < len; i += (size_t)piece) {
        size_t k = len - i < (size_t)piece ? len - i : (size_t)piece;
        if (ct_stream_append_text(s, text + i, k) != CT_OK) printf("append: %s\n", ct_stream_errmsg(s));
        if (sleep_us) nanosleep(&(struct timespec){0, sleep_us * 1000L}, NULL);
    }
    if (before_end) { /* audio must come without the end: wait for it (up to 20 s, for slow sanitizer builds) */
        for (int i = 0; i < 2000 && ct_stream_get_info(s).samples == 0; i++) ct_test_sleep_ms(10);
        *before_end = (long)ct_stream_get_info(s).samples;
    }
    CHECK(ct_stream_end_text(s) == CT_OK);
    pthread_join(th, NULL);
    if (info) *info = ct_stream_get_info(s);
    ct_status st = ct_stream_get_info(s).status;
    if (st != CT_OK) printf("stream: %s\n", ct_stream_errmsg(s));
    ct_stream_release(s);
    return st == CT_OK ? r.n : -1;
}

static int same(const float *a, long na, const float *b, long nb) {
    return na == nb && na > 0 && memcmp(a, b, sizeof(float) * (size_t)na) == 0;
}

static const char *LONG =
    "Streaming text arrives piece by piece. The engine speaks it as it comes, "
    "na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 and \xe4\xbb\x8a\xe5\xa4\xa9\xe5\xa5\xbd\xe3\x80\x82 "
    "Each sentence joins the next while it fits; long ones wait for their end. Done!";

/* Waits until the engine has no active stream (its slots are free); 1 when it happened. */
static int drained(ct_engine *e, int ms) {
    for (int i = 0; i < ms / 5; i++) {
        if (ct_engine_get_counters(e).active == 0) return 1;
        ct_test_sleep_ms(5);
    }
    return 0;
}

static void test_equal(void) {
    float *ref = malloc(sizeof(float) * CAP), *got = malloc(sizeof(float) * CAP);
    ct_engine *e = engine(2);
    if (!e || !ref || !got) goto out;
    struct {
        int utt_bytes, piece, sleep_us, budget;
    } cases[] = {{0, 1, 0, 0}, {60, 1, 300, 0}, {60, 3, 0, 1}, {40, 5, 200, 1}, {300, 2, 100, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ct_gen_params g = ct_test_gen(LONG, 11 + c, 0);
        g.max_frames = 24;
        g.min_new_tokens = 2;
        if (cases[c].budget) { /* the text-length budget binds: it grows with the tokens known */
            g.max_frames = 0;
            g.budget_base = 1;
            g.budget_per_token = 1.5f;
        }
        long nref = one_shot(e, &g, cases[c].utt_bytes, ref);
        long before = 0;
        ct_stream_info in;
        long n = fed(e, &g, cases[c].utt_bytes, cases[c].piece, cases[c].sleep_us, got,
                     cases[c].sleep_us ? &before : NULL, &in);
        CHECKF(same(got, n, ref, nref), "case %zu: %ld samples vs one-shot %ld", c, n, nref);
        CHECKF(in.state == CT_STREAM_DONE && in.utterances >= 1, "case %zu: state %d", c, in.state);
        if (cases[c].sleep_us) CHECKF(before > 0, "case %zu: no audio before the end of the text", c);
    }
out:
    ct_engine_free(e);
    free(ref);
    free(got);
}

/* Fails with a status after a piece; returns the stream for inspection. */
static void test_bad_input(void) {
    ct_engine *e = engine(2);
    if (!e) return;
    char err[512];
    ct_gen_params g = ct_test_gen("Hello there.", 5, 0);
    g.max_frames = 8;
    ct_stream_params sp = ct_stream_params_default();
    sp.text_incremental = 1;
    float *pcm = malloc(sizeof(float) * CAP);

    /* invalid UTF-8 after a split sequence: the offset in the whole text; the other stream runs on */
    ct_stream *bad = NULL, *ok = NULL;
    CHECK(ct_engine_submit(e, &g, &sp, &bad, err, sizeof err) == CT_OK);
    ct_stream_params one = ct_stream_params_default();
    ct_gen_params g2 = ct_test_gen("The other stream.", 6, 12);
    CHECK(ct_engine_submit(e, &g2, &one, &ok, err, sizeof err) == CT_OK);
    CHECK(ct_stream_append_text(bad, " And caf\xc3", 9) == CT_OK);          /* split: carried */
    CHECK(ct_stream_append_text(bad, "\xa9 ok \xc3(", 7) == CT_ERR_INVALID_ARG); /* 0xC3 then '(' */
    ct_stream_info bi = ct_stream_get_info(bad);
    CHECK(bi.state == CT_STREAM_FAILED && bi.status == CT_ERR_INVALID_ARG);
    CHECKF(strstr(ct_stream_errmsg(bad), "invalid UTF-8 at byte 26") != NULL, "%s", ct_stream_errmsg(bad));
    CHECK(ct_stream_append_text(bad, "more", 4) == CT_ERR_INVALID_ARG); /* it has failed */
    reader r = {ok, pcm, 0, 0};
    read_all(&r);
    CHECK(ct_stream_get_info(ok).state == CT_STREAM_DONE && r.n == 12L * SPF);
    ct_stream_release(bad);
    ct_stream_release(ok);

    /* a NUL byte; a text that ends inside a sequence; an empty text */
    CHECK(ct_engine_submit(e, &g, &sp, &bad, err, sizeof err) == CT_OK);
    CHECK(ct_stream_append_text(bad, "a\0b", 3) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(ct_stream_errmsg(bad), "NUL byte at byte 13") != NULL, "%s", ct_stream_errmsg(bad));
    ct_stream_release(bad);
    CHECK(ct_engine_submit(e, &g, &sp, &bad, err, sizeof err) == CT_OK);
    CHECK(ct_stream_append_text(bad, "\xe4\xbb", 2) == CT_OK);
    CHECK(ct_stream_end_text(bad) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(ct_stream_errmsg(bad), "inside a UTF-8 sequence") != NULL, "%s", ct_stream_errmsg(bad));
    ct_stream_release(bad);
    ct_gen_params empty = g;
    empty.text = "  ";
    CHECK(ct_engine_submit(e, &empty, &sp, &bad, err, sizeof err) == CT_OK);
    CHECK(ct_stream_append_text(bad, " \n ", 3) == CT_OK && ct_stream_end_text(bad) == CT_OK);
    CHECK(ct_stream_wait_started(bad, 5000) == CT_STREAM_FAILED && ct_stream_get_info(bad).status == CT_ERR_INVALID_ARG);
    CHECKF(strstr(ct_stream_errmsg(bad), "empty") != NULL, "%s", ct_stream_errmsg(bad));
    ct_stream_release(bad);

    /* misuse: append after the end, to a whole-text stream; the non-streaming layout */
    CHECK(ct_engine_submit(e, &g, &sp, &bad, err, sizeof err) == CT_OK);
    CHECK(ct_stream_end_text(bad) == CT_OK);
    CHECK(ct_stream_append_text(bad, "x", 1) == CT_ERR_STATE && ct_stream_end_text(bad) == CT_ERR_STATE);
    r = (reader){bad, pcm, 0, 0};
    read_all(&r);
    CHECK(ct_stream_get_info(bad).state == CT_STREAM_DONE && r.n > 0);
    ct_stream_release(bad);
    CHECK(ct_engine_submit(e, &g2, &one, &ok, err, sizeof err) == CT_OK);
    CHECK(ct_stream_append_text(ok, "x", 1) == CT_ERR_STATE && ct_stream_end_text(ok) == CT_ERR_STATE);
    ct_stream_release(ok);
    ct_gen_params ns = g;
    ns.non_streaming = 1;
    CHECK(ct_engine_submit(e, &ns, &sp, &bad, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "non_streaming"));
    sp.text_idle_timeout_ms = -1;
    CHECK(ct_engine_submit(e, &g, &sp, &bad, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "text_idle"));
    sp.text_idle_timeout_ms = 0;
    CHECK(drained(e, 5000));
    ct_engine_free(e);
    free(pcm);
}

/* A client that never sends the end: the idle timeout (and the deadline) end the stream and free
   its slot while another stream keeps generating; a cancel while waiting for text, likewise. */
static void test_never_ends(void) {
    ct_engine *e = engine(2);
    if (!e) return;
    char err[512];
    float *pcm = malloc(sizeof(float) * CAP);
    ct_gen_params g = ct_test_gen("Hello there, this text never ends", 5, 0);
    g.max_frames = 200;
    ct_stream_params sp = ct_stream_params_default();
    sp.text_incremental = 1;
    sp.text_idle_timeout_ms = 300;
    ct_stream *idle = NULL, *other = NULL;
    CHECK(ct_engine_submit(e, &g, &sp, &idle, err, sizeof err) == CT_OK);
    ct_gen_params g2 = ct_test_gen("Meanwhile this one runs.", 6, 40);
    ct_stream_params one = ct_stream_params_default();
    CHECK(ct_engine_submit(e, &g2, &one, &other, err, sizeof err) == CT_OK);
    reader r = {other, pcm, 0, 0};
    read_all(&r);
    CHECK(ct_stream_get_info(other).state == CT_STREAM_DONE && r.n == 40L * SPF); /* not held up by the waiting one */
    ct_stream_release(other);
    float buf[4096];
    int fin = 0;
    double t0 = now_ms();
    while (!fin && now_ms() - t0 < 5000) ct_stream_read(idle, buf, 4096, 1000, &fin);
    ct_stream_info in = ct_stream_get_info(idle);
    CHECK(in.state == CT_STREAM_FAILED && in.status == CT_ERR_TIMEOUT);
    CHECKF(strstr(ct_stream_errmsg(idle), "text_idle_timeout_ms 300") != NULL, "%s", ct_stream_errmsg(idle));
    CHECK(in.frames > 0 && in.frames < 200); /* it spoke what it had, then waited */
    CHECK(drained(e, 2000));
    CHECK(ct_engine_get_counters(e).timed_out == 1);
    ct_stream_release(idle);

    /* the deadline bounds it as well; cancel frees the slot */
    sp.text_idle_timeout_ms = 0;
    sp.deadline_ms = 400;
    CHECK(ct_engine_submit(e, &g, &sp, &idle, err, sizeof err) == CT_OK);
    fin = 0;
    t0 = now_ms();
    while (!fin && now_ms() - t0 < 5000) ct_stream_read(idle, buf, 4096, 1000, &fin);
    CHECK(ct_stream_get_info(idle).status == CT_ERR_TIMEOUT && strstr(ct_stream_errmsg(idle), "deadline_ms 400"));
    ct_stream_release(idle);
    sp.deadline_ms = 0;
    CHECK(ct_engine_submit(e, &g, &sp, &idle, err, sizeof err) == CT_OK);
    CHECK(ct_stream_wait_started(idle, 5000) == CT_STREAM_RUNNING);
    ct_stream_cancel(idle);
    fin = 0;
    while (!fin) ct_stream_read(idle, buf, 4096, 1000, &fin);
    CHECK(ct_stream_get_info(idle).status == CT_ERR_ABORTED);
    CHECK(drained(e, 2000));
    ct_stream_release(idle);
    ct_engine_free(e);
    free(pcm);
}

/* The first frame's codes need only the first token: its audio comes before the second token
   can be taken (the talker half of that frame waits for it). */
static void test_first_frame(void) {
    ct_engine *e = engine(1);
    if (!e) return;
    char err[512];
    ct_gen_params g = ct_test_gen(NULL, 3, 0);
    g.max_frames = 6;
    ct_stream_params sp = ct_stream_params_default(); /* exact schedule: a chunk per frame */
    sp.text_incremental = 1;
    ct_stream *s = NULL;
    CHECK(ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_OK);
    CHECK(ct_stream_append_text(s, "Hello th", 8) == CT_OK); /* "Hello" is taken, " th" may still grow */
    float pcm[4096];
    int fin = 0;
    size_t n = ct_stream_read(s, pcm, 4096, 5000, &fin);
    CHECKF(n > 0 && !fin, "no audio from the first token alone (%zu samples)", n);
    ct_stream_info in = ct_stream_get_info(s);
    CHECK(in.frames == 1 && in.text_tokens == 1); /* one frame out, waiting for its token */
    CHECK(ct_stream_append_text(s, "ere.", 4) == CT_OK && ct_stream_end_text(s) == CT_OK);
    while (!fin) ct_stream_read(s, pcm, 4096, 5000, &fin);
    CHECK(ct_stream_get_info(s).state == CT_STREAM_DONE);
    ct_stream_release(s);
    ct_engine_free(e);
}

/* A stream cancelled while the engine thread runs a text pump with its lock let go (the test hook
   cancels it there): the signal finds no thread waiting, and the engine must not sleep through it
   (its idle wait, with no deadline, lasts 1 s): the stream leaves its slot at once, well within
   the 500 ms allowed here. */
static ct_stream *pump_victim;
static void cancel_in_pump(ct_engine *e) {
    (void)e;
    ct_stream *s = pump_victim;
    pump_victim = NULL;
    if (s) ct_stream_cancel(s);
}
/* An incremental stream of e ("Hello there." as its request; no deadline, no text idle timeout),
   or NULL (a failed check). */
static ct_stream *incr_stream(ct_engine *e) {
    char err[512];
    ct_gen_params g = ct_test_gen("Hello there.", 5, 0);
    ct_stream_params sp = ct_stream_params_default();
    sp.text_incremental = 1;
    ct_stream *s = NULL;
    CHECKF(ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_OK, "%s", err);
    return s;
}

/* s running on its first whole tokens ("Hello there, and": " and" waits for what follows). */
static void start_running(ct_stream *s) {
    CHECK(ct_stream_append_text(s, "Hello there, and", 16) == CT_OK);
    CHECK(ct_stream_wait_started(s, 20000) == CT_STREAM_RUNNING);
}

/* The hook submits a stream B and fails it (a text ending inside a UTF-8 sequence) while it is
   queued, then releases it: all inside another stream's pump window, before the same pass's
   admission. B must not be admitted (a failed stream in a slot would hold it for good). */
static _Atomic(ct_engine *) fail_engine; /* set by the hook (the engine thread) when it ran */
static void fail_queued_in_pump(ct_engine *e) {
    ct_engine_test_after_pump = NULL; /* once */
    ct_stream *b = incr_stream(e);
    if (!b) return;
    (void)ct_stream_append_text(b, "\xe4\xbb", 2);
    CHECK(ct_stream_end_text(b) == CT_ERR_INVALID_ARG && ct_stream_get_info(b).state == CT_STREAM_FAILED);
    ct_stream_release(b);
    fail_engine = e;
}
static void test_fail_queued_during_pump(void) {
    ct_engine *e = engine(2);
    if (!e) return;
    ct_stream *a = incr_stream(e);
    if (a) {
        start_running(a);
        fail_engine = NULL;
        ct_engine_test_after_pump = fail_queued_in_pump;
        /* a pump: the hook runs in its window, on the engine thread; this thread's checks wait
           for it (the check counters are plain ints) */
        const ct_status st = ct_stream_append_text(a, "y", 1);
        for (int i = 0; i < 2000 && !fail_engine; i++) ct_test_sleep_ms(5);
        CHECK(st == CT_OK);
        CHECK(fail_engine == e); /* the hook ran */
        ct_stream_release(a);
        CHECKF(drained(e, 3000), "a stream failed while queued, in another stream's pump window, holds a slot");
    }
    ct_engine_test_after_pump = NULL;
    ct_engine_free(e);
}

static void test_cancel_during_pump(void) {
    ct_engine *e = engine(1);
    if (!e) return;
    ct_stream *s = incr_stream(e); /* no deadline, no text idle timeout: an idle engine sleeps 1 s */
    if (s) {
        /* running, then idle: the text's whole tokens spoken (or the unread ring full) */
        start_running(s);
        uint64_t steps = ct_engine_get_counters(e).steps;
        for (int still = 0; still < 20;) {
            ct_test_sleep_ms(10);
            const uint64_t now = ct_engine_get_counters(e).steps;
            still = now == steps ? still + 1 : 0;
            steps = now;
        }
        pump_victim = s;
        ct_engine_test_after_pump = cancel_in_pump;
        CHECK(ct_stream_append_text(s, "y", 1) == CT_OK); /* " andy": still no whole token; wakes the
                                                             engine for a pump, then no step */
        CHECKF(drained(e, 500), "a stream cancelled during the text pump still holds its slot after 500 ms");
        ct_engine_test_after_pump = NULL;
        CHECK(pump_victim == NULL); /* the hook ran */
        CHECK(ct_stream_get_info(s).state == CT_STREAM_FAILED && ct_stream_get_info(s).status == CT_ERR_ABORTED);
        ct_stream_release(s);
    }
    ct_engine_free(e);
}

int main(void) {
    test_tokenizer();
    CHECK(ct_test_load("tiny", "stream-text-tiny", 8, &M, &C));
    if (!M || !C) return ct_test_finish();
    test_equal();
    test_bad_input();
    test_never_ends();
    test_first_frame();
    test_cancel_during_pump();
    test_fail_queued_during_pump();
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
