/* Model loading: config, tokenizer, safetensors mapping, and name/shape/dtype checks of every
   tensor the config implies. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/pool.h"
#include "core/params.h"
#include "kernels/cpu.h"
#include "model/model_internal.h"
#include "model/wcache.h"

const char *ct_version(void) { return CT_VERSION_STRING; }

ct_model_params ct_model_params_default(void) {
    ct_model_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    return p;
}

static int keep(ct_model *m, void *p) {
    if (m->n_owned == m->cap_owned) {
        size_t nc = m->cap_owned ? m->cap_owned * 2 : 256;
        void **n = realloc(m->owned, nc * sizeof *n);
        if (!n) return 0;
        m->owned = n;
        m->cap_owned = nc;
    }
    m->owned[m->n_owned++] = p;
    return 1;
}

typedef struct {
    ct_model *m;
    char *err;
    size_t errcap;
    ct_status st;
} binder;

/* Finds name with the expected shape (ndim dims) and a float dtype (or, with allow_q, an
   INT8 [rows, cols] / INT4 [rows, cols/2] matrix written by `codectalk quantize`); records a
   precise error. */
static const ct_st_tensor *find_tensor(binder *b, const char *name, int ndim, const int64_t *dims,
                                       int allow_q) {
    if (b->st != CT_OK) return NULL;
    char want[128], got[128];
    ct_st_shape_str(dims, ndim, want, sizeof want);
    const ct_st_tensor *t = ct_st_find(b->m->st, name);
    if (!t) {
        b->st = ct_errf(b->err, b->errcap, CT_ERR_FORMAT,
                        "model.safetensors: missing tensor '%s' (expected shape %s)", name, want);
        return NULL;
    }
    int64_t d[2] = {dims[0], ndim > 1 ? dims[1] : 0};
    if (allow_q && t->dtype == CT_DT_U8 && ndim == 2) d[1] = dims[1] / 2; /* two INT4 per byte */
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == d[i];
    if (!same) {
        ct_st_shape_str(d, ndim, want, sizeof want);
        b->st = ct_errf(b->err, b->errcap, CT_ERR_FORMAT,
                        "model.safetensors: tensor '%s' has shape %s, expected %s", name,
                        ct_st_shape_str(t->shape, t->ndim, got, sizeof got), want);
        return NULL;
    }
    int qok = allow_q && (t->dtype == CT_DT_I8 || (t->dtype == CT_DT_U8 && dims[1] % CT_Q4_GROUP == 0));
    if (t->dtype != CT_DT_BF16 && t->dtype != CT_DT_F16 && t->dtype != CT_DT_F32 && !qok) {
        b->st = ct_errf(b->err, b->errcap, CT_ERR_FORMAT,
                        "model.safetensors: tensor '%s' has dtype %s, expected BF16, F16 or F32%s",
                        name, ct_dtype_name(t->dtype), allow_q ? " (or I8 / U8 from quantize)" : "");
        return NULL;
    }
    return t;
}

static const ct_st_tensor *find_checked(binder *b, const char *name, int ndim, const int64_t *dims) {
    return find_tensor(b, name, ndim, dims, 0);
}

static float *to_f32_copy(binder *b, const ct_st_tensor *t, size_t n) {
    float *p = malloc(n * sizeof(float));
    if (!p || !keep(b->m, p)) {
        free(p);
        b->st = ct_errf(b->err, b->errcap, CT_ERR_NOMEM, "out of memory converting '%s'", t->name);
        return NULL;
    }
    ct_convert_to_f32(t->data, t->dtype, p, n);
    return p;
}

static void *alloc_kept(binder *b, size_t bytes, const char *name) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p || !keep(b->m, p)) {
        free(p);
        b->st = ct_errf(b->err, b->errcap, CT_ERR_NOMEM, "out of memory converting '%s'", name);
        return NULL;
    }
    return p;
}

/* Weight formats a matrix may be converted to at load. */
typedef enum { Q_NONE = 0, Q_I8, Q_Q4 } qfmt;

/* Binds a pre-quantized matrix t of file f: its scales are the F32 tensor "<name>.scale" of
   shape [rows] (INT8) or [rows, cols/32] (INT4). soft (the weight cache): a problem leaves
   w.data NULL and b->st as it is. */
static ct_mat bind_prequant(binder *b, ct_st_file *f, const ct_st_tensor *t, const char *name, int rows,
                            int cols, int soft) {
    ct_mat w = {0};
    char sn[300];
    snprintf(sn, sizeof sn, "%s.scale", name);
    int64_t sd[2] = {rows, cols / CT_Q4_GROUP};
    int sdim = t->dtype == CT_DT_I8 ? 1 : 2;
    const ct_st_tensor *s = ct_st_find(f, sn);
    int same = s && s->ndim == sdim && s->dtype == CT_DT_F32;
    for (int i = 0; same && i < sdim; i++) same = s->shape[i] == sd[i];
    if (soft && !same) return w;
    if (!s) {
        b->st = ct_errf(b->err, b->errcap, CT_ERR_FORMAT, "model.safetensors: quantized tensor '%s' "
                        "(%s) has no scales tensor '%s'", name, ct_dtype_name(t->dtype), sn);
        return w;
    }
    if (!same) {
        char want[64], got[64];
        b->st = ct_errf(b->err, b->errcap, CT_ERR_FORMAT, "model.safetensors: scales tensor '%s' is "
                        "%s %s, expected F32 %s for %s '%s'", sn, ct_dtype_name(s->dtype),
                        ct_st_shape_str(s->shape, s->ndim, got, sizeof got),
                        ct_st_shape_str(sd, sdim, want, sizeof want),
                        t->dtype == CT_DT_I8 ? "INT8" : "INT4", name);
        return w;
    }
    size_t ns = (size_t)s->nbytes / sizeof(float);
    /* used in place where the mapping keeps floats aligned (every kernel loads them unaligned) */
    const float *sc = s->data;
    if ((uintptr_t)s->data % sizeof(float)) {
        float *copy = alloc_kept(b, s->nbytes, sn);
        if (!copy) return w;
        memcpy(copy, s->data, s->nbytes);
        sc = copy;
    }
    for (size_t i = 0; i < ns; i++)
        if (!isfinite(sc[i]) || sc[i] < 0.0f) {
            if (soft) return w;
            b->st = ct_errf(b->err, b->errcap, CT_ERR_FORMAT, "model.safetensors: scales tensor "
                            "'%s' has a negative or non-finite value at %zu", sn, i);
            return w;
        }
    w.data = t->data;
    w.dtype = t->dtype;
    w.rows = rows;
    w.cols = cols;
    w.scales = sc;
    return w;
}

/* Puts INT8/INT4 matrices in the integer-dot mode where the selected kernels have it. */
static ct_mat with_xq(ct_mat w) {
    w.xq = (w.dtype == CT_DT_I8 || w.dtype == CT_DT_U8) && ct_kernels()->xq && w.cols % 64 == 0 &&
           w.cols <= CT_XQ_MAXC;
    return w;
}

/* Adds w's bytes as loaded to the model's weight_bytes. */
static ct_mat counted(binder *b, ct_mat w) {
    if (b->st == CT_OK) b->m->weight_bytes += ct_mat_bytes(&w);
    return w;
}

static ct_mat bind_qmat(binder *b, const char *name, int rows, int cols, qfmt q) {
    ct_mat w = {0};
    int64_t d[2] = {rows, cols};
    const ct_st_tensor *t = find_tensor(b, name, 2, d, 1);
    if (!t) return w;
    w.rows = rows;
    w.cols = cols;
    const size_t n = (size_t)rows * (size_t)cols;
    if (t->dtype == CT_DT_I8 || t->dtype == CT_DT_U8) {
        w = bind_prequant(b, b->m->st, t, name, rows, cols, 0);
        b->m->n_prequant++;
        if (b->st == CT_OK && b->m->f32_weights) { /* reference mode: dequantize */
            float *f = alloc_kept(b, n * sizeof(float), name);
            if (!f) return w;
            for (int r = 0; r < rows; r++) ct_mat_row(&w, r, f + (size_t)r * cols);
            w = (ct_mat){f, CT_DT_F32, rows, cols, NULL, 0, NULL};
        }
        return counted(b, with_xq(w));
    }
    if (q == Q_Q4 && cols % CT_Q4_GROUP) q = Q_I8; /* INT4 needs whole groups */
    if (b->m->qst && q != Q_NONE && !b->m->f32_weights) { /* the weight cache: as converted */
        const ct_st_tensor *c = ct_st_find(b->m->qst, name);
        const int want = q == Q_I8 ? CT_DT_I8 : CT_DT_U8;
        ct_mat cw = {0};
        if (c && (int)c->dtype == want && c->ndim == 2 && c->shape[0] == rows &&
            c->shape[1] == (q == Q_I8 ? cols : cols / 2))
            cw = bind_prequant(b, b->m->qst, c, name, rows, cols, 1);
        if (b->st != CT_OK) return w;
        if (cw.data) {
            b->m->n_cached++;
            return counted(b, with_xq(cw));
        }
        if (!strstr(b->m->cache_warn, "rebuilt"))
            snprintf(b->m->cache_warn, sizeof b->m->cache_warn, "weight cache '%.700s' is corrupt (tensor '%.150s' "
                     "missing or malformed): rebuilt", b->m->cache_path, name);
    }
    if (q != Q_NONE && !b->m->f32_weights) b->m->n_converted++;
    if (b->m->f32_weights && t->dtype != CT_DT_F32) {
        w.data = to_f32_copy(b, t, n);
        w.dtype = CT_DT_F32;
    } else if (!b->m->f32_weights && q == Q_I8) {
        int8_t *qd = alloc_kept(b, n, name);
        float *sc = qd ? alloc_kept(b, (size_t)rows * sizeof(float), name) : NULL;
        if (!sc) return w;
        if (!ct_quantize_i8(t->data, t->dtype, rows, cols, qd, sc)) {
            b->st = ct_errf(b->err, b->errcap, CT_ERR_NOMEM, "out of memory quantizing '%s'", name);
            return w;
        }
        w.data = qd;
        w.dtype = CT_DT_I8;
        w.scales = sc;
    } else if (!b->m->f32_weights && q == Q_Q4) {
        uint8_t *qd = alloc_kept(b, n / 2, name);
        float *sc = qd ? alloc_kept(b, n / CT_Q4_GROUP * sizeof(float), name) : NULL;
        if (!sc) return w;
        if (!ct_quantize_q4(t->data, t->dtype, rows, cols, qd, sc)) {
            b->st = ct_errf(b->err, b->errcap, CT_ERR_NOMEM, "out of memory quantizing '%s'", name);
            return w;
        }
        w.data = qd;
        w.dtype = CT_DT_U8;
        w.scales = sc;
    } else {
        w.data = t->data;
        w.dtype = t->dtype;
    }
    return counted(b, with_xq(w));
}

/* Embedding tables and other full-precision matrices. */
static ct_mat bind_mat(binder *b, const char *name, int rows, int cols) {
    ct_mat w = {0};
    int64_t d[2] = {rows, cols};
    const ct_st_tensor *t = find_checked(b, name, 2, d);
    if (!t) return w;
    w.rows = rows;
    w.cols = cols;
    if (b->m->f32_weights && t->dtype != CT_DT_F32) {
        w.data = to_f32_copy(b, t, (size_t)rows * (size_t)cols);
        w.dtype = CT_DT_F32;
    } else {
        w.data = t->data;
        w.dtype = t->dtype;
    }
    return counted(b, w);
}

/* The format of each matrix role under its component's weight format. */
enum { ROLE_ATTN, ROLE_MLP, ROLE_HEAD };
static qfmt fmt_for(const ct_model *m, int talker, int role) {
    switch (m->wfmt[talker ? 0 : 1]) {
    case CT_WFMT_INT8: return Q_I8;
    case CT_WFMT_INT4: return role == ROLE_HEAD ? Q_I8 : Q_Q4;
    case CT_WFMT_MIXED: return role == ROLE_MLP ? Q_Q4 : Q_I8;
    default: return Q_NONE;
    }
}

/* 1-D tensors (norms, biases) are always converted to f32. */
static const float *bind_vec(binder *b, const char *name, int n) {
    int64_t d[1] = {n};
    const ct_st_tensor *t = find_checked(b, name, 1, d);
    if (!t) return NULL;
    float *v = to_f32_copy(b, t, (size_t)n);
    if (v) b->m->weight_bytes += (uint64_t)n * sizeof(float);
    return v;
}

static ct_layer_w *bind_stack(binder *b, const char *prefix, const ct_stack_cfg *c,
                              ct_stack_w *sw) {
    ct_layer_w *L = calloc((size_t)c->layers, sizeof *L);
    if (!L || !keep(b->m, L)) {
        free(L);
        b->st = ct_errf(b->err, b->errcap, CT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    char n[256];
    const int H = c->hidden, qd = c->heads * c->head_dim, kd = c->kv_heads * c->head_dim;
    const int tk = strcmp(prefix, "talker.model") == 0;
    const qfmt qa = fmt_for(b->m, tk, ROLE_ATTN), qm = fmt_for(b->m, tk, ROLE_MLP);
    for (int l = 0; l < c->layers && b->st == CT_OK; l++) {
#define NM(s) (snprintf(n, sizeof n, "%s.layers.%d.%s", prefix, l, s), n)
        L[l].in_norm = bind_vec(b, NM("input_layernorm.weight"), H);
        L[l].q = bind_qmat(b, NM("self_attn.q_proj.weight"), qd, H, qa);
        L[l].k = bind_qmat(b, NM("self_attn.k_proj.weight"), kd, H, qa);
        L[l].v = bind_qmat(b, NM("self_attn.v_proj.weight"), kd, H, qa);
        L[l].o = bind_qmat(b, NM("self_attn.o_proj.weight"), H, qd, qa);
        L[l].q_norm = bind_vec(b, NM("self_attn.q_norm.weight"), c->head_dim);
        L[l].k_norm = bind_vec(b, NM("self_attn.k_norm.weight"), c->head_dim);
        L[l].post_norm = bind_vec(b, NM("post_attention_layernorm.weight"), H);
        L[l].gate = bind_qmat(b, NM("mlp.gate_proj.weight"), c->ffn, H, qm);
        L[l].up = bind_qmat(b, NM("mlp.up_proj.weight"), c->ffn, H, qm);
        L[l].down = bind_qmat(b, NM("mlp.down_proj.weight"), H, c->ffn, qm);
#undef NM
    }
    snprintf(n, sizeof n, "%s.norm.weight", prefix);
    sw->final_norm = bind_vec(b, n, H);
    sw->cfg = c;
    sw->layers = L;
    return L;
}

static ct_status bind_all(ct_model *m, char *err, size_t errcap) {
    binder b = {m, err, errcap, CT_OK};
    const ct_config *c = &m->cfg;
    const int H = c->talker.hidden, PH = c->pred.hidden, TH = c->text_hidden;
    m->text_emb = bind_mat(&b, "talker.model.text_embedding.weight", c->text_vocab, TH);
    m->tp_fc1 = bind_mat(&b, "talker.text_projection.linear_fc1.weight", TH, TH);
    m->tp_b1 = bind_vec(&b, "talker.text_projection.linear_fc1.bias", TH);
    m->tp_fc2 = bind_mat(&b, "talker.text_projection.linear_fc2.weight", H, TH);
    m->tp_b2 = bind_vec(&b, "talker.text_projection.linear_fc2.bias", H);
    m->codec_emb = bind_mat(&b, "talker.model.codec_embedding.weight", c->talker.vocab, H);
    m->codec_head = bind_qmat(&b, "talker.codec_head.weight", c->talker.vocab, H,
                              fmt_for(m, 1, ROLE_HEAD));
    m->t_layers = bind_stack(&b, "talker.model", &c->talker, &m->talker);
    /* The projection exists exactly when the widths differ (1.7B); 0.6B uses identity. */
    m->has_proj = ct_st_find(m->st, "talker.code_predictor.small_to_mtp_projection.weight") != NULL;
    if (H != PH && !m->has_proj && b.st == CT_OK)
        b.st = ct_errf(err, errcap, CT_ERR_FORMAT, "model.safetensors: missing tensor "
                       "'talker.code_predictor.small_to_mtp_projection.weight' (expected shape "
                       "[%d, %d]: talker hidden %d != predictor hidden %d)", PH, H, H, PH);
    if (m->has_proj) {
        m->mtp_proj = bind_mat(&b, "talker.code_predictor.small_to_mtp_projection.weight", PH, H);
        m->mtp_b = bind_vec(&b, "talker.code_predictor.small_to_mtp_projection.bias", PH);
    }
    char n[256];
    for (int g = 0; g < c->n_groups - 1 && b.st == CT_OK; g++) {
        snprintf(n, sizeof n, "talker.code_predictor.model.codec_embedding.%d.weight", g);
        m->pred_emb[g] = bind_mat(&b, n, c->pred.vocab, H);
        snprintf(n, sizeof n, "talker.code_predictor.lm_head.%d.weight", g);
        m->pred_head[g] = bind_qmat(&b, n, c->pred.vocab, PH, fmt_for(m, 0, ROLE_HEAD));
    }
    m->p_layers = bind_stack(&b, "talker.code_predictor.model", &c->pred, &m->pred);
    return b.st;
}

/* ---- Weight panels (ct_model_params.weight_panels; docs/KERNELS.md "Weight panels packed at load") */
typedef struct {
    ct_mat **w;    /* [n] the matrices that get panels */
    uint8_t **dst; /* [n] where each one's go */
    int n;
} pan_job;

static void pan_run(void *ctx, int ith, int nth) {
    const pan_job *j = ctx;
    for (int i = ith; i < j->n; i += nth) ct_kernels()->xq_pan_pack(j->w[i], j->dst[i]);
}

/* The weight panels that a file stores (CT_PANELS_TENSOR) for m's matrices, when they fit
   these kernels: a U8 tensor of exactly total bytes, 64-byte aligned in the mapping, and the
   file's CT_PANELS_META_LAYOUT naming kt's layout; else NULL with the reason in m->pan_note
   ("" when the file has none). */
static const uint8_t *file_panels(ct_model *m, const ct_st_file *f, size_t total) {
    const ct_st_tensor *t = f ? ct_st_find(f, CT_PANELS_TENSOR) : NULL;
    if (!t) return NULL;
    const char *lay = ct_st_meta(f, CT_PANELS_META_LAYOUT), *want = ct_kernels()->xq_pan_layout;
    if (!lay || strcmp(lay, want))
        snprintf(m->pan_note, sizeof m->pan_note, "the weight file's panels (layout '%.60s') are not "
                 "this CPU's kernels' ('%s'): packed at load", lay ? lay : "none", want);
    else if (t->dtype != CT_DT_U8 || t->ndim != 1 || (uint64_t)t->shape[0] != (uint64_t)total)
        snprintf(m->pan_note, sizeof m->pan_note, "the weight file's panels hold %llu bytes, these "
                 "weights' take %zu: packed at load", (unsigned long long)t->nbytes, total);
    else if ((uintptr_t)t->data % 64)
        snprintf(m->pan_note, sizeof m->pan_note, "the weight file's panels are not 64-byte aligned: "
                 "packed at load");
    else
        return t->data;
    return NULL;
}

/* Points every INT8/INT4 layer and head matrix in the integer-dot mode that the kernels have
   panels for at its panels: those the weight file stores (quantize --weight-panels, or the
   weight cache) where they fit, else packed into one allocation by a pool of up to 8 threads.
   The rows stay for the calls below the kernels' panel thresholds. (Huge pages for the
   allocation, MADV_HUGEPAGE: 224-236 ms loads instead of 277-303, but the first load after boot
   took 1.1-1.6 s of compaction, docs/BENCH.md.) */
static ct_status pack_panels(ct_model *m, char *err, size_t errcap) {
    const ct_kernel_table *kt = ct_kernels();
    if (!m->weight_panels || m->f32_weights || !kt->xq_pan_pack) return CT_OK;
    const int per = 7 * (m->cfg.talker.layers + m->cfg.pred.layers) + CT_MAX_GROUPS;
    pan_job j = {calloc((size_t)per, sizeof(ct_mat *)), calloc((size_t)per, sizeof(uint8_t *)), 0};
    size_t *off = calloc((size_t)per, sizeof(size_t)), total = 0;
    ct_status st = CT_OK;
    if (!j.w || !j.dst || !off) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
        goto done;
    }
    ct_layer_w *stacks[2] = {m->t_layers, m->p_layers};
    const int nl[2] = {m->cfg.talker.layers, m->cfg.pred.layers};
    int na = 0;
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < nl[s]; l++) {
            ct_layer_w *L = &stacks[s][l];
            ct_mat *w[7] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
            for (int i = 0; i < 7; i++) j.w[na++] = w[i];
        }
    j.w[na++] = &m->codec_head;
    for (int g = 0; g < m->cfg.n_groups - 1; g++) j.w[na++] = &m->pred_head[g];
    for (int i = 0; i < na; i++) { /* keep the ones with panels, in order */
        ct_mat *w = j.w[i];
        const size_t nb = w->xq ? kt->xq_pan_bytes(w->dtype, w->rows, w->cols) : 0;
        if (!nb) continue;
        j.w[j.n] = w;
        off[j.n++] = total;
        total += (nb + 63) & ~(size_t)63;
    }
    if (!total) goto done;
    m->pan_bytes = total;
    const uint8_t *fp = file_panels(m, m->n_cached ? m->qst : m->st, total);
    if (fp) { /* mapped: nothing to pack */
        m->pan_base = fp;
        m->pan_mapped = 1;
        for (int i = 0; i < j.n; i++) j.w[i]->pan = fp + off[i];
        goto done;
    }
    uint8_t *a = aligned_alloc(64, total);
    if (!a || !keep(m, a)) {
        free(a);
        m->pan_bytes = 0;
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory for %.1f MiB of weight panels",
                     (double)total / 1048576.0);
        goto done;
    }
    m->pan_base = a;
    for (int i = 0; i < j.n; i++) j.dst[i] = (uint8_t *)a + off[i];
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    ct_pool *pool = NULL;
    if (ct_pool_create(nc < 1 ? 1 : nc > 8 ? 8 : (int)nc, NULL, 0, &pool) == CT_OK) {
        ct_pool_run(pool, pan_run, &j);
        ct_pool_free(pool);
    } else {
        pan_run(&j, 0, 1);
    }
    for (int i = 0; i < j.n; i++) j.w[i]->pan = j.dst[i];
done:
    free(j.w);
    free(j.dst);
    free(off);
    return st;
}

/* Parses a weight format name into *fmt; NULL or "" leaves *fmt as it is. 0 when unknown. */
static int parse_wfmt(const char *s, int *fmt) {
    if (!s || !s[0]) return 1;
    if (!strcmp(s, "bf16") || !strcmp(s, "stored")) *fmt = CT_WFMT_STORED;
    else if (!strcmp(s, "int8")) *fmt = CT_WFMT_INT8;
    else if (!strcmp(s, "int4")) *fmt = CT_WFMT_INT4;
    else if (!strcmp(s, "mixed")) *fmt = CT_WFMT_MIXED;
    else return 0;
    return 1;
}

/* The tensors every frame streams, by name: the layer matrices of both stacks (with their
   scales and norms), the heads, the projection and stored panels. The embedding tables, read
   a row per token, are left out. */
static const char *const streamed_names[] = {".layers.", "talker.code_predictor.lm_head.", "talker.codec_head.",
                                             "talker.code_predictor.small_to_mtp_projection.", CT_PANELS_TENSOR};

/* Huge pages for the streamed weights in the model's file and the weight cache, before
   binding reads any of them (docs/KERNELS.md "Huge pages for the streamed weights"). */
static void advise_streamed(ct_model *m) {
    const int n = (int)(sizeof streamed_names / sizeof *streamed_names);
    ct_st_advise_huge(m->st, streamed_names, n);
    ct_st_advise_huge(m->qst, streamed_names, n);
}

ct_status ct_model_load(const char *dir, const ct_model_params *params, ct_model **out,
                        char *err, size_t errcap) {
    if (!dir || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "model: NULL argument");
    *out = NULL;
    ct_status kst = ct_kernels_init(NULL, err, errcap);
    if (kst != CT_OK) return kst;
    /* fields beyond the caller's p->size keep their defaults (core/params.h) */
    ct_model_params p = ct_model_params_default();
    ct_status pst = ct_params_take(&p, sizeof p, params, params ? params->size : 0, "ct_model_params",
                                   err, errcap);
    if (pst != CT_OK) return pst;
    ct_model *m = calloc(1, sizeof *m);
    if (!m) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    m->f32_weights = p.f32_weights;
    m->weight_panels = p.weight_panels != 0;
    int all = CT_WFMT_STORED;
    const char *field = NULL, *val = NULL;
    if (!parse_wfmt(p.weights, &all)) field = "weights", val = p.weights;
    /* "mixed" for the whole model: talker int8, predictor attention int8 + MLP int4 */
    m->wfmt[0] = all == CT_WFMT_MIXED ? CT_WFMT_INT8 : all;
    m->wfmt[1] = all;
    if (!field && !parse_wfmt(p.talker_weights, &m->wfmt[0]))
        field = "talker_weights", val = p.talker_weights;
    if (!field && !parse_wfmt(p.predictor_weights, &m->wfmt[1]))
        field = "predictor_weights", val = p.predictor_weights;
    if (field) {
        free(m);
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "model: %s '%s' is not one of bf16, stored, "
                       "int8, int4, mixed", field, val);
    }
    char path[4096], inner[1024];
    ct_status st = ct_config_load(dir, &m->cfg, inner, sizeof inner);
    if (st != CT_OK) {
        ct_errf(err, errcap, st, "%s: %s", dir, inner);
        goto fail;
    }
    if (m->cfg.n_groups - 1 > CT_MAX_GROUPS || m->cfg.n_groups > CT_MAX_GROUPS) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "model: %d code groups (max %d)",
                     m->cfg.n_groups, CT_MAX_GROUPS);
        goto fail;
    }
    const char *tdir = p.tokenizer_dir ? p.tokenizer_dir : dir;
    st = ct_bpe_load(tdir, &m->tok, inner, sizeof inner);
    if (st != CT_OK) {
        ct_errf(err, errcap, st, "tokenizer: %s", inner);
        goto fail;
    }
    if (ct_bpe_vocab_size(m->tok) > m->cfg.text_vocab) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "tokenizer has %d ids but the text embedding has "
                     "%d rows", ct_bpe_vocab_size(m->tok), m->cfg.text_vocab);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st = ct_st_open(path, &m->st, err, errcap);
    if (st != CT_OK) goto fail;
    snprintf(m->src_path, sizeof m->src_path, "%s", path);
    ct_wcache_open(m, p.cache_dir);
    advise_streamed(m);
    st = bind_all(m, err, errcap);
    if (st == CT_OK) st = pack_panels(m, err, errcap);
    if (st != CT_OK) goto fail;
    st = ct_model_hash_begin(m, dir, err, errcap);
    if (st != CT_OK) goto fail;
    if (m->cfg.kind == CT_KIND_BASE && m->cfg.spk_enc_dim > 0) {
        st = ct_spkenc_load(m->st, &m->cfg.spk, &m->spk, err, errcap);
        if (st != CT_OK) goto fail;
    }
    ct_wcache_write(m);
    if (!m->n_converted && !m->n_cached) m->cache_path[0] = 0; /* nothing to cache */
    *out = m;
    return CT_OK;
fail:
    ct_model_free(m);
    return st;
}

void ct_model_free(ct_model *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    ct_spkenc_free(m->spk);
    ct_st_close(m->st);
    ct_st_close(m->qst);
    ct_bpe_free(m->tok);
    if (m->hash_mu_init) pthread_mutex_destroy(&m->hash_mu);
    free(m);
}

/* The format the layers' attention and MLP matrices were loaded in; "mixed" when they differ. */
static const char *loaded_fmt(const ct_layer_w *L, int n) {
    int dt = -1;
    for (int l = 0; l < n; l++) {
        const ct_mat *w[7] = {&L[l].q, &L[l].k, &L[l].v, &L[l].o, &L[l].gate, &L[l].up, &L[l].down};
        for (int i = 0; i < 7; i++) {
            if (dt < 0) dt = (int)w[i]->dtype;
            else if (dt != (int)w[i]->dtype) return "mixed";
        }
    }
    switch (dt) {
    case CT_DT_F32: return "f32";
    case CT_DT_BF16: return "bf16";
    case CT_DT_F16: return "f16";
    case CT_DT_I8: return "int8";
    case CT_DT_U8: return "int4";
    default: return "none";
    }
}

ct_model_info ct_model_get_info(const ct_model *m) {
    ct_model_info i;
    memset(&i, 0, sizeof i);
    if (!m) return i;
    i.kind = ct_model_kind_name(m->cfg.kind);
    i.size_tag = m->cfg.size_tag;
    i.talker_hidden = m->cfg.talker.hidden;
    i.talker_layers = m->cfg.talker.layers;
    i.pred_hidden = m->cfg.pred.hidden;
    i.pred_layers = m->cfg.pred.layers;
    i.n_groups = m->cfg.n_groups;
    i.codebook_size = m->cfg.pred.vocab;
    i.n_speakers = m->cfg.n_speakers;
    i.n_languages = m->cfg.n_langs;
    i.weight_bytes = m->weight_bytes;
    i.talker_weights = loaded_fmt(m->t_layers, m->cfg.talker.layers);
    i.predictor_weights = loaded_fmt(m->p_layers, m->cfg.pred.layers);
    i.weights_source = m->n_converted ? "converted" : m->n_cached ? "cache" : m->n_prequant ? "quantized" : "stored";
    i.weights_file = m->n_cached && !m->n_converted ? m->cache_path : m->src_path;
    i.converted = m->n_converted;
    i.cache_file = m->cache_path;
    i.cache_warning = m->cache_warn;
    i.packed_bytes = m->pan_bytes;
    i.panels_source = !m->pan_bytes ? "none" : m->pan_mapped ? "file" : "packed";
    i.panels_note = m->pan_note;
    return i;
}

const char *ct_model_speaker(const ct_model *m, int i) {
    return (m && i >= 0 && i < m->cfg.n_speakers) ? m->cfg.speakers[i].name : NULL;
}

const char *ct_model_language(const ct_model *m, int i) {
    return (m && i >= 0 && i < m->cfg.n_langs) ? m->cfg.langs[i].name : NULL;
}

ct_status ct_tokenize(const ct_model *m, const char *text, size_t len, int32_t *ids, size_t cap,
                      size_t *n_out, char *err, size_t errcap) {
    if (!m || (!text && len)) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "tokenize: NULL argument");
    return ct_bpe_encode(m->tok, text ? text : "", len, ids, cap, n_out, err, errcap);
}

/* ---- embeddings --------------------------------------------------------------------- */

void ct_embed_text(const ct_model *m, int id, float *out, float *tmp) {
    const int TH = m->cfg.text_hidden;
    float *row = tmp, *mid = tmp + TH;
    ct_mat_row(&m->text_emb, id, row);
    ct_matmul(&m->tp_fc1, m->tp_b1, row, mid, 1);
    for (int i = 0; i < TH; i++) mid[i] = mid[i] / (1.0f + expf(-mid[i]));
    ct_matmul(&m->tp_fc2, m->tp_b2, mid, out, 1);
}

static void add_row(const ct_mat *w, int r, float *out) {
    size_t es = ct_dtype_size(w->dtype);
    const char *p = (const char *)w->data + (size_t)r * (size_t)w->cols * es;
    if (w->dtype == CT_DT_F32) {
        const float *f = (const float *)p;
        for (int i = 0; i < w->cols; i++) out[i] += f[i];
    } else if (w->dtype == CT_DT_BF16) {
        const uint16_t *h = (const uint16_t *)p;
        for (int i = 0; i < w->cols; i++) out[i] += ct_bf16_to_f32(h[i]);
    } else {
        const uint16_t *h = (const uint16_t *)p;
        for (int i = 0; i < w->cols; i++) out[i] += ct_f16_to_f32(h[i]);
    }
}

void ct_embed_codec_add(const ct_model *m, int id, float *out) { add_row(&m->codec_emb, id, out); }

void ct_embed_group_add(const ct_model *m, int g, int code, float *out) {
    add_row(&m->pred_emb[g - 1], code, out);
}
