/* Batched decode: every stream's codes in a batch (with streams joining late and leaving early)
   equal its solo run, on the tiny model and on the official-parity model with the 1.7B-style
   input projection; also in halves (ct_batch_codes / ct_batch_advance) on a borrowed pool. */
#include <string.h>

#include "codectalk.h"
#include "core/pool.h"
#include "model/session_internal.h"
#include "ct_test.h"
#include "test_models.h"

#define NS 9 /* 2*NS predictor tokens per step: past the kernels' GEMM (AMX/VDPBF16PS) thresholds */
#define MAXF 40

static const char *texts[NS] = {"First stream, speaking steadily.", "Second one is here too!",
                                "A third stream joins a little later than the others.",
                                "Four.", "The fifth says something longer than the fourth did.",
                                "Six, seven, eight.", "Seventh voice in the batch.",
                                "Eighth: numbers 1 2 3.", "Ninth and last one."};

static ct_gen_params gp(int i, const ct_model *m) {
    ct_gen_params g = ct_gen_params_default();
    g.text = texts[i];
    ct_model_info inf = ct_model_get_info(m);
    if (inf.n_speakers) g.speaker = ct_model_speaker(m, i % inf.n_speakers);
    if (!strcmp(inf.kind, "voice_design")) g.instruct = "A calm, low male voice.";
    g.seed = 100 + (uint64_t)i;
    g.max_frames = i == 1 ? 17 : MAXF - (i % 3); /* streams leave at different steps */
    g.greedy = i == 2;                           /* mixed decoding modes in one batch */
    return g;
}

#define NB 3 /* streams of the borrowed-pool check */

/* Sessions and a batch on one borrowed pool, stepped in halves (ct_batch_codes, then
   ct_batch_advance over the streams in two calls): every stream's codes equal its solo run. */
static void check_split(ct_model *m, const char *label, int32_t (*solo)[MAXF * 16], const int *nsolo) {
    char err[512];
    ct_pool *pool = NULL;
    ct_batch *b = NULL;
    ct_session *ss[NB] = {NULL};
    CHECK(ct_pool_create(2, NULL, 0, &pool) == CT_OK);
    CHECKF(ct_batch_create_on(m, NB, 256, pool, &b, err, sizeof err) == CT_OK, "%s", err);
    for (int i = 0; i < NB; i++) {
        CHECK(ct_session_create_on(m, 256, pool, &ss[i], err, sizeof err) == CT_OK);
        ct_gen_params g = gp(i, m);
        CHECKF(ss[i] && ct_session_start(ss[i], &g) == CT_OK, "%s", ct_session_errmsg(ss[i]));
    }
    if (!b || !ss[NB - 1]) return;
    int32_t codes[NB * 16], again[NB * 16];
    int got[NB], n[NB] = {0}, same = 0, any = 1;
    for (int step = 0; any && step < 2 * MAXF; step++) {
        CHECK(ct_batch_codes(b, ss, NB, codes, got) == CT_OK);
        any = 0;
        for (int i = 0; i < NB; i++) {
            if (!got[i]) continue;
            any = 1;
            same += n[i] < nsolo[i] && memcmp(codes + 16 * i, solo[i] + 16 * n[i], sizeof(int32_t) * 16) == 0;
            n[i]++;
        }
        if (any && step == 0) { /* codes again before the talker step: a state error */
            CHECK(ct_batch_codes(b, ss, NB, again, got) == CT_ERR_STATE);
            CHECK(ct_batch_errmsg(b)[0] != 0);
        }
        CHECK(ct_batch_advance(b, ss, 1) == CT_OK);
        CHECK(ct_batch_advance(b, ss + 1, NB - 1) == CT_OK);
    }
    int frames = 0;
    for (int i = 0; i < NB; i++) {
        CHECKF(n[i] == nsolo[i], "%s split stream %d: %d frames vs solo %d", label, i, n[i], nsolo[i]);
        frames += n[i];
    }
    CHECKF(same == frames, "%s split: %d of %d frames equal the solo run", label, same, frames);
    for (int i = 0; i < NB; i++) ct_session_free(ss[i]);
    ct_batch_free(b);
    ct_pool_free(pool);
}

static void check_model(ct_model *m, const char *label) {
    char err[512];
    static int32_t solo[NS][MAXF * 16], bat[NS][MAXF * 16];
    int nsolo[NS], nbat[NS] = {0};
    static float solo_h[NS][4096];
    const int H = m->cfg.talker.hidden;
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 256;
    for (int i = 0; i < NS; i++) {
        ct_session *s = NULL;
        CHECK(ct_session_create(m, &sp, &s, err, sizeof err) == CT_OK);
        ct_gen_params g = gp(i, m);
        CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
        int n = 0, got = 1;
        while (got && n < MAXF && ct_session_next_frame(s, solo[i] + 16 * n, &got) == CT_OK && got) n++;
        nsolo[i] = n;
        memcpy(solo_h[i], s->h, sizeof(float) * (size_t)H); /* last talker state, bit for bit */
        ct_session_free(s);
    }
    ct_batch *b = NULL;
    CHECKF(ct_batch_create(m, NS, 256, 2, &b, err, sizeof err) == CT_OK, "%s", err);
    ct_session *ss[NS];
    ct_gen_params g[NS];
    for (int i = 0; i < NS; i++) {
        ss[i] = NULL;
        CHECK(ct_session_create(m, &sp, &ss[i], err, sizeof err) == CT_OK);
        g[i] = gp(i, m);
    }
    ct_session *active[NS];
    for (int i = 0; i < NS; i++) {
        active[i] = NULL;
        if (i == 2) continue;
        CHECK(ct_session_start(ss[i], &g[i]) == CT_OK);
        active[i] = ss[i];
    }
    int32_t codes[NS * 16];
    int got[NS], steps = 0, max_b = 0;
    for (;;) {
        if (steps == 5) { /* continuous batching: stream 2 joins between steps */
            CHECK(ct_session_start(ss[2], &g[2]) == CT_OK);
            active[2] = ss[2];
        }
        CHECK(ct_batch_step(b, active, NS, codes, got) == CT_OK);
        int any = 0, live = 0;
        for (int i = 0; i < NS; i++) {
            if (!got[i]) continue;
            any = 1;
            live++;
            if (nbat[i] < MAXF) memcpy(bat[i] + 16 * nbat[i], codes + 16 * i, sizeof(int32_t) * 16);
            nbat[i]++;
        }
        if (live > max_b) max_b = live;
        steps++;
        if ((!any && steps > 5) || steps > 200) break;
    }
    CHECK(max_b == NS);
    int same_h = 0;
    for (int i = 0; i < NS; i++) same_h += memcmp(solo_h[i], ss[i]->h, sizeof(float) * (size_t)H) == 0;
    CHECKF(same_h == NS, "%s: %d of %d streams end in a bit-identical talker state", label, same_h, NS);
    for (int i = 0; i < NS; i++) {
        CHECKF(nbat[i] == nsolo[i] && memcmp(bat[i], solo[i], sizeof(int32_t) * 16 * (size_t)nsolo[i]) == 0,
               "%s stream %d: batch %d frames vs solo %d, codes differ", label, i, nbat[i], nsolo[i]);
    }
    /* bad input: more running sessions than the batch holds */
    ct_session *more[NS + 1];
    for (int i = 0; i < NS; i++) {
        CHECK(ct_session_start(ss[i], &g[i]) == CT_OK);
        more[i] = ss[i];
    }
    ct_session *extra = NULL;
    CHECK(ct_session_create(m, &sp, &extra, err, sizeof err) == CT_OK);
    CHECK(ct_session_start(extra, &g[0]) == CT_OK);
    more[NS] = extra;
    int32_t cm[(NS + 1) * 16];
    int gm[NS + 1];
    CHECK(ct_batch_step(b, more, NS + 1, cm, gm) == CT_ERR_INVALID_ARG);
    CHECK(ct_batch_errmsg(b)[0] != 0);
    ct_session_free(extra);
    for (int i = 0; i < NS; i++) ct_session_free(ss[i]);
    ct_batch_free(b);
    check_split(m, label, solo, nsolo);
    printf("%s: %d streams batched, solo == batch for all\n", label, NS);
}

int main(void) {
    char err[1024];
    const char *dir = ct_test_make("tiny", "batch-tiny", 12);
    ct_model *m = NULL;
    CHECK(dir && ct_model_load(dir, NULL, &m, err, sizeof err) == CT_OK);
    if (m) check_model(m, "tiny");
    ct_model_free(m);
    ct_model_params mp = ct_model_params_default();
    mp.tokenizer_dir = CT_SRC_DIR "/assets/qwen3-tokenizer";
    m = NULL;
    CHECKF(ct_model_load(CT_SRC_DIR "/tests/data/parity/vd17", &mp, &m, err, sizeof err) == CT_OK, "%s", err);
    if (m) check_model(m, "parity vd17 (small_to_mtp_projection)");
    ct_model_free(m);
    return ct_test_finish();
}
