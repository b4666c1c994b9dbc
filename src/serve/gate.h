/* The server's front gate and connection guard (see docs/SERVE.md, "Limits against abuse"):
   an acceptor thread of our own that owns the listening socket and reads each new connection's
   first request header with MSG_PEEK (nothing is consumed) until it is complete, checks it
   (ct_http_head_check) and only then hands the socket to libmicrohttpd (MHD_add_connection).
   What it adds below the HTTP library: a deadline for the complete header, a connection limit
   per client address, a reserve of connections for GET /health and /metrics when the others
   are all taken, and OpenAI error JSON for requests the library would answer with HTML (or not
   at all). A watchdog thread bounds what the library cannot: the time between keep-alive
   requests, the time to upload a body, and the time a streaming client takes no bytes. */
#ifndef CT_SERVE_GATE_H
#define CT_SERVE_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "serve/metrics.h"

#include <microhttpd.h>

#include "codectalk.h"

/* ---- the header check (pure; fuzzed through the replay of fuzz_http_head) ------------------ */

typedef struct {
    size_t head_len;  /* bytes of the request line + headers + blank line */
    int status;       /* < 0: complete and acceptable; else the HTTP status to answer */
    int monitor;      /* 1: GET or HEAD of /health or /metrics (may use the reserve) */
    int chunked;      /* Transfer-Encoding: chunked */
    char code[32];    /* error code (OpenAI error "code") */
    char msg[160];    /* error message */
} ct_head_result;

/* Checks the first n bytes of a connection. Returns 0 when more bytes are needed (no verdict
   yet), 1 when the header is complete and acceptable, -1 when it must be refused (r->status,
   r->code, r->msg say how): malformed request line (400), a NUL / control byte or "%00" in
   the target (400), HTTP version other than 1.0 / 1.1 (505), malformed header line (400),
   invalid or conflicting Content-Length (400), Transfer-Encoding other than chunked (501),
   both Transfer-Encoding and Content-Length (400), header over max_head bytes (431). */
int ct_http_head_check(const char *b, size_t n, size_t max_head, ct_head_result *r);

/* Checks the chunked framing of the body bytes b[0..n) seen so far: -1 malformed, 0 fine so far,
   1 the last chunk was seen. */
int ct_http_chunks_check(const char *b, size_t n);

/* The OpenAI error JSON response (status line, headers incl. Connection: close, body) for
   status/code/msg into out[cap]; returns its length (0 if it does not fit). */
size_t ct_http_error_response(char *out, size_t cap, int status, const char *code, const char *msg);

/* ---- the gate ----------------------------------------------------------------------------- */

typedef struct ct_gate ct_gate;

typedef struct {
    int listen_fd;           /* bound and listening; the gate closes it at stop */
    int max_connections;     /* handed-off connections of any kind */
    int reserve;             /* more, only for GET /health and /metrics (each serves one request) */
    int per_ip;              /* connections (pending + handed off) per client address; 0 = no limit */
    int header_timeout_s;    /* complete header within this (also between keep-alive requests) */
    int body_timeout_s;      /* complete body within this from the end of its header */
    int write_timeout_s;     /* a streaming client that takes no bytes for this long is cut */
    size_t max_head;         /* header size limit -> 431 */
    ct_srv_metrics *mx;
} ct_gate_params;

/* A gate for p (NULL on OOM); pass it as the cls of ct_gate_notify when starting the daemon
   (MHD_USE_NO_LISTEN_SOCKET), then ct_gate_run starts its threads (0, or -1 on failure). */
ct_gate *ct_gate_new(const ct_gate_params *p);
int ct_gate_run(ct_gate *g, struct MHD_Daemon *d);
/* Stops accepting and closes pending connections; call before MHD_stop_daemon. */
void ct_gate_stop_accepting(ct_gate *g);
/* Frees the gate (after MHD_stop_daemon). */
void ct_gate_free(ct_gate *g);

/* Hooks for the HTTP handler. The connection's record (NULL when unknown) is found through
   MHD's socket context, set by ct_gate_notify (MHD_OPTION_NOTIFY_CONNECTION). */
typedef struct ct_gate_conn ct_gate_conn;
void ct_gate_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                    enum MHD_ConnectionNotificationCode toe);
ct_gate_conn *ct_gate_conn_of(struct MHD_Connection *c);
int ct_gate_conn_is_reserve(const ct_gate_conn *k);
void ct_gate_request_begin(ct_gate_conn *k);     /* a request's header was parsed: its body is due */
void ct_gate_request_body_done(ct_gate_conn *k); /* its body is in: no deadline while we work */
void ct_gate_request_end(ct_gate_conn *k);       /* the response went out: next header is due */
/* Streaming: st is the stream this connection feeds (the watchdog may cancel it); detach it
   before releasing it (only clears the record if it still holds st). */
void ct_gate_stream_attach(ct_gate_conn *k, ct_stream *st);
void ct_gate_stream_detach(ct_gate_conn *k, ct_stream *st);
void ct_gate_stream_waiting(ct_gate_conn *k, int waiting); /* 1: bytes handed over, client owes */

#endif
