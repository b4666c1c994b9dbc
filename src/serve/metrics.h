/* The server's /metrics page: Prometheus text from the engine's counters and limits
   (ct_engine_get_counters / ct_engine_get_limits), the HTTP responses by status, and the TTFA
   and RTF histograms the server keeps from each finished stream's ct_stream_get_info.
   Names: docs/SERVE.md. Thread-safe. */
#ifndef CT_SERVE_METRICS_H
#define CT_SERVE_METRICS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "codectalk.h"

#define CT_SRV_TTFA_BUCKETS 12
#define CT_SRV_RTF_BUCKETS 11
#define CT_SRV_STATUS_KINDS 14 /* 200 400 401 404 405 408 411 413 429 431 500 501 503, other */

typedef struct {
    pthread_mutex_t mu;
    uint64_t ttfa[CT_SRV_TTFA_BUCKETS + 1], rtf[CT_SRV_RTF_BUCKETS + 1]; /* per bucket, last = +Inf */
    double ttfa_sum, rtf_sum;
    uint64_t ttfa_n, rtf_n;
    atomic_ullong status[CT_SRV_STATUS_KINDS];
    /* the connection guard (serve/gate.c) */
    atomic_ullong write_timeouts;  /* streams cut: the client took no bytes for --write-timeout */
    atomic_ullong header_timeouts; /* connections cut: no complete header in --header-timeout */
    atomic_ullong body_timeouts;   /* connections cut: no complete body in --timeout */
    atomic_ullong conn_refused;    /* connections refused: per-address limit or all taken */
} ct_srv_metrics;

void ct_srv_metrics_init(ct_srv_metrics *m);
void ct_srv_metrics_destroy(ct_srv_metrics *m);

/* Counts one HTTP response with this status. */
void ct_srv_metrics_status(ct_srv_metrics *m, int http_status);

/* Adds a stream the server is done with: its TTFA (when it released audio) and, when it
   finished (DONE) with audio, its RTF = submission to end over audio duration. */
void ct_srv_metrics_stream(ct_srv_metrics *m, const ct_stream_info *si, int sample_rate);

/* The whole page (malloc'd, NUL-terminated; NULL on OOM). */
char *ct_srv_metrics_text(ct_srv_metrics *m, ct_engine *e);

#endif
