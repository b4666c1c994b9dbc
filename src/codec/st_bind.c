/* Loading helpers shared by the speech-tokenizer decoder and encoder loaders (st_bind.h). */
#include "codec/st_bind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------
 * Allocation list */

static int allocs_push(ct_allocs *a, float *p) {
    if (a->n == a->cap) {
        int nc = a->cap ? a->cap * 2 : 256;
        float **na = realloc(a->p, (size_t)nc * sizeof *na);
        if (!na) return -1;
        a->p = na;
        a->cap = nc;
    }
    a->p[a->n++] = p;
    return 0;
}

float *ct_allocs_floats(ct_allocs *a, size_t n) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (p && allocs_push(a, p) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

int ct_allocs_packed(ct_allocs *a, ct_cv_packed *p, int k, int cin, int cout) {
    if (ct_cv_packed_alloc(p, k, cin, cout) != 0) return -1;
    if (allocs_push(a, p->w) != 0) {
        ct_cv_packed_free(p);
        return -1;
    }
    return 0;
}

void ct_allocs_free(ct_allocs *a) {
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    free(a->p);
    a->p = NULL;
    a->n = a->cap = 0;
}

/* ---------------------------------------------------------------------------------------
 * Config */

ct_status ct_cfg_int(json_t *o, const char *section, const char *key, int lo, int hi, int *out,
                     const char *path, char *err, size_t errcap) {
    json_t *v = json_object_get(o, key);
    if (!v) return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: %s.%s missing", path, section, key);
    if (!json_is_integer(v))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: %s.%s is not an integer", path, section, key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: %s.%s = %lld outside [%d, %d]", path, section, key,
                       (long long)x, lo, hi);
    *out = (int)x;
    return CT_OK;
}

ct_status ct_cfg_real(json_t *o, const char *section, const char *key, double lo, double hi,
                      double *out, const char *path, char *err, size_t errcap) {
    json_t *v = json_object_get(o, key);
    if (!v) return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: %s.%s missing", path, section, key);
    if (!json_is_number(v))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: %s.%s is not a number", path, section, key);
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi))
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: %s.%s = %g outside [%g, %g]", path, section, key, x,
                       lo, hi);
    *out = x;
    return CT_OK;
}

ct_status ct_cfg_int_array(json_t *o, const char *section, const char *key, int maxn, int lo, int hi,
                           int *vals, int *n, const char *path, char *err, size_t errcap) {
    json_t *a = json_object_get(o, key);
    if (!a || !json_is_array(a))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: %s.%s missing or not an array", path, section, key);
    size_t len = json_array_size(a);
    if (len < 1 || len > (size_t)maxn)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: %s.%s has %zu entries (1..%d supported)", path,
                       section, key, len, maxn);
    for (size_t i = 0; i < len; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
            return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: %s.%s[%zu] not an integer in [%d, %d]", path,
                           section, key, i, lo, hi);
        vals[i] = (int)json_integer_value(v);
    }
    *n = (int)len;
    return CT_OK;
}

/* ---------------------------------------------------------------------------------------
 * Tensor binding */

ct_status ct_bind_nomem(ct_binder *b, const char *name) {
    return ct_errf(b->err, b->errcap, CT_ERR_NOMEM, "%s: out of memory loading %s", b->what, name);
}

ct_status ct_bind_get(ct_binder *b, const char *name, int ndim, const int64_t *shape, const float **out) {
    const ct_st_tensor *t = ct_st_find(b->f, name);
    if (!t) return ct_errf(b->err, b->errcap, CT_ERR_FORMAT, "%s: tensor %s missing", b->path, name);
    char got[96], want[96];
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same)
        return ct_errf(b->err, b->errcap, CT_ERR_FORMAT, "%s: tensor %s has shape %s, config expects %s", b->path,
                       name, ct_st_shape_str(t->shape, t->ndim, got, sizeof got),
                       ct_st_shape_str(shape, ndim, want, sizeof want));
    if (t->dtype != CT_DT_F32)
        return ct_errf(b->err, b->errcap, CT_ERR_FORMAT, "%s: tensor %s has dtype %s, expected F32", b->path, name,
                       ct_dtype_name(t->dtype));
    *out = (const float *)t->data;
    return CT_OK;
}

#define TRY(x)                                                                       \
    do {                                                                             \
        ct_status st_ = (x);                                                         \
        if (st_ != CT_OK) return st_;                                                \
    } while (0)

ct_status ct_bind_vec(ct_binder *b, const char *name, int n, float **dst) {
    int64_t sh[1] = {n};
    const float *src;
    TRY(ct_bind_get(b, name, 1, sh, &src));
    float *p = ct_allocs_floats(b->al, (size_t)n);
    if (!p) return ct_bind_nomem(b, name);
    memcpy(p, src, (size_t)n * sizeof(float));
    *dst = p;
    return CT_OK;
}

ct_status ct_bind_conv(ct_binder *b, const char *name, int cout, int cin, int k, ct_cv_packed *dst) {
    int64_t sh[3] = {cout, cin, k};
    const float *src;
    TRY(ct_bind_get(b, name, 3, sh, &src));
    if (ct_allocs_packed(b->al, dst, k, cin, cout) != 0) return ct_bind_nomem(b, name);
    ct_cv_pack_conv(dst, src);
    return CT_OK;
}

ct_status ct_bind_tconv(ct_binder *b, const char *name, int cin, int cout, int k, ct_cv_packed *dst) {
    int64_t sh[3] = {cin, cout, k};
    const float *src;
    TRY(ct_bind_get(b, name, 3, sh, &src));
    if (ct_allocs_packed(b->al, dst, k, cin, cout) != 0) return ct_bind_nomem(b, name);
    ct_cv_pack_tconv(dst, src);
    return CT_OK;
}

ct_status ct_bind_linear(ct_binder *b, const char *name, int cout, int cin, ct_cv_packed *dst) {
    int64_t sh[2] = {cout, cin};
    const float *src;
    TRY(ct_bind_get(b, name, 2, sh, &src));
    if (ct_allocs_packed(b->al, dst, 1, cin, cout) != 0) return ct_bind_nomem(b, name);
    ct_cv_pack_linear(dst, src);
    return CT_OK;
}
