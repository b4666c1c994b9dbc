/* `codectalk bench model|roofline`: per-stage cost of the model path against this machine's
   measured limits (read bandwidth for the talker and code predictor, FMA rate for the codec). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/roofline.h"
#include "codec/codec.h"
#include "core/clock.h"
#include "kernels/cpu.h"
#include "model/session_internal.h"

static uint64_t mat_bytes(const ct_mat *w) {
    return (uint64_t)w->rows * (uint64_t)w->cols * ct_dtype_size(w->dtype);
}

static uint64_t stack_bytes(const ct_stack_w *s) {
    uint64_t b = 0;
    for (int l = 0; l < s->cfg->layers; l++) {
        const ct_layer_w *L = &s->layers[l];
        b += mat_bytes(&L->q) + mat_bytes(&L->k) + mat_bytes(&L->v) + mat_bytes(&L->o) +
             mat_bytes(&L->gate) + mat_bytes(&L->up) + mat_bytes(&L->down);
    }
    return b;
}

static int cmd_roofline(int argc, char **argv) {
    int threads = 0, mib = 1024;
    ct_opt opts[] = {{"threads", 0, CT_OPT_INT, &threads, "N", "threads for the N-thread figures (default all CPUs)"},
                     {"mib", 0, CT_OPT_INT, &mib, "N", "read buffer size in MiB (default 1024)"},
                     {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk bench roofline [--threads N]\n"
                                            "Measures read bandwidth and peak F32 FMA rate.");
    if (r) return r < 0 ? 2 : 0;
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (mib < 16 || mib > 65536) {
        fprintf(stderr, "error: --mib must be in [16, 65536]\n");
        return 2;
    }
    ct_roofline rl;
    ct_roofline_measure(threads, mib, &rl);
    printf("read bandwidth: %.1f GB/s (1 thread), %.1f GB/s (%d threads)\n", rl.read_gbs_1t,
           rl.read_gbs_nt, threads);
    printf("peak F32 FMA (%s): %.1f GFLOP/s (1 thread), %.1f GFLOP/s (%d threads)\n", rl.isa,
           rl.fma_gflops_1t, rl.fma_gflops_nt, threads);
    return 0;
}

static int cmd_model(int argc, char **argv) {
    const char *model = NULL, *json_out = NULL;
    int threads = 0, frames = 50, reps = 3, no_codec = 0;
    ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &model, "DIR", "model directory"},
        {"threads", 0, CT_OPT_INT, &threads, "N", "compute threads (default all CPUs)"},
        {"frames", 0, CT_OPT_INT, &frames, "N", "frames per repetition (default 50)"},
        {"repeat", 0, CT_OPT_INT, &reps, "N", "repetitions, best kept (default 3)"},
        {"no-codec", 0, CT_OPT_FLAG, &no_codec, NULL, "skip the codec decoder"},
        {"json", 0, CT_OPT_STR, &json_out, "FILE", "also write the results as JSON"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk bench model -m DIR [--threads N] [--frames N]\n"
                                            "Per-stage ms/frame, bytes/frame, GB/s and % of the measured roofline.");
    if (r) return r < 0 ? 2 : 0;
    if (frames < 2 || frames > 4000 || reps < 1 || reps > 100) {
        fprintf(stderr, "error: --frames must be in [2, 4000] and --repeat in [1, 100]\n");
        return 2;
    }
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    ct_model *m = ct_cli_load_model(model, NULL, 0);
    if (!m) return 1;
    ct_codec *codec = NULL;
    char err[1024];
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
    ct_roofline rl;
    ct_roofline_measure(threads, 512, &rl);
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
    double best_prefill = 1e30, best_talk = 1e30, best_pred = 1e30, best_codec = 1e30;
    int prompt_len = 0, nf = 0;
    int32_t *codes = malloc(sizeof(int32_t) * 16 * (size_t)frames);
    for (int rep = 0; rep < reps; rep++) {
        double t0 = ct_now_ms();
        if (ct_session_start(s, &g) != CT_OK) {
            fprintf(stderr, "error: %s\n", ct_session_errmsg(s));
            break;
        }
        double tp = ct_now_ms() - t0;
        prompt_len = ct_session_run_info(s).prompt_len;
        int got = 1;
        nf = 0;
        while (got && nf < frames && ct_session_next_frame(s, codes + 16 * nf, &got) == CT_OK && got) nf++;
        if (tp < best_prefill) best_prefill = tp;
        if (nf && s->t_talker_ms / nf < best_talk) best_talk = s->t_talker_ms / nf;
        if (nf && s->t_pred_ms / nf < best_pred) best_pred = s->t_pred_ms / nf;
        if (codec && nf) {
            ct_codec_stream *cs = NULL;
            float *pcm = malloc(sizeof(float) * (size_t)ct_codec_samples_per_frame(codec));
            if (ct_codec_stream_create(codec, 1, &cs, err, sizeof err) == CT_OK && pcm) {
                double tc = ct_now_ms();
                for (int f = 0; f < nf; f++) ct_codec_stream_push(cs, codes + 16 * f, 1, pcm, err, sizeof err);
                double ms = (ct_now_ms() - tc) / nf;
                if (ms < best_codec) best_codec = ms;
            }
            ct_codec_stream_free(cs);
            free(pcm);
        }
    }
    uint64_t tb = stack_bytes(&m->talker) + mat_bytes(&m->codec_head);
    uint64_t pb = stack_bytes(&m->pred) * (uint64_t)(m->cfg.n_groups - 1);
    for (int gi = 0; gi < m->cfg.n_groups - 1; gi++) pb += mat_bytes(&m->pred_head[gi]);
    if (m->has_proj) pb += mat_bytes(&m->mtp_proj) * (uint64_t)m->cfg.n_groups;
    double t_gbs = tb / (best_talk * 1e-3) / 1e9, p_gbs = pb / (best_pred * 1e-3) / 1e9;
    double total = best_talk + best_pred + (codec ? best_codec : 0);
    double floor_ms = (double)(tb + pb) / (rl.read_gbs_nt * 1e9) * 1e3;
    printf("model %s (%s %s), %d threads, kernels %s, %d frames x %d (best), prompt %d positions\n",
           model, ct_model_get_info(m).kind, m->cfg.size_tag, threads, ct_isa_name(ct_kernels()->isa),
           nf, reps, prompt_len);
    printf("roofline: read %.1f GB/s (%d threads), %.1f GB/s (1 thread); F32 FMA peak %.0f GFLOP/s\n",
           rl.read_gbs_nt, threads, rl.read_gbs_1t, rl.fma_gflops_nt);
    printf("| stage | ms/frame | MB/frame | GB/s | %% of read roofline | share of 80 ms |\n");
    printf("|---|---|---|---|---|---|\n");
    printf("| prefill (%d positions) | %.1f (once) | | | | |\n", prompt_len, best_prefill);
    printf("| talker | %.2f | %.1f | %.1f | %.0f%% | %.0f%% |\n", best_talk, tb / 1e6, t_gbs,
           100 * t_gbs / rl.read_gbs_nt, 100 * best_talk / 80);
    printf("| code predictor | %.2f | %.1f | %.1f | %.0f%% | %.0f%% |\n", best_pred, pb / 1e6, p_gbs,
           100 * p_gbs / rl.read_gbs_nt, 100 * best_pred / 80);
    if (codec) printf("| codec (stream, 1 frame) | %.2f | | | | %.0f%% |\n", best_codec, 100 * best_codec / 80);
    printf("| total | %.2f | | | floor %.1f ms | RTF %.3f |\n", total, floor_ms, total / 80);
    if (json_out) {
        json_t *j = json_pack("{s:s,s:s,s:i,s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
                              "model", model, "kind", ct_model_get_info(m).kind, "threads", threads,
                              "isa", ct_isa_name(ct_kernels()->isa), "frames", nf, "prompt_len", prompt_len,
                              "prefill_ms", best_prefill, "talker_ms", best_talk, "predictor_ms", best_pred,
                              "codec_ms", codec ? best_codec : 0.0, "talker_bytes", (double)tb,
                              "predictor_bytes", (double)pb, "talker_gbs", t_gbs, "predictor_gbs", p_gbs,
                              "roofline_read_gbs", rl.read_gbs_nt, "roofline_fma_gflops", rl.fma_gflops_nt,
                              "rtf", total / 80);
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

int ct_cli_bench(int argc, char **argv) {
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        printf("usage: codectalk bench model|roofline [options]   (each with --help)\n");
        return argc < 1 ? 2 : 0;
    }
    if (!strcmp(argv[0], "model")) return cmd_model(argc - 1, argv + 1);
    if (!strcmp(argv[0], "roofline")) return cmd_roofline(argc - 1, argv + 1);
    fprintf(stderr, "error: unknown bench '%s' (model, roofline)\n", argv[0]);
    return 2;
}
