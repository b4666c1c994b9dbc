/* The `size` rule of the public params structs (codectalk.h, "Params structs"): every such
   struct starts with `size_t size`, and the library takes the first `size` bytes of the
   caller's struct over its own defaults. */
#ifndef CT_PARAMS_H
#define CT_PARAMS_H

#include <stddef.h>

#include "core/status.h"

/* dst (dst_size bytes, a params struct that starts with size_t size) holds the library's
   defaults; src (may be NULL: keep the defaults) is the caller's struct and src_size its size
   field. src_size 0 means the whole struct (callers that never set size); otherwise src_size
   must be at least sizeof(size_t). The first min(src_size, dst_size) bytes of src are copied
   over dst, so fields a smaller (older) caller's struct lacks keep their defaults. A larger
   (newer) struct is accepted only when every byte beyond dst_size is zero; else
   CT_ERR_INVALID_ARG ("params from a newer codectalk") with the message in err, naming `what`
   (the struct's name). On success dst's size field is dst_size. On failure dst is unchanged. */
ct_status ct_params_take(void *dst, size_t dst_size, const void *src, size_t src_size,
                         const char *what, char *err, size_t errcap);

#endif
