/* Status codes (ct_status and ct_status_str, from the standalone include/codectalk_status.h;
   core never includes the rest of the public API) plus the internal error-formatting helper. */
#ifndef CT_STATUS_H
#define CT_STATUS_H

#include <stddef.h>

#include "codectalk_status.h"

/* Formats a message into err[cap] (if err is non-NULL) and returns st. */
ct_status ct_errf(char *err, size_t cap, ct_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif
