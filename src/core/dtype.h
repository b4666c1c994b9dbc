/* Element types of weights and tensors: the safetensors dtypes, shared by the file readers
   (io/) and the kernels that read weights in their stored format (kernels/). */
#ifndef CT_DTYPE_H
#define CT_DTYPE_H

#include <stddef.h>

typedef enum {
    CT_DT_F32 = 0,
    CT_DT_F16 = 1,
    CT_DT_BF16 = 2,
    CT_DT_I32 = 3,
    CT_DT_I64 = 4,
    CT_DT_U8 = 5,
    CT_DT_I8 = 6,
    CT_DT_F64 = 7,
    CT_DT_BOOL = 8,
    CT_DT_COUNT
} ct_dtype;

/* Bytes per element of a dtype (0 for one out of range). */
size_t ct_dtype_size(ct_dtype dt);
/* Safetensors dtype string ("F32", "BF16", ...; "?" for one out of range). */
const char *ct_dtype_name(ct_dtype dt);
/* The dtype whose safetensors string is s into *out; returns 1, or 0 when s names none. */
int ct_dtype_parse(const char *s, ct_dtype *out);

#endif
