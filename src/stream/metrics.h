/* Stream latency metrics (docs/STREAMING.md 2): score a recorded chunk timeline by what a listener
   hears (TTFA, prefix audio C_i, earliest never-underrunning playback start, ring-buffer stalls
   for a given start, RTFs, inter-chunk gaps), nearest-rank percentiles, the summary over
   requests, and the bench JSON document of docs/BENCH.md (schema 1, CPU build: GPU fields null).
   Pure functions: no threads, no clocks; only the summary and JSON paths allocate. */
#ifndef CT_STREAM_METRICS_H
#define CT_STREAM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/status.h"
#include "stream/chunk.h" /* ct_chunk_rec {t_ms (arrival since submission), samples} */

/* Scores of one request. Times are ms since submission. Fields that need audio are NAN when the
   timeline has no audio chunk (samples > 0). */
typedef struct {
    int n_chunks;             /* records given (incl. empty ones) */
    int n_audio;              /* records with samples > 0 */
    double ttfa_ms;           /* arrival of the first audio chunk */
    double t_last_audio_ms;   /* arrival of the last audio chunk */
    double playback_start_ms; /* max_i (t_i - C_i), >= ttfa */
    double stall_at_ttfa_ms;  /* sum of ring-buffer stalls when playback starts at TTFA */
    int n_stalls_at_ttfa;     /* how many chunks stalled */
    double streamed_audio_s;  /* sum of audio chunk durations */
    double tail_audio_s;      /* audio delivered with the final output (copied) */
    double total_wall_s;      /* t_final_ms / 1000 */
    double rtf_streamed;      /* (t_last_audio / 1000) / streamed_audio_s */
    double rtf_total;         /* total_wall_s / (streamed + tail); NAN if no audio at all */
    int n_gaps;               /* n_audio - 1 */
    double gap_max_ms, gap_mean_ms; /* over the gaps; NAN when n_gaps == 0 */
} ct_stream_metrics;

/* One stall of the ring-buffer player. */
typedef struct {
    int chunk;       /* index into the chunk array */
    int audio_idx;   /* index among audio chunks */
    double stall_ms; /* t_i - (cursor + C_i) */
} ct_stall;

/* {n, p50, p90, max, mean} over finite values; the four are NAN when n == 0. */
typedef struct {
    int n;
    double p50, p90, max, mean;
} ct_summary;

/* Computes every metric of a timeline in arrival order. sample_rate > 0; chunks may be NULL
   when n == 0; t_final_ms = submission to final output; tail_audio_s >= 0. CT_ERR_INVALID_ARG
   naming the bad record for negative samples or non-finite times. Never allocates. */
ct_status ct_stream_metrics_compute(const ct_chunk_rec *chunks, int n, int sample_rate,
                                    double t_final_ms, double tail_audio_s, ct_stream_metrics *out,
                                    char *err, size_t errcap);

/* Ring-buffer player starting at start_ms: cursor = start; for each audio chunk i, needed =
   cursor + C_i; if t_i > needed the player stalls t_i - needed and cursor moves by that much.
   Stores up to cap stalls in stalls (may be NULL), the sum in *total_ms (may be NULL); returns
   the number of stalls (which may exceed cap), or -1 for sample_rate <= 0 or n < 0. */
int ct_underruns(const ct_chunk_rec *chunks, int n, int sample_rate, double start_ms,
                 ct_stall *stalls, int cap, double *total_ms);

/* C_i: audio ms delivered before audio chunk i, for the first `cap` audio chunks; returns the
   number of audio chunks (or -1 for sample_rate <= 0). */
int ct_stream_prefix_ms(const ct_chunk_rec *chunks, int n, int sample_rate, double *c, int cap);

/* Inter-arrival gaps between consecutive audio chunks (first excluded) into gaps[cap]; returns
   the number of gaps (n_audio - 1, or 0). */
int ct_stream_gaps(const ct_chunk_rec *chunks, int n, double *gaps, int cap);

/* Playback slack (docs/STREAMING.md 5) at now_ms: audio ms arrived by now minus audio already played,
   max(0, now - start). start_ms NAN = the first audio chunk's arrival. Negative = the player
   has underrun; 0 for an empty timeline. */
double ct_playback_slack_ms(const ct_chunk_rec *chunks, int n, int sample_rate, double now_ms,
                            double start_ms);

/* Nearest-rank percentile of sorted[n] (ascending): rank = max(1, ceil(q*n)), value =
   sorted[min(rank, n) - 1]. NAN when n == 0. */
double ct_percentile_nearest(const double *sorted, int n, double q);

/* Summary of vals[n], ignoring non-finite entries. Allocates a scratch copy:
   CT_ERR_NOMEM on failure. */
ct_status ct_summary_of(const double *vals, int n, ct_summary *out);

/* One request as the bench records it. The caller fills every field but m, which
   ct_stream_metrics_compute (called by ct_stream_request_score) sets. */
typedef struct {
    const char *request_id;     /* "w<i>" warm-up, "r<rep>_<i>" measured */
    const char *text;           /* prompt (may be NULL) */
    int warmup;                 /* 1: excluded from the summary */
    int sample_rate;
    const ct_chunk_rec *chunks; /* [n_chunks] in arrival order */
    int n_chunks;
    double t_final_ms;
    double tail_audio_s;
    ct_stream_metrics m;
} ct_stream_request;

/* Fills r->m from r's timeline (see ct_stream_metrics_compute). */
ct_status ct_stream_request_score(ct_stream_request *r, char *err, size_t errcap);

/* Summary over the measured (non-warm-up) requests. */
typedef struct {
    int n_requests;
    ct_summary ttfa_ms, playback_start_ms, stall_at_ttfa_ms, rtf_streamed, rtf_total;
    ct_summary gap_ms;   /* gaps pooled over requests */
    double total_audio_s; /* sum of streamed + tail audio */
    double total_wall_s;  /* sum of total_wall_s */
} ct_stream_summary;

/* Summarises reqs[n] (already scored). CT_ERR_NOMEM on allocation failure. */
ct_status ct_stream_summarize(const ct_stream_request *reqs, int n, ct_stream_summary *out,
                              char *err, size_t errcap);

/* The run-level fields of the bench JSON. Strings may be NULL (written as null). */
typedef struct {
    const char *model;          /* model directory as given */
    const char *deploy_config;  /* profile file or "auto", NULL = default */
    const char *query_type;     /* e.g. "CustomVoice" */
    const char *txt_prompts;    /* prompts file, NULL = built-in prompts */
    const char *git_sha;        /* source revision, NULL = unknown */
    const char *engine_version; /* ct_version() */
    const char *timestamp;      /* "YYYYmmdd-HHMMSS" */
    int argc;
    char *const *argv;          /* [argc] command line */
    json_t *bench_args;         /* borrowed object of every bench flag (NULL = {}) */
    int warmup, repeat, init_only;
    double init_s;              /* model load + warm-up init, s (NAN = null) */
    json_t *init_timeline;      /* borrowed, NULL = null */
    int64_t peak_rss_bytes;     /* < 0 = null */
} ct_bench_meta;

/* Builds the schema-1 document {schema, meta, init, step_stats, resources, requests, summary}
   (docs/BENCH.md) with meta.engine_version and meta.git_sha; gpu_name, cuda_visible_devices,
   peak_gpu_mem_mib and gpu_mem_samples are null, gpu_mem_mode "none". step_stats is borrowed
   (NULL = null); the result holds its own reference. Non-finite numbers are written as null.
   Returns a new reference, or NULL with err set (CT_ERR_NOMEM / CT_ERR_INVALID_ARG). */
json_t *ct_bench_json(const ct_bench_meta *meta, const ct_stream_request *reqs, int n,
                      json_t *step_stats, char *err, size_t errcap);

/* The JSON of a summary (the document's "summary" member); new reference or NULL on OOM. */
json_t *ct_stream_summary_json(const ct_stream_summary *s);

/* Result path <out_dir>/<basename(model)>/<deploy_tag>/<timestamp>[_<tag>].json into out[cap].
   deploy_tag NULL = "default"; tag NULL or "" = none. CT_ERR_LIMIT when it does not fit. */
ct_status ct_bench_result_path(const char *out_dir, const char *model, const char *deploy_tag,
                               const char *timestamp, const char *tag, char *out, size_t cap,
                               char *err, size_t errcap);

/* Writes doc (indented, keys in insertion order) to path atomically (path.tmp.<pid> + fsync +
   rename), creating missing parent directories. CT_ERR_IO naming the path on failure. */
ct_status ct_json_write_file(const char *path, const json_t *doc, char *err, size_t errcap);

#endif
