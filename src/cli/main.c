/* codectalk command-line tool: tokenize, codes, make-model, info. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli_common.h"
#include "cli/cli_profile.h"
#include "cli/cmd_edge.h"
#include "cli/cmd_export.h"
#include "cli/cmd_serve.h"
#include "cli/cmd_wyoming.h"
#include "cli/cmd_stats.h"
#include "cli/cmd_summarize.h"
#include "codectalk.h"
#include "model/make_model.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- tokenize ----------------------------------------------------------------------- */

static int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL, *tok = NULL;
    ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &model, "DIR", "model directory"},
        {"text", 't', CT_OPT_STR, &text, "TEXT", "text to tokenize (default: stdin)"},
        {"file", 'f', CT_OPT_STR, &file, "FILE", "read the text from FILE ('-' = stdin)"},
        {"tokenizer", 0, CT_OPT_STR, &tok, "DIR", "tokenizer files directory (default: model dir)"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk tokenize -m DIR [--text TEXT | -f FILE]\n"
                                            "Prints the Qwen2 BPE token ids as a JSON array.");
    if (r) return r < 0 ? 2 : 0;
    ct_model *m = ct_cli_load_model(model, tok, 0);
    if (!m) return 1;
    char *t = ct_cli_get_text(text, file, 0);
    if (!t) {
        ct_model_free(m);
        return 1;
    }
    size_t len = strlen(t), n = 0, cap = len + 16;
    int32_t *ids = malloc(cap * sizeof *ids);
    char err[512];
    ct_status st = ids ? ct_tokenize(m, t, len, ids, cap, &n, err, sizeof err) : CT_ERR_NOMEM;
    int rc = 0;
    if (st != CT_OK) {
        fprintf(stderr, "error: %s\n", st == CT_ERR_NOMEM ? "out of memory" : err);
        rc = 1;
    } else {
        putchar('[');
        for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
        printf("]\n");
    }
    free(ids);
    free(t);
    ct_model_free(m);
    return rc;
}

/* ---- codes -------------------------------------------------------------------------- */

static int cmd_codes(int argc, char **argv) {
    ct_cli_gen a;
    ct_cli_gen_init(&a);
    const char *out = NULL, *format = "json", *profile = NULL;
    ct_opt opts[64];
    int n = ct_cli_gen_opts(&a, opts, 48);
    opts[n++] = (ct_opt){"profile", 0, CT_OPT_STR, &profile, "auto|none|FILE",
                         "deploy profile (default none): weight formats, talker threads, CPU set, context; every "
                         "flag given overrides it"};
    opts[n++] = (ct_opt){"format", 0, CT_OPT_STR, &format, "json|bin", "output format; bin = int32 LE [frames][16]"};
    opts[n++] = (ct_opt){"output", 'o', CT_OPT_STR, &out, "FILE", "write frames to FILE (default: stdout)"};
    opts[n] = (ct_opt){NULL, 0, 0, NULL, NULL, NULL};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk codes -m DIR [--text TEXT | -f FILE] [options]\n"
                          "Generates codec frames (16 codes per 80 ms) and prints them as JSON.");
    if (r) return r < 0 ? 2 : 0;
    if (ct_cli_gen_check(&a) != 0) return 2;
    int bin = strcmp(format, "bin") == 0;
    if (!bin && strcmp(format, "json") != 0) {
        fprintf(stderr, "error: --format must be json or bin, got '%s'\n", format);
        return 2;
    }
    if (bin && !out && isatty(1)) {
        fprintf(stderr, "error: refusing to write binary frames to a terminal; use -o FILE\n");
        return 2;
    }
    /* no codec here: the profile prices the talker and predictor only */
    ct_model_params mp = ct_model_params_default();
    ct_engine_params ep = ct_engine_params_default();
    ct_cli_deploy prof;
    memset(&prof, 0, sizeof prof);
    if (ct_cli_deploy_resolve(profile ? profile : "none", a.model, 0, a.quiet, &prof) != 0 ||
        ct_cli_deploy_apply(&prof, &mp, &ep, NULL) != 0) {
        ct_cli_deploy_free(&prof);
        return 1;
    }
    ct_cli_gen_over_profile(&a, &mp, &ep, &prof);
    if (profile && !a.quiet) fprintf(stderr, "%s\n", prof.desc);
    ct_model *m = ct_cli_load_model_p(a.model, &mp);
    if (!m) {
        ct_cli_deploy_free(&prof);
        return 1;
    }
    ct_model_info info = ct_model_get_info(m);
    char *text = ct_cli_get_text(a.text, a.file, 1);
    float *xv = NULL;
    ct_voice *voice = NULL;
    int rc = 1;
    ct_engine *e = NULL;
    ct_stream *st = NULL;
    FILE *fo = NULL;
    char tmp_path[4200] = "";
    int32_t *frames = NULL;
    if (!text) goto done;
    int vr = ct_cli_voice_get(&a, m, &voice);
    if (vr) {
        rc = vr;
        goto done;
    }
    if (ct_cli_read_xvector(&a, m, &xv) != 0) goto done;
    /* one stream on the engine, codes out: the same frames as every other entry point */
    ep.max_streams = 1;
    ep.kv_budget_bytes = 0;
    ep.placement = CT_PLACEMENT_SERIAL; /* no audio: the codec stage only passes frames on */
    char err[1024];
    if (ct_engine_create(m, NULL, &ep, &e, err, sizeof err) != CT_OK) { /* codes only: no codec */
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    ct_gen_params g;
    ct_cli_gen_params(&a, &g, text, xv, m);
    ct_cli_voice_apply(&a, voice, &g);
    ct_stream_params sp = ct_stream_params_default();
    sp.output = CT_OUTPUT_CODES;
    sp.utterance_bytes = 0; /* the whole text is one prompt */
    double t0 = now_s();
    if (ct_engine_submit(e, &g, &sp, &st, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    if (ct_stream_wait_started(st, -1) == CT_STREAM_FAILED) {
        fprintf(stderr, "error: %s\n", ct_stream_errmsg(st));
        goto done;
    }
    ct_stream_info si = ct_stream_get_info(st);
    double t_prefill = si.prefill_ms / 1e3;
    int G = info.n_groups, cap = ep.max_context;
    frames = malloc((size_t)cap * G * sizeof(int32_t));
    if (!frames) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    int nf = 0, tty = isatty(2) && !a.quiet, fin = 0;
    while (!fin && nf < cap) {
        nf += (int)ct_stream_read_codes(st, frames + (size_t)nf * G, (size_t)(cap - nf), -1, &fin);
        if (tty) fprintf(stderr, "\rframe %d  %.2f s audio  %.1f s elapsed", nf, nf * 0.08, now_s() - t0);
    }
    si = ct_stream_get_info(st);
    if (si.state == CT_STREAM_FAILED) {
        fprintf(stderr, "\nerror: %s\n", ct_stream_errmsg(st));
        goto done;
    }
    double wall = now_s() - t0;
    if (tty) fputc('\n', stderr);
    /* a regular or new file: written to FILE.partial and renamed when complete (as synth does) */
    int to_file = out && strcmp(out, "-") != 0, in_place = to_file ? ct_cli_out_in_place(out) : 1;
    if (in_place < 0) goto done;
    if (!in_place) snprintf(tmp_path, sizeof tmp_path, "%s.partial", out);
    fo = to_file ? fopen(in_place ? out : tmp_path, bin ? "wb" : "w") : stdout;
    if (!fo) {
        fprintf(stderr, "error: cannot open '%s' for writing: %s\n", in_place ? out : tmp_path,
                errno == EISDIR ? "it is a directory" : strerror(errno));
        tmp_path[0] = 0;
        goto done;
    }
    errno = 0;
    if (bin) {
        if (fwrite(frames, sizeof(int32_t) * G, (size_t)nf, fo) != (size_t)nf) goto write_fail;
    } else {
        fprintf(fo, "{\"frames\": [");
        for (int f = 0; f < nf; f++) {
            fprintf(fo, f ? ",\n  [" : "\n  [");
            for (int j = 0; j < G; j++) fprintf(fo, j ? ", %d" : "%d", frames[(size_t)f * G + j]);
            fputc(']', fo);
        }
        fprintf(fo, "],\n \"n_frames\": %d, \"stop\": \"%s\", \"prompt_len\": %d, "
                "\"text_tokens\": %d, \"seed\": %llu}\n", nf,
                ct_stop_reason_str(si.stop), si.prompt_len, si.text_tokens,
                (unsigned long long)a.seed);
    }
    if (fo != stdout ? fclose(fo) != 0 : fflush(fo) != 0) {
        fo = NULL;
        goto write_fail;
    }
    fo = NULL;
    if (tmp_path[0] && rename(tmp_path, out) != 0) {
        fprintf(stderr, "error: cannot rename '%s' to '%s': %s\n", tmp_path, out, strerror(errno));
        goto done;
    }
    tmp_path[0] = 0;
    if (!a.quiet)
        fprintf(stderr, "%d frames (%.2f s of audio), stop: %s, prefill %.3f s, %.1f ms/frame, "
                "wall %.2f s\n", nf, nf * 0.08, ct_stop_reason_str(si.stop),
                t_prefill, nf ? (wall - t_prefill) * 1e3 / nf : 0.0, wall);
    rc = 0;
    goto done;
write_fail:
    if (errno == EPIPE) { /* the reader went away: not an error (see main) */
        clearerr(stdout);
        rc = 0;
        goto done;
    }
    fprintf(stderr, "error: writing frames to '%s' failed: %s\n", out ? out : "stdout",
            errno == ENOSPC ? "no space left on device" : errno ? strerror(errno) : "write error");
done:
    if (fo && fo != stdout) fclose(fo);
    if (tmp_path[0]) remove(tmp_path); /* never a half-written frames file */
    free(frames);
    free(xv);
    free(text);
    ct_stream_release(st);
    ct_engine_free(e);
    ct_voice_free(voice);
    ct_model_free(m);
    ct_cli_deploy_free(&prof);
    return rc;
}

/* ---- make-model --------------------------------------------------------------------- */

static void mm_progress(void *ud, uint64_t done, uint64_t total) {
    (void)ud;
    if (isatty(2) && total)
        fprintf(stderr, "\rwriting %.0f%% (%llu / %llu MiB)", 100.0 * (double)done / (double)total,
                (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
}

/* 0 when path is a directory with entries in it. */
static int dir_empty(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return 1;
    if (!S_ISDIR(sb.st_mode)) return 1; /* not a directory: make-model names that error */
    DIR *d = opendir(path);
    if (!d) return 1; /* let make-model name the error */
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = 0;
    closedir(d);
    return empty;
}

static int cmd_make_model(int argc, char **argv) {
    const char *preset = NULL, *out = NULL, *tok = NULL;
    uint64_t seed = 0;
    int force = 0;
    char names[256] = ""; /* the help lists the presets make-model knows (ct_make_model_presets) */
    for (const char *const *n = ct_make_model_presets(); *n; n++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", *n);
    ct_opt opts[] = {
        {"preset", 'p', CT_OPT_STR, &preset, "NAME", names},
        {"seed", 0, CT_OPT_U64, &seed, "N", "weight seed (default 0)"},
        {"out", 'o', CT_OPT_STR, &out, "DIR", "output model directory"},
        {"tokenizer", 0, CT_OPT_STR, &tok, "DIR", "tokenizer files to copy (default: built-in assets)"},
        {"force", 0, CT_OPT_FLAG, &force, NULL, "overwrite a non-empty DIR"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk make-model --preset NAME [--seed N] --out DIR\n"
                          "Writes a random-weight model directory in the published Hugging Face layout.");
    if (r) return r < 0 ? 2 : 0;
    if (!preset || !out) {
        fprintf(stderr, "error: --preset and --out are required\n");
        return 2;
    }
    if (!force && !dir_empty(out)) {
        fprintf(stderr, "error: '%s' is not empty; use --force to overwrite it\n", out);
        return 1;
    }
    char err[1024];
    const char *tdir = tok ? tok : CT_ASSET_DIR "/qwen3-tokenizer";
    double t0 = now_s();
    ct_status st = ct_make_model(preset, seed, out, tdir, force, mm_progress, NULL, err, sizeof err);
    if (isatty(2)) fputc('\n', stderr);
    if (st != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    fprintf(stderr, "wrote %s (%s, seed %llu) in %.1f s\n", out, preset, (unsigned long long)seed,
            now_s() - t0);
    return 0;
}

/* ---- info --------------------------------------------------------------------------- */

static int cmd_info(int argc, char **argv) {
    const char *model = NULL, *tok = NULL, *weights = NULL, *tw = NULL, *pw = NULL;
    int panels = 0;
    ct_opt opts[] = {{"model", 'm', CT_OPT_STR, &model, "DIR", "model directory"},
                     {"tokenizer", 0, CT_OPT_STR, &tok, "DIR", "tokenizer files directory"},
                     {"weights", 0, CT_OPT_STR, &weights, "FMT", "load in this weight format: bf16, int8, int4 or mixed"},
                     {"talker-weights", 0, CT_OPT_STR, &tw, "FMT", "the talker's format (default: --weights)"},
                     {"predictor-weights", 0, CT_OPT_STR, &pw, "FMT", "the code predictor's format (default: --weights)"},
                     {"weight-panels", 0, CT_OPT_FLAG, &panels, NULL,
                      "load with the INT8/INT4 weight panels (ct_model_params.weight_panels) and say where they come from"},
                     {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk info -m DIR [--weights FMT] [--weight-panels]\n"
                                            "Loads and validates a model (talker, tokenizer, speech_tokenizer/ codec)\n"
                                            "and prints what it is, and which file its weights are read from.");
    if (r) return r < 0 ? 2 : 0;
    ct_model_params mp = ct_model_params_default();
    mp.tokenizer_dir = tok;
    mp.weights = weights;
    mp.talker_weights = tw;
    mp.predictor_weights = pw;
    mp.weight_panels = panels;
    ct_model *m = ct_cli_load_model_p(model, &mp);
    if (!m) return 1;
    ct_codec *codec = NULL; /* speech_tokenizer/ is part of a model: validate it too */
    char err[1024];
    if (ct_codec_load(model, &codec, err, sizeof err) != CT_OK) {
        char sd[4200];
        struct stat sb;
        snprintf(sd, sizeof sd, "%s/speech_tokenizer", model);
        if (stat(sd, &sb) != 0 || !S_ISDIR(sb.st_mode))
            fprintf(stderr, "error: %s/ is missing: the codec (speech tokenizer) is part of every model\n", sd);
        else
            fprintf(stderr, "error: speech_tokenizer (the codec): %s\n", err);
        ct_model_free(m);
        return 1;
    }
    ct_model_info i = ct_model_get_info(m);
    printf("kind: %s\nsize: %s\ntalker: %d layers, hidden %d\ncode predictor: %d layers, hidden %d\n"
           "codes per frame: %d (codebook %d)\nweights: %.1f MiB (talker %s, code predictor %s)\n"
           "speakers:",
           i.kind, i.size_tag, i.talker_layers, i.talker_hidden, i.pred_layers, i.pred_hidden,
           i.n_groups, i.codebook_size, (double)i.weight_bytes / 1048576.0, i.talker_weights,
           i.predictor_weights);
    for (int k = 0; k < i.n_speakers; k++) printf(" %s", ct_model_speaker(m, k));
    printf("\nlanguages: auto");
    for (int k = 0; k < i.n_languages; k++) printf(" %s", ct_model_language(m, k));
    printf("\ncodec: speech_tokenizer, %d Hz\n", ct_codec_sample_rate(codec));
    printf("weight file: %s (%s)\n", i.weights_file, i.weights_source);
    printf("converted at load: %d matrices\n", i.converted);
    if (!i.packed_bytes)
        printf("weight panels: none\n");
    else
        printf("weight panels: %.1f MiB, %s (INT8/INT4 panels of the AVX-512 VNNI kernel)\n",
               (double)i.packed_bytes / 1048576.0,
               !strcmp(i.panels_source, "file") ? "mapped from the weight file" : "repacked at load");
    if (i.panels_note[0]) printf("note: %s\n", i.panels_note);
    if (i.cache_file[0]) printf("weight cache: %s\n", i.cache_file);
    ct_codec_free(codec);
    ct_model_free(m);
    return 0;
}

static void usage(void) {
    printf("codectalk %s: Qwen3-TTS in plain C\n\n"
           "usage: codectalk COMMAND [options]   (COMMAND --help for its options)\n\n"
           "commands:\n"
           "  synth        text -> 24 kHz speech (WAV, or raw s16le on stdout)\n"
           "  codes        text -> codec frames (16 codes per 80 ms frame)\n"
           "  tokenize     text -> Qwen2 BPE token ids (JSON)\n"
           "  make-model   write a random-weight model in the published layout\n"
           "  info         load, validate and describe a model directory\n"
           "  voice        cloned voices (Base models): create from a clip, info FILE\n"
           "  quantize     write INT8/INT4 weights (+ scales) as a safetensors file the loader accepts\n"
           "  export       ONNX programs: talker/predictor decode steps, windowed codec, sanitize\n"
           "  serve        OpenAI-compatible streaming HTTP server (POST /v1/audio/speech)\n"
           "  wyoming      Wyoming protocol server for Home Assistant (describe, synthesize, streaming)\n"
           "  client       codes from a server (response_format codes), decoded here -> WAV / raw s16le\n"
           "  bench        model | roofline | kernels | stream | threads | emulate | serve | clone | summarize\n"
           "  stats        merge step-stats dumps into the attribution table\n"
           "  probe        describe this machine (ISA, cores, clusters, memory, accelerators)\n"
           "  profile      materialise the layered deploy profile (--auto --explain)\n"
           "  calibrate    derive chunk schedules from measured chunk arrivals\n",
           ct_version());
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) {
        usage();
        return 0;
    }
    if (!strcmp(c, "--version")) {
        printf("%s\n", ct_version());
        return 0;
    }
    if (!strcmp(c, "tokenize")) return cmd_tokenize(argc - 2, argv + 2);
    if (!strcmp(c, "codes")) return cmd_codes(argc - 2, argv + 2);
    if (!strcmp(c, "synth")) return ct_cli_synth(argc - 2, argv + 2);
    if (!strcmp(c, "bench") && argc > 2 && !strcmp(argv[2], "stream")) return ct_cli_bench_stream(argc - 3, argv + 3);
    if (!strcmp(c, "bench") && argc > 2 && !strcmp(argv[2], "threads")) return ct_cli_bench_threads(argc - 3, argv + 3);
    if (!strcmp(c, "bench") && argc > 2 && !strcmp(argv[2], "emulate")) return ct_cli_bench_emulate(argc - 3, argv + 3);
    if (!strcmp(c, "bench") && argc > 2 && !strcmp(argv[2], "summarize")) return ct_cli_summarize(argc - 3, argv + 3);
    if (!strcmp(c, "bench") && argc > 2 && !strcmp(argv[2], "serve")) return ct_cli_bench_serve(argc - 3, argv + 3);
    if (!strcmp(c, "bench") && argc > 2 && !strcmp(argv[2], "clone")) return ct_cli_bench_clone(argc - 3, argv + 3);
    if (!strcmp(c, "bench")) return ct_cli_bench(argc - 2, argv + 2);
    if (!strcmp(c, "make-model")) return cmd_make_model(argc - 2, argv + 2);
    if (!strcmp(c, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(c, "voice")) return ct_cli_voice(argc - 2, argv + 2);
    if (!strcmp(c, "quantize")) return ct_cli_quantize(argc - 2, argv + 2);
    if (!strcmp(c, "export")) return ct_cli_export(argc - 1, argv + 1);
    if (!strcmp(c, "onnx-sanitize")) {
        if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            printf("usage: codectalk onnx-sanitize IN.onnx OUT.onnx\n"
                   "Same as 'codectalk export sanitize IN.onnx -o OUT.onnx'.\n");
            return 0;
        }
        if (argc != 4) {
            fprintf(stderr, "usage: codectalk onnx-sanitize IN.onnx OUT.onnx\n");
            return 2;
        }
        char *av[] = {(char *)"export", (char *)"sanitize", argv[2], (char *)"-o", argv[3], NULL};
        return ct_cli_export(5, av);
    }
    if (!strcmp(c, "serve")) return ct_cli_serve(argc - 2, argv + 2);
    if (!strcmp(c, "wyoming")) return ct_cli_wyoming(argc - 2, argv + 2);
    if (!strcmp(c, "client")) return ct_cli_client(argc - 2, argv + 2);
    if (!strcmp(c, "stats")) return ct_cli_stats(argc - 2, argv + 2);
    if (!strcmp(c, "probe")) return ct_cli_probe(argc - 2, argv + 2);
    if (!strcmp(c, "profile")) return ct_cli_profile(argc - 2, argv + 2);
    if (!strcmp(c, "calibrate")) return ct_cli_calibrate(argc - 2, argv + 2);
    fprintf(stderr, "error: unknown command '%s'\n\n", c);
    usage();
    return 2;
}

/* Every command's stdout is checked once at the end: a full disk or a closed device is an error
   (exit 1, named); a reader that went away (EPIPE: `codectalk ... | head`) is not (quiet). */
int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN); /* a closed pipe is a write error (EPIPE), not a silent death */
    int rc = dispatch(argc, argv);
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    if (bad && errno != EPIPE && rc == 0) {
        fprintf(stderr, "error: writing standard output failed: %s\n",
                errno == ENOSPC ? "no space left on device" : errno ? strerror(errno) : "write error");
        rc = 1;
    }
    return rc;
}
