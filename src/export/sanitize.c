/* ONNX sanitizer (docs/EXPORT.md, Sanitizer): parses a ModelProto with the bounds-checked protobuf
   reader, applies three graph fixes to the main graph and re-serializes it, copying every
   field it does not touch verbatim:
     1. Where(IsNaN(x), a, b) with x in {a, b}: both nodes dropped (IsNaN only when nothing
        else reads it), consumers and graph outputs rewired to x;
     2. Reshape allowzero=1 -> 0;
     3. rank-0 axes of Unsqueeze/Squeeze (initializer, Constant value tensor, or Constant
        value_int) -> rank 1, and value_info entries for those tensors dropped.
   Tensors with external data are re-saved into one blob next to the output (or inlined by
   the in-memory entry point when no blob is given). Checks: malformed/truncated protobuf,
   missing graph, unknown opset domains, node cycles, missing/short external data. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "export/export.h"
#include "export/pb.h"

#define MAX_IO 16

typedef struct {
    const uint8_t *p;
    size_t n;
} span;

typedef struct {
    ct_pb_field f;      /* the whole node field in the graph */
    span in[MAX_IO * 4];
    int nin;
    span out[MAX_IO];
    int nout;
    span op;
    int removed;
} node;

typedef struct {
    char *old_name, *new_name;
} rename_t;

typedef struct {
    FILE *f;
    uint64_t pos;
    const char *location; /* file name written into external_data */
} blob_sink;

typedef struct {
    const char *base_dir;
    blob_sink *sink;
    char *err;
    size_t errcap;
    ct_status st;
    ct_sanitize_counts *cnt;
    /* rank-0 axes tensors to fix */
    span *fix;
    int nfix, capfix;
} ctx;

static int span_eq(span a, span b) { return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0); }
static int span_is(span a, const char *s) { return a.n == strlen(s) && memcmp(a.p, s, a.n) == 0; }

static ct_status fail(ctx *c, ct_status st, const char *msg) {
    if (c->st == CT_OK) c->st = ct_errf(c->err, c->errcap, st, "onnx sanitize: %s", msg);
    return c->st;
}

static int parse_node(const ct_pb_field *gf, node *n) {
    memset(n, 0, sizeof *n);
    n->f = *gf;
    ct_pb_rd r;
    ct_pb_field f;
    ct_pb_rd_init(&r, gf->data, gf->len);
    while (ct_pb_next(&r, &f)) {
        if (f.wire != CT_PB_LEN) continue;
        if (f.field == 1) {
            if (n->nin == MAX_IO * 4) return 0;
            n->in[n->nin++] = (span){f.data, f.len};
        } else if (f.field == 2) {
            if (n->nout == MAX_IO) return 0;
            n->out[n->nout++] = (span){f.data, f.len};
        } else if (f.field == 4) {
            n->op = (span){f.data, f.len};
        }
    }
    return !r.bad;
}

/* Resolves a possibly rewired tensor name. */
static span resolve(span s, const span *from, const span *to, int nr) {
    for (int guard = 0; guard < nr + 1; guard++) {
        int hit = 0;
        for (int i = 0; i < nr; i++)
            if (span_eq(s, from[i])) {
                s = to[i];
                hit = 1;
                break;
            }
        if (!hit) break;
    }
    return s;
}

static int is_fix(const ctx *c, span s) {
    for (int i = 0; i < c->nfix; i++)
        if (span_eq(c->fix[i], s)) return 1;
    return 0;
}

static void add_fix(ctx *c, span s) {
    if (is_fix(c, s)) return;
    if (c->nfix == c->capfix) {
        int cap = c->capfix ? c->capfix * 2 : 16;
        span *n = realloc(c->fix, (size_t)cap * sizeof *n);
        if (!n) {
            fail(c, CT_ERR_NOMEM, "out of memory");
            return;
        }
        c->fix = n;
        c->capfix = cap;
    }
    c->fix[c->nfix++] = s;
}

/* Tensor info: name, rank, external data. */
typedef struct {
    span name;
    int ndim;
    int external;
    span location;
    uint64_t offset, length;
    int has_len;
} tinfo;

static int tensor_info(const uint8_t *p, size_t n, tinfo *t) {
    memset(t, 0, sizeof *t);
    ct_pb_rd r;
    ct_pb_field f;
    ct_pb_rd_init(&r, p, n);
    while (ct_pb_next(&r, &f)) {
        if (f.field == 1) {
            if (f.wire == CT_PB_VARINT) t->ndim++;
            else if (f.wire == CT_PB_LEN) { /* packed dims */
                const uint8_t *q = f.data, *e = f.data + f.len;
                uint64_t v;
                while (q < e)
                    if (!ct_pb_read_varint(&q, e, &v)) return 0;
                    else t->ndim++;
            }
        } else if (f.field == 8 && f.wire == CT_PB_LEN) t->name = (span){f.data, f.len};
        else if (f.field == 14 && f.wire == CT_PB_VARINT) t->external = f.v == 1;
        else if (f.field == 13 && f.wire == CT_PB_LEN) {
            ct_pb_rd er;
            ct_pb_field ef;
            span k = {0}, v = {0};
            ct_pb_rd_init(&er, f.data, f.len);
            while (ct_pb_next(&er, &ef))
                if (ef.wire == CT_PB_LEN) {
                    if (ef.field == 1) k = (span){ef.data, ef.len};
                    if (ef.field == 2) v = (span){ef.data, ef.len};
                }
            if (er.bad) return 0;
            char num[32] = "";
            if (v.p && v.n < sizeof num) memcpy(num, v.p, v.n), num[v.n] = 0; /* no memcpy from NULL */
            if (span_is(k, "location")) t->location = v;
            else if (span_is(k, "offset")) t->offset = strtoull(num, NULL, 10);
            else if (span_is(k, "length")) t->length = strtoull(num, NULL, 10), t->has_len = 1;
        }
    }
    return !r.bad;
}

/* Re-emits a TensorProto: optional dims [1] for a rank-0 tensor, external data moved. */
static void emit_tensor(ctx *c, ct_pb *dst, int field, const uint8_t *p, size_t n, int make_rank1) {
    tinfo t;
    if (!tensor_info(p, n, &t)) {
        fail(c, CT_ERR_FORMAT, "malformed TensorProto");
        return;
    }
    ct_pb out = {0};
    if (make_rank1 && t.ndim == 0) ct_pb_int(&out, 1, 1);
    ct_pb_rd r;
    ct_pb_field f;
    ct_pb_rd_init(&r, p, n);
    while (ct_pb_next(&r, &f)) {
        if (t.external && (f.field == 13 || f.field == 14)) continue;
        ct_pb_raw(&out, f.start, (size_t)(f.stop - f.start));
    }
    if (t.external) {
        char loc[1024], path[2300];
        if (!c->base_dir || t.location.n == 0 || t.location.n >= sizeof loc || !t.has_len) {
            fail(c, CT_ERR_FORMAT, "tensor with external data but no usable location/length (or no base directory)");
            ct_pb_free(&out);
            return;
        }
        memcpy(loc, t.location.p, t.location.n);
        loc[t.location.n] = 0;
        if (strstr(loc, "..") || loc[0] == '/') {
            fail(c, CT_ERR_FORMAT, "external data location escapes the model directory");
            ct_pb_free(&out);
            return;
        }
        snprintf(path, sizeof path, "%s/%s", c->base_dir, loc);
        FILE *f2 = fopen(path, "rb");
        uint8_t *buf = t.length ? malloc((size_t)t.length) : malloc(1);
        int ok = f2 && buf && fseeko(f2, (off_t)t.offset, SEEK_SET) == 0 &&
                 (t.length == 0 || fread(buf, 1, (size_t)t.length, f2) == (size_t)t.length);
        if (f2) fclose(f2);
        if (!ok) {
            free(buf);
            ct_pb_free(&out);
            char m[2400];
            snprintf(m, sizeof m, "external data %s (offset %llu, length %llu) missing or short", path,
                     (unsigned long long)t.offset, (unsigned long long)t.length);
            fail(c, CT_ERR_IO, m);
            return;
        }
        if (c->sink) {
            uint64_t off = (c->sink->pos + 4095) & ~(uint64_t)4095;
            static const uint8_t z[4096];
            int wok = fwrite(z, 1, (size_t)(off - c->sink->pos), c->sink->f) == (size_t)(off - c->sink->pos) &&
                      (t.length == 0 || fwrite(buf, 1, (size_t)t.length, c->sink->f) == (size_t)t.length);
            c->sink->pos = off + t.length;
            if (!wok) fail(c, CT_ERR_IO, "cannot write the external data blob");
            char num[32];
            ct_pb e = {0};
            ct_pb_str(&e, 1, "location");
            ct_pb_str(&e, 2, c->sink->location);
            ct_pb_msg(&out, 13, &e);
            ct_pb_free(&e);
            snprintf(num, sizeof num, "%llu", (unsigned long long)off);
            ct_pb_str(&e, 1, "offset");
            ct_pb_str(&e, 2, num);
            ct_pb_msg(&out, 13, &e);
            ct_pb_free(&e);
            snprintf(num, sizeof num, "%llu", (unsigned long long)t.length);
            ct_pb_str(&e, 1, "length");
            ct_pb_str(&e, 2, num);
            ct_pb_msg(&out, 13, &e);
            ct_pb_free(&e);
            ct_pb_int(&out, 14, 1);
        } else {
            ct_pb_bytes(&out, 9, buf, (size_t)t.length);
        }
        free(buf);
        c->cnt->external_tensors++;
    }
    ct_pb_msg(dst, field, &out);
    ct_pb_free(&out);
}

/* Re-emits a node with renamed inputs and fixed attributes. */
static void emit_node(ctx *c, ct_pb *dst, const node *n, const span *from, const span *to, int nr) {
    ct_pb out = {0};
    ct_pb_rd r;
    ct_pb_field f;
    ct_pb_rd_init(&r, n->f.data, n->f.len);
    const int is_reshape = span_is(n->op, "Reshape"), is_const = span_is(n->op, "Constant");
    const int const_fix = is_const && n->nout == 1 && is_fix(c, n->out[0]);
    while (ct_pb_next(&r, &f)) {
        if (f.field == 1 && f.wire == CT_PB_LEN) {
            span s = resolve((span){f.data, f.len}, from, to, nr);
            ct_pb_bytes(&out, 1, s.p, s.n);
        } else if (f.field == 5 && f.wire == CT_PB_LEN && (is_reshape || is_const)) {
            /* attribute: inspect name */
            ct_pb_rd ar;
            ct_pb_field af;
            span an = {0};
            int64_t iv = 0;
            int has_i = 0;
            ct_pb_rd_init(&ar, f.data, f.len);
            while (ct_pb_next(&ar, &af)) {
                if (af.field == 1 && af.wire == CT_PB_LEN) an = (span){af.data, af.len};
                if (af.field == 3 && af.wire == CT_PB_VARINT) iv = (int64_t)af.v, has_i = 1;
            }
            if (is_reshape && span_is(an, "allowzero") && has_i && iv == 1) {
                ct_pb a = {0};
                ct_pb_str(&a, 1, "allowzero");
                ct_pb_int(&a, 3, 0);
                ct_pb_int(&a, 20, 2);
                ct_pb_msg(&out, 5, &a);
                ct_pb_free(&a);
                c->cnt->allowzero_cleared++;
            } else if (const_fix && span_is(an, "value_int") && has_i) {
                ct_pb a = {0};
                ct_pb_str(&a, 1, "value_ints");
                ct_pb_int(&a, 8, iv);
                ct_pb_int(&a, 20, 7);
                ct_pb_msg(&out, 5, &a);
                ct_pb_free(&a);
            } else if (const_fix && span_is(an, "value")) {
                ct_pb a = {0};
                ct_pb_rd_init(&ar, f.data, f.len);
                while (ct_pb_next(&ar, &af)) {
                    if (af.field == 5 && af.wire == CT_PB_LEN) emit_tensor(c, &a, 5, af.data, af.len, 1);
                    else ct_pb_raw(&a, af.start, (size_t)(af.stop - af.start));
                }
                ct_pb_msg(&out, 5, &a);
                ct_pb_free(&a);
            } else {
                ct_pb_raw(&out, f.start, (size_t)(f.stop - f.start));
            }
        } else {
            ct_pb_raw(&out, f.start, (size_t)(f.stop - f.start));
        }
    }
    ct_pb_msg(dst, 1, &out);
    ct_pb_free(&out);
}

static int name_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int r = n ? memcmp(x->p, y->p, n) : 0;
    return r ? r : (x->n < y->n ? -1 : x->n > y->n);
}

/* Kahn's algorithm over node edges (producer -> consumer); 0 when there is a cycle. */
static int acyclic(node *nodes, int nn) {
    int total_out = 0;
    for (int i = 0; i < nn; i++) total_out += nodes[i].nout;
    typedef struct {
        span s;
        int node;
    } prod;
    prod *pr = malloc(((size_t)total_out + 1) * sizeof *pr);
    int *indeg = calloc((size_t)nn + 1, sizeof *indeg), *queue = malloc(((size_t)nn + 1) * sizeof *queue);
    int ok = pr && indeg && queue, np = 0;
    if (ok) {
        for (int i = 0; i < nn; i++)
            for (int j = 0; j < nodes[i].nout; j++)
                if (nodes[i].out[j].n) pr[np++] = (prod){nodes[i].out[j], i};
        qsort(pr, (size_t)np, sizeof *pr, name_cmp);
        for (int i = 0; i < nn; i++)
            for (int j = 0; j < nodes[i].nin; j++)
                if (nodes[i].in[j].n && bsearch(&nodes[i].in[j], pr, (size_t)np, sizeof *pr, name_cmp)) indeg[i]++;
        int qh = 0, qt = 0, done = 0;
        for (int i = 0; i < nn; i++)
            if (!indeg[i]) queue[qt++] = i;
        while (qh < qt) {
            int i = queue[qh++];
            done++;
            for (int j = 0; j < nodes[i].nout; j++) {
                if (!nodes[i].out[j].n) continue;
                for (int k = 0; k < nn; k++)
                    for (int m = 0; m < nodes[k].nin; m++)
                        if (span_eq(nodes[k].in[m], nodes[i].out[j]) && --indeg[k] == 0) queue[qt++] = k;
            }
        }
        ok = done == nn;
    }
    free(pr);
    free(indeg);
    free(queue);
    return ok;
}

static void sanitize_graph(ctx *c, const uint8_t *gp, size_t gn, ct_pb *gout) {
    ct_pb_rd r;
    ct_pb_field f;
    int nn = 0, cap = 0;
    node *nodes = NULL;
    ct_pb_rd_init(&r, gp, gn);
    while (ct_pb_next(&r, &f)) {
        if (f.field == 1 && f.wire == CT_PB_LEN) {
            if (nn == cap) {
                cap = cap ? cap * 2 : 64;
                node *nw = realloc(nodes, (size_t)cap * sizeof *nw);
                if (!nw) {
                    free(nodes);
                    fail(c, CT_ERR_NOMEM, "out of memory");
                    return;
                }
                nodes = nw;
            }
            if (!parse_node(&f, &nodes[nn])) {
                free(nodes);
                fail(c, CT_ERR_FORMAT, "malformed NodeProto (or more than 64 inputs / 16 outputs)");
                return;
            }
            nn++;
        }
    }
    if (r.bad) {
        free(nodes);
        fail(c, CT_ERR_FORMAT, "malformed or truncated GraphProto");
        return;
    }
    if (nn > 200000 || !acyclic(nodes, nn)) {
        free(nodes);
        fail(c, CT_ERR_FORMAT, "the graph has a cycle (or too many nodes)");
        return;
    }
    /* rule 1: NaN guards */
    span *from = malloc(((size_t)nn + 1) * sizeof *from), *to = malloc(((size_t)nn + 1) * sizeof *to);
    int nr = 0;
    if (!from || !to) {
        free(nodes), free(from), free(to);
        fail(c, CT_ERR_NOMEM, "out of memory");
        return;
    }
    for (int i = 0; i < nn; i++) {
        node *w = &nodes[i];
        if (!span_is(w->op, "Where") || w->nin != 3 || w->nout != 1) continue;
        for (int j = 0; j < nn; j++) {
            node *q = &nodes[j];
            if (q->removed || !span_is(q->op, "IsNaN") || q->nin != 1 || q->nout != 1 || !span_eq(q->out[0], w->in[0]))
                continue;
            span x = q->in[0];
            if (!span_eq(x, w->in[1]) && !span_eq(x, w->in[2])) continue;
            w->removed = 1;
            from[nr] = w->out[0];
            to[nr] = x;
            nr++;
            int other = 0;
            for (int k = 0; k < nn; k++)
                if (!nodes[k].removed)
                    for (int m = 0; m < nodes[k].nin; m++) other |= span_eq(nodes[k].in[m], q->out[0]);
            ct_pb_rd orr;
            ct_pb_field of;
            ct_pb_rd_init(&orr, gp, gn);
            while (ct_pb_next(&orr, &of)) /* a graph output reading the IsNaN result keeps it */
                if (of.field == 12 && of.wire == CT_PB_LEN) {
                    ct_pb_rd vr;
                    ct_pb_field vf;
                    ct_pb_rd_init(&vr, of.data, of.len);
                    while (ct_pb_next(&vr, &vf))
                        if (vf.field == 1 && vf.wire == CT_PB_LEN) other |= span_eq((span){vf.data, vf.len}, q->out[0]);
                }
            if (!other) q->removed = 1;
            c->cnt->nan_guards_removed++;
            break;
        }
    }
    /* rule 3: collect rank-0 axes tensors */
    for (int i = 0; i < nn; i++) {
        node *n = &nodes[i];
        if ((!span_is(n->op, "Unsqueeze") && !span_is(n->op, "Squeeze")) || n->nin < 2 || !n->in[1].n) continue;
        span ax = n->in[1];
        int scalar = 0;
        ct_pb_rd_init(&r, gp, gn);
        while (ct_pb_next(&r, &f))
            if (f.field == 5 && f.wire == CT_PB_LEN) {
                tinfo t;
                if (tensor_info(f.data, f.len, &t) && span_eq(t.name, ax) && t.ndim == 0) scalar = 1;
            }
        for (int j = 0; j < nn && !scalar; j++) {
            node *k = &nodes[j];
            if (!span_is(k->op, "Constant") || k->nout != 1 || !span_eq(k->out[0], ax)) continue;
            ct_pb_rd nr2;
            ct_pb_field nf;
            ct_pb_rd_init(&nr2, k->f.data, k->f.len);
            while (ct_pb_next(&nr2, &nf)) {
                if (nf.field != 5 || nf.wire != CT_PB_LEN) continue;
                ct_pb_rd ar;
                ct_pb_field af;
                span an = {0};
                const uint8_t *tp = NULL;
                size_t tn = 0;
                ct_pb_rd_init(&ar, nf.data, nf.len);
                while (ct_pb_next(&ar, &af)) {
                    if (af.field == 1 && af.wire == CT_PB_LEN) an = (span){af.data, af.len};
                    if (af.field == 5 && af.wire == CT_PB_LEN) tp = af.data, tn = af.len;
                }
                tinfo t;
                if (span_is(an, "value_int")) scalar = 1;
                if (span_is(an, "value") && tp && tensor_info(tp, tn, &t) && t.ndim == 0) scalar = 1;
            }
        }
        if (scalar && !is_fix(c, ax)) {
            add_fix(c, ax);
            c->cnt->scalar_axes_fixed++;
        }
    }
    /* emit */
    ct_pb_rd_init(&r, gp, gn);
    int ni = 0;
    while (c->st == CT_OK && ct_pb_next(&r, &f)) {
        if (f.field == 1 && f.wire == CT_PB_LEN) {
            const node *n = &nodes[ni++];
            if (!n->removed) emit_node(c, gout, n, from, to, nr);
        } else if (f.field == 5 && f.wire == CT_PB_LEN) {
            tinfo t;
            int fx = tensor_info(f.data, f.len, &t) && is_fix(c, t.name);
            emit_tensor(c, gout, 5, f.data, f.len, fx);
        } else if ((f.field == 12 || f.field == 13) && f.wire == CT_PB_LEN) {
            /* outputs: rewire names; value_info: drop stale entries of fixed / removed tensors */
            ct_pb_rd vr;
            ct_pb_field vf;
            span name = {0};
            ct_pb_rd_init(&vr, f.data, f.len);
            while (ct_pb_next(&vr, &vf))
                if (vf.field == 1 && vf.wire == CT_PB_LEN) name = (span){vf.data, vf.len};
            if (f.field == 13) {
                int stale = is_fix(c, name);
                for (int i = 0; i < nr; i++) stale |= span_eq(name, from[i]);
                if (stale) {
                    c->cnt->value_infos_dropped++;
                    continue;
                }
                ct_pb_raw(gout, f.start, (size_t)(f.stop - f.start));
            } else {
                span nn2 = resolve(name, from, to, nr);
                ct_pb v = {0};
                ct_pb_rd_init(&vr, f.data, f.len);
                while (ct_pb_next(&vr, &vf)) {
                    if (vf.field == 1 && vf.wire == CT_PB_LEN) ct_pb_bytes(&v, 1, nn2.p, nn2.n);
                    else ct_pb_raw(&v, vf.start, (size_t)(vf.stop - vf.start));
                }
                ct_pb_msg(gout, 12, &v);
                ct_pb_free(&v);
            }
        } else {
            ct_pb_raw(gout, f.start, (size_t)(f.stop - f.start));
        }
    }
    free(nodes);
    free(from);
    free(to);
    if (gout->oom) fail(c, CT_ERR_NOMEM, "out of memory");
}

static ct_status run(const uint8_t *buf, size_t len, const char *base_dir, blob_sink *sink, uint8_t **out,
                     size_t *out_len, ct_sanitize_counts *counts, char *err, size_t errcap) {
    ct_sanitize_counts dummy;
    if (!counts) counts = &dummy;
    memset(counts, 0, sizeof *counts);
    *out = NULL;
    *out_len = 0;
    ctx c = {base_dir, sink, err, errcap, CT_OK, counts, NULL, 0, 0};
    ct_pb_rd r;
    ct_pb_field f;
    ct_pb_rd_init(&r, buf, len);
    int graphs = 0, fields = 0;
    while (ct_pb_next(&r, &f)) {
        fields++;
        if (f.field == 7 && f.wire == CT_PB_LEN) graphs++;
        if (f.field == 8 && f.wire == CT_PB_LEN) {
            ct_pb_rd orr;
            ct_pb_field of;
            span dom = {0};
            uint64_t ver = 0;
            ct_pb_rd_init(&orr, f.data, f.len);
            while (ct_pb_next(&orr, &of)) {
                if (of.field == 1 && of.wire == CT_PB_LEN) dom = (span){of.data, of.len};
                if (of.field == 2 && of.wire == CT_PB_VARINT) ver = of.v;
            }
            if (orr.bad) return fail(&c, CT_ERR_FORMAT, "malformed opset_import");
            int known = dom.n == 0 || span_is(dom, "ai.onnx") || span_is(dom, "ai.onnx.ml") ||
                        span_is(dom, "com.microsoft") || span_is(dom, "ai.onnx.preview.training") ||
                        span_is(dom, "pkg.onnxscript.torch_lib") || span_is(dom, "pkg.onnxscript.torch_lib.common");
            if (!known) return fail(&c, CT_ERR_UNSUPPORTED, "unknown opset domain in opset_import");
            if ((dom.n == 0 || span_is(dom, "ai.onnx")) && (ver < 1 || ver > 23))
                return fail(&c, CT_ERR_UNSUPPORTED, "default-domain opset version outside 1..23");
        }
    }
    if (r.bad) return fail(&c, CT_ERR_FORMAT, "not a protobuf ModelProto (malformed or truncated)");
    if (graphs != 1) return fail(&c, CT_ERR_FORMAT, "ModelProto must hold exactly one graph");
    ct_pb o = {0};
    ct_pb_rd_init(&r, buf, len);
    while (c.st == CT_OK && ct_pb_next(&r, &f)) {
        if (f.field == 7 && f.wire == CT_PB_LEN) {
            ct_pb gout = {0};
            sanitize_graph(&c, f.data, f.len, &gout);
            ct_pb_msg(&o, 7, &gout);
            ct_pb_free(&gout);
        } else {
            ct_pb_raw(&o, f.start, (size_t)(f.stop - f.start));
        }
    }
    free(c.fix);
    if (c.st == CT_OK && o.oom) fail(&c, CT_ERR_NOMEM, "out of memory");
    if (c.st != CT_OK) {
        ct_pb_free(&o);
        return c.st;
    }
    (void)fields;
    *out = o.data;
    *out_len = o.len;
    return CT_OK;
}

ct_status ct_onnx_sanitize_mem(const uint8_t *buf, size_t len, const char *base_dir, uint8_t **out,
                               size_t *out_len, ct_sanitize_counts *counts, char *err, size_t errcap) {
    if (!buf || !out || !out_len) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "onnx sanitize: NULL argument");
    return run(buf, len, base_dir, NULL, out, out_len, counts, err, errcap);
}

ct_status ct_onnx_sanitize(const char *in_path, const char *out_path, ct_sanitize_counts *counts, char *err,
                           size_t errcap) {
    if (!in_path || !out_path) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "onnx sanitize: NULL argument");
    ct_sanitize_counts local;
    if (!counts) counts = &local;
    FILE *f = fopen(in_path, "rb");
    if (!f) return ct_errf(err, errcap, CT_ERR_IO, "%s: cannot open: %s", in_path, strerror(errno));
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : (1u << 20);
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return ct_errf(err, errcap, CT_ERR_NOMEM, "%s: out of memory reading", in_path);
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int rerr = ferror(f);
    fclose(f);
    if (rerr) {
        free(buf);
        return ct_errf(err, errcap, CT_ERR_IO, "%s: read error", in_path);
    }
    char *dir = strdup(in_path);
    size_t ol = strlen(out_path);
    char *tmp = malloc(ol + 16), *dtmp = malloc(ol + 24), *dpath = malloc(ol + 16);
    if (!dir || !tmp || !dtmp || !dpath) {
        free(buf), free(dir), free(tmp), free(dtmp), free(dpath);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    }
    char *sl = strrchr(dir, '/');
    if (sl) *sl = 0;
    else strcpy(dir, ".");
    snprintf(tmp, ol + 16, "%s.tmp", out_path);
    snprintf(dpath, ol + 16, "%s.data", out_path);
    snprintf(dtmp, ol + 24, "%s.data.tmp", out_path);
    const char *bn = strrchr(dpath, '/');
    blob_sink sink = {fopen(dtmp, "wb"), 0, bn ? bn + 1 : dpath};
    ct_status st = CT_OK;
    uint8_t *o = NULL;
    size_t on = 0;
    if (!sink.f) st = ct_errf(err, errcap, CT_ERR_IO, "%s: cannot create: %s", dtmp, strerror(errno));
    if (st == CT_OK) st = run(buf, len, dir, &sink, &o, &on, counts, err, errcap);
    if (sink.f && fclose(sink.f) != 0 && st == CT_OK) st = ct_errf(err, errcap, CT_ERR_IO, "%s: write failed", dtmp);
    if (st == CT_OK) {
        FILE *fo = fopen(tmp, "wb");
        int ok = fo && fwrite(o, 1, on, fo) == on;
        if (fo && fclose(fo) != 0) ok = 0;
        if (!ok) st = ct_errf(err, errcap, CT_ERR_IO, "%s: write failed", tmp);
    }
    if (st == CT_OK) {
        unlink(dpath); /* the old blob goes first */
        if (counts->external_tensors > 0 && rename(dtmp, dpath) != 0)
            st = ct_errf(err, errcap, CT_ERR_IO, "%s: rename failed", dpath);
        if (st == CT_OK && rename(tmp, out_path) != 0) st = ct_errf(err, errcap, CT_ERR_IO, "%s: rename failed", out_path);
    }
    unlink(dtmp);
    if (st != CT_OK) unlink(tmp);
    free(o);
    free(buf);
    free(dir);
    free(tmp);
    free(dtmp);
    free(dpath);
    return st;
}
