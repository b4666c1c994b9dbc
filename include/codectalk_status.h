/* codectalk status codes: the one status enum of the library, returned by every fallible call,
   and its messages. Included by codectalk.h; standalone so that the library's lowest layer can
   use the codes without the rest of the API. */
#ifndef CODECTALK_STATUS_H
#define CODECTALK_STATUS_H

/* CT_API marks every function of the public API (this header and codectalk.h): the only
   symbols the shared library exports; everything else is built with hidden visibility. */
#define CT_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CT_OK = 0,
    CT_ERR_INVALID_ARG = -1, /* caller passed something unusable */
    CT_ERR_NOMEM = -2,       /* allocation failed */
    CT_ERR_IO = -3,          /* open/read/write/mmap failed */
    CT_ERR_FORMAT = -4,      /* file content is malformed or inconsistent */
    CT_ERR_UNSUPPORTED = -5, /* valid but not handled (dtype, variant) */
    CT_ERR_STATE = -6,       /* call made in the wrong state */
    CT_ERR_ABORTED = -7,     /* cancelled by the caller */
    CT_ERR_INTERNAL = -8,    /* a bug: an invariant broke */
    CT_ERR_LIMIT = -9,       /* input exceeds a configured or model limit */
    CT_ERR_TIMEOUT = -10     /* a request deadline passed */
} ct_status;
/* Static English description of a status; never NULL. */
CT_API const char *ct_status_str(ct_status st);

#ifdef __cplusplus
}
#endif

#endif
