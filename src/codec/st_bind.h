/* Loading helpers shared by the speech-tokenizer decoder and encoder loaders: range-checked
 * reads of speech_tokenizer/config.json sections, and binding of F32 safetensors tensors
 * (name, shape and dtype checked, messages naming the tensor and both shapes) into owned
 * copies or conv panels, every allocation recorded in a ct_allocs list. */
#ifndef CT_CODEC_ST_BIND_H
#define CT_CODEC_ST_BIND_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "codectalk.h"
#include "io/safetensors.h"
#include "kernels/conv.h"

/* Every float allocation of a loaded model, freed together. */
typedef struct {
    float **p;
    int n, cap;
} ct_allocs;

/* n zeroed floats recorded in a (NULL when out of memory). */
float *ct_allocs_floats(ct_allocs *a, size_t n);
/* ct_cv_packed_alloc recorded in a; 0 or -1 when out of memory. */
int ct_allocs_packed(ct_allocs *a, ct_cv_packed *p, int k, int cin, int cout);
void ct_allocs_free(ct_allocs *a);

/* Config reads: section.key must exist and lie in [lo, hi] (CT_ERR_FORMAT when missing or
 * mistyped, CT_ERR_UNSUPPORTED when out of range); messages name path, section and key. */
ct_status ct_cfg_int(json_t *o, const char *section, const char *key, int lo, int hi, int *out,
                     const char *path, char *err, size_t errcap);
ct_status ct_cfg_real(json_t *o, const char *section, const char *key, double lo, double hi,
                      double *out, const char *path, char *err, size_t errcap);
/* An integer array of 1..maxn entries, each in [lo, hi]; *n gets the count. */
ct_status ct_cfg_int_array(json_t *o, const char *section, const char *key, int maxn, int lo, int hi,
                           int *vals, int *n, const char *path, char *err, size_t errcap);

/* Tensor binding from an open file; allocations go to al. what names the component in
 * out-of-memory messages ("codec", "speech encoder"). */
typedef struct {
    ct_allocs *al;
    ct_st_file *f;
    const char *path;
    const char *what;
    char *err;
    size_t errcap;
} ct_binder;

/* The F32 tensor name of exactly shape[ndim] (data pointer into the mapping). */
ct_status ct_bind_get(ct_binder *b, const char *name, int ndim, const int64_t *shape, const float **out);
/* Copy of a [n] vector. */
ct_status ct_bind_vec(ct_binder *b, const char *name, int n, float **dst);
/* Conv1d weight [cout][cin][k] into panels. */
ct_status ct_bind_conv(ct_binder *b, const char *name, int cout, int cin, int k, ct_cv_packed *dst);
/* ConvTranspose1d weight [cin][cout][k] into panels. */
ct_status ct_bind_tconv(ct_binder *b, const char *name, int cin, int cout, int k, ct_cv_packed *dst);
/* Linear weight [cout][cin] into panels (k = 1). */
ct_status ct_bind_linear(ct_binder *b, const char *name, int cout, int cin, ct_cv_packed *dst);
/* CT_ERR_NOMEM naming the tensor. */
ct_status ct_bind_nomem(ct_binder *b, const char *name);

#endif
