/* `--profile auto|FILE` for the engine commands: maps a resolved deploy profile onto the
   streaming synthesiser's parameters (threads, CPU sets, context, chunk schedule). */
#ifndef CT_CLI_PROFILE_H
#define CT_CLI_PROFILE_H

#include "codectalk.h"

typedef struct {
    int talker_cpus[256], n_talker_cpus;
    int codec_cpus[256], n_codec_cpus;
    char schedule[128];
    char desc[1024]; /* one line saying what the profile set */
} ct_cli_profile_map;

/* Resolves spec ("auto" or a YAML file) for model_dir and writes the values into *sp (CPU
   arrays and the schedule string live in *cp, which must outlive *sp's use). Prints errors;
   returns 0 on success. */
int ct_cli_apply_profile(const char *spec, const char *model_dir, ct_synth_params *sp,
                         ct_cli_profile_map *cp);

#endif
