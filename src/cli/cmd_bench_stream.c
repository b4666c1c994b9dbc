/* `codectalk bench stream` and `bench threads`: what a listener hears. Runs prompts one at a
   time through the stream engine and scores each chunk timeline (TTFA, playback start, stalls,
   RTF, gaps), writing the schema-1 JSON with the frame budget split (talker / predictor /
   decoder / other); `--placement LIST` runs overlapped and serial placement side by side;
   `threads` repeats the bench over every placement and thread split. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/cli_profile.h"
#include "ct_git_sha.h" /* generated at build (cmake/git_sha.cmake) */
#include "codec/codec.h"
#include "core/clock.h"
#include "core/fileio.h"
#include "core/stepstats.h"
#include "stream/metrics.h"

static const char *default_prompts[] = {
    "Hello! This is a streaming latency test of the speech engine.",
    "The weather today is mild, with a light breeze from the west and a few clouds.",
    "Please remember to bring your ticket and a valid identity card to the station.",
    "Numbers like 3.14 and 2048 should be read clearly, one digit at a time if needed.",
    NULL};

typedef struct {
    const char *model, *prompts, *profile, *schedule, *out, *tag, *speaker, *language, *weights, *placement;
    int warmup, repeat, windowed, context, threads, codec_threads, step_stats, max_frames, concurrency;
    uint64_t seed;
    float text_cps;  /* > 0: each prompt arrives as incremental text at this many characters a second */
    char spk_buf[1024];    /* --speaker's list, split in place */
    const char *spk[16];   /* [n_spk] the voices requests take in turn (request k: spk[k % n_spk]) */
    int n_spk;
} bench_args;

/* The voice of request k (counted from the first, warm-ups included): the --speaker list in turn. */
static const char *speaker_of(const bench_args *a, int k) { return a->n_spk ? a->spk[k % a->n_spk] : a->speaker; }

/* Where the time of a frame goes, over the measured requests: ms per frame. */
typedef struct {
    int frames;
    double prefill_ms;  /* mean per request */
    double talker, predictor, decoder, other, wall; /* ms per frame; wall = run after prefill */
} frame_budget;

/* What one bench run reports beyond the schema-1 summary. */
typedef struct {
    ct_stream_summary sum;
    double ttfa_p95_ms, rtf_p95;
    int n_stalls;          /* underruns of a player started at TTFA, over the measured requests */
    double stall_total_ms; /* their total */
    frame_budget fb;
    int placement;         /* as resolved by the engine */
    char path[2048];       /* the result file */
} run_extra;

/* `other` is the wall time per frame the stage work does not explain: serial = wall - (talker +
   predictor + decoder); overlapped = wall - max(talker + predictor, decoder), the stages
   running side by side. */
static void budget_finish(frame_budget *b, int n_req, int placement) {
    double f = b->frames > 0 ? b->frames : 1;
    b->talker /= f;
    b->predictor /= f;
    b->decoder /= f;
    b->wall /= f;
    if (n_req > 0) b->prefill_ms /= n_req;
    double s0 = b->talker + b->predictor;
    b->other = b->wall - (placement == CT_PLACEMENT_SERIAL ? s0 + b->decoder : (s0 > b->decoder ? s0 : b->decoder));
}

static json_t *budget_json(const frame_budget *b) {
    return json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:{s:f,s:f,s:f,s:f,s:f}}", "frames", b->frames,
                     "prefill_ms", b->prefill_ms, "talker_ms", b->talker, "predictor_ms", b->predictor,
                     "decoder_ms", b->decoder, "other_ms", b->other, "wall_ms", b->wall, "share_of_80ms",
                     "talker", b->talker / 80.0, "predictor", b->predictor / 80.0, "decoder", b->decoder / 80.0,
                     "other", b->other / 80.0, "wall", b->wall / 80.0);
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank q-percentile of the finite values of v[n] (sorted in place); NAN when none. */
static double pctl(double *v, int n, double q) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) v[k++] = v[i];
    qsort(v, (size_t)k, sizeof *v, cmp_dbl);
    return ct_percentile_nearest(v, k, q);
}

/* Loads one prompt per line (UTF-8, non-empty lines). Returns count or -1. */
static int load_prompts(const char *path, char ***out) {
    char *buf = NULL, err[512];
    size_t len = 0;
    if (ct_read_file(path, 16u << 20, &buf, &len, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: --prompts: %s\n", err);
        return -1;
    }
    /* validate UTF-8 */
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)buf[i];
        int k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = k > 0 && i + (size_t)k <= len;
        for (int j = 1; ok && j < k; j++) ok = ((unsigned char)buf[i + j] >> 6) == 2;
        if (!ok) {
            fprintf(stderr, "error: --prompts '%s' is not UTF-8 (byte %zu)\n", path, i);
            free(buf);
            return -1;
        }
        i += (size_t)k;
    }
    int n = 0, cap = 16;
    char **p = malloc(sizeof(char *) * (size_t)cap);
    for (char *line = strtok(buf, "\r\n"); line && p; line = strtok(NULL, "\r\n")) {
        while (*line == ' ' || *line == '\t') line++;
        if (!*line) continue;
        if (n == cap) {
            cap *= 2;
            char **np = realloc(p, sizeof(char *) * (size_t)cap);
            if (!np) break;
            p = np;
        }
        p[n++] = strdup(line);
    }
    free(buf);
    if (n == 0) {
        fprintf(stderr, "error: --prompts '%s' has no non-empty line\n", path);
        free(p);
        return -1;
    }
    *out = p;
    return n;
}

/* The bench's prompts: --prompts FILE (*own = 1: free with free_prompts) or the built-in four.
   Returns the count, or -1 (error printed). */
static int get_prompts(const bench_args *a, char ***prompts, int *own) {
    int n = 0;
    *own = 0;
    if (a->prompts) {
        if ((n = load_prompts(a->prompts, prompts)) < 0) return -1;
        *own = 1;
        return n;
    }
    *prompts = (char **)default_prompts;
    while (default_prompts[n]) n++;
    return n;
}

static void free_prompts(char **prompts, int n, int own) {
    if (!own) return;
    for (int i = 0; i < n; i++) free(prompts[i]);
    free(prompts);
}


/* One bench run on an engine made with ep, each request with sp; writes the JSON and prints the
   summary. Returns 0 on success and fills *summary_out when non-NULL. */
static int run_bench(const bench_args *a, ct_model *m, ct_codec *codec, const ct_engine_params *ep,
                     const ct_stream_params *sp, const char *deploy_tag, int argc, char **argv,
                     ct_stream_summary *summary_out, json_t **attribution_out, run_extra *ex_out) {
    char err[1024];
    char **prompts = NULL;
    int own_prompts = 0, n_prompts = get_prompts(a, &prompts, &own_prompts);
    if (n_prompts < 0) return -1;
    char stats_dir[1200] = "";
    if (a->step_stats) {
        snprintf(stats_dir, sizeof stats_dir, "%s/step_stats/%ld_%d", a->out, (long)time(NULL), (int)getpid());
        ct_stats_reset();
        if (ct_stats_configure(stats_dir, err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: --step-stats: %s\n", err);
            return -1;
        }
    }
    double t_init = ct_now_ms();
    ct_engine *e = NULL;
    if (ct_engine_create(m, codec, ep, &e, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    double init_s = (ct_now_ms() - t_init) / 1e3;
    ct_engine_limits lim = ct_engine_get_limits(e);
    int total = (a->warmup + a->repeat * n_prompts);
    ct_stream_request *reqs = calloc((size_t)total, sizeof *reqs);
    ct_chunk_rec **recs = calloc((size_t)total, sizeof *recs);
    char (*ids)[32] = calloc((size_t)total, 32);
    double *vals = malloc(sizeof(double) * (size_t)(total ? total : 1));
    int rc = -1, k = 0;
    run_extra ex;
    memset(&ex, 0, sizeof ex);
    ex.placement = lim.placement;
    if (!reqs || !recs || !ids || !vals) goto done;
    for (int pass = 0; pass < a->warmup + a->repeat; pass++) {
        int warm = pass < a->warmup;
        for (int i = 0; i < (warm ? 1 : n_prompts); i++) {
            const char *text = prompts[warm ? pass % n_prompts : i];
            ct_gen_params g = ct_gen_params_default();
            g.text = text;
            g.speaker = speaker_of(a, k);
            g.language = a->language;
            g.seed = a->seed + (uint64_t)k;
            g.max_frames = a->max_frames;
            char what[48];
            snprintf(what, sizeof what, "request %d", k);
            ct_stream_info si;
            int nc = 0;
            if (ct_cli_run_stream_fed(e, &g, sp, what, a->text_cps, &recs[k], &nc, &si) != 0) goto done;
            double t_final = si.done_ms;
            if (nc && !(t_final >= recs[k][nc - 1].t_ms)) t_final = recs[k][nc - 1].t_ms;
            if (warm) snprintf(ids[k], 32, "w%d", pass);
            else snprintf(ids[k], 32, "r%d_%d", pass - a->warmup, i);
            ct_stream_request *r = &reqs[k];
            r->request_id = ids[k];
            r->text = text;
            r->warmup = warm;
            r->sample_rate = ct_codec_sample_rate(codec);
            r->chunks = recs[k];
            r->n_chunks = nc;
            r->t_final_ms = t_final;
            r->tail_audio_s = 0;
            if (ct_stream_request_score(r, err, sizeof err) != CT_OK) {
                fprintf(stderr, "error: scoring %s: %s\n", ids[k], err);
                goto done;
            }
            if (!warm) {
                ex.fb.frames += si.frames;
                ex.fb.prefill_ms += si.prefill_ms;
                ex.fb.talker += si.talker_ms;
                ex.fb.predictor += si.predictor_ms;
                ex.fb.decoder += si.codec_ms;
                ex.fb.wall += t_final - si.queue_ms - si.prefill_ms;
                if (r->m.n_stalls_at_ttfa > 0) ex.n_stalls += r->m.n_stalls_at_ttfa;
                if (isfinite(r->m.stall_at_ttfa_ms)) ex.stall_total_ms += r->m.stall_at_ttfa_ms;
            }
            k++;
        }
    }
    ct_stream_summary sum;
    if (ct_stream_summarize(reqs, k, &sum, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    int nm = 0;
    for (int i = 0; i < k; i++)
        if (!reqs[i].warmup) vals[nm++] = reqs[i].m.ttfa_ms;
    ex.ttfa_p95_ms = pctl(vals, nm, 0.95);
    nm = 0;
    for (int i = 0; i < k; i++)
        if (!reqs[i].warmup) vals[nm++] = reqs[i].m.rtf_streamed;
    ex.rtf_p95 = pctl(vals, nm, 0.95);
    budget_finish(&ex.fb, sum.n_requests, ex.placement);
    json_t *stats = NULL;
    if (a->step_stats) {
        ct_stats_dump(NULL, err, sizeof err);
        stats = ct_stats_snapshot();
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char ts[32];
    time_t now = time(NULL);
    strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", localtime(&now));
    json_t *bargs = json_pack("{s:f,s:s?,s:s?,s:i,s:i,s:i,s:i,s:i,s:i,s:s?,s:s?,s:s,s:s,s:s,s:s}", "text_cps",
                              (double)a->text_cps, "schedule",
                              sp->schedule, "profile", a->profile, "windowed", sp->windowed, "context",
                              sp->context_frames, "talker_threads", lim.talker_threads, "codec_threads",
                              lim.codec_threads, "warmup", a->warmup, "repeat", a->repeat, "speaker", a->speaker,
                              "language", a->language, "placement", ct_placement_str(ex.placement),
                              "placement_requested", ct_placement_str(ep->placement), "talker_weights",
                              ct_model_get_info(m).talker_weights, "predictor_weights",
                              ct_model_get_info(m).predictor_weights);
    ct_bench_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.model = a->model;
    meta.deploy_config = a->profile;
    meta.query_type = ct_model_get_info(m).kind;
    meta.txt_prompts = a->prompts;
    meta.git_sha = CT_GIT_SHA;
    meta.engine_version = ct_version();
    meta.timestamp = ts;
    meta.argc = argc;
    meta.argv = argv;
    meta.bench_args = bargs;
    meta.warmup = a->warmup;
    meta.repeat = a->repeat;
    meta.init_s = init_s;
    meta.peak_rss_bytes = (int64_t)ru.ru_maxrss * 1024;
    json_t *doc = ct_bench_json(&meta, reqs, k, stats, err, sizeof err);
    if (doc) {
        json_t *fb = budget_json(&ex.fb);
        json_object_set_new(fb, "placement", json_string(ct_placement_str(ex.placement)));
        json_object_set_new(doc, "frame_budget", fb);
        json_object_set_new(json_object_get(doc, "summary"), "ttfa_p95_ms", json_real(ex.ttfa_p95_ms));
        json_object_set_new(json_object_get(doc, "summary"), "stalls_at_ttfa",
                            json_pack("{s:i,s:f}", "count", ex.n_stalls, "total_ms", ex.stall_total_ms));
    }
    char *path = ex.path;
    if (!doc || ct_bench_result_path(a->out, a->model, deploy_tag, ts, a->tag, path, sizeof ex.path, err,
                                     sizeof err) != CT_OK ||
        ct_json_write_file(path, doc, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: writing results: %s\n", err);
        json_decref(doc);
        json_decref(bargs);
        json_decref(stats);
        goto done;
    }
    printf("%s: %d requests (+%d warm-up), schedule %s%s, %s placement\n", path, sum.n_requests, a->warmup,
           sp->schedule ? sp->schedule : "exact", sp->windowed ? " (windowed)" : "", ct_placement_str(ex.placement));
    printf("| metric | p50 | p90 | max | mean |\n|---|---|---|---|---|\n");
    const struct {
        const char *name;
        const ct_summary *s;
    } rows[] = {{"ttfa_ms", &sum.ttfa_ms}, {"playback_start_ms", &sum.playback_start_ms},
                {"stall_at_ttfa_ms", &sum.stall_at_ttfa_ms}, {"rtf_streamed", &sum.rtf_streamed},
                {"rtf_total", &sum.rtf_total}, {"gap_ms", &sum.gap_ms}};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
        printf("| %s | %.3f | %.3f | %.3f | %.3f |\n", rows[r].name, rows[r].s->p50, rows[r].s->p90,
               rows[r].s->max, rows[r].s->mean);
    printf("ttfa p95 %.3f ms, rtf_streamed p95 %.3f, stalls at TTFA: %d (%.1f ms in all)\n", ex.ttfa_p95_ms,
           ex.rtf_p95, ex.n_stalls, ex.stall_total_ms);
    const ct_engine_counters kc = ct_engine_get_counters(e);
    printf("prompt positions (warm-ups included): %llu of %llu kept (%llu copied from another slot, %llu from the "
           "prompt cache)\n",
           (unsigned long long)kc.prompt_reused, (unsigned long long)kc.prompt_positions,
           (unsigned long long)kc.prompt_shared, (unsigned long long)kc.prompt_cached);
    printf("peak RSS %.0f MiB, init %.2f s, audio %.1f s in %.1f s\n", (double)meta.peak_rss_bytes / 1048576.0,
           init_s, sum.total_audio_s, sum.total_wall_s);
    printf("frame budget (%d frames, prefill %.1f ms per request):\n| stage | ms/frame | share of 80 ms |\n"
           "|---|---|---|\n", ex.fb.frames, ex.fb.prefill_ms);
    const struct {
        const char *name;
        double v;
    } fbr[] = {{"talker", ex.fb.talker}, {"predictor", ex.fb.predictor}, {"decoder", ex.fb.decoder},
               {"other", ex.fb.other}, {"wall (after prefill)", ex.fb.wall}};
    for (size_t r = 0; r < sizeof fbr / sizeof *fbr; r++)
        printf("| %s | %.1f | %.1f%% |\n", fbr[r].name, fbr[r].v, fbr[r].v / 0.8);
    if (stats) {
        json_t *merged = json_pack("{s:O,s:O}", "roles", json_object_get(stats, "roles"), "attribution",
                                   json_object_get(stats, "attribution"));
        char *md = merged ? ct_stats_markdown(merged, 12) : NULL;
        if (md) printf("%s", md);
        free(md);
        if (attribution_out) *attribution_out = json_incref(json_object_get(stats, "attribution"));
        json_decref(merged);
    }
    if (summary_out) *summary_out = sum;
    ex.sum = sum;
    if (ex_out) *ex_out = ex;
    json_decref(doc);
    json_decref(bargs);
    json_decref(stats);
    rc = 0;
done:
    if (a->step_stats) ct_stats_configure(NULL, err, sizeof err);
    for (int i = 0; i < total && recs; i++) free(recs[i]);
    free(recs);
    free(reqs);
    free(ids);
    free(vals);
    free_prompts(prompts, n_prompts, own_prompts);
    ct_engine_free(e);
    return rc;
}

static int parse_common(int argc, char **argv, bench_args *a, const char *usage, int sweep) {
    memset(a, 0, sizeof *a);
    a->warmup = 1;
    a->repeat = 1;
    a->context = 72;
    a->threads = 1;
    a->codec_threads = 1;
    a->out = "results";
    a->max_frames = 0;
    ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &a->model, "DIR", "model directory"},
        {"prompts", 0, CT_OPT_STR, &a->prompts, "FILE", "prompts, one per line (default: 4 built-in)"},
        {"warmup", 0, CT_OPT_INT, &a->warmup, "N", "warm-up requests (default 1)"},
        {"repeat", 0, CT_OPT_INT, &a->repeat, "N", "passes over the prompts (default 1)"},
        {"profile", 0, CT_OPT_STR, &a->profile, "auto|none|FILE",
         "deploy profile (default auto); every flag given overrides it"},
        {"schedule", 0, CT_OPT_STR, &a->schedule, "SPEC", "exact | fixed:IC,S | ramp:... | dynamic | adaptive (overrides the profile)"},
        {"windowed", 0, CT_OPT_FLAG, &a->windowed, NULL, "windowed stateless codec decode"},
        {"context", 0, CT_OPT_INT, &a->context, "N", "windowed left context (default 72)"},
        {"threads", 0, CT_OPT_INT, &a->threads, "N", "talker threads (default: the profile's)"},
        {"codec-threads", 0, CT_OPT_INT, &a->codec_threads, "N", "codec threads (default: the profile's)"},
        {"placement", 0, CT_OPT_STR, &a->placement, "LIST",
         "overlapped | serial | auto | both, or a comma list of MODE[:THREADS[+CODEC_THREADS]] run side by side "
         "(default: the profile's)"},
        {"speaker", 's', CT_OPT_STR, &a->speaker, "NAME[,NAME...]",
         "speaker, or up to 16 taken in turn by the requests (default: the model's first)"},
        {"language", 'l', CT_OPT_STR, &a->language, "NAME", "language (default auto)"},
        {"seed", 0, CT_OPT_U64, &a->seed, "N", "base seed"},
        {"max-frames", 0, CT_OPT_INT, &a->max_frames, "N", "cap frames per request"},
        {"text-cps", 0, CT_OPT_FLOAT, &a->text_cps, "C",
         "feed each prompt as incremental text, 4 characters at a time at C characters/s (TTFA then counts "
         "from the first 4; default 0 = whole text)"},
        {"step-stats", 0, CT_OPT_FLAG, &a->step_stats, NULL, "collect per-step attribution"},
        {"concurrency", 'c', CT_OPT_INT, &a->concurrency, "N",
         "submit N requests at once to an engine with the profile's streams and queue: which were admitted, "
         "queued or refused, and the stalls of each after its playback start"},
        {"weights", 0, CT_OPT_STR, &a->weights, "FMT", "bf16 | int8 | int4 | mixed (converted at load)"},
        {"tag", 0, CT_OPT_STR, &a->tag, "NAME", "suffix for the result file name"},
        {"output", 'o', CT_OPT_STR, &a->out, "DIR", "results directory (default results/)"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    if (sweep) { /* bench threads sweeps overlapped talker+codec splits: no --placement */
        size_t j = 0;
        for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
            if (!opts[i].name || strcmp(opts[i].name, "placement") != 0) opts[j++] = opts[i];
    }
    int r = ct_args_parse(argc, argv, opts, usage);
    if (r) return r < 0 ? 2 : 1;
    if (!a->model) {
        fprintf(stderr, "error: --model DIR is required\n");
        return 2;
    }
    if (ct_args_given(&a->max_frames) && (a->max_frames < 1 || a->max_frames > 1000000)) {
        fprintf(stderr, "error: --max-frames must be in [1, 1000000]\n");
        return 2;
    }
    if (a->text_cps > 0 && a->concurrency > 0) {
        fprintf(stderr, "error: --text-cps and --concurrency do not go together (the concurrency table submits whole "
                        "texts)\n");
        return 2;
    }
    if (!(a->text_cps >= 0 && a->text_cps <= 1e6)) {
        fprintf(stderr, "error: --text-cps must be in [0, 1000000] characters a second\n");
        return 2;
    }
    if ((ct_args_given(&a->threads) && (a->threads < 0 || a->threads > 256)) ||
        (ct_args_given(&a->codec_threads) && (a->codec_threads < 1 || a->codec_threads > 256)) ||
        (ct_args_given(&a->context) && (a->context < 0 || a->context > 1000))) {
        fprintf(stderr, "error: --threads must be in [0, 256], --codec-threads in [1, 256], --context in [0, 1000]\n");
        return 2;
    }
    if (a->concurrency < 0 || a->concurrency > 256) {
        fprintf(stderr, "error: --concurrency must be in [1, 256]\n");
        return 2;
    }
    if (a->warmup < 0 || a->warmup > 100 || a->repeat < 1 || a->repeat > 1000) {
        fprintf(stderr, "error: --warmup must be in [0, 100] and --repeat in [1, 1000]\n");
        return 2;
    }
    if (a->speaker && strchr(a->speaker, ',')) { /* a list: split it (each name checked by its request) */
        if (strlen(a->speaker) >= sizeof a->spk_buf) {
            fprintf(stderr, "error: --speaker list is longer than %zu bytes\n", sizeof a->spk_buf - 1);
            return 2;
        }
        snprintf(a->spk_buf, sizeof a->spk_buf, "%s", a->speaker);
        for (char *save = NULL, *t = strtok_r(a->spk_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (a->n_spk == (int)(sizeof a->spk / sizeof *a->spk)) {
                fprintf(stderr, "error: --speaker lists at most %d names\n", a->n_spk);
                return 2;
            }
            a->spk[a->n_spk++] = t;
        }
        if (!a->n_spk) {
            fprintf(stderr, "error: --speaker '%s' names no speaker\n", a->speaker);
            return 2;
        }
    }
    return 0;
}

/* Loads the codec, resolves the deploy profile (auto unless --profile says otherwise) into mp,
   ep and sp, applies the flags given over it, and loads the model in the profile's formats. */
static int setup(const bench_args *a, ct_cli_deploy *prof, ct_engine_params *ep, ct_stream_params *sp,
                 ct_model **m, ct_codec **c) {
    char err[1024];
    *m = NULL;
    if (ct_codec_load(a->model, c, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    ct_model_params mp = ct_model_params_default();
    *ep = ct_engine_params_default();
    *sp = ct_stream_params_default();
    if (ct_cli_deploy_resolve(a->profile, a->model, ct_codec_macs_per_frame(*c), 0, prof) != 0 ||
        ct_cli_deploy_apply(prof, &mp, ep, sp) != 0) {
        ct_codec_free(*c);
        return -1;
    }
    if (ct_args_given(&a->weights)) {
        mp.weights = a->weights;
        mp.talker_weights = mp.predictor_weights = NULL;
        ct_cli_deploy_over(prof, "weights", a->weights);
    }
    if (ct_args_given(&a->threads)) ep->talker_threads = a->threads, ct_cli_deploy_over_int(prof, "threads", a->threads);
    if (ct_args_given(&a->codec_threads))
        ep->codec_threads = a->codec_threads, ct_cli_deploy_over_int(prof, "codec-threads", a->codec_threads);
    if (a->schedule) sp->schedule = a->schedule, ct_cli_deploy_over(prof, "schedule", a->schedule);
    if (ct_args_given(&a->windowed)) sp->windowed = a->windowed, ct_cli_deploy_over_int(prof, "windowed", a->windowed);
    if (ct_args_given(&a->context)) sp->context_frames = a->context, ct_cli_deploy_over_int(prof, "context", a->context);
    printf("%s\n", prof->desc);
    if (!a->concurrency) { /* one request at a time */
        ep->max_streams = 1;
        ep->kv_budget_bytes = 0;
    }
    sp->utterance_bytes = 0; /* each prompt is one utterance, however long */
    *m = ct_cli_load_model_p(a->model, &mp);
    if (!*m) {
        ct_codec_free(*c);
        return -1;
    }
    if (!a->speaker && ct_model_get_info(*m).n_speakers) ((bench_args *)a)->speaker = ct_model_speaker(*m, 0);
    return 0;
}

/* One entry of --placement: a placement and the threads it runs with. */
typedef struct {
    int placement, threads, codec_threads;
} place_entry;

/* "T+C", or "T" for serial (its one pool; no codec threads of its own). */
static const char *threads_str(const place_entry *e, char *buf, size_t cap) {
    if (e->placement == CT_PLACEMENT_SERIAL) snprintf(buf, cap, "%d", e->threads);
    else snprintf(buf, cap, "%d+%d", e->threads, e->codec_threads);
    return buf;
}

/* Parses "MODE[:T[+C]],..." ("both" = overlapped,serial) into e[cap]; T and C default to
   --threads and --codec-threads. Returns the count, or -1 with the error printed. */
static int parse_placement(const char *spec, int t_def, int c_def, place_entry *e, int cap) {
    int n = 0;
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char tok[64], *colon;
        if (len == 0 || len >= sizeof tok) goto bad;
        memcpy(tok, p, len);
        tok[len] = 0;
        int t = t_def, c = c_def;
        if ((colon = strchr(tok, ':')) != NULL) {
            *colon = 0;
            char *q = colon + 1, *e1;
            long v = strtol(q, &e1, 10);
            if (e1 == q || v < 0 || v > 256) goto bad;
            t = (int)v;
            if (*e1 == '+') {
                q = e1 + 1;
                v = strtol(q, &e1, 10);
                if (e1 == q || v < 0 || v > 256) goto bad;
                c = (int)v;
            }
            if (*e1) goto bad;
        }
        int modes[2], nmodes = 1;
        if (strcmp(tok, "both") == 0) {
            modes[0] = CT_PLACEMENT_OVERLAPPED;
            modes[1] = CT_PLACEMENT_SERIAL;
            nmodes = 2;
        } else if (ct_placement_parse(tok, &modes[0]) != CT_OK) {
            fprintf(stderr, "error: --placement '%s': unknown mode '%s' (expected overlapped, serial, auto or "
                    "both)\n", spec, tok);
            return -1;
        }
        for (int i = 0; i < nmodes; i++) {
            if (n == cap) {
                fprintf(stderr, "error: --placement '%s': more than %d runs\n", spec, cap);
                return -1;
            }
            e[n++] = (place_entry){modes[i], t, c};
        }
        if (!end) break;
        p = end + 1;
    }
    return n;
bad:
    fprintf(stderr, "error: --placement '%s': expected MODE[:THREADS[+CODEC_THREADS]],... with MODE overlapped, "
            "serial, auto or both and thread counts in [0, 256]\n", spec);
    return -1;
}

/* The side-by-side table, the faster: line and <out>/placement_compare[_<tag>].json. */
static int compare_runs(const bench_args *a, const place_entry *runs, const run_extra *ex, int n_runs,
                        const char *schedule) {
    printf("\n| placement (requested) | threads | TTFA p50 ms | TTFA p95 ms | RTF p50 | stalls at TTFA (n, ms) "
           "| talker | predictor | decoder | other | wall ms/frame |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    json_t *rows = json_array();
    int best_ttfa = 0, best_rtf = 0;
    for (int i = 0; i < n_runs; i++) {
        const run_extra *e = &ex[i];
        const frame_budget *b = &e->fb;
        char th[32];
        printf("| %s (%s) | %s | %.1f | %.1f | %.3f | %d, %.0f | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f |\n",
               ct_placement_str(e->placement), ct_placement_str(runs[i].placement),
               threads_str(&runs[i], th, sizeof th), e->sum.ttfa_ms.p50, e->ttfa_p95_ms, e->sum.rtf_streamed.p50,
               e->n_stalls, e->stall_total_ms, b->talker / 0.8, b->predictor / 0.8, b->decoder / 0.8,
               b->other / 0.8, b->wall);
        if (e->sum.ttfa_ms.p50 < ex[best_ttfa].sum.ttfa_ms.p50) best_ttfa = i;
        if (e->sum.rtf_streamed.p50 < ex[best_rtf].sum.rtf_streamed.p50) best_rtf = i;
        json_array_append_new(
            rows, json_pack("{s:s,s:s,s:i,s:i,s:{s:f,s:f},s:{s:f,s:f},s:{s:i,s:f,s:f},s:o,s:s}", "placement",
                            ct_placement_str(e->placement), "requested", ct_placement_str(runs[i].placement),
                            "talker_threads", runs[i].threads, "codec_threads", runs[i].codec_threads, "ttfa_ms",
                            "p50", e->sum.ttfa_ms.p50, "p95", e->ttfa_p95_ms, "rtf_streamed", "p50",
                            e->sum.rtf_streamed.p50, "p95", e->rtf_p95, "stalls_at_ttfa", "count", e->n_stalls,
                            "total_ms", e->stall_total_ms, "p50_ms", e->sum.stall_at_ttfa_ms.p50, "frame_budget",
                            budget_json(b), "result", e->path));
    }
    char th1[32], th2[32];
    printf("faster: TTFA p50 %s %s, RTF p50 %s %s\n", ct_placement_str(ex[best_ttfa].placement),
           threads_str(&runs[best_ttfa], th1, sizeof th1), ct_placement_str(ex[best_rtf].placement),
           threads_str(&runs[best_rtf], th2, sizeof th2));
    char path[1400], err[512];
    snprintf(path, sizeof path, "%s/placement_compare%s%s.json", a->out, a->tag ? "_" : "", a->tag ? a->tag : "");
    json_t *doc = json_pack("{s:s,s:s,s:s?,s:s,s:o}", "model", a->model, "kind", "placement_compare", "weights",
                            a->weights, "schedule", schedule ? schedule : "exact", "sweep", rows);
    int rc = 0;
    if (ct_json_write_file(path, doc, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        rc = 1;
    } else {
        printf("comparison written to %s\n", path);
    }
    json_decref(doc);
    return rc;
}

/* --concurrency N: N requests submitted at once (prompts in turn); every stream drained as its
   audio comes, as N listeners would. Per stream: admitted at once, queued (and for how long) or
   refused (queue full), TTFA, and the player stalls after its playback start (the engine's
   ring-buffer player, starting at TTFA). Writes <out>/concurrency_<N>.json. */
static int run_concurrent(const bench_args *a, ct_model *m, ct_codec *c, const ct_engine_params *ep,
                          const ct_stream_params *sp) {
    char err[1024];
    char **prompts = NULL;
    int own = 0, n = a->concurrency, rc = 1, n_prompts = get_prompts(a, &prompts, &own);
    if (n_prompts < 0) return 1;
    ct_engine *e = NULL;
    ct_stream **st = calloc((size_t)n, sizeof *st);
    ct_status *sub = calloc((size_t)n, sizeof *sub);
    int *done = calloc((size_t)n, sizeof *done);
    float *pcm = malloc(sizeof(float) * 8192);
    json_t *rows = json_array();
    if (!st || !sub || !done || !pcm || !rows) goto out;
    if (ct_engine_create(m, c, ep, &e, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    while (ct_engine_ready(e, err, sizeof err) == 0) nanosleep(&(struct timespec){0, 5000000}, NULL);
    ct_engine_limits lim = ct_engine_get_limits(e);
    const double t_start = ct_now_ms();
    for (int i = 0; i < n; i++) {
        ct_gen_params g = ct_gen_params_default();
        g.text = prompts[i % n_prompts];
        g.speaker = speaker_of(a, i);
        g.language = a->language;
        g.seed = a->seed + (uint64_t)i;
        if (a->max_frames > 0) g.max_frames = a->max_frames;
        sub[i] = ct_engine_submit(e, &g, sp, &st[i], err, sizeof err);
        if (sub[i] != CT_OK && sub[i] != CT_ERR_LIMIT) {
            fprintf(stderr, "error: request %d: %s\n", i, err);
            goto out;
        }
        if (sub[i] != CT_OK) done[i] = 1;
    }
    int left = 0;
    for (int i = 0; i < n; i++) left += !done[i];
    while (left > 0) { /* every listener drains its stream */
        int got = 0;
        for (int i = 0; i < n; i++) {
            if (done[i]) continue;
            int fin = 0;
            got += ct_stream_read(st[i], pcm, 8192, 0, &fin) > 0;
            if (fin) {
                done[i] = 1;
                left--;
            }
        }
        if (!got) nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    const double wall_s = (ct_now_ms() - t_start) / 1e3;
    printf("concurrency %d on %d stream(s), queue %d:\n| request | outcome | queued ms | prefill ms | prompt "
           "positions kept | TTFA ms | frames | longest chunk gap ms | stalls after playback start | stall ms | RTF |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|\n",
           n, lim.max_streams, lim.queue_cap);
    int admitted_stalls = 0, n_admitted = 0, n_queued = 0, n_refused = 0;
    long frames_total = 0;
    for (int i = 0; i < n; i++) {
        if (sub[i] != CT_OK) {
            n_refused++;
            printf("| %d | refused (queue full) | | | | | | | | | |\n", i);
            json_array_append_new(rows, json_pack("{s:i,s:s}", "request", i, "outcome", "refused"));
            continue;
        }
        ct_stream_info in = ct_stream_get_info(st[i]);
        int queued = in.queue_ms > 1000; /* waited for another stream to finish, not just for its prefill turn */
        const char *outcome = in.state == CT_STREAM_FAILED ? "failed" : queued ? "queued, then admitted" : "admitted";
        n_queued += queued;
        n_admitted++;
        admitted_stalls += in.stalls;
        frames_total += in.frames;
        double audio = (double)in.samples / ct_codec_sample_rate(c), rtf = audio > 0 ? (in.done_ms - in.queue_ms) / 1e3 / audio : 0;
        double gap = 0; /* the longest wait between two of its chunks: another stream's prefill holds it */
        const int nc = ct_stream_timeline(st[i], NULL, NULL, 0);
        double *tl = nc > 1 ? malloc(sizeof(double) * (size_t)nc) : NULL;
        if (tl && ct_stream_timeline(st[i], tl, NULL, nc) == nc)
            for (int k = 1; k < nc; k++) gap = tl[k] - tl[k - 1] > gap ? tl[k] - tl[k - 1] : gap;
        free(tl);
        printf("| %d | %s | %.0f | %.1f | %d of %d | %.0f | %d | %.1f | %d | %.0f | %.3f |\n", i, outcome, in.queue_ms,
               in.prefill_ms, in.prompt_reused, in.prompt_len, in.ttfa_ms, in.frames, gap, in.stalls, in.stall_ms, rtf);
        json_array_append_new(rows, json_pack("{s:i,s:s,s:f,s:f,s:i,s:i,s:f,s:i,s:f,s:i,s:f,s:f}", "request", i,
                                              "outcome", outcome, "queue_ms", in.queue_ms, "prefill_ms", in.prefill_ms,
                                              "prompt_len", in.prompt_len, "prompt_reused", in.prompt_reused,
                                              "ttfa_ms", in.ttfa_ms, "frames", in.frames, "max_gap_ms", gap,
                                              "stalls", in.stalls, "stall_ms", in.stall_ms, "rtf", rtf));
    }
    ct_engine_counters k = ct_engine_get_counters(e);
    printf("%d admitted (%d of them queued over 1 s first), %d refused; %d stall(s) after playback start; engine: %llu "
           "deferred for compute, %llu for KV, %llu held by the throttle, %llu rejected; prompt positions: %llu of "
           "%llu kept (%llu copied from another slot, %llu from the prompt cache)\n",
           n_admitted, n_queued, n_refused, admitted_stalls, (unsigned long long)k.deferred_compute,
           (unsigned long long)k.deferred_kv, (unsigned long long)k.deferrals, (unsigned long long)k.rejected,
           (unsigned long long)k.prompt_reused, (unsigned long long)k.prompt_positions,
           (unsigned long long)k.prompt_shared, (unsigned long long)k.prompt_cached);
    const double fps = wall_s > 0 ? frames_total / wall_s : 0;
    printf("aggregate: %ld frames in %.2f s from the first submit to the last stream drained = %.2f frames/s "
           "(%.2f audio s per s)\n",
           frames_total, wall_s, fps, fps * ct_codec_samples_per_frame(c) / ct_codec_sample_rate(c));
    char path[1400];
    snprintf(path, sizeof path, "%s/concurrency_%d%s%s.json", a->out, n, a->tag ? "_" : "", a->tag ? a->tag : "");
    json_t *doc = json_pack("{s:s,s:s,s:i,s:i,s:i,s:s,s:s,s:o}", "model", a->model, "kind", "concurrency",
                            "concurrency", n, "max_streams", lim.max_streams, "queue", lim.queue_cap, "talker_weights",
                            ct_model_get_info(m).talker_weights, "predictor_weights",
                            ct_model_get_info(m).predictor_weights, "requests", rows);
    rows = NULL;
    json_object_set_new(doc, "frames_total", json_integer(frames_total));
    json_object_set_new(doc, "wall_s", json_real(wall_s));
    json_object_set_new(doc, "frames_per_s", json_real(fps));
    json_object_set_new(doc, "prompt", json_pack("{s:I,s:I,s:I,s:I}", "positions", (json_int_t)k.prompt_positions,
                                                 "reused", (json_int_t)k.prompt_reused, "shared",
                                                 (json_int_t)k.prompt_shared, "cached", (json_int_t)k.prompt_cached));
    if (ct_json_write_file(path, doc, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
    } else {
        printf("written to %s\n", path);
        rc = 0;
    }
    json_decref(doc);
out:
    for (int i = 0; st && i < n; i++) ct_stream_release(st[i]);
    ct_engine_free(e);
    json_decref(rows);
    free(st);
    free(sub);
    free(done);
    free(pcm);
    free_prompts(prompts, n_prompts, own);
    return rc;
}

int ct_cli_bench_stream(int argc, char **argv) {
    bench_args a;
    int r = parse_common(argc, argv, &a, "usage: codectalk bench stream -m DIR [--prompts FILE] [--warmup N --repeat N] "
                         "[--profile auto|FILE] [--schedule SPEC] [--placement LIST] [--step-stats] -o results/\n"
                         "Measures TTFA, playback start, stalls, RTF, gaps and the frame budget split per request;\n"
                         "--placement both (or overlapped:1+1,serial:2) compares placements side by side.", 0);
    if (r) return r == 1 ? 0 : r;
    ct_model *m;
    ct_codec *c;
    ct_engine_params ep;
    ct_stream_params sp;
    ct_cli_deploy prof;
    if (setup(&a, &prof, &ep, &sp, &m, &c) != 0) return 1;
    place_entry runs[8];
    int n_runs = 1, rc = 1;
    runs[0] = (place_entry){ep.placement, ep.talker_threads, ep.codec_threads};
    if (a.placement && (n_runs = parse_placement(a.placement, ep.talker_threads, ep.codec_threads, runs, 8)) < 0) {
        rc = 2;
        goto out;
    }
    const char *tag = a.profile ? (strcmp(a.profile, "auto") == 0 ? "profile_auto" : a.profile) : "profile_auto";
    if (a.concurrency) {
        if (n_runs > 1) {
            fprintf(stderr, "error: --concurrency runs one placement\n");
            rc = 2;
            goto out;
        }
        ep.placement = runs[0].placement;
        rc = run_concurrent(&a, m, c, &ep, &sp);
        goto out;
    }
    if (n_runs == 1) {
        ep.placement = runs[0].placement;
        ep.talker_threads = runs[0].threads;
        ep.codec_threads = runs[0].codec_threads;
        rc = run_bench(&a, m, c, &ep, &sp, tag, argc, argv, NULL, NULL, NULL) == 0 ? 0 : 1;
        goto out;
    }
    /* side by side: one result file per entry (tag suffix MODE_T+C), then the comparison */
    run_extra ex[8];
    char tags[8][160];
    rc = 0;
    for (int i = 0; i < n_runs; i++) {
        ct_engine_params epi = ep;
        epi.placement = runs[i].placement;
        epi.talker_threads = runs[i].threads;
        epi.codec_threads = runs[i].codec_threads;
        char th[32];
        snprintf(tags[i], sizeof tags[i], "%s%s%s_%s", a.tag ? a.tag : "", a.tag ? "_" : "",
                 ct_placement_str(runs[i].placement), threads_str(&runs[i], th, sizeof th));
        bench_args ai = a;
        ai.tag = tags[i];
        printf("\n== %s placement, threads %s ==\n", ct_placement_str(runs[i].placement), th);
        if (run_bench(&ai, m, c, &epi, &sp, tag, argc, argv, NULL, NULL, &ex[i]) != 0) {
            rc = 1;
            n_runs = i;
            break;
        }
    }
    if (n_runs > 0 && compare_runs(&a, runs, ex, n_runs, sp.schedule) != 0) rc = 1;
out:
    ct_codec_free(c);
    ct_model_free(m);
    ct_cli_deploy_free(&prof);
    return rc;
}

int ct_cli_bench_threads(int argc, char **argv) {
    bench_args a;
    int r = parse_common(argc, argv, &a, "usage: codectalk bench threads -m DIR [options]\n"
                         "Runs the stream bench for every placement and thread split the usable CPUs allow,\n"
                         "one oversubscribed thread included: serial:1..N+1, overlapped T+C with T+C <= N+1\n"
                         "(the profile's formats and schedule; per-step attribution per run).", 1);
    if (r) return r == 1 ? 0 : r;
    ct_model *m;
    ct_codec *c;
    ct_engine_params ep0;
    ct_stream_params sp;
    ct_cli_deploy prof;
    if (setup(&a, &prof, &ep0, &sp, &m, &c) != 0) return 1;
    cpu_set_t cs;
    int ncpu = sched_getaffinity(0, sizeof cs, &cs) == 0 ? CPU_COUNT(&cs) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    place_entry runs[64];
    int n_runs = 0;
    for (int t = 1; t <= ncpu + 1 && n_runs < 64; t++) runs[n_runs++] = (place_entry){CT_PLACEMENT_SERIAL, t, 0};
    for (int t = 1; t <= ncpu; t++)
        for (int cc = 1; t + cc <= ncpu + 1 && n_runs < 64; cc++)
            runs[n_runs++] = (place_entry){CT_PLACEMENT_OVERLAPPED, t, cc};
    json_t *rows = json_array();
    char *table = malloc(64 * 200);
    size_t off = 0;
    int rc = table && rows ? 0 : 1;
    for (int i = 0; i < n_runs && !rc; i++) {
        ct_engine_params ep = ep0;
        ep.placement = runs[i].placement;
        ep.talker_threads = runs[i].threads;
        ep.codec_threads = runs[i].placement == CT_PLACEMENT_SERIAL ? 1 : runs[i].codec_threads;
        ep.talker_cpus = ep.codec_cpus = NULL; /* the sweep lets the threads float */
        ep.n_talker_cpus = ep.n_codec_cpus = 0;
        char th[32], tag[96];
        threads_str(&runs[i], th, sizeof th);
        snprintf(tag, sizeof tag, "threads_%s_%s", ct_placement_str(runs[i].placement), th);
        int over = runs[i].threads + runs[i].codec_threads > ncpu;
        printf("\n== %s %s%s ==\n", ct_placement_str(runs[i].placement), th, over ? " (oversubscribed)" : "");
        ct_stream_summary s;
        json_t *attr = NULL;
        run_extra ex;
        bench_args aa = a;
        aa.tag = tag;
        if (run_bench(&aa, m, c, &ep, &sp, "threads", argc, argv, &s, &attr, &ex) != 0) {
            rc = 1;
            break;
        }
        const frame_budget *b = &ex.fb;
        off += (size_t)snprintf(table + off, 64 * 200 - off,
                                "| %s | %s%s | %.1f | %.1f | %d | %.3f | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n",
                                ct_placement_str(runs[i].placement), th, over ? " (over)" : "", s.ttfa_ms.p50,
                                s.playback_start_ms.p50, ex.n_stalls, s.rtf_streamed.p50, b->talker / 0.8,
                                b->predictor / 0.8, b->decoder / 0.8, b->other / 0.8);
        json_array_append_new(rows, json_pack("{s:s,s:i,s:i,s:b,s:f,s:f,s:i,s:f,s:o,s:o*}", "placement",
                                              ct_placement_str(runs[i].placement), "talker_threads", runs[i].threads,
                                              "codec_threads", runs[i].codec_threads, "oversubscribed", over,
                                              "ttfa_p50_ms", s.ttfa_ms.p50, "playback_start_p50_ms",
                                              s.playback_start_ms.p50, "stalls", ex.n_stalls, "rtf_p50",
                                              s.rtf_streamed.p50, "frame_budget", budget_json(b), "attribution",
                                              attr));
    }
    if (!rc) {
        printf("\n%d usable CPUs\n| placement | threads | TTFA p50 ms | playback start p50 ms | stalls | RTF p50 | "
               "talker | predictor | decoder | other |\n|---|---|---|---|---|---|---|---|---|---|\n%s",
               ncpu, table);
        char path[1200], err[512];
        snprintf(path, sizeof path, "%s/threads_sweep.json", a.out);
        json_t *doc = json_pack("{s:s,s:s,s:i,s:O}", "model", a.model, "kind", "thread_sweep", "usable_cpus", ncpu,
                                "sweep", rows);
        if (ct_json_write_file(path, doc, err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: %s\n", err);
            rc = 1;
        } else {
            printf("sweep written to %s\n", path);
        }
        json_decref(doc);
    }
    json_decref(rows);
    free(table);
    ct_codec_free(c);
    ct_model_free(m);
    ct_cli_deploy_free(&prof);
    return rc;
}
