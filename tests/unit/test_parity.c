/* Parity with the official implementation (qwen-tts 0.1.1, transformers 4.57.3): per-stage
   tensors dumped by tools/parity/make_parity.py from small random official models are
   compared teacher-forced, and greedy free-running codes must match exactly (f32 path).
   Thresholds (normalised MSE): f32 path <= 1e-8 on every stage; BF16-weight path <= 1e-8
   against the official f32 run (same bf16 weight values, f32 math) and <= 2e-3 against the
   official all-bf16 run (which rounds every activation to bf16). */
#include <jansson.h>
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "model/session_internal.h"

#define DATA CT_SRC_DIR "/tests/data/parity"
#define F32_MAX 1e-8
#define BF16_OFFICIAL_MAX 2e-3

typedef struct {
    double prefill, trailing, hidden, logits, pred, step_input;
} stage_err;

static void worst(stage_err *w, const stage_err *e) {
    if (e->prefill > w->prefill) w->prefill = e->prefill;
    if (e->trailing > w->trailing) w->trailing = e->trailing;
    if (e->hidden > w->hidden) w->hidden = e->hidden;
    if (e->logits > w->logits) w->logits = e->logits;
    if (e->pred > w->pred) w->pred = e->pred;
    if (e->step_input > w->step_input) w->step_input = e->step_input;
}

static const ct_st_tensor *ref_t(ct_st_file *ref, const char *letter, const char *name,
                                 ct_dtype dt) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", letter, name);
    const ct_st_tensor *t = ct_st_find(ref, key);
    if (t && t->dtype != dt) t = NULL;
    return t;
}

static double nm(const float *got, const ct_st_tensor *ref, size_t off, size_t n) {
    if (!ref || (off + n) * 4 > ref->nbytes) return 1e30;
    return ct_nmse(got, (const float *)ref->data + off, n);
}

static void fill_gen(ct_gen_params *g, json_t *c, ct_st_file *ref, const char *letter) {
    *g = ct_gen_params_default();
    g->text = json_string_value(json_object_get(c, "text"));
    g->speaker = json_string_value(json_object_get(c, "speaker"));
    g->language = json_string_value(json_object_get(c, "language"));
    g->instruct = json_string_value(json_object_get(c, "instruct"));
    g->non_streaming = json_is_true(json_object_get(c, "non_streaming"));
    const ct_st_tensor *xv = ref_t(ref, letter, "xvector", CT_DT_F32);
    if (xv) {
        g->xvector = xv->data;
        g->xvector_len = (int)xv->shape[0];
    }
    json_t *k = json_object_get(c, "talker_generate_kwargs");
    g->greedy = !json_is_true(json_object_get(k, "do_sample"));
    g->max_new_tokens = (int)json_integer_value(json_object_get(k, "max_new_tokens"));
    g->min_new_tokens = (int)json_integer_value(json_object_get(k, "min_new_tokens"));
    g->repetition_penalty = (float)json_number_value(json_object_get(k, "repetition_penalty"));
    g->budget_base = 1000; /* the reference has no text budget */
}

/* Teacher-forced run over S rows. which: "f32" or "bf16" reference tensors. */
static stage_err teacher_forced(ct_session *s, const ct_gen_params *g, ct_st_file *ref,
                                const char *letter, const char *which, int S, int pred_rows) {
    stage_err e = {0};
    const ct_model *m = s->m;
    const size_t H = (size_t)m->cfg.talker.hidden, V = (size_t)m->cfg.talker.vocab;
    const size_t PV = (size_t)m->cfg.pred.vocab;
    const int G = m->cfg.n_groups;
    char nb[64];
    if (ct_prompt_build(s, g) != CT_OK) {
        fprintf(stderr, "case %s: %s\n", letter, s->err);
        e.prefill = 1e30;
        return e;
    }
    int bf = strcmp(which, "bf16") == 0;
    const ct_st_tensor *pre = ref_t(ref, letter, bf ? "bf16.prefill" : "prefill", CT_DT_F32);
    CHECKF(pre && pre->shape[0] == s->prompt_len, "case %s: prefill length %d vs reference %lld",
           letter, s->prompt_len, pre ? (long long)pre->shape[0] : -1LL);
    e.prefill = nm(s->prompt, pre, 0, (size_t)s->prompt_len * H);
    const ct_st_tensor *tr = ref_t(ref, letter, "trailing", CT_DT_F32);
    CHECK((tr ? (int)tr->shape[0] : 0) == s->n_trailing);
    if (tr && !bf) e.trailing = nm(s->trailing, tr, 0, (size_t)s->n_trailing * H);
    snprintf(nb, sizeof nb, "%s.hidden", which);
    const ct_st_tensor *hid = ref_t(ref, letter, nb, CT_DT_F32);
    snprintf(nb, sizeof nb, "%s.logits", which);
    const ct_st_tensor *lg = ref_t(ref, letter, nb, CT_DT_F32);
    snprintf(nb, sizeof nb, "%s.pred_logits", which);
    const ct_st_tensor *pl = ref_t(ref, letter, nb, CT_DT_F32);
    const ct_st_tensor *si = ref_t(ref, letter, "f32.step_input", CT_DT_F32);
    const ct_st_tensor *codes = ref_t(ref, letter, "codes", CT_DT_I32);
    if (!hid || !lg || !pl || !codes) {
        e.hidden = 1e30;
        return e;
    }
    float *plog = malloc(sizeof(float) * (size_t)(G - 1) * PV);
    float *x = malloc(sizeof(float) * H);
    int32_t out[64];
    s->pos = 0;
    ct_talker_run(s, s->prompt, s->prompt_len);
    for (int r = 0; r < S; r++) {
        double d = nm(s->h, hid, (size_t)r * H, H);
        if (d > e.hidden) e.hidden = d;
        ct_talker_logits(s, s->logits);
        d = nm(s->logits, lg, (size_t)r * V, V);
        if (d > e.logits) e.logits = d;
        const int32_t *fc = (const int32_t *)codes->data + (size_t)r * G;
        if (r < pred_rows) {
            ct_predict_frame(s, s->h, fc[0], fc, out, plog);
            d = nm(plog, pl, (size_t)r * (G - 1) * PV, (size_t)(G - 1) * PV);
            if (d > e.pred) e.pred = d;
        }
        if (r == S - 1) break;
        const float *ov = r < s->n_trailing ? s->trailing + (size_t)r * H : s->pad_row;
        ct_frame_embedding(s, fc, ov, x);
        if (!bf && si) {
            d = nm(x, si, (size_t)r * H, H);
            if (d > e.step_input) e.step_input = d;
        }
        ct_talker_run(s, x, 1);
    }
    free(plog);
    free(x);
    return e;
}

int main(void) {
    json_error_t je;
    json_t *man = json_load_file(DATA "/manifest.json", 0, &je);
    CHECKF(man != NULL, "manifest: %s", je.text);
    if (!man) return ct_test_finish();
    json_t *cases = json_object_get(man, "cases");
    int bf16_rows = (int)json_integer_value(json_object_get(man, "bf16_pred_rows"));
    stage_err wf = {0}, wb_off = {0}, wb_f32 = {0};
    int n_cases = 0, greedy_match = 0, greedy_frames = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *letter = json_string_value(json_object_get(c, "letter"));
        const char *model = json_string_value(json_object_get(c, "model"));
        char dir[1024], path[1200], err[1024];
        snprintf(dir, sizeof dir, "%s/%s", DATA, model);
        snprintf(path, sizeof path, "%s/ref.safetensors", dir);
        ct_st_file *ref = NULL;
        CHECKF(ct_st_open(path, &ref, err, sizeof err) == CT_OK, "%s", err);
        if (!ref) continue;
        ct_model_params mp = ct_model_params_default();
        mp.tokenizer_dir = CT_SRC_DIR "/assets/qwen3-tokenizer";
        mp.f32_weights = 1;
        ct_model *mf = NULL, *mb = NULL;
        CHECKF(ct_model_load(dir, &mp, &mf, err, sizeof err) == CT_OK, "%s", err);
        mp.f32_weights = 0;
        CHECKF(ct_model_load(dir, &mp, &mb, err, sizeof err) == CT_OK, "%s", err);
        if (!mf || !mb) {
            ct_st_close(ref);
            ct_model_free(mf);
            ct_model_free(mb);
            continue;
        }
        n_cases++;
        ct_gen_params g;
        fill_gen(&g, c, ref, letter);
        int S = (int)json_integer_value(json_object_get(c, "S"));
        int F = (int)json_integer_value(json_object_get(c, "F"));

        /* token ids of the target string equal the official processor's */
        const ct_st_tensor *ids = ref_t(ref, letter, "input_ids", CT_DT_I32);
        const char *target = json_string_value(json_object_get(c, "target_string"));
        int32_t tok[512];
        size_t nt = 0;
        CHECK(ct_tokenize(mf, target, strlen(target), tok, 512, &nt, err, sizeof err) == CT_OK);
        CHECKF(ids && (size_t)ids->shape[0] == nt && memcmp(tok, ids->data, nt * 4) == 0,
               "case %s: token ids differ", letter);

        ct_session_params sp = ct_session_params_default();
        sp.max_context = 256;
        ct_session *s = NULL;
        CHECK(ct_session_create(mf, &sp, &s, err, sizeof err) == CT_OK);
        stage_err e = teacher_forced(s, &g, ref, letter, "f32", S, S);
        worst(&wf, &e);
        printf("case %s (%s %s %s): f32 prefill %.2e trailing %.2e hidden %.2e logits %.2e "
               "pred %.2e step_in %.2e\n", letter, model, json_string_value(json_object_get(c, "kind")),
               g.non_streaming ? "non-streaming" : "streaming", e.prefill, e.trailing, e.hidden,
               e.logits, e.pred, e.step_input);

        /* greedy free run: codes must match the official run exactly */
        const ct_st_tensor *rc = ref_t(ref, letter, "codes", CT_DT_I32);
        static int32_t frames[256 * 16];
        int n = 0, got = 1;
        ct_status st = ct_session_start(s, &g);
        CHECKF(st == CT_OK, "case %s: %s", letter, ct_session_errmsg(s));
        while (st == CT_OK && got && n < 256) {
            st = ct_session_next_frame(s, frames + 16 * n, &got);
            n += got;
        }
        int match = rc && n == F && memcmp(frames, rc->data, sizeof(int32_t) * 16 * (size_t)F) == 0;
        int eos = json_is_true(json_object_get(c, "stopped_on_eos"));
        CHECKF(match, "case %s: greedy codes differ (%d frames vs %d)", letter, n, F);
        CHECK(ct_session_stop_reason(s) == (eos ? CT_STOP_EOS : CT_STOP_MAX_FRAMES));
        greedy_match += match;
        greedy_frames += n;
        ct_session_free(s);

        /* BF16-weight path */
        CHECK(ct_session_create(mb, &sp, &s, err, sizeof err) == CT_OK);
        stage_err eb = teacher_forced(s, &g, ref, letter, "f32", S, S);
        worst(&wb_f32, &eb);
        stage_err eo = teacher_forced(s, &g, ref, letter, "bf16", S, bf16_rows);
        worst(&wb_off, &eo);
        printf("case %s: bf16 path vs official f32: hidden %.2e logits %.2e pred %.2e; "
               "vs official bf16: prefill %.2e hidden %.2e logits %.2e pred %.2e\n", letter,
               eb.hidden, eb.logits, eb.pred, eo.prefill, eo.hidden, eo.logits, eo.pred);
        ct_session_free(s);
        ct_model_free(mf);
        ct_model_free(mb);
        ct_st_close(ref);
    }
    printf("worst f32: prefill %.2e trailing %.2e hidden %.2e logits %.2e pred %.2e step_in %.2e\n",
           wf.prefill, wf.trailing, wf.hidden, wf.logits, wf.pred, wf.step_input);
    printf("worst bf16-weight path vs official f32: hidden %.2e logits %.2e pred %.2e\n",
           wb_f32.hidden, wb_f32.logits, wb_f32.pred);
    printf("worst bf16-weight path vs official bf16: prefill %.2e hidden %.2e logits %.2e pred %.2e\n",
           wb_off.prefill, wb_off.hidden, wb_off.logits, wb_off.pred);
    printf("greedy: %d/%d cases match exactly (%d frames)\n", greedy_match, n_cases, greedy_frames);
    CHECK(n_cases == 8);
    CHECK(wf.prefill <= F32_MAX && wf.trailing <= F32_MAX && wf.hidden <= F32_MAX &&
          wf.logits <= F32_MAX && wf.pred <= F32_MAX && wf.step_input <= F32_MAX);
    CHECK(wb_f32.hidden <= F32_MAX && wb_f32.logits <= F32_MAX && wb_f32.pred <= F32_MAX);
    CHECK(wb_off.prefill <= BF16_OFFICIAL_MAX && wb_off.hidden <= BF16_OFFICIAL_MAX &&
          wb_off.logits <= BF16_OFFICIAL_MAX && wb_off.pred <= BF16_OFFICIAL_MAX);
    json_decref(man);
    return ct_test_finish();
}
