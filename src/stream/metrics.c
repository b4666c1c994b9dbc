/* Stream latency metrics of docs/STREAMING.md 2 over a chunk timeline, percentiles and summaries, and
   the schema-1 bench JSON of docs/BENCH.md. */
#include "core/fileio.h"
#include "stream/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static double dur_ms(int64_t samples, int sr) { return 1000.0 * (double)samples / (double)sr; }

int ct_stream_prefix_ms(const ct_chunk_rec *chunks, int n, int sr, double *c, int cap) {
    if (sr <= 0 || n < 0) return -1;
    double acc = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (chunks[i].samples <= 0) continue;
        if (c && k < cap) c[k] = acc;
        acc += dur_ms(chunks[i].samples, sr);
        k++;
    }
    return k;
}

int ct_underruns(const ct_chunk_rec *chunks, int n, int sr, double start_ms, ct_stall *stalls,
                 int cap, double *total_ms) {
    if (sr <= 0 || n < 0) return -1;
    double cursor = start_ms, c = 0, total = 0;
    int k = 0, ns = 0;
    for (int i = 0; i < n; i++) {
        if (chunks[i].samples <= 0) continue;
        double needed = cursor + c;
        if (chunks[i].t_ms > needed) {
            double st = chunks[i].t_ms - needed;
            if (stalls && ns < cap) {
                stalls[ns].chunk = i;
                stalls[ns].audio_idx = k;
                stalls[ns].stall_ms = st;
            }
            ns++;
            total += st;
            cursor += st;
        }
        c += dur_ms(chunks[i].samples, sr);
        k++;
    }
    if (total_ms) *total_ms = total;
    return ns;
}

int ct_stream_gaps(const ct_chunk_rec *chunks, int n, double *gaps, int cap) {
    int k = 0, seen = 0;
    double prev = 0;
    for (int i = 0; i < n; i++) {
        if (chunks[i].samples <= 0) continue;
        if (seen) {
            if (gaps && k < cap) gaps[k] = chunks[i].t_ms - prev;
            k++;
        }
        prev = chunks[i].t_ms;
        seen = 1;
    }
    return k;
}

double ct_playback_slack_ms(const ct_chunk_rec *chunks, int n, int sr, double now_ms,
                            double start_ms) {
    if (sr <= 0 || n <= 0 || !chunks) return 0.0;
    double arrived = 0, first = NAN;
    for (int i = 0; i < n; i++) {
        if (chunks[i].samples <= 0) continue;
        if (isnan(first)) first = chunks[i].t_ms;
        if (chunks[i].t_ms <= now_ms) arrived += dur_ms(chunks[i].samples, sr);
    }
    if (isnan(first)) return 0.0;
    double start = isnan(start_ms) ? first : start_ms;
    double played = now_ms - start;
    return arrived - (played > 0 ? played : 0);
}

ct_status ct_stream_metrics_compute(const ct_chunk_rec *chunks, int n, int sr, double t_final_ms,
                                    double tail_audio_s, ct_stream_metrics *out, char *err,
                                    size_t errcap) {
    if (!out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream metrics: no output");
    if (sr <= 0) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream metrics: sample rate %d", sr);
    if (n < 0 || (n > 0 && !chunks))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream metrics: no chunks");
    if (!isfinite(t_final_ms) || !isfinite(tail_audio_s) || tail_audio_s < 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream metrics: bad t_final_ms or tail_audio_s");
    for (int i = 0; i < n; i++) {
        if (!isfinite(chunks[i].t_ms))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream metrics: chunk %d: t_ms is not finite", i);
        if (chunks[i].samples < 0)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream metrics: chunk %d: negative samples", i);
    }
    ct_stream_metrics m;
    memset(&m, 0, sizeof m);
    m.n_chunks = n;
    m.ttfa_ms = m.t_last_audio_ms = m.playback_start_ms = m.stall_at_ttfa_ms = NAN;
    m.rtf_streamed = m.rtf_total = m.gap_max_ms = m.gap_mean_ms = NAN;
    m.tail_audio_s = tail_audio_s;
    m.total_wall_s = t_final_ms / 1000.0;
    double c = 0, prev = 0, gsum = 0;
    for (int i = 0; i < n; i++) {
        if (chunks[i].samples <= 0) continue;
        double t = chunks[i].t_ms;
        if (m.n_audio == 0) {
            m.ttfa_ms = t;
            m.playback_start_ms = t;
        } else {
            double g = t - prev;
            gsum += g;
            if (m.n_gaps == 0 || g > m.gap_max_ms) m.gap_max_ms = g;
            m.n_gaps++;
        }
        if (t - c > m.playback_start_ms) m.playback_start_ms = t - c;
        c += dur_ms(chunks[i].samples, sr);
        prev = t;
        m.t_last_audio_ms = t;
        m.n_audio++;
    }
    m.streamed_audio_s = c / 1000.0;
    if (m.n_gaps) m.gap_mean_ms = gsum / m.n_gaps;
    if (m.n_audio) {
        m.n_stalls_at_ttfa = ct_underruns(chunks, n, sr, m.ttfa_ms, NULL, 0, &m.stall_at_ttfa_ms);
        m.rtf_streamed = (m.t_last_audio_ms / 1000.0) / m.streamed_audio_s;
    }
    double audio = m.streamed_audio_s + tail_audio_s;
    if (audio > 0) m.rtf_total = m.total_wall_s / audio;
    *out = m;
    return CT_OK;
}

double ct_percentile_nearest(const double *sorted, int n, double q) {
    if (n <= 0 || !sorted) return NAN;
    double r = ceil(q * (double)n);
    long rank = r < 1 ? 1 : (long)r;
    if (rank > n) rank = n;
    return sorted[rank - 1];
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

ct_status ct_summary_of(const double *vals, int n, ct_summary *out) {
    out->n = 0;
    out->p50 = out->p90 = out->max = out->mean = NAN;
    if (n <= 0 || !vals) return CT_OK;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return CT_ERR_NOMEM;
    int k = 0;
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(vals[i])) {
            v[k++] = vals[i];
            sum += vals[i];
        }
    if (k) {
        qsort(v, (size_t)k, sizeof *v, cmp_double);
        out->n = k;
        out->p50 = ct_percentile_nearest(v, k, 0.5);
        out->p90 = ct_percentile_nearest(v, k, 0.9);
        out->max = v[k - 1];
        out->mean = sum / k;
    }
    free(v);
    return CT_OK;
}

ct_status ct_stream_request_score(ct_stream_request *r, char *err, size_t errcap) {
    if (!r) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "stream metrics: no request");
    char e2[200];
    ct_status st = ct_stream_metrics_compute(r->chunks, r->n_chunks, r->sample_rate, r->t_final_ms,
                                             r->tail_audio_s, &r->m, e2, sizeof e2);
    if (st != CT_OK)
        return ct_errf(err, errcap, st, "request %s: %s", r->request_id ? r->request_id : "?", e2);
    return CT_OK;
}

ct_status ct_stream_summarize(const ct_stream_request *reqs, int n, ct_stream_summary *out,
                              char *err, size_t errcap) {
    memset(out, 0, sizeof *out);
    int nm = 0, ngaps = 0;
    for (int i = 0; i < n; i++)
        if (!reqs[i].warmup) {
            nm++;
            ngaps += reqs[i].m.n_gaps;
        }
    size_t cells = (size_t)(5 * nm + ngaps) + 1;
    double *buf = malloc(cells * sizeof *buf);
    if (!buf) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory summarising %d requests", n);
    double *f[5];
    for (int j = 0; j < 5; j++) f[j] = buf + (size_t)j * nm;
    double *gaps = buf + (size_t)5 * nm;
    int k = 0, g = 0;
    for (int i = 0; i < n; i++) {
        const ct_stream_request *r = &reqs[i];
        if (r->warmup) continue;
        f[0][k] = r->m.ttfa_ms;
        f[1][k] = r->m.playback_start_ms;
        f[2][k] = r->m.stall_at_ttfa_ms;
        f[3][k] = r->m.rtf_streamed;
        f[4][k] = r->m.rtf_total;
        k++;
        g += ct_stream_gaps(r->chunks, r->n_chunks, gaps + g, ngaps - g);
        out->total_audio_s += r->m.streamed_audio_s + r->m.tail_audio_s;
        out->total_wall_s += r->m.total_wall_s;
    }
    out->n_requests = nm;
    ct_summary *dst[5] = {&out->ttfa_ms, &out->playback_start_ms, &out->stall_at_ttfa_ms,
                          &out->rtf_streamed, &out->rtf_total};
    ct_status st = CT_OK;
    for (int j = 0; j < 5 && st == CT_OK; j++) st = ct_summary_of(f[j], nm, dst[j]);
    if (st == CT_OK) st = ct_summary_of(gaps, g < ngaps ? g : ngaps, &out->gap_ms);
    free(buf);
    if (st != CT_OK) return ct_errf(err, errcap, st, "out of memory summarising %d requests", n);
    return CT_OK;
}

/* ---- JSON ----------------------------------------------------------------------------- */

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }
static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

/* json_object_set_new that records failure in *ok (jansson frees v on failure). */
static void put(json_t *o, const char *k, json_t *v, int *ok) {
    if (!v || json_object_set_new(o, k, v) != 0) *ok = 0;
}

static json_t *summary_json(const ct_summary *s) {
    json_t *o = json_object();
    if (!o) return NULL;
    int ok = 1;
    put(o, "n", json_integer(s->n), &ok);
    put(o, "p50", jnum(s->p50), &ok);
    put(o, "p90", jnum(s->p90), &ok);
    put(o, "max", jnum(s->max), &ok);
    put(o, "mean", jnum(s->mean), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *ct_stream_summary_json(const ct_stream_summary *s) {
    json_t *o = json_object();
    if (!o) return NULL;
    int ok = 1;
    put(o, "n_requests", json_integer(s->n_requests), &ok);
    put(o, "ttfa_ms", summary_json(&s->ttfa_ms), &ok);
    put(o, "playback_start_ms", summary_json(&s->playback_start_ms), &ok);
    put(o, "stall_at_ttfa_ms", summary_json(&s->stall_at_ttfa_ms), &ok);
    put(o, "rtf_streamed", summary_json(&s->rtf_streamed), &ok);
    put(o, "rtf_total", summary_json(&s->rtf_total), &ok);
    put(o, "gap_ms", summary_json(&s->gap_ms), &ok);
    put(o, "total_audio_s", jnum(s->total_audio_s), &ok);
    put(o, "total_wall_s", jnum(s->total_wall_s), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *request_json(const ct_stream_request *r) {
    json_t *o = json_object(), *chunks = json_array(), *gaps = json_array();
    int ok = o && chunks && gaps;
    double prev = 0, prev_audio = 0;
    int seen_audio = 0;
    for (int i = 0; ok && i < r->n_chunks; i++) {
        const ct_chunk_rec *c = &r->chunks[i];
        json_t *e = json_object();
        if (!e) {
            ok = 0;
            break;
        }
        put(e, "idx", json_integer(i), &ok);
        put(e, "t_ms", jnum(c->t_ms), &ok);
        put(e, "gap_ms", jnum(i ? c->t_ms - prev : 0.0), &ok);
        put(e, "samples", json_integer((json_int_t)c->samples), &ok);
        if (json_array_append_new(chunks, e) != 0) ok = 0;
        if (c->samples > 0) {
            if (seen_audio && json_array_append_new(gaps, jnum(c->t_ms - prev_audio)) != 0) ok = 0;
            prev_audio = c->t_ms;
            seen_audio = 1;
        }
        prev = c->t_ms;
    }
    if (!ok) {
        json_decref(o);
        json_decref(chunks);
        json_decref(gaps);
        return NULL;
    }
    const ct_stream_metrics *m = &r->m;
    put(o, "request_id", jstr(r->request_id), &ok);
    put(o, "sr", json_integer(r->sample_rate), &ok);
    put(o, "chunks", chunks, &ok);
    put(o, "t_final_ms", jnum(r->t_final_ms), &ok);
    put(o, "ttfa_ms", jnum(m->ttfa_ms), &ok);
    put(o, "playback_start_ms", jnum(m->playback_start_ms), &ok);
    put(o, "stall_at_ttfa_ms", jnum(m->stall_at_ttfa_ms), &ok);
    put(o, "n_chunks", json_integer(m->n_audio), &ok);
    put(o, "streamed_audio_s", jnum(m->streamed_audio_s), &ok);
    put(o, "tail_audio_s", jnum(m->tail_audio_s), &ok);
    put(o, "total_wall_s", jnum(m->total_wall_s), &ok);
    put(o, "rtf_streamed", jnum(m->rtf_streamed), &ok);
    put(o, "rtf_total", jnum(m->rtf_total), &ok);
    put(o, "gap_ms", gaps, &ok);
    put(o, "text", jstr(r->text), &ok);
    put(o, "warmup", json_boolean(r->warmup), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *ct_bench_json(const ct_bench_meta *meta, const ct_stream_request *reqs, int n,
                      json_t *step_stats, char *err, size_t errcap) {
    if (!meta || n < 0 || (n > 0 && !reqs)) {
        ct_errf(err, errcap, CT_ERR_INVALID_ARG, "bench json: missing meta or requests");
        return NULL;
    }
    int ok = 1;
    json_t *doc = json_object();
    if (!doc) goto oom;
    put(doc, "schema", json_integer(1), &ok);

    json_t *jm = json_object();
    if (!jm) goto oom;
    put(jm, "model", jstr(meta->model), &ok);
    put(jm, "deploy_config", jstr(meta->deploy_config), &ok);
    put(jm, "query_type", jstr(meta->query_type), &ok);
    put(jm, "txt_prompts", jstr(meta->txt_prompts), &ok);
    put(jm, "git_sha", jstr(meta->git_sha), &ok);
    put(jm, "engine_version", jstr(meta->engine_version), &ok);
    put(jm, "gpu_name", json_null(), &ok);
    put(jm, "cuda_visible_devices", json_null(), &ok);
    put(jm, "timestamp", jstr(meta->timestamp), &ok);
    json_t *argv = json_array();
    if (argv)
        for (int i = 0; i < meta->argc && meta->argv; i++)
            if (json_array_append_new(argv, jstr(meta->argv[i])) != 0) ok = 0;
    put(jm, "argv", argv, &ok);
    put(jm, "bench_args", meta->bench_args ? json_incref(meta->bench_args) : json_object(), &ok);
    put(jm, "warmup", json_integer(meta->warmup), &ok);
    put(jm, "repeat", json_integer(meta->repeat), &ok);
    put(jm, "init_only", json_boolean(meta->init_only), &ok);
    put(doc, "meta", jm, &ok);

    json_t *ji = json_object();
    if (ji) {
        put(ji, "init_s", jnum(meta->init_s), &ok);
        put(ji, "init_timeline", meta->init_timeline ? json_incref(meta->init_timeline) : json_null(), &ok);
    }
    put(doc, "init", ji, &ok);
    put(doc, "step_stats", step_stats ? json_incref(step_stats) : json_null(), &ok);

    json_t *jr = json_object();
    if (jr) {
        put(jr, "peak_rss_bytes", meta->peak_rss_bytes >= 0 ? json_integer(meta->peak_rss_bytes) : json_null(),
            &ok);
        put(jr, "peak_gpu_mem_mib", json_null(), &ok);
        put(jr, "gpu_mem_samples", json_null(), &ok);
        put(jr, "gpu_mem_mode", json_string("none"), &ok);
    }
    put(doc, "resources", jr, &ok);

    json_t *jq = json_array();
    for (int i = 0; jq && i < n; i++)
        if (json_array_append_new(jq, request_json(&reqs[i])) != 0) ok = 0;
    put(doc, "requests", jq, &ok);
    if (!ok) goto oom;

    ct_stream_summary s;
    char e2[200];
    if (ct_stream_summarize(reqs, n, &s, e2, sizeof e2) != CT_OK) goto oom;
    put(doc, "summary", ct_stream_summary_json(&s), &ok);
    if (!ok) goto oom;
    return doc;
oom:
    json_decref(doc);
    ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory building the bench JSON");
    return NULL;
}

ct_status ct_bench_result_path(const char *out_dir, const char *model, const char *deploy_tag,
                               const char *timestamp, const char *tag, char *out, size_t cap,
                               char *err, size_t errcap) {
    if (!out_dir || !model || !timestamp || !out)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "bench result path: missing component");
    size_t ml = strlen(model);
    while (ml > 1 && model[ml - 1] == '/') ml--; /* "models/x/" -> "x" */
    const char *b = model + ml;
    while (b > model && b[-1] != '/') b--;
    int bl = (int)(model + ml - b);
    int w = snprintf(out, cap, "%s/%.*s/%s/%s%s%s.json", out_dir, bl, b, deploy_tag ? deploy_tag : "default",
                     timestamp, tag && *tag ? "_" : "", tag && *tag ? tag : "");
    if (w < 0 || (size_t)w >= cap)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "bench result path under '%s' too long", out_dir);
    return CT_OK;
}

static ct_status mkparents(const char *path, char *err, size_t errcap) {
    char d[4096];
    if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "path too long: '%s'", path);
    char *slash = strrchr(d, '/');
    if (!slash || slash == d) return CT_OK;
    *slash = 0;
    for (char *p = d + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char keep = *p;
        *p = 0;
        if (mkdir(d, 0755) != 0 && errno != EEXIST)
            return ct_errf(err, errcap, CT_ERR_IO, "cannot create directory '%s': %s", d, strerror(errno));
        *p = keep;
        if (!keep) break;
    }
    return CT_OK;
}

ct_status ct_json_write_file(const char *path, const json_t *doc, char *err, size_t errcap) {
    if (!path || !doc) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "json write: no path or document");
    ct_status st = mkparents(path, err, errcap);
    if (st != CT_OK) return st;
    char *js = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (!js) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory serialising '%s'", path);
    size_t l = strlen(js);
    js[l] = '\n'; /* replaces the NUL; the length passed below makes the text self-contained */
    st = ct_write_file_atomic(path, js, l + 1, err, errcap);
    free(js);
    return st;
}
