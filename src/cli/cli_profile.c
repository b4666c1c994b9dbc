/* Deploy profile -> synthesiser parameters (see cli_profile.h and docs/EDGE.md). */
#include "cli/cli_profile.h"

#include <stdio.h>
#include <string.h>

#include "edge/derive.h"
#include "edge/profile.h"

int ct_cli_apply_profile(const char *spec, const char *model_dir, ct_synth_params *sp,
                         ct_cli_profile_map *cp) {
    memset(cp, 0, sizeof *cp);
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
    if (tc->s[0] && ct_cpu_range_parse(tc->s, cp->talker_cpus, 256, &cp->n_talker_cpus, err,
                                       sizeof err) != CT_OK) {
        fprintf(stderr, "error: profile talker.cpus: %s\n", err);
        return -1;
    }
    if (cc->s[0] && ct_cpu_range_parse(cc->s, cp->codec_cpus, 256, &cp->n_codec_cpus, err,
                                       sizeof err) != CT_OK) {
        fprintf(stderr, "error: profile codec.cpus: %s\n", err);
        return -1;
    }
    if (cp->n_talker_cpus) {
        sp->talker_cpus = cp->talker_cpus;
        sp->n_talker_cpus = cp->n_talker_cpus;
        sp->talker_threads = cp->n_talker_cpus;
    }
    if (cp->n_codec_cpus) {
        sp->codec_cpus = cp->codec_cpus;
        sp->n_codec_cpus = cp->n_codec_cpus;
        sp->codec_threads = cp->n_codec_cpus;
    }
    sp->max_context = (int)p.v[CT_PK_TALKER_MAX_CONTEXT].i;
    sp->context_frames = (int)p.v[CT_PK_STREAM_LEFT_CONTEXT].i;
    const ct_pval *ramp = &p.v[CT_PK_STREAM_RAMP];
    if (p.v[CT_PK_STREAM_ADAPTIVE].i) {
        snprintf(cp->schedule, sizeof cp->schedule, "adaptive");
    } else if (ramp->n >= 2) {
        size_t off = (size_t)snprintf(cp->schedule, sizeof cp->schedule, "ramp:");
        for (int i = 0; i < ramp->n && off + 8 < sizeof cp->schedule; i++)
            off += (size_t)snprintf(cp->schedule + off, sizeof cp->schedule - off, i ? ",%d" : "%d",
                                    ramp->list[i]);
    } else {
        snprintf(cp->schedule, sizeof cp->schedule, "fixed:%d,%d", (int)p.v[CT_PK_STREAM_MIN_FRAMES].i,
                 (int)p.v[CT_PK_STREAM_CHUNK_FRAMES].i);
    }
    sp->schedule = cp->schedule;
    snprintf(cp->desc, sizeof cp->desc, "profile %.200s: talker cpus '%.200s', codec cpus '%.200s', "
             "context %d, schedule %.100s, left context %d", spec, tc->s, cc->s, sp->max_context,
             cp->schedule, sp->context_frames);
    return 0;
}
