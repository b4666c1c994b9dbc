/* Prompt groups (ct_prompt_group, docs/STREAMING.md "Across sessions"): a member's start copies
   the leading prompt positions another member's last prefill holds, with the bits of a fresh
   session's start; leaving, freeing a member or the group, another model, a join mid-prefill,
   and members starting and decoding on their own threads at once. */
#include <pthread.h>
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "model/session_internal.h"
#include "test_models.h"

static ct_model *M;

static ct_session *new_session(const ct_model *m) {
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 256;
    ct_session *s = NULL;
    char err[512];
    CHECKF(ct_session_create(m, &sp, &s, err, sizeof err) == CT_OK, "%s", err);
    return s;
}

static ct_gen_params req(const char *text, const char *speaker, uint64_t seed) {
    ct_gen_params g = ct_gen_params_default();
    g.text = text;
    g.speaker = speaker;
    g.language = "english";
    g.seed = seed;
    g.max_frames = 4;
    g.min_new_tokens = 4;
    return g;
}

/* Starts g on s and writes its 4 frames and the start's logits; returns the positions reused
   (-1 on failure). */
static int run4(ct_session *s, const ct_gen_params *g, int32_t codes[4 * 16], float *logits) {
    if (ct_session_start(s, g) != CT_OK) return -1;
    if (logits) memcpy(logits, s->logits, sizeof(float) * (size_t)M->cfg.talker.vocab);
    for (int i = 0, got = 1; i < 4 && got; i++)
        if (ct_session_next_frame(s, codes + 16 * i, &got) != CT_OK) return -1;
    return ct_session_run_info(s).prompt_reused;
}

/* What a fresh session outside any group gives for g. */
static void fresh(const ct_gen_params *g, int32_t codes[4 * 16], float *logits) {
    ct_session *f = new_session(M);
    CHECK(f && run4(f, g, codes, logits) == 0);
    ct_session_free(f);
}

static void test_share(void) {
    const int V = M->cfg.talker.vocab;
    float *la = malloc(sizeof(float) * (size_t)V), *lb = malloc(sizeof(float) * (size_t)V);
    int32_t ca[64], cb[64];
    ct_prompt_group *g = NULL;
    CHECK(ct_prompt_group_create(0, &g) == CT_OK && g);
    ct_session *a = new_session(M), *b = new_session(M), *c = new_session(M);
    CHECK(ct_session_join_prompts(a, g) == CT_OK && ct_session_join_prompts(b, g) == CT_OK);
    CHECK(ct_session_join_prompts(b, g) == CT_OK); /* again: nothing changes */

    /* a decodes after its prompt; b, never started, takes the voice's 9 positions (role block and
       codec header) from a */
    ct_gen_params ga = req("The first member sets the voice.", "serena", 1);
    CHECK(run4(a, &ga, ca, NULL) == 0);
    ct_gen_params gb = req("Another text, in the same voice.", "serena", 2);
    CHECK(run4(b, &gb, cb, lb) == 9);
    CHECKF(b->prompt_shared == 9, "copied %d", b->prompt_shared);
    fresh(&gb, ca, la);
    CHECK(memcmp(ca, cb, sizeof ca) == 0 && memcmp(la, lb, sizeof(float) * (size_t)V) == 0);
    /* prompt_reuse 0: nothing copied */
    gb.prompt_reuse = 0;
    CHECK(run4(b, &gb, cb, NULL) == 0 && b->prompt_shared == 0);
    /* outside the group: nothing to copy */
    gb.prompt_reuse = 1;
    CHECK(run4(c, &gb, cb, NULL) == 0);
    /* another speaker: up to the speaker row (7), from b's last prefill or a's */
    CHECK(ct_session_join_prompts(c, g) == CT_OK);
    ct_gen_params gc = req("A third voice now.", "ryan", 3);
    CHECK(run4(c, &gc, cb, lb) == 7 && c->prompt_shared == 0); /* c's own KV held serena: 7 kept */
    fresh(&gc, ca, la);
    CHECK(memcmp(ca, cb, sizeof ca) == 0 && memcmp(la, lb, sizeof(float) * (size_t)V) == 0);
    /* a member that left copies nothing more */
    ct_session *d = new_session(M);
    CHECK(ct_session_join_prompts(d, g) == CT_OK && ct_session_join_prompts(d, NULL) == CT_OK);
    CHECK(run4(d, &gc, cb, NULL) == 0);
    /* freed members leave: the others go on (ASan sees any read of a freed one) */
    CHECK(ct_session_join_prompts(d, g) == CT_OK);
    ct_session_free(a);
    ct_session_free(c);
    /* d's own KV holds ryan (7 positions in common with serena); b holds serena: 2 more copied */
    ct_gen_params gd = req("Serena again, after two members left.", "serena", 4);
    CHECK(run4(d, &gd, cb, lb) == 9);
    CHECKF(d->prompt_shared == 2, "copied %d", d->prompt_shared);
    fresh(&gd, ca, la);
    CHECK(memcmp(ca, cb, sizeof ca) == 0 && memcmp(la, lb, sizeof(float) * (size_t)V) == 0);
    ct_prompt_group_free(g); /* b and d leave */
    CHECK(b->group == NULL && d->group == NULL);
    gd.text = "Only its own KV now.";
    CHECK(run4(b, &gd, cb, NULL) == 9 && b->prompt_shared == 0);
    ct_session_free(b);
    ct_session_free(d);
    free(la);
    free(lb);
}

/* The group's cache: a budget of two voices' rows; the least recently used voice leaves when a
   third comes; a start copies a voice no member holds from it, with a fresh session's bits. */
static void test_cache(void) {
    const int V = M->cfg.talker.vocab;
    float *la = malloc(sizeof(float) * (size_t)V), *lb = malloc(sizeof(float) * (size_t)V);
    int32_t ca[64], cb[64];
    ct_session *a = new_session(M);
    const size_t row = 32 + 2 * (size_t)a->tkv.layers * a->tkv.kv_heads * a->tkv.head_dim * sizeof(float);
    ct_prompt_group *g = NULL;
    CHECK(ct_prompt_group_create(2 * 9 * row, &g) == CT_OK);
    CHECK(ct_session_join_prompts(a, g) == CT_OK);
    const char *voices[3] = {"serena", "ryan", "vivian"};
    for (int i = 0; i < 3; i++) {
        ct_gen_params gv = req("A member runs one voice after another.", voices[i], 1);
        CHECK(run4(a, &gv, ca, NULL) >= 0);
        CHECK(a->voice_rows == 9); /* role block 3, codec header with a language 6 */
        CHECKF(ct_prompt_group_cached_bytes(g) == (size_t)(i < 2 ? i + 1 : 2) * 9 * row, "voice %d: %zu bytes", i,
               ct_prompt_group_cached_bytes(g));
    }
    /* serena left the cache (least recently used); a holds vivian: 7 positions in common */
    ct_session *b = new_session(M);
    CHECK(ct_session_join_prompts(b, g) == CT_OK);
    ct_gen_params gs = req("Serena, whose rows left the cache.", "serena", 2);
    CHECK(run4(b, &gs, cb, NULL) == 7 && b->prompt_cached == 0);
    /* b's prefill put serena back in place of ryan (then the least recently used); b moves on to
       vivian, which the cache holds already (it stays at two voices) */
    ct_gen_params gv = req("Vivian for b as well.", "vivian", 4);
    CHECK(run4(b, &gv, cb, NULL) >= 0 && ct_prompt_group_cached_bytes(g) == 2 * 9 * row);
    /* no member holds serena now: all 9 voice rows come from the cache (the members hold 7) */
    ct_session *c = new_session(M);
    CHECK(ct_session_join_prompts(c, g) == CT_OK);
    ct_gen_params gr = req("Serena, from the cache.", "serena", 3);
    CHECK(run4(c, &gr, cb, lb) == 9);
    CHECKF(c->prompt_cached == 9 && c->prompt_shared == 0, "cached %d, shared %d", c->prompt_cached, c->prompt_shared);
    fresh(&gr, ca, la);
    CHECK(memcmp(ca, cb, sizeof ca) == 0 && memcmp(la, lb, sizeof(float) * (size_t)V) == 0);
    ct_session_free(a);
    ct_session_free(b);
    ct_session_free(c);
    ct_prompt_group_free(g);
    /* a budget below one voice keeps nothing */
    CHECK(ct_prompt_group_create(9 * row - 1, &g) == CT_OK);
    a = new_session(M);
    CHECK(ct_session_join_prompts(a, g) == CT_OK && run4(a, &gr, ca, NULL) == 0);
    CHECK(ct_prompt_group_cached_bytes(g) == 0);
    ct_session_free(a);
    ct_prompt_group_free(g);
    free(la);
    free(lb);
}

/* Another model's session cannot join; nor a session between begin and finish. */
static void test_refusals(void) {
    ct_model *m2 = NULL;
    CHECK(ct_test_load("tiny", "prompt-group-tiny2", 6, &m2, NULL));
    ct_prompt_group *g = NULL;
    CHECK(ct_prompt_group_create(0, &g) == CT_OK);
    CHECK(ct_prompt_group_create(0, NULL) == CT_ERR_INVALID_ARG);
    CHECK(ct_session_join_prompts(NULL, g) == CT_ERR_INVALID_ARG);
    ct_session *a = new_session(M), *o = m2 ? new_session(m2) : NULL;
    CHECK(ct_session_join_prompts(a, g) == CT_OK);
    if (o) {
        CHECK(ct_session_join_prompts(o, g) == CT_ERR_INVALID_ARG);
        CHECKF(strstr(ct_session_errmsg(o), "another model") != NULL, "%s", ct_session_errmsg(o));
        CHECK(o->group == NULL);
    }
    /* the last member gone, the group takes any model */
    CHECK(ct_session_join_prompts(a, NULL) == CT_OK);
    if (o) CHECK(ct_session_join_prompts(o, g) == CT_OK);
    ct_gen_params gp = req("Mid-prefill.", "serena", 1);
    CHECK(ct_session_begin(a, &gp, NULL, 0, 0) == CT_OK);
    CHECK(ct_session_join_prompts(a, g) == CT_ERR_STATE);
    CHECK(strstr(ct_session_errmsg(a), "between begin and finish") != NULL);
    while (ct_session_prefill_pass(a) > 0) {
    }
    CHECK(ct_session_finish(a) == CT_OK);
    ct_session_free(o); /* leaves g */
    CHECK(ct_session_join_prompts(a, g) == CT_OK);
    ct_session_free(a);
    ct_prompt_group_free(g);
    /* a group whose cache holds the model's rows keeps refusing another model without members */
    CHECK(ct_prompt_group_create(16u << 20, &g) == CT_OK);
    a = new_session(M);
    int32_t codes[64];
    CHECK(ct_session_join_prompts(a, g) == CT_OK && run4(a, &gp, codes, NULL) == 0);
    ct_session_free(a);
    CHECK(ct_prompt_group_cached_bytes(g) > 0);
    o = m2 ? new_session(m2) : NULL;
    if (o) {
        CHECK(ct_session_join_prompts(o, g) == CT_ERR_INVALID_ARG);
        CHECKF(strstr(ct_session_errmsg(o), "cached prompts belong to another model") != NULL, "%s",
               ct_session_errmsg(o));
    }
    ct_session_free(o);
    ct_prompt_group_free(g);
    ct_model_free(m2);
}

/* Members on their own threads, each starting and decoding a series of requests in two voices:
   every run gives the frames of a fresh session, whatever the others copy meanwhile. */
#define NTH 3
#define NREQ 6
typedef struct {
    ct_session *s;
    int idx;
    int32_t got[NREQ][64];
    int first_shared; /* positions its first start copied */
} worker;

static ct_gen_params thread_req(int t, int r) {
    static const char *texts[] = {"One thread speaks.", "Another sentence here.", "A third line of text."};
    ct_gen_params g = req(texts[(t + r) % 3], (t + r) % 2 ? "ryan" : "serena", (uint64_t)(10 * t + r));
    return g;
}

static void *work(void *arg) {
    worker *w = arg;
    for (int r = 0; r < NREQ; r++) {
        ct_gen_params g = thread_req(w->idx, r);
        if (run4(w->s, &g, w->got[r], NULL) < 0) memset(w->got[r], 0xff, sizeof w->got[r]);
        if (r == 0) w->first_shared = w->s->prompt_shared;
    }
    return NULL;
}

static void test_threads(void) {
    static int32_t want[NTH][NREQ][64];
    for (int t = 0; t < NTH; t++)
        for (int r = 0; r < NREQ; r++) {
            ct_gen_params g = thread_req(t, r);
            ct_session *f = new_session(M);
            CHECK(f && run4(f, &g, want[t][r], NULL) == 0);
            ct_session_free(f);
        }
    ct_prompt_group *g = NULL;
    CHECK(ct_prompt_group_create(0, &g) == CT_OK);
    /* a member no thread runs, holding a prefill every thread's first start can copy from */
    ct_session *held = new_session(M);
    int32_t tmp[64];
    ct_gen_params gh = req("Held by a member no thread runs.", "vivian", 9);
    CHECK(ct_session_join_prompts(held, g) == CT_OK && run4(held, &gh, tmp, NULL) == 0);
    static worker w[NTH];
    pthread_t th[NTH];
    for (int t = 0; t < NTH; t++) {
        w[t].s = new_session(M);
        w[t].idx = t;
        CHECK(ct_session_join_prompts(w[t].s, g) == CT_OK);
    }
    for (int t = 0; t < NTH; t++) CHECK(pthread_create(&th[t], NULL, work, &w[t]) == 0);
    for (int t = 0; t < NTH; t++) {
        pthread_join(th[t], NULL);
        /* a fresh session: the role block and codec header up to the speaker row (7), at least */
        CHECKF(w[t].first_shared >= 7, "thread %d's first start copied %d", t, w[t].first_shared);
        for (int r = 0; r < NREQ; r++)
            CHECKF(memcmp(w[t].got[r], want[t][r], sizeof want[t][r]) == 0, "thread %d, request %d differs", t, r);
        ct_session_free(w[t].s);
    }
    ct_session_free(held);
    ct_prompt_group_free(g);
}

int main(void) {
    CHECK(ct_test_load("tiny", "prompt-group-tiny", 5, &M, NULL));
    if (!M) return ct_test_finish();
    test_share();
    test_cache();
    test_refusals();
    test_threads();
    ct_model_free(M);
    return ct_test_finish();
}
