/* Status codes (defined in the public header) plus the internal error-formatting helper. */
#ifndef CT_STATUS_H
#define CT_STATUS_H

#include <stddef.h>

#include "codectalk.h"

/* Formats a message into err[cap] (if err is non-NULL) and returns st. */
ct_status ct_errf(char *err, size_t cap, ct_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif
