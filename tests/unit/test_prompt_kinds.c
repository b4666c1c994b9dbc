/* Prompt layouts for VoiceDesign and Base (x-vector) models, made by relabelling a tiny
   random checkpoint's config (the tensors of the three kinds are the same here). */
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "model/session_internal.h"
#include "test_models.h"

static int ntok(ct_model *m, const char *t) {
    int32_t ids[256];
    size_t n = 0;
    char err[256];
    ct_tokenize(m, t, strlen(t), ids, 256, &n, err, sizeof err);
    return (int)n;
}

int main(void) {
    char err[1024];
    const char *text = "Design a voice for me.";
    const char *instr = "A calm, low male voice.";

    const char *vd = ct_test_make("tiny", "kinds-vd", 9);
    CHECK(ct_test_edit(vd, "config.json", "\"custom_voice\"", "\"voice_design\"") == 0);
    ct_model *m = NULL;
    CHECKF(ct_model_load(vd, NULL, &m, err, sizeof err) == CT_OK, "%s", err);
    if (m) {
        ct_session *s = NULL;
        CHECK(ct_session_create(m, NULL, &s, err, sizeof err) == CT_OK);
        int N = ntok(m, text);
        int I = ntok(m, "<|im_start|>user\nA calm, low male voice.<|im_end|>\n");
        ct_gen_params g = ct_gen_params_default();
        g.text = text;
        g.language = "english";
        g.max_frames = 2;
        CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG); /* instruction required */
        CHECK(strstr(ct_session_errmsg(s), "instruction") != NULL);
        g.instruct = instr;
        CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
        CHECK(ct_session_run_info(s).prompt_len == I + N + 10);
        /* the instruction block is text-only: row 0 == t(<|im_start|>) */
        float *row = malloc(sizeof(float) * (size_t)m->cfg.talker.hidden);
        ct_embed_text(m, m->cfg.im_start, row, s->etmp);
        CHECK(memcmp(row, s->prompt, sizeof(float) * (size_t)m->cfg.talker.hidden) == 0);
        free(row);
        g.non_streaming = 0;
        CHECK(ct_session_start(s, &g) == CT_OK);
        CHECK(ct_session_run_info(s).prompt_len == I + 9);
        /* a language code picks the same language id as its name: the same prompt rows */
        size_t pb = sizeof(float) * (size_t)m->cfg.talker.hidden * (size_t)(I + 9);
        float *by_name = malloc(pb);
        if (by_name) memcpy(by_name, s->prompt, pb);
        g.language = "en-US";
        CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
        CHECK(by_name && memcmp(by_name, s->prompt, pb) == 0);
        g.language = "de";
        CHECK(ct_session_start(s, &g) == CT_OK && by_name && memcmp(by_name, s->prompt, pb) != 0);
        g.language = "xx-YY";
        CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG && strstr(ct_session_errmsg(s), "'xx-YY'"));
        g.language = "english";
        free(by_name);
        g.speaker = "vivian";
        CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
        ct_session_free(s);
        ct_model_free(m);
    }

    const char *base = ct_test_make("tiny", "kinds-base", 9);
    CHECK(ct_test_edit(base, "config.json", "\"custom_voice\"", "\"base\"") == 0);
    m = NULL;
    CHECKF(ct_model_load(base, NULL, &m, err, sizeof err) == CT_OK, "%s", err);
    if (m) {
        ct_session *s = NULL;
        CHECK(ct_session_create(m, NULL, &s, err, sizeof err) == CT_OK);
        const int H = m->cfg.talker.hidden;
        int N = ntok(m, text);
        float *xv = malloc(sizeof(float) * (size_t)H);
        for (int i = 0; i < H; i++) xv[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
        ct_gen_params g = ct_gen_params_default();
        g.text = text;
        g.language = "english";
        g.xvector = xv;
        g.xvector_len = H;
        g.max_frames = 2;
        CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s)); /* streaming default */
        CHECK(ct_session_run_info(s).prompt_len == 10);
        /* speaker slot (row 3 + 4 = 7) holds P + xvector, no codec lookup */
        float *row = malloc(sizeof(float) * (size_t)H);
        for (int i = 0; i < H; i++) row[i] = s->pad_row[i] + xv[i];
        CHECK(memcmp(row, s->prompt + (size_t)7 * H, sizeof(float) * (size_t)H) == 0);
        free(row);
        g.non_streaming = 1;
        CHECK(ct_session_start(s, &g) == CT_OK);
        CHECK(ct_session_run_info(s).prompt_len == N + 11);
        g.xvector = NULL; /* Base without a reference: no speaker slot */
        CHECK(ct_session_start(s, &g) == CT_OK);
        CHECK(ct_session_run_info(s).prompt_len == N + 10);
        g.xvector = xv;
        g.xvector_len = H - 1;
        CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
        g.xvector_len = H;
        g.instruct = "whisper";
        CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
        free(xv);
        ct_session_free(s);
        ct_model_free(m);
    }
    return ct_test_finish();
}
