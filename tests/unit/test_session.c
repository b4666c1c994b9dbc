/* Sessions on a tiny random model: prompt layouts and lengths, speaker/language/dialect rules,
   seeded replay, stop reasons, bad requests, thread-count (and borrowed-pool) invariance. */
#include <string.h>

#include "codectalk.h"
#include "core/pool.h"
#include "ct_test.h"
#include "model/session_internal.h"
#include "test_models.h"

static ct_model *M;

static ct_session *new_session(int ctx) {
    ct_session_params sp = ct_session_params_default();
    sp.max_context = ctx;
    ct_session *s = NULL;
    char err[512];
    ct_status st = ct_session_create(M, &sp, &s, err, sizeof err);
    CHECKF(st == CT_OK, "%s", err);
    return s;
}

/* Runs a full generation and returns frames written into out[cap][16]. */
static int run(ct_session *s, ct_gen_params *g, int32_t *out, int cap) {
    if (ct_session_start(s, g) != CT_OK) return -1;
    int n = 0, got = 1;
    while (n < cap) {
        if (ct_session_next_frame(s, out + 16 * n, &got) != CT_OK) return -1;
        if (!got) break;
        n++;
    }
    return n;
}

static int text_tokens(const char *text) {
    int32_t ids[256];
    size_t n;
    char err[256];
    ct_tokenize(M, text, strlen(text), ids, 256, &n, err, sizeof err);
    return (int)n;
}

static void test_layouts(void) {
    ct_session *s = new_session(256);
    const char *text = "Hello there, friend.";
    int N = text_tokens(text);
    ct_gen_params g = ct_gen_params_default();
    g.text = text;
    g.speaker = "Vivian"; /* case-insensitive */
    g.language = "English";
    g.max_frames = 1;
    CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
    CHECK(ct_session_run_info(s).prompt_len == N + 11); /* CustomVoice non-streaming default */
    CHECK(ct_session_run_info(s).text_tokens == N);
    g.language = "auto";
    CHECK(ct_session_start(s, &g) == CT_OK);
    CHECK(ct_session_run_info(s).prompt_len == N + 10);
    g.language = NULL;
    CHECK(ct_session_start(s, &g) == CT_OK);
    CHECK(ct_session_run_info(s).prompt_len == N + 10);
    g.language = "english";
    g.non_streaming = 0;
    CHECK(ct_session_start(s, &g) == CT_OK);
    CHECK(ct_session_run_info(s).prompt_len == 10);
    CHECK(s->n_trailing == N);
    /* trailing rows: t(T_2..T_N), then t(tts_eos) */
    float *e = malloc((size_t)M->cfg.talker.hidden * sizeof(float));
    ct_embed_text(M, M->cfg.tts_eos, e, s->etmp);
    CHECK(memcmp(e, s->trailing + (size_t)(N - 1) * M->cfg.talker.hidden,
                 (size_t)M->cfg.talker.hidden * sizeof(float)) == 0);
    /* prompt row 3 (first header position): P + c(think) */
    float *row = malloc((size_t)M->cfg.talker.hidden * sizeof(float));
    memcpy(row, s->pad_row, (size_t)M->cfg.talker.hidden * sizeof(float));
    ct_embed_codec_add(M, M->cfg.codec_think, row);
    CHECK(memcmp(row, s->prompt + 3 * (size_t)M->cfg.talker.hidden,
                 (size_t)M->cfg.talker.hidden * sizeof(float)) == 0);
    free(e);
    free(row);

    /* dialect override: eric + chinese == eric + sichuan_dialect; eric + english differs */
    const size_t H = (size_t)M->cfg.talker.hidden;
    g.non_streaming = 1;
    g.speaker = "eric";
    g.language = "chinese";
    CHECK(ct_session_start(s, &g) == CT_OK);
    int L = ct_session_run_info(s).prompt_len;
    float *p1 = malloc((size_t)L * H * sizeof(float));
    memcpy(p1, s->prompt, (size_t)L * H * sizeof(float));
    g.language = "sichuan_dialect";
    CHECK(ct_session_start(s, &g) == CT_OK);
    CHECK(memcmp(p1, s->prompt, (size_t)L * H * sizeof(float)) == 0);
    g.language = "auto"; /* auto also takes the dialect (and so keeps the think header) */
    CHECK(ct_session_start(s, &g) == CT_OK);
    CHECK(ct_session_run_info(s).prompt_len == L);
    CHECK(memcmp(p1, s->prompt, (size_t)L * H * sizeof(float)) == 0);
    g.language = "english";
    CHECK(ct_session_start(s, &g) == CT_OK);
    CHECK(memcmp(p1, s->prompt, (size_t)L * H * sizeof(float)) != 0);
    free(p1);
    ct_session_free(s);
}

static void test_errors(void) {
    ct_session *s = new_session(64);
    ct_gen_params g = ct_gen_params_default();
    g.text = "Hi.";
    g.speaker = "nobody";
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(ct_session_errmsg(s), "nobody") && strstr(ct_session_errmsg(s), "vivian"), "%s",
           ct_session_errmsg(s));
    g.speaker = NULL;
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    CHECK(strstr(ct_session_errmsg(s), "needs a speaker") != NULL);
    g.speaker = "ryan";
    g.language = "klingon";
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(ct_session_errmsg(s), "klingon") && strstr(ct_session_errmsg(s), "english") &&
           strstr(ct_session_errmsg(s), "auto"), "%s", ct_session_errmsg(s));
    g.language = NULL;
    g.text = "";
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    CHECK(strstr(ct_session_errmsg(s), "empty") != NULL);
    g.text = "\nstarts with a newline";
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    g.text = "Hi.";
    g.instruct = "whisper"; /* tiny is a 0.6B CustomVoice: no instructions */
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    g.instruct = NULL;
    float xv[4] = {0};
    g.xvector = xv;
    g.xvector_len = 4;
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    g.xvector = NULL;
    g.temperature = 0.0f;
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    g.temperature = -1.0f;
    /* text longer than the context */
    char *longt = malloc(4000);
    for (int i = 0; i < 3999; i++) longt[i] = (i % 6 == 5) ? ' ' : 'a' + (i % 7);
    longt[3999] = 0;
    g.text = longt;
    CHECK(ct_session_start(s, &g) == CT_ERR_LIMIT);
    CHECKF(strstr(ct_session_errmsg(s), "context") != NULL, "%s", ct_session_errmsg(s));
    free(longt);
    /* invalid UTF-8 */
    g.text = "bad \xff\xfe bytes";
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    /* next_frame without a good start */
    int32_t codes[16];
    int got;
    CHECK(ct_session_next_frame(s, codes, &got) == CT_ERR_STATE && got == 0);
    ct_session_free(s);
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 1 << 30;
    char err[256];
    CHECK(ct_session_create(M, &sp, &s, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(strstr(err, "max_context") != NULL);
}

static void test_replay_and_stops(void) {
    ct_session *s = new_session(512);
    static int32_t a[64 * 16], b[64 * 16];
    ct_gen_params g = ct_gen_params_default();
    g.text = "Replay me, please.";
    g.speaker = "serena";
    g.language = "english";
    g.seed = 42;
    g.max_frames = 12;
    int na = run(s, &g, a, 64);
    int nb = run(s, &g, b, 64);
    CHECK(na > 0 && na == nb && memcmp(a, b, sizeof(int32_t) * 16 * (size_t)na) == 0);
    int inrange = 1;
    for (int i = 0; i < na * 16; i++) inrange &= a[i] >= 0 && a[i] < 2048;
    CHECK(inrange);
    g.seed = 43;
    nb = run(s, &g, b, 64);
    CHECK(nb > 0 && memcmp(a, b, sizeof(int32_t) * 16 * (size_t)(na < nb ? na : nb)) != 0);
    /* a second session on the same model gives the same result (model is shared, immutable) */
    ct_session *s2 = new_session(512);
    g.seed = 42;
    nb = run(s2, &g, b, 64);
    CHECK(nb == na && memcmp(a, b, sizeof(int32_t) * 16 * (size_t)na) == 0);
    ct_session_free(s2);
    /* stop reasons */
    if (na == 12) CHECK(ct_session_stop_reason(s) == CT_STOP_MAX_FRAMES);
    g.max_frames = 0;
    g.budget_base = 3;
    g.budget_per_token = 0.0f;
    int n = run(s, &g, a, 64);
    CHECK(n <= 3);
    if (n == 3) CHECK(ct_session_stop_reason(s) == CT_STOP_BUDGET);
    g.budget_base = 50;
    g.budget_per_token = 12.0f;
    g.max_new_tokens = 5; /* reference semantics: max_new_tokens - 1 frames */
    n = run(s, &g, a, 64);
    CHECK(n <= 4);
    if (n == 4) CHECK(ct_session_stop_reason(s) == CT_STOP_MAX_FRAMES);
    CHECK(ct_session_run_info(s).frame_limit == 4);
    /* greedy is deterministic across seeds */
    g.max_new_tokens = 0;
    g.max_frames = 6;
    g.greedy = 1;
    g.seed = 1;
    na = run(s, &g, a, 64);
    g.seed = 2;
    nb = run(s, &g, b, 64);
    CHECK(na == nb && memcmp(a, b, sizeof(int32_t) * 16 * (size_t)na) == 0);
    /* context capacity caps the frames */
    ct_session *s3 = new_session(32);
    g.greedy = 0;
    g.max_frames = 0;
    g.text = "Short.";
    n = run(s3, &g, a, 64);
    CHECK(n > 0 && n <= 32 - ct_session_run_info(s3).prompt_len);
    ct_session_free(s3);
    ct_session_free(s);
}

/* Starts g on s and returns its first frames[n] and the start's logits[V]; the reused count. */
static int start_frames(ct_session *s, ct_gen_params *g, int32_t *codes, int n, float *logits) {
    if (ct_session_start(s, g) != CT_OK) return -1;
    memcpy(logits, s->logits, sizeof(float) * (size_t)M->cfg.talker.vocab);
    for (int i = 0, got = 1; i < n && got; i++)
        if (ct_session_next_frame(s, codes + 16 * i, &got) != CT_OK) return -1;
    return ct_session_run_info(s).prompt_reused;
}

/* Prompt reuse: a start keeps the KV of the leading positions whose prompt rows equal the last
   start's, and its logits and codes are those of a fresh session's start, bit for bit. */
static void test_prompt_reuse(void) {
    ct_session *s = new_session(256), *f = new_session(256);
    const int V = M->cfg.talker.vocab;
    float *ls = malloc(sizeof(float) * (size_t)V), *lf = malloc(sizeof(float) * (size_t)V);
    static int32_t cs[8 * 16], cf[8 * 16];
    ct_gen_params g = ct_gen_params_default();
    g.speaker = "serena";
    g.language = "english";
    g.seed = 3;
    g.max_frames = 8;
    /* each case: text, speaker, prompt_reuse, the positions it must reuse (-1: all but the last);
       the role block (3) and codec header (think, think_bos, language, think_eos, speaker, pad:
       6) come before the text (docs/STREAMING.md "Prompt reuse") */
    const struct {
        const char *text, *speaker;
        int reuse, want;
    } cases[] = {
        {"The first request sets the voice.", "serena", 1, 0},
        {"A second text in the same voice.", "serena", 1, 9},
        {"A second text in the same voice.", "serena", 1, -1},
        {"A second text in the same voice.", "serena", 0, 0},
        {"A second text in the same voice.", "ryan", 1, 7}, /* up to the speaker row */
        {"A second text in the same voice.", "nobody", 1, -2}, /* fails: changes nothing */
        {"Back to the first voice, new words.", "ryan", 1, 9},
        {"Short.", "serena", 1, 7},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        g.text = cases[i].text;
        g.speaker = cases[i].speaker;
        g.prompt_reuse = cases[i].reuse;
        if (cases[i].want == -2) {
            CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
            continue;
        }
        memset(cs, 0, sizeof cs);
        memset(cf, 0, sizeof cf);
        const int r = start_frames(s, &g, cs, 8, ls);
        const int L = ct_session_run_info(s).prompt_len;
        const int want = cases[i].want < 0 ? L - 1 : cases[i].want;
        CHECKF(r == want, "case %d: %d of %d positions reused, want %d", i, r, L, want);
        ct_session_free(f); /* a fresh session each time: nothing to reuse */
        f = new_session(256);
        CHECK(start_frames(f, &g, cf, 8, lf) == 0);
        CHECKF(memcmp(ls, lf, sizeof(float) * (size_t)V) == 0 && memcmp(cs, cf, sizeof cs) == 0,
               "case %d: the start with %d positions reused differs from a fresh one", i, r);
    }
    free(ls);
    free(lf);
    ct_session_free(f);
    ct_session_free(s);
}

/* A session on the test model with 256 positions and nt compute threads (NULL on failure). */
static ct_session *session_threads(int nt) {
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 256;
    sp.n_threads = nt;
    ct_session *s = NULL;
    char err[256];
    CHECKF(ct_session_create(M, &sp, &s, err, sizeof err) == CT_OK, "%s", err);
    return s;
}

/* identical codes for 1, 2 and 3 compute threads of the session's own, and on a borrowed
   pool of 2 threads (nt 4) or none (nt 5: inline on the caller's thread) */
static void test_threads(void) {
    static int32_t a[40 * 16], b[40 * 16];
    int na = -1;
    char err[256];
    ct_pool *pool = NULL;
    CHECK(ct_pool_create(2, NULL, 0, &pool) == CT_OK);
    ct_session *bad = NULL;
    CHECK(ct_session_create_on(M, 8, pool, &bad, err, sizeof err) == CT_ERR_INVALID_ARG && !bad);
    for (int nt = 1; nt <= 5; nt++) {
        ct_session *s = NULL;
        if (nt <= 3) s = session_threads(nt);
        else CHECKF(ct_session_create_on(M, 256, nt == 4 ? pool : NULL, &s, err, sizeof err) == CT_OK, "%s", err);
        ct_gen_params g = ct_gen_params_default();
        g.text = "Threads must not change a single code.";
        g.speaker = "sohee";
        g.seed = 9;
        g.max_frames = 40;
        int n = run(s, &g, nt == 1 ? a : b, 40);
        if (nt == 1) na = n;
        else CHECKF(n == na && memcmp(a, b, sizeof(int32_t) * 16 * (size_t)n) == 0, "%d threads", nt);
        ct_session_free(s);
    }
    ct_pool_free(pool);
}

/* batched prompt embeddings equal per-token ct_embed_text bit for bit, for 1 and 3 threads
   and for more ids than one pool chunk */
static void test_embed_rows(void) {
    const int H = ct_model_get_info(M).talker_hidden, TH = M->cfg.text_hidden, n = CT_PREFILL_CHUNK + 9;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
    float *a = malloc(sizeof(float) * (size_t)n * H), *b = malloc(sizeof(float) * (size_t)H),
          *tmp = malloc(sizeof(float) * 2 * (size_t)TH);
    for (int i = 0; i < n; i++) ids[i] = (int32_t)((i * 7919) % M->cfg.text_vocab);
    for (int nt = 1; nt <= 3; nt += 2) {
        ct_session *s = session_threads(nt);
        if (!s) continue;
        ct_embed_text_rows(s, ids, n, a);
        int same = 1;
        for (int i = 0; i < n; i++) {
            ct_embed_text(M, ids[i], b, tmp);
            same &= memcmp(a + (size_t)i * H, b, sizeof(float) * (size_t)H) == 0;
        }
        CHECKF(same, "batched text embeddings differ from ct_embed_text (%d threads)", nt);
        ct_session_free(s);
    }
    free(ids);
    free(a);
    free(b);
    free(tmp);
}

int main(void) {
    CHECK(ct_test_load("tiny", "session-tiny", 5, &M, NULL));
    if (!M) return ct_test_finish();
    test_layouts();
    test_errors();
    test_replay_and_stops();
    test_threads();
    test_prompt_reuse();
    test_embed_rows();
    ct_model_free(M);
    return ct_test_finish();
}
