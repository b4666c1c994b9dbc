/* Voice-cloning parity with the official implementation (qwen-tts 0.1.1): references dumped by
   tools/parity/make_clone_parity.py from generate_voice_clone on a small random Base model
   (tests/data/clone_parity). f32 path: the prefill embeddings and the trailing overlay of the
   x-vector-only and both ICL layouts within NMSE 1e-8; greedy codes identical (>= 20 frames)
   through the session API and through the engine (codes output); the ICL case's PCM from the
   engine (exact decoder, official codec of tests/data/codec_parity/small) within NMSE 1e-8 of
   the audio the official wrapper returns. Every figure is printed. */
#include <jansson.h>
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "model/session_internal.h"

#define DATA CT_SRC_DIR "/tests/data/clone_parity"
#define F32_MAX 1e-8
#define MAXF 64

static const ct_st_tensor *ref_t(ct_st_file *ref, const char *letter, const char *name, ct_dtype dt) {
    char key[128];
    if (letter) snprintf(key, sizeof key, "%s.%s", letter, name);
    else snprintf(key, sizeof key, "%s", name);
    const ct_st_tensor *t = ct_st_find(ref, key);
    return t && t->dtype == dt ? t : NULL;
}

static double nm(const float *got, const ct_st_tensor *ref, size_t n) {
    if (!ref || n * 4 > ref->nbytes) return 1e30;
    return ct_nmse(got, (const float *)ref->data, n);
}

int main(void) {
    json_error_t je;
    json_t *man = json_load_file(DATA "/manifest.json", 0, &je);
    CHECKF(man != NULL, "manifest: %s", je.text);
    if (!man) return ct_test_finish();
    char dir[1024], path[1200], err[1024];
    snprintf(dir, sizeof dir, "%s/%s", DATA, json_string_value(json_object_get(json_object_get(man, "model"), "dir")));
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    ct_st_file *ref = NULL;
    CHECKF(ct_st_open(path, &ref, err, sizeof err) == CT_OK, "%s", err);
    ct_model_params mp = ct_model_params_default();
    mp.tokenizer_dir = CT_SRC_DIR "/assets/qwen3-tokenizer";
    mp.f32_weights = 1;
    ct_model *m = NULL;
    ct_codec *codec = NULL;
    CHECKF(ct_model_load(dir, &mp, &m, err, sizeof err) == CT_OK, "%s", err);
    CHECKF(ct_codec_load(CT_SRC_DIR "/tests/data/codec_parity/small", &codec, err, sizeof err) == CT_OK, "%s", err);
    if (!ref || !m || !codec) {
        ct_st_close(ref);
        ct_model_free(m);
        ct_codec_free(codec);
        json_decref(man);
        return ct_test_finish();
    }
    const int H = m->cfg.talker.hidden, G = m->cfg.n_groups, spf = ct_codec_samples_per_frame(codec);
    const ct_st_tensor *xv = ref_t(ref, NULL, "xvector", CT_DT_F32);
    const ct_st_tensor *rc = ref_t(ref, NULL, "ref_codes", CT_DT_I32);
    CHECK(xv && xv->shape[0] == H && rc && rc->shape[1] == G);
    int max_new = (int)json_integer_value(json_object_get(man, "max_new_tokens"));
    int min_frames = (int)json_integer_value(json_object_get(man, "min_frames"));

    ct_session_params sp = ct_session_params_default();
    sp.max_context = 256;
    ct_session *s = NULL;
    CHECK(ct_session_create(m, &sp, &s, err, sizeof err) == CT_OK);
    ct_engine_params ep = ct_engine_params_default();
    ep.max_context = 256;
    ep.talker_threads = 2;
    ct_engine *e = NULL;
    CHECKF(ct_engine_create(m, codec, &ep, &e, err, sizeof err) == CT_OK, "%s", err);

    double worst_pre = 0, worst_tr = 0;
    int n_cases = 0, n_icl = 0, layouts = 0, sess_match = 0, eng_match = 0, pcm_checked = 0;
    static int32_t frames[MAXF * 16], eframes[MAXF * 16];
    static float pcm[MAXF * 1920];
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(man, "cases"), i, c) {
        if (!s || !e || !xv || !rc) break;
        const char *X = json_string_value(json_object_get(c, "letter"));
        int icl = strcmp(json_string_value(json_object_get(c, "mode")), "icl") == 0;
        int ns = json_is_true(json_object_get(c, "non_streaming"));
        int F = (int)json_integer_value(json_object_get(c, "F"));
        int L = (int)json_integer_value(json_object_get(c, "L"));
        int T = (int)json_integer_value(json_object_get(c, "T"));
        ct_gen_params g = ct_gen_params_default();
        g.text = json_string_value(json_object_get(c, "text"));
        g.language = json_string_value(json_object_get(c, "language"));
        g.non_streaming = ns;
        g.xvector = xv->data;
        g.xvector_len = H;
        if (icl) {
            g.ref_codes = rc->data;
            g.ref_frames = (int)rc->shape[0];
            g.ref_text = json_string_value(json_object_get(c, "ref_text"));
        }
        g.greedy = 1;
        g.max_new_tokens = max_new;
        g.budget_base = 1000; /* the official wrapper has no text budget */
        n_cases++;
        n_icl += icl;
        layouts |= 1 << (icl * 2 + ns);

        /* prefill and overlay (teacher-free: the prompt as built) */
        ct_status st = ct_session_start(s, &g);
        CHECKF(st == CT_OK, "case %s: %s", X, ct_session_errmsg(s));
        const ct_st_tensor *pre = ref_t(ref, X, "prefill", CT_DT_F32), *tr = ref_t(ref, X, "trailing", CT_DT_F32);
        CHECKF(s->prompt_len == L && pre && pre->shape[0] == L, "case %s: prefill length %d vs %d", X, s->prompt_len, L);
        CHECKF(s->n_trailing == T, "case %s: overlay rows %d vs %d", X, s->n_trailing, T);
        double dp = nm(s->prompt, pre, (size_t)L * H), dt = T ? nm(s->trailing, tr, (size_t)T * H) : 0;
        if (dp > worst_pre) worst_pre = dp;
        if (dt > worst_tr) worst_tr = dt;

        /* greedy free run, session API */
        const ct_st_tensor *codes = ref_t(ref, X, "codes", CT_DT_I32);
        int n = 0, got = 1;
        while (st == CT_OK && got && n < MAXF) {
            st = ct_session_next_frame(s, frames + (size_t)G * n, &got);
            n += got;
        }
        int ok = codes && n == F && F >= min_frames && !memcmp(frames, codes->data, sizeof(int32_t) * (size_t)G * F);
        CHECKF(ok, "case %s: session greedy codes differ (%d frames vs %d)", X, n, F);
        sess_match += ok;

        /* the same request through the engine, codes output */
        ct_stream_params stp = ct_stream_params_default();
        stp.output = CT_OUTPUT_CODES;
        stp.utterance_bytes = 0;
        ct_stream *str = NULL;
        CHECKF(ct_engine_submit(e, &g, &stp, &str, err, sizeof err) == CT_OK, "%s", err);
        int en = 0, fin = 0;
        while (str && !fin && en < MAXF)
            en += (int)ct_stream_read_codes(str, eframes + (size_t)G * en, (size_t)(MAXF - en), 10000, &fin);
        ok = str && ct_stream_get_info(str).status == CT_OK && en == F && codes &&
             !memcmp(eframes, codes->data, sizeof(int32_t) * (size_t)G * F);
        CHECKF(ok, "case %s: engine greedy codes differ (%d frames vs %d): %s", X, en, F, str ? ct_stream_errmsg(str) : "");
        eng_match += ok;
        ct_stream_release(str);

        /* the official returned audio (ICL: decoded with the reference, reference cut) */
        const ct_st_tensor *opcm = ref_t(ref, X, "pcm", CT_DT_F32);
        double dpcm = -1;
        if (opcm) {
            /* the official cut is int(ref / total * samples): when that falls short of
               ref_frames * 1920 it keeps that many reference samples first (docs/CLONING.md) */
            int lead = -(int)json_integer_value(json_object_get(c, "official_cut_minus_ref_frames_x1920"));
            stp.output = CT_OUTPUT_PCM;
            CHECKF(ct_engine_submit(e, &g, &stp, &str, err, sizeof err) == CT_OK, "%s", err);
            size_t np = 0;
            fin = 0;
            while (str && !fin && np < sizeof pcm / sizeof pcm[0])
                np += ct_stream_read(str, pcm + np, sizeof pcm / sizeof pcm[0] - np, 10000, &fin);
            ct_stream_release(str);
            CHECKF(np == (size_t)F * spf && opcm->shape[0] == (int64_t)np + lead && lead >= 0 && lead < spf,
                   "case %s: %zu samples, official %lld (lead %d)", X, np, (long long)opcm->shape[0], lead);
            if (np == (size_t)F * spf && opcm->shape[0] == (int64_t)np + lead && lead >= 0)
                dpcm = ct_nmse(pcm, (const float *)opcm->data + lead, np);
            CHECKF(dpcm >= 0 && dpcm <= F32_MAX, "case %s: pcm nmse %.3e", X, dpcm);
            pcm_checked++;
        }
        printf("case %s (%s, %s): L %d overlay %d prefill nmse %.2e overlay nmse %.2e; %d frames, session %s, "
               "engine %s%s", X, icl ? "ICL" : "x-vector-only", ns ? "non-streaming" : "streaming", L, T, dp, dt, F,
               n == F ? "same" : "DIFFERENT", en == F ? "same" : "DIFFERENT", dpcm >= 0 ? "" : "\n");
        if (dpcm >= 0) printf("; engine PCM vs official nmse %.2e\n", dpcm);
    }
    printf("worst f32: prefill %.2e overlay %.2e; greedy: session %d/%d, engine %d/%d cases identical\n", worst_pre,
           worst_tr, sess_match, n_cases, eng_match, n_cases);
    CHECK(n_cases >= 4 && n_icl >= 2 && layouts == 15); /* both modes x both layouts */
    CHECK(worst_pre <= F32_MAX && worst_tr <= F32_MAX);
    CHECK(pcm_checked == 1);
    ct_engine_free(e);
    ct_session_free(s);
    ct_codec_free(codec);
    ct_model_free(m);
    ct_st_close(ref);
    json_decref(man);
    return ct_test_finish();
}
