/* Deploy profile -> engine and stream parameters (see cli_profile.h and docs/EDGE.md). */
#include "cli/cli_profile.h"

#include <stdio.h>
#include <string.h>

#include "edge/derive.h"
#include "edge/profile.h"

/* The chunk schedule a profile asks for: adaptive, a ramp, or fixed:MIN,CHUNK. */
static void profile_schedule(const ct_profile *p, char *out, size_t cap) {
    const ct_pval *ramp = &p->v[CT_PK_STREAM_RAMP];
    if (p->v[CT_PK_STREAM_ADAPTIVE].i) {
        snprintf(out, cap, "adaptive");
    } else if (ramp->n >= 2) {
        size_t off = (size_t)snprintf(out, cap, "ramp:");
        for (int i = 0; i < ramp->n && off + 8 < cap; i++)
            off += (size_t)snprintf(out + off, cap - off, i ? ",%d" : "%d", ramp->list[i]);
    } else {
        snprintf(out, cap, "fixed:%d,%d", (int)p->v[CT_PK_STREAM_MIN_FRAMES].i,
                 (int)p->v[CT_PK_STREAM_CHUNK_FRAMES].i);
    }
}

static int cpus_key(const ct_pval *v, const char *key, int *cpus, int *n) {
    char err[512];
    if (v->s[0] && ct_cpu_range_parse(v->s, cpus, 256, n, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: profile %s: %s\n", key, err);
        return -1;
    }
    return 0;
}

int ct_cli_apply_profile(const char *spec, const char *model_dir, ct_engine_params *ep,
                         ct_stream_params *sp, ct_cli_profile_map *out) {
    memset(out, 0, sizeof *out);
    if (!spec) return 0;
    ct_auto_opts o;
    memset(&o, 0, sizeof o);
    o.model_dir = model_dir;
    ct_profile p;
    char err[1024];
    if (ct_profile_resolve(spec, &o, &p, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: --profile %s: %s\n", spec, err);
        return -1;
    }
    const ct_pval *tc = &p.v[CT_PK_TALKER_CPUS], *cc = &p.v[CT_PK_CODEC_CPUS];
    if (cpus_key(tc, "talker.cpus", out->talker_cpus, &out->n_talker_cpus) != 0 ||
        cpus_key(cc, "codec.cpus", out->codec_cpus, &out->n_codec_cpus) != 0)
        return -1;
    profile_schedule(&p, out->schedule, sizeof out->schedule);
    int max_context = (int)p.v[CT_PK_TALKER_MAX_CONTEXT].i, left = (int)p.v[CT_PK_STREAM_LEFT_CONTEXT].i;
    if (ep) {
        ep->max_streams = (int)p.v[CT_PK_ENGINE_MAX_STREAMS].i;
        if (ct_placement_parse(p.v[CT_PK_ENGINE_PLACEMENT].s, &ep->placement) != CT_OK) {
            fprintf(stderr, "error: profile engine.placement: '%s' is not overlapped, serial or auto\n",
                    p.v[CT_PK_ENGINE_PLACEMENT].s);
            return -1;
        }
        ep->max_context = max_context;
        ep->kv_budget_bytes = (uint64_t)p.v[CT_PK_TALKER_KV_BUDGET].i;
        if (strcmp(p.v[CT_PK_STREAM_MARGIN_MS].layer, "builtin") != 0)
            ep->safety_margin_ms = (double)p.v[CT_PK_STREAM_MARGIN_MS].i;
        if (out->n_talker_cpus) {
            ep->talker_cpus = out->talker_cpus;
            ep->n_talker_cpus = ep->talker_threads = out->n_talker_cpus;
        }
        if (out->n_codec_cpus) {
            ep->codec_cpus = out->codec_cpus;
            ep->n_codec_cpus = ep->codec_threads = out->n_codec_cpus;
        }
    }
    if (sp) {
        sp->schedule = out->schedule;
        sp->context_frames = left;
    }
    snprintf(out->desc, sizeof out->desc, "profile %.200s: placement %.16s, talker cpus '%.200s', codec cpus "
             "'%.200s', context %d, schedule %.100s, left context %d", spec, p.v[CT_PK_ENGINE_PLACEMENT].s, tc->s,
             cc->s, max_context, out->schedule, left);
    return 0;
}
