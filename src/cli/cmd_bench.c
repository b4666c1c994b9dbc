/* `codectalk bench model|roofline|kernels`: per-stage cost of the model path against this
   machine's measured limits (read bandwidth for the talker and code predictor, FMA rate for
   the codec), and matmul throughput per weight format, shape and token count. */
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "edge/roofline.h"
#include "codec/codec.h"
#include "codec/codec_internal.h"
#include "codec/conv.h"
#include "core/clock.h"
#include "core/pool.h"
#include "kernels/attn.h"
#include "kernels/cpu.h"
#include "model/session_internal.h"

/* CPU time of this process (all threads), ms. */
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t mat_bytes(const ct_mat *w) { return (uint64_t)ct_mat_bytes(w); }

static uint64_t stack_bytes(const ct_stack_w *s) {
    uint64_t b = 0;
    for (int l = 0; l < s->cfg->layers; l++) {
        const ct_layer_w *L = &s->layers[l];
        b += mat_bytes(&L->q) + mat_bytes(&L->k) + mat_bytes(&L->v) + mat_bytes(&L->o) +
             mat_bytes(&L->gate) + mat_bytes(&L->up) + mat_bytes(&L->down);
    }
    return b;
}

/* Multiply-adds of one token through the stack's layer matrices. */
static double stack_macs(const ct_stack_w *s) {
    double m = 0;
    for (int l = 0; l < s->cfg->layers; l++) {
        const ct_layer_w *L = &s->layers[l];
        const ct_mat *ms[7] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
        for (int i = 0; i < 7; i++) m += (double)ms[i]->rows * ms[i]->cols;
    }
    return m;
}

/* The bench roofline: read GB/s at ct_roofline_bench_sizes up to largest_mib on 1 and threads
   threads, and the F32 FMA peak; 0, or -1 with the error printed. */
static int measure_roofline(int threads, int largest_mib, ct_machine *mc) {
    uint64_t sizes[CT_COST_SIZES];
    int n = ct_roofline_bench_sizes(largest_mib, sizes);
    char err[256];
    if (ct_roofline_machine(threads, sizes, n, mc, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    return 0;
}

/* {"threads", "source", "sizes_bytes", "read_gbs_1t", "read_gbs_nt", "fma_gflops_1t", "fma_gflops_nt",
    "kernels", "prompt": {format: {"op", "gflops_1t", "gflops_nt"}}} */
static json_t *roofline_json(const ct_machine *mc) {
    json_t *sz = json_array(), *g1 = json_array(), *gn = json_array();
    for (int k = 0; k < mc->n_sizes; k++) {
        json_array_append_new(sz, json_integer((json_int_t)mc->bytes[k]));
        json_array_append_new(g1, json_real(mc->gbs_1t[k]));
        json_array_append_new(gn, json_real(mc->gbs_nt[k]));
    }
    json_t *pr = json_object();
    for (int f = 0; f < CT_WF_COUNT; f++)
        json_object_set_new(pr, ct_wformat_name(f), json_pack("{s:s,s:f,s:f}", "op", mc->prompt_op[f], "gflops_1t",
                                                            mc->prompt_1t[f], "gflops_nt", mc->prompt_nt[f]));
    return json_pack("{s:i,s:s,s:o,s:o,s:o,s:f,s:f,s:s,s:o}", "threads", mc->n_threads, "source", mc->source,
                     "sizes_bytes", sz, "read_gbs_1t", g1, "read_gbs_nt", gn, "fma_gflops_1t", mc->fma_1t,
                     "fma_gflops_nt", mc->fma_nt, "kernels", mc->kernels, "prompt", pr);
}

static int cmd_roofline(int argc, char **argv) {
    int threads = 0, mib = 2048;
    const char *json_out = NULL;
    ct_opt opts[] = {{"threads", 0, CT_OPT_INT, &threads, "N", "threads for the N-thread figures (default all CPUs)"},
                     {"mib", 0, CT_OPT_INT, &mib, "N", "largest working set in MiB, the DRAM figure (default 2048)"},
                     {"json", 0, CT_OPT_STR, &json_out, "FILE", "also write the results as JSON"},
                     {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk bench roofline [--threads N] [--mib N] [--json FILE]\n"
                                            "Measures read bandwidth at working sets of 8 MiB .. --mib, the peak F32 FMA rate and,\n"
                                            "per weight format, the peak of the instruction the kernels run its prompt matmuls with.");
    if (r) return r < 0 ? 2 : 0;
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (mib < 16 || mib > 65536) {
        fprintf(stderr, "error: --mib must be in [16, 65536]\n");
        return 2;
    }
    ct_machine mc;
    if (measure_roofline(threads, mib, &mc) != 0) return 1;
    printf("| working set | read GB/s, 1 thread | read GB/s, %d threads |\n|---|---|---|\n", threads);
    for (int k = 0; k < mc.n_sizes; k++)
        printf("| %.0f MiB | %.1f | %.1f |\n", mc.bytes[k] / 1048576.0, mc.gbs_1t[k], mc.gbs_nt[k]);
    printf("peak F32 FMA: %.1f GFLOP/s (1 thread), %.1f GFLOP/s (%d threads); %s\n", mc.fma_1t, mc.fma_nt, threads,
           mc.source);
    printf("| prompt matmuls (kernels %s) | instruction | GFLOP/s, 1 thread | GFLOP/s, %d threads |\n|---|---|---|---|\n",
           mc.kernels, threads);
    for (int f = 0; f < CT_WF_COUNT; f++)
        printf("| %s weights | %s | %.1f | %.1f |\n", ct_wformat_name(f), mc.prompt_op[f], mc.prompt_1t[f], mc.prompt_nt[f]);
    printf("(f32-equivalent: 2 per weight multiply-add)\n");
    if (json_out) {
        json_t *j = roofline_json(&mc);
        int bad = !j || json_dump_file(j, json_out, JSON_INDENT(1)) != 0;
        json_decref(j);
        if (bad) {
            fprintf(stderr, "error: cannot write '%s'\n", json_out);
            return 1;
        }
    }
    return 0;
}

/* ms per frame of streaming nf frames through the codec on pool: mode 0 pushes one frame at
   a time, mode 1 follows the seed's ramp (2, 4, 8, 16, then 25), mode 2 pushes 25 frames at a
   time (the steady state; the last push takes what is left). -1 on error. */
static double codec_stream_ms(const ct_codec *c, ct_pool *pool, const int32_t *codes, int nf, int mode) {
    static const int ramp[5] = {2, 4, 8, 16, 25};
    char err[256];
    const int spf = ct_codec_samples_per_frame(c), G = ct_codec_n_groups(c);
    ct_codec_stream *cs = NULL;
    float *pcm = malloc(sizeof(float) * (size_t)spf * 25);
    double ms = -1;
    if (pcm && ct_codec_stream_create(c, 25, &cs, err, sizeof err) == CT_OK &&
        ct_codec_stream_set_pool(cs, pool) == CT_OK) {
        double t0 = ct_now_ms();
        int f = 0, k = 0, ok = 1;
        while (ok && f < nf) {
            int n = mode == 2 ? 25 : mode ? ramp[k < 4 ? k : 4] : 1;
            k++;
            if (n > nf - f) n = nf - f;
            ok = ct_codec_stream_push(cs, codes + (size_t)G * f, n, pcm, err, sizeof err) == CT_OK;
            f += n;
        }
        if (ok) ms = (ct_now_ms() - t0) / nf;
    }
    ct_codec_stream_free(cs);
    free(pcm);
    return ms;
}

#define REPS_MAX 100

/* Best-of-reps stage times of a session run (ms; codec[0] 1-frame pushes, codec[1] the ramp,
   codec[2] 25-frame pushes), and per repetition the talker's and predictor's ms/frame with the
   read GB/s probed at their working sets next to that repetition (the mean of a probe just
   before and one just after its frames; 0 without a probe). */
typedef struct {
    double prefill, prefill_cpu, talk, pred, codec[3]; /* prefill_cpu: CPU ms, all threads */
    double prefill_kept;   /* a start of another text in the voice the last start left (prompt
                              reuse): the returning voice's prompt; 1e30 when none reused */
    int kept_len, kept_reused; /* that start's positions and those it kept */
    int prompt_len, nf, reps;
    double talk_ctx; /* mean positions a talker step's attention reads (the prompt's and its own) */
    double talk_r[REPS_MAX], pred_r[REPS_MAX], t_gbs_r[REPS_MAX], p_gbs_r[REPS_MAX];
    int best_t, best_p; /* the repetitions that gave talk and pred */
} model_times;

/* The stages' read probes: GB/s at the talker's working set (its weights tw and the KV rows
   of kv_per_pos bytes per position its steps read) and the predictor's (pws). */
typedef struct {
    ct_read_probe *p;
    uint64_t tw, pws;
    double kv_per_pos;
    int threads;
} stage_probe;

/* Adds half of each probe's GB/s to *t_gbs and *p_gbs: called just before and just after a
   repetition's frames, they sum to the mean of the two (the host's bandwidth moves within
   seconds; either end alone can catch a burst or a dip). */
static void probe_stages(const stage_probe *sp, double ctx, double *t_gbs, double *p_gbs) {
    if (!sp || !sp->p) return;
    *t_gbs += 0.5 * ct_read_probe_gbs(sp->p, sp->tw + (uint64_t)(sp->kv_per_pos * ctx), sp->threads);
    *p_gbs += 0.5 * ct_read_probe_gbs(sp->p, sp->pws, sp->threads);
}

/* Runs reps repetitions of `frames` frames on s (and the codec on its pool), probing the read
   rates just before and just after each repetition's frames (after its prompt) when sp is
   given; 0, or -1 with the error printed. */
/* Prompt passes timed per repetition, the best kept: one start's time moved by tens of ms from
   run to run on a shared host (docs/BENCH.md "Issue 15, nineteenth sitting"). */
/* A rate for the tables: one decimal, or two significant digits below 0.1 (an ASan build's
   from-memory GB/s), so that a positive rate never prints as 0.0. buf: 24 bytes. */
static const char *rate_str(char *buf, double v) {
    snprintf(buf, 24, v >= 0.1 || v <= 0 ? "%.1f" : "%.2g", v);
    return buf;
}

#define PREFILL_STARTS 3
/* the text of the returning-voice start: the benchmark prompt's length, another first word */
#define KEPT_TEXT "A quick brown fox jumps over the lazy dog, and then it runs far away into the deep " \
                  "green forest to find its friends."

static int measure_model(ct_session *s, const ct_codec *codec, const ct_gen_params *g, int frames,
                         int reps, int32_t *codes, const stage_probe *sp, model_times *o) {
    memset(o, 0, sizeof *o);
    o->prefill = o->prefill_cpu = o->talk = o->pred = o->codec[0] = o->codec[1] = o->codec[2] = 1e30;
    o->prefill_kept = 1e30;
    o->reps = reps;
    /* g runs every position (prompt_reuse 0); the kept figure starts another text in g's voice
       after it, reusing what the two prompts share */
    ct_gen_params g2 = *g;
    g2.text = KEPT_TEXT;
    g2.prompt_reuse = 1;
    for (int rep = 0; rep < reps; rep++) {
        double tp = 1e30, tc = 1e30;
        for (int k = 0; k < PREFILL_STARTS; k++) { /* the last start's run goes on to the frames */
            if (rep || k) {
                const double t0 = ct_now_ms();
                if (ct_session_start(s, &g2) != CT_OK) {
                    fprintf(stderr, "error: %s\n", ct_session_errmsg(s));
                    return -1;
                }
                const double t = ct_now_ms() - t0;
                const ct_run_info ri = ct_session_run_info(s);
                if (ri.prompt_reused > 0 && t < o->prefill_kept)
                    o->prefill_kept = t, o->kept_len = ri.prompt_len, o->kept_reused = ri.prompt_reused;
            }
            double t0 = ct_now_ms(), c0 = cpu_ms();
            if (ct_session_start(s, g) != CT_OK) {
                fprintf(stderr, "error: %s\n", ct_session_errmsg(s));
                return -1;
            }
            const double t = ct_now_ms() - t0, c = cpu_ms() - c0;
            if (t < tp) tp = t;
            if (c < tc) tc = c;
        }
        o->prompt_len = ct_session_run_info(s).prompt_len;
        int got = 1, nf = 0;
        /* the talker steps: one per frame but the last (the frame limit ends the run before
           it); the step at position p attends to p + 1 positions */
        const int pos0 = s->pos;
        probe_stages(sp, pos0 + frames / 2.0, &o->t_gbs_r[rep], &o->p_gbs_r[rep]);
        while (got && nf < frames && ct_session_next_frame(s, codes + 16 * nf, &got) == CT_OK && got) nf++;
        const int steps = s->pos - pos0;
        o->nf = nf;
        o->talk_ctx = steps > 0 ? pos0 + (steps + 1) / 2.0 : 0;
        probe_stages(sp, o->talk_ctx, &o->t_gbs_r[rep], &o->p_gbs_r[rep]);
        if (tp < o->prefill) o->prefill = tp;
        if (tc < o->prefill_cpu) o->prefill_cpu = tc;
        o->talk_r[rep] = steps > 0 ? s->t_talker_ms / steps : 0;
        o->pred_r[rep] = nf ? s->t_pred_ms / nf : 0;
        if (steps > 0 && o->talk_r[rep] < o->talk) o->talk = o->talk_r[rep], o->best_t = rep;
        if (nf && o->pred_r[rep] < o->pred) o->pred = o->pred_r[rep], o->best_p = rep;
        if (codec && nf) { /* the codec on the session's pool: 1-frame pushes, the seed ramp, 25-frame pushes */
            for (int mode = 0; mode < 3; mode++) {
                double ms = codec_stream_ms(codec, s->pool, codes, nf, mode);
                if (ms > 0 && ms < o->codec[mode]) o->codec[mode] = ms;
            }
        }
    }
    return 0;
}

/* Batched decode (ct_batch_step: talker + code predictor, no codec) of B = 1, 2, 4, ... up to
   max_streams sessions, each running `frames` steps after one warm-up step, in `rounds`
   interleaved rounds (each round times every B once, so a host whose speed drifts moves all B
   alike): best ms per step and aggregate frames/s per B into ms[] / fps[] (index k for B =
   1 << k), and the smallest and largest per-round "vs 1 stream" ratio (B x round's 1-stream ms
   / round's B ms) into vmin[] / vmax[], and the best round's talker and predictor ms per step
   (the first stream's stage timers, which every batched step advances by its stage's wall time)
   into tk[] / pr[]; how many B values in *nb. 0, or -1 with the error printed. */
#define BATCH_MAXB 6 /* B up to 32 */
static int batched_run(const ct_model *m, const ct_gen_params *g0, int threads, int frames, int B, double *ms,
                       double *tk, double *pr) {
    char err[1024] = "";
    ct_batch *b = NULL;
    ct_session *ss[1 << (BATCH_MAXB - 1)] = {0};
    int32_t codes[(1 << (BATCH_MAXB - 1)) * CT_MAX_GROUPS];
    int got[1 << (BATCH_MAXB - 1)], ok = 1, done = 0;
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 256 + frames;
    ok = ct_batch_create(m, B, sp.max_context, threads, &b, err, sizeof err) == CT_OK;
    for (int i = 0; ok && i < B; i++) {
        ct_gen_params g = *g0;
        g.seed = (uint64_t)i + 1;
        g.max_frames = g.min_new_tokens = frames + 1;
        ok = ct_session_create(m, &sp, &ss[i], err, sizeof err) == CT_OK;
        if (ok && ct_session_start(ss[i], &g) != CT_OK) {
            snprintf(err, sizeof err, "%s", ct_session_errmsg(ss[i]));
            ok = 0;
        }
    }
    if (ok) ok = ct_batch_step(b, ss, B, codes, got) == CT_OK; /* warm-up step */
    const double tk0 = ok ? ss[0]->t_talker_ms : 0, pr0 = ok ? ss[0]->t_pred_ms : 0;
    double t0 = ct_now_ms();
    for (int f = 0; ok && f < frames; f++) {
        ok = ct_batch_step(b, ss, B, codes, got) == CT_OK;
        for (int i = 0; ok && i < B; i++) done += got[i];
    }
    const double el = ct_now_ms() - t0;
    if (ok) {
        *tk = (ss[0]->t_talker_ms - tk0) / frames;
        *pr = (ss[0]->t_pred_ms - pr0) / frames;
    }
    if (ok && done != B * frames) {
        snprintf(err, sizeof err, "batched decode of %d streams made %d of %d frames", B, done, B * frames);
        ok = 0;
    } else if (!ok && b && !err[0]) {
        snprintf(err, sizeof err, "%s", ct_batch_errmsg(b));
    }
    for (int i = 0; i < B; i++) ct_session_free(ss[i]);
    ct_batch_free(b);
    if (!ok) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    *ms = el / frames;
    return 0;
}

static int measure_batched(const ct_model *m, const ct_gen_params *g0, int threads, int frames, int max_streams,
                           int rounds, double *ms, double *fps, double *vmin, double *vmax, double *tk, double *pr,
                           int *nb) {
    int n = 0;
    while (n < BATCH_MAXB && (1 << n) <= max_streams) n++;
    for (int k = 0; k < n; k++) ms[k] = vmin[k] = vmax[k] = 0;
    for (int r = 0; r < rounds; r++) {
        double one = 0;
        for (int k = 0; k < n; k++) {
            double t, a, b;
            if (batched_run(m, g0, threads, frames, 1 << k, &t, &a, &b) != 0) return -1;
            if (k == 0) one = t;
            const double v = (1 << k) * one / t;
            if (r == 0 || t < ms[k]) {
                ms[k] = t;
                tk[k] = a;
                pr[k] = b;
            }
            if (r == 0 || v < vmin[k]) vmin[k] = v;
            if (r == 0 || v > vmax[k]) vmax[k] = v;
        }
    }
    for (int k = 0; k < n; k++) fps[k] = (1 << k) * 1e3 / ms[k];
    *nb = n;
    return 0;
}

/* --compete: n busy-loop child processes (a competing load of n cores), killed and reaped by
   compete_stop; they also die with this process (PR_SET_PDEATHSIG). Returns how many started. */
static int compete_start(int n, pid_t *pids) {
    const pid_t parent = getpid();
    int k = 0;
    for (; k < n; k++) {
        fflush(NULL); /* no buffered output duplicated into a child */
        pid_t c = fork();
        if (c < 0) break;
        if (c == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(0);
            for (volatile unsigned long spin = 0;; spin++) {
            }
        }
        pids[k] = c;
    }
    return k;
}

static void compete_stop(const pid_t *pids, int n) {
    for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
    for (int i = 0; i < n; i++) waitpid(pids[i], NULL, 0);
}

#define COMPETE_MAX 64

static int cmd_model(int argc, char **argv) {
    const char *model = NULL, *json_out = NULL, *weights = NULL;
    int threads = 0, frames = 50, reps = 3, no_codec = 0, compete = 0, streams = 0, panels = 0;
    ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &model, "DIR", "model directory"},
        {"weights", 0, CT_OPT_STR, &weights, "FMT", "bf16 (as stored), int8, int4 or mixed"},
        {"threads", 0, CT_OPT_INT, &threads, "N", "compute threads (default all CPUs)"},
        {"frames", 0, CT_OPT_INT, &frames, "N", "frames per repetition (default 50)"},
        {"repeat", 0, CT_OPT_INT, &reps, "N", "repetitions, best kept (default 3)"},
        {"no-codec", 0, CT_OPT_FLAG, &no_codec, NULL, "skip the codec decoder"},
        {"weight-panels", 0, CT_OPT_FLAG, &panels, NULL,
         "load with INT8/INT4 weight panels (ct_model_params.weight_panels, the profile's talker.weight_panels)"},
        {"compete", 0, CT_OPT_INT, &compete, "N",
         "measure again with N busy-loop processes running and print the throughput kept"},
        {"streams", 0, CT_OPT_INT, &streams, "N",
         "also time batched decode (talker + predictor) of 1, 2, 4, ... up to N streams, --repeat "
         "interleaved rounds: aggregate frames/s"},
        {"json", 0, CT_OPT_STR, &json_out, "FILE", "also write the results as JSON"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk bench model -m DIR [--weights FMT] [--threads N] [--frames N] [--compete N]\n"
                                            "Per-stage ms/frame, bytes/frame, GB/s, the stage's floor on this machine and the ratio to it.");
    if (r) return r < 0 ? 2 : 0;
    if (frames < 2 || frames > 4000 || reps < 1 || reps > REPS_MAX) {
        fprintf(stderr, "error: --frames must be in [2, 4000] and --repeat in [1, 100]\n");
        return 2;
    }
    if (streams < 0 || streams > 1 << (BATCH_MAXB - 1)) {
        fprintf(stderr, "error: --streams must be in [0, %d]\n", 1 << (BATCH_MAXB - 1));
        return 2;
    }
    if (compete < 0 || compete > COMPETE_MAX) {
        fprintf(stderr, "error: --compete must be in [0, %d]\n", COMPETE_MAX);
        return 2;
    }
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (!model) {
        fprintf(stderr, "error: --model DIR is required\n");
        return 2;
    }
    char err[1024];
    ct_model_params mp = ct_model_params_default();
    mp.weights = weights;
    mp.weight_panels = panels;
    double tl0 = ct_now_ms(), tc0 = cpu_ms();
    ct_model *m = ct_cli_load_model_p(model, &mp); /* the weight cache as every command uses it */
    if (!m) return 1;
    /* wall and CPU time of the load (CPU time: a figure that other load on the machine
       disturbs less) */
    double load_ms = ct_now_ms() - tl0, load_cpu_ms = cpu_ms() - tc0;
    const ct_model_info minfo = ct_model_get_info(m);
    ct_codec *codec = NULL;
    if (!no_codec && ct_codec_load(model, &codec, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s (use --no-codec to skip it)\n", err);
        ct_model_free(m);
        return 1;
    }
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 256 + frames;
    sp.n_threads = threads;
    ct_session *s = NULL;
    if (ct_session_create(m, &sp, &s, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        ct_codec_free(codec);
        ct_model_free(m);
        return 1;
    }
    ct_machine mc; /* the FMA peak, and read GB/s per working set (8 MiB .. 2 GiB: 4x the largest last-level cache seen) for the header */
    if (measure_roofline(threads, 2048, &mc) != 0) {
        ct_session_free(s);
        ct_codec_free(codec);
        ct_model_free(m);
        return 1;
    }
    const double dram_gbs = mc.gbs_nt[mc.n_sizes - 1];
    const char *prompt = "The quick brown fox jumps over the lazy dog, and then it runs far away into "
                         "the deep green forest to find its friends.";
    ct_gen_params g = ct_gen_params_default();
    g.text = prompt;
    g.language = "english";
    if (m->cfg.n_speakers) g.speaker = m->cfg.speakers[0].name;
    if (m->cfg.kind == CT_KIND_VOICE_DESIGN) g.instruct = "A clear voice.";
    g.max_frames = frames;
    g.min_new_tokens = frames; /* measure exactly `frames` frames */
    g.seed = 1;
    g.prompt_reuse = 0; /* every start runs the whole prompt; measure_model times a kept voice apart */
    int32_t *codes = malloc(sizeof(int32_t) * 16 * (size_t)frames);
    /* the talker's bytes per step: its weights, and the f32 K and V rows its attention reads at
       the run's mean context (the predictor's own KV, at most 16 positions, is left out) */
    const ct_stack_cfg *tcfg = &m->cfg.talker;
    const double kv_per_pos = 2.0 * tcfg->layers * tcfg->kv_heads * tcfg->head_dim * sizeof(float);
    const uint64_t tw = stack_bytes(&m->talker) + mat_bytes(&m->codec_head);
    uint64_t pb = stack_bytes(&m->pred) * (uint64_t)(m->cfg.n_groups - 1);
    uint64_t pws = stack_bytes(&m->pred); /* distinct bytes the predictor reads per frame */
    for (int gi = 0; gi < m->cfg.n_groups - 1; gi++) pb += mat_bytes(&m->pred_head[gi]), pws += mat_bytes(&m->pred_head[gi]);
    if (m->has_proj) pb += mat_bytes(&m->mtp_proj) * (uint64_t)m->cfg.n_groups, pws += mat_bytes(&m->mtp_proj);
    stage_probe sprobe = {NULL, tw, pws, kv_per_pos, threads};
    const uint64_t tmax = tw + (uint64_t)(kv_per_pos * sp.max_context);
    if (ct_read_probe_create(threads, tmax > pws ? tmax : pws, &sprobe.p, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        ct_session_free(s);
        ct_codec_free(codec);
        ct_model_free(m);
        return 1;
    }
    model_times mt, ct = {0};
    pid_t pids[COMPETE_MAX];
    if (!codes) fprintf(stderr, "error: out of memory\n");
    int rc = !codes || measure_model(s, codec, &g, frames, reps, codes, &sprobe, &mt) != 0;
    ct_read_probe_free(sprobe.p);
    double b_ms[BATCH_MAXB], b_fps[BATCH_MAXB], b_vmin[BATCH_MAXB], b_vmax[BATCH_MAXB], b_tk[BATCH_MAXB],
        b_pr[BATCH_MAXB];
    int nb = 0;
    if (!rc && streams > 0)
        rc = measure_batched(m, &g, threads, frames, streams, reps, b_ms, b_fps, b_vmin, b_vmax, b_tk, b_pr,
                             &nb) != 0;
    if (!rc && compete > 0) {
        int started = compete_start(compete, pids);
        printf("compete: %d busy-loop process(es) started, pids", started);
        for (int i = 0; i < started; i++) printf(" %d", (int)pids[i]);
        printf("\n");
        fflush(stdout);
        if (started < compete) {
            fprintf(stderr, "error: could only start %d of %d competing processes\n", started, compete);
            rc = 1;
        } else {
            rc = measure_model(s, codec, &g, frames, reps, codes, NULL, &ct) != 0;
        }
        compete_stop(pids, started);
    }
    if (rc) {
        free(codes);
        ct_session_free(s);
        ct_codec_free(codec);
        ct_model_free(m);
        return 1;
    }
    const double best_prefill = mt.prefill, best_prefill_cpu = mt.prefill_cpu, best_talk = mt.talk, best_pred = mt.pred;
    const double *best_codec = mt.codec;
    const int prompt_len = mt.prompt_len, nf = mt.nf;
    /* each stage's floor on this machine: its bytes at the read rate of its working set (the
       predictor re-reads its weights 15 times a frame, so they may stay in the last-level
       cache), probed next to the repetition that gave its time; the codec's FLOPs at the FMA
       peak; ratio = ms / floor */
    const uint64_t tkv = (uint64_t)(kv_per_pos * mt.talk_ctx), tb = tw + tkv;
    const double t_bw = mt.t_gbs_r[mt.best_t], p_bw = mt.p_gbs_r[mt.best_p];
    const double t_floor = tb / (t_bw * 1e9) * 1e3, p_floor = pb / (p_bw * 1e9) * 1e3;
    double t_rmin = 1e30, t_rmax = 0, p_rmin = 1e30, p_rmax = 0; /* ms / floor per repetition */
    for (int k = 0; k < mt.reps; k++) {
        const double tr = mt.talk_r[k] / (tb / (mt.t_gbs_r[k] * 1e9) * 1e3);
        const double pr = mt.pred_r[k] / (pb / (mt.p_gbs_r[k] * 1e9) * 1e3);
        t_rmin = tr < t_rmin ? tr : t_rmin, t_rmax = tr > t_rmax ? tr : t_rmax;
        p_rmin = pr < p_rmin ? pr : p_rmin, p_rmax = pr > p_rmax ? pr : p_rmax;
    }
    double t_gbs = tb / (best_talk * 1e-3) / 1e9, p_gbs = pb / (best_pred * 1e-3) / 1e9;
    /* RTF with the codec at the seed's default ramp schedule (a streaming request's shape);
       the 1-frame-push figure is the exact schedule's worst case. */
    const double macs = codec ? ct_codec_macs_per_frame(codec) : 0;
    double total = best_talk + best_pred + (codec ? best_codec[1] : 0);
    double total_exact = best_talk + best_pred + (codec ? best_codec[0] : 0);
    const double c_floor = codec ? 2 * macs / (mc.fma_nt * 1e9) * 1e3 : 0;
    const double floor_ms = t_floor + p_floor + c_floor;
    /* the formats the matrices were loaded in (a quantize output is int8/int4 with no --weights) */
    char wfmt[64];
    snprintf(wfmt, sizeof wfmt, "%s/%s", minfo.talker_weights, minfo.predictor_weights);
    printf("model %s (%s %s), weights %s, %d threads, kernels %s%s, %d frames x %d (best), prompt %d "
           "positions, load %.0f ms (%.0f ms CPU; %s: %s, %d matrices converted, %.1f MiB of weight panels)\n",
           model, minfo.kind, m->cfg.size_tag, wfmt, threads, ct_isa_name(ct_kernels()->isa),
           ct_kernels()->amx ? "+amx" : "", nf, reps, prompt_len, load_ms, load_cpu_ms, minfo.weights_source,
           minfo.weights_file, minfo.converted, (double)minfo.packed_bytes / 1048576.0);
    printf("roofline (%d threads): read", threads);
    for (int k = 0; k < mc.n_sizes; k++) printf(" %.1f GB/s at %.0f MiB%s", mc.gbs_nt[k], mc.bytes[k] / 1048576.0,
                                                k + 1 < mc.n_sizes ? "," : ";");
    printf(" F32 FMA peak %.0f GFLOP/s\n", mc.fma_nt);
    printf("| stage | ms/frame | MB/frame | working set MB | GB/s | floor ms/frame | floor from | x floor | share of 80 ms |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    /* the prompt's floor: its talker matmuls at the peak of the instruction the kernels run them
       with for the talker's format (text projection and attention left out); its CPU time, all
       threads, is a figure other load disturbs less */
    const int pf_fmt = ct_wformat_parse(minfo.talker_weights) >= 0 ? ct_wformat_parse(minfo.talker_weights) : CT_WF_BF16;
    const double pf_rate = mc.prompt_nt[pf_fmt];
    const double pf_gflop = 2 * stack_macs(&m->talker) * prompt_len * 1e-9, pf_floor = pf_gflop / pf_rate * 1e3;
    printf("| prefill (%d positions) | %.1f (best of %d starts; %.0f ms CPU) | | | | %.1f | talker %s %.0f Gop/s | %.2f | |\n",
           prompt_len, best_prefill, PREFILL_STARTS * reps, best_prefill_cpu, pf_floor, mc.prompt_op[pf_fmt], pf_rate,
           best_prefill / pf_floor);
    if (mt.kept_reused > 0) /* the same voice again: the positions the two prompts share are kept */
        printf("| prefill, voice kept (%d of %d positions run) | %.1f (best of %d starts) | | | | | | | |\n",
               mt.kept_len - mt.kept_reused, mt.kept_len, mt.prefill_kept, PREFILL_STARTS * reps - 1);
    char t_x[64], p_x[64]; /* x floor, and its range over the repetitions */
    if (mt.reps > 1) {
        snprintf(t_x, sizeof t_x, "%.2f (%.2f-%.2f)", best_talk / t_floor, t_rmin, t_rmax);
        snprintf(p_x, sizeof p_x, "%.2f (%.2f-%.2f)", best_pred / p_floor, p_rmin, p_rmax);
    } else {
        snprintf(t_x, sizeof t_x, "%.2f", best_talk / t_floor);
        snprintf(p_x, sizeof p_x, "%.2f", best_pred / p_floor);
    }
    printf("| talker | %.2f | %.1f | %.1f | %.1f | %.2f | read %.1f GB/s next to it | %s | %.0f%% |\n", best_talk,
           tb / 1e6, tb / 1e6, t_gbs, t_floor, t_bw, t_x, 100 * best_talk / 80);
    printf("| code predictor | %.2f | %.1f | %.1f | %.1f | %.2f | read %.1f GB/s next to it | %s | %.0f%% |\n",
           best_pred, pb / 1e6, pws / 1e6, p_gbs, p_floor, p_bw, p_x, 100 * best_pred / 80);
    if (codec)
        printf("| codec (stream, ramp 2..25) | %.2f | | | | %.2f | FMA %.0f GFLOP/s | %.2f | %.0f%% |\n", best_codec[1],
               c_floor, mc.fma_nt, best_codec[1] / c_floor, 100 * best_codec[1] / 80);
    printf("| frame | %.2f | | | | %.2f | sum of floors | %.2f | RTF %.3f |\n", total, floor_ms, total / floor_ms,
           total / 80);
    printf("talker bytes per step: %.1f MB of weights, %.1f MB of K/V rows at a mean context of %.1f positions\n",
           tw / 1e6, tkv / 1e6, mt.talk_ctx);
    if (codec) {
        printf("\n| codec decoder (%d threads) | ms/frame | GFLOP/frame | GFLOP/s | %% of FMA peak | share of 80 ms |\n", threads);
        printf("|---|---|---|---|---|---|\n");
        static const char *shape[3] = {"stream, 1-frame pushes (exact)", "stream, ramp 2,4,8,16,25",
                                       "stream, 25-frame pushes (steady)"};
        for (int mode = 2; mode >= 0; mode--) {
            double gf = 2 * macs * 1e-9, rate = gf / (best_codec[mode] * 1e-3);
            printf("| %s | %.2f | %.2f | %.0f | %.0f%% | %.0f%% |\n", shape[mode], best_codec[mode], gf,
                   rate, 100 * rate / mc.fma_nt, 100 * best_codec[mode] / 80);
        }
        printf("RTF %.3f with the ramp schedule (table above), %.3f with 1-frame pushes\n", total / 80,
               total_exact / 80);
    }
    if (nb) {
        printf("\n| batched decode (talker + predictor), %d threads | ms per step | aggregate frames/s | vs 1 stream "
               "| vs 1 stream per round, %d round%s | talker ms per step (x 1 stream) | predictor ms per step (x 1 "
               "stream) |\n|---|---|---|---|---|---|---|\n",
               threads, reps, reps > 1 ? "s" : "");
        for (int k = 0; k < nb; k++)
            printf("| %d stream%s | %.2f | %.2f | %.2fx | %.2f-%.2fx | %.2f (%.2fx) | %.2f (%.2fx) |\n", 1 << k,
                   k ? "s" : "", b_ms[k], b_fps[k], b_fps[k] / b_fps[0], b_vmin[k], b_vmax[k], b_tk[k],
                   b_tk[k] / b_tk[0], b_pr[k], b_pr[k] / b_pr[0]);
    }
    /* throughput kept under the competing load: uncontended ms / contended ms, per stage */
    const double c_total = ct.talk + ct.pred + (codec ? ct.codec[1] : 0);
    if (compete > 0) {
        printf("\n| with %d competing busy process(es), %d threads | ms/frame alone | ms/frame contended "
               "| throughput kept |\n|---|---|---|---|\n", compete, threads);
        printf("| talker | %.2f | %.2f | %.0f%% |\n", best_talk, ct.talk, 100 * best_talk / ct.talk);
        printf("| code predictor | %.2f | %.2f | %.0f%% |\n", best_pred, ct.pred, 100 * best_pred / ct.pred);
        if (codec)
            printf("| codec (stream, ramp 2..25) | %.2f | %.2f | %.0f%% |\n", best_codec[1], ct.codec[1],
                   100 * best_codec[1] / ct.codec[1]);
        printf("| total | %.2f | %.2f | %.0f%% |\n", total, c_total, 100 * total / c_total);
    }
    if (json_out) {
        json_t *j = json_pack("{s:s,s:s,s:s,s:i,s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
                              "model", model, "kind", ct_model_get_info(m).kind,
                              "weights", wfmt, "threads", threads,
                              "isa", ct_isa_name(ct_kernels()->isa), "frames", nf, "prompt_len", prompt_len,
                              "prefill_ms", best_prefill, "talker_ms", best_talk, "predictor_ms", best_pred,
                              "codec_ms", codec ? best_codec[1] : 0.0, "talker_bytes", (double)tb,
                              "predictor_bytes", (double)pb, "talker_gbs", t_gbs, "predictor_gbs", p_gbs,
                              "roofline_read_gbs", dram_gbs, "roofline_fma_gflops", mc.fma_nt,
                              "rtf", total / 80);
        json_t *fl = j ? json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:s,s:i,s:f}", "talker_floor_ms",
                                   t_floor, "predictor_floor_ms", p_floor, "talker_ratio", best_talk / t_floor,
                                   "predictor_ratio", best_pred / p_floor, "talker_working_set_bytes", (double)tb,
                                   "predictor_working_set_bytes", (double)pws, "talker_floor_gbs", t_bw,
                                   "predictor_floor_gbs", p_bw, "total_ms", total, "floor_ms", floor_ms,
                                   "frame_ratio", total / floor_ms, "load_ms", load_ms, "load_cpu_ms", load_cpu_ms, "weights_source",
                                   minfo.weights_source, "weights_file", minfo.weights_file, "converted",
                                   minfo.converted, "packed_bytes", (double)minfo.packed_bytes)
                         : NULL;
        if (fl) json_object_update(j, fl);
        json_decref(fl);
        if (j) json_object_set_new(j, "roofline", roofline_json(&mc));
        json_t *rr = j ? json_array() : NULL; /* per repetition: stage times and the read rates probed next to them */
        for (int k = 0; rr && k < mt.reps; k++)
            json_array_append_new(rr, json_pack("{s:f,s:f,s:f,s:f}", "talker_ms", mt.talk_r[k], "predictor_ms",
                                                mt.pred_r[k], "talker_floor_gbs", mt.t_gbs_r[k],
                                                "predictor_floor_gbs", mt.p_gbs_r[k]));
        if (rr) json_object_set_new(j, "repetitions", rr);
        if (j) {
            json_object_set_new(j, "talker_kv_bytes", json_real((double)tkv));
            json_object_set_new(j, "talker_context", json_real(mt.talk_ctx));
        }
        if (j) {
            json_object_set_new(j, "prefill_cpu_ms", json_real(best_prefill_cpu));
            json_object_set_new(j, "prefill_floor_ms", json_real(pf_floor));
            json_object_set_new(j, "prefill_gflop", json_real(pf_gflop));
            json_object_set_new(j, "prefill_ratio", json_real(best_prefill / pf_floor));
            json_object_set_new(j, "prefill_floor_op", json_string(mc.prompt_op[pf_fmt]));
            json_object_set_new(j, "prefill_floor_gflops", json_real(pf_rate));
        }
        if (j && mt.kept_reused > 0) {
            json_object_set_new(j, "prefill_kept_ms", json_real(mt.prefill_kept));
            json_object_set_new(j, "prefill_kept_positions", json_integer(mt.kept_len));
            json_object_set_new(j, "prefill_kept_reused", json_integer(mt.kept_reused));
        }
        if (j && codec) {
            json_object_set_new(j, "codec_exact_ms", json_real(best_codec[0]));
            json_object_set_new(j, "codec_steady_ms", json_real(best_codec[2]));
            json_object_set_new(j, "codec_floor_ms", json_real(c_floor));
            json_object_set_new(j, "codec_ratio", json_real(best_codec[1] / c_floor));
            json_object_set_new(j, "codec_gflop_per_frame", json_real(2 * macs * 1e-9));
            json_object_set_new(j, "rtf_exact", json_real(total_exact / 80));
        }
        if (j && nb) {
            json_t *a = json_array();
            for (int k = 0; k < nb; k++)
                json_array_append_new(a, json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "streams", 1 << k,
                                                   "ms_per_step", b_ms[k], "frames_per_s", b_fps[k], "vs_1_stream",
                                                   b_fps[k] / b_fps[0], "vs_1_stream_round_min", b_vmin[k],
                                                   "vs_1_stream_round_max", b_vmax[k], "talker_ms_per_step",
                                                   b_tk[k], "predictor_ms_per_step", b_pr[k]));
            json_object_set_new(j, "batched_decode", a);
        }
        if (j && compete > 0) {
            json_t *c = json_pack("{s:i,s:f,s:f,s:f,s:f}", "processes", compete, "talker_ms", ct.talk,
                                  "predictor_ms", ct.pred, "total_ms", c_total, "throughput_kept", total / c_total);
            if (c && codec) json_object_set_new(c, "codec_ms", json_real(ct.codec[1]));
            json_object_set_new(j, "compete", c);
        }
        if (!j || json_dump_file(j, json_out, JSON_INDENT(1)) != 0)
            fprintf(stderr, "error: cannot write '%s'\n", json_out);
        json_decref(j);
    }
    free(codes);
    ct_session_free(s);
    ct_codec_free(codec);
    ct_model_free(m);
    return 0;
}

/* One codec-decoder GEMM of a steady 25-frame push: kind 0 = causal conv (dilation 1), 1 =
   pointwise linear, 2 = causal transposed conv with stride s; n input rows. */
typedef struct {
    char name[48];
    const ct_cv_packed *w;
    int kind, s, n;
} cgemm;

/* The codec decoder's GEMMs for a push of 25 frames, in decode order (one per distinct
   shape: the residual units' dilations do not change the work). Returns the count. */
static int codec_gemms(const ct_codec *c, cgemm *g, int cap) {
    int n = 0, T = 25;
#define ADD(nm, W, K, S, N)                                                                         \
    do {                                                                                           \
        if (n < cap) {                                                                             \
            g[n] = (cgemm){"", W, K, S, N};                                                        \
            snprintf(g[n].name, sizeof g[n].name, "%s", nm);                                       \
            n++;                                                                                   \
        }                                                                                          \
    } while (0)
    char nm[48];
    ADD("pre_conv", &c->pre_conv, 0, 1, T);
    ADD("transformer q", &c->layers[0].q, 1, 1, T);
    ADD("transformer o", &c->layers[0].o, 1, 1, T);
    ADD("transformer gate", &c->layers[0].gate, 1, 1, T);
    ADD("transformer down", &c->layers[0].down, 1, 1, T);
    for (int u = 0; u < c->n_up; u++) {
        snprintf(nm, sizeof nm, "upsample %d tconv", u);
        ADD(nm, &c->up[u].tconv, 2, c->up[u].ratio, T);
        T *= c->up[u].ratio;
        snprintf(nm, sizeof nm, "upsample %d pwconv1", u);
        ADD(nm, &c->up[u].pw1, 1, 1, T);
        snprintf(nm, sizeof nm, "upsample %d pwconv2", u);
        ADD(nm, &c->up[u].pw2, 1, 1, T);
    }
    ADD("decoder.0 conv", &c->dec0, 0, 1, T);
    for (int b = 0; b < c->n_blocks; b++) {
        snprintf(nm, sizeof nm, "block %d tconv", b);
        ADD(nm, &c->blocks[b].tconv, 2, c->blocks[b].rate, T);
        T *= c->blocks[b].rate;
        snprintf(nm, sizeof nm, "block %d residual conv", b);
        ADD(nm, &c->blocks[b].ru[0].c1, 0, 1, T);
        snprintf(nm, sizeof nm, "block %d residual 1x1", b);
        ADD(nm, &c->blocks[b].ru[0].c2, 1, 1, T);
    }
#undef ADD
    return n;
}

/* Best ms per call of codec GEMM g through ex over about ms ms (at least 3 calls). */
static double time_codec_gemm(const ct_cv_exec *ex, const cgemm *g, const float *xi, float *y, int ms) {
    double best = 1e30, t_end = ct_now_ms() + ms;
    for (int it = 0; ct_now_ms() < t_end || it < 3; it++) {
        double t0 = ct_now_ms();
        if (g->kind == 0) ct_cv_conv_causal_ex(ex, y, xi, g->n, g->w, 1, NULL);
        else if (g->kind == 1) ct_cv_linear_ex(ex, y, xi, g->n, g->w, NULL, 0);
        else ct_cv_tconv_causal_ex(ex, y, xi, g->n, g->w, g->s, NULL);
        double t = ct_now_ms() - t0;
        if (t < best) best = t;
    }
    return best;
}

/* The codec GEMMs of model's speech_tokenizer/ on pool: ms per call (best), GFLOP/s and % of
   the FMA peak; where the kernel table's GEMM is not the level's own (AMX tiles), the level's
   FMA GEMM's ms per call beside it. 0, or 1 with the error printed. */
static int bench_codec_gemms(const char *model, ct_pool *pool, int threads, int ms) {
    char err[1024];
    ct_codec *c = NULL;
    if (ct_codec_load(model, &c, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    ct_machine mc;
    uint64_t sz = 8ull << 20;
    if (ct_roofline_machine(threads, &sz, 1, &mc, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        ct_codec_free(c);
        return 1;
    }
    cgemm g[64];
    const int ng = codec_gemms(c, g, 64);
    size_t xmax = 0, ymax = 0;
    for (int i = 0; i < ng; i++) {
        const ct_cv_packed *w = g[i].w;
        size_t hist = (size_t)w->k; /* at least the rows of history any of them reads */
        size_t x = ((size_t)g[i].n + hist) * (size_t)w->cin, y = (size_t)g[i].n * g[i].s * (size_t)w->cout;
        xmax = x > xmax ? x : xmax;
        ymax = y > ymax ? y : ymax;
    }
    float *x = calloc(xmax, sizeof(float)), *y = calloc(ymax, sizeof(float));
    if (!x || !y) {
        fprintf(stderr, "error: out of memory\n");
        free(x);
        free(y);
        ct_codec_free(c);
        return 1;
    }
    ct_cv_exec ex, own;
    ct_cv_exec_init(&ex, pool);
    ct_cv_exec_init_isa(&own, pool, ex.isa);
    const int alt = own.gemm != ex.gemm; /* AMX tiles (kernels/cpu.c) */
    printf("\ncodec decoder GEMMs of %s, a steady 25-frame push, %d threads, GEMM %s; F32 FMA peak %.0f GFLOP/s\n",
           model, threads, alt ? "on AMX tiles (split bf16)" : "FMA", mc.fma_nt);
    printf("| codec GEMM | k | cin x cout | input rows | ms/call | GFLOP/s | %% of FMA peak |%s\n|---|---|---|---|---|---|---|%s\n",
           alt ? " ms/call, FMA GEMM | vs FMA |" : "", alt ? "---|---|" : "");
    double tot_ms = 0, tot_gf = 0, tot_own = 0;
    for (int i = 0; i < ng; i++) {
        const ct_cv_packed *w = g[i].w;
        const float *xi = x + (size_t)w->k * w->cin; /* history rows before row 0 */
        /* multiply-adds: a transposed conv's output row uses k / s taps */
        const double taps = g[i].kind == 2 ? (double)w->k / g[i].s : w->k;
        const double gf = 2.0 * g[i].n * g[i].s * taps * w->cin * w->cout * 1e-9;
        const double best = time_codec_gemm(&ex, &g[i], xi, y, ms);
        tot_ms += best;
        tot_gf += gf;
        printf("| %s | %d | %d x %d | %d | %.3f | %.0f | %.0f%% |", g[i].name, w->k, w->cin, w->cout, g[i].n, best,
               gf / (best * 1e-3), 100 * gf / (best * 1e-3) / mc.fma_nt);
        if (alt) {
            const double b2 = time_codec_gemm(&own, &g[i], xi, y, ms);
            tot_own += b2;
            printf(" %.3f | %.2fx |", b2, b2 / best);
        }
        printf("\n");
    }
    printf("| all of the above | | | | %.2f | %.0f | %.0f%% |", tot_ms, tot_gf / (tot_ms * 1e-3),
           100 * tot_gf / (tot_ms * 1e-3) / mc.fma_nt);
    if (alt) printf(" %.2f | %.2fx |", tot_own, tot_own / tot_ms);
    printf("\n");
    free(x);
    free(y);
    ct_codec_free(c);
    return 0;
}

/* The codec decoder batched across streams on model's speech_tokenizer/: ms of decode per frame
   per stream for chunks of 1, 4 and 25 frames at 1, 2 and 4 streams, each stream's chunk
   through its own push ("solo", one stream after another) against one
   ct_codec_stream_push_batch of every stream's chunk ("batched"), wall and process CPU time
   (what a round costs when no other load takes the cores; with a pool it includes the workers'
   spinning); best round of those run in about ms ms (at least 3), after a first round that
   gives every stream history. Both modes produce the same PCM (checked). 0, or 1 with the
   error printed. */
static double proc_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int bench_codec_batch(const char *model, ct_pool *pool, int threads, int ms) {
    enum { NS = 4, NR = 8 };
    static const int chunks[3] = {1, 4, 25}, nss[3] = {1, 2, 4};
    char err[1024];
    ct_codec *c = NULL;
    if (ct_codec_load(model, &c, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    const int G = ct_codec_n_groups(c), spf = ct_codec_samples_per_frame(c);
    int32_t *codes = malloc(sizeof(int32_t) * (size_t)G * 25 * NS * NR);
    float *pcm[2][NS] = {{0}};
    ct_codec_stream *st[2][NS] = {{0}};
    int ok = codes != NULL;
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < NS && ok; k++) {
            ok &= (pcm[m][k] = malloc(sizeof(float) * (size_t)spf * 25 * NR)) != NULL;
            ok &= ct_codec_stream_create(c, 25, &st[m][k], err, sizeof err) == CT_OK &&
                  ct_codec_stream_set_pool(st[m][k], pool) == CT_OK;
        }
    for (size_t i = 0; ok && i < (size_t)G * 25 * NS * NR; i++) codes[i] = (int32_t)((i * 2654435761u) % 2048u);
    printf("\ncodec decoder batched across streams (%s), %d threads: ms of decode per frame per stream\n", model,
           threads);
    printf("| chunk frames | streams | solo pushes wall / cpu | one batched push wall / cpu | solo / batched wall / cpu "
           "|\n|---|---|---|---|---|\n");
    for (int ci = 0; ci < 3 && ok; ci++)
        for (int si = 0; si < 3 && ok; si++) {
            const int ch = chunks[ci], ns = nss[si];
            double best[2] = {1e30, 1e30}, bcpu[2] = {1e30, 1e30};
            for (int m = 0; m < 2; m++)
                for (int k = 0; k < ns; k++) ct_codec_stream_reset(st[m][k]);
            double t_end = 0;
            int r = 0;
            for (; ok && r < NR && (r < 4 || ct_now_ms() < t_end); r++) {
                const int32_t *cc[NS];
                int nn[NS];
                float *pp[NS];
                for (int k = 0; k < ns; k++) {
                    cc[k] = codes + (size_t)G * ch * (size_t)(k * NR + r);
                    nn[k] = ch;
                    pp[k] = pcm[1][k] + (size_t)spf * ch * r;
                }
                double t0 = ct_now_ms(), c0 = proc_cpu_ms();
                for (int k = 0; k < ns && ok; k++)
                    ok &= ct_codec_stream_push(st[0][k], cc[k], ch, pcm[0][k] + (size_t)spf * ch * r, err, sizeof err) ==
                          CT_OK;
                double t1 = ct_now_ms(), c1 = proc_cpu_ms();
                ok &= ct_codec_stream_push_batch(st[1], ns, cc, nn, pp, err, sizeof err) == CT_OK;
                double t2 = ct_now_ms(), c2 = proc_cpu_ms();
                if (r == 0) {
                    t_end = t2 + ms;
                    continue; /* the first round gives every stream history */
                }
                if (t1 - t0 < best[0]) best[0] = t1 - t0;
                if (t2 - t1 < best[1]) best[1] = t2 - t1;
                if (c1 - c0 < bcpu[0]) bcpu[0] = c1 - c0;
                if (c2 - c1 < bcpu[1]) bcpu[1] = c2 - c1;
            }
            for (int k = 0; k < ns && ok; k++)
                if (memcmp(pcm[0][k], pcm[1][k], sizeof(float) * (size_t)spf * ch * r) != 0) {
                    snprintf(err, sizeof err, "batched PCM of stream %d differs from its solo decode", k);
                    ok = 0;
                }
            if (ok)
                printf("| %d | %d | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f |\n", ch, ns, best[0] / (ch * ns),
                       bcpu[0] / (ch * ns), best[1] / (ch * ns), bcpu[1] / (ch * ns), best[0] / best[1],
                       bcpu[0] / bcpu[1]);
        }
    if (!ok) fprintf(stderr, "error: %s\n", err);
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < NS; k++) {
            ct_codec_stream_free(st[m][k]);
            free(pcm[m][k]);
        }
    free(codes);
    ct_codec_free(c);
    return ok ? 0 : 1;
}

/* Attention over one KV head (the selected kernels' attend_head, 2 query heads of dim 128 as
   in Qwen3-TTS's talker and predictor) for several cache lengths: us per call with K/V in
   cache, and with K/V rotated through 256 MiB (each call reads its rows from memory, as a
   long context's cache does). */
static int bench_attention(int ms) {
    enum { HD = 128, G = 2 };
    static const int nps[] = {16, 64, 256, 1024};
    const size_t set = (size_t)256 << 20, per = (size_t)2 * 1024 * HD; /* floats of K and V per copy */
    const int copies = (int)(set / (per * sizeof(float)));
    float *kv = malloc(set), *q = malloc(sizeof(float) * G * HD), *out = malloc(sizeof(float) * G * HD),
          *sc = malloc(sizeof(float) * G * 1024);
    if (!kv || !q || !out || !sc) {
        free(kv), free(q), free(out), free(sc);
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < set / sizeof(float); i++) kv[i] = (float)((i * 7919u) % 2003u) / 2003.0f - 0.5f;
    for (int i = 0; i < G * HD; i++) q[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    const ct_attend_head_fn fn = ct_kernels()->attend_head;
    printf("\n| attention (1 KV head, %d query heads x %d) | positions | us/call, K/V in cache | us/call, K/V from memory | GFLOP/s (in cache) |\n|---|---|---|---|---|\n", G, HD);
    size_t rot = 0; /* copy 0 in cache; from memory the others in turn (as in cmd_kernels) */
    for (size_t k = 0; k < sizeof nps / sizeof *nps; k++) {
        const int n = nps[k];
        double best[2] = {1e30, 1e30};
        for (int mode = 0; mode < 2; mode++) {
            const double t_end = ct_now_ms() + ms;
            for (int it = 0; ct_now_ms() < t_end || it < 3; it++) {
                const float *K = kv + (mode ? (1 + rot++ % (size_t)(copies - 1)) * per : 0), *V = K + (size_t)1024 * HD;
                double t0 = ct_now_ms();
                fn(K, V, HD, q, out, n, G, sc);
                double t = ct_now_ms() - t0;
                if (t < best[mode]) best[mode] = t;
            }
        }
        printf("| | %d | %.2f | %.2f | %.1f |\n", n, best[0] * 1e3, best[1] * 1e3,
               4.0 * G * HD * n / (best[0] * 1e-3) / 1e9);
    }
    free(kv), free(q), free(out), free(sc);
    return 0;
}

/* `bench kernels`: every weight format x shape x token count through the selected kernel
   table on a pool, weights cold in memory (a 1 GiB working set rotated per call, each copy with
   its own INT8/INT4 scales) and in cache. */
static int cmd_kernels(int argc, char **argv) {
    int threads = 0, ms = 300;
    const char *model = NULL;
    ct_opt opts[] = {{"threads", 0, CT_OPT_INT, &threads, "N", "threads (default all CPUs)"},
                     {"ms", 0, CT_OPT_INT, &ms, "N", "time per case in ms (default 300)"},
                     {"model", 'm', CT_OPT_STR, &model, "DIR", "also time the codec decoder's GEMMs and batched decode of DIR's speech_tokenizer/"},
                     {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk bench kernels [--threads N] [--ms N] [-m DIR]\n"
                                            "Matmul GB/s and GFLOP/s per weight format, shape and token count, weights from memory and in cache;\n"
                                            "attention over one KV head for 16-1024 cache positions;\n"
                                            "with -m, the codec decoder's convolution GEMMs too (GFLOP/s, % of the FMA peak)\n"
                                            "and its decode batched across 1, 2, 4 streams against solo pushes.");
    if (r) return r < 0 ? 2 : 0;
    if (ms < 1 || ms > 60000) {
        fprintf(stderr, "error: --ms must be in [1, 60000]\n");
        return 2;
    }
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    ct_pool *pool = NULL;
    if (ct_pool_create(threads, NULL, 0, &pool) != CT_OK) return 1;
    static const int shapes[3][2] = {{2048, 1024}, {3072, 1024}, {1024, 3072}};
    static const int toks[] = {1, 2, 4, 8, 16, 40};
    const size_t set = (size_t)1024 << 20; /* bytes of weights per format, past a 480 MiB L3 */
    float *x = malloc(sizeof(float) * 40 * 3072), *y = malloc(sizeof(float) * 40 * 3072);
    float *wf = malloc(sizeof(float) * 3072 * 1024);
    uint8_t *buf = aligned_alloc(64, set + ((size_t)8 << 20)); /* panels: 64-byte aligned */
    float *sc = malloc(sizeof(float) * 3072 * 1024 / CT_Q4_GROUP * 64);
    if (!x || !y || !wf || !buf || !sc) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    for (int i = 0; i < 40 * 3072; i++) x[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    for (int i = 0; i < 3072 * 1024; i++) wf[i] = (float)(((unsigned)i * 7919u) % 2003u) / 2003.0f - 0.5f;
    printf("kernels %s%s, %d threads; INT8/INT4 ", ct_isa_name(ct_kernels()->isa), ct_kernels()->amx ? "+amx" : "",
           threads);
    if (!ct_kernels()->xq)
        printf("with f32 activations\n");
    else
        printf("with int8 activations (integer-dot mode with %s, every call)\n", ct_kernels()->dot);
    printf("weights from memory: a new copy each call, rotated through %zu MiB; in cache: one copy, called again and again\n",
           set >> 20);
    printf("1-8 tokens run as decode, 16 and 40 as a prompt pass (where AMX is on, BF16 on the tiles)\n");
    printf("| format | rows x cols | tokens | us/call | GB/s (weights) | GFLOP/s | us/call, in cache | GFLOP/s, in cache |\n"
           "|---|---|---|---|---|---|---|---|\n");
    /* "int8/int4 panels": the same matrices with ct_mat.pan packed as `--weight-panels` packs them at
       load (where the level has them), timed at the token counts that read them */
    static const char *fn[6] = {"bf16", "f32", "int8", "int4", "int8 panels", "int4 panels"};
    const ct_kernel_table *kt = ct_kernels();
    for (int f = 0; f < 6; f++)
        for (int si = 0; si < 3; si++) {
            const int pf = f >= 4, qf = pf ? f - 2 : f; /* panels; the format whose rows they hold */
            if (pf && (!kt->xq_pan_pack || !kt->xq ||
                       !kt->xq_pan_bytes(qf == 2 ? CT_DT_I8 : CT_DT_U8, shapes[si][0], shapes[si][1])))
                continue;
            const int R = shapes[si][0], C = shapes[si][1];
            ct_mat m = {0};
            m.rows = R;
            m.cols = C;
            size_t mb;
            if (f == 0) {
                m.dtype = CT_DT_BF16;
                mb = (size_t)R * C * 2;
                for (size_t i = 0; i < (size_t)R * C; i++) ((uint16_t *)buf)[i] = ct_f32_to_bf16(wf[i]);
            } else if (f == 1) {
                m.dtype = CT_DT_F32;
                mb = (size_t)R * C * 4;
                memcpy(buf, wf, mb);
            } else if (qf == 2) {
                m.dtype = CT_DT_I8;
                mb = (size_t)R * C;
                ct_quantize_i8(wf, CT_DT_F32, R, C, (int8_t *)buf, sc);
            } else {
                m.dtype = CT_DT_U8;
                mb = (size_t)R * C / 2;
                ct_quantize_q4(wf, CT_DT_F32, R, C, buf, sc);
            }
            /* each copy: the weights, then their scales (INT8 per row, INT4 per group), then its panels */
            const size_t ssz = qf == 2 ? (size_t)R * sizeof(float) : qf == 3 ? (size_t)R * C / CT_Q4_GROUP * sizeof(float) : 0;
            const size_t poff = (mb + ssz + 63) & ~(size_t)63;
            const size_t psz = pf ? kt->xq_pan_bytes(m.dtype, R, C) : 0;
            const size_t stride = (poff + psz + 63) & ~(size_t)63;
            if (ssz) memcpy(buf + mb, sc, ssz);
            /* the integer-dot mode, as the loader sets it */
            m.xq = qf >= 2 && kt->xq && C % 64 == 0 && C <= CT_XQ_MAXC;
            m.data = buf;
            m.scales = ssz ? (const float *)(buf + mb) : NULL;
            if (pf) kt->xq_pan_pack(&m, buf + poff);
            const int copies = (int)(set / stride);
            for (int k = 1; k < copies; k++) memcpy(buf + (size_t)k * stride, buf, stride);
            for (double t_w = ct_now_ms() + 200; ct_now_ms() < t_w;) /* warm up: clocks, tiles */
                ct_matmul_pool_prompt(pool, &m, NULL, x, y, 16);
            /* copy 0 is the in-cache one (and the warm-up's); the others are read in turn, the
               rotation carried across token counts, so a timed call from memory always reads the
               copy touched longest ago, never one the previous phase left in cache */
            size_t rot = 0;
            for (size_t ti = pf ? 2 : 0; ti < sizeof toks / sizeof *toks; ti++) { /* panels: from 4 tokens */
                const int n = toks[ti];
                double best[2] = {1e30, 1e30}; /* from memory, in cache */
                for (int cached = 0; cached < 2; cached++) {
                    const double t_end = ct_now_ms() + ms;
                    for (int it = 0; ct_now_ms() < t_end || it < 3; it++) {
                        m.data = buf + (size_t)(cached ? 0 : 1 + rot++ % (size_t)(copies - 1)) * stride;
                        if (ssz) m.scales = (const float *)((const uint8_t *)m.data + mb);
                        if (pf) m.pan = (const uint8_t *)m.data + poff;
                        double t0 = ct_now_ms();
                        (n >= 16 ? ct_matmul_pool_prompt : ct_matmul_pool)(pool, &m, NULL, x, y, n);
                        double t = ct_now_ms() - t0;
                        if (t < best[cached]) best[cached] = t;
                    }
                }
                m.data = buf;
                m.scales = ssz ? (const float *)(buf + mb) : NULL;
                /* bytes a call reads: the panels where it reads them (INT4's hold the group scales) */
                const double bytes = pf ? (double)psz + (qf == 2 ? (double)ssz : 0) : (double)ct_mat_bytes(&m),
                             flop = 2.0 * R * C * n;
                char gbs[24], gfl[24], gfc[24]; /* a slow build's rates keep their digits (never 0.0) */
                printf("| %s | %d x %d | %d | %.1f | %s | %s | %.1f | %s |\n", fn[f], R, C, n, best[0] * 1e3,
                       rate_str(gbs, bytes / (best[0] * 1e-3) / 1e9), rate_str(gfl, flop / (best[0] * 1e-3) / 1e9),
                       best[1] * 1e3, rate_str(gfc, flop / (best[1] * 1e-3) / 1e9));
            }
        }
    free(x);
    free(y);
    free(wf);
    free(buf);
    free(sc);
    int rc = bench_attention(ms);
    if (!rc && model) rc = bench_codec_gemms(model, pool, threads, ms);
    if (model && !rc) rc = bench_codec_batch(model, pool, threads, ms);
    ct_pool_free(pool);
    return rc;
}

int ct_cli_bench(int argc, char **argv) {
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        printf("usage: codectalk bench BENCH [options]   (BENCH --help for its options)\n\n"
               "benches:\n"
               "  model      talker / code-predictor / codec step times on a model\n"
               "  roofline   memory bandwidth and compute peaks of this machine\n"
               "  kernels    matmul kernel throughput per ISA path\n"
               "  stream     streaming synthesis: time to first audio, chunk gaps, RTF\n"
               "  threads    the stream bench swept over thread counts\n"
               "  emulate    the stream bench under emulated device profiles\n"
               "  serve      load test of a running server (HTTP streaming)\n"
               "  clone      cloning: reference encode times, TTFA of cloned vs plain requests\n"
               "  summarize  merge bench result files into one report\n");
        return argc < 1 ? 2 : 0;
    }
    if (!strcmp(argv[0], "model")) return cmd_model(argc - 1, argv + 1);
    if (!strcmp(argv[0], "roofline")) return cmd_roofline(argc - 1, argv + 1);
    if (!strcmp(argv[0], "kernels")) return cmd_kernels(argc - 1, argv + 1);
    fprintf(stderr, "error: unknown bench '%s' (model, roofline, kernels, stream, threads, emulate, serve, clone, summarize)\n", argv[0]);
    return 2;
}
