/* `codectalk quantize -m DIR --weights int8|int4|mixed -o OUT.safetensors`: writes the model's
   transformer matrices in the chosen load-time format ahead of time. Every tensor of
   DIR/model.safetensors is copied; each quantized matrix is stored as I8 [rows, cols] (INT8)
   or U8 [rows, cols/2] (INT4, layout on ct_mat in kernels/ops.h) with its F32 scales in
   "<name>.scale" ([rows] or [rows, cols/32]). Put OUT next to config.json etc. as
   model.safetensors to load it; the loader checks every scales tensor by name and shape.
   --weight-panels also stores the INT8/INT4 weight panels of this CPU's kernels
   (CT_PANELS_TENSOR, first in the file and 64-byte aligned, its layout in __metadata__), which
   a load with ct_model_params.weight_panels then maps instead of packing. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "kernels/cpu.h"
#include "model/model_internal.h"
#include "model/wcache.h"

/* Entry point of `codectalk quantize` (argv after the command name). */
int ct_cli_quantize(int argc, char **argv);

static const ct_mat *lookup(const ct_qmat_ref *e, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(e[i].name, name)) return e[i].w->dtype == CT_DT_I8 || e[i].w->dtype == CT_DT_U8 ? e[i].w : NULL;
    return NULL;
}

static size_t scale_bytes(const ct_mat *w) {
    return (w->dtype == CT_DT_I8 ? (size_t)w->rows : (size_t)w->rows * (w->cols / CT_Q4_GROUP)) * sizeof(float);
}

int ct_cli_quantize(int argc, char **argv) {
    const char *model = NULL, *weights = NULL, *out = NULL, *tok = NULL;
    int panels = 0;
    ct_opt opts[] = {{"model", 'm', CT_OPT_STR, &model, "DIR", "model directory"},
                     {"tokenizer", 0, CT_OPT_STR, &tok, "DIR", "tokenizer files when DIR has none"},
                     {"weights", 0, CT_OPT_STR, &weights, "FMT", "int8, int4 or mixed"},
                     {"out", 'o', CT_OPT_STR, &out, "FILE", "output .safetensors"},
                     {"weight-panels", 0, CT_OPT_FLAG, &panels, NULL,
                      "also store this CPU's INT8/INT4 weight panels (AVX-512 VNNI), mapped by loads that use them"},
                     {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk quantize -m DIR --weights int8|int4|mixed -o OUT.safetensors "
                                            "[--weight-panels]\n"
                                            "Writes DIR/model.safetensors with quantized transformer matrices.");
    if (r) return r < 0 ? 2 : 0;
    if (!model || !weights || !out) {
        fprintf(stderr, "error: -m DIR, --weights FMT and -o FILE are required\n");
        return 2;
    }
    if (strcmp(weights, "int8") && strcmp(weights, "int4") && strcmp(weights, "mixed")) {
        fprintf(stderr, "error: --weights must be int8, int4 or mixed\n");
        return 2;
    }
    char err[1024];
    ct_model_params mp = ct_model_params_default();
    mp.weights = weights;
    mp.tokenizer_dir = tok;
    mp.weight_panels = panels;
    ct_model *m = NULL;
    if (ct_model_load(model, &mp, &m, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    if (panels && !m->pan_bytes) {
        fprintf(stderr, "error: --weight-panels: this CPU's kernels (%s) have no weight panels; they are "
                        "packed for the AVX-512 VNNI kernel\n", ct_kernels()->id);
        ct_model_free(m);
        return 1;
    }
    int n = ct_model_qmats(m, NULL, 0);
    ct_qmat_ref *e = calloc((size_t)n, sizeof *e);
    json_t *h = json_object();
    int rc = 1;
    FILE *f = NULL;
    char tmp_path[4200] = "";
    if (!e || !h) goto done;
    ct_model_qmats(m, e, n);
    /* header: the weight panels first (when asked for), every source tensor, quantized ones
       replaced, plus their scales (a source's own panels belong to its matrices: dropped) */
    size_t off = 0, nt = ct_st_count(m->st), nw = panels ? 1 : 0; /* nw: tensors written, scales apart */
    if (panels) {
        json_object_set_new(h, CT_PANELS_TENSOR, json_pack("{s:s,s:[I],s:[I,I]}", "dtype", "U8", "shape",
                                                           (json_int_t)m->pan_bytes, "data_offsets", (json_int_t)0,
                                                           (json_int_t)m->pan_bytes));
        json_object_set_new(h, "__metadata__", json_pack("{s:s,s:s}", "format", "pt", CT_PANELS_META_LAYOUT,
                                                         ct_kernels()->xq_pan_layout));
        off = m->pan_bytes;
    }
    for (size_t i = 0; i < nt; i++) {
        const ct_st_tensor *t = ct_st_at(m->st, i);
        if (!strcmp(t->name, CT_PANELS_TENSOR)) continue;
        nw++;
        const ct_mat *w = lookup(e, n, t->name);
        json_t *sh = json_array();
        size_t bytes = t->nbytes;
        const char *dt = ct_dtype_name(t->dtype);
        if (w) {
            json_array_append_new(sh, json_integer(w->rows));
            json_array_append_new(sh, json_integer(w->dtype == CT_DT_I8 ? w->cols : w->cols / 2));
            bytes = w->dtype == CT_DT_I8 ? (size_t)w->rows * w->cols : (size_t)w->rows * w->cols / 2;
            dt = w->dtype == CT_DT_I8 ? "I8" : "U8";
        } else {
            for (int d = 0; d < t->ndim; d++) json_array_append_new(sh, json_integer(t->shape[d]));
        }
        json_object_set_new(h, t->name, json_pack("{s:s,s:o,s:[I,I]}", "dtype", dt, "shape", sh, "data_offsets",
                                                  (json_int_t)off, (json_int_t)(off + bytes)));
        off += bytes;
        if (w) {
            char sn[200];
            snprintf(sn, sizeof sn, "%s.scale", t->name);
            json_t *ss = w->dtype == CT_DT_I8 ? json_pack("[I]", (json_int_t)w->rows)
                                              : json_pack("[I,I]", (json_int_t)w->rows, (json_int_t)(w->cols / CT_Q4_GROUP));
            size_t sb = scale_bytes(w);
            json_object_set_new(h, sn, json_pack("{s:s,s:o,s:[I,I]}", "dtype", "F32", "shape", ss, "data_offsets",
                                                 (json_int_t)off, (json_int_t)(off + sb)));
            off += sb;
        }
    }
    char *js = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!js) goto done;
    size_t hl = strlen(js), pad = (64 - (8 + hl) % 64) % 64; /* data 64-byte aligned in the file */
    uint64_t len = hl + pad;
    /* a regular or new file: written to OUT.partial and renamed when complete */
    int in_place = ct_cli_out_in_place(out);
    if (in_place < 0) {
        free(js);
        goto done;
    }
    if (!in_place) snprintf(tmp_path, sizeof tmp_path, "%s.partial", out);
    f = fopen(in_place ? out : tmp_path, "wb");
    if (!f) {
        fprintf(stderr, "error: cannot write '%s': %s\n", in_place ? out : tmp_path, strerror(errno));
        tmp_path[0] = 0;
        free(js);
        goto done;
    }
    int ok = fwrite(&len, 8, 1, f) == 1 && fwrite(js, 1, hl, f) == hl;
    for (size_t i = 0; i < pad; i++) ok &= fputc(' ', f) != EOF;
    free(js);
    size_t nq = 0;
    if (panels) ok &= fwrite(m->pan_base, 1, m->pan_bytes, f) == m->pan_bytes;
    for (size_t i = 0; i < nt && ok; i++) {
        const ct_st_tensor *t = ct_st_at(m->st, i);
        if (!strcmp(t->name, CT_PANELS_TENSOR)) continue;
        const ct_mat *w = lookup(e, n, t->name);
        if (w) {
            size_t bytes = w->dtype == CT_DT_I8 ? (size_t)w->rows * w->cols : (size_t)w->rows * w->cols / 2;
            ok &= fwrite(w->data, 1, bytes, f) == bytes;
            ok &= fwrite(w->scales, 1, scale_bytes(w), f) == scale_bytes(w);
            nq++;
        } else {
            ok &= fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
        }
    }
    errno = 0;
    ok &= fclose(f) == 0;
    f = NULL;
    if (!ok) {
        fprintf(stderr, "error: writing '%s' failed: %s\n", out, errno == ENOSPC ? "no space left on device"
                                                                 : errno ? strerror(errno) : "write error");
        goto done;
    }
    if (tmp_path[0] && rename(tmp_path, out) != 0) {
        fprintf(stderr, "error: cannot rename '%s' to '%s': %s\n", tmp_path, out, strerror(errno));
        goto done;
    }
    tmp_path[0] = 0;
    printf("wrote %s: %zu tensors, %zu quantized (%s), %.1f MB of data", out, nw, nq, weights, (double)off / 1e6);
    if (panels) printf(", %.1f MiB of weight panels (layout %s)", (double)m->pan_bytes / 1048576.0, ct_kernels()->xq_pan_layout);
    printf("\n");
    rc = 0;
done:
    if (f) fclose(f);
    if (tmp_path[0]) remove(tmp_path); /* never a half-written checkpoint */
    json_decref(h);
    free(e);
    ct_model_free(m);
    return rc;
}
