/* `--profile auto|FILE` for the engine commands: maps a resolved deploy profile onto the stream
   engine's parameters (streams, placement, context, KV budget, margin, threads, CPU sets) and a
   stream's (chunk schedule, windowed left context). */
#ifndef CT_CLI_PROFILE_H
#define CT_CLI_PROFILE_H

#include "codectalk.h"

typedef struct {
    int talker_cpus[256], n_talker_cpus;
    int codec_cpus[256], n_codec_cpus;
    char schedule[128];
    char desc[1024]; /* one line saying what the profile set */
} ct_cli_profile_map;

/* Resolves spec ("auto" or a YAML file) for model_dir and writes its values into *ep and *sp
   (either may be NULL). The CPU arrays and the schedule string live in *out, which must outlive
   the use of *ep and *sp. Prints errors; returns 0 on success (spec NULL: nothing set). */
int ct_cli_apply_profile(const char *spec, const char *model_dir, ct_engine_params *ep,
                         ct_stream_params *sp, ct_cli_profile_map *out);

#endif
