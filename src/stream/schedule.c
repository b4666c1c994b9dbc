/* Chunk-size schedules of docs/STREAMING.md 1 as a per-request state machine: policy parsing and
   validation, the dynamic first chunk, the ramp table, and the adaptive EWMA controller. */
#include "stream/schedule.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ct_sched_params ct_sched_params_default(void) {
    ct_sched_params p;
    memset(&p, 0, sizeof p);
    p.kind = CT_SCHED_RAMP;
    p.steady = 25;
    p.left_context = 72;
    p.initial = 0;
    p.n_ramp = 5;
    p.ramp[0] = 2;
    p.ramp[1] = 4;
    p.ramp[2] = 8;
    p.ramp[3] = 16;
    p.ramp[4] = 25;
    p.max_streams = 64;
    p.min_frames = 2;
    p.margin_ms = 50.0;
    p.ramp_divisor = 15;
    p.delta_min = 2;
    p.alpha = 0.3;
    p.frame_ms = 80.0;
    return p;
}

double ct_round_half_even(double x) {
    double f = floor(x), d = x - f;
    if (d > 0.5) return f + 1.0;
    if (d < 0.5) return f;
    return fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

int ct_sched_dynamic_ic(int steady, int active, int max_streams) {
    if (steady <= 2) return 1;
    int max_ic = 1;
    while (max_ic * 2 < steady) max_ic *= 2; /* largest power of two < steady */
    int n_steps = 0;
    for (int v = 2; v <= max_ic; v *= 2) n_steps++; /* steps 2, 4, .., max_ic */
    if (n_steps == 0) return 1;
    if (active < 0) active = 0;
    if (max_streams < 1) max_streams = 1;
    double load = (double)active / (double)max_streams;
    if (load > 1.0) load = 1.0;
    int idx = (int)ct_round_half_even(load * (double)(n_steps - 1));
    if (idx < 0) idx = 0;
    if (idx > n_steps - 1) idx = n_steps - 1;
    return 2 << idx;
}

int ct_sched_decode_window(int length_after, int new_frames, int left_context) {
    long w = (long)left_context + new_frames;
    return length_after < w ? length_after : (int)w;
}

ct_status ct_sched_params_check(const ct_sched_params *p, char *warn, size_t wcap, char *err,
                                size_t errcap) {
    if (warn && wcap) warn[0] = 0;
    if (!p) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: no parameters");
    if (p->kind < CT_SCHED_EXACT || p->kind > CT_SCHED_ADAPTIVE)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: unknown kind %d", (int)p->kind);
    if (p->steady < 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: steady chunk %d must be >= 1",
                       p->steady);
    if (p->left_context < 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: left context %d must be >= 0",
                       p->left_context);
    if (p->initial < 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: first chunk %d must be >= 0",
                       p->initial);
    if (p->kind == CT_SCHED_RAMP) {
        if (p->n_ramp < 2 || p->n_ramp > CT_SCHED_MAX_RAMP)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                           "chunk schedule: ramp needs 2 to %d entries, got %d", CT_SCHED_MAX_RAMP,
                           p->n_ramp);
        for (int i = 0; i < p->n_ramp; i++)
            if (p->ramp[i] < 1)
                return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                               "chunk schedule: ramp entry %d is %d, must be >= 1", i, p->ramp[i]);
        if (p->ramp[p->n_ramp - 1] != p->steady && warn && wcap)
            snprintf(warn, wcap, "chunk schedule: ramp ends at %d, not at the steady chunk %d",
                     p->ramp[p->n_ramp - 1], p->steady);
    }
    if (p->max_streams < 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: max streams %d must be >= 1",
                       p->max_streams);
    if (p->min_frames < 1 || p->min_frames > p->steady)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "chunk schedule: min frames %d must be in [1, steady %d]", p->min_frames,
                       p->steady);
    if (!(p->margin_ms >= 0) || !isfinite(p->margin_ms))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: safety margin %g ms must be >= 0",
                       p->margin_ms);
    if (p->ramp_divisor < 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: ramp divisor %d must be >= 1",
                       p->ramp_divisor);
    if (p->delta_min < 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: delta min %d must be >= 1",
                       p->delta_min);
    if (!(p->alpha > 0 && p->alpha <= 1))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: alpha %g must be in (0, 1]",
                       p->alpha);
    if (!(p->frame_ms > 0) || !isfinite(p->frame_ms))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: frame ms %g must be > 0",
                       p->frame_ms);
    return CT_OK;
}

/* Parses "A,B,C" (at most cap values, each in [lo, 1e6]) into v; returns the count or -1 with
   err naming the bad element. */
static int parse_ints(const char *spec, const char *list, int *v, int cap, int lo, char *err,
                      size_t errcap) {
    int n = 0;
    const char *q = list;
    for (;;) {
        const char *end = strchr(q, ',');
        size_t len = end ? (size_t)(end - q) : strlen(q);
        char tok[32];
        if (len == 0 || len >= sizeof tok) {
            ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule '%s': empty or overlong entry %d",
                    spec, n + 1);
            return -1;
        }
        memcpy(tok, q, len);
        tok[len] = 0;
        char *e = NULL;
        errno = 0;
        long x = strtol(tok, &e, 10);
        if (errno || *e || e == tok || x < lo || x > 1000000) {
            ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                    "chunk schedule '%s': '%s' is not an integer >= %d", spec, tok, lo);
            return -1;
        }
        if (n == cap) {
            ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule '%s': more than %d entries", spec,
                    cap);
            return -1;
        }
        v[n++] = (int)x;
        if (!end) break;
        q = end + 1;
    }
    return n;
}

/* Applies the ";steady=N;min=N;margin=MS" options (opts points at the first ';'). */
static ct_status parse_opts(const char *spec, const char *opts, ct_sched_params *q, char *err,
                            size_t errcap) {
    while (opts && *opts == ';') {
        const char *name = opts + 1, *eq = strchr(name, '='), *end = strchr(name, ';');
        if (!end) end = name + strlen(name);
        if (!eq || eq > end)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                           "chunk schedule '%s': option '%.*s' is not name=value", spec, (int)(end - name), name);
        char val[32];
        size_t vl = (size_t)(end - eq - 1);
        if (vl >= sizeof val) vl = sizeof val - 1;
        memcpy(val, eq + 1, vl);
        val[vl] = 0;
        int v;
        size_t nl = (size_t)(eq - name);
        if (parse_ints(spec, val, &v, 1, 0, err, errcap) < 0) return CT_ERR_INVALID_ARG;
        if (nl == 6 && !strncmp(name, "steady", 6)) q->steady = v;
        else if (nl == 3 && !strncmp(name, "min", 3)) q->min_frames = v;
        else if (nl == 6 && !strncmp(name, "margin", 6)) q->margin_ms = v;
        else
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                           "chunk schedule '%s': unknown option '%.*s' (expected steady, min or margin)", spec,
                           (int)nl, name);
        opts = end;
    }
    return CT_OK;
}

ct_status ct_sched_parse(const char *spec_in, ct_sched_params *p, char *err, size_t errcap) {
    if (!spec_in || !p) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: no policy string");
    ct_sched_params q = *p;
    /* the policy part ends at the first ';' (options follow) */
    const char *semi = strchr(spec_in, ';'), *spec = spec_in;
    char head[256];
    if (semi) {
        if ((size_t)(semi - spec_in) >= sizeof head)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: policy part longer than %zu bytes",
                           sizeof head - 1);
        memcpy(head, spec_in, (size_t)(semi - spec_in));
        head[semi - spec_in] = 0;
        spec = head;
    }
    const char *colon = strchr(spec, ':');
    size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *arg = colon ? colon + 1 : NULL;
    int v[CT_SCHED_MAX_RAMP];
    int n = 0;
#define KIND_IS(s) (klen == strlen(s) && strncmp(spec, s, klen) == 0)
    if (KIND_IS("exact")) {
        if (arg) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule '%s': exact takes no value", spec);
        q.kind = CT_SCHED_EXACT;
    } else if (KIND_IS("fixed")) {
        if (!arg)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                           "chunk schedule '%s': fixed needs a first chunk (fixed:IC[,STEADY])", spec);
        if ((n = parse_ints(spec, arg, v, 2, 0, err, errcap)) < 0) return CT_ERR_INVALID_ARG;
        if (n == 2 && v[1] < 1)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule '%s': steady must be >= 1", spec);
        q.kind = CT_SCHED_FIXED;
        q.initial = v[0];
        if (n == 2) q.steady = v[1];
    } else if (KIND_IS("ramp")) {
        if (!arg)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule '%s': ramp needs a list (ramp:A,B,..)",
                           spec);
        if ((n = parse_ints(spec, arg, v, CT_SCHED_MAX_RAMP, 1, err, errcap)) < 0) return CT_ERR_INVALID_ARG;
        if (n < 2)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule '%s': ramp needs at least 2 entries",
                           spec);
        q.kind = CT_SCHED_RAMP;
        q.n_ramp = n;
        memcpy(q.ramp, v, (size_t)n * sizeof *v);
    } else if (KIND_IS("dynamic")) {
        q.kind = CT_SCHED_DYNAMIC;
        q.initial = 0;
        if (arg) {
            if ((n = parse_ints(spec, arg, v, 1, 1, err, errcap)) < 0) return CT_ERR_INVALID_ARG;
            q.max_streams = v[0];
        }
    } else if (KIND_IS("adaptive")) {
        q.kind = CT_SCHED_ADAPTIVE;
        q.initial = 0;
        if (arg) {
            if ((n = parse_ints(spec, arg, v, 1, 0, err, errcap)) < 0) return CT_ERR_INVALID_ARG;
            q.initial = v[0];
        }
    } else {
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "unknown chunk schedule '%.*s' in '%s' (expected exact, fixed:IC[,STEADY], "
                       "ramp:A,B,.., dynamic[:MAX_STREAMS], adaptive[:IC])",
                       (int)klen, spec, spec);
    }
#undef KIND_IS
    if (parse_opts(spec_in, semi, &q, err, errcap) != CT_OK) return CT_ERR_INVALID_ARG;
    char e2[256];
    if (ct_sched_params_check(&q, NULL, 0, e2, sizeof e2) != CT_OK)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule '%s': %s", spec_in, e2);
    *p = q;
    return CT_OK;
}

const char *ct_sched_format(const ct_sched_params *p, char *out, size_t cap) {
    if (!out || !cap) return out;
    out[0] = 0;
    if (!p) return out;
    switch (p->kind) {
    case CT_SCHED_EXACT: snprintf(out, cap, "exact"); break;
    case CT_SCHED_FIXED: snprintf(out, cap, "fixed:%d,%d", p->initial, p->steady); break;
    case CT_SCHED_DYNAMIC: snprintf(out, cap, "dynamic:%d", p->max_streams); break;
    case CT_SCHED_ADAPTIVE:
        if (p->initial > 0) snprintf(out, cap, "adaptive:%d", p->initial);
        else snprintf(out, cap, "adaptive");
        break;
    case CT_SCHED_RAMP: {
        size_t len = (size_t)snprintf(out, cap, "ramp:");
        for (int i = 0; i < p->n_ramp && len < cap; i++)
            len += (size_t)snprintf(out + len, cap - len, i ? ",%d" : "%d", p->ramp[i]);
        break;
    }
    }
    ct_sched_params d = ct_sched_params_default();
    size_t len = strlen(out);
    if (p->kind != CT_SCHED_FIXED && p->steady != d.steady && len < cap)
        len += (size_t)snprintf(out + len, cap - len, ";steady=%d", p->steady);
    if (p->min_frames != d.min_frames && len < cap)
        len += (size_t)snprintf(out + len, cap - len, ";min=%d", p->min_frames);
    if (p->margin_ms != d.margin_ms && len < cap)
        snprintf(out + len, cap - len, ";margin=%d", (int)p->margin_ms);
    return out;
}

void ct_sched_reset(ct_sched *s) {
    if (!s) return;
    s->ic = 0;
    s->chunks = 0;
    s->frames_emitted = 0;
    s->target = 0;
    s->last_target = 0;
    s->ewma_ms = -1.0;
    s->first_emit_ms = 0.0;
    s->last_emit_ms = 0.0;
    s->locked = 0;
    /* A fixed first chunk is known up front; the dynamic one waits for the first frame. */
    if (s->p.kind == CT_SCHED_FIXED)
        s->ic = (s->p.initial <= 0 || s->p.initial >= s->p.steady) ? s->p.steady : s->p.initial;
    else if (s->p.kind == CT_SCHED_ADAPTIVE && s->p.initial > 0)
        s->ic = s->p.initial < s->p.steady ? s->p.initial : s->p.steady;
}

ct_status ct_sched_init(ct_sched *s, const ct_sched_params *p, char *err, size_t errcap) {
    if (!s) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "chunk schedule: no state");
    ct_status st = ct_sched_params_check(p, NULL, 0, err, errcap);
    if (st != CT_OK) return st;
    memset(s, 0, sizeof *s);
    s->p = *p;
    ct_sched_reset(s);
    return CT_OK;
}

/* ADAPTIVE target for chunk >= 1 (docs/STREAMING.md 1, rule 4). */
static int adaptive_target(ct_sched *s, const ct_sched_obs *o) {
    const ct_sched_params *p = &s->p;
    double buffer = o->use_buffer ? o->buffer_ms
                                  : s->frames_emitted * p->frame_ms - (o->now_ms - s->first_emit_ms);
    double ewma = s->ewma_ms;
    if (!s->locked && ewma >= 0 && buffer >= p->steady * ewma + p->margin_ms) s->locked = 1;
    if (s->locked) return p->steady;
    int greedy = p->min_frames;
    int growth = p->delta_min;
    if (ewma >= 0) {
        double g = ewma > 0 ? floor((buffer - p->margin_ms) / ewma) : (buffer > p->margin_ms ? 1e9 : -1e9);
        greedy = g < p->min_frames ? p->min_frames : g > p->steady ? p->steady : (int)g;
        int by_ewma = (int)floor(ewma / p->ramp_divisor);
        if (by_ewma > growth) growth = by_ewma;
    }
    long fl = (long)s->last_target + growth;
    long t = fl > greedy ? fl : greedy;
    return t < p->steady ? (int)t : p->steady;
}

static void on_emit(ct_sched *s, int n, double now_ms) {
    if (s->p.kind == CT_SCHED_ADAPTIVE && s->chunks >= 1 && n > 0) {
        double sample = (now_ms - s->last_emit_ms) / n;
        s->ewma_ms = s->ewma_ms < 0 ? sample : s->p.alpha * sample + (1.0 - s->p.alpha) * s->ewma_ms;
    }
    if (s->chunks == 0) s->first_emit_ms = now_ms;
    s->last_emit_ms = now_ms;
    s->last_target = n; /* shipped size: the floor of the next target (never shrinks) */
    s->chunks++;
    s->frames_emitted += n;
}

int ct_sched_next_chunk(ct_sched *s, const ct_sched_obs *o) {
    if (!s || !o || o->frames_total < s->frames_emitted) return -1;
    int pending = o->frames_total - s->frames_emitted;
    if (pending == 0) return 0;
    const ct_sched_params *p = &s->p;
    if (s->ic == 0 && (p->kind == CT_SCHED_DYNAMIC || p->kind == CT_SCHED_ADAPTIVE))
        s->ic = ct_sched_dynamic_ic(p->steady, o->active_streams, p->max_streams); /* once */
    int emit = 0;
    switch (p->kind) {
    case CT_SCHED_EXACT:
        s->target = 1;
        emit = 1;
        break;
    case CT_SCHED_FIXED:
    case CT_SCHED_DYNAMIC:
    case CT_SCHED_RAMP:
        if (p->kind == CT_SCHED_RAMP) s->target = s->chunks < p->n_ramp ? p->ramp[s->chunks] : p->steady;
        else s->target = s->chunks == 0 ? s->ic : p->steady;
        if (pending >= s->target) emit = s->target;
        else if (o->finished) emit = pending; /* flush the remainder */
        break;
    case CT_SCHED_ADAPTIVE:
        if (s->chunks == 0) {
            s->target = s->ic;
            emit = pending >= s->target ? s->target : o->finished ? pending : 0;
        } else {
            s->target = adaptive_target(s, o);
            emit = (pending >= s->target || o->finished) ? pending : 0; /* never truncates */
        }
        break;
    }
    if (emit > 0) on_emit(s, emit, o->now_ms);
    return emit;
}
