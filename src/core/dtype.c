/* Dtype names and sizes. */
#include "core/dtype.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[CT_DT_COUNT] = {
    [CT_DT_F32] = {"F32", 4}, [CT_DT_F16] = {"F16", 2},  [CT_DT_BF16] = {"BF16", 2},
    [CT_DT_I32] = {"I32", 4}, [CT_DT_I64] = {"I64", 8},  [CT_DT_U8] = {"U8", 1},
    [CT_DT_I8] = {"I8", 1},   [CT_DT_F64] = {"F64", 8},  [CT_DT_BOOL] = {"BOOL", 1},
};

size_t ct_dtype_size(ct_dtype dt) {
    return (unsigned)dt < CT_DT_COUNT ? dtype_info[dt].size : 0;
}

const char *ct_dtype_name(ct_dtype dt) {
    return (unsigned)dt < CT_DT_COUNT ? dtype_info[dt].name : "?";
}

int ct_dtype_parse(const char *s, ct_dtype *out) {
    for (int i = 0; i < CT_DT_COUNT; i++) {
        if (strcmp(s, dtype_info[i].name) == 0) {
            *out = (ct_dtype)i;
            return 1;
        }
    }
    return 0;
}
