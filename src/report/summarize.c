/* `bench summarize`: result JSON -> summary.md + SVG plots (see summarize.h). */
#include "core/fileio.h"
#include "report/summarize.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>

#include "report/md.h"
#include "report/sbuf.h"
#include "report/svg.h"
#include "stream/chunk.h"
#include "stream/metrics.h"

#define MAX_DEPTH 12
#define FRAME_MS 80.0

ct_summarize_opts ct_summarize_opts_default(void) {
    ct_summarize_opts o = {4, 50};
    return o;
}

void ct_summarize_result_free(ct_summarize_result *res) {
    if (!res) return;
    free(res->log);
    res->log = NULL;
}

/* ---- run state ---------------------------------------------------------------------- */

typedef struct {
    const char *dir, *out_dir;
    ct_summarize_opts o;
    ct_summarize_result *res;
    ct_sbuf log;
    ct_sbuf overview; /* rows of the stream overview table */
    ct_sbuf models;   /* rows of the model-bench overview table */
    ct_sbuf serves;   /* rows of the serve-bench overview table */
    ct_sbuf body;     /* the per-file sections */
    ct_sbuf skipped;  /* rows of the "files not summarised" table */
    ct_status fatal;  /* CT_ERR_IO / CT_ERR_NOMEM once output cannot be written */
    char fatal_msg[1024];
} run;

static void logf_(run *r, const char *level, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Appends "level: path: message" to the log and, for errors and warnings, a row of the
   skipped-files table. */
static void logf_(run *r, const char *level, const char *path, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ct_sbuf_printf(&r->log, "%s: %s: %s\n", level, path, msg);
    const char *cells[3] = {path, level, msg};
    ct_md_table_row(&r->skipped, 3, cells);
}

/* ---- small helpers -------------------------------------------------------------------- */

static double jd(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *js(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

/* Scalar JSON value as table text into out[cap]; NULL for null/missing. */
static const char *jtext(const json_t *v, char *out, size_t cap) {
    if (!v || json_is_null(v)) return NULL;
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_integer(v)) snprintf(out, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) {
        double x = json_real_value(v), a = fabs(x);
        if (a == 0) snprintf(out, cap, "0");
        else if (a >= 1000) snprintf(out, cap, "%.0f", x);
        else if (a >= 1) snprintf(out, cap, "%.2f", x);
        else snprintf(out, cap, "%.3g", x);
    } else if (json_is_boolean(v)) snprintf(out, cap, "%s", json_is_true(v) ? "yes" : "no");
    else if (json_is_array(v)) snprintf(out, cap, "[%zu items]", json_array_size(v));
    else snprintf(out, cap, "{%zu keys}", json_object_size(v));
    return out;
}

/* File-name-safe form of a relative path: '/' -> "__", other odd bytes -> '_', ".json" cut. */
static void slugify(const char *rel, char *out, size_t cap) {
    size_t n = strlen(rel), k = 0;
    if (n > 5 && strcmp(rel + n - 5, ".json") == 0) n -= 5;
    for (size_t i = 0; i < n && k + 3 < cap; i++) {
        char c = rel[i];
        if (c == '/') {
            out[k++] = '_';
            out[k++] = '_';
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                   c == '_' || c == '.')
            out[k++] = c;
        else out[k++] = '_';
    }
    out[k] = 0;
}

/* Writes data to path atomically (path.tmp.<pid> then rename). */
static ct_status write_file(const char *path, const char *data, size_t len, char *err, size_t errcap) {
    return ct_write_file_atomic(path, data, len, err, errcap);
}

/* Writes an SVG buffer as out_dir/name; records a fatal error on failure. 1 on success. */
static int put_svg(run *r, const char *name, ct_sbuf *svg) {
    if (r->fatal != CT_OK) return 0;
    if (!ct_sbuf_ok(svg)) {
        r->fatal = ct_errf(r->fatal_msg, sizeof r->fatal_msg, CT_ERR_NOMEM, "out of memory rendering '%s'", name);
        return 0;
    }
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", r->out_dir, name) >= (int)sizeof path) {
        r->fatal = ct_errf(r->fatal_msg, sizeof r->fatal_msg, CT_ERR_LIMIT, "output path too long for '%s'", name);
        return 0;
    }
    ct_status st = write_file(path, ct_sbuf_str(svg), svg->len, r->fatal_msg, sizeof r->fatal_msg);
    if (st != CT_OK) {
        r->fatal = st;
        return 0;
    }
    r->res->n_svg++;
    return 1;
}

/* Renders the bar chart c as out_dir/<slug>.<kind>.svg and links it from b with alt text. */
static void put_bars(run *r, ct_sbuf *b, const ct_svg_bars *c, const char *slug, const char *kind, const char *alt) {
    ct_sbuf svg;
    ct_sbuf_init(&svg);
    char e2[256], name[1200];
    snprintf(name, sizeof name, "%s.%s.svg", slug, kind);
    if (ct_svg_bars_render(c, &svg, e2, sizeof e2) == CT_OK && put_svg(r, name, &svg))
        ct_sbuf_printf(b, "![%s](%s)\n\n", alt, name);
    ct_sbuf_free(&svg);
}

static ct_status mkdir_p(const char *path, char *err, size_t errcap) {
    char d[4096];
    if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "path too long: '%s'", path);
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/') d[--n] = 0;
    for (char *p = d + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char keep = *p;
        *p = 0;
        if (mkdir(d, 0755) != 0 && errno != EEXIST)
            return ct_errf(err, errcap, CT_ERR_IO, "cannot create output directory '%s': %s", d, strerror(errno));
        *p = keep;
        if (!keep) break;
    }
    struct stat sb;
    if (stat(d, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ct_errf(err, errcap, CT_ERR_IO, "cannot create output directory '%s': %s", path,
                       errno ? strerror(errno) : "not a directory");
    return CT_OK;
}

/* ---- directory walk ----------------------------------------------------------------------- */

typedef struct {
    char **v; /* [n] paths relative to the results directory */
    int n, cap;
} pathlist;

static int pl_add(pathlist *pl, const char *s) {
    if (pl->n == pl->cap) {
        int nc = pl->cap ? pl->cap * 2 : 64;
        char **nv = realloc(pl->v, (size_t)nc * sizeof *nv);
        if (!nv) return 0;
        pl->v = nv;
        pl->cap = nc;
    }
    size_t l = strlen(s);
    char *c = malloc(l + 1);
    if (!c) return 0;
    memcpy(c, s, l + 1);
    pl->v[pl->n++] = c;
    return 1;
}

static void pl_free(pathlist *pl) {
    for (int i = 0; i < pl->n; i++) free(pl->v[i]);
    free(pl->v);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Collects *.json below dir/rel (rel "" = top). Skips the directory with (skip_dev, skip_ino)
   and symlinked directories. 0 on out-of-memory. */
static int walk(run *r, const char *rel, int depth, dev_t skip_dev, ino_t skip_ino, pathlist *pl) {
    char full[4096];
    snprintf(full, sizeof full, "%s%s%s", r->dir, *rel ? "/" : "", rel);
    DIR *d = opendir(full);
    if (!d) {
        logf_(r, "error", full, "cannot read directory: %s", strerror(errno));
        r->res->n_failed++;
        return 1;
    }
    struct dirent *e;
    int ok = 1;
    while (ok && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue; /* ., .., hidden and in-progress files */
        char crel[4096], cfull[8200];
        if (snprintf(crel, sizeof crel, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= (int)sizeof crel) continue;
        if (snprintf(cfull, sizeof cfull, "%s/%s", r->dir, crel) >= (int)sizeof cfull) continue;
        struct stat sb;
        if (lstat(cfull, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) {
            if (sb.st_dev == skip_dev && sb.st_ino == skip_ino) continue;
            if (depth >= MAX_DEPTH) {
                logf_(r, "warning", cfull, "deeper than %d levels, not searched", MAX_DEPTH);
                continue;
            }
            ok = walk(r, crel, depth + 1, skip_dev, skip_ino, pl);
            continue;
        }
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) {
            if (S_ISLNK(sb.st_mode) && stat(cfull, &sb) != 0) continue; /* a dangling link */
            if (!S_ISREG(sb.st_mode)) { /* a FIFO would block the read */
                logf_(r, "warning", cfull, "not a regular file, skipped");
                r->res->n_skipped++;
                continue;
            }
            ok = pl_add(pl, crel);
        }
    }
    closedir(d);
    return ok;
}

/* ---- stream results --------------------------------------------------------------------- */

typedef struct {
    const char *id;
    int warmup, sr;
    ct_chunk_rec *chunks; /* [n] */
    int n;
    double t_final_ms, tail_audio_s;
    ct_stream_metrics m;
} sreq;

static void fmt_date(const char *ts, char *out, size_t cap) {
    /* "YYYYmmdd-HHMMSS" -> "YYYY-mm-dd HH:MM:SS"; anything else as given */
    if (ts && strlen(ts) == 15 && ts[8] == '-')
        snprintf(out, cap, "%.4s-%.2s-%.2s %.2s:%.2s:%.2s", ts, ts + 4, ts + 6, ts + 9, ts + 11, ts + 13);
    else snprintf(out, cap, "%s", ts ? ts : "-");
}

/* Profile shown for a run: meta.deploy_config, else bench_args.profile, else "default". */
static const char *profile_of(const json_t *meta) {
    const char *p = js(meta, "deploy_config");
    if (!p) p = js(json_object_get(meta, "bench_args"), "profile");
    return p ? p : "default";
}

static void meta_line(ct_sbuf *b, const json_t *meta) {
    char date[64];
    fmt_date(js(meta, "timestamp"), date, sizeof date);
    const json_t *ba = json_object_get(meta, "bench_args");
    const char *sched = js(ba, "schedule");
    ct_sbuf_printf(b, "model `%s` · profile `%s`", js(meta, "model") ? js(meta, "model") : "-", profile_of(meta));
    if (sched) ct_sbuf_printf(b, " · schedule `%s`", sched);
    const json_t *w = json_object_get(ba, "windowed");
    if (json_is_integer(w) || json_is_boolean(w))
        ct_sbuf_printf(b, " · decoder %s", json_is_true(w) || json_integer_value(w) ? "windowed" : "stateful");
    ct_sbuf_printf(b, " · engine %s · git %s · date %s\n\n", js(meta, "engine_version") ? js(meta, "engine_version") : "-",
                   js(meta, "git_sha") ? js(meta, "git_sha") : "-", date);
}

/* Reads and checks the requests; on error writes why into why[cap] and returns 0. */
static int read_requests(const json_t *jreqs, sreq **out, int *n_out, char *why, size_t cap) {
    *out = NULL;
    *n_out = 0;
    if (!json_is_array(jreqs)) {
        snprintf(why, cap, "\"requests\" is missing or not an array");
        return 0;
    }
    int n = (int)json_array_size(jreqs);
    sreq *rq = calloc((size_t)(n ? n : 1), sizeof *rq);
    if (!rq) {
        snprintf(why, cap, "out of memory");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const json_t *q = json_array_get(jreqs, (size_t)i);
        sreq *s = &rq[i];
        *n_out = i + 1;
        if (!json_is_object(q)) {
            snprintf(why, cap, "requests[%d] is not an object", i);
            goto bad;
        }
        s->id = js(q, "request_id");
        s->warmup = json_is_true(json_object_get(q, "warmup"));
        const json_t *sr = json_object_get(q, "sr");
        if (!json_is_integer(sr) || json_integer_value(sr) <= 0 || json_integer_value(sr) > 1000000) {
            snprintf(why, cap, "requests[%d].sr is missing or not a positive integer", i);
            goto bad;
        }
        s->sr = (int)json_integer_value(sr);
        const json_t *ch = json_object_get(q, "chunks");
        if (!json_is_array(ch)) {
            snprintf(why, cap, "requests[%d].chunks is missing or not an array", i);
            goto bad;
        }
        s->n = (int)json_array_size(ch);
        s->chunks = malloc(sizeof *s->chunks * (size_t)(s->n ? s->n : 1));
        if (!s->chunks) {
            snprintf(why, cap, "out of memory");
            goto bad;
        }
        for (int k = 0; k < s->n; k++) {
            const json_t *c = json_array_get(ch, (size_t)k);
            const json_t *t = json_object_get(c, "t_ms"), *sm = json_object_get(c, "samples");
            if (!json_is_number(t) || !isfinite(json_number_value(t))) {
                snprintf(why, cap, "requests[%d].chunks[%d].t_ms is missing or not a number", i, k);
                goto bad;
            }
            if (!json_is_integer(sm) || json_integer_value(sm) < 0) {
                snprintf(why, cap, "requests[%d].chunks[%d].samples is missing or not a count", i, k);
                goto bad;
            }
            s->chunks[k].t_ms = json_number_value(t);
            s->chunks[k].samples = (int64_t)json_integer_value(sm);
        }
        s->t_final_ms = jd(q, "t_final_ms");
        if (!isfinite(s->t_final_ms)) s->t_final_ms = s->n ? s->chunks[s->n - 1].t_ms : 0;
        s->tail_audio_s = jd(q, "tail_audio_s");
        if (!isfinite(s->tail_audio_s) || s->tail_audio_s < 0) s->tail_audio_s = 0;
        char e2[256];
        if (ct_stream_metrics_compute(s->chunks, s->n, s->sr, s->t_final_ms, s->tail_audio_s, &s->m, e2, sizeof e2) !=
            CT_OK) {
            snprintf(why, cap, "requests[%d]: %s", i, e2);
            goto bad;
        }
    }
    *out = rq;
    *n_out = n;
    return 1;
bad:
    for (int i = 0; i < *n_out; i++) free(rq[i].chunks);
    free(rq);
    *n_out = 0;
    return 0;
}

static void free_requests(sreq *rq, int n) {
    for (int i = 0; i < n; i++) free(rq[i].chunks);
    free(rq);
}

/* A summary entry {n, p50, p90, max, mean} from the file, or NULL when absent/malformed. */
static int summary_entry(const json_t *summary, const char *key, ct_summary *out) {
    const json_t *e = json_object_get(summary, key);
    if (!json_is_object(e) || !json_is_integer(json_object_get(e, "n"))) return 0;
    out->n = (int)json_integer_value(json_object_get(e, "n"));
    out->p50 = jd(e, "p50");
    out->p90 = jd(e, "p90");
    out->max = jd(e, "max");
    out->mean = jd(e, "mean");
    return 1;
}

/* The run summary: the file's own "summary" entries, each recomputed from the requests when
   absent. *recomputed counts the entries that were. */
static ct_status run_summary(const json_t *doc, const sreq *rq, int n, ct_stream_summary *s, int *recomputed) {
    ct_stream_request *tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    if (!tmp) return CT_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        tmp[i].request_id = rq[i].id;
        tmp[i].warmup = rq[i].warmup;
        tmp[i].sample_rate = rq[i].sr;
        tmp[i].chunks = rq[i].chunks;
        tmp[i].n_chunks = rq[i].n;
        tmp[i].t_final_ms = rq[i].t_final_ms;
        tmp[i].tail_audio_s = rq[i].tail_audio_s;
        tmp[i].m = rq[i].m;
    }
    char e2[200];
    ct_status st = ct_stream_summarize(tmp, n, s, e2, sizeof e2);
    free(tmp);
    if (st != CT_OK) return st;
    const json_t *fs = json_object_get(doc, "summary");
    static const char *keys[6] = {"ttfa_ms", "playback_start_ms", "stall_at_ttfa_ms", "rtf_streamed", "rtf_total", "gap_ms"};
    ct_summary *dst[6] = {&s->ttfa_ms, &s->playback_start_ms, &s->stall_at_ttfa_ms, &s->rtf_streamed, &s->rtf_total, &s->gap_ms};
    *recomputed = 0;
    for (int j = 0; j < 6; j++)
        if (!summary_entry(fs, keys[j], dst[j])) (*recomputed)++;
    if (json_is_integer(json_object_get(fs, "n_requests")))
        s->n_requests = (int)json_integer_value(json_object_get(fs, "n_requests"));
    return CT_OK;
}

static void summary_table(ct_sbuf *b, const ct_stream_summary *s) {
    static const char *hdr[6] = {"metric", "n", "p50", "p90", "max", "mean"};
    static const ct_md_align al[6] = {CT_MD_LEFT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT};
    ct_md_table_header(b, 6, hdr, al);
    const char *names[6] = {"ttfa_ms", "playback_start_ms", "stall_at_ttfa_ms", "rtf_streamed", "rtf_total", "gap_ms"};
    const ct_summary *v[6] = {&s->ttfa_ms, &s->playback_start_ms, &s->stall_at_ttfa_ms, &s->rtf_streamed, &s->rtf_total, &s->gap_ms};
    for (int j = 0; j < 6; j++) {
        int dec = (j == 3 || j == 4) ? 3 : 1;
        char c[5][48];
        snprintf(c[0], sizeof c[0], "%d", v[j]->n);
        ct_md_num(c[1], sizeof c[1], v[j]->p50, dec);
        ct_md_num(c[2], sizeof c[2], v[j]->p90, dec);
        ct_md_num(c[3], sizeof c[3], v[j]->max, dec);
        ct_md_num(c[4], sizeof c[4], v[j]->mean, dec);
        const char *cells[6] = {names[j], c[0], c[1], c[2], c[3], c[4]};
        ct_md_table_row(b, 6, cells);
    }
    ct_sbuf_puts(b, "\n");
}

static void request_table(ct_sbuf *b, const sreq *rq, int n, int max_rows) {
    static const char *hdr[9] = {"request", "warm-up", "chunks", "audio s", "ttfa ms", "playback start ms",
                                 "stall at ttfa ms", "rtf streamed", "rtf total"};
    static const ct_md_align al[9] = {CT_MD_LEFT, CT_MD_LEFT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT,
                                      CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT};
    ct_md_table_header(b, 9, hdr, al);
    for (int i = 0; i < n && i < max_rows; i++) {
        const ct_stream_metrics *m = &rq[i].m;
        char c[7][48];
        snprintf(c[0], sizeof c[0], "%d", m->n_audio);
        ct_md_num(c[1], sizeof c[1], m->streamed_audio_s + m->tail_audio_s, 2);
        ct_md_num(c[2], sizeof c[2], m->ttfa_ms, 1);
        ct_md_num(c[3], sizeof c[3], m->playback_start_ms, 1);
        ct_md_num(c[4], sizeof c[4], m->stall_at_ttfa_ms, 1);
        ct_md_num(c[5], sizeof c[5], m->rtf_streamed, 3);
        ct_md_num(c[6], sizeof c[6], m->rtf_total, 3);
        const char *cells[9] = {rq[i].id ? rq[i].id : "?", rq[i].warmup ? "yes" : "no", c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
        ct_md_table_row(b, 9, cells);
    }
    if (n > max_rows) ct_sbuf_printf(b, "\n(%d more requests not listed)\n", n - max_rows);
    ct_sbuf_puts(b, "\n");
}

/* Attribution table + bars from step_stats.attribution. */
static void attribution(run *r, const json_t *step_stats, const char *slug, const char *rel) {
    ct_sbuf *b = &r->body;
    const json_t *att = json_object_get(step_stats, "attribution");
    if (!json_is_array(att)) {
        ct_sbuf_puts(b, "No step-time attribution in this run (bench without `--step-stats`).\n\n");
        return;
    }
    ct_sbuf_puts(b, "### Step-time attribution\n\n");
    static const char *hdr[6] = {"role", "counter", "n", "mean ms", "p95 ms", "share of 80 ms"};
    static const ct_md_align al[6] = {CT_MD_LEFT, CT_MD_LEFT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT};
    ct_md_table_header(b, 6, hdr, al);
    int n = (int)json_array_size(att);
    char **labels = calloc((size_t)(n ? n : 1), sizeof *labels);
    char **texts = calloc((size_t)(n ? n : 1), sizeof *texts);
    double *vals = calloc((size_t)(n ? n : 1), sizeof *vals);
    int nb = 0;
    for (int i = 0; i < n; i++) {
        const json_t *row = json_array_get(att, (size_t)i);
        const char *role = js(row, "role"), *ctr = js(row, "counter");
        double cnt = jd(row, "count"), mean = jd(row, "mean_ms"), p95 = jd(row, "p95_ms"), share = jd(row, "share_of_frame");
        if (!isfinite(share) && isfinite(mean)) share = mean / FRAME_MS;
        char c[4][48];
        if (isfinite(cnt)) snprintf(c[0], sizeof c[0], "%.0f", cnt);
        else snprintf(c[0], sizeof c[0], "-");
        ct_md_num(c[1], sizeof c[1], mean, 2);
        ct_md_num(c[2], sizeof c[2], p95, 2);
        if (isfinite(share)) snprintf(c[3], sizeof c[3], "%.1f%%", 100.0 * share);
        else snprintf(c[3], sizeof c[3], "-");
        const char *cells[6] = {role ? role : "?", ctr ? ctr : "?", c[0], c[1], c[2], c[3]};
        ct_md_table_row(b, 6, cells);
        if (labels && texts && vals) {
            size_t ll = strlen(cells[0]) + strlen(cells[1]) + 2;
            labels[nb] = malloc(ll);
            texts[nb] = malloc(112);
            if (labels[nb] && texts[nb]) {
                snprintf(labels[nb], ll, "%s %s", cells[0], cells[1]);
                snprintf(texts[nb], 112, "%s ms (%s)", c[1], c[3]);
                vals[nb] = isfinite(share) ? 100.0 * share : NAN;
                nb++;
            } else {
                free(labels[nb]);
                free(texts[nb]);
            }
        }
    }
    ct_sbuf_puts(b, "\n");
    if (labels && texts && vals) {
        double vmax = 0;
        for (int i = 0; i < nb; i++)
            if (isfinite(vals[i]) && vals[i] > vmax) vmax = vals[i];
        char title[600];
        snprintf(title, sizeof title, "%s: share of the 80 ms frame per counter", rel);
        ct_svg_bars c;
        memset(&c, 0, sizeof c);
        c.title = title;
        c.note = "bar = mean ms per call / 80 ms (one codec frame); text = mean ms (share)";
        c.xlabel = "share of the 80 ms frame (%)";
        c.labels = (const char *const *)labels;
        c.values = vals;
        c.value_text = (const char *const *)texts;
        c.n = nb;
        c.xmax = NAN;
        c.ref = vmax > 40 ? 100.0 : NAN;
        c.ref_label = "80 ms";
        put_bars(r, b, &c, slug, "attribution", "attribution bars");
    } else if (r->fatal == CT_OK) {
        r->fatal = ct_errf(r->fatal_msg, sizeof r->fatal_msg, CT_ERR_NOMEM, "out of memory (attribution of %s)", rel);
    }
    for (int i = 0; i < nb; i++) {
        free(labels[i]);
        free(texts[i]);
    }
    free(labels);
    free(texts);
    free(vals);
}

/* One request's chunk-timeline plot; 1 when written. */
static int timeline(run *r, const sreq *q, const char *slug, const char *rel) {
    const ct_stream_metrics *m = &q->m;
    if (m->n_audio == 0) return 0;
    int na = m->n_audio;
    /* delivered audio: (0,0), (t_i, D_i) ..., (x_end, D_n) as a post step */
    double *x = malloc(sizeof(double) * (size_t)(na + 2)), *y = malloc(sizeof(double) * (size_t)(na + 2));
    /* stall polygons: up to na - 1 of 4 vertices */
    double *ax = malloc(sizeof(double) * 4 * (size_t)na), *ay = malloc(sizeof(double) * 4 * (size_t)na);
    ct_svg_area *areas = calloc((size_t)na, sizeof *areas);
    int ok = 0;
    if (!x || !y || !ax || !ay || !areas) {
        if (r->fatal == CT_OK)
            r->fatal = ct_errf(r->fatal_msg, sizeof r->fatal_msg, CT_ERR_NOMEM, "out of memory (timeline of %s)", rel);
        goto done;
    }
    double total = m->streamed_audio_s * 1000.0, ttfa = m->ttfa_ms, ps = m->playback_start_ms;
    int k = 0;
    x[k] = 0;
    y[k++] = 0;
    double acc = 0;
    for (int i = 0; i < q->n; i++) {
        if (q->chunks[i].samples <= 0) continue;
        acc += 1000.0 * (double)q->chunks[i].samples / q->sr;
        x[k] = q->chunks[i].t_ms;
        y[k++] = acc;
    }
    double xend = q->t_final_ms;
    if (ps + total > xend) xend = ps + total;
    if (ttfa + total > xend) xend = ttfa + total;
    x[k] = xend;
    y[k] = acc;
    k++;
    /* regions where the cursor started at TTFA would pass the delivered audio: on each
       interval [t_j, t_j+1) with D = D_j, the line t - ttfa is above D from ttfa + D_j on */
    int narea = 0;
    for (int j = 1; j + 1 <= k - 2; j++) { /* after the last chunk the cursor plays the audio out */
        double t0 = x[j], t1 = x[j + 1], d = y[j];
        double a = t0 > ttfa + d ? t0 : ttfa + d;
        if (t1 > ttfa + total) t1 = ttfa + total; /* the cursor stops when all audio is played */
        if (a >= t1) continue;
        double *px_ = ax + 4 * narea, *py_ = ay + 4 * narea;
        px_[0] = a, py_[0] = d;
        px_[1] = t1, py_[1] = d;
        px_[2] = t1, py_[2] = t1 - ttfa;
        px_[3] = a, py_[3] = a - ttfa;
        areas[narea].label = "cursor from TTFA ahead of the audio (stall)";
        areas[narea].color = "#d62728";
        areas[narea].opacity = 0.35;
        areas[narea].x = px_;
        areas[narea].y = py_;
        areas[narea].n = 4;
        narea++;
    }
    double cx1[2] = {ttfa, ttfa + total}, cy[2] = {0, total}, cx2[2] = {ps, ps + total};
    ct_svg_series ser[3];
    memset(ser, 0, sizeof ser);
    ser[0].label = "audio delivered (cumulative)";
    ser[0].color = "#1f77b4";
    ser[0].kind = CT_SVG_STEP;
    ser[0].x = x;
    ser[0].y = y;
    ser[0].n = k;
    ser[0].width = 2.2;
    ser[1].label = "playback cursor from TTFA";
    ser[1].color = "#d62728";
    ser[1].kind = CT_SVG_LINE;
    ser[1].x = cx1;
    ser[1].y = cy;
    ser[1].n = 2;
    ser[1].width = 1.6;
    ser[2].label = "playback cursor from playback_start";
    ser[2].color = "#2ca02c";
    ser[2].kind = CT_SVG_LINE;
    ser[2].x = cx2;
    ser[2].y = cy;
    ser[2].n = 2;
    ser[2].width = 1.6;
    ser[2].dashed = 1;
    char title[700], note[400], name[1200], rid[128];
    snprintf(title, sizeof title, "%s: request %s chunk timeline", rel, q->id ? q->id : "?");
    char stall[96];
    if (m->n_stalls_at_ttfa > 0)
        snprintf(stall, sizeof stall, "stall at TTFA %.1f ms in %d stall%s", m->stall_at_ttfa_ms, m->n_stalls_at_ttfa,
                 m->n_stalls_at_ttfa == 1 ? "" : "s");
    else snprintf(stall, sizeof stall, "no stall from TTFA");
    snprintf(note, sizeof note, "TTFA %.1f ms · playback start %.1f ms · %s · %d chunks · %.2f s streamed audio · RTF %.3f",
             ttfa, ps, stall, na, m->streamed_audio_s, m->rtf_total);
    slugify(q->id ? q->id : "request", rid, sizeof rid);
    snprintf(name, sizeof name, "%s.timeline.%s.svg", slug, rid);
    ct_svg_plot p;
    memset(&p, 0, sizeof p);
    p.title = title;
    p.note = note;
    p.xlabel = "wall time since submission (ms)";
    p.ylabel = "audio (ms)";
    p.xmin = 0;
    p.ymin = 0;
    p.xmax = p.ymax = NAN;
    p.series = ser;
    p.n_series = 3;
    p.areas = areas;
    p.n_areas = narea;
    p.legend = CT_SVG_LEGEND_BOTTOM_RIGHT; /* below every cursor line: always empty */
    ct_sbuf svg;
    ct_sbuf_init(&svg);
    char e2[256];
    if (ct_svg_plot_render(&p, &svg, e2, sizeof e2) == CT_OK && put_svg(r, name, &svg)) {
        ct_sbuf_printf(&r->body, "![chunk timeline %s](%s)\n\n", q->id ? q->id : "?", name);
        ok = 1;
    }
    ct_sbuf_free(&svg);
done:
    free(x);
    free(y);
    free(ax);
    free(ay);
    free(areas);
    return ok;
}

static int do_stream(run *r, const char *path, const char *rel, const json_t *doc) {
    sreq *rq = NULL;
    int n = 0;
    char why[512];
    if (!read_requests(json_object_get(doc, "requests"), &rq, &n, why, sizeof why)) {
        logf_(r, "error", path, "schema-1 stream result: %s; skipped", why);
        r->res->n_failed++;
        return 0;
    }
    ct_stream_summary s;
    int recomputed = 0;
    if (run_summary(doc, rq, n, &s, &recomputed) != CT_OK) {
        free_requests(rq, n);
        r->fatal = ct_errf(r->fatal_msg, sizeof r->fatal_msg, CT_ERR_NOMEM, "out of memory summarising %s", rel);
        return 0;
    }
    const json_t *meta = json_object_get(doc, "meta");
    char slug[1024];
    slugify(rel, slug, sizeof slug);
    ct_sbuf *b = &r->body;
    int nw = 0;
    for (int i = 0; i < n; i++) nw += rq[i].warmup;
    ct_sbuf_printf(b, "## %s\n\n", rel);
    meta_line(b, meta);
    const json_t *res = json_object_get(doc, "resources");
    double rss = jd(res, "peak_rss_bytes"), init_s = jd(json_object_get(doc, "init"), "init_s");
    ct_sbuf_printf(b, "stream bench (schema 1) · %d measured request%s (+%d warm-up)", n - nw, n - nw == 1 ? "" : "s", nw);
    if (isfinite(init_s)) ct_sbuf_printf(b, " · init %.2f s", init_s);
    if (isfinite(rss)) ct_sbuf_printf(b, " · peak RSS %.2f GiB", rss / (1024.0 * 1024 * 1024));
    ct_sbuf_puts(b, "\n\n");
    summary_table(b, &s);
    if (recomputed)
        ct_sbuf_printf(b, "(%d of the 6 summary rows recomputed from the requests: missing in the file.)\n\n", recomputed);
    if (r->o.max_request_rows > 0 && n > 0) request_table(b, rq, n, r->o.max_request_rows);
    attribution(r, json_object_get(doc, "step_stats"), slug, rel);
    if (r->o.max_timelines > 0) {
        int done = 0, any_measured = n - nw > 0;
        int header = 0;
        for (int i = 0; i < n && done < r->o.max_timelines && r->fatal == CT_OK; i++) {
            if (any_measured && rq[i].warmup) continue;
            if (!header) {
                ct_sbuf_puts(b, "### Chunk timelines\n\n"
                                "Blue: audio delivered; red: a player starting at TTFA; green (dashed): one starting "
                                "at playback_start; shaded: where the TTFA cursor passes the delivered audio "
                                "(the player would stall).\n\n");
                header = 1;
            }
            if (timeline(r, &rq[i], slug, rel)) done++;
            else if (r->fatal == CT_OK)
                ct_sbuf_printf(b, "Request %s: no audio chunks, no timeline.\n\n", rq[i].id ? rq[i].id : "?");
        }
    }
    /* overview row */
    char c[9][64];
    ct_md_num(c[0], sizeof c[0], s.ttfa_ms.p50, 1);
    ct_md_num(c[1], sizeof c[1], s.ttfa_ms.p90, 1);
    ct_md_num(c[2], sizeof c[2], s.playback_start_ms.p50, 1);
    ct_md_num(c[3], sizeof c[3], s.stall_at_ttfa_ms.p50, 1);
    ct_md_num(c[4], sizeof c[4], s.rtf_streamed.p50, 3);
    ct_md_num(c[5], sizeof c[5], s.rtf_total.p50, 3);
    ct_md_num(c[6], sizeof c[6], isfinite(rss) ? rss / (1024.0 * 1024 * 1024) : NAN, 2);
    snprintf(c[7], sizeof c[7], "%d", s.n_requests);
    const char *sched = js(json_object_get(meta, "bench_args"), "schedule");
    const char *cells[13] = {rel, js(meta, "model"), profile_of(meta), sched, c[7], c[0], c[1], c[2], c[3], c[4], c[5], c[6],
                             js(meta, "git_sha")};
    ct_md_table_row(&r->overview, 13, cells);
    free_requests(rq, n);
    r->res->n_stream++;
    return 1;
}

/* ---- model bench ------------------------------------------------------------------------- */

static int is_model_bench(const json_t *doc) {
    return json_is_string(json_object_get(doc, "model")) && json_is_number(json_object_get(doc, "talker_ms")) &&
           json_is_number(json_object_get(doc, "predictor_ms")) && json_is_number(json_object_get(doc, "rtf"));
}

static void do_model(run *r, const char *rel, const json_t *doc) {
    ct_sbuf *b = &r->body;
    char slug[1024];
    slugify(rel, slug, sizeof slug);
    double tb = jd(doc, "talker_bytes"), pb = jd(doc, "predictor_bytes");
    double t = jd(doc, "talker_ms"), p = jd(doc, "predictor_ms"), cd = jd(doc, "codec_ms");
    double tg = jd(doc, "talker_gbs"), pg = jd(doc, "predictor_gbs"), roof = jd(doc, "roofline_read_gbs");
    char thr[32], fr[32], pl[32];
    ct_sbuf_printf(b, "## %s\n\n", rel);
    ct_sbuf_printf(b, "model bench · model `%s` · kind %s · weights %s · %s threads · kernels %s · %s frames · prompt %s "
                      "positions\n\n",
                   js(doc, "model"), js(doc, "kind") ? js(doc, "kind") : "-", js(doc, "weights") ? js(doc, "weights") : "-",
                   jtext(json_object_get(doc, "threads"), thr, sizeof thr) ? thr : "-", js(doc, "isa") ? js(doc, "isa") : "-",
                   jtext(json_object_get(doc, "frames"), fr, sizeof fr) ? fr : "-",
                   jtext(json_object_get(doc, "prompt_len"), pl, sizeof pl) ? pl : "-");
    /* results since the stage floors carry <stage>_floor_ms (bytes at the read rate of the
       stage's working set; the codec's FLOPs at the FMA peak) and floor_ms (their sum) */
    static const char *hdr[8] = {"stage", "ms/frame", "MB/frame", "GB/s", "% of read roofline", "floor ms/frame",
                                 "x floor", "share of 80 ms"};
    static const ct_md_align al[8] = {CT_MD_LEFT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT,
                                      CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT, CT_MD_RIGHT};
    ct_md_table_header(b, 8, hdr, al);
    /* results since the ramp-schedule codec carry codec_exact_ms (1-frame pushes) beside
       codec_ms (the ramp); older ones have only codec_ms, measured with 1-frame pushes */
    const double cx = jd(doc, "codec_exact_ms");
    const int ramp = cx > 0;
    const char *names[4] = {"talker", "code predictor", ramp ? "codec (stream, ramp 2..25)" : "codec (1 frame)",
                            "codec (1-frame pushes, not in the total)"};
    double ms[4] = {t, p, cd, cx}, mb[4] = {tb / 1e6, pb / 1e6, NAN, NAN}, gbs[4] = {tg, pg, NAN, NAN};
    const double cf = jd(doc, "codec_floor_ms");
    double fl[4] = {jd(doc, "talker_floor_ms"), jd(doc, "predictor_floor_ms"), cf, cf};
    for (int i = 0; i < 4; i++) {
        if ((i == 2 && !(cd > 0)) || (i == 3 && !ramp)) continue;
        char c[7][48];
        ct_md_num(c[0], sizeof c[0], ms[i], 2);
        ct_md_num(c[1], sizeof c[1], mb[i], 1);
        ct_md_num(c[2], sizeof c[2], gbs[i], 1);
        if (isfinite(gbs[i]) && roof > 0) snprintf(c[3], sizeof c[3], "%.0f%%", 100 * gbs[i] / roof);
        else snprintf(c[3], sizeof c[3], "-");
        if (isfinite(ms[i])) snprintf(c[4], sizeof c[4], "%.1f%%", 100 * ms[i] / FRAME_MS);
        else snprintf(c[4], sizeof c[4], "-");
        ct_md_num(c[5], sizeof c[5], fl[i], 2);
        ct_md_num(c[6], sizeof c[6], fl[i] > 0 ? ms[i] / fl[i] : NAN, 2);
        const char *cells[8] = {names[i], c[0], c[1], c[2], c[3], c[5], c[6], c[4]};
        ct_md_table_row(b, 8, cells);
    }
    double tot = t + p + (cd > 0 ? cd : 0), ftot = jd(doc, "floor_ms");
    char c0[48], c4[48], rtf[48], pre[48], f0[48], f1[48];
    ct_md_num(c0, sizeof c0, tot, 2);
    snprintf(c4, sizeof c4, "%.1f%%", 100 * tot / FRAME_MS);
    ct_md_num(f0, sizeof f0, ftot, 2);
    ct_md_num(f1, sizeof f1, ftot > 0 ? tot / ftot : NAN, 2);
    const char *cells[8] = {"total", c0, "", "", "", f0, f1, c4};
    ct_md_table_row(b, 8, cells);
    char kept[160] = ""; /* a returning voice's prompt (bench model: prompt reuse) */
    const double kms = jd(doc, "prefill_kept_ms"), kpos = jd(doc, "prefill_kept_positions"),
                 kre = jd(doc, "prefill_kept_reused");
    if (kms > 0 && kpos > 0 && kre > 0)
        snprintf(kept, sizeof kept, "; %s ms when the voice returns, %.0f of %.0f positions run",
                 ct_md_num(f0, sizeof f0, kms, 1), kpos - kre, kpos);
    ct_sbuf_printf(b, "\nprefill %s ms (once%s) · RTF %s · read roofline %s GB/s · FMA peak %s GFLOP/s\n\n",
                   ct_md_num(pre, sizeof pre, jd(doc, "prefill_ms"), 1), kept, ct_md_num(rtf, sizeof rtf, jd(doc, "rtf"), 3),
                   ct_md_num(c0, sizeof c0, roof, 1), ct_md_num(c4, sizeof c4, jd(doc, "roofline_fma_gflops"), 0));
    /* stage bars */
    const char *labels[4] = {"talker", "code predictor", ramp ? "codec (ramp)" : "codec (1 frame)", "total"};
    double vals[4] = {100 * t / FRAME_MS, 100 * p / FRAME_MS, cd > 0 ? 100 * cd / FRAME_MS : NAN, 100 * tot / FRAME_MS};
    char tx[4][64];
    const char *texts[4];
    double msv[4] = {t, p, cd, tot};
    for (int i = 0; i < 4; i++) {
        snprintf(tx[i], sizeof tx[i], "%.2f ms (%.1f%%)", msv[i], vals[i]);
        texts[i] = isfinite(vals[i]) ? tx[i] : "-";
    }
    char title[700];
    snprintf(title, sizeof title, "%s: ms per 80 ms frame by stage", rel);
    ct_svg_bars c;
    memset(&c, 0, sizeof c);
    c.title = title;
    c.xlabel = "share of the 80 ms frame (%)";
    c.labels = labels;
    c.values = vals;
    c.value_text = texts;
    c.n = 4;
    c.xmax = NAN;
    c.ref = 100.0;
    c.ref_label = "80 ms (real time)";
    put_bars(r, b, &c, slug, "stages", "stage bars");
    char cm[7][48];
    const char *mc[7] = {rel, js(doc, "model"), jtext(json_object_get(doc, "threads"), cm[0], sizeof cm[0]), js(doc, "isa"),
                         ct_md_num(cm[1], sizeof cm[1], t, 2), ct_md_num(cm[2], sizeof cm[2], p, 2),
                         ct_md_num(cm[3], sizeof cm[3], jd(doc, "rtf"), 3)};
    ct_md_table_row(&r->models, 7, mc);
    r->res->n_model++;
}

/* ---- serve bench (`bench serve --json`) --------------------------------------------------- */

#define SERVE_SCHEMA "codectalk.bench_serve/1"

static double jd2(const json_t *o, const char *a, const char *b) {
    return jd(json_object_get(o, a), b);
}

/* One table row per concurrency level; the overview gets the best aggregate level. */
static void do_serve(run *r, const char *path, const char *rel, const json_t *doc) {
    const json_t *lv = json_object_get(doc, "levels");
    if (!json_is_array(lv) || json_array_size(lv) == 0) {
        logf_(r, "error", path, SERVE_SCHEMA " result: \"levels\" is missing or empty; skipped");
        r->res->n_failed++;
        return;
    }
    ct_sbuf *b = &r->body;
    char rq[32], mnt[32];
    ct_sbuf_printf(b, "## %s\n\n", rel);
    ct_sbuf_printf(b, "serve bench · %s · %s requests per level · max_new_tokens %s\n\n",
                   js(doc, "url") ? js(doc, "url") : "-", jtext(json_object_get(doc, "requests"), rq, sizeof rq) ? rq : "-",
                   jtext(json_object_get(doc, "max_new_tokens"), mnt, sizeof mnt) ? mnt : "-");
    static const char *hdr[11] = {"concurrency", "ok", "503", "errors", "TTFA p50 ms", "TTFA p95 ms", "RTF p50",
                                  "RTF p95", "stalls (n, ms)", "audio s/s", "vs first level"};
    ct_md_table_header(b, 11, hdr, NULL);
    double best = NAN;
    int best_c = 0;
    for (size_t i = 0; i < json_array_size(lv); i++) {
        const json_t *l = json_array_get(lv, i);
        char c[11][48];
        const char *cells[11];
        for (int k = 0; k < 11; k++) cells[k] = c[k];
        if (!jtext(json_object_get(l, "concurrency"), c[0], sizeof c[0])) snprintf(c[0], sizeof c[0], "-");
        if (!jtext(json_object_get(l, "ok"), c[1], sizeof c[1])) snprintf(c[1], sizeof c[1], "-");
        if (!jtext(json_object_get(l, "rejected_503"), c[2], sizeof c[2])) snprintf(c[2], sizeof c[2], "-");
        if (!jtext(json_object_get(l, "errors"), c[3], sizeof c[3])) snprintf(c[3], sizeof c[3], "-");
        ct_md_num(c[4], sizeof c[4], jd2(l, "ttfa_ms", "p50"), 0);
        ct_md_num(c[5], sizeof c[5], jd2(l, "ttfa_ms", "p95"), 0);
        ct_md_num(c[6], sizeof c[6], jd2(l, "rtf_streamed", "p50"), 3);
        ct_md_num(c[7], sizeof c[7], jd2(l, "rtf_streamed", "p95"), 3);
        char n1[24], n2[24];
        snprintf(c[8], sizeof c[8], "%s, %s", ct_md_num(n1, sizeof n1, jd2(l, "stalls", "count"), 0),
                 ct_md_num(n2, sizeof n2, jd2(l, "stalls", "total_ms"), 0));
        const double a = jd(l, "audio_s_per_s");
        ct_md_num(c[9], sizeof c[9], a, 2);
        const double v = jd(l, "throughput_vs_first_level");
        if (isfinite(v)) snprintf(c[10], sizeof c[10], "%.2fx", v);
        else snprintf(c[10], sizeof c[10], "-");
        ct_md_table_row(b, 11, cells);
        if (isfinite(a) && !(a <= best)) {
            best = a;
            best_c = (int)jd(l, "concurrency");
        }
    }
    ct_sbuf_puts(b, "\n");
    char bc[32], ba[48];
    snprintf(bc, sizeof bc, "%d", best_c);
    const char *oc[3] = {rel, bc, ct_md_num(ba, sizeof ba, best, 2)};
    ct_md_table_row(&r->serves, 3, oc);
    r->res->n_serve++;
}

/* ---- sweeps -------------------------------------------------------------------------------- */

#define SWEEP_MAX_COLS 32

/* Adds column name (key or key.sub) once; returns its index or -1 when full. */
static int add_col(char cols[][96], int *nc, const char *name) {
    for (int i = 0; i < *nc; i++)
        if (strcmp(cols[i], name) == 0) return i;
    if (*nc >= SWEEP_MAX_COLS) return -1;
    snprintf(cols[*nc], 96, "%s", name);
    return (*nc)++;
}

static void do_sweep(run *r, const char *rel, const json_t *doc) {
    ct_sbuf *b = &r->body;
    const json_t *sw = json_object_get(doc, "sweep");
    char cols[SWEEP_MAX_COLS][96];
    int nc = 0, dropped = 0;
    size_t i;
    const json_t *row;
    /* columns: scalar keys, and one level of nested objects as key.sub */
    json_array_foreach(sw, i, row) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)row, k, v) {
            if (json_is_object(v)) {
                const char *k2;
                const json_t *v2;
                json_object_foreach((json_t *)v, k2, v2) {
                    char nm[96];
                    snprintf(nm, sizeof nm, "%s.%s", k, k2);
                    if (add_col(cols, &nc, nm) < 0) dropped = 1;
                }
            } else if (add_col(cols, &nc, k) < 0) dropped = 1;
        }
    }
    ct_sbuf_printf(b, "## %s\n\n", rel);
    const json_t *meta = json_object_get(doc, "meta");
    if (json_is_object(meta)) meta_line(b, meta);
    const char *kind = js(doc, "kind");
    if (!kind) kind = js(doc, "name");
    ct_sbuf_printf(b, "sweep%s%s · %zu row%s\n\n", kind ? " " : "", kind ? kind : "", json_array_size(sw),
                   json_array_size(sw) == 1 ? "" : "s");
    if (nc == 0) {
        ct_sbuf_puts(b, "(no columns: the sweep rows are empty or not objects)\n\n");
        r->res->n_sweep++;
        return;
    }
    const char *hdr[SWEEP_MAX_COLS];
    for (int c = 0; c < nc; c++) hdr[c] = cols[c];
    ct_md_table_header(b, nc, hdr, NULL);
    json_array_foreach(sw, i, row) {
        char txt[SWEEP_MAX_COLS][64];
        const char *cells[SWEEP_MAX_COLS];
        for (int c = 0; c < nc; c++) {
            const json_t *v;
            const char *dot = strchr(cols[c], '.');
            v = json_object_get(row, cols[c]);
            if (!v && dot) {
                char top[96];
                snprintf(top, sizeof top, "%.*s", (int)(dot - cols[c]), cols[c]);
                v = json_object_get(json_object_get(row, top), dot + 1);
            }
            cells[c] = jtext(v, txt[c], sizeof txt[c]);
        }
        ct_md_table_row(b, nc, cells);
    }
    if (dropped) ct_sbuf_printf(b, "\n(columns beyond the first %d not shown)\n", SWEEP_MAX_COLS);
    ct_sbuf_puts(b, "\n");
    r->res->n_sweep++;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

static void do_file(run *r, const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", r->dir, rel);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) {
        if (je.line > 0)
            logf_(r, "error", path, "not valid JSON (line %d, column %d): %s; skipped", je.line, je.column, je.text);
        else logf_(r, "error", path, "cannot read: %s; skipped", je.text);
        r->res->n_failed++;
        return;
    }
    const json_t *schema = json_object_get(doc, "schema");
    if (!json_is_object(doc)) {
        logf_(r, "warning", path, "not a codectalk result (top level is an array), skipped");
        r->res->n_skipped++;
    } else if (schema) {
        if (json_is_integer(schema) && json_integer_value(schema) == 1) do_stream(r, path, rel, doc);
        else if (json_is_string(schema) && strcmp(json_string_value(schema), SERVE_SCHEMA) == 0)
            do_serve(r, path, rel, doc);
        else {
            char t[64];
            const char *s = jtext(schema, t, sizeof t);
            logf_(r, "warning", path, "unsupported result schema %s (this build reads schema 1 and " SERVE_SCHEMA "), skipped",
                  s ? s : "null");
            r->res->n_skipped++;
        }
    } else if (json_is_array(json_object_get(doc, "sweep"))) {
        do_sweep(r, rel, doc);
    } else if (is_model_bench(doc)) {
        do_model(r, rel, doc);
    } else if (json_is_string(json_object_get(doc, "role")) && json_is_object(json_object_get(doc, "counters"))) {
        ct_sbuf_printf(&r->log, "note: %s: step-stats dump (already merged into its bench JSON), skipped\n", path);
        r->res->n_skipped++;
    } else {
        logf_(r, "warning", path, "not a codectalk result (no \"schema\": 1, \"sweep\" array or model-bench keys), skipped");
        r->res->n_skipped++;
    }
    json_decref(doc);
}

ct_status ct_summarize_dir(const char *dir, const char *out_dir, const ct_summarize_opts *opts,
                           ct_summarize_result *res, char *err, size_t errcap) {
    if (res) memset(res, 0, sizeof *res);
    if (!dir || !res) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "summarize: no results directory");
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return ct_errf(err, errcap, CT_ERR_IO, "cannot open results directory '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ct_errf(err, errcap, CT_ERR_IO, "results path '%s' is not a directory", dir);
    char dflt[4096];
    if (!out_dir) {
        if (snprintf(dflt, sizeof dflt, "%s/summary", dir) >= (int)sizeof dflt)
            return ct_errf(err, errcap, CT_ERR_LIMIT, "path too long: '%s'", dir);
        out_dir = dflt;
    }
    ct_status st = mkdir_p(out_dir, err, errcap);
    if (st != CT_OK) return st;
    struct stat ob;
    if (stat(out_dir, &ob) != 0)
        return ct_errf(err, errcap, CT_ERR_IO, "cannot open output directory '%s': %s", out_dir, strerror(errno));
    /* can the output directory be written? (mkdir succeeds on an existing read-only one) */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.summarize.probe.%ld", out_dir, (long)getpid());
    FILE *pf = fopen(probe, "wb");
    if (!pf) return ct_errf(err, errcap, CT_ERR_IO, "cannot write to output directory '%s': %s", out_dir, strerror(errno));
    fclose(pf);
    remove(probe);

    run r;
    memset(&r, 0, sizeof r);
    r.dir = dir;
    r.out_dir = out_dir;
    r.o = opts ? *opts : ct_summarize_opts_default();
    if (r.o.max_timelines < 0) r.o.max_timelines = 4;
    if (r.o.max_request_rows < 0) r.o.max_request_rows = 50;
    r.res = res;
    ct_sbuf_init(&r.log);
    ct_sbuf_init(&r.overview);
    ct_sbuf_init(&r.models);
    ct_sbuf_init(&r.serves);
    ct_sbuf_init(&r.body);
    ct_sbuf_init(&r.skipped);

    pathlist pl = {NULL, 0, 0};
    if (!walk(&r, "", 0, ob.st_dev, ob.st_ino, &pl)) {
        r.fatal = ct_errf(r.fatal_msg, sizeof r.fatal_msg, CT_ERR_NOMEM, "out of memory listing '%s'", dir);
    } else {
        if (pl.n > 1) qsort(pl.v, (size_t)pl.n, sizeof *pl.v, cmp_str);
        res->n_json = pl.n;
        for (int i = 0; i < pl.n && r.fatal == CT_OK; i++) do_file(&r, pl.v[i]);
    }
    pl_free(&pl);

    if (r.fatal == CT_OK) {
        ct_sbuf md;
        ct_sbuf_init(&md);
        ct_sbuf_printf(&md, "# Bench summary: %s\n\n", dir);
        ct_sbuf_printf(&md, "%d result file%s: %d stream, %d model bench, %d serve bench, %d sweep; %d skipped, %d "
                            "with errors. See docs/BENCH.md for how to read these tables and plots.\n\n",
                       res->n_json, res->n_json == 1 ? "" : "s", res->n_stream, res->n_model, res->n_serve,
                       res->n_sweep, res->n_skipped, res->n_failed);
        if (res->n_stream) {
            static const char *hdr[13] = {"result", "model", "profile", "schedule", "n", "TTFA p50 ms", "TTFA p90 ms",
                                          "playback start p50 ms", "stall p50 ms", "RTF streamed p50", "RTF total p50",
                                          "peak RSS GiB", "git sha"};
            ct_sbuf_puts(&md, "## Stream runs\n\n");
            ct_md_table_header(&md, 13, hdr, NULL);
            ct_sbuf_puts(&md, ct_sbuf_str(&r.overview));
            ct_sbuf_puts(&md, "\n");
        }
        if (res->n_model) {
            static const char *hdr[7] = {"result", "model", "threads", "isa", "talker ms", "predictor ms", "RTF"};
            ct_sbuf_puts(&md, "## Model bench runs\n\n");
            ct_md_table_header(&md, 7, hdr, NULL);
            ct_sbuf_puts(&md, ct_sbuf_str(&r.models));
            ct_sbuf_puts(&md, "\n");
        }
        if (res->n_serve) {
            static const char *hdr[3] = {"result", "best concurrency", "audio s per s"};
            ct_sbuf_puts(&md, "## Serve bench runs\n\n");
            ct_md_table_header(&md, 3, hdr, NULL);
            ct_sbuf_puts(&md, ct_sbuf_str(&r.serves));
            ct_sbuf_puts(&md, "\n");
        }
        if (res->n_json == 0) ct_sbuf_puts(&md, "No result files (*.json) found.\n\n");
        ct_sbuf_puts(&md, ct_sbuf_str(&r.body));
        if (r.skipped.len) {
            static const char *hdr[3] = {"file", "level", "why"};
            ct_sbuf_puts(&md, "## Files not summarised\n\n");
            ct_md_table_header(&md, 3, hdr, NULL);
            ct_sbuf_puts(&md, ct_sbuf_str(&r.skipped));
            ct_sbuf_puts(&md, "\n");
        }
        if (!ct_sbuf_ok(&md) || !ct_sbuf_ok(&r.body) || !ct_sbuf_ok(&r.overview) || !ct_sbuf_ok(&r.skipped) ||
            !ct_sbuf_ok(&r.models) || !ct_sbuf_ok(&r.serves)) {
            r.fatal = ct_errf(r.fatal_msg, sizeof r.fatal_msg, CT_ERR_NOMEM, "out of memory building summary.md");
        } else {
            char *path = res->summary_path;
            if (snprintf(path, sizeof res->summary_path, "%s/summary.md", out_dir) >= (int)sizeof res->summary_path)
                r.fatal = ct_errf(r.fatal_msg, sizeof r.fatal_msg, CT_ERR_LIMIT, "output path too long: '%s'", out_dir);
            else r.fatal = write_file(path, ct_sbuf_str(&md), md.len, r.fatal_msg, sizeof r.fatal_msg);
            if (r.fatal != CT_OK) path[0] = 0;
        }
        ct_sbuf_free(&md);
    }
    if (r.log.len && ct_sbuf_ok(&r.log)) {
        res->log = r.log.data; /* ownership moves to res */
        r.log.data = NULL;
    }
    ct_sbuf_free(&r.log);
    ct_sbuf_free(&r.overview);
    ct_sbuf_free(&r.models);
    ct_sbuf_free(&r.serves);
    ct_sbuf_free(&r.body);
    ct_sbuf_free(&r.skipped);
    if (r.fatal != CT_OK) return ct_errf(err, errcap, r.fatal, "%s", r.fatal_msg);
    return CT_OK;
}
