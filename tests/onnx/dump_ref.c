/* Reference tensors for the ONNX export checks (tools/onnx/verify.py): runs our engine on
   deterministic pseudo-random inputs and writes raw little-endian .bin files plus meta.json
   ({"tensors": {name: {file, dtype, shape}}, ...}).
     dump_ref step MODEL talker|predictor L POS OUTDIR   one decode step at position POS
     dump_ref codec MODEL CTX CHUNK SEED OUTDIR          ct_codec_decode_window on random codes
     dump_ref greedy MODEL FRAMES OUTDIR                 greedy session codes + host tables */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "model/session_internal.h"

static json_t *g_tensors;
static const char *g_dir;

static int put(const char *name, const char *dtype, const void *data, size_t elsize, int nd, const int64_t *dims) {
    size_t n = 1;
    json_t *sh = json_array();
    for (int i = 0; i < nd; i++) {
        n *= (size_t)dims[i];
        json_array_append_new(sh, json_integer(dims[i]));
    }
    char path[2048], file[256];
    snprintf(file, sizeof file, "%s.bin", name);
    snprintf(path, sizeof path, "%s/%s", g_dir, file);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, elsize, n, f) != n) {
        fprintf(stderr, "dump_ref: cannot write %s\n", path);
        if (f) fclose(f);
        json_decref(sh);
        return -1;
    }
    fclose(f);
    json_t *o = json_object();
    json_object_set_new(o, "file", json_string(file));
    json_object_set_new(o, "dtype", json_string(dtype));
    json_object_set_new(o, "shape", sh);
    json_object_set_new(g_tensors, name, o);
    return 0;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float urand(void) { /* uniform [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static int finish(json_t *meta) {
    json_object_set_new(meta, "tensors", g_tensors);
    char path[2048];
    snprintf(path, sizeof path, "%s/meta.json", g_dir);
    int rc = json_dump_file(meta, path, JSON_INDENT(1)) == 0 ? 0 : 1;
    json_decref(meta);
    return rc;
}

static int do_step(ct_model *m, int pred, int L, int pos) {
    const ct_stack_cfg *c = pred ? &m->cfg.pred : &m->cfg.talker;
    const ct_stack_w *w = pred ? &m->pred : &m->talker;
    const int H = c->hidden, KV = c->kv_heads, D = c->head_dim, NL = c->layers;
    const int Hin = (pred && m->has_proj) ? m->cfg.talker.hidden : H;
    if (pos < 0 || pos >= L) return fprintf(stderr, "dump_ref: pos must be in [0, L)\n"), 1;
    ct_kv kv;
    ct_stack_scratch s;
    int nmax = pos > 1 ? pos : 1;
    if (ct_kv_init(&kv, c, L) != CT_OK || ct_stack_scratch_init(&s, c, nmax, L, NULL) != CT_OK) return 1;
    float *xs = malloc((size_t)nmax * Hin * sizeof(float)), *xp = malloc((size_t)nmax * H * sizeof(float));
    for (int t = 0; t < pos; t++) {
        for (int i = 0; i < Hin; i++) xs[(size_t)t * Hin + i] = urand();
        if (pred && m->has_proj) ct_matmul(&m->mtp_proj, m->mtp_b, xs + (size_t)t * Hin, xp + (size_t)t * H, 1);
        else memcpy(xp + (size_t)t * H, xs + (size_t)t * Hin, (size_t)H * sizeof(float));
    }
    if (pos > 0) ct_stack_forward(w, &kv, &s, 0, pos, xp, pos); /* only the K/V */
    char nm[64];
    const int64_t kd[4] = {1, KV, L, D}, nd[4] = {1, KV, 1, D};
    for (int l = 0; l < NL; l++) {
        snprintf(nm, sizeof nm, "k_cache_%d", l);
        put(nm, "float32", kv.k[l], 4, 4, kd);
        snprintf(nm, sizeof nm, "v_cache_%d", l);
        put(nm, "float32", kv.v[l], 4, 4, kd);
    }
    float *x = malloc((size_t)Hin * sizeof(float)), *xh = malloc((size_t)H * sizeof(float));
    for (int i = 0; i < Hin; i++) x[i] = urand();
    const int64_t xd[3] = {1, 1, Hin}, hd3[3] = {1, 1, H}, cd[4] = {1, 1, 1, D}, md[4] = {1, 1, 1, L + 1};
    put("x", "float32", x, 4, 3, xd);
    float *cs = malloc((size_t)D * sizeof(float)), *sn = malloc((size_t)D * sizeof(float));
    ct_rope_angles(pos, D, c->rope_theta, cs, sn);
    memcpy(cs + D / 2, cs, (size_t)(D / 2) * sizeof(float));
    memcpy(sn + D / 2, sn, (size_t)(D / 2) * sizeof(float));
    put("cos", "float32", cs, 4, 4, cd);
    put("sin", "float32", sn, 4, 4, cd);
    float *mask = malloc((size_t)(L + 1) * sizeof(float));
    for (int j = 0; j <= L; j++) mask[j] = (j < pos || j == L) ? 0.0f : -65504.0f / 4.0f;
    put("mask", "float32", mask, 4, 4, md);
    if (pred && m->has_proj) ct_matmul(&m->mtp_proj, m->mtp_b, x, xh, 1);
    else memcpy(xh, x, (size_t)H * sizeof(float));
    ct_stack_forward(w, &kv, &s, pos, 1, xh, 0);
    put("ref.hidden", "float32", xh, 4, 3, hd3);
    float *kn = malloc((size_t)KV * D * sizeof(float));
    for (int l = 0; l < NL; l++)
        for (int kvi = 0; kvi < 2; kvi++) {
            float *src = kvi ? kv.v[l] : kv.k[l];
            for (int h = 0; h < KV; h++)
                memcpy(kn + (size_t)h * D, src + ((size_t)h * L + pos) * D, (size_t)D * sizeof(float));
            snprintf(nm, sizeof nm, "ref.%s_new_%d", kvi ? "v" : "k", l);
            put(nm, "float32", kn, 4, 4, nd);
        }
    if (!pred) {
        float *lg = malloc((size_t)c->vocab * sizeof(float));
        ct_matmul(&m->codec_head, NULL, xh, lg, 1);
        const int64_t ld[2] = {1, c->vocab};
        put("ref.logits", "float32", lg, 4, 2, ld);
        free(lg);
    } else {
        const int G = m->cfg.n_groups - 1;
        float *lg = malloc((size_t)G * c->vocab * sizeof(float));
        for (int g = 0; g < G; g++) ct_matmul(&m->pred_head[g], NULL, xh, lg + (size_t)g * c->vocab, 1);
        const int64_t ld[3] = {1, G, c->vocab};
        put("ref.logits", "float32", lg, 4, 3, ld);
        free(lg);
    }
    json_t *meta = json_object();
    json_object_set_new(meta, "kind", json_string("step"));
    json_object_set_new(meta, "component", json_string(pred ? "predictor" : "talker"));
    json_object_set_new(meta, "cache_len", json_integer(L));
    json_object_set_new(meta, "pos", json_integer(pos));
    free(xs), free(xp), free(x), free(xh), free(cs), free(sn), free(mask), free(kn);
    ct_kv_free(&kv);
    ct_stack_scratch_free(&s);
    return finish(meta);
}

static int do_codec(const char *dir, int ctx, int chunk, uint64_t seed) {
    char err[512];
    ct_codec *c;
    if (ct_codec_load(dir, &c, err, sizeof err) != CT_OK) return fprintf(stderr, "dump_ref: %s\n", err), 1;
    const int nq = ct_codec_n_groups(c), spf = ct_codec_samples_per_frame(c), T = ctx + chunk;
    g_rng ^= seed * 0x2545F4914F6CDD1Dull;
    int32_t *codes = malloc((size_t)T * nq * sizeof *codes);
    int64_t *cl = malloc((size_t)T * nq * sizeof *cl);
    for (int t = 0; t < T; t++)
        for (int q = 0; q < nq; q++) {
            int v = (int)((urand() + 1.0f) * 1024.0f);
            if (v > 2047) v = 2047;
            if (v < 0) v = 0;
            codes[(size_t)t * nq + q] = v;
            cl[(size_t)q * T + t] = v; /* [1, nq, T] */
        }
    float *pcm = malloc((size_t)chunk * spf * sizeof(float));
    if (ct_codec_decode_window(c, ctx ? codes : NULL, ctx, codes + (size_t)ctx * nq, chunk, pcm, err, sizeof err) != CT_OK)
        return fprintf(stderr, "dump_ref: %s\n", err), 1;
    const int64_t cd[3] = {1, nq, T}, wd[2] = {1, (int64_t)chunk * spf};
    put("codes", "int64", cl, 8, 3, cd);
    put("ref.wav", "float32", pcm, 4, 2, wd);
    json_t *meta = json_object();
    json_object_set_new(meta, "kind", json_string("codec"));
    json_object_set_new(meta, "context", json_integer(ctx));
    json_object_set_new(meta, "chunk", json_integer(chunk));
    free(codes), free(cl), free(pcm);
    ct_codec_free(c);
    return finish(meta);
}

static int do_greedy(ct_model *m, int frames) {
    char err[512];
    ct_session_params sp = ct_session_params_default();
    ct_session *s;
    if (ct_session_create(m, &sp, &s, err, sizeof err) != CT_OK) return fprintf(stderr, "dump_ref: %s\n", err), 1;
    ct_gen_params g = ct_gen_params_default();
    g.text = "Hello world, this is a test.";
    g.speaker = ct_model_speaker(m, 0);
    g.greedy = 1;
    g.seed = 1;
    g.max_frames = frames;
    g.budget_base = frames + 10;
    if (ct_session_start(s, &g) != CT_OK) return fprintf(stderr, "dump_ref: %s\n", ct_session_errmsg(s)), 1;
    const ct_config *c = &m->cfg;
    const int H = c->talker.hidden, G = c->n_groups;
    const int64_t pd[2] = {s->prompt_len, H}, hd[1] = {H};
    put("prompt", "float32", s->prompt, 4, 2, pd);
    int64_t td[2] = {s->n_trailing > 0 ? s->n_trailing : 1, H};
    put("trailing", "float32", s->n_trailing > 0 ? s->trailing : s->pad_row, 4, 2, td);
    put("pad_row", "float32", s->pad_row, 4, 1, hd);
    float *tab = malloc((size_t)c->talker.vocab * H * sizeof(float));
    for (int r = 0; r < c->talker.vocab; r++) ct_mat_row(&m->codec_emb, r, tab + (size_t)r * H);
    const int64_t ed[2] = {c->talker.vocab, H};
    put("codec_emb", "float32", tab, 4, 2, ed);
    free(tab);
    const int CB = m->pred_emb[0].rows;
    tab = malloc((size_t)(G - 1) * CB * H * sizeof(float));
    for (int gg = 0; gg < G - 1; gg++)
        for (int r = 0; r < CB; r++) ct_mat_row(&m->pred_emb[gg], r, tab + ((size_t)gg * CB + r) * H);
    const int64_t pe[3] = {G - 1, CB, H};
    put("pred_emb", "float32", tab, 4, 3, pe);
    free(tab);
    int32_t *codes = calloc((size_t)frames * G, sizeof *codes);
    int n = 0, got = 1;
    while (n < frames && got) {
        if (ct_session_next_frame(s, codes + (size_t)n * G, &got) != CT_OK)
            return fprintf(stderr, "dump_ref: %s\n", ct_session_errmsg(s)), 1;
        if (got) n++;
    }
    const int64_t cd[2] = {n, G};
    put("ref.codes", "int32", codes, 4, 2, cd);
    json_t *meta = json_object();
    json_object_set_new(meta, "kind", json_string("greedy"));
    json_object_set_new(meta, "frames", json_integer(n));
    json_object_set_new(meta, "stop", json_string(ct_stop_reason_str(ct_session_stop_reason(s))));
    json_object_set_new(meta, "prompt_len", json_integer(s->prompt_len));
    json_object_set_new(meta, "n_trailing", json_integer(s->n_trailing));
    json_object_set_new(meta, "repetition_penalty", json_real(s->tcfg.repetition_penalty));
    json_object_set_new(meta, "min_new_tokens", json_integer(s->min_new_tokens));
    json_object_set_new(meta, "codec_eos", json_integer(c->codec_eos));
    json_object_set_new(meta, "codebook", json_integer(c->pred.vocab));
    json_object_set_new(meta, "talker_vocab", json_integer(c->talker.vocab));
    json_object_set_new(meta, "talker_theta", json_real(c->talker.rope_theta));
    json_object_set_new(meta, "pred_theta", json_real(c->pred.rope_theta));
    json_object_set_new(meta, "talker_head_dim", json_integer(c->talker.head_dim));
    json_object_set_new(meta, "pred_head_dim", json_integer(c->pred.head_dim));
    json_object_set_new(meta, "has_proj", json_integer(m->has_proj));
    free(codes);
    ct_session_free(s);
    return finish(meta);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: dump_ref step|codec|greedy MODEL ... OUTDIR\n");
        return 2;
    }
    g_dir = argv[argc - 1];
    g_tensors = json_object();
    char err[512];
    if (!strcmp(argv[1], "codec")) {
        if (argc != 7) return fprintf(stderr, "usage: dump_ref codec MODEL CTX CHUNK SEED OUTDIR\n"), 2;
        return do_codec(argv[2], atoi(argv[3]), atoi(argv[4]), (uint64_t)strtoull(argv[5], NULL, 10));
    }
    ct_model_params mp = ct_model_params_default();
    ct_model *m;
    if (ct_model_load(argv[2], &mp, &m, err, sizeof err) != CT_OK) return fprintf(stderr, "dump_ref: %s\n", err), 1;
    int rc = 2;
    if (!strcmp(argv[1], "step") && argc == 7) rc = do_step(m, !strcmp(argv[3], "predictor"), atoi(argv[4]), atoi(argv[5]));
    else if (!strcmp(argv[1], "greedy") && argc == 5) rc = do_greedy(m, atoi(argv[3]));
    else fprintf(stderr, "dump_ref: bad arguments\n");
    ct_model_free(m);
    return rc;
}
