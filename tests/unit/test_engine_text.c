/* Long text on the stream engine (docs/TEXT.md): a 4000-character request is prefilled one
   utterance at a time (the first utterance's prompt is that utterance's alone, however long the
   text) and its time to first audio stays flat against a 200-character request; pauses put
   exactly rate * ms / 1000 zero samples between utterances (sentence and paragraph), and the
   audio around them is the utterances' own; normalize reads the normalised text. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "test_models.h"
#include "text/sentences.h"

#define CAP (24000 * 60)
static ct_model *M;
static ct_codec *C;

static ct_engine *engine(int buffer_ms, int max_context) {
    ct_engine_params p = ct_engine_params_default();
    p.placement = CT_PLACEMENT_SERIAL;
    p.max_streams = 1;
    p.talker_threads = 1;
    p.max_context = max_context;
    p.safety_margin_ms = -1;
    if (buffer_ms) {
        p.buffer_ms = buffer_ms;
        p.max_chunk_frames = 4;
    }
    char err[512];
    ct_engine *e = NULL;
    CHECKF(ct_engine_create(M, C, &p, &e, err, sizeof err) == CT_OK, "%s", err);
    return e;
}

/* Submits g with sp, reads everything into pcm; returns the samples (-1 on failure). */
static long run(ct_engine *e, const ct_gen_params *g, const ct_stream_params *sp, float *pcm, ct_stream_info *info) {
    char err[512];
    ct_stream *s = NULL;
    if (ct_engine_submit(e, g, sp, &s, err, sizeof err) != CT_OK) {
        printf("submit: %s\n", err);
        return -1;
    }
    long n = 0;
    int fin = 0;
    while (!fin && n < CAP) n += (long)ct_stream_read(s, pcm + n, (size_t)(CAP - n < 4096 ? CAP - n : 4096), 5000, &fin);
    if (info) *info = ct_stream_get_info(s);
    int ok = ct_stream_get_info(s).status == CT_OK;
    if (!ok) printf("stream: %s\n", ct_stream_errmsg(s));
    ct_stream_release(s);
    return ok ? n : -1;
}

/* Words without any sentence punctuation, n bytes. */
static char *words(size_t n) {
    static const char *const W[] = {"river", "stone", "light", "table", "green", "cloud", "north", "paper"};
    char *t = malloc(n + 16);
    size_t u = 0;
    for (int i = 0; u < n; i++) u += (size_t)snprintf(t + u, n + 16 - u, "%s%s", u ? " " : "", W[(i * 7 + i / 3) % 8]);
    t[n] = 0;
    if (t[n - 1] == ' ') t[n - 1] = 'x';
    return t;
}

/* The first utterance's prompt length and prefill passes of text (utterance_bytes 300) on an
   engine whose ring is 2 frames (the reader reads nothing, so utterance 0 cannot finish). */
static int first_utt(const char *text, int *prompt_len, int *passes) {
    ct_engine *e = engine(80, 2048);
    if (!e) return 0;
    ct_gen_params g = ct_test_gen(text, 5, 200);
    ct_stream_params sp = ct_stream_params_default();
    ct_stream *s = NULL;
    char err[512];
    int ok = ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_OK &&
             ct_stream_wait_started(s, 60000) == CT_STREAM_RUNNING;
    ct_test_sleep_ms(50); /* the ring fills and the stream pauses inside utterance 0 */
    ct_stream_info in = ct_stream_get_info(s);
    ok = ok && in.utterance == 0;
    *prompt_len = in.prompt_len;
    *passes = in.prefill_passes;
    ct_stream_release(s);
    ct_engine_free(e);
    return ok;
}

static double median3(double a, double b, double c) {
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

/* Median TTFA (ms) of three runs of text on a fresh engine each. */
static double ttfa(const char *text, int utterance_bytes, float *pcm) {
    double t[3];
    for (int i = 0; i < 3; i++) {
        ct_engine *e = engine(0, 2048);
        ct_gen_params g = ct_test_gen(text, 9, 2); /* 2 frames per utterance: TTFA is what counts */
        ct_stream_params sp = ct_stream_params_default();
        sp.utterance_bytes = utterance_bytes;
        ct_stream_info in;
        memset(&in, 0, sizeof in);
        t[i] = e && run(e, &g, &sp, pcm, &in) > 0 ? in.ttfa_ms : NAN;
        ct_engine_free(e);
    }
    return median3(t[0], t[1], t[2]);
}

static void test_long_text(float *pcm) {
    char *long_text = words(4000), *short_text = words(200);
    /* the first utterance of the 4000-character text is the splitter's first utterance */
    ct_span u[64];
    size_t nu = ct_split_utterances(long_text, 4000, 300, u, 64);
    CHECK(nu >= 14 && u[0].len <= 300);
    char first[301];
    memcpy(first, long_text + u[0].off, u[0].len);
    first[u[0].len] = 0;
    int pl_long = 0, pp_long = 0, pl_first = 0, pp_first = 0, pl_short = 0, pp_short = 0;
    CHECK(first_utt(long_text, &pl_long, &pp_long));
    CHECK(first_utt(first, &pl_first, &pp_first));
    CHECK(first_utt(short_text, &pl_short, &pp_short));
    printf("first utterance prompt: 4000 chars %d tokens (%d passes), its first utterance alone %d (%d), "
           "200 chars %d (%d)\n", pl_long, pp_long, pl_first, pp_first, pl_short, pp_short);
    CHECK(pl_long == pl_first && pp_long == pp_first && pl_long > 0 && pl_long < 2 * pl_short);
    /* the whole text as one prompt would be over 10x longer (what utterance_bytes prevents) */
    ct_engine *e = engine(80, 4096);
    ct_gen_params g = ct_test_gen(long_text, 5, 200);
    ct_stream_params sp = ct_stream_params_default();
    sp.utterance_bytes = 0;
    ct_stream *s = NULL;
    char err[512];
    CHECK(e && ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_OK &&
          ct_stream_wait_started(s, 60000) == CT_STREAM_RUNNING);
    int whole = ct_stream_get_info(s).prompt_len;
    printf("the whole 4000 characters as one prompt: %d tokens\n", whole);
    CHECK(whole > 5 * pl_long);
    ct_stream_release(s);
    ct_engine_free(e);
    /* TTFA stays flat: the 4000-character request starts as fast as a 200-character one */
    double t_short = ttfa(short_text, 300, pcm), t_long = ttfa(long_text, 300, pcm), t_whole = ttfa(long_text, 0, pcm);
    printf("TTFA (tiny, median of 3): 200 chars %.1f ms, 4000 chars %.1f ms, 4000 chars unsplit %.1f ms\n", t_short,
           t_long, t_whole);
    CHECKF(t_long < 2.0 * t_short + 20.0, "TTFA %.1f ms for 4000 characters vs %.1f ms for 200", t_long, t_short);
    free(long_text);
    free(short_text);
}

/* Each text alone (seed), one utterance: its PCM appended at pcm + *n. */
static int append_utt(ct_engine *e, const char *text, uint64_t seed, float *pcm, long *n) {
    ct_gen_params g = ct_test_gen(text, seed, 4);
    ct_stream_params sp = ct_stream_params_default();
    sp.utterance_bytes = 0;
    long k = run(e, &g, &sp, pcm + *n, NULL);
    if (k <= 0) return 0;
    *n += k;
    return 1;
}

static void zeros(float *pcm, long *n, long k) {
    memset(pcm + *n, 0, sizeof(float) * (size_t)k);
    *n += k;
}

static void test_pauses(float *got, float *want) {
    ct_engine *e = engine(0, 512);
    if (!e) return;
    char err[512];
    /* sentence pauses: every sentence its own utterance, 250 ms between, 600 ms at the blank line */
    const char *text = "The first one is here. A second one follows!\n\nA new paragraph starts.";
    const char *utt[3] = {"The first one is here.", "A second one follows!", "A new paragraph starts."};
    long nw = 0;
    CHECK(append_utt(e, utt[0], 40, want, &nw));
    zeros(want, &nw, 250 * 24);
    CHECK(append_utt(e, utt[1], 41, want, &nw));
    zeros(want, &nw, 600 * 24);
    CHECK(append_utt(e, utt[2], 42, want, &nw));
    ct_gen_params g = ct_test_gen(text, 40, 4);
    ct_stream_params sp = ct_stream_params_default();
    sp.sentence_pause_ms = 250;
    sp.paragraph_pause_ms = 600;
    ct_stream_info in;
    long n = run(e, &g, &sp, got, &in);
    CHECKF(n == nw && nw > 0 && !memcmp(got, want, sizeof(float) * (size_t)nw), "%ld samples vs %ld", n, nw);
    CHECK(in.utterances == 3 && in.samples == (uint64_t)n);
    /* the same text without pauses: the sentences merge into one utterance per paragraph */
    sp.sentence_pause_ms = sp.paragraph_pause_ms = 0;
    CHECK(run(e, &g, &sp, got, &in) > 0 && in.utterances == 2);
    /* a paragraph pause alone: sentences still merge, the pause falls at the blank line */
    nw = 0;
    CHECK(append_utt(e, "The first one is here. A second one follows!", 40, want, &nw));
    zeros(want, &nw, 100 * 24);
    CHECK(append_utt(e, utt[2], 41, want, &nw));
    sp.paragraph_pause_ms = 100;
    n = run(e, &g, &sp, got, &in);
    CHECKF(n == nw && nw > 0 && !memcmp(got, want, sizeof(float) * (size_t)nw), "%ld samples vs %ld", n, nw);
    CHECK(in.utterances == 2);
    /* bad settings are refused at submit with a message */
    ct_stream *s = NULL;
    sp.paragraph_pause_ms = 10001;
    CHECK(ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "paragraph_pause_ms"));
    sp.paragraph_pause_ms = 0;
    sp.sentence_pause_ms = -1;
    CHECK(ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "sentence_pause_ms"));
    sp.sentence_pause_ms = 100;
    sp.output = CT_OUTPUT_CODES;
    CHECK(ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "codes"));
    sp.output = CT_OUTPUT_PCM;
    sp.utterance_bytes = 0;
    CHECK(ct_engine_submit(e, &g, &sp, &s, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "utterance_bytes"));
    CHECK(s == NULL);
    ct_engine_free(e);
}

/* normalize = 1 reads the text as its normalised form would be read (the same PCM); 0 leaves it */
static void test_normalize(float *got, float *want) {
    ct_engine *e = engine(0, 512);
    if (!e) return;
    ct_gen_params g = ct_test_gen("It costs $5.20 at 10:30 on Dec 3, 2026.", 11, 4);
    ct_stream_params sp = ct_stream_params_default();
    ct_stream_info a, b, c;
    sp.normalize = 1;
    long n = run(e, &g, &sp, got, &a);
    ct_gen_params w = ct_test_gen("It costs five dollars and twenty cents at ten thirty on December third, twenty "
                                  "twenty-six.", 11, 4);
    sp.normalize = 0;
    long nw = run(e, &w, &sp, want, &b);
    CHECKF(n > 0 && n == nw && !memcmp(got, want, sizeof(float) * (size_t)n) && a.text_tokens == b.text_tokens,
           "normalised %ld samples %d tokens vs %ld %d", n, a.text_tokens, nw, b.text_tokens);
    CHECK(run(e, &g, &sp, got, &c) > 0 && c.text_tokens != a.text_tokens); /* off: the text as written */
    g.language = "chinese";
    g.text = "\xe5\x85\xb1 5 km"; /* 共 5 km */
    sp.normalize = 1;
    n = run(e, &g, &sp, got, &a);
    w = ct_test_gen("\xe5\x85\xb1 \xe4\xba\x94\xe5\x85\xac\xe9\x87\x8c", 11, 4); /* 共 五公里 */
    w.language = "chinese";
    sp.normalize = 0;
    nw = run(e, &w, &sp, want, &b);
    CHECK(n > 0 && n == nw && !memcmp(got, want, sizeof(float) * (size_t)n));
    ct_stream *st = NULL;
    char err[512];
    sp.normalize = 2;
    CHECK(ct_engine_submit(e, &g, &sp, &st, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "normalize 2"));
    sp.normalize = 1;
    sp.text_incremental = 1;
    CHECK(ct_engine_submit(e, &g, &sp, &st, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "incremental"));
    CHECK(st == NULL);
    ct_engine_free(e);
}

int main(void) {
    CHECK(ct_test_load("tiny", "engine-text-tiny", 8, &M, &C));
    if (!M || !C) return ct_test_finish();
    float *a = malloc(sizeof(float) * CAP), *b = malloc(sizeof(float) * CAP);
    test_pauses(a, b);
    test_normalize(a, b);
    test_long_text(a);
    free(a);
    free(b);
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
