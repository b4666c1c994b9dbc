/* Quality of the load-time weight formats against the f32 reference path: on the official
   parity models (tests/data/parity) each format runs teacher-forced on the f32 model's own
   greedy codes, and the test reports talker (codebook-0) and code-predictor (codebooks 1-15)
   argmax agreement and logit NMSE against f32. Bounds: bf16 (as stored, f32 activations
   everywhere) NMSE <= 1e-8 with full agreement, int8 <= 1e-2, int4/mixed <= 0.2; a quantized safetensors file with a wrong
   scales shape or a missing scales tensor is rejected by name. CT_QUANT_MODEL=DIR adds a
   full-size model (e.g. from `codectalk make-model`) to the report. INT8/INT4 prompts give
   the same talker logits and codes for every prefill pass size unless AMX takes the prefill
   (docs/KERNELS.md "Integer-dot mode"), and the same with the weight panels packed at load
   (ct_model_params.weight_panels) as with them detached; without the parameter none are packed. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "codec/codec.h"
#include "codectalk.h"
#include "ct_test.h"
#include "kernels/cpu.h"
#include "model/session_internal.h"
#include "test_models.h"

#define DATA CT_SRC_DIR "/tests/data/parity"
#define TOKDIR CT_SRC_DIR "/assets/qwen3-tokenizer"

typedef struct {
    double lg_nmse, pl_nmse; /* worst per-step logit NMSE: talker, predictor */
    int c0_agree, c0_n, cb_agree, cb_n;
    double mel_snr;          /* dB, decoded audio of the argmax codes vs f32's; NAN: no codec */
} quality;

#define MAXF 32

/* Log-mel spectrogram (n_fft 1024, hop 256, Hann, 80 triangular mel bands 0-12 kHz, natural
   log of power + 1e-5) of pcm[n] at rate sr into mel[frames][80]; returns frames. */
static int logmel(const float *pcm, int n, int sr, float *mel, int cap) {
    enum { NF = 1024, HOP = 256, NB = 80 };
    static double ct[NF], st[NF], win[NF];
    const double PI = 3.14159265358979323846;
    for (int j = 0; j < NF; j++) {
        ct[j] = cos(2 * PI * j / NF);
        st[j] = sin(2 * PI * j / NF);
        win[j] = 0.5 - 0.5 * ct[j];
    }
    int frames = 0;
    double mlo = 0, mhi = 2595.0 * log10(1.0 + 12000.0 / 700.0);
    for (int f0 = 0; f0 + NF <= n && frames < cap; f0 += HOP, frames++) {
        double pw[NF / 2 + 1];
        for (int k = 0; k <= NF / 2; k++) {
            double re = 0, im = 0;
            for (int t = 0; t < NF; t++) {
                double v = win[t] * pcm[f0 + t];
                int j = (k * t) & (NF - 1);
                re += v * ct[j];
                im -= v * st[j];
            }
            pw[k] = re * re + im * im;
        }
        for (int b = 0; b < NB; b++) {
            double m0 = mlo + (mhi - mlo) * b / (NB + 1), m1 = mlo + (mhi - mlo) * (b + 1) / (NB + 1),
                   m2 = mlo + (mhi - mlo) * (b + 2) / (NB + 1);
            double f0h = 700 * (pow(10, m0 / 2595) - 1), f1h = 700 * (pow(10, m1 / 2595) - 1),
                   f2h = 700 * (pow(10, m2 / 2595) - 1), e = 0;
            for (int k = 0; k <= NF / 2; k++) {
                double fh = (double)k * sr / NF, wt = 0;
                if (fh > f0h && fh <= f1h) wt = (fh - f0h) / (f1h - f0h);
                else if (fh > f1h && fh < f2h) wt = (f2h - fh) / (f2h - f1h);
                e += wt * pw[k];
            }
            mel[frames * NB + b] = (float)log(e + 1e-5);
        }
    }
    return frames;
}

static double mel_snr(const ct_codec *codec, const int32_t *cf, const int32_t *cq, int nf) {
    const int spf = ct_codec_samples_per_frame(codec), n = nf * spf;
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    float *ma = malloc(sizeof(float) * 80 * 512), *mb = malloc(sizeof(float) * 80 * 512);
    char err[256];
    double snr = NAN;
    if (a && b && ma && mb && ct_codec_decode(codec, cf, nf, a, err, sizeof err) == CT_OK &&
        ct_codec_decode(codec, cq, nf, b, err, sizeof err) == CT_OK) {
        int fa = logmel(a, n, ct_codec_sample_rate(codec), ma, 512);
        logmel(b, n, ct_codec_sample_rate(codec), mb, 512);
        double sig = 0, noise = 0;
        for (int i = 0; i < fa * 80; i++) {
            sig += (double)ma[i] * ma[i];
            noise += ((double)ma[i] - mb[i]) * ((double)ma[i] - mb[i]);
        }
        snr = noise > 0 ? 10 * log10(sig / noise) : INFINITY;
    }
    free(a);
    free(b);
    free(ma);
    free(mb);
    return snr;
}

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

/* Teacher-forced comparison of sessions sq (format under test) and sf (f32) over S frames. */
static quality compare(ct_session *sf, ct_session *sq, const ct_gen_params *g, int S,
                       const ct_codec *codec) {
    quality q = {0};
    q.mel_snr = NAN;
    int32_t all_f[MAXF * 16], all_q[MAXF * 16];
    const ct_model *m = sf->m;
    const int H = m->cfg.talker.hidden, V = m->cfg.talker.vocab, PV = m->cfg.pred.vocab;
    const int G = m->cfg.n_groups;
    if (ct_session_start(sf, g) != CT_OK || ct_session_start(sq, g) != CT_OK) {
        q.lg_nmse = 1e30;
        return q;
    }
    float *lf = malloc(sizeof(float) * V), *lq = malloc(sizeof(float) * V);
    float *pf = malloc(sizeof(float) * (size_t)(G - 1) * PV), *pq = malloc(sizeof(float) * (size_t)(G - 1) * PV);
    float *xf = malloc(sizeof(float) * H), *xq = malloc(sizeof(float) * H);
    int32_t cf[64], cq[64];
    for (int r = 0; r < S; r++) {
        ct_talker_logits(sf, lf);
        ct_talker_logits(sq, lq);
        double e = ct_nmse(lq, lf, (size_t)V);
        if (e > q.lg_nmse) q.lg_nmse = e;
        int c0 = argmax(lf, 2048); /* codec ids; control ids are suppressed while decoding */
        q.c0_agree += argmax(lq, 2048) == c0;
        q.c0_n++;
        ct_predict_frame(sf, sf->h, c0, NULL, cf, pf);
        ct_predict_frame(sq, sq->h, c0, cf, cq, pq);
        e = ct_nmse(pq, pf, (size_t)(G - 1) * PV);
        if (e > q.pl_nmse) q.pl_nmse = e;
        for (int gi = 1; gi < G; gi++) {
            q.cb_agree += argmax(pq + (size_t)(gi - 1) * PV, PV) == argmax(pf + (size_t)(gi - 1) * PV, PV);
            q.cb_n++;
        }
        if (r < MAXF && G == 16) { /* the frame each model would emit given the same history */
            all_f[r * 16] = c0;
            all_q[r * 16] = argmax(lq, 2048);
            for (int gi = 1; gi < G; gi++) {
                all_f[r * 16 + gi] = cf[gi];
                all_q[r * 16 + gi] = argmax(pq + (size_t)(gi - 1) * PV, PV);
            }
        }
        const float *of = r < sf->n_trailing ? sf->trailing + (size_t)r * H : sf->pad_row;
        const float *oq = r < sq->n_trailing ? sq->trailing + (size_t)r * H : sq->pad_row;
        ct_frame_embedding(sf, cf, of, xf);
        ct_frame_embedding(sq, cf, oq, xq);
        ct_talker_run(sf, xf, 1);
        ct_talker_run(sq, xq, 1);
    }
    if (codec && G == 16) q.mel_snr = mel_snr(codec, all_f, all_q, S < MAXF ? S : MAXF);
    free(lf);
    free(lq);
    free(pf);
    free(pq);
    free(xf);
    free(xq);
    return q;
}

static const char *fmts[] = {"bf16", "int8", "int4", "mixed"};
/* upper bounds on the worst logit NMSE and lower bounds on agreement, per format */
static const double max_nmse[] = {1e-8, 1e-2, 2e-1, 2e-1};
static const double min_c0[] = {1.0, 0.75, 0.4, 0.4};

static void run_model(const char *dir, const char *tokdir, const ct_gen_params *g, int S,
                      const char *label, int enforce) {
    char err[1024];
    ct_model_params mp = ct_model_params_default();
    mp.tokenizer_dir = tokdir;
    mp.f32_weights = 1;
    ct_model *mf = NULL;
    CHECKF(ct_model_load(dir, &mp, &mf, err, sizeof err) == CT_OK, "%s", err);
    if (!mf) return;
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 512;
    sp.n_threads = 2;
    ct_session *sf = NULL;
    CHECKF(ct_session_create(mf, &sp, &sf, err, sizeof err) == CT_OK, "%s", err);
    ct_codec *codec = NULL;
    if (!enforce && ct_codec_load(dir, &codec, err, sizeof err) != CT_OK) codec = NULL;
    for (int f = 0; f < 4 && sf; f++) {
        mp.f32_weights = 0;
        mp.weights = fmts[f];
        ct_model *mq = NULL;
        CHECKF(ct_model_load(dir, &mp, &mq, err, sizeof err) == CT_OK, "%s", err);
        ct_session *sq = NULL;
        if (mq) CHECKF(ct_session_create(mq, &sp, &sq, err, sizeof err) == CT_OK, "%s", err);
        if (sq) {
            quality q = compare(sf, sq, g, S, codec);
            double a0 = q.c0_n ? (double)q.c0_agree / q.c0_n : 0, ab = q.cb_n ? (double)q.cb_agree / q.cb_n : 0;
            printf("| %s | %s | %.4f (%d/%d) | %.2e | %.4f (%d/%d) | %.2e | %.1f |\n", label, fmts[f], a0,
                   q.c0_agree, q.c0_n, q.lg_nmse, ab, q.cb_agree, q.cb_n, q.pl_nmse, q.mel_snr);
            if (enforce) {
                CHECKF(q.lg_nmse <= max_nmse[f] && q.pl_nmse <= max_nmse[f],
                       "%s %s: logit NMSE %.2e / %.2e over %.0e", label, fmts[f], q.lg_nmse, q.pl_nmse,
                       max_nmse[f]);
                CHECKF(a0 >= min_c0[f] && ab >= min_c0[f], "%s %s: agreement %.3f / %.3f under %.2f",
                       label, fmts[f], a0, ab, min_c0[f]);
            }
        }
        ct_session_free(sq);
        ct_model_free(mq);
    }
    ct_codec_free(codec);
    ct_session_free(sf);
    ct_model_free(mf);
}

/* Writes a safetensors file from n tensors (name, dtype string, shape, data). */
typedef struct {
    const char *name, *dtype;
    int ndim;
    int64_t shape[2];
    const void *data;
    size_t bytes;
} wt;

static int write_st(const char *path, const wt *t, int n) {
    json_t *h = json_object();
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        json_t *sh = json_array();
        for (int d = 0; d < t[i].ndim; d++) json_array_append_new(sh, json_integer(t[i].shape[d]));
        json_object_set_new(h, t[i].name, json_pack("{s:s,s:o,s:[I,I]}", "dtype", t[i].dtype, "shape", sh,
                                                    "data_offsets", (json_int_t)off, (json_int_t)(off + t[i].bytes)));
        off += t[i].bytes;
    }
    char *js = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    size_t hl = strlen(js), pad = (8 - hl % 8) % 8;
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    uint64_t len = hl + pad;
    fwrite(&len, 8, 1, f);
    fwrite(js, 1, hl, f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    for (int i = 0; i < n; i++) fwrite(t[i].data, 1, t[i].bytes, f);
    fclose(f);
    free(js);
    return 1;
}

/* The layer and head matrices of m (talker, then predictor), n of them into out. */
static int model_mats(ct_model *m, ct_mat **out) {
    int n = 0;
    const ct_stack_w *st[2] = {&m->talker, &m->pred};
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < st[s]->cfg->layers; l++) {
            ct_layer_w *L = &st[s]->layers[l];
            ct_mat *w[7] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
            for (int i = 0; i < 7; i++) out[n++] = w[i];
        }
    out[n++] = &m->codec_head;
    for (int g = 0; g < m->cfg.n_groups - 1; g++) out[n++] = &m->pred_head[g];
    return n;
}

/* BF16, INT8 and INT4 on parity128 (every matrix >= 128 columns, so the integer-dot mode applies
   where the level has it, and AMX tiles where the CPU has them): prefill passes of 1, 7 and 32
   tokens give bit-identical talker logits after the prompt and the same 6 greedy frames, AMX or
   not (a prompt's BF16 calls take the tiles at every pass size, kernels/cpu.h ct_mm_prompt). Where the integer-dot mode is on,
   the same 32-token passes with every matrix's integer-dot mode off (f32 activations) must
   give other logits (the check can fail). */
static void test_prefill_pass_invariance(void) {
    const char *dir = ct_test_make("parity128", "test_quant_p128", 3);
    CHECK(dir != NULL);
    if (!dir) return;
    static const char *qf[3] = {"bf16", "int8", "int4"};
    for (int f = 0; f < 3; f++) {
        char err[512];
        ct_model *m = NULL;
        ct_model_params mp = ct_model_params_default();
        mp.weights = qf[f];
        mp.weight_panels = f > 0;
        CHECKF(ct_model_load(dir, &mp, &m, err, sizeof err) == CT_OK, "%s", err);
        if (!m) continue;
        ct_gen_params g = ct_gen_params_default();
        g.text = "The quick brown fox jumps over the lazy dog, and then it runs far away into the deep "
                 "green forest to find its friends. They play by the river until the sun goes down and "
                 "the stars come out. Then they all walk home together, tired and happy.";
        g.speaker = m->cfg.speakers[0].name;
        g.greedy = 1;
        g.max_frames = g.min_new_tokens = 6;
        /* asked for, INT8/INT4 matrices carry panels exactly where the kernels pack them
           (ct_model_info counts their bytes); run 4 repeats run 0 with every panel detached */
        ct_mat *mats[256];
        const uint8_t *pans[256];
        int xq_of[256];
        const int nm = model_mats(m, mats);
        uint64_t want = 0;
        int with_pan = 0;
        for (int i = 0; i < nm; i++) {
            const ct_mat *w = mats[i];
            const size_t nb = ct_kernels()->xq_pan_pack && w->xq
                                  ? ct_kernels()->xq_pan_bytes(w->dtype, w->rows, w->cols) : 0;
            want += (nb + 63) & ~(size_t)63;
            with_pan += w->pan != NULL;
            xq_of[i] = w->xq;
            CHECKF((w->pan != NULL) == (nb > 0), "%s: matrix %d (%d x %d) has%s panels", qf[f], i, w->rows,
                   w->cols, w->pan ? "" : " no");
        }
        CHECKF(ct_model_get_info(m).packed_bytes == want, "%s: packed_bytes %llu, panels hold %llu", qf[f],
               (unsigned long long)ct_model_get_info(m).packed_bytes, (unsigned long long)want);
        const int V = m->cfg.talker.vocab, chunks[6] = {1, 7, 32, 32, 1, 32};
        const int xq = m->talker.layers[0].q.xq;
        /* run 5 (BF16 where AMX is on): 32-token passes with AMX off, which must differ (the
           prompt took the tiles) */
        const int amx_run = f == 0 && ct_kernels()->amx;
        float *lg[6] = {0};
        int32_t codes[6][6 * CT_MAX_GROUPS];
        memset(codes, 0, sizeof codes);
        int plen = 0;
        for (int i = 0; i < 5 + amx_run; i++) {
            /* run 3: 32-token passes with f32 activations, which must differ */
            for (int k = 0; k < nm; k++) mats[k]->xq = i == 3 ? 0 : xq_of[k];
#if defined(__x86_64__)
            ct_matmul_amx_enable(i == 5 ? 0 : ct_kernels()->amx);
#endif
            if (i == 4)
                for (int k = 0; k < nm; k++) {
                    pans[k] = mats[k]->pan;
                    mats[k]->pan = NULL;
                }
            lg[i] = calloc((size_t)V, sizeof(float));
            ct_session *s = NULL;
            CHECKF(ct_session_create_chunked(m, 256, chunks[i], NULL, &s, err, sizeof err) == CT_OK, "%s", err);
            if (!s) continue;
            CHECK(ct_session_start(s, &g) == CT_OK);
            plen = ct_session_run_info(s).prompt_len;
            ct_talker_logits(s, lg[i]);
            for (int k = 0; k < 6; k++) {
                int got = 0;
                CHECK(ct_session_next_frame(s, codes[i] + k * CT_MAX_GROUPS, &got) == CT_OK && got == 1);
            }
            ct_session_free(s);
        }
#if defined(__x86_64__)
        ct_matmul_amx_enable(ct_kernels()->amx);
#endif
        if (amx_run)
            CHECKF(memcmp(lg[5], lg[2], sizeof(float) * V) != 0, "bf16: the prompt gave the same logits without AMX "
                   "(it did not take the tiles)");
        for (int k = 0; k < nm; k++) mats[k]->xq = xq_of[k];
        for (int k = 0; k < nm; k++) mats[k]->pan = pans[k];
        CHECKF(memcmp(lg[0], lg[4], sizeof(float) * V) == 0 && memcmp(codes[0], codes[4], sizeof codes[0]) == 0,
               "%s: the logits or codes depend on the weight panels", qf[f]);
        if (xq)
            CHECKF(memcmp(lg[3], lg[2], sizeof(float) * V) != 0, "%s: f32-activation prefill passes gave the "
                   "integer-dot logits", qf[f]);
        CHECK(plen > 32 && plen % 32); /* a 32-token pass and a shorter last one */
        CHECKF(memcmp(lg[0], lg[1], sizeof(float) * V) == 0 && memcmp(codes[0], codes[1], sizeof codes[0]) == 0,
               "%s: prefill passes of 1 and 7 tokens differ", qf[f]);
        CHECKF(memcmp(lg[0], lg[2], sizeof(float) * V) == 0 && memcmp(codes[0], codes[2], sizeof codes[0]) == 0,
               "%s: prefill passes of 1 and 32 tokens differ", qf[f]);
        printf("%s on parity128, %d-position prompt: prefill passes of 1, 7 and 32 give the same logits and codes; "
               "%d matrices with weight panels, the same without them\n",
               qf[f], plen, with_pan);
        for (int i = 0; i < 6; i++) free(lg[i]);
        ct_model_free(m);
    }
    char err[512];
    ct_model *m = NULL;
    ct_model_params mp = ct_model_params_default();
    mp.weights = "int4";
    CHECKF(ct_model_load(dir, &mp, &m, err, sizeof err) == CT_OK, "%s", err);
    if (m) {
        CHECK(ct_model_get_info(m).packed_bytes == 0 && m->talker.layers[0].q.pan == NULL);
        ct_model_free(m);
    }
}

int main(void) {
    json_error_t je;
    json_t *man = json_load_file(DATA "/manifest.json", 0, &je);
    CHECKF(man != NULL, "manifest: %s", je.text);
    if (!man) return ct_test_finish();
    printf("| model | weights | codebook-0 agreement | talker logit NMSE (worst step) | codebooks 1-15 "
           "agreement | predictor logit NMSE (worst step) | log-mel SNR dB (nan: no codec) |\n"
           "|---|---|---|---|---|---|---|\n");
    const char *done[8];
    int nd = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(man, "cases"), i, c) {
        const char *model = json_string_value(json_object_get(c, "model"));
        int seen = 0;
        for (int k = 0; k < nd; k++) seen |= !strcmp(done[k], model);
        if (seen || nd == 8 || json_object_get(c, "xvector_seed") != json_null()) continue;
        done[nd++] = model;
        ct_gen_params g = ct_gen_params_default();
        g.text = json_string_value(json_object_get(c, "text"));
        g.speaker = json_string_value(json_object_get(c, "speaker"));
        g.language = json_string_value(json_object_get(c, "language"));
        g.instruct = json_string_value(json_object_get(c, "instruct"));
        g.non_streaming = json_is_true(json_object_get(c, "non_streaming"));
        g.greedy = 1;
        g.budget_base = 1000;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", DATA, model);
        run_model(dir, TOKDIR, &g, 24, model, 1);
    }
    CHECK(nd >= 2);
    const char *full = getenv("CT_QUANT_MODEL");
    if (full && full[0]) {
        ct_gen_params g = ct_gen_params_default();
        g.text = "The quick brown fox jumps over the lazy dog, and then it runs far away into the deep "
                 "green forest to find its friends.";
        g.language = "english";
        g.greedy = 1;
        char err[512];
        ct_model *m0 = NULL;
        ct_model_params mp = ct_model_params_default();
        if (ct_model_load(full, &mp, &m0, err, sizeof err) == CT_OK) {
            if (m0->cfg.n_speakers) g.speaker = m0->cfg.speakers[0].name;
            if (m0->cfg.kind == CT_KIND_VOICE_DESIGN) g.instruct = "A clear voice.";
            const char *label = strrchr(full, '/') ? strrchr(full, '/') + 1 : full;
            run_model(full, NULL, &g, 24, label, 0);
        }
        ct_model_free(m0);
    }

    test_prefill_pass_invariance();

    /* a pre-quantized file whose scales do not match is rejected by name */
    {
        char dir[512], cmd[4096], err[1024];
        snprintf(dir, sizeof dir, "%s/test_quant_bad", CT_BIN_DIR);
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && cp %s/cv06/*.json '%s'/", dir, dir, DATA, dir);
        CHECK(system(cmd) == 0);
        ct_model_params mp = ct_model_params_default();
        mp.tokenizer_dir = TOKDIR;
        ct_model *ok = NULL;
        char src[600];
        snprintf(src, sizeof src, "%s/cv06", DATA);
        CHECKF(ct_model_load(src, &mp, &ok, err, sizeof err) == CT_OK, "%s", err);
        if (ok) {
            /* copy every tensor of cv06; replace one matrix by INT8 with wrong scales */
            ct_st_file *st = ok->st;
            size_t nt = ct_st_count(st);
            wt *t = calloc(nt + 2, sizeof *t);
            const char *qn = "talker.model.layers.0.mlp.up_proj.weight";
            int8_t q8[40 * 16];
            float sc[41];
            memset(q8, 1, sizeof q8);
            for (int k = 0; k < 41; k++) sc[k] = 0.01f;
            int n = 0;
            for (size_t k = 0; k < nt; k++) {
                const ct_st_tensor *x = ct_st_at(st, k);
                t[n] = (wt){x->name, ct_dtype_name(x->dtype), x->ndim, {x->shape[0], x->ndim > 1 ? x->shape[1] : 0},
                            x->data, x->nbytes};
                if (!strcmp(x->name, qn)) t[n] = (wt){qn, "I8", 2, {40, 16}, q8, sizeof q8};
                n++;
            }
            snprintf(cmd, sizeof cmd, "%s/model.safetensors", dir);
            for (int variant = 0; variant < 3; variant++) {
                int m = n;
                if (variant == 1) t[m++] = (wt){"talker.model.layers.0.mlp.up_proj.weight.scale", "F32", 1, {41, 0}, sc, 41 * 4};
                if (variant == 2) t[m++] = (wt){"talker.model.layers.0.mlp.up_proj.weight.scale", "F32", 1, {40, 0}, sc, 40 * 4};
                CHECK(write_st(cmd, t, m));
                ct_model *bad = NULL;
                ct_status s = ct_model_load(dir, &mp, &bad, err, sizeof err);
                if (variant < 2) {
                    CHECKF(s == CT_ERR_FORMAT && strstr(err, "up_proj.weight.scale"), "variant %d: %s", variant, err);
                    printf("rejected as expected: %s\n", err);
                } else {
                    CHECKF(s == CT_OK, "well-formed INT8 file: %s", err);
                    if (bad) CHECK(bad->t_layers[0].up.dtype == CT_DT_I8 && bad->t_layers[0].up.scales[3] == 0.01f);
                }
                ct_model_free(bad);
            }
            free(t);
        }
        ct_model_free(ok);
        mp.weights = "int3";
        ct_model *bad = NULL;
        CHECK(ct_model_load(src, &mp, &bad, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "int3"));
    }
    json_decref(man);
    return ct_test_finish();
}
