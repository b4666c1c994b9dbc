/* `bench summarize`: renders every result JSON under a directory as one markdown file
   (summary.md: an overview table, then one section per result) plus SVG plots next to it.
   Recognised inputs:
   - stream bench, schema 1 (docs/STREAMING.md 2, bench JSON): meta line, the
     n/p50/p90/max/mean summary table, per-request table, attribution table (role | counter |
     n | mean ms | p95 ms | share of 80 ms), attribution bars and per-request chunk timelines
     (delivered audio vs the playback cursor from TTFA and from playback_start, stalls shaded);
   - model bench (`bench model --json`, keys model/talker_ms/predictor_ms/rtf): stage table and
     stage bars;
   - any object with a "sweep" array: a table of its rows;
   - step-stats dumps ({role, pid, counters}): noted and skipped (they are merged into the bench
     JSON already).
   Anything else is skipped with a warning naming the file; a corrupt or malformed file is an
   error naming the file, and every other file is still summarised. Library code: never prints;
   warnings and errors are collected in the result's log. */
#ifndef CT_REPORT_SUMMARIZE_H
#define CT_REPORT_SUMMARIZE_H

#include <stddef.h>

#include "core/status.h"

typedef struct {
    int max_timelines; /* chunk-timeline plots per stream result: the first N measured requests
                          (warm-up ones when none is measured); 0 = none, < 0 = default 4 */
    int max_request_rows; /* rows of the per-request table; < 0 = default 50, 0 = no table */
} ct_summarize_opts;

/* Default options (4 timelines, 50 request rows). */
ct_summarize_opts ct_summarize_opts_default(void);

typedef struct {
    int n_json;    /* *.json files found (outside the output directory) */
    int n_stream;  /* rendered as stream results */
    int n_model;   /* rendered as model-bench results */
    int n_sweep;   /* rendered as sweep tables */
    int n_serve;   /* rendered as serve-bench results (schema "codectalk.bench_serve/1") */
    int n_skipped; /* foreign JSON and step-stats dumps, skipped */
    int n_failed;  /* corrupt or malformed, skipped with an error */
    int n_svg;     /* SVG files written */
    char *log;     /* malloc'd lines "error: PATH: why" / "warning: PATH: why" / "note: ..."
                      (NULL when empty); free with ct_summarize_result_free */
    char summary_path[4096]; /* the summary.md written ("" when none) */
} ct_summarize_result;

/* Frees res->log. */
void ct_summarize_result_free(ct_summarize_result *res);

/* Summarises every *.json under dir (recursively, sorted by path, skipping out_dir) into out_dir
   (NULL = dir/summary; created with its parents): summary.md and the SVGs. Returns CT_OK when
   the summary was written, even if some files were skipped or failed (see res->n_failed and
   res->log); CT_ERR_IO naming the directory or file when dir cannot be read or out_dir cannot
   be created or written; CT_ERR_NOMEM; CT_ERR_INVALID_ARG for NULL dir/res. res is always
   initialised (free it with ct_summarize_result_free). */
ct_status ct_summarize_dir(const char *dir, const char *out_dir, const ct_summarize_opts *opts,
                           ct_summarize_result *res, char *err, size_t errcap);

#endif
