/* `--profile auto|none|FILE` for the engine commands (synth, serve, bench stream, calibrate):
   resolves the deploy profile (auto by default) and writes it into the model, engine and stream
   parameters; the command then applies every flag the user gave, whatever its value
   (ct_args_given), so an explicit flag always beats the profile. */
#ifndef CT_CLI_PROFILE_H
#define CT_CLI_PROFILE_H

#include "codectalk.h"
#include "edge/profile.h"

typedef struct {
    char spec[1024];        /* "auto", "none" or the file */
    ct_profile p;
    ct_profile_bufs b;      /* the params point into these */
    ct_auto_report *rep;    /* auto: what the chain found (heap; freed by ct_cli_deploy_free) */
    char desc[2048];        /* one line: the profile's choices */
} ct_cli_deploy;

/* Resolves spec (NULL = "auto") for model_dir; codec_macs as ct_auto_opts (0 = count them from
   the model dir). Prints errors; prints the chain's warnings unless quiet. 0 on success. */
int ct_cli_deploy_resolve(const char *spec, const char *model_dir, double codec_macs, int quiet,
                           ct_cli_deploy *out);

/* Writes the profile into any of mp, ep, sp (NULL: skipped). 0 on success (errors printed). */
int ct_cli_deploy_apply(ct_cli_deploy *cp, ct_model_params *mp, ct_engine_params *ep, ct_stream_params *sp);

/* Appends "flag value" to desc's list of flags given over the profile ("; flags over it: --weights
   int8, ..."), so the line printed says what runs. NULL cp: nothing. */
void ct_cli_deploy_over(ct_cli_deploy *cp, const char *flag, const char *value);
void ct_cli_deploy_over_int(ct_cli_deploy *cp, const char *flag, long long value);

void ct_cli_deploy_free(ct_cli_deploy *cp);

#endif
