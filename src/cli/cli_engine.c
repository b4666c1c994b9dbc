/* The model, codec and stream engine of the server commands, from their shared flags. */
#include "cli/cli_engine.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_common.h"
#include "codec/codec.h"

void ct_cli_engine_flags_init(ct_cli_engine_flags *f) {
    memset(f, 0, sizeof *f);
    f->queue = 8;
    f->margin = -1;
    f->buffer_ms = 10000;
}

int ct_cli_engine_opts(ct_cli_engine_flags *f, ct_opt *o, int cap) {
    ct_opt t[] = {
        {"model", 'm', CT_OPT_STR, &f->model, "DIR", "model directory"},
        {"profile", 0, CT_OPT_STR, &f->profile, "auto|none|FILE",
         "deploy profile (default auto: weight formats, streams, KV budget, placement, threads, CPUs, chunks, "
         "admission cost; none = plain defaults); every flag given overrides it"},
        {"max-streams", 0, CT_OPT_INT, &f->max_streams, "N", "concurrent streams (default: the profile's)"},
        {"queue", 0, CT_OPT_INT, &f->queue, "N", "requests that may wait for a stream (default: the profile's, 8)"},
        {"threads", 0, CT_OPT_INT, &f->threads, "N", "talker/predictor threads (default: profile, else engine)"},
        {"codec-threads", 0, CT_OPT_INT, &f->codec_threads, "N", "codec threads, overlapped (default: profile, else 1)"},
        {"placement", 0, CT_OPT_STR, &f->placement, "MODE",
         "overlapped | serial | auto (default: serial on 2 or fewer CPUs); the audio is the same"},
        {"context", 0, CT_OPT_INT, &f->ctx, "N", "talker KV positions per stream (default: profile, else 2048)"},
        {"kv-budget-mib", 0, CT_OPT_INT, &f->kv_mib, "N",
         "talker KV budget in MiB (default: profile, else max-streams streams)"},
        {"margin-ms", 0, CT_OPT_INT, &f->margin, "MS", "prefill throttle safety margin (default: profile, else 120)"},
        {"no-throttle", 0, CT_OPT_FLAG, &f->no_throttle, NULL,
         "never hold a prefill back for playback slack (maximises batching; listeners may stall)"},
        {"buffer-ms", 0, CT_OPT_INT, &f->buffer_ms, "MS", "per-request audio buffer before back-pressure (default 10000)"},
        {"tokenizer", 0, CT_OPT_STR, &f->tok, "DIR", "tokenizer files directory (default: model dir)"},
        {"f32", 0, CT_OPT_FLAG, &f->f32, NULL, "convert weights to f32 at load"},
        {"weights", 0, CT_OPT_STR, &f->weights, "FMT", "bf16 (as stored), int8, int4 or mixed (docs/KERNELS.md)"},
    };
    int n = (int)(sizeof t / sizeof *t);
    if (n > cap) n = cap;
    memcpy(o, t, sizeof *t * (size_t)n);
    return n;
}

int ct_cli_engine_check(const ct_cli_engine_flags *f) {
    if (!f->model) {
        fprintf(stderr, "error: -m DIR is required\n");
        return -1;
    }
    if (f->queue < 0 || f->threads < 0 || f->codec_threads < 0 || f->max_streams < 0 || f->kv_mib < 0 ||
        f->buffer_ms < 200) {
        fprintf(stderr, "error: --queue/--threads/--codec-threads/--max-streams/--kv-budget-mib must be >= 0; "
                        "--buffer-ms >= 200\n");
        return -1;
    }
    int pl;
    if (f->placement && ct_placement_parse(f->placement, &pl) != CT_OK) {
        fprintf(stderr, "error: --placement '%s': expected overlapped, serial or auto\n", f->placement);
        return -1;
    }
    return 0;
}

int ct_cli_engine_open(const ct_cli_engine_flags *f, ct_cli_engine *x) {
    memset(x, 0, sizeof *x);
    char err[1024];
    if (ct_codec_load(f->model, &x->codec, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    /* the deploy profile (auto unless told), then every flag given over it */
    ct_engine_params ep = ct_engine_params_default();
    ct_model_params mp = ct_model_params_default();
    x->sp = ct_stream_params_default();
    x->pm = calloc(1, sizeof *x->pm);
    if (!x->pm || ct_cli_deploy_resolve(f->profile, f->model, ct_codec_macs_per_frame(x->codec), 0, x->pm) != 0 ||
        ct_cli_deploy_apply(x->pm, &mp, &ep, &x->sp) != 0) {
        if (!x->pm) fprintf(stderr, "error: out of memory\n");
        ct_cli_engine_close(x);
        return -1;
    }
    if (f->placement) ct_placement_parse(f->placement, &ep.placement), ct_cli_deploy_over(x->pm, "placement", f->placement);
    if (ct_args_given(&f->max_streams)) {
        ep.max_streams = f->max_streams;
        ep.kv_budget_bytes = 0; /* the streams asked for, each with its worst-case KV */
        ct_cli_deploy_over_int(x->pm, "max-streams", f->max_streams);
    }
    if (ct_args_given(&f->ctx)) ep.max_context = f->ctx, ct_cli_deploy_over_int(x->pm, "context", f->ctx);
    if (ct_args_given(&f->kv_mib))
        ep.kv_budget_bytes = (uint64_t)f->kv_mib << 20, ct_cli_deploy_over_int(x->pm, "kv-budget-mib", f->kv_mib);
    if (ct_args_given(&f->margin)) ep.safety_margin_ms = f->margin, ct_cli_deploy_over_int(x->pm, "margin-ms", f->margin);
    if (f->no_throttle) /* the engine's off switch (also for compute admission) */
        ep.safety_margin_ms = -1, ct_cli_deploy_over(x->pm, "no-throttle", NULL);
    if (ct_args_given(&f->threads)) ep.talker_threads = f->threads, ct_cli_deploy_over_int(x->pm, "threads", f->threads);
    if (ct_args_given(&f->codec_threads))
        ep.codec_threads = f->codec_threads, ct_cli_deploy_over_int(x->pm, "codec-threads", f->codec_threads);
    if (ct_args_given(&f->queue)) ep.queue_cap = f->queue, ct_cli_deploy_over_int(x->pm, "queue", f->queue);
    ep.buffer_ms = f->buffer_ms;
    ep.warmup = 1;
    mp.tokenizer_dir = f->tok;
    if (ct_args_given(&f->f32)) mp.f32_weights = f->f32, ct_cli_deploy_over(x->pm, "f32", NULL);
    if (ct_args_given(&f->weights)) {
        mp.weights = f->weights;
        mp.talker_weights = mp.predictor_weights = NULL;
        ct_cli_deploy_over(x->pm, "weights", f->weights);
    }
    x->m = ct_cli_load_model_p(f->model, &mp);
    if (!x->m) {
        ct_cli_engine_close(x);
        return -1;
    }
    /* signals go to the caller's sigwait, not to the engine's threads (they inherit the mask) */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (ct_engine_create(x->m, x->codec, &ep, &x->e, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        ct_cli_engine_close(x);
        return -1;
    }
    return 0;
}

int ct_cli_engine_wait_ready(ct_cli_engine *x) {
    char err[1024];
    while (ct_engine_ready(x->e, err, sizeof err) == 0) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (ct_engine_ready(x->e, err, sizeof err) < 0) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    return 0;
}

void ct_cli_engine_close(ct_cli_engine *x) {
    ct_engine_free(x->e);
    ct_codec_free(x->codec);
    ct_model_free(x->m);
    if (x->pm) ct_cli_deploy_free(x->pm);
    free(x->pm);
    memset(x, 0, sizeof *x);
}
