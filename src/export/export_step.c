/* Talker / code-predictor one-token decode step as an ONNX graph and its JSON sidecar
   (docs/EXPORT.md, step graphs). Layout v2 (default): per-layer k_cache_i / v_cache_i inputs,
   GQA by viewing q as [1, KV, G, D] against each KV head (no K/V expansion). Layout v1: one stacked
   [layers, 1, KV, L, D] cache selected per layer with Gather and K/V expanded to all query
   heads, kept so the difference can be measured. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/export_graph_ops.h"
#include "model/model_internal.h"

typedef struct {
    ct_og *g;
    const ct_stack_cfg *c;
    int L;         /* cache length */
    int v1;
    const char *cosn, *sinn, *mask;
} step_ctx;

static const char *nm(char *buf, size_t cap, const char *fmt, int l, const char *what) {
    snprintf(buf, cap, fmt, l, what);
    return buf;
}

/* One decoder layer; x is [1,1,H]. k_in / v_in are the layer's caches [1,KV,L,D]. Writes
   the new K/V ([1,KV,1,D]) under the names kout/vout. */
static const char *layer(step_ctx *s, const ct_layer_w *w, int l, const char *x, const char *k_in,
                         const char *v_in, const char *kout, const char *vout) {
    ct_og *g = s->g;
    const ct_stack_cfg *c = s->c;
    const int64_t H = c->hidden, NH = c->heads, KV = c->kv_heads, D = c->head_dim, G = NH / KV;
    char b[128];
    const char *a = ct_xg_rmsnorm(g, x, nm(b, sizeof b, "layers.%d.%s", l, "input_layernorm.weight"), w->in_norm,
                                  (int)H, c->eps);
    const char *q = ct_xg_linear(g, a, nm(b, sizeof b, "layers.%d.%s", l, "q_proj.weight_t"), &w->q, NULL);
    const char *k = ct_xg_linear(g, a, nm(b, sizeof b, "layers.%d.%s", l, "k_proj.weight_t"), &w->k, NULL);
    const char *v = ct_xg_linear(g, a, nm(b, sizeof b, "layers.%d.%s", l, "v_proj.weight_t"), &w->v, NULL);
    const int64_t qs[4] = {1, 1, NH, D}, ks[4] = {1, 1, KV, D}, p0213[4] = {0, 2, 1, 3};
    q = ct_xg_reshape(g, q, 4, qs, NULL);
    q = ct_xg_rmsnorm(g, q, nm(b, sizeof b, "layers.%d.%s", l, "q_norm.weight"), w->q_norm, (int)D, c->eps);
    q = ct_xg_transpose(g, q, 4, p0213, NULL); /* [1,NH,1,D] */
    q = ct_xg_rope(g, q, s->cosn, s->sinn, NULL);
    k = ct_xg_reshape(g, k, 4, ks, NULL);
    k = ct_xg_rmsnorm(g, k, nm(b, sizeof b, "layers.%d.%s", l, "k_norm.weight"), w->k_norm, (int)D, c->eps);
    k = ct_xg_transpose(g, k, 4, p0213, NULL); /* [1,KV,1,D] */
    k = ct_xg_rope(g, k, s->cosn, s->sinn, kout);
    v = ct_xg_transpose(g, ct_xg_reshape(g, v, 4, ks, NULL), 4, p0213, vout);
    ct_og_attr ax2 = ct_og_ai("axis", 2);
    const char *kc[2] = {k_in, k}, *vc[2] = {v_in, v}, *o1[1] = {NULL}, *o2[1] = {NULL};
    const char *K = ct_og_node(g, "Concat", kc, 2, o1, 1, &ax2, 1); /* [1,KV,L+1,D] */
    const char *V = ct_og_node(g, "Concat", vc, 2, o2, 1, &ax2, 1);
    const int64_t pT[4] = {0, 1, 3, 2};
    float scale = 1.0f / sqrtf((float)D);
    const char *att;
    if (!s->v1) {
        const int64_t q4[4] = {1, KV, G, D};
        const char *qg = ct_xg_reshape(g, q, 4, q4, NULL);
        const char *sc = ct_og_op(g, "MatMul", NULL, qg, ct_xg_transpose(g, K, 4, pT, NULL), NULL); /* [1,KV,G,L+1] */
        sc = ct_og_op(g, "Add", NULL, ct_og_op(g, "Mul", NULL, sc, ct_og_scalar(g, scale), NULL), s->mask, NULL);
        ct_og_attr sa = ct_og_ai("axis", -1);
        const char *p = ct_og_opa(g, "Softmax", NULL, sc, NULL, &sa, 1);
        att = ct_og_op(g, "MatMul", NULL, p, V, NULL); /* [1,KV,G,D] */
    } else {
        /* expanded GQA: K/V repeated to every query head */
        const int64_t k5[5] = {1, KV, 1, s->L + 1, D}, e5[5] = {1, KV, G, s->L + 1, D}, k4[4] = {1, NH, s->L + 1, D};
        const char *Ke = ct_xg_reshape(g, ct_og_op(g, "Expand", NULL, ct_xg_reshape(g, K, 5, k5, NULL),
                                                   ct_og_ints(g, 5, e5), NULL), 4, k4, NULL);
        const char *Ve = ct_xg_reshape(g, ct_og_op(g, "Expand", NULL, ct_xg_reshape(g, V, 5, k5, NULL),
                                                   ct_og_ints(g, 5, e5), NULL), 4, k4, NULL);
        const char *sc = ct_og_op(g, "MatMul", NULL, q, ct_xg_transpose(g, Ke, 4, pT, NULL), NULL); /* [1,NH,1,L+1] */
        sc = ct_og_op(g, "Add", NULL, ct_og_op(g, "Mul", NULL, sc, ct_og_scalar(g, scale), NULL), s->mask, NULL);
        ct_og_attr sa = ct_og_ai("axis", -1);
        const char *p = ct_og_opa(g, "Softmax", NULL, sc, NULL, &sa, 1);
        att = ct_og_op(g, "MatMul", NULL, p, Ve, NULL); /* [1,NH,1,D] */
    }
    const int64_t flat[3] = {1, 1, NH * D};
    att = ct_xg_reshape(g, att, 3, flat, NULL);
    x = ct_og_op(g, "Add", NULL, x,
                 ct_xg_linear(g, att, nm(b, sizeof b, "layers.%d.%s", l, "o_proj.weight_t"), &w->o, NULL), NULL);
    const char *m = ct_xg_rmsnorm(g, x, nm(b, sizeof b, "layers.%d.%s", l, "post_attention_layernorm.weight"),
                                  w->post_norm, (int)H, c->eps);
    const char *gt = ct_xg_linear(g, m, nm(b, sizeof b, "layers.%d.%s", l, "gate_proj.weight_t"), &w->gate, NULL);
    const char *up = ct_xg_linear(g, m, nm(b, sizeof b, "layers.%d.%s", l, "up_proj.weight_t"), &w->up, NULL);
    const char *sw = ct_og_op(g, "Mul", NULL, ct_og_op(g, "Mul", NULL, gt, ct_og_op(g, "Sigmoid", NULL, gt, NULL, NULL), NULL),
                              up, NULL);
    return ct_og_op(g, "Add", NULL, x,
                    ct_xg_linear(g, sw, nm(b, sizeof b, "layers.%d.%s", l, "down_proj.weight_t"), &w->down, NULL), NULL);
}

static const char *dtype_name(int fp16) { return fp16 ? "float16" : "float32"; }

static json_t *shape_json(int n, const int64_t *d) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(d[i]));
    return a;
}

static void io_entry(json_t *arr, const char *name, const char *dt, int n, const int64_t *d) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "dtype", json_string(dt));
    json_object_set_new(o, "shape", shape_json(n, d));
    json_array_append_new(arr, o);
}

ct_status ct_export_step(const ct_model *m, const char *model_dir, const ct_export_step_opts *o,
                         const char *out_dir, ct_export_result *res, char *err, size_t errcap) {
    if (!m || !o || !out_dir || !res) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "export step: NULL argument");
    memset(res, 0, sizeof *res);
    const ct_stack_cfg *c = o->predictor ? &m->cfg.pred : &m->cfg.talker;
    const ct_stack_w *sw = o->predictor ? &m->pred : &m->talker;
    const int L = o->cache_len;
    if (L < 1 || L > 32768 || L > c->max_pos)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "export step: cache length %d outside [1, %d]", L,
                       c->max_pos < 32768 ? c->max_pos : 32768);
    if (c->heads % c->kv_heads != 0 || c->head_dim % 2 != 0)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "export step: heads %d / kv heads %d / head_dim %d not exportable",
                       c->heads, c->kv_heads, c->head_dim);
    const char *comp = o->predictor ? "predictor" : "talker";
    const int fe = o->fp16 ? CT_ONNX_FLOAT16 : CT_ONNX_FLOAT;
    const int64_t H = c->hidden, KV = c->kv_heads, D = c->head_dim, NL = c->layers, V = c->vocab;
    const int n_heads_out = o->predictor ? m->cfg.n_groups - 1 : 1;
    const int64_t Hin = (o->predictor && m->has_proj) ? m->cfg.talker.hidden : H;

    char base[256];
    snprintf(base, sizeof base, "%s_step_L%d%s%s", comp, L, o->fp16 ? "_fp16" : "", o->layout_v1 ? "_v1" : "");
    snprintf(res->onnx_path, sizeof res->onnx_path, "%s/%s.onnx", out_dir, base);
    snprintf(res->json_path, sizeof res->json_path, "%s/%s.json", out_dir, base);

    ct_og g;
    ct_og_init_graph(&g, base, fe);
    snprintf(g.doc, sizeof g.doc,
             "codectalk %s decode step, layout %s, cache %d; host: embedding, rotary angles, sampling, cache append",
             comp, o->layout_v1 ? "v1" : "v2", L);
    json_t *ins = json_array(), *outs = json_array();
    const char *dt = dtype_name(o->fp16);
    const int64_t xs[3] = {1, 1, Hin}, cs[4] = {1, 1, 1, D}, ms[4] = {1, 1, 1, L + 1};
    ct_og_input(&g, "x", fe, 3, xs);
    ct_og_input(&g, "cos", fe, 4, cs);
    ct_og_input(&g, "sin", fe, 4, cs);
    ct_og_input(&g, "mask", fe, 4, ms);
    io_entry(ins, "x", dt, 3, xs);
    io_entry(ins, "cos", dt, 4, cs);
    io_entry(ins, "sin", dt, 4, cs);
    io_entry(ins, "mask", dt, 4, ms);
    const int64_t kvs[4] = {1, KV, L, D}, kv5[5] = {NL, 1, KV, L, D}, kn[4] = {1, KV, 1, D}, kn5[5] = {NL, 1, KV, 1, D};
    char b1[64], b2[64];
    if (!o->layout_v1) {
        for (int l = 0; l < NL; l++) {
            snprintf(b1, sizeof b1, "k_cache_%d", l);
            snprintf(b2, sizeof b2, "v_cache_%d", l);
            ct_og_input(&g, b1, fe, 4, kvs);
            ct_og_input(&g, b2, fe, 4, kvs);
            io_entry(ins, b1, dt, 4, kvs);
            io_entry(ins, b2, dt, 4, kvs);
        }
    } else {
        ct_og_input(&g, "k_cache", fe, 5, kv5);
        ct_og_input(&g, "v_cache", fe, 5, kv5);
        io_entry(ins, "k_cache", dt, 5, kv5);
        io_entry(ins, "v_cache", dt, 5, kv5);
    }
    step_ctx s = {&g, c, L, o->layout_v1, "cos", "sin", "mask"};
    const char *x = "x";
    if (o->predictor && m->has_proj) x = ct_xg_linear(&g, x, "small_to_mtp_projection.weight_t", &m->mtp_proj, m->mtp_b);
    const char **knew = calloc((size_t)NL * 2, sizeof *knew);
    if (!knew) {
        ct_og_free(&g);
        json_decref(ins);
        json_decref(outs);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "export step: out of memory");
    }
    for (int l = 0; l < NL; l++) {
        const char *kin, *vin;
        if (!o->layout_v1) {
            snprintf(b1, sizeof b1, "k_cache_%d", l);
            snprintf(b2, sizeof b2, "v_cache_%d", l);
            kin = ct_og_str(&g, b1);
            vin = ct_og_str(&g, b2);
        } else {
            int64_t idx = l;
            const char *iname = ct_og_i64(&g, NULL, 0, NULL, &idx); /* scalar index: drops the layer axis */
            ct_og_attr a0 = ct_og_ai("axis", 0);
            kin = ct_og_opa(&g, "Gather", NULL, "k_cache", iname, &a0, 1);
            vin = ct_og_opa(&g, "Gather", NULL, "v_cache", iname, &a0, 1);
        }
        snprintf(b1, sizeof b1, "k_new_%d", l);
        snprintf(b2, sizeof b2, "v_new_%d", l);
        if (o->layout_v1) {
            snprintf(b1, sizeof b1, "k_new_l%d", l);
            snprintf(b2, sizeof b2, "v_new_l%d", l);
        }
        knew[2 * l] = ct_og_str(&g, b1);
        knew[2 * l + 1] = ct_og_str(&g, b2);
        x = layer(&s, &sw->layers[l], l, x, kin, vin, knew[2 * l], knew[2 * l + 1]);
    }
    const char *h = ct_xg_rmsnorm(&g, x, "norm.weight", sw->final_norm, (int)H, c->eps);
    h = ct_og_op(&g, "Identity", "hidden", h, NULL, NULL);
    int64_t lshape[3] = {1, n_heads_out, V};
    if (!o->predictor) {
        const char *lg = ct_xg_linear(&g, h, "codec_head.weight_t", &m->codec_head, NULL);
        const int64_t l2[2] = {1, V};
        ct_xg_reshape(&g, lg, 2, l2, "logits");
        ct_og_output(&g, "logits", fe, 2, l2);
        io_entry(outs, "logits", dt, 2, l2);
    } else {
        /* all residual heads stacked: [H, (G-1)*V]; row g-1 of the output is codebook g */
        const size_t PH = (size_t)H, VV = (size_t)V, NG = (size_t)n_heads_out;
        const int f16 = o->fp16;
        void *wt = malloc(PH * NG * VV * (f16 ? 2 : 4));
        float *row = malloc(PH * sizeof(float));
        if (wt && row) {
            for (size_t hg = 0; hg < NG; hg++)
                for (size_t r = 0; r < VV; r++) {
                    ct_mat_row(&m->pred_head[hg], (int)r, row);
                    for (size_t cc = 0; cc < PH; cc++) {
                        size_t at = cc * NG * VV + hg * VV + r;
                        if (f16) ((uint16_t *)wt)[at] = ct_og_f16(row[cc]);
                        else ((float *)wt)[at] = row[cc];
                    }
                }
        } else {
            free(wt);
            wt = NULL;
        }
        free(row);
        const int64_t wd[2] = {(int64_t)PH, (int64_t)(NG * VV)};
        const char *wn = ct_og_take(&g, "lm_head.stacked.weight_t", fe, 2, wd, wt, PH * NG * VV * (f16 ? 2 : 4));
        ct_xg_reshape(&g, ct_og_op(&g, "MatMul", NULL, h, wn, NULL), 3, lshape, "logits");
        ct_og_output(&g, "logits", fe, 3, lshape);
        io_entry(outs, "logits", dt, 3, lshape);
    }
    if (!o->layout_v1) {
        for (int l = 0; l < NL; l++) {
            ct_og_output(&g, knew[2 * l], fe, 4, kn);
            ct_og_output(&g, knew[2 * l + 1], fe, 4, kn);
            io_entry(outs, knew[2 * l], dt, 4, kn);
            io_entry(outs, knew[2 * l + 1], dt, 4, kn);
        }
    } else {
        for (int kvi = 0; kvi < 2; kvi++) {
            const char **parts = calloc((size_t)NL, sizeof *parts);
            const char *po[1] = {kvi ? "v_new" : "k_new"};
            if (!parts) {
                g.oom = 1;
                break;
            }
            int64_t z = 0;
            const char *ax0 = ct_og_ints(&g, 1, &z);
            for (int l = 0; l < NL; l++) parts[l] = ct_og_op(&g, "Unsqueeze", NULL, knew[2 * l + kvi], ax0, NULL);
            ct_og_attr a0 = ct_og_ai("axis", 0);
            ct_og_node(&g, "Concat", parts, (int)NL, po, 1, &a0, 1);
            free(parts);
            ct_og_output(&g, po[0], fe, 5, kn5);
            io_entry(outs, po[0], dt, 5, kn5);
        }
    }
    const int64_t hs[3] = {1, 1, H};
    ct_og_output(&g, "hidden", fe, 3, hs);
    io_entry(outs, "hidden", dt, 3, hs);
    free(knew);
    res->weight_bytes = g.weight_bytes;
    ct_status st = ct_og_write(&g, res->onnx_path, o->external, 0, &res->external, &res->file_bytes, err, errcap);
    ct_og_free(&g);
    res->n_inputs = (int)json_array_size(ins);
    res->n_outputs = (int)json_array_size(outs);
    if (st != CT_OK) {
        json_decref(ins);
        json_decref(outs);
        return st;
    }
    json_t *j = json_object();
    char mid[256];
    snprintf(mid, sizeof mid, "qwen3-tts-12hz-%s-%s", m->cfg.size_tag, ct_model_kind_name(m->cfg.kind));
    json_object_set_new(j, "schema", json_integer(1));
    json_object_set_new(j, "model", json_string(model_dir ? model_dir : ""));
    json_object_set_new(j, "model_id", json_string(mid));
    json_object_set_new(j, "component", json_string(comp));
    json_object_set_new(j, "layout", json_string(o->layout_v1 ? "v1" : "v2"));
    json_object_set_new(j, "dtype", json_string(dt));
    json_object_set_new(j, "opset", json_integer(18));
    json_object_set_new(j, "file", json_string(strrchr(res->onnx_path, '/') + 1));
    json_object_set_new(j, "external_data", json_null());
    if (res->external) {
        char dn[1100];
        snprintf(dn, sizeof dn, "%s.data", strrchr(res->onnx_path, '/') + 1);
        json_object_set_new(j, "external_data", json_string(dn));
    }
    json_object_set_new(j, "cache_len", json_integer(L));
    json_object_set_new(j, "layers", json_integer(NL));
    json_object_set_new(j, "hidden", json_integer(H));
    json_object_set_new(j, "input_hidden", json_integer(Hin));
    json_object_set_new(j, "heads", json_integer(c->heads));
    json_object_set_new(j, "kv_heads", json_integer(KV));
    json_object_set_new(j, "head_dim", json_integer(D));
    json_object_set_new(j, "vocab", json_integer(V));
    json_object_set_new(j, "rms_eps", json_real(c->eps));
    json_object_set_new(j, "rope_theta", json_real(c->rope_theta));
    json_object_set_new(j, "mask_fill", json_real(-65504.0 / 4.0));
    json_object_set_new(j, "weight_bytes_per_step", json_integer((json_int_t)res->weight_bytes));
    json_object_set_new(j, "file_bytes", json_integer((json_int_t)res->file_bytes));
    json_object_set_new(j, "inputs", ins);
    json_object_set_new(j, "outputs", outs);
    json_t *host = json_array();
    json_array_append_new(host, json_string(o->predictor
        ? "embedding: position 0 = talker hidden, 1 = talker codec_embedding[c0], g>=2 = code_predictor.codec_embedding[g-2][c_{g-1}]"
        : "embedding: codec_embedding[c0] + sum_g code_predictor.codec_embedding[g-1][c_g] + text overlay (prefill rows from the prompt)"));
    json_array_append_new(host, json_string("angles: cos/sin = [cos(p*inv_freq), cos(p*inv_freq)] with inv_freq_i = theta^(-2i/D), position p"));
    json_array_append_new(host, json_string("mask: 0 for cache slots < p and for the last slot (the new token), mask_fill for slots p..L-1"));
    json_array_append_new(host, json_string(o->predictor
        ? "sampling: at position g (1..15) take logits row g-1 (codebook g); positions restart at 0 each frame"
        : "sampling: repetition penalty, EOS min-length mask, suppression of ids >= codebook size except EOS, then sample"));
    json_array_append_new(host, json_string(o->layout_v1 ? "cache append: k_cache[:, :, :, p] = k_new[:, :, :, 0] (and v)"
                                                         : "cache append: k_cache_i[:, :, p] = k_new_i[:, :, 0] (and v) for every layer i"));
    json_object_set_new(j, "host_jobs", host);
    if (json_dump_file(j, res->json_path, JSON_INDENT(2)) != 0)
        st = ct_errf(err, errcap, CT_ERR_IO, "%s: cannot write", res->json_path);
    json_decref(j);
    return st;
}
