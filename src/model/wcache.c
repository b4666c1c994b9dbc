/* Weight cache (see wcache.h): the file is a safetensors of the quantized matrices, as
   `codectalk quantize` stores them (I8 [rows, cols] or U8 [rows, cols/2] + F32 "<name>.scale"),
   whose __metadata__ names the source file, the formats and the engine version it was made
   for. The key (file name and metadata) is cheap to compute at every load: an FNV-1a hash of
   config.json and the model.safetensors header, that file's size and mtime. */
#include "model/wcache.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "io/st_write.h"
#include "kernels/cpu.h"

/* Revision of the cache layout and of the quantizers' numerics (kernels/quant.c): bump it
   when either changes so that old files are not used. */
#define CT_WCACHE_REV "1"

enum { N_META = 7 };

typedef struct {
    const char *key;
    char val[128];
} meta_kv;

static const char *wfmt_name(int f) {
    switch (f) {
    case CT_WFMT_INT8: return "int8";
    case CT_WFMT_INT4: return "int4";
    case CT_WFMT_MIXED: return "mixed";
    default: return "stored";
    }
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void warn(ct_model *m, const char *fmt, const char *a, const char *b) {
    size_t l = strlen(m->cache_warn);
    if (l && l + 2 < sizeof m->cache_warn) l += (size_t)snprintf(m->cache_warn + l, sizeof m->cache_warn - l, "; ");
    if (l < sizeof m->cache_warn) snprintf(m->cache_warn + l, sizeof m->cache_warn - l, fmt, a, b ? b : "");
}

/* The metadata this model + formats + engine need (kv[N_META]) and the model id (kv[2]).
   0 with *why set when the source cannot be read. */
static int expected_meta(const ct_model *m, const char *dir, meta_kv *kv, char *why, size_t cap) {
    struct stat sb;
    if (stat(m->src_path, &sb) != 0) {
        snprintf(why, cap, "cannot stat '%.400s': %s", m->src_path, strerror(errno));
        return 0;
    }
    char cfg[4200], e[256];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    char *text = NULL;
    size_t tl = 0;
    if (ct_read_file(cfg, 1u << 24, &text, &tl, e, sizeof e) != CT_OK) {
        snprintf(why, cap, "%s", e);
        return 0;
    }
    uint64_t h = fnv1a(0xcbf29ce484222325ull, text, tl);
    free(text);
    FILE *f = fopen(m->src_path, "rb");
    unsigned char le[8];
    uint64_t hl = 0;
    int ok = f && fread(le, 1, 8, f) == 8;
    for (int i = 0; ok && i < 8; i++) hl |= (uint64_t)le[i] << (8 * i);
    ok = ok && hl <= ((uint64_t)100 << 20);
    char *hdr = ok ? malloc(hl ? hl : 1) : NULL;
    ok = hdr && fread(hdr, 1, hl, f) == hl;
    if (ok) h = fnv1a(h, hdr, hl);
    free(hdr);
    if (f) fclose(f);
    if (!ok) {
        snprintf(why, cap, "cannot read the header of '%.400s'", m->src_path);
        return 0;
    }
    const long long mt = (long long)sb.st_mtim.tv_sec * 1000000000ll + sb.st_mtim.tv_nsec;
    h = fnv1a(h, &mt, sizeof mt);
    const long long sz = (long long)sb.st_size;
    h = fnv1a(h, &sz, sizeof sz);
    static const char *keys[N_META] = {"codectalk.weight_cache", "codectalk.engine", "codectalk.model",
                                       "codectalk.source_bytes", "codectalk.source_mtime_ns",
                                       "codectalk.talker", "codectalk.predictor"};
    for (int i = 0; i < N_META; i++) kv[i].key = keys[i];
    snprintf(kv[0].val, sizeof kv[0].val, "%s", CT_WCACHE_REV);
    snprintf(kv[1].val, sizeof kv[1].val, "%s", CT_VERSION_STRING);
    snprintf(kv[2].val, sizeof kv[2].val, "%016llx", (unsigned long long)h);
    snprintf(kv[3].val, sizeof kv[3].val, "%lld", sz);
    snprintf(kv[4].val, sizeof kv[4].val, "%lld", mt);
    snprintf(kv[5].val, sizeof kv[5].val, "%s", wfmt_name(m->wfmt[0]));
    snprintf(kv[6].val, sizeof kv[6].val, "%s", wfmt_name(m->wfmt[1]));
    return 1;
}

void ct_wcache_open(ct_model *m, const char *cache_dir) {
    m->cache_path[0] = 0;
    if (!cache_dir || !cache_dir[0] || m->f32_weights ||
        (m->wfmt[0] == CT_WFMT_STORED && m->wfmt[1] == CT_WFMT_STORED))
        return; /* nothing is converted */
    char dir[4096], why[512];
    snprintf(dir, sizeof dir, "%s", m->src_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    meta_kv kv[N_META];
    if (!expected_meta(m, dir, kv, why, sizeof why)) {
        warn(m, "weight cache not used: %.600s%.10s", why, NULL);
        return;
    }
    int n = snprintf(m->cache_path, sizeof m->cache_path, "%s/weights/%s-%s-%s-%s.safetensors", cache_dir,
                     kv[2].val, kv[5].val, kv[6].val, kv[1].val);
    if (n < 0 || (size_t)n >= sizeof m->cache_path) {
        m->cache_path[0] = 0;
        warn(m, "weight cache not used: the path under '%.600s' is too long%.10s", cache_dir, NULL);
        return;
    }
    struct stat sb;
    if (stat(m->cache_path, &sb) != 0) return; /* not made yet: this load writes it */
    ct_st_file *f = NULL;
    char e[512];
    if (ct_st_open(m->cache_path, &f, e, sizeof e) != CT_OK) {
        warn(m, "weight cache '%.600s' is unreadable (%.300s): rebuilt", m->cache_path, e);
        return;
    }
    for (int i = 0; i < N_META; i++) {
        const char *v = ct_st_meta(f, kv[i].key);
        if (!v || strcmp(v, kv[i].val)) {
            snprintf(why, sizeof why, "%s is '%s', expected '%s'", kv[i].key, v ? v : "(missing)", kv[i].val);
            warn(m, "weight cache '%.600s' is stale (%.300s): rebuilt", m->cache_path, why);
            ct_st_close(f);
            return;
        }
    }
    m->qst = f;
}

static int add_stack(ct_qmat_ref *e, int n, int cap, const char *prefix, const ct_stack_w *s) {
    static const char *nm[7] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
    for (int l = 0; l < s->cfg->layers; l++) {
        const ct_layer_w *L = &s->layers[l];
        const ct_mat *w[7] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
        for (int i = 0; i < 7; i++, n++) {
            if (n >= cap) continue;
            snprintf(e[n].name, sizeof e[n].name, "%s.layers.%d.%s.weight", prefix, l, nm[i]);
            e[n].w = w[i];
        }
    }
    return n;
}

int ct_model_qmats(const ct_model *m, ct_qmat_ref *out, int cap) {
    if (!out) cap = 0;
    int n = add_stack(out, 0, cap, "talker.model", &m->talker);
    n = add_stack(out, n, cap, "talker.code_predictor.model", &m->pred);
    if (n < cap) {
        snprintf(out[n].name, sizeof out[n].name, "talker.codec_head.weight");
        out[n].w = &m->codec_head;
    }
    n++;
    for (int g = 0; g < m->cfg.n_groups - 1; g++, n++) {
        if (n >= cap) continue;
        snprintf(out[n].name, sizeof out[n].name, "talker.code_predictor.lm_head.%d.weight", g);
        out[n].w = &m->pred_head[g];
    }
    return n;
}

static int quantized(const ct_mat *w) { return w->dtype == CT_DT_I8 || w->dtype == CT_DT_U8; }

static size_t data_bytes(const ct_mat *w) {
    return w->dtype == CT_DT_I8 ? (size_t)w->rows * w->cols : (size_t)w->rows * w->cols / 2;
}

static size_t scale_bytes(const ct_mat *w) {
    return (w->dtype == CT_DT_I8 ? (size_t)w->rows : (size_t)w->rows * (w->cols / CT_Q4_GROUP)) * sizeof(float);
}

void ct_wcache_write(ct_model *m) {
    /* converted at load, or read from a cache file without (usable) panels while this load
       packed them: the file is rewritten with them (its old mapping stays valid) */
    const int add_panels = m->n_cached && m->pan_bytes && !m->pan_mapped;
    if (!m->cache_path[0] || (m->n_converted == 0 && !add_panels)) return;
    static atomic_uint seq;
    char e[768] = "", tmp[4200] = "";
    ct_stw *w = NULL;
    meta_kv kv[N_META];
    int n = ct_model_qmats(m, NULL, 0), nq = 0, ok = 0;
    ct_qmat_ref *refs = calloc((size_t)n, sizeof *refs);
    char dir[4096], why[512];
    snprintf(dir, sizeof dir, "%s", m->src_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (!refs || ct_stw_create(&w, e, sizeof e) != CT_OK) {
        snprintf(e, sizeof e, "out of memory");
        goto done;
    }
    if (!expected_meta(m, dir, kv, why, sizeof why)) {
        snprintf(e, sizeof e, "%s", why);
        goto done;
    }
    ct_model_qmats(m, refs, n);
    for (int i = 0; i < N_META; i++)
        if (ct_stw_meta(w, kv[i].key, kv[i].val, e, sizeof e) != CT_OK) goto done;
    for (int i = 0; i < n; i++) {
        const ct_mat *q = refs[i].w;
        if (!quantized(q)) continue;
        char sn[200];
        snprintf(sn, sizeof sn, "%s.scale", refs[i].name);
        int64_t d[2] = {q->rows, q->dtype == CT_DT_I8 ? q->cols : q->cols / 2};
        int64_t s[2] = {q->rows, q->cols / CT_Q4_GROUP};
        if (ct_stw_declare(w, refs[i].name, q->dtype == CT_DT_I8 ? CT_STW_I8 : CT_STW_U8, 2, d, e, sizeof e) != CT_OK ||
            ct_stw_declare(w, sn, CT_STW_F32, q->dtype == CT_DT_I8 ? 1 : 2, s, e, sizeof e) != CT_OK)
            goto done;
        refs[nq++] = refs[i]; /* declaration 2k is refs[k]'s data, 2k + 1 its scales */
    }
    /* the weight panels packed by this load: declaration 2 nq; its name sorts before the
       matrices' ("talker..."), so its bytes come first, 64-byte aligned */
    const int pan = m->pan_bytes && !m->pan_mapped;
    if (pan) {
        int64_t d[1] = {(int64_t)m->pan_bytes};
        ct_stw_align64(w);
        if (ct_stw_declare(w, CT_PANELS_TENSOR, CT_STW_U8, 1, d, e, sizeof e) != CT_OK ||
            ct_stw_meta(w, CT_PANELS_META_LAYOUT, ct_kernels()->xq_pan_layout, e, sizeof e) != CT_OK)
            goto done;
    }
    if (ct_mkdir_parents(m->cache_path, e, sizeof e) != CT_OK) goto done;
    /* unique per process and load: concurrent writers never share a temporary file */
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", m->cache_path, (long)getpid(), atomic_fetch_add(&seq, 1u));
    if (ct_stw_begin(w, tmp, e, sizeof e) != CT_OK) goto done;
    size_t idx;
    while (ct_stw_next(w, &idx, NULL)) {
        if (pan && idx == (size_t)(2 * nq)) {
            if (ct_stw_write(w, m->pan_base, m->pan_bytes, e, sizeof e) != CT_OK) goto done;
            continue;
        }
        const ct_mat *q = refs[idx / 2].w;
        ct_status st = idx % 2 ? ct_stw_write(w, q->scales, scale_bytes(q), e, sizeof e)
                               : ct_stw_write(w, q->data, data_bytes(q), e, sizeof e);
        if (st != CT_OK) goto done;
    }
    if (ct_stw_finish(w, e, sizeof e) != CT_OK) goto done;
    if (rename(tmp, m->cache_path) != 0) {
        snprintf(e, sizeof e, "rename: %s", strerror(errno));
        remove(tmp);
        goto done;
    }
    ok = 1;
done:
    if (!ok) warn(m, "weight cache '%.600s' not written (%.300s): the weights converted at load are used", m->cache_path, e);
    ct_stw_free(w);
    free(refs);
}
