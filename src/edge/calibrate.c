/* Calibration: SHA-1 fingerprint of the hardware, rate and chunk schedule from a chunk
   timeline (docs/EDGE.md 3), timeline and cache JSON, atomic cache writes. */
#include "edge/calibrate.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

/* ---- SHA-1 (FIPS 180-4) ------------------------------------------------------------------ */

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *b) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 |
               b[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (bb & c) | (~bb & d);
            k = 0x5A827999u;
        } else if (i < 40) {
            f = bb ^ c ^ d;
            k = 0x6ED9EBA1u;
        } else if (i < 60) {
            f = (bb & c) | (bb & d) | (c & d);
            k = 0x8F1BBCDCu;
        } else {
            f = bb ^ c ^ d;
            k = 0xCA62C1D6u;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(bb, 30);
        bb = a;
        a = t;
    }
    h[0] += a;
    h[1] += bb;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void ct_sha1(const void *data, size_t len, uint8_t out[20]) {
    uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    const uint8_t *p = data;
    size_t n = len;
    while (n >= 64) {
        sha1_block(h, p);
        p += 64;
        n -= 64;
    }
    uint8_t tail[128] = {0};
    memcpy(tail, p, n);
    tail[n] = 0x80;
    size_t tl = n + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8u;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha1_block(h, tail);
    if (tl == 128) sha1_block(h, tail + 64);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

/* ---- fingerprint ------------------------------------------------------------------------- */

typedef struct {
    char *b;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *s, const char *t, size_t l) {
    if (s->oom) return;
    if (s->n + l + 1 > s->cap) {
        size_t nc = (s->cap ? s->cap * 2 : 256) + l;
        char *nb = realloc(s->b, nc);
        if (!nb) {
            s->oom = 1;
            return;
        }
        s->b = nb;
        s->cap = nc;
    }
    memcpy(s->b + s->n, t, l);
    s->n += l;
    s->b[s->n] = 0;
}

static void sb_str(sbuf *s, const char *t) { sb_put(s, t, strlen(t)); }

/* JSON string with ASCII escapes, the way Python's json.dumps writes it. */
static void sb_json_str(sbuf *s, const char *t) {
    sb_put(s, "\"", 1);
    const unsigned char *p = (const unsigned char *)t;
    while (*p) {
        unsigned c = *p;
        char e[16];
        if (c == '"' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            sb_put(s, e, 2);
            p++;
            continue;
        }
        if (c < 0x80) {
            const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (esc) sb_str(s, esc);
            else if (c < 0x20) {
                snprintf(e, sizeof e, "\\u%04x", c);
                sb_str(s, e);
            } else sb_put(s, (const char *)p, 1);
            p++;
            continue;
        }
        /* decode one UTF-8 sequence; invalid bytes become U+FFFD */
        unsigned cp = 0xFFFD;
        int len = 1;
        if ((c & 0xE0) == 0xC0 && (p[1] & 0xC0) == 0x80) {
            cp = (c & 0x1F) << 6 | (p[1] & 0x3F);
            len = 2;
        } else if ((c & 0xF0) == 0xE0 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
            cp = (c & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F);
            len = 3;
        } else if ((c & 0xF8) == 0xF0 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 &&
                   (p[3] & 0xC0) == 0x80) {
            cp = (c & 0x07) << 18 | (p[1] & 0x3F) << 12 | (p[2] & 0x3F) << 6 | (p[3] & 0x3F);
            len = 4;
        }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            snprintf(e, sizeof e, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
            snprintf(e, sizeof e, "\\u%04x", cp);
        }
        sb_str(s, e);
        p += len;
    }
    sb_put(s, "\"", 1);
}

ct_status ct_hw_fingerprint(const ct_hw_profile *hw, const char *model_id, char out[17], char *err,
                            size_t errcap) {
    const char *names[CT_HWF_COUNT];
    int nn = 0;
    for (int f = 0; f < CT_HWF_COUNT; f++)
        if (hw->flags & CT_HWF_BIT(f)) names[nn++] = ct_hw_flag_name((ct_hw_flag)f);
    for (int i = 1; i < nn; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    sbuf s = {0};
    char num[32];
    /* keys in sorted order: class, cores, cpu, flags, gpu, gpu_mem, model */
    sb_str(&s, "{\"class\": ");
    sb_json_str(&s, ct_hw_class_name(ct_hw_classify(hw)));
    snprintf(num, sizeof num, "%d", hw->n_physical);
    sb_str(&s, ", \"cores\": ");
    sb_str(&s, num);
    sb_str(&s, ", \"cpu\": ");
    sb_json_str(&s, hw->cpu_model);
    sb_str(&s, ", \"flags\": [");
    for (int i = 0; i < nn; i++) {
        if (i) sb_str(&s, ", ");
        sb_json_str(&s, names[i]);
    }
    sb_str(&s, "], \"gpu\": ");
    sb_json_str(&s, hw->gpu_name);
    snprintf(num, sizeof num, "%llu", (unsigned long long)(hw->gpu_mem_bytes / (256ull << 20)));
    sb_str(&s, ", \"gpu_mem\": ");
    sb_str(&s, num);
    sb_str(&s, ", \"model\": ");
    sb_json_str(&s, model_id ? model_id : "");
    sb_str(&s, "}");
    if (s.oom) {
        free(s.b);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory building the fingerprint");
    }
    uint8_t d[20];
    ct_sha1(s.b, s.n, d);
    free(s.b);
    for (int i = 0; i < 8; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
    return CT_OK;
}

/* ---- rate and schedule ------------------------------------------------------------------- */

double ct_cal_rate(const ct_chunk_rec *c, int n, int sr) {
    if (sr <= 0) return 0;
    int first = -1, last = -1, count = 0;
    double samples = 0;
    for (int i = 0; i < n; i++) {
        if (c[i].samples <= 0) continue;
        if (first < 0) first = i;
        else samples += (double)c[i].samples;
        last = i;
        count++;
    }
    if (count < 2) return 0;
    double frames = samples / sr * 1000.0 / CT_CAL_FRAME_MS;
    double wall_s = (c[last].t_ms - c[first].t_ms) / 1000.0;
    if (!(wall_s > 0)) return 0;
    return frames / wall_s;
}

static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

void ct_cal_schedule(double r, double ttfa_ms, ct_calibration *o) {
    memset(o, 0, sizeof *o);
    o->ttfa_ms = ttfa_ms;
    if (!(r > 0) || !isfinite(r)) {
        static const int fb[5] = {2, 4, 8, 16, CT_CAL_STEADY};
        o->measured = 0;
        o->adaptive = 1;
        o->min_frames = 2;
        o->margin_ms = 50;
        o->n_ramp = 5;
        memcpy(o->ramp, fb, sizeof fb);
        return;
    }
    o->measured = 1;
    o->rate_frames_per_s = r;
    o->rtf = 12.5 / r;
    double produce = 1000.0 / r;
    double lead = CT_CAL_JITTER_MS + fmax(0.0, produce - CT_CAL_FRAME_MS) * CT_CAL_STEADY;
    o->min_frames = (int)clampd(ceil(lead / CT_CAL_FRAME_MS), 1, CT_CAL_STEADY);
    o->margin_ms = clampd(CT_CAL_JITTER_MS + produce, 20, 400);
    for (int f = o->min_frames; f < CT_CAL_STEADY && o->n_ramp < CT_CAL_MAX_RAMP - 1; f *= 2)
        o->ramp[o->n_ramp++] = f;
    o->ramp[o->n_ramp++] = CT_CAL_STEADY;
    if (o->n_ramp < 2) {
        o->ramp[0] = CT_CAL_STEADY / 2;
        o->ramp[1] = CT_CAL_STEADY;
        o->n_ramp = 2;
    }
    o->adaptive = o->rtf > 0.5;
}

void ct_cal_from_timeline(const ct_chunk_rec *c, int n, int sr, ct_calibration *o) {
    double ttfa = -1;
    for (int i = 0; i < n; i++)
        if (c[i].samples > 0) {
            ttfa = c[i].t_ms;
            break;
        }
    ct_cal_schedule(ct_cal_rate(c, n, sr), ttfa, o);
}

/* ---- JSON -------------------------------------------------------------------------------- */

ct_status ct_cal_parse_timeline(const char *text, size_t len, const char *what, ct_chunk_rec **chunks,
                                int *n, int *sample_rate, char *err, size_t errcap) {
    *chunks = NULL;
    *n = 0;
    *sample_rate = 24000;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s:%d:%d: %s", what, je.line, je.column, je.text);
    json_t *list = root;
    ct_status st = CT_OK;
    if (json_is_object(root)) {
        json_t *sr = json_object_get(root, "sample_rate");
        if (sr) {
            if (!json_is_integer(sr) || json_integer_value(sr) <= 0 || json_integer_value(sr) > 768000) {
                st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: key 'sample_rate': expected a positive integer", what);
                goto done;
            }
            *sample_rate = (int)json_integer_value(sr);
        }
        list = json_object_get(root, "chunks");
    }
    if (!json_is_array(list) || json_array_size(list) > 1000000) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: key 'chunks': expected a list of {t_ms, samples}", what);
        goto done;
    }
    size_t cnt = json_array_size(list);
    ct_chunk_rec *c = calloc(cnt ? cnt : 1, sizeof *c);
    if (!c) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < cnt; i++) {
        json_t *e = json_array_get(list, i), *t = json_object_get(e, "t_ms"),
               *s = json_object_get(e, "samples");
        if (!json_is_number(t) || !json_is_integer(s) || json_integer_value(s) < 0 ||
            !isfinite(json_number_value(t))) {
            free(c);
            st = ct_errf(err, errcap, CT_ERR_FORMAT,
                         "%s: key 'chunks[%zu]': expected {\"t_ms\": number, \"samples\": integer >= 0}",
                         what, i);
            goto done;
        }
        c[i].t_ms = json_number_value(t);
        c[i].samples = json_integer_value(s);
    }
    *chunks = c;
    *n = (int)cnt;
done:
    json_decref(root);
    return st;
}

char *ct_cal_to_json(const ct_calibration *cal, const char *fp, const char *model_id) {
    json_t *o = json_object(), *ramp = json_array();
    if (!o || !ramp) {
        json_decref(o);
        json_decref(ramp);
        return NULL;
    }
    for (int i = 0; i < cal->n_ramp; i++) json_array_append_new(ramp, json_integer(cal->ramp[i]));
    json_t *runs = json_array();
    for (int i = 0; runs && i < cal->n_runs; i++) {
        const ct_cal_run *r = &cal->runs[i];
        json_array_append_new(runs, json_pack("{s:s, s:i, s:i, s:f, s:f, s:f, s:f, s:f}", "placement",
                                              r->serial ? "serial" : "overlapped", "talker_threads", r->talker_threads,
                                              "codec_threads", r->codec_threads, "talker_ms", r->talker_ms,
                                              "predictor_ms", r->predictor_ms, "codec_ms", r->codec_ms, "frame_ms",
                                              r->frame_ms, "prefill_ms_per_token", r->prefill_ms_per_token));
    }
    json_object_set_new(o, "schema", json_integer(CT_CAL_SCHEMA));
    json_object_set_new(o, "fingerprint", json_string(fp ? fp : ""));
    json_object_set_new(o, "model", json_string(model_id ? model_id : cal->model_id));
    json_object_set_new(o, "engine_version", json_string(cal->engine_version));
    json_object_set_new(o, "kernels", json_string(cal->kernels));
    json_object_set_new(o, "talker_weights", json_string(cal->talker_weights));
    json_object_set_new(o, "predictor_weights", json_string(cal->predictor_weights));
    json_object_set_new(o, "runs", runs ? runs : json_array());
    json_object_set_new(o, "measured", json_boolean(cal->measured));
    json_object_set_new(o, "rate_frames_per_s", json_real(cal->rate_frames_per_s));
    json_object_set_new(o, "rtf", json_real(cal->rtf));
    json_object_set_new(o, "ttfa_ms", cal->ttfa_ms >= 0 ? json_real(cal->ttfa_ms) : json_null());
    json_object_set_new(o, "codec_chunk_adaptive", json_boolean(cal->adaptive));
    json_object_set_new(o, "codec_chunk_min_frames", json_integer(cal->min_frames));
    json_object_set_new(o, "codec_chunk_safety_margin_ms", json_real(cal->margin_ms));
    json_object_set_new(o, "codec_chunk_ramp", ramp);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

/* The "runs" array into c; returns the bad key or NULL. */
static const char *parse_runs(json_t *a, ct_calibration *c) {
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        const char *pl = json_string_value(json_object_get(e, "placement"));
        ct_cal_run *r = &c->runs[c->n_runs];
        json_t *tt = json_object_get(e, "talker_threads"), *ct = json_object_get(e, "codec_threads");
        if (!pl || (strcmp(pl, "serial") && strcmp(pl, "overlapped")) || !json_is_integer(tt) ||
            !json_is_integer(ct) || json_integer_value(tt) < 1 || json_integer_value(tt) > 256 ||
            json_integer_value(ct) < 0 || json_integer_value(ct) > 256)
            return "runs[].placement/threads";
        r->serial = !strcmp(pl, "serial");
        r->talker_threads = (int)json_integer_value(tt);
        r->codec_threads = (int)json_integer_value(ct);
        const char *names[5] = {"talker_ms", "predictor_ms", "codec_ms", "frame_ms", "prefill_ms_per_token"};
        double *dst[5] = {&r->talker_ms, &r->predictor_ms, &r->codec_ms, &r->frame_ms, &r->prefill_ms_per_token};
        for (int k = 0; k < 5; k++) {
            json_t *x = json_object_get(e, names[k]);
            if (!json_is_number(x) || !isfinite(json_number_value(x)) || json_number_value(x) < 0 ||
                json_number_value(x) > 1e7)
                return "runs[].<ms>";
            *dst[k] = json_number_value(x);
        }
        if (!(r->frame_ms > 0)) return "runs[].frame_ms";
        c->n_runs++;
    }
    return NULL;
}

const ct_cal_run *ct_cal_best_run(const ct_calibration *c) {
    const ct_cal_run *b = NULL;
    for (int i = 0; c && i < c->n_runs; i++)
        if (!b || c->runs[i].frame_ms < b->frame_ms) b = &c->runs[i];
    return b;
}

ct_status ct_cal_from_json(const char *text, size_t len, ct_calibration *out, char *err, size_t errcap) {
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) return ct_errf(err, errcap, CT_ERR_FORMAT, "line %d:%d: %s", je.line, je.column, je.text);
    ct_calibration c;
    memset(&c, 0, sizeof c);
    const char *bad = NULL;
    json_t *v;
    if (!json_is_object(o)) bad = "(root)";
    else if (!json_is_integer(v = json_object_get(o, "schema")) || json_integer_value(v) != CT_CAL_SCHEMA)
        bad = "schema";
    else if (!json_is_string(v = json_object_get(o, "model"))) bad = "model";
    else if (snprintf(c.model_id, sizeof c.model_id, "%s", json_string_value(v)),
             !json_is_string(v = json_object_get(o, "engine_version")))
        bad = "engine_version";
    else if (snprintf(c.engine_version, sizeof c.engine_version, "%s", json_string_value(v)),
             !json_is_string(v = json_object_get(o, "kernels")) || strlen(json_string_value(v)) >= sizeof c.kernels)
        bad = "kernels";
    else if (snprintf(c.kernels, sizeof c.kernels, "%s", json_string_value(v)),
             !json_is_string(v = json_object_get(o, "talker_weights")) || strlen(json_string_value(v)) >= 8)
        bad = "talker_weights";
    else if (snprintf(c.talker_weights, sizeof c.talker_weights, "%s", json_string_value(v)),
             !json_is_string(v = json_object_get(o, "predictor_weights")) || strlen(json_string_value(v)) >= 8)
        bad = "predictor_weights";
    else if (snprintf(c.predictor_weights, sizeof c.predictor_weights, "%s", json_string_value(v)),
             !json_is_array(v = json_object_get(o, "runs")) || json_array_size(v) > CT_CAL_MAX_RUNS)
        bad = "runs";
    else if ((bad = parse_runs(v, &c)) != NULL) {
    } else if (!json_is_boolean(v = json_object_get(o, "measured"))) bad = "measured";
    else if (c.measured = json_is_true(v), !json_is_number(v = json_object_get(o, "rate_frames_per_s")))
        bad = "rate_frames_per_s";
    else if (c.rate_frames_per_s = json_number_value(v), !json_is_number(v = json_object_get(o, "rtf")))
        bad = "rtf";
    else if (c.rtf = json_number_value(v), !json_is_boolean(v = json_object_get(o, "codec_chunk_adaptive")))
        bad = "codec_chunk_adaptive";
    else if (c.adaptive = json_is_true(v), !json_is_integer(v = json_object_get(o, "codec_chunk_min_frames")) ||
             json_integer_value(v) < 1 || json_integer_value(v) > 1000)
        bad = "codec_chunk_min_frames";
    else if (c.min_frames = (int)json_integer_value(v),
             !json_is_number(v = json_object_get(o, "codec_chunk_safety_margin_ms")) ||
                 json_number_value(v) < 0 || json_number_value(v) > 100000)
        bad = "codec_chunk_safety_margin_ms";
    else {
        c.margin_ms = json_number_value(v);
        v = json_object_get(o, "codec_chunk_ramp");
        if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > CT_CAL_MAX_RAMP) {
            bad = "codec_chunk_ramp";
        } else {
            for (size_t i = 0; i < json_array_size(v) && !bad; i++) {
                json_t *x = json_array_get(v, i);
                if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 1000)
                    bad = "codec_chunk_ramp";
                else c.ramp[c.n_ramp++] = (int)json_integer_value(x);
            }
        }
        json_t *t = json_object_get(o, "ttfa_ms");
        c.ttfa_ms = json_is_number(t) ? json_number_value(t) : -1;
    }
    json_decref(o);
    if (bad) return ct_errf(err, errcap, CT_ERR_FORMAT, "key '%s' missing or invalid", bad);
    *out = c;
    return CT_OK;
}

/* ---- cache files ------------------------------------------------------------------------- */

ct_status ct_cache_root(const char *cache_dir, char *out, size_t cap, char *err, size_t errcap) {
    int n;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (cache_dir && *cache_dir) n = snprintf(out, cap, "%s", cache_dir);
    else if (xdg && *xdg) n = snprintf(out, cap, "%s/codectalk", xdg);
    else if (home && *home) n = snprintf(out, cap, "%s/.cache/codectalk", home);
    else return ct_errf(err, errcap, CT_ERR_STATE, "neither XDG_CACHE_HOME nor HOME is set");
    if (n < 0 || (size_t)n >= cap) return ct_errf(err, errcap, CT_ERR_LIMIT, "cache path too long");
    return CT_OK;
}

ct_status ct_cal_cache_path(const char *cache_dir, const char *fp, const char *tw, const char *pw, char *out,
                            size_t cap, char *err, size_t errcap) {
    char root[1024];
    ct_status st = ct_cache_root(cache_dir, root, sizeof root, err, errcap);
    if (st != CT_OK) return st;
    int n = snprintf(out, cap, "%s/calibration/%s-%s-%s.json", root, fp, tw, pw);
    if (n < 0 || (size_t)n >= cap) return ct_errf(err, errcap, CT_ERR_LIMIT, "cache path too long");
    return CT_OK;
}

ct_status ct_cal_save(const char *path, const ct_calibration *cal, const char *fp, const char *model_id,
                      char *err, size_t errcap) {
    ct_status st = ct_mkdir_parents(path, err, errcap);
    if (st != CT_OK) return st;
    char *js = ct_cal_to_json(cal, fp, model_id);
    if (!js) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    st = ct_write_file_atomic(path, js, strlen(js), err, errcap);
    free(js);
    return st;
}

ct_status ct_cal_load(const char *path, const char *model_id, const char *engine_version, const char *kernels,
                      ct_calibration *out, int *found, char *warn, size_t wcap) {
    *found = 0;
    if (wcap) warn[0] = 0;
    if (!ct_file_exists(path)) return CT_OK;
    char *buf = NULL, e[256];
    size_t n = 0;
    if (ct_read_file(path, 1u << 20, &buf, &n, e, sizeof e) != CT_OK) {
        ct_errf(warn, wcap, CT_OK, "calibration cache '%s' unreadable, ignored: %s", path, e);
        return CT_OK;
    }
    ct_status st = ct_cal_from_json(buf, n, out, e, sizeof e);
    free(buf);
    if (st != CT_OK) {
        ct_errf(warn, wcap, CT_OK, "calibration cache '%s' is corrupt, ignored: %s", path, e);
        return CT_OK;
    }
    if (model_id && strcmp(out->model_id, model_id)) {
        ct_errf(warn, wcap, CT_OK, "calibration cache '%s' is for model '%s', not '%s': ignored", path, out->model_id,
                model_id);
        return CT_OK;
    }
    if (engine_version && strcmp(out->engine_version, engine_version)) {
        ct_errf(warn, wcap, CT_OK, "calibration cache '%s' was measured by engine %s, this is %s: ignored", path,
                out->engine_version, engine_version);
        return CT_OK;
    }
    if (kernels && strcmp(out->kernels, kernels)) {
        ct_errf(warn, wcap, CT_OK, "calibration cache '%s' was measured with kernels '%s', this run uses '%s': ignored",
                path, out->kernels, kernels);
        return CT_OK;
    }
    *found = 1;
    return CT_OK;
}
