/* ONNX graph builder and ModelProto serializer (see onnx_graph.h). Field numbers follow
   onnx/onnx.proto: ModelProto{ir_version 1, producer_name 2, producer_version 3, graph 7,
   opset_import 8}, GraphProto{node 1, name 2, initializer 5, doc_string 10, input 11,
   output 12}, NodeProto{input 1, output 2, name 3, op_type 4, attribute 5},
   AttributeProto{name 1, f 2, i 3, ints 8, type 20}, TensorProto{dims 1, data_type 2,
   name 8, raw_data 9, external_data 13, data_location 14}, ValueInfoProto{name 1, type 2},
   TypeProto{tensor_type 1}, TypeProto.Tensor{elem_type 1, shape 2},
   TensorShapeProto{dim 1}, Dimension{dim_value 1}. */
#include "export/onnx_graph.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint16_t ct_og_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x7fffffu;
    int exp = (int)((x >> 23) & 0xff);
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
    int e = exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into the exponent: fine */
    return (uint16_t)(sign | h);
}

ct_og_attr ct_og_ai(const char *name, int64_t v) {
    ct_og_attr a = {name, CT_OG_A_INT, v, 0.0f, NULL, 0};
    return a;
}
ct_og_attr ct_og_af(const char *name, float v) {
    ct_og_attr a = {name, CT_OG_A_FLOAT, 0, v, NULL, 0};
    return a;
}
ct_og_attr ct_og_aints(const char *name, const int64_t *v, int n) {
    ct_og_attr a = {name, CT_OG_A_INTS, 0, 0.0f, v, n};
    return a;
}

void ct_og_init_graph(ct_og *g, const char *name, int float_elem) {
    memset(g, 0, sizeof *g);
    snprintf(g->graph_name, sizeof g->graph_name, "%s", name ? name : "graph");
    g->float_elem = float_elem == CT_ONNX_FLOAT16 ? CT_ONNX_FLOAT16 : CT_ONNX_FLOAT;
}

void ct_og_free(ct_og *g) {
    ct_pb_free(&g->nodes);
    ct_pb_free(&g->inputs);
    ct_pb_free(&g->outputs);
    for (size_t i = 0; i < g->n_inits; i++) free(g->inits[i].data);
    free(g->inits);
    for (size_t i = 0; i < g->n_names; i++) free(g->names[i]);
    free(g->names);
    memset(g, 0, sizeof *g);
}

const char *ct_og_str(ct_og *g, const char *s) {
    if (g->n_names == g->cap_names) {
        size_t cap = g->cap_names ? g->cap_names * 2 : 256;
        char **n = realloc(g->names, cap * sizeof *n);
        if (!n) {
            g->oom = 1;
            return NULL;
        }
        g->names = n;
        g->cap_names = cap;
    }
    size_t len = strlen(s);
    char *d = malloc(len + 1);
    if (!d) {
        g->oom = 1;
        return NULL;
    }
    memcpy(d, s, len + 1);
    g->names[g->n_names++] = d;
    return d;
}

const char *ct_og_fresh(ct_og *g, const char *prefix) {
    char buf[96];
    snprintf(buf, sizeof buf, "%s_%ld", prefix, g->counter++);
    return ct_og_str(g, buf);
}

static void value_info(ct_pb *dst, int field, const char *name, int elem, int ndim, const int64_t *dims) {
    ct_pb shape = {0}, tt = {0}, ty = {0}, vi = {0};
    for (int i = 0; i < ndim; i++) {
        ct_pb dim = {0};
        ct_pb_int(&dim, 1, dims[i]);
        ct_pb_msg(&shape, 1, &dim);
        ct_pb_free(&dim);
    }
    ct_pb_int(&tt, 1, elem);
    ct_pb_msg(&tt, 2, &shape);
    ct_pb_msg(&ty, 1, &tt);
    ct_pb_str(&vi, 1, name);
    ct_pb_msg(&vi, 2, &ty);
    ct_pb_msg(dst, field, &vi);
    ct_pb_free(&shape);
    ct_pb_free(&tt);
    ct_pb_free(&ty);
    ct_pb_free(&vi);
}

void ct_og_input(ct_og *g, const char *name, int elem, int ndim, const int64_t *dims) {
    value_info(&g->inputs, 11, name, elem, ndim, dims);
}

void ct_og_output(ct_og *g, const char *name, int elem, int ndim, const int64_t *dims) {
    value_info(&g->outputs, 12, name, elem, ndim, dims);
}

const char *ct_og_node(ct_og *g, const char *op, const char *const *ins, int nin, const char **outs,
                       int nout, const ct_og_attr *attrs, int nattr) {
    ct_pb n = {0};
    for (int i = 0; i < nin; i++) ct_pb_str(&n, 1, ins[i] ? ins[i] : "");
    for (int i = 0; i < nout; i++) {
        if (!outs[i]) outs[i] = ct_og_fresh(g, op);
        if (!outs[i]) {
            ct_pb_free(&n);
            return "";
        }
        ct_pb_str(&n, 2, outs[i]);
    }
    char nm[96];
    snprintf(nm, sizeof nm, "%s_n%ld", op, g->n_nodes++);
    ct_pb_str(&n, 3, nm);
    ct_pb_str(&n, 4, op);
    for (int i = 0; i < nattr; i++) {
        ct_pb a = {0};
        ct_pb_str(&a, 1, attrs[i].name);
        switch (attrs[i].kind) {
        case CT_OG_A_INT:
            ct_pb_int(&a, 3, attrs[i].i);
            ct_pb_int(&a, 20, 2);
            break;
        case CT_OG_A_FLOAT:
            ct_pb_float(&a, 2, attrs[i].f);
            ct_pb_int(&a, 20, 1);
            break;
        case CT_OG_A_INTS:
            for (int j = 0; j < attrs[i].n; j++) ct_pb_int(&a, 8, attrs[i].ints[j]);
            ct_pb_int(&a, 20, 7);
            break;
        }
        ct_pb_msg(&n, 5, &a);
        ct_pb_free(&a);
    }
    ct_pb_msg(&g->nodes, 1, &n);
    if (n.oom || g->nodes.oom) g->oom = 1;
    ct_pb_free(&n);
    return outs[0];
}

const char *ct_og_opa(ct_og *g, const char *op, const char *out, const char *a, const char *b,
                      const ct_og_attr *attrs, int nattr) {
    const char *ins[2] = {a, b};
    const char *outs[1] = {out ? ct_og_str(g, out) : NULL};
    return ct_og_node(g, op, ins, b ? 2 : 1, outs, 1, attrs, nattr);
}

const char *ct_og_op(ct_og *g, const char *op, const char *out, const char *a, const char *b,
                     const char *c) {
    const char *ins[3] = {a, b, c};
    int nin = c ? 3 : b ? 2 : 1;
    const char *outs[1] = {out ? ct_og_str(g, out) : NULL};
    return ct_og_node(g, op, ins, nin, outs, 1, NULL, 0);
}

const char *ct_og_take(ct_og *g, const char *name, int elem, int ndim, const int64_t *dims, void *data,
                       size_t nbytes) {
    if (!data) {
        g->oom = 1;
        return "";
    }
    if (g->n_inits == g->cap_inits) {
        size_t cap = g->cap_inits ? g->cap_inits * 2 : 64;
        ct_og_init *n = realloc(g->inits, cap * sizeof *n);
        if (!n) {
            free(data);
            g->oom = 1;
            return "";
        }
        g->inits = n;
        g->cap_inits = cap;
    }
    const char *nm = name ? ct_og_str(g, name) : ct_og_fresh(g, "c");
    if (!nm) {
        free(data);
        return "";
    }
    ct_og_init *t = &g->inits[g->n_inits++];
    memset(t, 0, sizeof *t);
    t->name = (char *)nm;
    t->elem = elem;
    t->ndim = ndim;
    for (int i = 0; i < ndim && i < CT_OG_MAX_DIMS; i++) t->dims[i] = dims[i];
    t->data = data;
    t->nbytes = nbytes;
    g->weight_bytes += nbytes;
    return nm;
}

static size_t numel(int ndim, const int64_t *dims) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)dims[i];
    return n;
}

static const char *add_float(ct_og *g, const char *name, int ndim, const int64_t *dims, const float *v,
                             int elem) {
    size_t n = numel(ndim, dims);
    if (elem == CT_ONNX_FLOAT16) {
        uint16_t *d = malloc(n * 2 + 1);
        if (d)
            for (size_t i = 0; i < n; i++) d[i] = ct_og_f16(v[i]);
        return ct_og_take(g, name, elem, ndim, dims, d, n * 2);
    }
    float *d = malloc(n * 4 + 1);
    if (d) memcpy(d, v, n * 4);
    return ct_og_take(g, name, CT_ONNX_FLOAT, ndim, dims, d, n * 4);
}

const char *ct_og_f32(ct_og *g, const char *name, int ndim, const int64_t *dims, const float *v) {
    return add_float(g, name, ndim, dims, v, g->float_elem);
}

const char *ct_og_f32_exact(ct_og *g, const char *name, int ndim, const int64_t *dims, const float *v) {
    return add_float(g, name, ndim, dims, v, CT_ONNX_FLOAT);
}

const char *ct_og_i64(ct_og *g, const char *name, int ndim, const int64_t *dims, const int64_t *v) {
    size_t n = numel(ndim, dims);
    int64_t *d = malloc(n * 8 + 1);
    if (d) memcpy(d, v, n * 8);
    return ct_og_take(g, name, CT_ONNX_INT64, ndim, dims, d, n * 8);
}

const char *ct_og_ints(ct_og *g, int n, const int64_t *v) {
    int64_t d = n;
    return ct_og_i64(g, NULL, 1, &d, v);
}

const char *ct_og_scalar(ct_og *g, float v) {
    int64_t d = 1;
    return ct_og_f32(g, NULL, 1, &d, &v);
}

/* ---- serialization ---------------------------------------------------------------- */

typedef struct {
    ct_pb head;      /* TensorProto fields except raw_data */
    int external;
    uint64_t offset; /* in the .data blob */
    size_t tlen;     /* TensorProto length */
} tensor_plan;

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void ext_entry(ct_pb *b, const char *k, const char *v) {
    ct_pb e = {0};
    ct_pb_str(&e, 1, k);
    ct_pb_str(&e, 2, v);
    ct_pb_msg(b, 13, &e);
    ct_pb_free(&e);
}

static int write_all(FILE *f, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, f) == n; }

static int write_varint(FILE *f, uint64_t v) {
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    return write_all(f, t, n);
}

ct_status ct_og_write(const ct_og *g, const char *path, int external, uint64_t ext_limit, int *used_external,
                      uint64_t *file_bytes, char *err, size_t errcap) {
    if (g->oom) return ct_errf(err, errcap, CT_ERR_NOMEM, "onnx writer: out of memory building the graph");
    if (!ext_limit) ext_limit = (2ull << 30) - (64ull << 20);
    ct_pb inner = {0}, model = {0}, ops = {0};
    ct_pb_raw(&inner, g->nodes.data, g->nodes.len);
    ct_pb_str(&inner, 2, g->graph_name);
    if (g->doc[0]) ct_pb_str(&inner, 10, g->doc);
    ct_pb_raw(&inner, g->inputs.data, g->inputs.len);
    ct_pb_raw(&inner, g->outputs.data, g->outputs.len);
    uint64_t inline_total = inner.len;
    for (size_t i = 0; i < g->n_inits; i++) inline_total += g->inits[i].nbytes + 64;
    if (!external && inline_total > ext_limit) external = 1;
    if (used_external) *used_external = external;

    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16), *dpath = malloc(plen + 16), *dtmp = malloc(plen + 24);
    tensor_plan *pl = calloc(g->n_inits ? g->n_inits : 1, sizeof *pl);
    ct_status st = CT_OK;
    FILE *f = NULL, *fd = NULL;
    if (!tmp || !dpath || !dtmp || !pl) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "onnx writer: out of memory");
        goto done;
    }
    snprintf(tmp, plen + 16, "%s.tmp", path);
    snprintf(dpath, plen + 16, "%s.data", path);
    snprintf(dtmp, plen + 24, "%s.data.tmp", path);
    uint64_t off = 0, graph_len = inner.len;
    for (size_t i = 0; i < g->n_inits; i++) {
        const ct_og_init *t = &g->inits[i];
        tensor_plan *p = &pl[i];
        for (int d = 0; d < t->ndim; d++) ct_pb_int(&p->head, 1, t->dims[d]);
        ct_pb_int(&p->head, 2, t->elem);
        ct_pb_str(&p->head, 8, t->name);
        p->external = external && t->nbytes >= 1024;
        if (p->external) {
            off = (off + 4095) & ~(uint64_t)4095;
            p->offset = off;
            off += t->nbytes;
            char num[32];
            ext_entry(&p->head, "location", base_name(dpath));
            snprintf(num, sizeof num, "%llu", (unsigned long long)p->offset);
            ext_entry(&p->head, "offset", num);
            snprintf(num, sizeof num, "%llu", (unsigned long long)t->nbytes);
            ext_entry(&p->head, "length", num);
            ct_pb_int(&p->head, 14, 1);
            p->tlen = p->head.len;
        } else {
            p->tlen = p->head.len + 1 + ct_pb_varint_len(t->nbytes) + t->nbytes;
        }
        if (p->head.oom) {
            st = ct_errf(err, errcap, CT_ERR_NOMEM, "onnx writer: out of memory");
            goto done;
        }
        graph_len += 1 + ct_pb_varint_len(p->tlen) + p->tlen;
    }
    ct_pb_int(&model, 1, 8); /* IR version 8 (opset 18) */
    ct_pb_str(&model, 2, "codectalk");
    ct_pb_str(&model, 3, "1");
    ct_pb_str(&ops, 1, "");
    ct_pb_int(&ops, 2, 18);
    ct_pb_msg(&model, 8, &ops);
    ct_pb_tag(&model, 7, CT_PB_LEN);
    ct_pb_varint(&model, graph_len);
    if (inner.oom || model.oom) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "onnx writer: out of memory");
        goto done;
    }
    f = fopen(tmp, "wb");
    if (!f) {
        st = ct_errf(err, errcap, CT_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        goto done;
    }
    if (external) {
        fd = fopen(dtmp, "wb");
        if (!fd) {
            st = ct_errf(err, errcap, CT_ERR_IO, "%s: cannot create: %s", dtmp, strerror(errno));
            goto done;
        }
    }
    int ok = write_all(f, model.data, model.len) && write_all(f, inner.data, inner.len);
    uint64_t dpos = 0;
    static const uint8_t zeros[4096];
    for (size_t i = 0; ok && i < g->n_inits; i++) {
        const ct_og_init *t = &g->inits[i];
        const tensor_plan *p = &pl[i];
        ok = write_varint(f, (5u << 3) | CT_PB_LEN) && write_varint(f, p->tlen) &&
             write_all(f, p->head.data, p->head.len);
        if (!ok) break;
        if (p->external) {
            ok = write_all(fd, zeros, (size_t)(p->offset - dpos)) && write_all(fd, t->data, t->nbytes);
            dpos = p->offset + t->nbytes;
        } else {
            ok = write_varint(f, (9u << 3) | CT_PB_LEN) && write_varint(f, t->nbytes) &&
                 write_all(f, t->data, t->nbytes);
        }
    }
    if (fclose(f) != 0) ok = 0;
    f = NULL;
    if (fd && fclose(fd) != 0) ok = 0;
    fd = NULL;
    if (!ok) {
        st = ct_errf(err, errcap, CT_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        goto done;
    }
    if (external && rename(dtmp, dpath) != 0) {
        st = ct_errf(err, errcap, CT_ERR_IO, "%s: rename failed: %s", dpath, strerror(errno));
        goto done;
    }
    if (!external) unlink(dpath); /* a stale blob from an earlier external export */
    if (rename(tmp, path) != 0) {
        st = ct_errf(err, errcap, CT_ERR_IO, "%s: rename failed: %s", path, strerror(errno));
        goto done;
    }
    if (file_bytes) {
        uint64_t fb = model.len + graph_len;
        *file_bytes = fb + (external ? dpos : 0);
    }
done:
    if (f) fclose(f);
    if (fd) fclose(fd);
    if (st != CT_OK && tmp) {
        unlink(tmp);
        if (dtmp) unlink(dtmp);
    }
    if (pl)
        for (size_t i = 0; i < g->n_inits; i++) ct_pb_free(&pl[i].head);
    free(pl);
    free(tmp);
    free(dpath);
    free(dtmp);
    ct_pb_free(&inner);
    ct_pb_free(&model);
    ct_pb_free(&ops);
    return st;
}
