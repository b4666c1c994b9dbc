/* ONNX export, C side: protobuf encoding known answers (bytes; the protoc --decode
   cross-check is test_export_protoc.c), FP16 rounding, the reader's truncation checks,
   and structural checks on the tiny model's exported step graphs (per-layer k_cache_i /
   v_cache_i inputs, no Gather/Slice in the v2 layout, static shapes) and codec windows.
   Numerical parity in ONNX Runtime is tests/onnx/test_onnx.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"
#include "export_tiny_graph.h"
#include "export/export.h"
#include "export/onnx_graph.h"
#include "export/pb.h"
#include "model/model_internal.h"
#include "test_models.h"

static int bytes_eq(const ct_pb *b, const uint8_t *want, size_t n) {
    return b->len == n && memcmp(b->data, want, n) == 0;
}

static void test_pb_known_answers(void) {
    ct_pb b = {0};
    ct_pb_varint(&b, 300);
    static const uint8_t v300[] = {0xac, 0x02};
    CHECK(bytes_eq(&b, v300, sizeof v300));
    ct_pb_free(&b);
    ct_pb_int(&b, 1, 150); /* the protobuf documentation's example */
    static const uint8_t f150[] = {0x08, 0x96, 0x01};
    CHECK(bytes_eq(&b, f150, sizeof f150));
    ct_pb_free(&b);
    ct_pb_str(&b, 2, "testing");
    static const uint8_t fstr[] = {0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'};
    CHECK(bytes_eq(&b, fstr, sizeof fstr));
    ct_pb_free(&b);
    ct_pb_int(&b, 3, -1);
    static const uint8_t fneg[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(bytes_eq(&b, fneg, sizeof fneg));
    ct_pb_free(&b);
    ct_pb_float(&b, 2, 1.0f);
    static const uint8_t ff[] = {0x15, 0x00, 0x00, 0x80, 0x3f};
    CHECK(bytes_eq(&b, ff, sizeof ff));
    ct_pb_free(&b);
    int64_t pk[3] = {3, 270, 86942};
    ct_pb_packed_ints(&b, 4, pk, 3);
    static const uint8_t fpk[] = {0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05};
    CHECK(bytes_eq(&b, fpk, sizeof fpk));
    /* reader: round trip, then every truncation of a nested message is detected */
    ct_pb m = {0};
    ct_pb_int(&m, 1, 150);
    ct_pb_msg(&m, 7, &b);
    ct_pb_str(&m, 9, "x");
    ct_pb_rd r;
    ct_pb_field f;
    ct_pb_rd_init(&r, m.data, m.len);
    int n = 0;
    while (ct_pb_next(&r, &f)) n++;
    CHECK(n == 3 && !r.bad);
    int all_bad = 1;
    for (size_t cut = 1; cut < m.len; cut++) {
        ct_pb_rd_init(&r, m.data, cut);
        while (ct_pb_next(&r, &f)) {
        }
        if (cut != 3 && cut != 3 + 2 + b.len && !r.bad) all_bad = 0; /* 3 and 13 end on a field boundary */
    }
    CHECK(all_bad);
    static const uint8_t group[] = {0x0b};
    ct_pb_rd_init(&r, group, 1);
    CHECK(!ct_pb_next(&r, &f) && r.bad);
    ct_pb_free(&b);
    ct_pb_free(&m);
}

static void test_f16(void) {
    CHECK(ct_og_f16(1.0f) == 0x3c00);
    CHECK(ct_og_f16(-2.0f) == 0xc000);
    CHECK(ct_og_f16(65504.0f) == 0x7bff);
    CHECK(ct_og_f16(65520.0f) == 0x7c00); /* rounds up to inf */
    CHECK(ct_og_f16(0.1f) == 0x2e66);
    CHECK(ct_og_f16(5.9604645e-8f) == 0x0001); /* smallest subnormal */
    CHECK(ct_og_f16(1e-9f) == 0x0000);
    CHECK(ct_og_f16(1.0f + 1.0f / 2048.0f) == 0x3c00); /* tie to even */
    CHECK(ct_og_f16(-16376.0f) == 0xf3ff);
}

static long file_size(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

static char *slurp(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *d = malloc((size_t)sz + 1);
    if (d && fread(d, 1, (size_t)sz, f) != (size_t)sz) {
        free(d);
        d = NULL;
    }
    fclose(f);
    *n = (size_t)sz;
    return d;
}

/* Graph summary from a written .onnx file. */
typedef struct {
    int ir, opset, nodes, gathers, slices, inits, inputs, outputs, dynamic_dims;
    char in_names[128][32];
    int n_in_names;
    long ops_ok;
} summary;

static int sfield(const ct_pb_field *f, const char *s) { return f->len == strlen(s) && !memcmp(f->data, s, f->len); }

static void value_info_dims(const uint8_t *p, size_t n, summary *s, int is_input) {
    ct_pb_rd r, r2, r3, r4, r5;
    ct_pb_field f, f2, f3, f4, f5;
    ct_pb_rd_init(&r, p, n);
    while (ct_pb_next(&r, &f)) {
        if (f.field == 1 && is_input && s->n_in_names < 128) {
            size_t l = f.len < 31 ? f.len : 31;
            memcpy(s->in_names[s->n_in_names], f.data, l);
            s->in_names[s->n_in_names++][l] = 0;
        }
        if (f.field != 2) continue;
        ct_pb_rd_init(&r2, f.data, f.len);
        while (ct_pb_next(&r2, &f2)) {
            if (f2.field != 1) continue;
            ct_pb_rd_init(&r3, f2.data, f2.len);
            while (ct_pb_next(&r3, &f3)) {
                if (f3.field != 2) continue;
                ct_pb_rd_init(&r4, f3.data, f3.len);
                while (ct_pb_next(&r4, &f4)) {
                    int has_value = 0;
                    ct_pb_rd_init(&r5, f4.data, f4.len);
                    while (ct_pb_next(&r5, &f5)) has_value |= f5.field == 1 && f5.wire == CT_PB_VARINT && f5.v > 0;
                    if (!has_value) s->dynamic_dims++;
                }
            }
        }
    }
}

static int summarize(const char *path, summary *s) {
    memset(s, 0, sizeof *s);
    size_t n;
    char *d = slurp(path, &n);
    if (!d) return 0;
    ct_pb_rd r, g, nd, op;
    ct_pb_field f, gf, nf, of;
    ct_pb_rd_init(&r, d, n);
    while (ct_pb_next(&r, &f)) {
        if (f.field == 1) s->ir = (int)f.v;
        if (f.field == 8) {
            ct_pb_rd_init(&op, f.data, f.len);
            while (ct_pb_next(&op, &of))
                if (of.field == 2) s->opset = (int)of.v;
        }
        if (f.field != 7) continue;
        ct_pb_rd_init(&g, f.data, f.len);
        while (ct_pb_next(&g, &gf)) {
            if (gf.field == 1) {
                s->nodes++;
                ct_pb_rd_init(&nd, gf.data, gf.len);
                while (ct_pb_next(&nd, &nf))
                    if (nf.field == 4) {
                        s->gathers += sfield(&nf, "Gather");
                        s->slices += sfield(&nf, "Slice");
                    }
            } else if (gf.field == 5) s->inits++;
            else if (gf.field == 11) {
                s->inputs++;
                value_info_dims(gf.data, gf.len, s, 1);
            } else if (gf.field == 12) {
                s->outputs++;
                value_info_dims(gf.data, gf.len, s, 0);
            }
        }
        s->ops_ok = !g.bad;
    }
    int ok = !r.bad;
    free(d);
    return ok;
}

static void test_small_graph(void) {
    ct_og g;
    char path[1024], err[256];
    int ext = -1;
    uint64_t fb = 0;
    CHECK(ct_test_write_tiny_add("test_export_add.onnx", path, sizeof path, &ext, &fb, err, sizeof err) == CT_OK);
    CHECK(ext == 0 && (long)fb == file_size(path));
    summary s;
    CHECK(summarize(path, &s));
    CHECK(s.ir == 8 && s.opset == 18 && s.nodes == 1 && s.inits == 1 && s.inputs == 1 && s.outputs == 1);
    /* exact bytes of the ModelProto prefix: ir_version 8, producer "codectalk" */
    size_t n;
    char *dat = slurp(path, &n);
    static const uint8_t head[] = {0x08, 0x08, 0x12, 0x09, 'c', 'o', 'd', 'e', 'c', 't', 'a', 'l', 'k'};
    CHECK(dat && n > sizeof head && memcmp(dat, head, sizeof head) == 0);
    free(dat);
    /* the protoc --decode cross-check is test_export_protoc */
    /* forced external data */
    ct_og_init_graph(&g, "tiny_add", CT_ONNX_FLOAT);
    float big[1024];
    for (int i = 0; i < 1024; i++) big[i] = (float)i;
    int64_t bd[2] = {1, 1024};
    ct_og_input(&g, "x", CT_ONNX_FLOAT, 2, bd);
    ct_og_op(&g, "Add", "y", "x", ct_og_f32(&g, "w", 2, bd, big), NULL);
    ct_og_output(&g, "y", CT_ONNX_FLOAT, 2, bd);
    CHECK(ct_og_write(&g, path, 1, 0, &ext, &fb, err, sizeof err) == CT_OK && ext == 1);
    ct_og_free(&g);
    char dp[1100];
    snprintf(dp, sizeof dp, "%s.data", path);
    CHECK(file_size(dp) == 4096);
    CHECK((long)fb == file_size(path) + file_size(dp));
}

static int has_input(const summary *s, const char *name) {
    for (int i = 0; i < s->n_in_names; i++)
        if (!strcmp(s->in_names[i], name)) return 1;
    return 0;
}

static void test_step_exports(void) {
    const char *dir = ct_test_make("tiny", "test_export_tiny", 3);
    CHECK(dir != NULL);
    if (!dir) return;
    char err[1024], out[1200];
    ct_model_params mp = ct_model_params_default();
    ct_model *m = NULL;
    CHECK(ct_model_load(dir, &mp, &m, err, sizeof err) == CT_OK);
    if (!m) return;
    snprintf(out, sizeof out, "%s/test_export_out", CT_BIN_DIR);
    mkdir(out, 0755);
    ct_export_step_opts o = {0};
    ct_export_result r;
    o.cache_len = 0;
    CHECK(ct_export_step(m, dir, &o, out, &r, err, sizeof err) == CT_ERR_INVALID_ARG);
    o.cache_len = 32;
    CHECKF(ct_export_step(m, dir, &o, out, &r, err, sizeof err) == CT_OK, "%s", err);
    summary s;
    CHECK(summarize(r.onnx_path, &s) && s.ops_ok);
    const int NL = m->cfg.talker.layers;
    CHECK(s.inputs == 4 + 2 * NL && s.outputs == 2 + 2 * NL);
    CHECK(has_input(&s, "x") && has_input(&s, "cos") && has_input(&s, "sin") && has_input(&s, "mask"));
    char nm[32];
    int per_layer = 1;
    for (int l = 0; l < NL; l++) {
        snprintf(nm, sizeof nm, "k_cache_%d", l);
        per_layer &= has_input(&s, nm);
        snprintf(nm, sizeof nm, "v_cache_%d", l);
        per_layer &= has_input(&s, nm);
    }
    CHECK(per_layer);
    CHECK(s.gathers == 0 && s.slices == 0); /* no layer-axis selection in v2 */
    CHECK(s.dynamic_dims == 0);
    CHECK(r.file_bytes == (uint64_t)file_size(r.onnx_path) && r.weight_bytes > 0 && r.weight_bytes < r.file_bytes);
    CHECK(file_size(r.json_path) > 0);
    /* the sanitizer is a no-op on our own graphs */
    size_t n;
    char *dat = slurp(r.onnx_path, &n);
    uint8_t *so = NULL;
    size_t sn = 0;
    ct_sanitize_counts c;
    CHECK(dat && ct_onnx_sanitize_mem((const uint8_t *)dat, n, NULL, &so, &sn, &c, err, sizeof err) == CT_OK);
    CHECK(c.nan_guards_removed == 0 && c.allowzero_cleared == 0 && c.scalar_axes_fixed == 0 && sn == n);
    CHECK(so && dat && memcmp(so, dat, n) == 0);
    free(so);
    /* truncations are rejected */
    int rejected = 1;
    for (size_t cut = 1; dat && cut < 4096 && cut < n; cut += 97) {
        so = NULL;
        if (ct_onnx_sanitize_mem((const uint8_t *)dat, cut, NULL, &so, &sn, &c, err, sizeof err) == CT_OK) rejected = 0;
        free(so);
    }
    CHECK(rejected);
    free(dat);
    /* v1 layout: stacked cache, Gather per layer */
    o.layout_v1 = 1;
    CHECK(ct_export_step(m, dir, &o, out, &r, err, sizeof err) == CT_OK);
    CHECK(summarize(r.onnx_path, &s) && s.gathers == 2 * NL && has_input(&s, "k_cache") && s.inputs == 6);
    /* predictor, fp16 */
    o.layout_v1 = 0;
    o.predictor = 1;
    o.fp16 = 1;
    o.cache_len = 16;
    CHECK(ct_export_step(m, dir, &o, out, &r, err, sizeof err) == CT_OK);
    CHECK(summarize(r.onnx_path, &s) && s.inputs == 4 + 2 * m->cfg.pred.layers && s.gathers == 0 && s.dynamic_dims == 0);
    ct_model_free(m);
    /* codec window */
    ct_export_codec_opts co = {0};
    co.context = 4;
    co.n_ramp = 1;
    co.ramp[0] = 2;
    ct_export_result cr;
    CHECKF(ct_export_codec(dir, &co, out, &cr, err, sizeof err) == CT_OK, "%s", err);
    CHECK(summarize(cr.onnx_path, &s) && s.inputs == 1 && s.outputs == 1 && s.dynamic_dims == 0);
    co.ramp[0] = 0;
    CHECK(ct_export_codec(dir, &co, out, &cr, err, sizeof err) == CT_ERR_INVALID_ARG);
}

int main(void) {
    test_pb_known_answers();
    test_f16();
    test_small_graph();
    test_step_exports();
    return ct_test_finish();
}
