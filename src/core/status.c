/* Status strings and the error-formatting helper. */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>

const char *ct_status_str(ct_status st) {
    switch (st) {
    case CT_OK: return "ok";
    case CT_ERR_INVALID_ARG: return "invalid argument";
    case CT_ERR_NOMEM: return "out of memory";
    case CT_ERR_IO: return "i/o error";
    case CT_ERR_FORMAT: return "malformed input";
    case CT_ERR_UNSUPPORTED: return "unsupported";
    case CT_ERR_STATE: return "invalid state";
    case CT_ERR_ABORTED: return "aborted";
    case CT_ERR_INTERNAL: return "internal error";
    case CT_ERR_LIMIT: return "limit exceeded";
    case CT_ERR_TIMEOUT: return "timed out";
    }
    return "unknown status";
}

ct_status ct_errf(char *err, size_t cap, ct_status st, const char *fmt, ...) {
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return st;
}
