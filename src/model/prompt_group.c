/* Prompt sharing between sessions (ct_prompt_group, docs/STREAMING.md "Prompt reuse"): a
   member's start copies the K/V of the leading prompt positions another member's last prefill
   holds, under the group's lock, instead of running them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "model/session_internal.h"

struct ct_prompt_group {
    pthread_mutex_t mu;   /* the members list, and each member's row_key and kept */
    const ct_model *m;    /* the model of every member (the first one's) */
    ct_session **member;  /* [n] */
    int n, cap;
};

ct_status ct_prompt_group_create(ct_prompt_group **out) {
    if (!out) return CT_ERR_INVALID_ARG;
    *out = NULL;
    ct_prompt_group *g = calloc(1, sizeof *g);
    if (!g) return CT_ERR_NOMEM;
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        return CT_ERR_NOMEM;
    }
    *out = g;
    return CT_OK;
}

void ct_prompt_group_free(ct_prompt_group *g) {
    if (!g) return;
    for (int i = 0; i < g->n; i++) g->member[i]->group = NULL;
    pthread_mutex_destroy(&g->mu);
    free(g->member);
    free(g);
}

/* Takes s out of its group, if any (the group's lock held by the caller when locked). */
static void leave_locked(ct_session *s) {
    ct_prompt_group *g = s->group;
    for (int i = 0; i < g->n; i++)
        if (g->member[i] == s) {
            g->member[i] = g->member[--g->n];
            break;
        }
    if (!g->n) g->m = NULL;
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
                     "prompt group: its sessions belong to another model than this one");
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

int ct_prompt_group_share(ct_session *s, int reuse) {
    const ct_prompt_group *g = s->group;
    const ct_session *best = NULL;
    int n = reuse;
    for (int i = 0; g && i < g->n; i++) {
        if (g->member[i] == s) continue;
        int k = member_match(s, g->member[i]);
        if (k > n) n = k, best = g->member[i];
    }
    if (!best) return reuse;
    kv_copy(&s->tkv, &best->tkv, reuse, n);
    s->prompt_shared = n - reuse;
    return n;
}
