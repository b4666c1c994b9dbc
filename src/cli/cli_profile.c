/* Deploy profile -> model, engine and stream parameters for the engine commands. */
#include "cli/cli_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ct_cli_deploy_resolve(const char *spec, const char *model_dir, double codec_macs, int quiet,
                           ct_cli_deploy *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->spec, sizeof out->spec, "%s", spec ? spec : "auto");
    ct_auto_opts o;
    memset(&o, 0, sizeof o);
    o.model_dir = model_dir;
    o.codec_macs = codec_macs;
    char err[1024];
    int autom = !strcmp(out->spec, "auto");
    if (autom && !(out->rep = malloc(sizeof *out->rep))) {
        fprintf(stderr, "error: out of memory\n");
        return -1;
    }
    if (ct_profile_resolve(out->spec, &o, &out->p, out->rep, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: --profile %s: %s\n", out->spec, err);
        return -1;
    }
    const ct_pval *v = out->p.v;
    if (autom && out->rep->warnings[0] && !quiet) fprintf(stderr, "profile auto: %s\n", out->rep->warnings);
    char pred[64] = "";
    if (autom && out->rep->have_plan) {
        const ct_plan_option *c = &out->rep->plan.opt[out->rep->plan.chosen];
        snprintf(pred, sizeof pred, ", %s RTF %.2f", c->measured ? "measured" : "predicted", c->frame_ms / CT_FRAME_MS);
    }
    snprintf(out->desc, sizeof out->desc,
             "profile %.200s: weights %s/%s%s%s, placement %s, threads %lld+%lld, cpus '%.100s'/'%.100s', streams %lld, "
             "context %lld, chunks %s",
             out->spec, v[CT_PK_TALKER_WEIGHTS].s, v[CT_PK_PREDICTOR_WEIGHTS].s,
             v[CT_PK_TALKER_WEIGHT_PANELS].i ? " with weight panels" : "", pred, v[CT_PK_ENGINE_PLACEMENT].s,
             (long long)v[CT_PK_TALKER_THREADS].i, (long long)v[CT_PK_CODEC_THREADS].i, v[CT_PK_TALKER_CPUS].s,
             v[CT_PK_CODEC_CPUS].s, (long long)v[CT_PK_ENGINE_MAX_STREAMS].i, (long long)v[CT_PK_TALKER_MAX_CONTEXT].i,
             v[CT_PK_STREAM_POLICY].s);
    return 0;
}

int ct_cli_deploy_apply(ct_cli_deploy *cp, ct_model_params *mp, ct_engine_params *ep, ct_stream_params *sp) {
    char err[1024];
    if (ct_profile_apply(&cp->p, mp, ep, sp, &cp->b, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: --profile %s: %s\n", cp->spec, err);
        return -1;
    }
    return 0;
}

void ct_cli_deploy_over(ct_cli_deploy *cp, const char *flag, const char *value) {
    if (!cp) return;
    size_t n = strlen(cp->desc);
    const char *sep = strstr(cp->desc, "; flags over it: ") ? ", " : "; flags over it: ";
    if (n < sizeof cp->desc)
        snprintf(cp->desc + n, sizeof cp->desc - n, "%s--%s%s%.100s", sep, flag, value ? " " : "", value ? value : "");
}

void ct_cli_deploy_over_int(ct_cli_deploy *cp, const char *flag, long long value) {
    char v[32];
    snprintf(v, sizeof v, "%lld", value);
    ct_cli_deploy_over(cp, flag, v);
}

void ct_cli_deploy_free(ct_cli_deploy *cp) {
    if (!cp) return;
    free(cp->rep);
    cp->rep = NULL;
}
