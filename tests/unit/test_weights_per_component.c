/* Weight format per component (ct_model_params.talker_weights / predictor_weights): the formats
   reported in ct_model_info, weight_bytes as loaded, "mixed", f32_weights overriding all, bad
   names, the params size rule for the new fields, and generation on the result. */
#include <stddef.h>
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "model/model_internal.h"
#include "test_models.h"

static const char *DIR_;

static ct_model *load(const char *all, const char *talker, const char *pred, int f32) {
    ct_model_params mp = ct_model_params_default();
    mp.weights = all;
    mp.talker_weights = talker;
    mp.predictor_weights = pred;
    mp.f32_weights = f32;
    ct_model *m = NULL;
    char err[1024];
    CHECKF(ct_model_load(DIR_, &mp, &m, err, sizeof err) == CT_OK, "%s", err);
    return m;
}

static int info_is(const ct_model *m, const char *talker, const char *pred) {
    ct_model_info i = ct_model_get_info(m);
    int ok = i.talker_weights && i.predictor_weights && strcmp(i.talker_weights, talker) == 0 &&
             strcmp(i.predictor_weights, pred) == 0;
    if (!ok)
        printf("formats %s / %s, expected %s / %s\n", i.talker_weights ? i.talker_weights : "NULL",
               i.predictor_weights ? i.predictor_weights : "NULL", talker, pred);
    return ok;
}

/* Bytes a [rows, cols] BF16 matrix loses when converted to INT8 (per-row f32 scales) or INT4
   (a f32 scale per 32 columns). */
static int64_t saved_i8(int64_t r, int64_t c) { return 2 * r * c - (r * c + 4 * r); }
static int64_t saved_q4(int64_t r, int64_t c) { return 2 * r * c - (r * c / 2 + 4 * r * c / 32); }

/* Bytes saved by one stack's layer matrices: attention in fa, MLP in fm (0 = none, 8, 4). */
static int64_t stack_saved(const ct_stack_cfg *c, int fa, int fm) {
    const int64_t H = c->hidden, qd = (int64_t)c->heads * c->head_dim, kd = (int64_t)c->kv_heads * c->head_dim;
    const int64_t mats[7][2] = {{qd, H}, {kd, H}, {kd, H}, {H, qd}, {c->ffn, H}, {c->ffn, H}, {H, c->ffn}};
    int64_t s = 0;
    for (int i = 0; i < 7; i++) {
        int f = i < 4 ? fa : fm;
        if (f) s += f == 8 ? saved_i8(mats[i][0], mats[i][1]) : saved_q4(mats[i][0], mats[i][1]);
    }
    return s * c->layers;
}

static void run_frames(const ct_model *m) {
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 256;
    ct_session *s = NULL;
    char err[512];
    CHECKF(ct_session_create(m, &sp, &s, err, sizeof err) == CT_OK, "%s", err);
    if (!s) return;
    ct_gen_params g = ct_gen_params_default();
    g.text = "Hello there.";
    g.speaker = "vivian";
    g.seed = 3;
    g.max_frames = 6;
    g.min_new_tokens = 6;
    CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
    int32_t codes[16];
    int got = 1, n = 0, in_range = 1;
    while (got && n < 10) {
        if (ct_session_next_frame(s, codes, &got) != CT_OK) break;
        if (!got) break;
        for (int k = 0; k < 16; k++) in_range = in_range && codes[k] >= 0 && codes[k] < 2048;
        n++;
    }
    CHECKF(n == 6 && in_range, "%d frames, codes in range %d: %s", n, in_range, ct_session_errmsg(s));
    ct_session_free(s);
}

int main(void) {
    DIR_ = ct_test_make("tiny", "weights-per-component", 7);
    CHECK(DIR_ != NULL);
    if (!DIR_) return ct_test_finish();

    /* as stored (make-model writes BF16); "stored" is the same */
    ct_model *base = load(NULL, NULL, NULL, 0);
    if (!base) return ct_test_finish();
    CHECK(info_is(base, "bf16", "bf16"));
    const uint64_t base_bytes = ct_model_get_info(base).weight_bytes;
    const ct_config *c = &base->cfg;
    ct_model *m = load("stored", NULL, "stored", 0);
    CHECK(m && info_is(m, "bf16", "bf16") && ct_model_get_info(m).weight_bytes == base_bytes);
    ct_model_free(m);

    /* talker int8 + predictor int4: formats, bytes, the matrices themselves, generation */
    m = load(NULL, "int8", "int4", 0);
    CHECK(m && info_is(m, "int8", "int4"));
    if (m) {
        int64_t saved = stack_saved(&c->talker, 8, 8) + saved_i8(c->talker.vocab, c->talker.hidden) +
                        stack_saved(&c->pred, 4, 4) +
                        (int64_t)(c->n_groups - 1) * saved_i8(c->pred.vocab, c->pred.hidden);
        uint64_t wb = ct_model_get_info(m).weight_bytes;
        CHECKF((int64_t)base_bytes - (int64_t)wb == saved, "weight_bytes %llu vs %llu: saved %lld, expected %lld",
               (unsigned long long)wb, (unsigned long long)base_bytes, (long long)((int64_t)base_bytes - (int64_t)wb),
               (long long)saved);
        CHECK(m->t_layers[0].q.dtype == CT_DT_I8 && m->t_layers[0].down.dtype == CT_DT_I8 &&
              m->codec_head.dtype == CT_DT_I8);
        CHECK(m->p_layers[0].q.dtype == CT_DT_U8 && m->p_layers[0].up.dtype == CT_DT_U8 &&
              m->pred_head[0].dtype == CT_DT_I8); /* lm heads stay int8 under int4 */
        CHECK(m->text_emb.dtype == CT_DT_BF16); /* embeddings as stored */
        run_frames(m);
    }
    ct_model_free(m);

    /* "mixed" keeps its meaning: talker int8, predictor attention int8 + MLP int4 */
    m = load("mixed", NULL, NULL, 0);
    CHECK(m && info_is(m, "int8", "mixed"));
    if (m) {
        CHECK(m->p_layers[0].k.dtype == CT_DT_I8 && m->p_layers[0].gate.dtype == CT_DT_U8);
        int64_t saved = stack_saved(&c->talker, 8, 8) + saved_i8(c->talker.vocab, c->talker.hidden) +
                        stack_saved(&c->pred, 8, 4) +
                        (int64_t)(c->n_groups - 1) * saved_i8(c->pred.vocab, c->pred.hidden);
        CHECK((int64_t)base_bytes - (int64_t)ct_model_get_info(m).weight_bytes == saved);
        ct_model *same = load("int8", NULL, "mixed", 0);
        CHECK(same && info_is(same, "int8", "mixed") &&
              ct_model_get_info(same).weight_bytes == ct_model_get_info(m).weight_bytes);
        ct_model_free(same);
    }
    ct_model_free(m);

    /* a component's field beats `weights`; an unset one follows it */
    m = load("int4", "bf16", NULL, 0);
    CHECK(m && info_is(m, "bf16", "int4"));
    ct_model_free(m);
    m = load("int8", NULL, "int4", 0);
    CHECK(m && info_is(m, "int8", "int4"));
    ct_model_free(m);

    /* f32_weights overrides every format */
    m = load("int8", "int8", "int4", 1);
    CHECK(m && info_is(m, "f32", "f32"));
    if (m) CHECK(ct_model_get_info(m).weight_bytes > base_bytes);
    ct_model_free(m);

    /* unknown names: CT_ERR_INVALID_ARG naming the field and the value */
    static const struct {
        const char *all, *talker, *pred, *field, *value;
    } BAD[] = {{NULL, "int3", NULL, "talker_weights", "int3"},
               {NULL, "int8", "fp8", "predictor_weights", "fp8"},
               {"q4", NULL, NULL, "weights", "q4"}};
    for (size_t k = 0; k < sizeof BAD / sizeof BAD[0]; k++) {
        ct_model_params mp = ct_model_params_default();
        mp.weights = BAD[k].all;
        mp.talker_weights = BAD[k].talker;
        mp.predictor_weights = BAD[k].pred;
        ct_model *bad = NULL;
        char err[512] = "";
        CHECK(ct_model_load(DIR_, &mp, &bad, err, sizeof err) == CT_ERR_INVALID_ARG && bad == NULL);
        char want[64];
        snprintf(want, sizeof want, "%s '%s'", BAD[k].field, BAD[k].value);
        CHECKF(strstr(err, want) != NULL, "%s (want %s)", err, want);
    }

    /* a caller built before the new fields: its size ends before them, so they are not read */
    ct_model_params old = ct_model_params_default();
    old.size = offsetof(ct_model_params, talker_weights);
    old.weights = "int8";
    old.talker_weights = "not-a-format";
    old.predictor_weights = "not-a-format";
    char err[512];
    m = NULL;
    CHECKF(ct_model_load(DIR_, &old, &m, err, sizeof err) == CT_OK, "%s", err);
    CHECK(m && info_is(m, "int8", "int8"));
    ct_model_free(m);

    ct_model_free(base);
    return ct_test_finish();
}
