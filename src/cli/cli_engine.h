/* The model, codec and stream engine of the server commands (serve, wyoming): their shared
   flags (model, deploy profile, streams, queue, threads, placement, context, KV budget,
   throttle, buffer, weights), the profile resolved and every given flag applied over it, the
   engine created with warm-up. */
#ifndef CT_CLI_ENGINE_H
#define CT_CLI_ENGINE_H

#include "cli/args.h"
#include "cli/cli_profile.h"
#include "codectalk.h"

typedef struct {
    const char *model, *profile, *placement, *tok, *weights;
    int max_streams, queue, threads, codec_threads, ctx, kv_mib, margin, no_throttle, buffer_ms, f32;
} ct_cli_engine_flags;

void ct_cli_engine_flags_init(ct_cli_engine_flags *f);
/* Writes the flags' options into opts (at most cap entries, no terminator); returns count. */
int ct_cli_engine_opts(ct_cli_engine_flags *f, ct_opt *opts, int cap);
/* After parsing: -m given and every value in range; else prints the error and returns -1
   (exit 2). */
int ct_cli_engine_check(const ct_cli_engine_flags *f);

typedef struct {
    ct_codec *codec;
    ct_model *m;
    ct_engine *e;
    ct_cli_deploy *pm;     /* the resolved profile (pm->desc: its one-line summary) */
    ct_stream_params sp;   /* every request's stream params: the profile's */
} ct_cli_engine;

/* Loads the codec and model, resolves the profile, applies the given flags over it and
   creates the engine (warming up), blocking SIGINT and SIGTERM first (for the caller's sigwait;
   the engine's threads inherit the mask). 0, or -1 with the error printed and nothing left open. */
int ct_cli_engine_open(const ct_cli_engine_flags *f, ct_cli_engine *x);
/* Waits for the warm-up: 0 when ready, -1 (error printed) when it failed. */
int ct_cli_engine_wait_ready(ct_cli_engine *x);
void ct_cli_engine_close(ct_cli_engine *x);

#endif
