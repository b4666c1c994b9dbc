/* Minimal blocking HTTP/1.1 client over plain sockets for the loopback tests and
   `codectalk bench serve`: one request per connection, Content-Length or chunked bodies
   (de-chunked), arrival timeline of body bytes, optional early abort to simulate a client that
   disconnects mid-stream. */
#ifndef CT_SERVE_CLIENT_H
#define CT_SERVE_CLIENT_H

#include <stddef.h>

#include "core/status.h"

typedef struct {
    int status;                 /* HTTP status code */
    char *headers;              /* raw header block (malloc'd, NUL-terminated) */
    unsigned char *body;        /* decoded body (malloc'd, NUL-terminated beyond body_len) */
    size_t body_len;
    double t_first_byte_ms;     /* request sent -> first body byte (NAN when no body) */
    double t_total_ms;          /* request sent -> end of body */
    /* arrival timeline: at t_ms[i] (since the request was sent) bytes[i] decoded body bytes
       arrived; [n_events] */
    double *t_ms;
    size_t *bytes;
    int n_events, cap_events;
    int aborted;                /* 1: on_data asked to stop */
} ct_http_resp;

/* Called with each piece of decoded body as it arrives; return non-zero to close the
   connection at once (the request then returns CT_OK with aborted = 1). */
typedef int (*ct_http_on_data)(void *ud, const unsigned char *p, size_t n);

/* Sends method path to host:port (numeric IPv4) with extra_headers (CRLF-terminated lines,
   may be NULL) and body[body_len] (may be NULL), reads the whole response. timeout_ms bounds
   every wait for data. Errors: CT_ERR_IO (connect/send/recv failure or timeout, message names
   it), CT_ERR_FORMAT (malformed response), CT_ERR_NOMEM. *out is filled on CT_OK (free with
   ct_http_resp_free) and cleared otherwise. */
ct_status ct_http_request(const char *host, int port, const char *method, const char *path,
                          const char *extra_headers, const char *body, size_t body_len, int timeout_ms,
                          ct_http_on_data on_data, void *ud, ct_http_resp *out, char *err, size_t errcap);

void ct_http_resp_free(ct_http_resp *r);

/* Value of header name (case-insensitive) into buf[cap]; returns 1 if found, else 0. */
int ct_http_resp_header(const ct_http_resp *r, const char *name, char *buf, size_t cap);

/* Splits "http://HOST:PORT[/...]" (or "HOST:PORT") into host[cap] and *port (default 80).
   CT_ERR_INVALID_ARG when it does not parse. */
ct_status ct_http_parse_url(const char *url, char *host, size_t cap, int *port, char *err, size_t errcap);

#endif
