/* Taking a caller's params struct by its size field. */
#include "core/params.h"

#include <string.h>

ct_status ct_params_take(void *dst, size_t dst_size, const void *src, size_t src_size,
                         const char *what, char *err, size_t errcap) {
    if (!what) what = "params";
    if (!dst || dst_size < sizeof(size_t))
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "%s: no room for the size field", what);
    if (!src) return CT_OK;
    if (src_size == 0) src_size = dst_size;
    if (src_size < sizeof(size_t))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "%s: size %zu is smaller than its size field", what,
                       src_size);
    if (src_size > dst_size) {
        const unsigned char *extra = (const unsigned char *)src + dst_size;
        for (size_t i = 0; i < src_size - dst_size; i++)
            if (extra[i])
                return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "%s: params from a newer codectalk (size %zu, this "
                               "library knows %zu bytes; byte %zu is set)", what, src_size, dst_size, dst_size + i);
    }
    memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return CT_OK;
}
