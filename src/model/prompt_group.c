/* Prompt sharing between sessions (ct_prompt_group, docs/STREAMING.md "Prompt reuse"): a
   member's start copies the K/V of the leading prompt positions another member's last prefill
   holds, or the group's prompt cache, under the group's lock, instead of running them. The
   cache keeps the voice rows (the prompt rows before the text) of recent voices in a byte
   budget, least recently used out first. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "model/session_internal.h"

/* One cached voice: the keys and talker K/V of a prompt's first n rows. */
typedef struct {
    uint8_t (*key)[32]; /* [n] */
    float *kv;          /* [2][layers][kv_heads][n][head_dim]: K, then V */
    int n;
    size_t bytes;
    uint64_t used;      /* the group's tick at its last insert or copy */
} cached;

struct ct_prompt_group {
    pthread_mutex_t mu;   /* everything below, and each member's row_key and kept */
    const ct_model *m;    /* the model of every member (the first one's) */
    ct_session **member;  /* [n] */
    int n, cap;
    size_t budget, held;  /* the cache's byte budget, and the bytes its entries take */
    cached *c;            /* [nc] */
    int nc, ccap;
    uint64_t tick;
};

ct_status ct_prompt_group_create(size_t cache_bytes, ct_prompt_group **out) {
    if (!out) return CT_ERR_INVALID_ARG;
    *out = NULL;
    ct_prompt_group *g = calloc(1, sizeof *g);
    if (!g) return CT_ERR_NOMEM;
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        return CT_ERR_NOMEM;
    }
    g->budget = cache_bytes;
    *out = g;
    return CT_OK;
}

static void drop(ct_prompt_group *g, int i) {
    g->held -= g->c[i].bytes;
    free(g->c[i].key);
    free(g->c[i].kv);
    g->c[i] = g->c[--g->nc];
}

void ct_prompt_group_free(ct_prompt_group *g) {
    if (!g) return;
    for (int i = 0; i < g->n; i++) g->member[i]->group = NULL;
    while (g->nc) drop(g, 0);
    pthread_mutex_destroy(&g->mu);
    free(g->member);
    free(g->c);
    free(g);
}

size_t ct_prompt_group_cached_bytes(ct_prompt_group *g) {
    if (!g) return 0;
    pthread_mutex_lock(&g->mu);
    size_t b = g->held;
    pthread_mutex_unlock(&g->mu);
    return b;
}

/* Takes s out of its group, if any (the group's lock held by the caller when locked). */
static void leave_locked(ct_session *s) {
    ct_prompt_group *g = s->group;
    for (int i = 0; i < g->n; i++)
        if (g->member[i] == s) {
            g->member[i] = g->member[--g->n];
            break;
        }
    if (!g->n && !g->nc) g->m = NULL; /* cached rows keep the model's shape */
    s->group = NULL;
}

void ct_session_leave_group(ct_session *s) {
    ct_prompt_group *g = s ? s->group : NULL;
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    leave_locked(s);
    pthread_mutex_unlock(&g->mu);
}

ct_status ct_session_join_prompts(ct_session *s, ct_prompt_group *g) {
    if (!s) return CT_ERR_INVALID_ARG;
    s->err[0] = 0;
    if (s->prefilling)
        return ct_errf(s->err, sizeof s->err, CT_ERR_STATE, "prompt group: the session is between begin and finish");
    if (g == s->group) return CT_OK;
    ct_session_leave_group(s);
    if (!g) return CT_OK;
    pthread_mutex_lock(&g->mu);
    ct_status st = CT_OK;
    if (g->m && g->m != s->m) {
        st = ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG,
                     "prompt group: its sessions or cached prompts belong to another model than this one");
    } else if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 4;
        ct_session **nm = realloc(g->member, sizeof *nm * (size_t)cap);
        if (!nm) st = ct_errf(s->err, sizeof s->err, CT_ERR_NOMEM, "prompt group: out of memory");
        else g->member = nm, g->cap = cap;
    }
    if (st == CT_OK) {
        g->member[g->n++] = s;
        g->m = s->m;
        s->group = g;
    }
    pthread_mutex_unlock(&g->mu);
    return st;
}

void ct_prompt_group_lock(ct_session *s) {
    if (s->group) pthread_mutex_lock(&s->group->mu);
}

void ct_prompt_group_unlock(ct_session *s) {
    if (s->group) pthread_mutex_unlock(&s->group->mu);
}

/* Leading rows of s's prompt (just keyed) that member d's KV holds: rows whose keys match d's
   last prefill, at most prompt_len - 1 (the last position always runs, as in prompt_keys). */
static int member_match(const ct_session *s, const ct_session *d) {
    const int lim = d->kept < s->prompt_len - 1 ? d->kept : s->prompt_len - 1;
    int n = 0;
    while (n < lim && !memcmp(d->row_key[n], s->row_key[n], sizeof s->row_key[n])) n++;
    return n;
}

/* The same for cached entry c. */
static int cached_match(const ct_session *s, const cached *c) {
    const int lim = c->n < s->prompt_len - 1 ? c->n : s->prompt_len - 1;
    int n = 0;
    while (n < lim && !memcmp(c->key[n], s->row_key[n], sizeof s->row_key[n])) n++;
    return n;
}

/* Talker K/V of positions [a, b) in every layer and head from src into dst. */
static void kv_copy(ct_kv *dst, const ct_kv *src, int a, int b) {
    const size_t hd = (size_t)dst->head_dim, len = (size_t)(b - a) * hd * sizeof(float);
    for (int l = 0; l < dst->layers; l++)
        for (int h = 0; h < dst->kv_heads; h++) {
            const size_t od = ((size_t)h * dst->cap + a) * hd, os = ((size_t)h * src->cap + a) * hd;
            memcpy(dst->k[l] + od, src->k[l] + os, len);
            memcpy(dst->v[l] + od, src->v[l] + os, len);
        }
}

/* Positions [a, b) between a KV cache and a cached entry's [2][layers][kv_heads][n][hd] rows:
   into the entry (to_cache) or out of it. */
static void kv_cached(ct_kv *kv, cached *c, int a, int b, int to_cache) {
    const size_t hd = (size_t)kv->head_dim, len = (size_t)(b - a) * hd * sizeof(float);
    for (int w = 0; w < 2; w++)
        for (int l = 0; l < kv->layers; l++)
            for (int h = 0; h < kv->kv_heads; h++) {
                float *t = (w ? kv->v[l] : kv->k[l]) + ((size_t)h * kv->cap + a) * hd;
                float *e = c->kv + ((((size_t)w * kv->layers + l) * kv->kv_heads + h) * c->n + a) * hd;
                memcpy(to_cache ? e : t, to_cache ? t : e, len);
            }
}

int ct_prompt_group_share(ct_session *s, int reuse) {
    ct_prompt_group *g = s->group;
    const ct_session *best = NULL;
    int n = reuse, bc = -1;
    for (int i = 0; g && i < g->n; i++) {
        if (g->member[i] == s) continue;
        int k = member_match(s, g->member[i]);
        if (k > n) n = k, best = g->member[i];
    }
    for (int i = 0; g && i < g->nc; i++) {
        int k = cached_match(s, &g->c[i]);
        if (k > n) n = k, bc = i, best = NULL;
    }
    if (bc >= 0) {
        kv_cached(&s->tkv, &g->c[bc], reuse, n, 0);
        g->c[bc].used = ++g->tick;
        s->prompt_cached = n - reuse;
        return n;
    }
    if (!best) return reuse;
    kv_copy(&s->tkv, &best->tkv, reuse, n);
    s->prompt_shared = n - reuse;
    return n;
}

void ct_prompt_group_keep(ct_session *s) {
    ct_prompt_group *g = s->group;
    const int n = s->voice_rows;
    if (!g || !g->budget || n < 1 || n > s->kept) return;
    const ct_kv *kv = &s->tkv;
    const size_t bytes = (size_t)n * (sizeof *g->c->key + 2 * (size_t)kv->layers * kv->kv_heads * kv->head_dim * sizeof(float));
    if (bytes > g->budget) return;
    for (int i = 0; i < g->nc; i++) { /* held already (or a longer prompt of it): touched */
        cached *c = &g->c[i];
        if (c->n >= n && !memcmp(c->key, s->row_key, (size_t)n * sizeof *c->key)) {
            c->used = ++g->tick;
            return;
        }
    }
    while (g->held + bytes > g->budget) { /* least recently used out */
        int lru = 0;
        for (int i = 1; i < g->nc; i++)
            if (g->c[i].used < g->c[lru].used) lru = i;
        drop(g, lru);
    }
    if (g->nc == g->ccap) {
        int cap = g->ccap ? 2 * g->ccap : 8;
        cached *nc = realloc(g->c, sizeof *nc * (size_t)cap);
        if (!nc) return; /* the cache is an optimisation: nothing is kept */
        g->c = nc, g->ccap = cap;
    }
    cached c = {malloc((size_t)n * sizeof *c.key), malloc(bytes - (size_t)n * sizeof *c.key), n, bytes, ++g->tick};
    if (!c.key || !c.kv) {
        free(c.key);
        free(c.kv);
        return;
    }
    memcpy(c.key, s->row_key, (size_t)n * sizeof *c.key);
    kv_cached(&s->tkv, &c, 0, n, 1);
    g->c[g->nc++] = c;
    g->held += bytes;
}
