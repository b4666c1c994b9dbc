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

#include "codec/codec.h"
#include "core/fileio.h"
#include "edge/machine.h"
#include "stream/schedule.h"
#include "edge/probe.h"
#include "kernels/cpu.h"
#include "model/config.h"

#define I64MAX INT64_C(9223372036854775807)

static const ct_pkey_info KEYS[CT_PK_COUNT] = {
    {"description", CT_PK_STR, 0, 0, NULL, "", "-", "what this profile is for"},
    {"engine.max_streams", CT_PK_INT, 1, 64, NULL, "1", "max_num_seqs",
     "streams generating at once; the KV budget must hold all of them (no preemption)"},
    {"engine.queue_depth", CT_PK_INT, 0, 4096, NULL, "8", "-",
     "requests that may wait for a stream slot; beyond it: refused (HTTP 503 + Retry-After)"},
    {"engine.placement", CT_PK_STR, 0, 0, "overlapped serial auto", "auto", "async_chunk",
     "overlapped (codec on its own threads), serial (one pool runs both), auto"},
    {"engine.kv_budget_bytes", CT_PK_U64, 0, 0, NULL, "0", "kv_cache_memory_bytes",
     "talker KV bytes for all streams (f32 KV); 0 = max_streams worst-case streams"},
    {"engine.throttle_margin_ms", CT_PK_INT, -1, 100000, NULL, "120", "codec_chunk_safety_margin_ms",
     "a newcomer waits while an admitted stream's playback slack is under this; -1 = never"},
    {"engine.max_defer_ms", CT_PK_INT, 0, 3600000, NULL, "5000", "-",
     "longest such wait (0 = no limit)"},
    {"engine.warmup", CT_PK_BOOL, 0, 1, NULL, "false", "enforce_eager (false)",
     "generate two frames at start-up before reporting ready"},
    {"engine.frame_ms_fixed", CT_PK_INT, 0, 1000000, NULL, "0", "-",
     "predicted ms per frame period, fixed part (cost model); 0 with per_stream 0 = no compute admission"},
    {"engine.frame_ms_per_stream", CT_PK_INT, 0, 1000000, NULL, "0", "-",
     "predicted ms per frame period added by each stream"},
    {"engine.request_deadline_ms", CT_PK_INT, 0, 86400000, NULL, "0", "-",
     "a request still running this long after submission ends with a timeout error; 0 = none"},
    {"engine.first_audio_timeout_ms", CT_PK_INT, 0, 86400000, NULL, "0", "connector_get_max_wait_first_chunk",
     "a request with no audio this long after submission ends with a timeout error; 0 = none"},
    {"engine.prompt_cache_bytes", CT_PK_U64, 0, 0, NULL, "16777216", "-",
     "the voice rows of recent voices' prompts kept for any slot to copy (224 KiB a position for "
     "the 0.6B/1.7B talker); 0 = none"},
    {"talker.weights", CT_PK_STR, 0, 0, "bf16 int8 int4", "bf16", "engine_args.dtype",
     "talker weight format, converted at load (activations and KV stay f32)"},
    {"talker.weight_panels", CT_PK_BOOL, 0, 1, NULL, "false", "-",
     "INT8/INT4 matrices also packed at load into panels for calls of 4+ (INT8) or 3+ (INT4) tokens "
     "(AVX-512 VNNI); "
     "about the quantized weights again in memory"},
    {"talker.threads", CT_PK_INT, 0, 256, NULL, "0", "-",
     "talker + predictor threads (0 = the engine decides)"},
    {"talker.cpus", CT_PK_CPUS, 0, 0, NULL, "", "VLLM_CPU_OMP_THREADS_BIND",
     "CPUs the talker threads are pinned to; \"\" = unpinned"},
    {"talker.max_context", CT_PK_INT, 16, 1048576, NULL, "2048", "max_model_len",
     "talker KV positions per stream (prompt + frames)"},
    {"talker.prefill_chunk_tokens", CT_PK_INT, 1, 4096, NULL, "64", "max_num_batched_tokens",
     "prompt positions per prefill pass (the running streams decode a frame between passes)"},
    {"predictor.weights", CT_PK_STR, 0, 0, "bf16 int8 int4", "bf16", "engine_args.dtype",
     "code predictor weight format"},
    {"codec.threads", CT_PK_INT, 1, 256, NULL, "1", "-", "codec threads (overlapped placement)"},
    {"codec.cpus", CT_PK_CPUS, 0, 0, NULL, "", "VLLM_CPU_OMP_THREADS_BIND",
     "CPUs the codec threads are pinned to"},
    {"codec.windowed", CT_PK_BOOL, 0, 1, NULL, "false", "-",
     "stateless windowed decode with left context (the exported form) instead of the exact decoder"},
    {"codec.left_context_frames", CT_PK_INT, 0, 1000, NULL, "72", "codec_left_context_frames",
     "windowed decode left context, frames"},
    {"streaming.policy", CT_PK_STR, 0, 0, "exact fixed ramp dynamic adaptive", "exact", "codec_chunk_adaptive",
     "chunk schedule policy (docs/STREAMING.md)"},
    {"streaming.first_chunk_frames", CT_PK_INT, 0, 1000, NULL, "0", "initial_codec_chunk_frames",
     "fixed: first chunk; adaptive: first chunk (0 = from the load)"},
    {"streaming.chunk_ramp", CT_PK_LIST, 1, 1000, NULL, "[2, 4, 8, 16, 25]", "codec_chunk_ramp",
     "ramp: frames of the first chunks"},
    {"streaming.chunk_frames", CT_PK_INT, 1, 1000, NULL, "25", "codec_chunk_frames",
     "steady chunk, frames (80 ms each)"},
    {"streaming.min_frames", CT_PK_INT, 1, 1000, NULL, "2", "codec_chunk_min_frames",
     "adaptive: smallest chunk"},
    {"streaming.safety_margin_ms", CT_PK_INT, 0, 100000, NULL, "50", "codec_chunk_safety_margin_ms",
     "adaptive: playback slack kept ahead"},
    {"streaming.utterance_bytes", CT_PK_INT, 0, 100000, NULL, "300", "-",
     "long text is split into utterances of about this many bytes (0 = one)"},
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
    if (!strcmp(p->v[CT_PK_STREAM_POLICY].s, "ramp")) {
        if (r->n < 2)
            return ct_errf(err, errcap, CT_ERR_FORMAT, "streaming.chunk_ramp needs at least two entries for policy ramp");
        for (int i = 1; i < r->n; i++)
            if (r->list[i] < r->list[i - 1])
                return ct_errf(err, errcap, CT_ERR_FORMAT, "streaming.chunk_ramp must not decrease");
    }
    if (p->v[CT_PK_STREAM_MIN_FRAMES].i > steady)
        return ct_errf(err, errcap, CT_ERR_FORMAT,
                       "streaming.min_frames %lld is above streaming.chunk_frames %d",
                       (long long)p->v[CT_PK_STREAM_MIN_FRAMES].i, steady);
    int64_t u = p->v[CT_PK_STREAM_UTTERANCE_BYTES].i;
    if (u != 0 && u < 16)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "streaming.utterance_bytes %lld: expected 0 or at least 16",
                       (long long)u);
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
        if (explain) oput(&o, "%-44s # %s | %s\n", line, v->layer, k->seed);
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
    ct_profile_set_i(p, CT_PK_ENGINE_MAX_STREAMS, d->max_streams_mem, layer);
    ct_profile_set_i(p, CT_PK_ENGINE_KV_BUDGET, (int64_t)(d->kv_budget_bytes > (uint64_t)I64MAX ? (uint64_t)I64MAX : d->kv_budget_bytes), layer);
    ct_profile_set_i(p, CT_PK_TALKER_MAX_CONTEXT, d->max_context, layer);
    ct_profile_set_s(p, CT_PK_STREAM_POLICY, "adaptive", layer);
    ct_profile_set_i(p, CT_PK_STREAM_MIN_FRAMES, d->chunk_min_frames, layer);
    ct_profile_set_i(p, CT_PK_STREAM_MARGIN_MS, d->chunk_margin_ms, layer);
}

void ct_profile_apply_plan(ct_profile *p, const ct_plan *plan, int oi, const ct_derived *d, const char *layer) {
    const ct_plan_option *o = &plan->opt[oi];
    ct_profile_set_s(p, CT_PK_TALKER_WEIGHTS, ct_wformat_name(o->talker_fmt), layer);
    ct_profile_set_s(p, CT_PK_PREDICTOR_WEIGHTS, ct_wformat_name(o->pred_fmt), layer);
    ct_profile_set_s(p, CT_PK_ENGINE_PLACEMENT, o->cfg.serial ? "serial" : "overlapped", layer);
    ct_profile_set_i(p, CT_PK_TALKER_THREADS, o->cfg.talker_threads, layer);
    char a[1024] = "", b[1024] = "";
    int n = d->n_cpus, t = o->cfg.talker_threads < n ? o->cfg.talker_threads : n;
    if (o->cfg.serial) {
        ct_cpu_range_str(d->cpus, t, a, sizeof a);
    } else {
        int c = o->cfg.codec_threads;
        ct_profile_set_i(p, CT_PK_CODEC_THREADS, c > 0 ? c : 1, layer);
        ct_cpu_range_str(d->cpus, t, a, sizeof a);
        if (n - t > 0) ct_cpu_range_str(d->cpus + t, n - t < c ? n - t : c, b, sizeof b);
    }
    ct_profile_set_s(p, CT_PK_TALKER_CPUS, a, layer);
    ct_profile_set_s(p, CT_PK_CODEC_CPUS, b, layer);
    int streams = o->max_streams < d->max_streams_mem ? o->max_streams : d->max_streams_mem;
    if (streams < 1) streams = 1;
    ct_profile_set_i(p, CT_PK_ENGINE_MAX_STREAMS, streams, layer);
    uint64_t kv = (uint64_t)streams * d->per_seq_bytes;
    ct_profile_set_i(p, CT_PK_ENGINE_KV_BUDGET, (int64_t)(kv > (uint64_t)I64MAX ? (uint64_t)I64MAX : kv), layer);
    /* Weight panels where batches reach the token counts whose calls read them (4 streams with an
       INT8 format, 3 with INT4) and memory holds them besides the KV budget. A bound on their
       bytes per 32 weights: INT8 32, against 64 stored as bf16 or about 32 as INT8; INT4 10,
       against 64, or 18 stored as INT4 (a quantized file keeps its format). */
    const int q8 = o->talker_fmt == CT_WF_INT8 || o->pred_fmt == CT_WF_INT8;
    const int q4 = o->talker_fmt == CT_WF_INT4 || o->pred_fmt == CT_WF_INT4;
    const uint64_t pan = q8 ? d->weights_bytes : d->weights_bytes / 18 * 10;
    ct_profile_set_i(p, CT_PK_TALKER_WEIGHT_PANELS,
                     ((q4 && streams >= 3) || (q8 && streams >= 4)) && d->budget_bytes >= kv + pan, layer);
    ct_profile_set_i(p, CT_PK_ENGINE_FRAME_MS_FIXED, (int64_t)ceil(o->frame_ms_fixed), layer);
    ct_profile_set_i(p, CT_PK_ENGINE_FRAME_MS_STREAM, (int64_t)ceil(o->frame_ms_per_stream), layer);
}

void ct_profile_apply_calibration(ct_profile *p, const ct_calibration *c, const char *layer) {
    if (!c->measured) return;
    if (c->adaptive) {
        ct_profile_set_s(p, CT_PK_STREAM_POLICY, "adaptive", layer);
        ct_profile_set_i(p, CT_PK_STREAM_MIN_FRAMES, c->min_frames, layer);
        ct_profile_set_i(p, CT_PK_STREAM_MARGIN_MS, (int64_t)lround(c->margin_ms), layer);
    } else if (c->n_ramp >= 2) {
        ct_profile_set_s(p, CT_PK_STREAM_POLICY, "ramp", layer);
        ct_profile_set_list(p, CT_PK_STREAM_RAMP, c->ramp, c->n_ramp, layer);
        ct_profile_set_i(p, CT_PK_STREAM_CHUNK_FRAMES, c->ramp[c->n_ramp - 1], layer);
    }
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

/* The codec's multiply-adds per frame from dir/speech_tokenizer (0 when it cannot be loaded). */
static double codec_macs(const char *dir) {
    ct_codec *c = NULL;
    char e[256];
    if (ct_codec_load(dir, &c, e, sizeof e) != CT_OK) return 0;
    double m = ct_codec_macs_per_frame(c);
    ct_codec_free(c);
    return m;
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
    ct_hw_class cls = ct_hw_engine_class(&r->hw);
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

    if (o->model_dir) { /* the cost model, corrected by calibration where it has measured */
        if ((st = ct_model_shape_read(o->model_dir, &r->shape, err, errcap)) != CT_OK) return st;
        r->shape.codec_macs = o->codec_macs > 0 ? o->codec_macs : codec_macs(o->model_dir);
        if (!(r->shape.codec_macs > 0)) warn(r, "no codec in '%s': the cost model leaves it out", o->model_dir);
        int n_cpus = r->derived.n_cpus > 0 ? r->derived.n_cpus : 1;
        char note[1024];
        if (o->machine) {
            r->machine = *o->machine;
            note[0] = 0;
        } else {
            ct_machine_get(o->cache_dir, r->fingerprint, &r->hw, n_cpus, o->no_measure, &r->machine, note,
                           sizeof note);
        }
        if (note[0]) warn(r, "%s", note);
        const ct_calibration *cals[CT_PLAN_OPTIONS] = {NULL};
        for (int i = 0; i < CT_PLAN_OPTIONS && !o->no_calibration; i++) {
            int tf, pf;
            ct_plan_formats(i, &tf, &pf);
            if (ct_cal_cache_path(o->cache_dir, r->fingerprint, ct_wformat_name(tf), ct_wformat_name(pf),
                                  r->cache_path[i], sizeof r->cache_path[i], NULL, 0) != CT_OK)
                continue;
            char w[1200];
            int found = 0;
            ct_cal_load(r->cache_path[i], r->model_id, ct_version(), ct_kernels_id(), &r->cal[i], &found, w,
                        sizeof w);
            if (w[0]) warn(r, "%s", w);
            if (found) {
                r->have_calibration[i] = 1;
                cals[i] = &r->cal[i];
            }
        }
        double target = o->target_rtf > 0 ? o->target_rtf : 0.85;
        ct_plan_make(&r->machine, &r->shape, NULL, n_cpus, target, 200, cals, &r->plan);
        r->have_plan = 1;
        int c = r->plan.chosen;
        if (r->plan.opt[c].measured) snprintf(layer, sizeof layer, "calibration %s", r->fingerprint);
        else snprintf(layer, sizeof layer, "cost model");
        ct_profile_apply_plan(p, &r->plan, c, &r->derived, layer);
        if (!r->plan.realtime)
            warn(r, "no weight format reaches RTF %.2f here: the fastest (%s/%s) is predicted at RTF %.2f", target,
                 ct_wformat_name(r->plan.opt[c].talker_fmt), ct_wformat_name(r->plan.opt[c].pred_fmt),
                 r->plan.opt[c].frame_ms / CT_FRAME_MS);
        if (r->have_calibration[c]) {
            snprintf(layer, sizeof layer, "calibration %s", r->fingerprint);
            ct_profile_apply_calibration(p, &r->cal[c], layer);
        }
    }
    if (o->user_file) {
        snprintf(layer, sizeof layer, "user %.50s", base_name(o->user_file));
        if ((st = ct_profile_load_file(p, o->user_file, layer, err, errcap)) != CT_OK) return st;
    }
    if ((st = apply_sets(p, o, err, errcap)) != CT_OK) return st;
    return ct_profile_validate(p, err, errcap);
}

ct_status ct_profile_resolve(const char *spec, const ct_auto_opts *o, ct_profile *p, ct_auto_report *r,
                             char *err, size_t errcap) {
    if (!spec || !strcmp(spec, "auto")) {
        ct_auto_report *mine = r ? NULL : malloc(sizeof *mine);
        if (!r && !mine) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
        ct_status st = ct_profile_auto(o, p, r ? r : mine, err, errcap);
        free(mine);
        return st;
    }
    ct_profile_defaults(p);
    ct_status st = CT_OK;
    if (strcmp(spec, "none") != 0) {
        char layer[CT_PROFILE_LAYER_LEN];
        snprintf(layer, sizeof layer, "user %.50s", base_name(spec));
        st = ct_profile_load_file(p, spec, layer, err, errcap);
    }
    if (st == CT_OK) st = apply_sets(p, o, err, errcap);
    if (st == CT_OK) st = ct_profile_validate(p, err, errcap);
    return st;
}

static ct_status cpus_of(const ct_pval *v, const char *key, int *cpus, int *n, char *err, size_t errcap) {
    char e[256];
    *n = 0;
    if (v->s[0] && ct_cpu_range_parse(v->s, cpus, CT_HW_MAX_CPUS, n, e, sizeof e) != CT_OK)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: %s", key, e);
    return CT_OK;
}

ct_status ct_profile_apply(const ct_profile *p, ct_model_params *mp, ct_engine_params *ep, ct_stream_params *sp,
                           ct_profile_bufs *b, char *err, size_t errcap) {
    const ct_pval *v = p->v;
    memset(b, 0, sizeof *b);
    if (mp) {
        snprintf(b->talker_weights, sizeof b->talker_weights, "%.7s", v[CT_PK_TALKER_WEIGHTS].s);
        snprintf(b->predictor_weights, sizeof b->predictor_weights, "%.7s", v[CT_PK_PREDICTOR_WEIGHTS].s);
        mp->talker_weights = b->talker_weights;
        mp->predictor_weights = b->predictor_weights;
        mp->weight_panels = (int)v[CT_PK_TALKER_WEIGHT_PANELS].i;
    }
    if (ep) {
        ct_status st;
        ep->max_streams = (int)v[CT_PK_ENGINE_MAX_STREAMS].i;
        ep->queue_cap = (int)v[CT_PK_ENGINE_QUEUE_DEPTH].i;
        if (ct_placement_parse(v[CT_PK_ENGINE_PLACEMENT].s, &ep->placement) != CT_OK)
            return ct_errf(err, errcap, CT_ERR_FORMAT, "engine.placement '%s'", v[CT_PK_ENGINE_PLACEMENT].s);
        ep->kv_budget_bytes = (uint64_t)v[CT_PK_ENGINE_KV_BUDGET].i;
        ep->prompt_cache_bytes = (uint64_t)v[CT_PK_ENGINE_PROMPT_CACHE].i;
        ep->safety_margin_ms = (double)v[CT_PK_ENGINE_THROTTLE_MARGIN].i;
        ep->max_defer_ms = (double)v[CT_PK_ENGINE_MAX_DEFER].i;
        ep->warmup = (int)v[CT_PK_ENGINE_WARMUP].i;
        ep->frame_ms_fixed = (double)v[CT_PK_ENGINE_FRAME_MS_FIXED].i;
        ep->frame_ms_per_stream = (double)v[CT_PK_ENGINE_FRAME_MS_STREAM].i;
        ep->talker_threads = (int)v[CT_PK_TALKER_THREADS].i;
        ep->max_context = (int)v[CT_PK_TALKER_MAX_CONTEXT].i;
        ep->prefill_chunk_tokens = (int)v[CT_PK_TALKER_PREFILL_CHUNK].i;
        ep->codec_threads = (int)v[CT_PK_CODEC_THREADS].i;
        if ((st = cpus_of(&v[CT_PK_TALKER_CPUS], "talker.cpus", b->talker_cpus, &b->n_talker_cpus, err, errcap)) !=
                CT_OK ||
            (st = cpus_of(&v[CT_PK_CODEC_CPUS], "codec.cpus", b->codec_cpus, &b->n_codec_cpus, err, errcap)) != CT_OK)
            return st;
        ep->talker_cpus = b->n_talker_cpus ? b->talker_cpus : NULL;
        ep->n_talker_cpus = b->n_talker_cpus;
        ep->codec_cpus = b->n_codec_cpus ? b->codec_cpus : NULL;
        ep->n_codec_cpus = b->n_codec_cpus;
    }
    if (sp) {
        ct_sched_params q = ct_sched_params_default();
        char spec[160], e[256];
        const char *pol = v[CT_PK_STREAM_POLICY].s;
        int ic = (int)v[CT_PK_STREAM_FIRST_CHUNK].i;
        if (!strcmp(pol, "fixed")) {
            snprintf(spec, sizeof spec, "fixed:%d", ic);
        } else if (!strcmp(pol, "ramp")) {
            size_t u = (size_t)snprintf(spec, sizeof spec, "ramp:");
            for (int i = 0; i < v[CT_PK_STREAM_RAMP].n && u + 8 < sizeof spec; i++)
                u += (size_t)snprintf(spec + u, sizeof spec - u, i ? ",%d" : "%d", v[CT_PK_STREAM_RAMP].list[i]);
        } else if (!strcmp(pol, "adaptive") && ic > 0) {
            snprintf(spec, sizeof spec, "adaptive:%d", ic);
        } else {
            snprintf(spec, sizeof spec, "%.40s", pol);
        }
        if (ct_sched_parse(spec, &q, e, sizeof e) != CT_OK)
            return ct_errf(err, errcap, CT_ERR_FORMAT, "streaming.*: %s", e);
        q.steady = (int)v[CT_PK_STREAM_CHUNK_FRAMES].i;
        q.min_frames = (int)v[CT_PK_STREAM_MIN_FRAMES].i;
        q.margin_ms = (double)v[CT_PK_STREAM_MARGIN_MS].i;
        if (ct_sched_params_check(&q, NULL, 0, e, sizeof e) != CT_OK)
            return ct_errf(err, errcap, CT_ERR_FORMAT, "streaming.*: %s", e);
        ct_sched_format(&q, b->schedule, sizeof b->schedule);
        sp->schedule = b->schedule;
        sp->windowed = (int)v[CT_PK_CODEC_WINDOWED].i;
        sp->context_frames = (int)v[CT_PK_CODEC_LEFT_CONTEXT].i;
        sp->utterance_bytes = (int)v[CT_PK_STREAM_UTTERANCE_BYTES].i;
        sp->deadline_ms = (int)v[CT_PK_ENGINE_DEADLINE].i;
        sp->first_audio_timeout_ms = (int)v[CT_PK_ENGINE_FIRST_AUDIO].i;
    }
    return CT_OK;
}
