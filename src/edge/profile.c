/* Deploy profile schema, strict libyaml event loader, YAML writer with per-value provenance,
   and the `--profile auto` layer chain. */
#include "edge/profile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/fileio.h"
#include "edge/probe.h"
#include "model/config.h"

#define I64MAX INT64_C(9223372036854775807)

static const ct_pkey_info KEYS[CT_PK_COUNT] = {
    {"description", CT_PK_STR, 0, 0, NULL, "", "(header comment)", "what this profile is for"},
    {"engine.max_streams", CT_PK_INT, 1, 64, NULL, "1", "max_num_seqs (both stages)",
     "concurrent streams admitted; KV must fit all of them without preemption"},
    {"engine.parallel_init", CT_PK_BOOL, 0, 1, NULL, "false", "orchestrator.parallel_stage_init",
     "load talker and codec concurrently"},
    {"engine.stage_init_timeout_s", CT_PK_INT, 1, 86400, NULL, "300", "stage_init_timeout",
     "seconds one stage may take to load"},
    {"engine.init_timeout_s", CT_PK_INT, 1, 86400, NULL, "600", "init_timeout",
     "seconds the whole engine may take to load"},
    {"engine.placement", CT_PK_STR, 0, 0, "overlapped serial auto", "auto",
     "async_chunk (true: the codec overlaps the talker)",
     "where talker and codec run: overlapped, serial (one pool), auto (serial on <= 2 CPUs)"},
    {"talker.device", CT_PK_STR, 0, 0, NULL, "cpu", "stage 0 devices",
     "cpu, cuda:<n> or npu:<vendor>"},
    {"talker.dtype", CT_PK_STR, 0, 0, "f32 bf16 f16 int8 int4", "bf16", "stage 0 engine_args.dtype",
     "talker + code predictor weight/KV dtype (activations f32)"},
    {"talker.cpus", CT_PK_CPUS, 0, 0, NULL, "", "stage 0 VLLM_CPU_OMP_THREADS_BIND",
     "CPUs the talker threads are pinned to; \"\" = unpinned"},
    {"talker.max_context", CT_PK_INT, 16, 1048576, NULL, "2048", "stage 0 max_model_len",
     "talker tokens per stream (prompt + frames)"},
    {"talker.kv_budget_bytes", CT_PK_U64, 0, 0, NULL, "0",
     "stage 0 kv_cache_memory_bytes (replaces gpu_memory_utilization)",
     "talker KV cache bytes for all streams; 0 = max_streams x max_context"},
    {"talker.prefill_chunk_tokens", CT_PK_INT, 1, 65536, NULL, "512", "max_num_batched_tokens",
     "prompt tokens per prefill step"},
    {"talker.eager", CT_PK_BOOL, 0, 1, NULL, "true", "stage 0 enforce_eager",
     "true = no warm-up pass at load; false = warm up each warmup_batch_sizes"},
    {"talker.warmup_batch_sizes", CT_PK_LIST, 1, 64, NULL, "[]",
     "compilation_config.cudagraph_capture_sizes", "batch sizes pre-run at load when not eager"},
    {"codec.device", CT_PK_STR, 0, 0, NULL, "cpu", "stage 1 devices", "cpu, cuda:<n> or npu:<vendor>"},
    {"codec.dtype", CT_PK_STR, 0, 0, "f32", "f32", "stage 1 engine_args.dtype",
     "the codec decoder always runs in f32"},
    {"codec.cpus", CT_PK_CPUS, 0, 0, NULL, "", "stage 1 VLLM_CPU_OMP_THREADS_BIND",
     "CPUs the codec threads are pinned to"},
    {"codec.max_tokens", CT_PK_INT, 16, 1048576, NULL, "16384", "stage 1 max_model_len",
     "codec tokens buffered per stream"},
    {"codec.memory_budget_bytes", CT_PK_U64, 0, 0, NULL, "0", "stage 1 kv_cache_memory_bytes",
     "codec ring/scratch budget; 0 = minimum"},
    {"codec.eager", CT_PK_BOOL, 0, 1, NULL, "true", "stage 1 enforce_eager", "as talker.eager"},
    {"streaming.enabled", CT_PK_BOOL, 0, 1, NULL, "true", "connector codec_streaming",
     "emit audio chunk by chunk"},
    {"streaming.chunk_frames", CT_PK_INT, 1, 1000, NULL, "25", "codec_chunk_frames",
     "steady chunk, codec frames (80 ms each)"},
    {"streaming.left_context_frames", CT_PK_INT, 0, 1000, NULL, "72", "codec_left_context_frames",
     "decoder left context (its sliding window)"},
    {"streaming.chunk_ramp", CT_PK_LIST, 1, 1000, NULL, "[25]", "codec_chunk_ramp",
     "frames of the first chunks, then chunk_frames"},
    {"streaming.adaptive", CT_PK_BOOL, 0, 1, NULL, "false", "codec_chunk_adaptive",
     "shrink chunks when playback slack runs low"},
    {"streaming.min_frames", CT_PK_INT, 1, 1000, NULL, "2", "codec_chunk_min_frames",
     "smallest adaptive chunk"},
    {"streaming.safety_margin_ms", CT_PK_INT, 0, 100000, NULL, "50", "codec_chunk_safety_margin_ms",
     "slack kept ahead of playback"},
    {"streaming.decode_batch_max_size", CT_PK_INT, 1, 64, NULL, "1", "decode_batch_max_size",
     "chunks the codec decodes in one call"},
    {"streaming.first_chunk_wait_ms", CT_PK_INT, 1, 3600000, NULL, "3000",
     "connector_get_max_wait_first_chunk", "give up when the first chunk takes longer"},
    {"streaming.chunk_wait_ms", CT_PK_INT, 1, 3600000, NULL, "300", "connector_get_max_wait",
     "give up when a later chunk takes longer"},
};

const ct_pkey_info *ct_profile_key(int idx) {
    return (idx >= 0 && idx < CT_PK_COUNT) ? &KEYS[idx] : NULL;
}

int ct_profile_find(const char *key) {
    for (int i = 0; i < CT_PK_COUNT; i++)
        if (strcmp(KEYS[i].key, key) == 0) return i;
    return -1;
}

static void set_layer(ct_pval *v, const char *layer) {
    v->set = 1;
    snprintf(v->layer, sizeof v->layer, "%s", layer ? layer : "?");
}

void ct_profile_set_i(ct_profile *p, ct_pkey k, int64_t x, const char *layer) {
    p->v[k].i = x;
    set_layer(&p->v[k], layer);
}

void ct_profile_set_s(ct_profile *p, ct_pkey k, const char *s, const char *layer) {
    snprintf(p->v[k].s, sizeof p->v[k].s, "%s", s);
    set_layer(&p->v[k], layer);
}

void ct_profile_set_list(ct_profile *p, ct_pkey k, const int *x, int n, const char *layer) {
    if (n > CT_PROFILE_MAX_LIST) n = CT_PROFILE_MAX_LIST;
    p->v[k].n = n < 0 ? 0 : n;
    for (int i = 0; i < p->v[k].n; i++) p->v[k].list[i] = x[i];
    set_layer(&p->v[k], layer);
}

/* ---- value parsing ------------------------------------------------------------------------ */

static int parse_i64(const char *s, int64_t *out) {
    if (!*s) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

static int in_choices(const char *choices, const char *s) {
    size_t l = strlen(s);
    for (const char *c = choices; *c;) {
        const char *e = strchr(c, ' ');
        size_t cl = e ? (size_t)(e - c) : strlen(c);
        if (cl == l && memcmp(c, s, l) == 0) return 1;
        if (!e) break;
        c = e + 1;
    }
    return 0;
}

/* Parses one scalar (or a list's elements, via parse_list) into a fresh value. */
static ct_status parse_value(const ct_pkey_info *k, const char *s, ct_pval *v, char *why, size_t wcap) {
    memset(v, 0, sizeof *v);
    switch (k->kind) {
    case CT_PK_INT:
        if (!parse_i64(s, &v->i) || v->i < k->lo || v->i > k->hi)
            return ct_errf(why, wcap, CT_ERR_FORMAT, "expected an integer in [%lld, %lld], got '%.40s'",
                           (long long)k->lo, (long long)k->hi, s);
        return CT_OK;
    case CT_PK_U64:
        if (!parse_i64(s, &v->i) || v->i < 0)
            return ct_errf(why, wcap, CT_ERR_FORMAT, "expected a byte count, got '%.40s'", s);
        return CT_OK;
    case CT_PK_BOOL:
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "yes")) v->i = 1;
        else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "no")) v->i = 0;
        else return ct_errf(why, wcap, CT_ERR_FORMAT, "expected true or false, got '%.40s'", s);
        return CT_OK;
    case CT_PK_STR:
        if (strlen(s) >= sizeof v->s)
            return ct_errf(why, wcap, CT_ERR_FORMAT, "value longer than %zu bytes", sizeof v->s - 1);
        if (k->choices && !in_choices(k->choices, s))
            return ct_errf(why, wcap, CT_ERR_FORMAT, "expected one of {%s}, got '%.40s'", k->choices, s);
        if (k == &KEYS[CT_PK_TALKER_DEVICE] || k == &KEYS[CT_PK_CODEC_DEVICE]) {
            int ok = !strcmp(s, "cpu") || (!strncmp(s, "npu:", 4) && s[4]);
            if (!strncmp(s, "cuda:", 5) && s[5]) {
                int64_t d;
                ok = parse_i64(s + 5, &d) && d >= 0 && d < 64;
            }
            if (!ok)
                return ct_errf(why, wcap, CT_ERR_FORMAT, "expected cpu, cuda:<n> or npu:<vendor>, got '%.40s'", s);
        }
        snprintf(v->s, sizeof v->s, "%s", s);
        return CT_OK;
    case CT_PK_CPUS: {
        int cpus[CT_HW_MAX_CPUS], n = 0;
        char e[128];
        if (ct_cpu_range_parse(s, cpus, CT_HW_MAX_CPUS, &n, e, sizeof e) != CT_OK)
            return ct_errf(why, wcap, CT_ERR_FORMAT, "%s", e);
        char norm[1024];
        ct_cpu_range_str(cpus, n, norm, sizeof norm);
        if (strlen(norm) >= sizeof v->s)
            return ct_errf(why, wcap, CT_ERR_FORMAT, "CPU list too long");
        memcpy(v->s, norm, strlen(norm) + 1);
        return CT_OK;
    }
    case CT_PK_LIST: {
        const char *q = s;
        while (isspace((unsigned char)*q)) q++;
        int br = *q == '[';
        if (br) q++;
        char tok[32];
        for (;;) {
            while (isspace((unsigned char)*q)) q++;
            if ((br && *q == ']') || (!br && !*q)) break;
            size_t l = 0;
            while (*q && *q != ',' && *q != ']' && !isspace((unsigned char)*q) && l + 1 < sizeof tok)
                tok[l++] = *q++;
            tok[l] = 0;
            int64_t x;
            if (!parse_i64(tok, &x) || x < k->lo || x > k->hi || v->n >= CT_PROFILE_MAX_LIST)
                return ct_errf(why, wcap, CT_ERR_FORMAT,
                               "expected at most %d integers in [%lld, %lld]", CT_PROFILE_MAX_LIST,
                               (long long)k->lo, (long long)k->hi);
            v->list[v->n++] = (int)x;
            while (isspace((unsigned char)*q)) q++;
            if (*q == ',') q++;
            else if (!((br && *q == ']') || (!br && !*q)))
                return ct_errf(why, wcap, CT_ERR_FORMAT, "bad list '%.40s'", s);
        }
        if (br) {
            q++;
            while (isspace((unsigned char)*q)) q++;
            if (*q) return ct_errf(why, wcap, CT_ERR_FORMAT, "text after the list '%.40s'", s);
        }
        return CT_OK;
    }
    }
    return ct_errf(why, wcap, CT_ERR_INTERNAL, "bad key kind");
}

void ct_profile_defaults(ct_profile *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < CT_PK_COUNT; i++) {
        char why[160];
        if (parse_value(&KEYS[i], KEYS[i].deflt, &p->v[i], why, sizeof why) != CT_OK) continue;
        set_layer(&p->v[i], "builtin");
    }
}

ct_status ct_profile_set(ct_profile *p, const char *key, const char *value, const char *layer,
                         char *err, size_t errcap) {
    int idx = ct_profile_find(key);
    if (idx < 0) return ct_errf(err, errcap, CT_ERR_FORMAT, "unknown key '%.80s'", key);
    ct_pval v;
    char why[200];
    if (parse_value(&KEYS[idx], value, &v, why, sizeof why) != CT_OK)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "key '%s': %s", key, why);
    set_layer(&v, layer);
    p->v[idx] = v;
    return CT_OK;
}

/* ---- YAML loader (event API) -------------------------------------------------------------- */

typedef struct {
    yaml_parser_t ps;
    const char *what, *layer;
    ct_profile *p;
    char *err;
    size_t cap;
    unsigned char seen[CT_PK_COUNT];
} yctx;

static ct_status ynext(yctx *c, yaml_event_t *ev) {
    if (!yaml_parser_parse(&c->ps, ev))
        return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: YAML syntax error: %s", c->what,
                       c->ps.problem_mark.line + 1, c->ps.problem ? c->ps.problem : "?");
    return CT_OK;
}

static int is_section(const char *prefix) {
    size_t l = strlen(prefix);
    for (int i = 0; i < CT_PK_COUNT; i++)
        if (strncmp(KEYS[i].key, prefix, l) == 0 && KEYS[i].key[l] == '.') return 1;
    return 0;
}

static int is_null_scalar(const yaml_event_t *ev) {
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *s = (const char *)ev->data.scalar.value;
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static ct_status ymapping(yctx *c, const char *prefix, int depth);

/* Value of `key` (already known to be a schema key or section) starting with event ev. */
static ct_status yvalue(yctx *c, const char *key, size_t line, yaml_event_t *ev, int depth) {
    ct_status st = CT_OK;
    if (ev->type == YAML_ALIAS_EVENT)
        return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: aliases are not allowed (key '%s')",
                       c->what, (size_t)ev->start_mark.line + 1, key);
    if (ev->type == YAML_MAPPING_START_EVENT) {
        if (!is_section(key) || depth >= 3)
            return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: unknown section '%s'", c->what, line, key);
        return ymapping(c, key, depth + 1);
    }
    int idx = ct_profile_find(key);
    if (idx < 0 && is_section(key))
        return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: section '%s' must be a mapping",
                       c->what, line, key);
    if (idx < 0)
        return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: unknown key '%s'", c->what, line, key);
    if (c->seen[idx])
        return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: duplicate key '%s'", c->what, line, key);
    c->seen[idx] = 1;
    const ct_pkey_info *k = &KEYS[idx];
    char why[200];
    ct_pval v;
    if (ev->type == YAML_SCALAR_EVENT) {
        if (k->kind == CT_PK_LIST)
            return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: key '%s': expected a list [a, b, ...]",
                           c->what, line, key);
        if (is_null_scalar(ev) && k->kind != CT_PK_STR && k->kind != CT_PK_CPUS)
            return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: key '%s' has no value", c->what, line, key);
        const char *s = is_null_scalar(ev) ? "" : (const char *)ev->data.scalar.value;
        if (parse_value(k, s, &v, why, sizeof why) != CT_OK)
            return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: key '%s': %s", c->what, line, key, why);
    } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
        if (k->kind != CT_PK_LIST)
            return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: key '%s': a list is not allowed here",
                           c->what, line, key);
        memset(&v, 0, sizeof v);
        for (;;) {
            yaml_event_t e;
            if ((st = ynext(c, &e)) != CT_OK) return st;
            if (e.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&e);
                break;
            }
            int64_t x = 0;
            int ok = e.type == YAML_SCALAR_EVENT && parse_i64((const char *)e.data.scalar.value, &x) &&
                     x >= k->lo && x <= k->hi && v.n < CT_PROFILE_MAX_LIST;
            size_t el = (size_t)e.start_mark.line + 1;
            yaml_event_delete(&e);
            if (!ok)
                return ct_errf(c->err, c->cap, CT_ERR_FORMAT,
                               "%s:%zu: key '%s': expected at most %d integers in [%lld, %lld]", c->what,
                               el, key, CT_PROFILE_MAX_LIST, (long long)k->lo, (long long)k->hi);
            v.list[v.n++] = (int)x;
        }
    } else {
        return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: key '%s': unexpected value", c->what, line, key);
    }
    set_layer(&v, c->layer);
    c->p->v[idx] = v;
    return CT_OK;
}

/* Body of a mapping whose MAPPING-START was consumed. */
static ct_status ymapping(yctx *c, const char *prefix, int depth) {
    for (;;) {
        yaml_event_t ev;
        ct_status st = ynext(c, &ev);
        if (st != CT_OK) return st;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return CT_OK;
        }
        size_t line = (size_t)ev.start_mark.line + 1;
        if (ev.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&ev);
            return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: keys must be plain names", c->what, line);
        }
        char key[160];
        int kl = prefix ? snprintf(key, sizeof key, "%s.%s", prefix, (const char *)ev.data.scalar.value)
                        : snprintf(key, sizeof key, "%s", (const char *)ev.data.scalar.value);
        yaml_event_delete(&ev);
        if (kl < 0 || (size_t)kl >= sizeof key)
            return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s:%zu: key too long", c->what, line);
        yaml_event_t val;
        if ((st = ynext(c, &val)) != CT_OK) return st;
        st = yvalue(c, key, line, &val, depth);
        yaml_event_delete(&val);
        if (st != CT_OK) return st;
    }
}

ct_status ct_profile_load_yaml(ct_profile *p, const char *text, size_t len, const char *what,
                               const char *layer, char *err, size_t errcap) {
    yctx c;
    memset(&c, 0, sizeof c);
    c.what = what ? what : "profile";
    c.layer = layer;
    c.p = p;
    c.err = err;
    c.cap = errcap;
    if (!yaml_parser_initialize(&c.ps)) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    yaml_parser_set_input_string(&c.ps, (const unsigned char *)text, len);
    ct_status st = CT_OK;
    int docs = 0;
    for (;;) {
        yaml_event_t ev;
        if ((st = ynext(&c, &ev)) != CT_OK) break;
        yaml_event_type_t t = ev.type;
        size_t line = (size_t)ev.start_mark.line + 1;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
            yaml_event_delete(&ev);
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s:%zu: only one YAML document allowed", c.what, line);
            break;
        }
        if (t == YAML_MAPPING_START_EVENT) {
            yaml_event_delete(&ev);
            if ((st = ymapping(&c, NULL, 1)) != CT_OK) break;
            continue;
        }
        int bad = t == YAML_SEQUENCE_START_EVENT || t == YAML_ALIAS_EVENT ||
                  (t == YAML_SCALAR_EVENT && !is_null_scalar(&ev));
        yaml_event_delete(&ev);
        if (bad) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s:%zu: a profile must be a mapping of sections",
                         c.what, line);
            break;
        }
    }
    yaml_parser_delete(&c.ps);
    return st;
}

ct_status ct_profile_load_file(ct_profile *p, const char *path, const char *layer, char *err,
                               size_t errcap) {
    char *buf = NULL;
    size_t n = 0;
    ct_status st = ct_read_file(path, 1u << 20, &buf, &n, err, errcap);
    if (st != CT_OK) return st;
    st = ct_profile_load_yaml(p, buf, n, path, layer, err, errcap);
    free(buf);
    return st;
}

ct_status ct_profile_validate(const ct_profile *p, char *err, size_t errcap) {
    const ct_pval *r = &p->v[CT_PK_STREAM_RAMP];
    int steady = (int)p->v[CT_PK_STREAM_CHUNK_FRAMES].i;
    if (r->n < 1)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "streaming.chunk_ramp must have at least one entry");
    for (int i = 1; i < r->n; i++)
        if (r->list[i] < r->list[i - 1])
            return ct_errf(err, errcap, CT_ERR_FORMAT, "streaming.chunk_ramp must not decrease");
    if (r->list[r->n - 1] > steady)
        return ct_errf(err, errcap, CT_ERR_FORMAT,
                       "streaming.chunk_ramp ends at %d, above streaming.chunk_frames %d",
                       r->list[r->n - 1], steady);
    if (p->v[CT_PK_STREAM_MIN_FRAMES].i > steady)
        return ct_errf(err, errcap, CT_ERR_FORMAT,
                       "streaming.min_frames %lld is above streaming.chunk_frames %d",
                       (long long)p->v[CT_PK_STREAM_MIN_FRAMES].i, steady);
    return CT_OK;
}

/* ---- writer ------------------------------------------------------------------------------- */

typedef struct {
    char *b;
    size_t n, cap;
    int oom;
} obuf;

static void oput(obuf *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void oput(obuf *o, const char *fmt, ...) {
    if (o->oom) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (o->n + (size_t)n + 1 > o->cap) {
        size_t nc = (o->cap + (size_t)n + 1) * 2;
        char *nb = realloc(o->b, nc);
        if (!nb) {
            o->oom = 1;
            return;
        }
        o->b = nb;
        o->cap = nc;
    }
    va_start(ap, fmt);
    vsnprintf(o->b + o->n, o->cap - o->n, fmt, ap);
    va_end(ap);
    o->n += (size_t)n;
}

static void quote(const char *s, char *out, size_t cap) {
    size_t j = 0;
    if (cap < 3) return;
    out[j++] = '"';
    for (; *s && j + 3 < cap; s++) {
        if (*s == '"' || *s == '\\') out[j++] = '\\';
        out[j++] = (char)((unsigned char)*s < 0x20 ? ' ' : *s);
    }
    out[j++] = '"';
    out[j] = 0;
}

char *ct_profile_to_yaml(const ct_profile *p, int explain, const char *header) {
    obuf o = {0};
    if (header) {
        const char *h = header;
        while (*h) {
            const char *e = strchr(h, '\n');
            size_t l = e ? (size_t)(e - h) : strlen(h);
            oput(&o, "# %.*s\n", (int)l, h);
            h += l + (e ? 1 : 0);
        }
    }
    char section[32] = "";
    for (int i = 0; i < CT_PK_COUNT; i++) {
        const ct_pkey_info *k = &KEYS[i];
        const ct_pval *v = &p->v[i];
        const char *dot = strchr(k->key, '.');
        const char *name = k->key;
        const char *indent = "";
        if (dot) {
            size_t sl = (size_t)(dot - k->key);
            if (strlen(section) != sl || strncmp(section, k->key, sl) != 0) {
                snprintf(section, sizeof section, "%.*s", (int)sl, k->key);
                oput(&o, "%s:\n", section);
            }
            name = dot + 1;
            indent = "  ";
        }
        char val[300];
        switch (k->kind) {
        case CT_PK_INT:
        case CT_PK_U64: snprintf(val, sizeof val, "%lld", (long long)v->i); break;
        case CT_PK_BOOL: snprintf(val, sizeof val, "%s", v->i ? "true" : "false"); break;
        case CT_PK_STR:
        case CT_PK_CPUS: quote(v->s, val, sizeof val); break;
        case CT_PK_LIST: {
            size_t u = 0;
            val[u++] = '[';
            for (int j = 0; j < v->n && u + 16 < sizeof val; j++)
                u += (size_t)snprintf(val + u, sizeof val - u, "%s%d", j ? ", " : "", v->list[j]);
            val[u++] = ']';
            val[u] = 0;
            break;
        }
        }
        char line[400];
        snprintf(line, sizeof line, "%s%s: %s", indent, name, val);
        if (explain) oput(&o, "%-44s # %s | %s\n", line, v->layer, k->vllm);
        else oput(&o, "%s\n", line);
    }
    if (o.oom) {
        free(o.b);
        return NULL;
    }
    return o.b;
}

/* ---- layers --------------------------------------------------------------------------------- */

void ct_profile_apply_derived(ct_profile *p, const ct_derived *d, const char *layer) {
    ct_profile_set_i(p, CT_PK_ENGINE_MAX_STREAMS, d->max_num_seqs, layer);
    ct_profile_set_i(p, CT_PK_ENGINE_STAGE_INIT_TIMEOUT, d->stage_init_timeout_s, layer);
    ct_profile_set_i(p, CT_PK_ENGINE_INIT_TIMEOUT, d->init_timeout_s, layer);
    ct_profile_set_s(p, CT_PK_TALKER_DTYPE, d->dtype, layer);
    ct_profile_set_i(p, CT_PK_TALKER_MAX_CONTEXT, d->max_len0, layer);
    ct_profile_set_i(p, CT_PK_TALKER_KV_BUDGET, (int64_t)(d->kv0_bytes > (uint64_t)I64MAX ? (uint64_t)I64MAX : d->kv0_bytes), layer);
    ct_profile_set_i(p, CT_PK_TALKER_EAGER, d->eager0, layer);
    if (d->n_capture) ct_profile_set_list(p, CT_PK_TALKER_WARMUP, d->capture_sizes, d->n_capture, layer);
    ct_profile_set_i(p, CT_PK_CODEC_MAX_TOKENS, d->max_len1, layer);
    ct_profile_set_i(p, CT_PK_CODEC_MEMORY_BUDGET, (int64_t)(d->kv1_bytes > (uint64_t)I64MAX ? (uint64_t)I64MAX : d->kv1_bytes), layer);
    ct_profile_set_i(p, CT_PK_CODEC_EAGER, d->eager1, layer);
    if (d->cpu_bind) {
        ct_profile_set_s(p, CT_PK_TALKER_DEVICE, "cpu", layer);
        ct_profile_set_s(p, CT_PK_CODEC_DEVICE, "cpu", layer);
        ct_profile_set_s(p, CT_PK_TALKER_CPUS, d->cpus0, layer);
        ct_profile_set_s(p, CT_PK_CODEC_CPUS, d->cpus1, layer);
    }
    ct_profile_set_i(p, CT_PK_STREAM_ADAPTIVE, d->chunk_adaptive, layer);
    ct_profile_set_i(p, CT_PK_STREAM_MIN_FRAMES, d->chunk_min_frames, layer);
    ct_profile_set_i(p, CT_PK_STREAM_MARGIN_MS, d->chunk_margin_ms, layer);
    ct_profile_set_i(p, CT_PK_STREAM_DECODE_BATCH, d->decode_batch_max_size, layer);
}

void ct_profile_apply_calibration(ct_profile *p, const ct_calibration *c, const char *layer) {
    ct_profile_set_list(p, CT_PK_STREAM_RAMP, c->ramp, c->n_ramp, layer);
    ct_profile_set_i(p, CT_PK_STREAM_MIN_FRAMES, c->min_frames, layer);
    ct_profile_set_i(p, CT_PK_STREAM_MARGIN_MS, (int64_t)lround(c->margin_ms), layer);
    if (c->adaptive) ct_profile_set_i(p, CT_PK_STREAM_ADAPTIVE, 1, layer);
}

void ct_model_id(const char *dir, char *out, size_t cap) {
    if (!dir) {
        snprintf(out, cap, "qwen3-tts");
        return;
    }
    ct_config *cfg = malloc(sizeof *cfg);
    char e[128];
    if (cfg && ct_config_load(dir, cfg, e, sizeof e) == CT_OK) {
        snprintf(out, cap, "qwen3-tts-12hz-%s-%s", cfg->size_tag, ct_model_kind_name(cfg->kind));
    } else {
        size_t l = strlen(dir);
        while (l > 1 && dir[l - 1] == '/') l--;
        size_t s = l;
        while (s > 0 && dir[s - 1] != '/') s--;
        snprintf(out, cap, "%.*s", (int)(l - s), dir + s);
    }
    free(cfg);
}

static void warn(ct_auto_report *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void warn(ct_auto_report *r, const char *fmt, ...) {
    size_t u = strlen(r->warnings);
    if (u + 3 >= sizeof r->warnings) return;
    if (u) {
        memcpy(r->warnings + u, "; ", 3);
        u += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->warnings + u, sizeof r->warnings - u, fmt, ap);
    va_end(ap);
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The profiles directory: option, $CODECTALK_PROFILE_DIR, else <source tree>/profiles. */
static const char *profiles_dir(const ct_auto_opts *o, char *buf, size_t cap) {
    if (o && o->profiles_dir) return o->profiles_dir;
    const char *e = getenv("CODECTALK_PROFILE_DIR");
    if (e && *e) return e;
#ifdef CT_ASSET_DIR
    /* CT_ASSET_DIR is <repo>/assets; profiles/ is its sibling */
    const char *a = CT_ASSET_DIR;
    const char *slash = strrchr(a, '/');
    size_t l = slash ? (size_t)(slash - a) : 0;
    if (l > 0 && snprintf(buf, cap, "%.*s/profiles", (int)l, a) < (int)cap) return buf;
#endif
    (void)buf;
    (void)cap;
    return "profiles";
}

static ct_status apply_sets(ct_profile *p, const ct_auto_opts *o, char *err, size_t errcap) {
    for (int i = 0; o && i < o->n_sets; i++) {
        const char *kv = o->sets[i], *eq = strchr(kv, '=');
        if (!eq || eq == kv)
            return ct_errf(err, errcap, CT_ERR_FORMAT, "--set '%.80s': expected key=value", kv);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv) < 127 ? (int)(eq - kv) : 127, kv);
        ct_status st = ct_profile_set(p, key, eq + 1, "flag --set", err, errcap);
        if (st != CT_OK) return st;
    }
    return CT_OK;
}

ct_status ct_profile_auto(const ct_auto_opts *o, ct_profile *p, ct_auto_report *r, char *err,
                          size_t errcap) {
    static const ct_auto_opts none = {0};
    if (!o) o = &none;
    memset(r, 0, sizeof *r);
    ct_profile_defaults(p);
    char pdbuf[1024];
    const char *pd = profiles_dir(o, pdbuf, sizeof pdbuf);
    char layer[CT_PROFILE_LAYER_LEN];
    ct_status st;

    int pl = snprintf(r->base_path, sizeof r->base_path, "%s/qwen3_tts.yaml", pd);
    if (pl < 0 || (size_t)pl >= sizeof r->base_path)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "profiles directory path too long");
    if (ct_file_exists(r->base_path)) {
        st = ct_profile_load_file(p, r->base_path, "base qwen3_tts.yaml", err, errcap);
        if (st != CT_OK) return st;
    } else {
        warn(r, "base profile '%s' not found; builtin values used", r->base_path);
    }

    if (o->hw) r->hw = *o->hw;
    else if ((st = ct_hw_detect(o->probe_root, &r->hw, err, errcap)) != CT_OK) return st;
    ct_hw_class cls = ct_hw_classify(&r->hw);
    pl = snprintf(r->hw_overlay_path, sizeof r->hw_overlay_path, "%s/hardware/%s.yaml", pd,
                  ct_hw_class_name(cls));
    if (pl > 0 && (size_t)pl < sizeof r->hw_overlay_path && ct_file_exists(r->hw_overlay_path)) {
        snprintf(layer, sizeof layer, "hardware %s.yaml", ct_hw_class_name(cls));
        if ((st = ct_profile_load_file(p, r->hw_overlay_path, layer, err, errcap)) != CT_OK) return st;
        r->hw_overlay_found = 1;
    }

    ct_derive_in in = {0, {0, 0, 0}, o->max_cpus};
    if (o->model_dir) {
        if ((st = ct_model_weights_bytes(o->model_dir, &in.weights_bytes, err, errcap)) != CT_OK) return st;
        if ((st = ct_model_kv_geometry(o->model_dir, &in.kv, err, errcap)) != CT_OK) return st;
    }
    ct_model_id(o->model_dir, r->model_id, sizeof r->model_id);
    ct_derive(&r->hw, &in, &r->derived);
    ct_profile_apply_derived(p, &r->derived, "derived");

    if ((st = ct_hw_fingerprint(&r->hw, r->model_id, r->fingerprint, err, errcap)) != CT_OK) return st;
    if (!o->no_calibration &&
        ct_cal_cache_path(o->cache_dir, r->fingerprint, r->cache_path, sizeof r->cache_path, NULL, 0) == CT_OK) {
        char w[512];
        int found = 0;
        ct_cal_load(r->cache_path, &r->cal, &found, w, sizeof w);
        if (w[0]) warn(r, "%s", w);
        if (found) {
            r->have_calibration = 1;
            snprintf(layer, sizeof layer, "calibration %s", r->fingerprint);
            ct_profile_apply_calibration(p, &r->cal, layer);
        }
    }
    if (o->user_file) {
        snprintf(layer, sizeof layer, "user %.50s", base_name(o->user_file));
        if ((st = ct_profile_load_file(p, o->user_file, layer, err, errcap)) != CT_OK) return st;
    }
    if ((st = apply_sets(p, o, err, errcap)) != CT_OK) return st;
    return ct_profile_validate(p, err, errcap);
}

ct_status ct_profile_resolve(const char *spec, const ct_auto_opts *o, ct_profile *p, char *err,
                             size_t errcap) {
    if (!spec || !strcmp(spec, "auto")) {
        ct_auto_report *r = malloc(sizeof *r);
        if (!r) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
        ct_status st = ct_profile_auto(o, p, r, err, errcap);
        free(r);
        return st;
    }
    ct_profile_defaults(p);
    char layer[CT_PROFILE_LAYER_LEN];
    snprintf(layer, sizeof layer, "user %.50s", base_name(spec));
    ct_status st = ct_profile_load_file(p, spec, layer, err, errcap);
    if (st == CT_OK) st = apply_sets(p, o, err, errcap);
    if (st == CT_OK) st = ct_profile_validate(p, err, errcap);
    return st;
}
