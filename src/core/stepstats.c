/* Step-stats registry (docs/STREAMING.md 3): a mutex-protected fixed table of (role, name)
   counters with a pseudo-reservoir of samples, per-role atomic JSON dumps, the directory merge
   with the seed's combine rules, and the attribution table. */
#include "core/stepstats.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"

#define DEFAULT_ROLE "orchestrator"
#define DIR_CAP 2048
#define MAX_DUMP_BYTES ((size_t)64 << 20)

_Atomic int ct_stats_flag_ = -1;

typedef struct {
    const char *role, *name; /* static strings */
    int64_t count;
    double sum, max;
    int n;           /* filled reservoir slots */
    double *samples; /* [CT_STATS_RESERVOIR] */
} counter;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;      /* table and settings */
static pthread_mutex_t g_dump_lock = PTHREAD_MUTEX_INITIALIZER; /* one dump at a time */
static counter g_c[CT_STATS_MAX_COUNTERS];
static int g_n;
static int64_t g_adds, g_dropped;
static char g_dir[DIR_CAP];
static double g_started_at;
static int g_atexit;
static _Thread_local const char *t_role;

static double unix_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double ct_stats_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + ts.tv_nsec * 1e-6;
}

static void at_exit_dump(void) {
    if (atomic_load(&ct_stats_flag_) > 0) ct_stats_dump(NULL, NULL, 0);
}

/* Called with g_lock held. */
static void enable_locked(const char *dir) {
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    if (g_started_at == 0) g_started_at = unix_now_s();
    if (!g_atexit) {
        g_atexit = 1;
        atexit(at_exit_dump);
    }
    atomic_store(&ct_stats_flag_, 1);
}

int ct_stats_enabled_slow_(void) {
    pthread_mutex_lock(&g_lock);
    if (atomic_load(&ct_stats_flag_) < 0) {
        const char *d = getenv("CODECTALK_STEP_STATS_DIR");
        if (d && *d && strlen(d) < DIR_CAP) enable_locked(d);
        else atomic_store(&ct_stats_flag_, 0);
    }
    int f = atomic_load(&ct_stats_flag_);
    pthread_mutex_unlock(&g_lock);
    return f > 0;
}

ct_status ct_stats_configure(const char *dir, char *err, size_t errcap) {
    if (dir && (!*dir || strlen(dir) >= DIR_CAP))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "step stats: directory name empty or too long");
    pthread_mutex_lock(&g_lock);
    if (dir) {
        enable_locked(dir);
    } else {
        g_dir[0] = 0;
        atomic_store(&ct_stats_flag_, 0);
    }
    pthread_mutex_unlock(&g_lock);
    return CT_OK;
}

const char *ct_stats_dir(void) { return ct_stats_enabled() ? g_dir : ""; }

void ct_stats_thread_role(const char *role) { t_role = role; }

void ct_stats_reset(void) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_n; i++) free(g_c[i].samples);
    memset(g_c, 0, sizeof g_c);
    g_n = 0;
    g_adds = g_dropped = 0;
    pthread_mutex_unlock(&g_lock);
}

/* Called with g_lock held. */
static counter *find(const char *role, const char *name) {
    for (int i = 0; i < g_n; i++) {
        counter *c = &g_c[i];
        if ((c->name == name || strcmp(c->name, name) == 0) && (c->role == role || strcmp(c->role, role) == 0))
            return c;
    }
    return NULL;
}

void ct_stats_add(const char *name, double ms) {
    if (!ct_stats_enabled() || !name) return;
    const char *role = t_role ? t_role : DEFAULT_ROLE;
    int dump = 0;
    pthread_mutex_lock(&g_lock);
    counter *c = find(role, name);
    if (!c && g_n < CT_STATS_MAX_COUNTERS) {
        double *s = malloc(CT_STATS_RESERVOIR * sizeof *s); /* once per counter */
        if (s) {
            c = &g_c[g_n++];
            memset(c, 0, sizeof *c);
            c->role = role;
            c->name = name;
            c->samples = s;
        }
    }
    if (c) {
        c->count++;
        c->sum += ms;
        if (c->count == 1 || ms > c->max) c->max = ms;
        if (c->n < CT_STATS_RESERVOIR) c->samples[c->n++] = ms;
        else c->samples[(c->count * CT_STATS_STRIDE) % CT_STATS_RESERVOIR] = ms;
    } else {
        g_dropped++;
    }
    if (++g_adds % CT_STATS_DUMP_EVERY == 0) dump = 1;
    pthread_mutex_unlock(&g_lock);
    if (dump) ct_stats_dump(NULL, NULL, 0);
}

static double round_half_even(double x) {
    double f = floor(x), d = x - f;
    if (d > 0.5) return f + 1.0;
    if (d < 0.5) return f;
    return fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void ct_stats_percentiles(double *v, int n, double *p50, double *p95) {
    if (n <= 0 || !v) {
        *p50 = *p95 = 0.0;
        return;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double i50 = round_half_even((n - 1) * 0.5), i95 = round_half_even((n - 1) * 0.95);
    *p50 = v[(int)(i50 < n - 1 ? i50 : n - 1)];
    *p95 = v[(int)(i95 < n - 1 ? i95 : n - 1)];
}

/* Copy of one counter taken under the lock. */
typedef struct {
    const char *role, *name;
    int64_t count;
    double sum, max;
    int n;
    double *samples; /* malloc'd copy [n] */
} snap;

/* Copies the counters of `role` (NULL = all) into *out (malloc'd). Returns the count or -1. */
static int take_snapshot(const char *role, snap **out) {
    *out = NULL;
    pthread_mutex_lock(&g_lock);
    int n = 0;
    for (int i = 0; i < g_n; i++)
        if (!role || strcmp(g_c[i].role, role) == 0) n++;
    snap *s = calloc((size_t)(n ? n : 1), sizeof *s);
    int k = 0, ok = s != NULL;
    for (int i = 0; ok && i < g_n; i++) {
        counter *c = &g_c[i];
        if (role && strcmp(c->role, role) != 0) continue;
        snap *d = &s[k++];
        d->role = c->role;
        d->name = c->name;
        d->count = c->count;
        d->sum = c->sum;
        d->max = c->max;
        d->n = c->n;
        d->samples = malloc((size_t)(c->n ? c->n : 1) * sizeof(double));
        if (!d->samples) ok = 0;
        else memcpy(d->samples, c->samples, (size_t)c->n * sizeof(double));
    }
    pthread_mutex_unlock(&g_lock);
    if (!ok) {
        for (int i = 0; s && i < k; i++) free(s[i].samples);
        free(s);
        return -1;
    }
    *out = s;
    return n;
}

static void free_snapshot(snap *s, int n) {
    for (int i = 0; s && i < n; i++) free(s[i].samples);
    free(s);
}

static void summarize(snap *s, ct_stat_summary *o) {
    o->count = s->count;
    o->sum_ms = s->sum;
    o->mean_ms = s->count ? s->sum / (double)s->count : 0.0;
    o->max_ms = s->count ? s->max : 0.0;
    ct_stats_percentiles(s->samples, s->n, &o->p50_ms, &o->p95_ms);
}

int ct_stats_get(const char *role, const char *name, ct_stat_summary *out) {
    if (!name || !out) return 0;
    if (!role) role = DEFAULT_ROLE;
    snap *s;
    int n = take_snapshot(role, &s);
    if (n < 0) return -1;
    int found = 0;
    for (int i = 0; i < n && !found; i++)
        if (strcmp(s[i].name, name) == 0) {
            summarize(&s[i], out);
            found = 1;
        }
    free_snapshot(s, n);
    return found;
}

double ct_stats_sample(const char *role, const char *name, int slot) {
    if (!role) role = DEFAULT_ROLE;
    double v = NAN;
    pthread_mutex_lock(&g_lock);
    counter *c = name ? find(role, name) : NULL;
    if (c && slot >= 0 && slot < c->n) v = c->samples[slot];
    pthread_mutex_unlock(&g_lock);
    return v;
}

/* ---- JSON helpers -------------------------------------------------------------------- */

static void put(json_t *o, const char *k, json_t *v, int *ok) {
    if (!v || json_object_set_new(o, k, v) != 0) *ok = 0;
}

static json_t *summary_json(const ct_stat_summary *s) {
    json_t *o = json_object();
    if (!o) return NULL;
    int ok = 1;
    put(o, "count", json_integer((json_int_t)s->count), &ok);
    put(o, "sum_ms", json_real(s->sum_ms), &ok);
    put(o, "mean_ms", json_real(s->mean_ms), &ok);
    put(o, "p50_ms", json_real(s->p50_ms), &ok);
    put(o, "p95_ms", json_real(s->p95_ms), &ok);
    put(o, "max_ms", json_real(s->max_ms), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* {role: {counter: summary}} from a snapshot (sorts the sample copies). */
static json_t *roles_from_snapshot(snap *s, int n) {
    json_t *roles = json_object();
    int ok = roles != NULL;
    for (int i = 0; ok && i < n; i++) {
        json_t *r = json_object_get(roles, s[i].role);
        if (!r) {
            r = json_object();
            put(roles, s[i].role, r, &ok);
            if (!ok) break;
        }
        ct_stat_summary sm;
        summarize(&s[i], &sm);
        put(r, s[i].name, summary_json(&sm), &ok);
    }
    if (!ok) {
        json_decref(roles);
        return NULL;
    }
    return roles;
}

typedef struct {
    const char *role, *counter;
    json_int_t count;
    double mean, p95, share;
} arow;

static int cmp_row(const void *a, const void *b) {
    const arow *x = a, *y = b;
    if (x->share != y->share) return x->share > y->share ? -1 : 1;
    int c = strcmp(x->role, y->role);
    return c ? c : strcmp(x->counter, y->counter);
}

/* Attribution array over roles {role: {counter: summary}}; NULL on OOM. */
static json_t *attribution(json_t *roles) {
    size_t n = 0;
    const char *rk;
    json_t *rv;
    json_object_foreach(roles, rk, rv) n += json_object_size(rv);
    arow *rows = calloc(n ? n : 1, sizeof *rows);
    json_t *arr = json_array();
    if (!rows || !arr) {
        free(rows);
        json_decref(arr);
        return NULL;
    }
    size_t k = 0;
    json_object_foreach(roles, rk, rv) {
        const char *ck;
        json_t *cv;
        json_object_foreach(rv, ck, cv) {
            arow *r = &rows[k++];
            r->role = rk;
            r->counter = ck;
            r->count = json_integer_value(json_object_get(cv, "count"));
            r->mean = json_number_value(json_object_get(cv, "mean_ms"));
            r->p95 = json_number_value(json_object_get(cv, "p95_ms"));
            r->share = r->mean / CT_STATS_FRAME_MS;
        }
    }
    qsort(rows, k, sizeof *rows, cmp_row);
    int ok = 1;
    for (size_t i = 0; ok && i < k; i++) {
        json_t *o = json_object();
        if (!o) {
            ok = 0;
            break;
        }
        put(o, "role", json_string(rows[i].role), &ok);
        put(o, "counter", json_string(rows[i].counter), &ok);
        put(o, "count", json_integer(rows[i].count), &ok);
        put(o, "mean_ms", json_real(rows[i].mean), &ok);
        put(o, "p95_ms", json_real(rows[i].p95), &ok);
        put(o, "share_of_frame", json_real(rows[i].share), &ok);
        if (json_array_append_new(arr, o) != 0) ok = 0;
    }
    free(rows);
    if (!ok) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

static json_t *merged_doc(json_t *roles) {
    json_t *att = attribution(roles);
    json_t *doc = json_object();
    int ok = att && doc;
    if (ok) {
        put(doc, "roles", json_incref(roles), &ok);
        put(doc, "attribution", att, &ok);
        att = NULL;
    }
    json_decref(att);
    if (!ok) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

json_t *ct_stats_snapshot(void) {
    snap *s;
    int n = take_snapshot(NULL, &s);
    if (n < 0) return NULL;
    json_t *roles = roles_from_snapshot(s, n);
    free_snapshot(s, n);
    if (!roles) return NULL;
    json_t *doc = merged_doc(roles);
    json_decref(roles);
    return doc;
}

/* ---- dump ------------------------------------------------------------------------------ */

static ct_status mkdirs(const char *dir, char *err, size_t errcap) {
    char d[DIR_CAP];
    snprintf(d, sizeof d, "%s", dir);
    for (char *p = d + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char keep = *p;
        *p = 0;
        if (mkdir(d, 0755) != 0 && errno != EEXIST)
            return ct_errf(err, errcap, CT_ERR_IO, "step stats: cannot create directory '%s': %s", d,
                           strerror(errno));
        *p = keep;
        if (!keep) break;
    }
    return CT_OK;
}

static ct_status write_atomic(const char *path, const json_t *doc, char *err, size_t errcap) {
    char *js = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (!js) return ct_errf(err, errcap, CT_ERR_NOMEM, "step stats: out of memory serialising '%s'", path);
    size_t l = strlen(js);
    js[l] = '\n'; /* json_dumps leaves room only for the NUL: write the newline in its place */
    char inner[512];
    ct_status st = ct_write_file_atomic(path, js, l + 1, inner, sizeof inner);
    free(js);
    if (st != CT_OK) return ct_errf(err, errcap, st, "step stats: %s", inner);
    return CT_OK;
}

ct_status ct_stats_dump(const char *role, char *err, size_t errcap) {
    if (!ct_stats_enabled()) return ct_errf(err, errcap, CT_ERR_STATE, "step stats are disabled");
    char dir[DIR_CAP];
    pthread_mutex_lock(&g_lock);
    snprintf(dir, sizeof dir, "%s", g_dir);
    double started = g_started_at;
    int64_t dropped = g_dropped;
    pthread_mutex_unlock(&g_lock);

    pthread_mutex_lock(&g_dump_lock);
    snap *s;
    int n = take_snapshot(role, &s);
    json_t *roles = n >= 0 ? roles_from_snapshot(s, n) : NULL;
    free_snapshot(s, n < 0 ? 0 : n);
    ct_status st = roles ? mkdirs(dir, err, errcap) : ct_errf(err, errcap, CT_ERR_NOMEM, "step stats: out of memory");
    const char *rk;
    json_t *rv;
    if (st == CT_OK) json_object_foreach(roles, rk, rv) {
        char path[DIR_CAP + 256];
        if (snprintf(path, sizeof path, "%s/%s_%ld.json", dir, rk, (long)getpid()) >= (int)sizeof path) {
            st = ct_errf(err, errcap, CT_ERR_LIMIT, "step stats: dump path too long");
            break;
        }
        json_t *doc = json_object();
        int ok = doc != NULL;
        if (ok) {
            put(doc, "role", json_string(rk), &ok);
            put(doc, "pid", json_integer((json_int_t)getpid()), &ok);
            put(doc, "started_at", json_real(started), &ok);
            put(doc, "dumped_at", json_real(unix_now_s()), &ok);
            put(doc, "counters", json_incref(rv), &ok);
            if (dropped) put(doc, "dropped_adds", json_integer((json_int_t)dropped), &ok);
        }
        st = ok ? write_atomic(path, doc, err, errcap) : ct_errf(err, errcap, CT_ERR_NOMEM, "step stats: out of memory");
        json_decref(doc);
        if (st != CT_OK) break;
    }
    json_decref(roles);
    pthread_mutex_unlock(&g_dump_lock);
    return st;
}

/* ---- merge ----------------------------------------------------------------------------- */

static const char *const SUMMARY_KEYS[] = {"sum_ms", "p50_ms", "p95_ms", "max_ms"};

/* Checks one dump; returns NULL if fine, else a static-free description in buf. */
static const char *check_dump(const json_t *d, char *buf, size_t cap) {
    if (!json_is_object(d)) return "not a JSON object";
    const json_t *role = json_object_get(d, "role");
    if (!json_is_string(role) || !json_string_length(role)) return "missing or empty 'role'";
    const json_t *cs = json_object_get(d, "counters");
    if (!json_is_object(cs)) return "missing 'counters' object";
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)cs, k, v) {
        if (!json_is_object(v)) {
            snprintf(buf, cap, "counter '%s' is not an object", k);
            return buf;
        }
        const json_t *c = json_object_get(v, "count");
        if (!json_is_integer(c) || json_integer_value(c) < 0) {
            snprintf(buf, cap, "counter '%s': 'count' missing or not a non-negative integer", k);
            return buf;
        }
        for (size_t i = 0; i < sizeof SUMMARY_KEYS / sizeof *SUMMARY_KEYS; i++) {
            const json_t *x = json_object_get(v, SUMMARY_KEYS[i]);
            if (!json_is_number(x) || !isfinite(json_number_value(x))) {
                snprintf(buf, cap, "counter '%s': '%s' missing or not a number", k, SUMMARY_KEYS[i]);
                return buf;
            }
        }
    }
    return NULL;
}

static double num(const json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* Adds dump d into roles. Returns 0 on OOM. */
static int combine(json_t *roles, const json_t *d) {
    const char *role = json_string_value(json_object_get(d, "role"));
    json_t *r = json_object_get(roles, role);
    if (!r) {
        r = json_object();
        if (!r || json_object_set_new(roles, role, r) != 0) return 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(d, "counters"), k, v) {
        ct_stat_summary s = {json_integer_value(json_object_get(v, "count")), num(v, "sum_ms"), 0,
                             num(v, "p50_ms"), num(v, "p95_ms"), num(v, "max_ms")};
        json_t *old = json_object_get(r, k);
        if (old) {
            s.count += json_integer_value(json_object_get(old, "count"));
            s.sum_ms += num(old, "sum_ms");
            s.p50_ms = fmax(s.p50_ms, num(old, "p50_ms"));
            s.p95_ms = fmax(s.p95_ms, num(old, "p95_ms"));
            s.max_ms = fmax(s.max_ms, num(old, "max_ms"));
        }
        s.mean_ms = s.count ? s.sum_ms / (double)s.count : 0.0;
        json_t *nj = summary_json(&s);
        if (!nj || json_object_set_new(r, k, nj) != 0) return 0;
    }
    return 1;
}

ct_status ct_stats_merge(json_t *const *dumps, const char *const *names, int n, json_t **out,
                         char *err, size_t errcap) {
    *out = NULL;
    json_t *roles = json_object();
    if (!roles) return ct_errf(err, errcap, CT_ERR_NOMEM, "step stats: out of memory");
    int bad = 0;
    char first[600] = "";
    for (int i = 0; i < n; i++) {
        char buf[300], label[32];
        const char *why = dumps[i] ? check_dump(dumps[i], buf, sizeof buf) : "could not be parsed";
        const char *name = names && names[i] ? names[i] : (snprintf(label, sizeof label, "dump %d", i), label);
        if (why) {
            if (!bad++) snprintf(first, sizeof first, "%s: %s", name, why);
            continue;
        }
        if (!combine(roles, dumps[i])) {
            json_decref(roles);
            return ct_errf(err, errcap, CT_ERR_NOMEM, "step stats: out of memory");
        }
    }
    *out = merged_doc(roles);
    json_decref(roles);
    if (!*out) return ct_errf(err, errcap, CT_ERR_NOMEM, "step stats: out of memory");
    if (bad)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "step stats dump %s%s", first,
                       bad > 1 ? " (and more bad dumps skipped)" : "");
    return CT_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ct_status ct_stats_merge_dir(const char *dir, json_t **out, int *n_files, char *err, size_t errcap) {
    *out = NULL;
    if (n_files) *n_files = 0;
    if (!dir) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "step stats: no directory");
    DIR *d = opendir(dir);
    if (!d) return ct_errf(err, errcap, CT_ERR_IO, "cannot read step stats directory '%s': %s", dir, strerror(errno));
    char **names = NULL;
    int n = 0, cap = 0, oom = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json") != 0) continue;
        if (n == cap) {
            int nc = cap ? cap * 2 : 16;
            char **nn = realloc(names, (size_t)nc * sizeof *nn);
            if (!nn) {
                oom = 1;
                break;
            }
            names = nn;
            cap = nc;
        }
        size_t pl = strlen(dir) + l + 2;
        if (!(names[n] = malloc(pl))) {
            oom = 1;
            break;
        }
        snprintf(names[n++], pl, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    json_t **dumps = oom ? NULL : calloc((size_t)(n ? n : 1), sizeof *dumps);
    ct_status st = CT_OK;
    if (!dumps) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "step stats: out of memory");
        goto done;
    }
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_str);
    /* Read, parse and check every file; bad ones are dropped, the first one is named. */
    char first[700] = "";
    int bad = 0, good = 0;
    for (int i = 0; i < n; i++) {
        char *text = NULL, e2[300], why[300];
        size_t len = 0;
        if (ct_read_file(names[i], MAX_DUMP_BYTES, &text, &len, e2, sizeof e2) != CT_OK) {
            if (!bad++) snprintf(first, sizeof first, "%s", e2);
            continue;
        }
        json_error_t je;
        json_t *j = json_loadb(text, len, 0, &je);
        free(text);
        const char *w = NULL;
        if (!j) {
            snprintf(why, sizeof why, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
            w = why;
        } else {
            w = check_dump(j, why, sizeof why);
        }
        if (w) {
            if (!bad++) snprintf(first, sizeof first, "step stats dump '%s': %s", names[i], w);
            json_decref(j);
            continue;
        }
        dumps[good++] = j;
    }
    char e3[700];
    st = ct_stats_merge((json_t *const *)dumps, NULL, good, out, e3, sizeof e3);
    if (st != CT_OK) {
        ct_errf(err, errcap, st, "%s", e3);
    } else if (bad) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s (%d of %d dump files bad; merged the other %d)", first, bad,
                     n, good);
    }
    if (n_files) *n_files = good;
done:
    for (int i = 0; i < n; i++) {
        if (dumps) json_decref(dumps[i]);
        free(names[i]);
    }
    free(dumps);
    free(names);
    return st;
}

char *ct_stats_markdown(const json_t *merged, int max_rows) {
    const json_t *att = json_object_get(merged, "attribution");
    if (!json_is_array(att)) return NULL;
    size_t n = json_array_size(att);
    if (max_rows > 0 && (size_t)max_rows < n) n = (size_t)max_rows;
    size_t cap = 160 + n * 256, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    len += (size_t)snprintf(s + len, cap - len,
                            "role | counter | n | mean ms | p95 ms | share of 80 ms\n"
                            "--- | --- | ---: | ---: | ---: | ---:\n");
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(att, i);
        const char *role = json_string_value(json_object_get(r, "role"));
        const char *ctr = json_string_value(json_object_get(r, "counter"));
        int w = snprintf(s + len, cap - len, "%.80s | %.120s | %lld | %.2f | %.2f | %.1f%%\n", role ? role : "?",
                         ctr ? ctr : "?", (long long)json_integer_value(json_object_get(r, "count")),
                         num(r, "mean_ms"), num(r, "p95_ms"), 100.0 * num(r, "share_of_frame"));
        if (w < 0 || (size_t)w >= cap - len) break; /* cannot happen: 256 bytes per row */
        len += (size_t)w;
    }
    return s;
}
