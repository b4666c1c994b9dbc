/* Talker/predictor parity with the official implementation, shared by the parity tests: one
   manifest case (tools/parity/make_parity.py or make_wide_parity.py) is run teacher-forced
   against the dumped per-stage tensors and free-running greedy against the dumped codes, with
   f32 weights and with the stored BF16 weights. */
#ifndef CT_TEST_PARITY_H
#define CT_TEST_PARITY_H

#include <jansson.h>
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "model/session_internal.h"

/* Bounds (normalised MSE): f32 path <= 1e-8 on every stage; BF16-weight path <= 1e-8 against
   the official f32 run (same bf16 weight values, f32 math) and <= 2e-3 against the official
   all-bf16 run (which rounds every activation to bf16). */
#define CT_PARITY_F32_MAX 1e-8
#define CT_PARITY_BF16_OFFICIAL_MAX 2e-3

typedef struct {
    double prefill, trailing, hidden, logits, pred, step_input;
} ct_parity_err;

/* Worst errors and greedy agreement over the cases run so far. */
typedef struct {
    ct_parity_err f32, bf16_vs_f32, bf16_vs_bf16;
    int cases, greedy_match, greedy_frames, bf16_greedy_match;
} ct_parity_totals;

/* What the BF16-weight path must meet: NMSE against the official f32 and bf16 runs, and
   whether its greedy codes must equal the official ones. */
typedef struct {
    double bf16_vs_f32_max, bf16_vs_bf16_max;
    int bf16_greedy;
} ct_parity_bounds;

/* The default kernels: the bounds above, identical BF16-weight codes. */
static const ct_parity_bounds ct_parity_default = {CT_PARITY_F32_MAX, CT_PARITY_BF16_OFFICIAL_MAX, 1};

static inline void ct_parity_worst(ct_parity_err *w, const ct_parity_err *e) {
    if (e->prefill > w->prefill) w->prefill = e->prefill;
    if (e->trailing > w->trailing) w->trailing = e->trailing;
    if (e->hidden > w->hidden) w->hidden = e->hidden;
    if (e->logits > w->logits) w->logits = e->logits;
    if (e->pred > w->pred) w->pred = e->pred;
    if (e->step_input > w->step_input) w->step_input = e->step_input;
}

static inline const ct_st_tensor *ct_parity_ref(ct_st_file *ref, const char *letter,
                                                const char *name, ct_dtype dt) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", letter, name);
    const ct_st_tensor *t = ct_st_find(ref, key);
    if (t && t->dtype != dt) t = NULL;
    return t;
}

static inline double ct_parity_nm(const float *got, const ct_st_tensor *ref, size_t off, size_t n) {
    if (!ref || (off + n) * 4 > ref->nbytes) return 1e30;
    return ct_nmse(got, (const float *)ref->data + off, n);
}

static inline void ct_parity_gen(ct_gen_params *g, json_t *c, ct_st_file *ref, const char *letter) {
    *g = ct_gen_params_default();
    g->text = json_string_value(json_object_get(c, "text"));
    g->speaker = json_string_value(json_object_get(c, "speaker"));
    g->language = json_string_value(json_object_get(c, "language"));
    g->instruct = json_string_value(json_object_get(c, "instruct"));
    g->non_streaming = json_is_true(json_object_get(c, "non_streaming"));
    const ct_st_tensor *xv = ct_parity_ref(ref, letter, "xvector", CT_DT_F32);
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

/* Teacher-forced run over S rows (predictor logits for the first pred_rows). which: "f32" or
   "bf16" reference tensors. */
static inline ct_parity_err ct_parity_teacher_forced(ct_session *s, const ct_gen_params *g,
                                                     ct_st_file *ref, const char *letter,
                                                     const char *which, int S, int pred_rows) {
    ct_parity_err e = {0};
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
    const ct_st_tensor *pre = ct_parity_ref(ref, letter, bf ? "bf16.prefill" : "prefill", CT_DT_F32);
    CHECKF(pre && pre->shape[0] == s->prompt_len, "case %s: prefill length %d vs reference %lld",
           letter, s->prompt_len, pre ? (long long)pre->shape[0] : -1LL);
    e.prefill = ct_parity_nm(s->prompt, pre, 0, (size_t)s->prompt_len * H);
    const ct_st_tensor *tr = ct_parity_ref(ref, letter, "trailing", CT_DT_F32);
    CHECK((tr ? (int)tr->shape[0] : 0) == s->n_trailing);
    if (tr && !bf) e.trailing = ct_parity_nm(s->trailing, tr, 0, (size_t)s->n_trailing * H);
    snprintf(nb, sizeof nb, "%s.hidden", which);
    const ct_st_tensor *hid = ct_parity_ref(ref, letter, nb, CT_DT_F32);
    snprintf(nb, sizeof nb, "%s.logits", which);
    const ct_st_tensor *lg = ct_parity_ref(ref, letter, nb, CT_DT_F32);
    snprintf(nb, sizeof nb, "%s.pred_logits", which);
    const ct_st_tensor *pl = ct_parity_ref(ref, letter, nb, CT_DT_F32);
    const ct_st_tensor *si = ct_parity_ref(ref, letter, "f32.step_input", CT_DT_F32);
    const ct_st_tensor *codes = ct_parity_ref(ref, letter, "codes", CT_DT_I32);
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
        double d = ct_parity_nm(s->h, hid, (size_t)r * H, H);
        if (d > e.hidden) e.hidden = d;
        ct_talker_logits(s, s->logits);
        d = ct_parity_nm(s->logits, lg, (size_t)r * V, V);
        if (d > e.logits) e.logits = d;
        const int32_t *fc = (const int32_t *)codes->data + (size_t)r * G;
        if (r < pred_rows) {
            ct_predict_frame(s, s->h, fc[0], fc, out, plog);
            d = ct_parity_nm(plog, pl, (size_t)r * (G - 1) * PV, (size_t)(G - 1) * PV);
            if (d > e.pred) e.pred = d;
        }
        if (r == S - 1) break;
        const float *ov = r < s->n_trailing ? s->trailing + (size_t)r * H : s->pad_row;
        ct_frame_embedding(s, fc, ov, x);
        if (!bf && si) {
            d = ct_parity_nm(x, si, (size_t)r * H, H);
            if (d > e.step_input) e.step_input = d;
        }
        ct_talker_run(s, x, 1);
    }
    free(plog);
    free(x);
    return e;
}

/* Greedy free run of s; 1 when it yields exactly the reference codes (F frames) and stops for
   the reference's reason. */
static inline int ct_parity_greedy(ct_session *s, const ct_gen_params *g, json_t *c,
                                   const ct_st_tensor *rc, const char *letter, const char *path,
                                   int required, int *frames_out) {
    static int32_t frames[256 * 16];
    int F = (int)json_integer_value(json_object_get(c, "F"));
    int n = 0, got = 1;
    ct_status st = ct_session_start(s, g);
    CHECKF(st == CT_OK, "case %s: %s", letter, ct_session_errmsg(s));
    while (st == CT_OK && got && n < 256) {
        st = ct_session_next_frame(s, frames + 16 * n, &got);
        n += got;
    }
    int match = rc && n == F && memcmp(frames, rc->data, sizeof(int32_t) * 16 * (size_t)F) == 0;
    int eos = json_is_true(json_object_get(c, "stopped_on_eos"));
    if (required) {
        CHECKF(match, "case %s (%s): greedy codes differ (%d frames vs %d)", letter, path, n, F);
        CHECK(ct_session_stop_reason(s) == (eos ? CT_STOP_EOS : CT_STOP_MAX_FRAMES));
    }
    *frames_out = n;
    return match;
}

/* Runs manifest case c against model_dir and its reference file ref_path: token ids, the f32
   path (teacher-forced stages with predictor logits for f32_pred_rows frames, greedy codes)
   and the BF16-weight path (greedy codes; teacher-forced against the official f32 tensors
   and, with bf16_pred_rows predictor frames, the official bf16 tensors). Adds to *t; the
   BF16-weight codes are checked when b->bf16_greedy, else only counted. */
static inline void ct_parity_case(const char *model_dir, const char *ref_path, json_t *c,
                                  int f32_pred_rows, int bf16_pred_rows,
                                  const ct_parity_bounds *b, ct_parity_totals *t) {
    const char *letter = json_string_value(json_object_get(c, "letter"));
    char err[1024];
    ct_st_file *ref = NULL;
    CHECKF(ct_st_open(ref_path, &ref, err, sizeof err) == CT_OK, "%s", err);
    if (!ref) return;
    ct_model_params mp = ct_model_params_default();
    mp.tokenizer_dir = CT_SRC_DIR "/assets/qwen3-tokenizer";
    mp.f32_weights = 1;
    ct_model *mf = NULL, *mb = NULL;
    CHECKF(ct_model_load(model_dir, &mp, &mf, err, sizeof err) == CT_OK, "%s", err);
    mp.f32_weights = 0;
    CHECKF(ct_model_load(model_dir, &mp, &mb, err, sizeof err) == CT_OK, "%s", err);
    if (!mf || !mb) {
        ct_st_close(ref);
        ct_model_free(mf);
        ct_model_free(mb);
        return;
    }
    t->cases++;
    ct_gen_params g;
    ct_parity_gen(&g, c, ref, letter);
    int S = (int)json_integer_value(json_object_get(c, "S"));

    /* token ids of the target string equal the official processor's */
    const ct_st_tensor *ids = ct_parity_ref(ref, letter, "input_ids", CT_DT_I32);
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
    ct_parity_err e = ct_parity_teacher_forced(s, &g, ref, letter, "f32", S, f32_pred_rows);
    ct_parity_worst(&t->f32, &e);
    printf("case %s (%s %s %s): f32 prefill %.2e trailing %.2e hidden %.2e logits %.2e "
           "pred %.2e step_in %.2e\n", letter, json_string_value(json_object_get(c, "model")),
           json_string_value(json_object_get(c, "kind")),
           g.non_streaming ? "non-streaming" : "streaming", e.prefill, e.trailing, e.hidden,
           e.logits, e.pred, e.step_input);
    /* greedy free run: codes must match the official run exactly */
    const ct_st_tensor *rc = ct_parity_ref(ref, letter, "codes", CT_DT_I32);
    int n = 0;
    t->greedy_match += ct_parity_greedy(s, &g, c, rc, letter, "f32 weights", 1, &n);
    t->greedy_frames += n;
    ct_session_free(s);

    /* BF16-weight path: the same values in f32 math, so the same codes */
    CHECK(ct_session_create(mb, &sp, &s, err, sizeof err) == CT_OK);
    ct_parity_err eb = ct_parity_teacher_forced(s, &g, ref, letter, "f32", S, f32_pred_rows);
    ct_parity_worst(&t->bf16_vs_f32, &eb);
    ct_parity_err eo = ct_parity_teacher_forced(s, &g, ref, letter, "bf16", S, bf16_pred_rows);
    ct_parity_worst(&t->bf16_vs_bf16, &eo);
    printf("case %s: bf16 path vs official f32: hidden %.2e logits %.2e pred %.2e; "
           "vs official bf16: prefill %.2e hidden %.2e logits %.2e pred %.2e\n", letter,
           eb.hidden, eb.logits, eb.pred, eo.prefill, eo.hidden, eo.logits, eo.pred);
    t->bf16_greedy_match += ct_parity_greedy(s, &g, c, rc, letter, "bf16 weights", b->bf16_greedy, &n);
    ct_session_free(s);
    ct_model_free(mf);
    ct_model_free(mb);
    ct_st_close(ref);
}

/* Prints the worst errors and checks them: the f32 path against CT_PARITY_F32_MAX, the
   BF16-weight path against bd. */
static inline void ct_parity_report(const ct_parity_totals *t, const ct_parity_bounds *bd) {
    const ct_parity_err *f = &t->f32, *b = &t->bf16_vs_f32, *o = &t->bf16_vs_bf16;
    const double bf = bd->bf16_vs_f32_max, bo = bd->bf16_vs_bf16_max;
    printf("worst f32: prefill %.2e trailing %.2e hidden %.2e logits %.2e pred %.2e step_in %.2e\n",
           f->prefill, f->trailing, f->hidden, f->logits, f->pred, f->step_input);
    printf("worst bf16-weight path vs official f32: hidden %.2e logits %.2e pred %.2e\n",
           b->hidden, b->logits, b->pred);
    printf("worst bf16-weight path vs official bf16: prefill %.2e hidden %.2e logits %.2e pred %.2e\n",
           o->prefill, o->hidden, o->logits, o->pred);
    printf("greedy: %d/%d cases match exactly with f32 weights (%d frames), %d/%d with bf16 "
           "weights\n", t->greedy_match, t->cases, t->greedy_frames, t->bf16_greedy_match, t->cases);
    CHECK(f->prefill <= CT_PARITY_F32_MAX && f->trailing <= CT_PARITY_F32_MAX &&
          f->hidden <= CT_PARITY_F32_MAX && f->logits <= CT_PARITY_F32_MAX &&
          f->pred <= CT_PARITY_F32_MAX && f->step_input <= CT_PARITY_F32_MAX);
    CHECK(b->hidden <= bf && b->logits <= bf && b->pred <= bf);
    CHECK(o->prefill <= bo && o->hidden <= bo && o->logits <= bo && o->pred <= bo);
}

#endif
