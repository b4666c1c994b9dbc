/* The codec decoder ("Code2Wav", docs/CODEC.md) as stateless windowed ONNX programs
   (docs/EXPORT.md, codec programs): codes int64 [1, n_q, context + chunk] -> wav float32
   [1, chunk * hop], the trailing samples of decoding the window from a fresh state (RoPE
   positions from 0), i.e. ct_codec_decode_window. Hyper-parameters, normalised codebooks and
   the precomputed SnakeBeta factors come from the loaded ct_codec; conv / linear weights are
   read from speech_tokenizer/model.safetensors in their PyTorch layouts. Conv stages run
   channels-first [1, C, T]; the transformer runs time-major [1, T, C]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "core/sha256.h"
#include "export/codec_manifest.h"
#include "export/export.h"
#include "export/export_graph_ops.h"
#include "io/safetensors.h"

typedef struct {
    ct_og *g;
    const ct_codec *c;
    const ct_st_file *st;
    int bad;
    char missing[256];
} cx;

static const float *tw(cx *x, const char *name, size_t numel) {
    const ct_st_tensor *t = ct_st_find(x->st, name);
    if (!t || t->dtype != CT_DT_F32 || t->nbytes != numel * 4) {
        if (!x->bad) snprintf(x->missing, sizeof x->missing, "%s", name);
        x->bad = 1;
        return NULL;
    }
    return t->data;
}

/* Raw PyTorch-layout initializer (Conv [out,in/g,k], ConvTranspose [in,out,k], bias [n]). */
static const char *raw(cx *x, const char *name, int nd, const int64_t *dims) {
    size_t n = 1;
    for (int i = 0; i < nd; i++) n *= (size_t)dims[i];
    const float *p = tw(x, name, n);
    if (!p) return "";
    return ct_og_f32(x->g, name, nd, dims, p);
}

/* Linear y = x W^T + b for W [out, in] stored as F32. */
static const char *lin(cx *x, const char *in, const char *wname, const char *bname, int out, int inn) {
    const float *w = tw(x, wname, (size_t)out * inn);
    if (!w) return "";
    ct_mat m = {w, CT_DT_F32, out, inn, NULL, 0, NULL};
    const float *b = bname ? tw(x, bname, (size_t)out) : NULL;
    if (bname && !b) return "";
    const char *y = ct_og_op(x->g, "MatMul", NULL, in, ct_xg_weight_t(x->g, wname, &m), NULL);
    if (!b) return y;
    int64_t d = out;
    return ct_og_op(x->g, "Add", NULL, y, ct_og_f32(x->g, bname, 1, &d, b), NULL);
}

static const char *conv(cx *x, const char *in, const char *pre, int cout, int cin, int k, int dil, int group) {
    char wn[200], bn[200];
    snprintf(wn, sizeof wn, "%s.weight", pre);
    snprintf(bn, sizeof bn, "%s.bias", pre);
    const int64_t wd[3] = {cout, cin / group, k}, bd[1] = {cout};
    const char *ins[3] = {in, raw(x, wn, 3, wd), raw(x, bn, 1, bd)};
    const int64_t pads[2] = {(int64_t)(k - 1) * dil, 0}, dl[1] = {dil}, ks[1] = {k};
    ct_og_attr a[4] = {ct_og_aints("pads", pads, 2), ct_og_aints("dilations", dl, 1), ct_og_aints("kernel_shape", ks, 1),
                       ct_og_ai("group", group)};
    const char *outs[1] = {NULL};
    return ct_og_node(x->g, "Conv", ins, 3, outs, 1, a, 4);
}

/* Causal transposed conv: output length (n-1)s + k, keep the first n*s samples. */
static const char *tconv(cx *x, const char *in, const char *pre, int cin, int cout, int k, int s, int n) {
    char wn[200], bn[200];
    snprintf(wn, sizeof wn, "%s.weight", pre);
    snprintf(bn, sizeof bn, "%s.bias", pre);
    const int64_t wd[3] = {cin, cout, k}, bd[1] = {cout};
    const char *ins[3] = {in, raw(x, wn, 3, wd), raw(x, bn, 1, bd)};
    const int64_t st[1] = {s}, ks[1] = {k};
    ct_og_attr a[2] = {ct_og_aints("strides", st, 1), ct_og_aints("kernel_shape", ks, 1)};
    const char *outs[1] = {NULL};
    const char *y = ct_og_node(x->g, "ConvTranspose", ins, 3, outs, 1, a, 2);
    if (k == s) return y;
    const int64_t z = 0, e = (int64_t)n * s, ax = 2;
    const char *sins[4] = {y, ct_og_ints(x->g, 1, &z), ct_og_ints(x->g, 1, &e), ct_og_ints(x->g, 1, &ax)};
    const char *so[1] = {NULL};
    return ct_og_node(x->g, "Slice", sins, 4, so, 1, NULL, 0);
}

/* SnakeBeta y = x + ib * sin(ea * x)^2 with ea / ib as [1, C, 1]. */
static const char *snake(cx *x, const char *in, const ct_codec_snake *sn, int C) {
    const int64_t d[3] = {1, C, 1};
    const char *ea = ct_og_f32(x->g, NULL, 3, d, sn->ea), *ib = ct_og_f32(x->g, NULL, 3, d, sn->ib);
    const char *s = ct_og_op(x->g, "Sin", NULL, ct_og_op(x->g, "Mul", NULL, ea, in, NULL), NULL, NULL);
    const char *s2 = ct_og_op(x->g, "Mul", NULL, s, s, NULL);
    return ct_og_op(x->g, "Add", NULL, in, ct_og_op(x->g, "Mul", NULL, ib, s2, NULL), NULL);
}

static const char *tr3(cx *x, const char *in) {
    const int64_t p[3] = {0, 2, 1};
    return ct_xg_transpose(x->g, in, 3, p, NULL);
}

static const char *transformer(cx *x, const char *in, int T) {
    const ct_codec *c = x->c;
    ct_og *g = x->g;
    const int H = c->hidden, NH = c->n_heads, KV = c->n_kv, D = c->head_dim, GQ = NH / KV, Lt = c->latent;
    char n1[200], n2[200];
    const char *h = lin(x, in, "decoder.pre_transformer.input_proj.weight", "decoder.pre_transformer.input_proj.bias", H, Lt);
    /* RoPE tables and the causal sliding-window mask are constants of the static window */
    float *cs = malloc((size_t)T * D * sizeof(float)), *sn = malloc((size_t)T * D * sizeof(float));
    float *mask = malloc((size_t)T * T * sizeof(float));
    if (!cs || !sn || !mask) {
        free(cs), free(sn), free(mask);
        g->oom = 1;
        return "";
    }
    for (int t = 0; t < T; t++) {
        float *cr = cs + (size_t)t * D, *sr = sn + (size_t)t * D;
        ct_rope_angles(t, D, c->rope_theta, cr, sr);
        memcpy(cr + D / 2, cr, (size_t)(D / 2) * sizeof(float));
        memcpy(sr + D / 2, sr, (size_t)(D / 2) * sizeof(float));
        for (int j = 0; j < T; j++) mask[(size_t)t * T + j] = (j <= t && j > t - c->window) ? 0.0f : -1e9f;
    }
    const int64_t rd[4] = {1, 1, T, D}, md[2] = {T, T};
    const char *cosn = ct_og_f32(g, "rope.cos", 4, rd, cs), *sinn = ct_og_f32(g, "rope.sin", 4, rd, sn);
    const char *maskn = ct_og_f32(g, "attn.window_mask", 2, md, mask);
    free(cs), free(sn), free(mask);
    const float scale = 1.0f / sqrtf((float)D);
    const int64_t p0213[4] = {0, 2, 1, 3}, hdim[1] = {H};
    for (int l = 0; l < c->n_layers; l++) {
        const ct_codec_layer *ly = &c->layers[l];
        snprintf(n1, sizeof n1, "decoder.pre_transformer.layers.%d.input_layernorm.weight", l);
        const char *a = ct_xg_rmsnorm(g, h, n1, ly->ln1, H, c->rms_eps);
#define LW(buf, what) (snprintf(buf, sizeof buf, "decoder.pre_transformer.layers.%d.%s", l, what), buf)
        const char *q = lin(x, a, LW(n1, "self_attn.q_proj.weight"), NULL, NH * D, H);
        const char *k = lin(x, a, LW(n1, "self_attn.k_proj.weight"), NULL, KV * D, H);
        const char *v = lin(x, a, LW(n1, "self_attn.v_proj.weight"), NULL, KV * D, H);
        const int64_t qs[4] = {1, T, NH, D}, ks[4] = {1, T, KV, D};
        q = ct_xg_rope(g, ct_xg_transpose(g, ct_xg_reshape(g, q, 4, qs, NULL), 4, p0213, NULL), cosn, sinn, NULL);
        k = ct_xg_rope(g, ct_xg_transpose(g, ct_xg_reshape(g, k, 4, ks, NULL), 4, p0213, NULL), cosn, sinn, NULL);
        v = ct_xg_transpose(g, ct_xg_reshape(g, v, 4, ks, NULL), 4, p0213, NULL);
        const int64_t q5[5] = {1, KV, GQ, T, D}, k5[5] = {1, KV, 1, T, D}, pT[5] = {0, 1, 2, 4, 3};
        const char *qg = ct_xg_reshape(g, q, 5, q5, NULL);
        const char *kt = ct_xg_transpose(g, ct_xg_reshape(g, k, 5, k5, NULL), 5, pT, NULL);
        const char *s = ct_og_op(g, "MatMul", NULL, qg, kt, NULL);
        s = ct_og_op(g, "Add", NULL, ct_og_op(g, "Mul", NULL, s, ct_og_scalar(g, scale), NULL), maskn, NULL);
        ct_og_attr sa = ct_og_ai("axis", -1);
        const char *p = ct_og_opa(g, "Softmax", NULL, s, NULL, &sa, 1);
        const char *o = ct_og_op(g, "MatMul", NULL, p, ct_xg_reshape(g, v, 5, k5, NULL), NULL); /* [1,KV,G,T,D] */
        const int64_t o4[4] = {1, NH, T, D}, o3[3] = {1, T, NH * D};
        o = ct_xg_reshape(g, ct_xg_transpose(g, ct_xg_reshape(g, o, 4, o4, NULL), 4, p0213, NULL), 3, o3, NULL);
        o = lin(x, o, LW(n1, "self_attn.o_proj.weight"), NULL, H, NH * D);
        snprintf(n2, sizeof n2, "decoder.pre_transformer.layers.%d.self_attn_layer_scale.scale", l);
        h = ct_og_op(g, "Add", NULL, h, ct_og_op(g, "Mul", NULL, ct_og_f32(g, n2, 1, hdim, ly->ls_attn), o, NULL), NULL);
        snprintf(n2, sizeof n2, "decoder.pre_transformer.layers.%d.post_attention_layernorm.weight", l);
        const char *mm = ct_xg_rmsnorm(g, h, n2, ly->ln2, H, c->rms_eps);
        const char *gt = lin(x, mm, LW(n1, "mlp.gate_proj.weight"), NULL, c->ffn, H);
        const char *up = lin(x, mm, LW(n1, "mlp.up_proj.weight"), NULL, c->ffn, H);
        const char *sw = ct_og_op(g, "Mul", NULL, ct_og_op(g, "Mul", NULL, gt, ct_og_op(g, "Sigmoid", NULL, gt, NULL, NULL), NULL),
                                  up, NULL);
        const char *dn = lin(x, sw, LW(n1, "mlp.down_proj.weight"), NULL, H, c->ffn);
        snprintf(n2, sizeof n2, "decoder.pre_transformer.layers.%d.mlp_layer_scale.scale", l);
        h = ct_og_op(g, "Add", NULL, h, ct_og_op(g, "Mul", NULL, ct_og_f32(g, n2, 1, hdim, ly->ls_mlp), dn, NULL), NULL);
#undef LW
    }
    h = ct_xg_rmsnorm(g, h, "decoder.pre_transformer.norm.weight", c->norm, H, c->rms_eps);
    return lin(x, h, "decoder.pre_transformer.output_proj.weight", "decoder.pre_transformer.output_proj.bias", Lt, H);
}

static const char *convnext(cx *x, const char *in, int u) {
    ct_og *g = x->g;
    const int Lt = x->c->latent;
    char pre[200], n1[200], n2[200];
    snprintf(pre, sizeof pre, "decoder.upsample.%d.1.dwconv.conv", u);
    const char *y = tr3(x, conv(x, in, pre, Lt, Lt, 7, 1, Lt));
    snprintf(n1, sizeof n1, "decoder.upsample.%d.1.norm.weight", u);
    snprintf(n2, sizeof n2, "decoder.upsample.%d.1.norm.bias", u);
    const int64_t ld[1] = {Lt};
    const char *lins[3] = {y, raw(x, n1, 1, ld), raw(x, n2, 1, ld)};
    ct_og_attr la[2] = {ct_og_ai("axis", -1), ct_og_af("epsilon", 1e-6f)};
    const char *lo[1] = {NULL};
    y = ct_og_node(g, "LayerNormalization", lins, 3, lo, 1, la, 2);
    snprintf(n1, sizeof n1, "decoder.upsample.%d.1.pwconv1.weight", u);
    snprintf(n2, sizeof n2, "decoder.upsample.%d.1.pwconv1.bias", u);
    y = lin(x, y, n1, n2, 4 * Lt, Lt);
    /* exact GELU: 0.5 * x * (1 + erf(x / sqrt(2))) */
    const char *e = ct_og_op(g, "Erf", NULL, ct_og_op(g, "Mul", NULL, y, ct_og_scalar(g, 0.70710678118654752440f), NULL), NULL, NULL);
    const char *hx = ct_og_op(g, "Mul", NULL, ct_og_scalar(g, 0.5f), y, NULL);
    y = ct_og_op(g, "Mul", NULL, hx, ct_og_op(g, "Add", NULL, ct_og_scalar(g, 1.0f), e, NULL), NULL);
    snprintf(n1, sizeof n1, "decoder.upsample.%d.1.pwconv2.weight", u);
    snprintf(n2, sizeof n2, "decoder.upsample.%d.1.pwconv2.bias", u);
    y = lin(x, y, n1, n2, Lt, 4 * Lt);
    snprintf(n1, sizeof n1, "decoder.upsample.%d.1.gamma", u);
    y = ct_og_op(g, "Mul", NULL, y, raw(x, n1, 1, ld), NULL);
    return ct_og_op(g, "Add", NULL, in, tr3(x, y), NULL);
}

static ct_status build(cx *x, int ctx, int chunk) {
    const ct_codec *c = x->c;
    ct_og *g = x->g;
    const int T = ctx + chunk, nq = c->n_q, CS = c->codebook_size, E = c->entry_dim;
    const int64_t cd[3] = {1, nq, T};
    ct_og_input(g, "codes", CT_ONNX_INT64, 3, cd);
    /* 1. RVQ dequant: one stacked table, codebook q offset by q * codebook_size */
    int64_t lo = 0, hi = CS - 1;
    const char *cl = ct_og_op(g, "Clip", NULL, "codes", ct_og_i64(g, NULL, 0, NULL, &lo), ct_og_i64(g, NULL, 0, NULL, &hi));
    int64_t *off = malloc((size_t)nq * sizeof *off);
    if (!off) return CT_ERR_NOMEM;
    for (int q = 0; q < nq; q++) off[q] = (int64_t)q * CS;
    const int64_t od[3] = {1, nq, 1}, td[2] = {(int64_t)nq * CS, E};
    const char *idx = ct_og_op(g, "Add", NULL, cl, ct_og_i64(g, "rvq.offsets", 3, od, off), NULL);
    free(off);
    const char *tab = ct_og_f32(g, "rvq.codebooks", 2, td, c->codebooks);
    const char *emb = ct_og_op(g, "Gather", NULL, tab, idx, NULL); /* [1,nq,T,E] */
    const int64_t z = 0, one = 1, nqv = nq, ax1 = 1, e3[3] = {1, T, E};
    const char *s1[4] = {emb, ct_og_ints(g, 1, &z), ct_og_ints(g, 1, &one), ct_og_ints(g, 1, &ax1)};
    const char *o1[1] = {NULL}, *o2[1] = {NULL};
    const char *first = ct_xg_reshape(g, ct_og_node(g, "Slice", s1, 4, o1, 1, NULL, 0), 3, e3, NULL);
    const char *s2[4] = {emb, ct_og_ints(g, 1, &one), ct_og_ints(g, 1, &nqv), ct_og_ints(g, 1, &ax1)};
    const char *rest = ct_og_node(g, "Slice", s2, 4, o2, 1, NULL, 0);
    ct_og_attr kd = ct_og_ai("keepdims", 0);
    const char *rs[2] = {rest, ct_og_ints(g, 1, &ax1)}, *ro[1] = {NULL};
    rest = ct_og_node(g, "ReduceSum", rs, 2, ro, 1, &kd, 1);
    const char *vq = ct_og_op(g, "Add", NULL,
                              lin(x, first, "decoder.quantizer.rvq_first.output_proj.weight", NULL, c->vq_dim, E),
                              lin(x, rest, "decoder.quantizer.rvq_rest.output_proj.weight", NULL, c->vq_dim, E), NULL);
    /* 2. pre_conv (causal k3) */
    const char *y = conv(x, tr3(x, vq), "decoder.pre_conv.conv", c->latent, c->vq_dim, CT_CODEC_PRE_K, 1, 1);
    /* 3. transformer (time-major) */
    y = tr3(x, transformer(x, tr3(x, y), T));
    /* 4-5. ConvNeXt upsampling */
    int n = T;
    char pre[200];
    for (int u = 0; u < c->n_up; u++) {
        snprintf(pre, sizeof pre, "decoder.upsample.%d.0.conv", u);
        y = tconv(x, y, pre, c->latent, c->latent, c->up[u].ratio, c->up[u].ratio, n);
        n *= c->up[u].ratio;
        y = convnext(x, y, u);
    }
    /* 6. decoder.0 */
    y = conv(x, y, "decoder.decoder.0.conv", c->decoder_dim, c->latent, CT_CODEC_CONV_K, 1, 1);
    /* 7-10. blocks */
    for (int b = 0; b < c->n_blocks; b++) {
        const ct_codec_block *bl = &c->blocks[b];
        y = snake(x, y, &bl->snake, bl->cin);
        snprintf(pre, sizeof pre, "decoder.decoder.%d.block.1.conv", b + 1);
        y = tconv(x, y, pre, bl->cin, bl->cout, 2 * bl->rate, bl->rate, n);
        n *= bl->rate;
        for (int j = 0; j < CT_CODEC_N_RU; j++) {
            const ct_codec_ru *ru = &bl->ru[j];
            const char *r = snake(x, y, &ru->a1, bl->cout);
            snprintf(pre, sizeof pre, "decoder.decoder.%d.block.%d.conv1.conv", b + 1, j + 2);
            r = conv(x, r, pre, bl->cout, bl->cout, CT_CODEC_CONV_K, ru->dil, 1);
            r = snake(x, r, &ru->a2, bl->cout);
            snprintf(pre, sizeof pre, "decoder.decoder.%d.block.%d.conv2.conv", b + 1, j + 2);
            r = conv(x, r, pre, bl->cout, bl->cout, 1, 1, 1);
            y = ct_og_op(g, "Add", NULL, y, r, NULL);
        }
    }
    /* 11. final SnakeBeta, conv k7 -> 1, clamp, keep the chunk's samples */
    const int cf = c->decoder_dim >> c->n_blocks;
    y = snake(x, y, &c->fin_snake, cf);
    snprintf(pre, sizeof pre, "decoder.decoder.%d.conv", c->n_blocks + 2);
    y = conv(x, y, pre, 1, cf, CT_CODEC_CONV_K, 1, 1);
    float mn = -1.0f, mx = 1.0f;
    y = ct_og_op(g, "Clip", NULL, y, ct_og_f32(g, NULL, 0, NULL, &mn), ct_og_f32(g, NULL, 0, NULL, &mx));
    const int64_t st = (int64_t)ctx * c->spf, en = (int64_t)T * c->spf, ax2 = 2;
    const char *sl[4] = {y, ct_og_ints(g, 1, &st), ct_og_ints(g, 1, &en), ct_og_ints(g, 1, &ax2)};
    const char *so[1] = {NULL};
    y = ct_og_node(g, "Slice", sl, 4, so, 1, NULL, 0);
    const int64_t wd[2] = {1, (int64_t)chunk * c->spf};
    ct_xg_reshape(g, y, 2, wd, "wav");
    ct_og_output(g, "wav", CT_ONNX_FLOAT, 2, wd);
    return CT_OK;
}

ct_status ct_export_codec(const char *model_dir, const ct_export_codec_opts *o, const char *out_dir,
                          ct_export_result *res, char *err, size_t errcap) {
    if (!model_dir || !o || !out_dir) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "export codec: NULL argument");
    if (o->context < 0 || o->context > 4096 || o->n_ramp < 1 || o->n_ramp > CT_EXPORT_MAX_PROGRAMS)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "export codec: context %d / %d programs out of range", o->context,
                       o->n_ramp);
    for (int i = 0; i < o->n_ramp; i++)
        if (o->ramp[i] < 1 || o->ramp[i] > 4096)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "export codec: chunk size %d outside [1, 4096]", o->ramp[i]);
    ct_codec *c = NULL;
    ct_status s = ct_codec_load(model_dir, &c, err, errcap);
    if (s != CT_OK) return s;
    char path[2048];
    snprintf(path, sizeof path, "%s/speech_tokenizer/model.safetensors", model_dir);
    ct_st_file *st = NULL;
    s = ct_st_open(path, &st, err, errcap);
    if (s != CT_OK) {
        ct_codec_free(c);
        return s;
    }
    ct_codec_manifest *man = calloc(1, sizeof *man);
    if (!man) s = ct_errf(err, errcap, CT_ERR_NOMEM, "export codec: out of memory");
    if (s == CT_OK) s = ct_codec_id(model_dir, man->codec_id, sizeof man->codec_id, err, errcap);
    if (man) {
        snprintf(man->model, sizeof man->model, "%s", model_dir);
        man->context_frames = o->context;
        man->num_quantizers = c->n_q;
        man->codebook_size = c->codebook_size;
        man->hop = c->spf;
        man->sample_rate = c->sample_rate;
        man->n_ramp = o->n_ramp;
        memcpy(man->ramp, o->ramp, sizeof(int) * (size_t)o->n_ramp);
    }
    for (int i = 0; i < o->n_ramp && s == CT_OK; i++) {
        const int chunk = o->ramp[i];
        ct_og g;
        char name[128];
        snprintf(name, sizeof name, "code2wav_c%d_ctx%d", chunk, o->context);
        ct_og_init_graph(&g, name, CT_ONNX_FLOAT);
        snprintf(g.doc, sizeof g.doc, "codectalk windowed Code2Wav: %d context + %d new frames -> %d samples", o->context,
                 chunk, chunk * c->spf);
        cx x = {&g, c, st, 0, ""};
        s = build(&x, o->context, chunk);
        if (s == CT_OK && x.bad) s = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: tensor %s missing or not F32", path, x.missing);
        ct_export_result r;
        memset(&r, 0, sizeof r);
        snprintf(r.onnx_path, sizeof r.onnx_path, "%s/%s.onnx", out_dir, name);
        r.weight_bytes = g.weight_bytes;
        r.n_inputs = r.n_outputs = 1;
        if (s == CT_OK) s = ct_og_write(&g, r.onnx_path, o->external, 0, &r.external, &r.file_bytes, err, errcap);
        ct_og_free(&g);
        if (s != CT_OK) break;
        if (res) res[i] = r;
        ct_manifest_program *p = &man->programs[man->n_programs++];
        p->chunk_frames = chunk;
        p->window_frames = o->context + chunk;
        p->out_samples = chunk * c->spf;
        snprintf(p->path, sizeof p->path, "%s.onnx", name);
        p->external = r.external;
        if (r.external) snprintf(p->data_path, sizeof p->data_path, "%s.onnx.data", name);
        p->bytes = r.file_bytes;
        p->weight_bytes = r.weight_bytes;
    }
    if (s == CT_OK) s = ct_codec_manifest_write(out_dir, man, err, errcap); /* hashes the programs */
    free(man);
    ct_st_close(st);
    ct_codec_free(c);
    return s;
}
