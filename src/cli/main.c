/* codectalk command-line tool: tokenize, codes, make-model, info. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cmd_edge.h"
#include "codectalk.h"
#include "model/make_model.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads all of f into a NUL-terminated buffer (caller frees); NULL on error. */
static char *slurp(FILE *f, size_t max) {
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    if (!b) return NULL;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap *= 2;
            char *nb = realloc(b, cap);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
        }
        size_t got = fread(b + n, 1, 4096, f);
        n += got;
        if (n > max) {
            free(b);
            return NULL;
        }
        if (got < 4096) break;
    }
    b[n] = 0;
    return b;
}

/* Text from --text, --file, or stdin; trailing whitespace is stripped for the prompt. */
static char *get_text(const char *text, const char *file, int strip) {
    char *t = NULL;
    if (text) {
        t = strdup(text);
    } else if (file && strcmp(file, "-") != 0) {
        FILE *f = fopen(file, "rb");
        if (!f) {
            fprintf(stderr, "error: cannot open text file '%s'\n", file);
            return NULL;
        }
        t = slurp(f, 16u << 20);
        fclose(f);
        if (!t) fprintf(stderr, "error: cannot read '%s' (over 16 MiB?)\n", file);
    } else {
        if (isatty(0)) fprintf(stderr, "reading text from stdin (end with Ctrl-D)...\n");
        t = slurp(stdin, 16u << 20);
        if (!t) fprintf(stderr, "error: cannot read stdin\n");
    }
    if (t && strip) {
        size_t n = strlen(t);
        while (n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
            t[--n] = 0;
        size_t lead = strspn(t, " \t\r\n");
        if (lead) memmove(t, t + lead, n - lead + 1);
    }
    return t;
}

static ct_model *load_model(const char *dir, const char *tok_dir, int f32) {
    if (!dir) {
        fprintf(stderr, "error: --model DIR is required\n");
        return NULL;
    }
    ct_model_params mp = ct_model_params_default();
    mp.tokenizer_dir = tok_dir;
    mp.f32_weights = f32;
    ct_model *m = NULL;
    char err[1024];
    ct_status st = ct_model_load(dir, &mp, &m, err, sizeof err);
    if (st != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return NULL;
    }
    return m;
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
    ct_model *m = load_model(model, tok, 0);
    if (!m) return 1;
    char *t = get_text(text, file, 0);
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

typedef struct {
    const char *model, *text, *file, *speaker, *language, *instruct, *out, *format, *tok, *xvec;
    uint64_t seed;
    int greedy, max_frames, max_new_tokens, streaming, non_streaming, f32, ctx, top_k, sub_top_k,
        min_new_tokens, quiet, threads;
    float temperature, top_p, rep, sub_temperature, sub_top_p;
} codes_args;

static int read_xvector(const char *path, int n, float *dst) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t got = fread(dst, sizeof(float), (size_t)n + 1, f);
    fclose(f);
    return got == (size_t)n ? 0 : -2;
}

static int cmd_codes(int argc, char **argv) {
    codes_args a;
    memset(&a, 0, sizeof a);
    a.max_frames = 0;
    a.ctx = 2048;
    a.temperature = a.top_p = a.rep = a.sub_temperature = a.sub_top_p = -1.0f;
    a.top_k = a.sub_top_k = -1;
    a.min_new_tokens = 2;
    a.format = "json";
    ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &a.model, "DIR", "model directory (config.json, model.safetensors, ...)"},
        {"text", 't', CT_OPT_STR, &a.text, "TEXT", "text to speak (default: stdin)"},
        {"file", 'f', CT_OPT_STR, &a.file, "FILE", "read the text from FILE ('-' = stdin)"},
        {"speaker", 's', CT_OPT_STR, &a.speaker, "NAME", "CustomVoice speaker (e.g. vivian)"},
        {"language", 'l', CT_OPT_STR, &a.language, "NAME", "language name or 'auto' (default auto)"},
        {"instruct", 'i', CT_OPT_STR, &a.instruct, "TEXT", "voice instruction (VoiceDesign, 1.7B CustomVoice)"},
        {"xvector", 0, CT_OPT_STR, &a.xvec, "FILE", "Base: raw float32 x-vector file (talker hidden values)"},
        {"seed", 0, CT_OPT_U64, &a.seed, "N", "random seed (default 0); a seed replays exactly"},
        {"greedy", 0, CT_OPT_FLAG, &a.greedy, NULL, "argmax decoding (parity checks; loops on real models)"},
        {"temperature", 0, CT_OPT_FLOAT, &a.temperature, "T", "talker temperature (default: generation_config)"},
        {"top-k", 0, CT_OPT_INT, &a.top_k, "K", "talker top-k (0 disables)"},
        {"top-p", 0, CT_OPT_FLOAT, &a.top_p, "P", "talker top-p"},
        {"repetition-penalty", 0, CT_OPT_FLOAT, &a.rep, "R", "talker repetition penalty"},
        {"sub-temperature", 0, CT_OPT_FLOAT, &a.sub_temperature, "T", "code-predictor temperature"},
        {"sub-top-k", 0, CT_OPT_INT, &a.sub_top_k, "K", "code-predictor top-k"},
        {"sub-top-p", 0, CT_OPT_FLOAT, &a.sub_top_p, "P", "code-predictor top-p"},
        {"min-new-tokens", 0, CT_OPT_INT, &a.min_new_tokens, "N", "frames before EOS is allowed (default 2)"},
        {"max-frames", 0, CT_OPT_INT, &a.max_frames, "N", "stop after N frames"},
        {"max-new-tokens", 0, CT_OPT_INT, &a.max_new_tokens, "N", "reference budget (N-1 frames; default: generation_config)"},
        {"streaming-text", 0, CT_OPT_FLAG, &a.streaming, NULL, "use the streaming-text prompt layout"},
        {"non-streaming-text", 0, CT_OPT_FLAG, &a.non_streaming, NULL, "use the non-streaming prompt layout"},
        {"threads", 0, CT_OPT_INT, &a.threads, "N", "compute threads (default 0 = all CPUs)"},
        {"context", 0, CT_OPT_INT, &a.ctx, "N", "talker KV positions to reserve (default 2048)"},
        {"f32", 0, CT_OPT_FLAG, &a.f32, NULL, "convert weights to f32 at load (reference mode)"},
        {"tokenizer", 0, CT_OPT_STR, &a.tok, "DIR", "tokenizer files directory (default: model dir)"},
        {"format", 0, CT_OPT_STR, &a.format, "json|bin", "output format; bin = int32 LE [frames][16]"},
        {"output", 'o', CT_OPT_STR, &a.out, "FILE", "write frames to FILE (default: stdout)"},
        {"quiet", 'q', CT_OPT_FLAG, &a.quiet, NULL, "no progress line or summary"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk codes -m DIR [--text TEXT | -f FILE] [options]\n"
                          "Generates codec frames (16 codes per 80 ms) and prints them as JSON.");
    if (r) return r < 0 ? 2 : 0;
    int bin = strcmp(a.format, "bin") == 0;
    if (!bin && strcmp(a.format, "json") != 0) {
        fprintf(stderr, "error: --format must be json or bin, got '%s'\n", a.format);
        return 2;
    }
    if (a.streaming && a.non_streaming) {
        fprintf(stderr, "error: --streaming-text and --non-streaming-text exclude each other\n");
        return 2;
    }
    if (bin && !a.out && isatty(1)) {
        fprintf(stderr, "error: refusing to write binary frames to a terminal; use -o FILE\n");
        return 2;
    }
    ct_model *m = load_model(a.model, a.tok, a.f32);
    if (!m) return 1;
    ct_model_info info = ct_model_get_info(m);
    char *text = get_text(a.text, a.file, 1);
    float *xv = NULL;
    int rc = 1;
    ct_session *s = NULL;
    FILE *out = NULL;
    int32_t *frames = NULL;
    if (!text) goto done;
    if (a.xvec) {
        xv = malloc((size_t)info.talker_hidden * sizeof(float));
        if (!xv || read_xvector(a.xvec, info.talker_hidden, xv) != 0) {
            fprintf(stderr, "error: --xvector '%s' must hold exactly %d float32 values\n", a.xvec,
                    info.talker_hidden);
            goto done;
        }
    }
    ct_session_params sp = ct_session_params_default();
    sp.max_context = a.ctx;
    sp.n_threads = a.threads;
    char err[1024];
    if (ct_session_create(m, &sp, &s, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    ct_gen_params g = ct_gen_params_default();
    g.text = text;
    g.speaker = a.speaker;
    g.language = a.language;
    g.instruct = a.instruct;
    g.xvector = xv;
    g.xvector_len = xv ? info.talker_hidden : 0;
    g.non_streaming = a.streaming ? 0 : a.non_streaming ? 1 : -1;
    g.seed = a.seed;
    g.greedy = a.greedy;
    g.temperature = a.temperature;
    g.top_k = a.top_k;
    g.top_p = a.top_p;
    g.repetition_penalty = a.rep;
    g.sub_temperature = a.sub_temperature;
    g.sub_top_k = a.sub_top_k;
    g.sub_top_p = a.sub_top_p;
    g.min_new_tokens = a.min_new_tokens;
    g.max_frames = a.max_frames;
    g.max_new_tokens = a.max_new_tokens;
    double t0 = now_s();
    if (ct_session_start(s, &g) != CT_OK) {
        fprintf(stderr, "error: %s\n", ct_session_errmsg(s));
        goto done;
    }
    double t_prefill = now_s() - t0;
    ct_run_info ri = ct_session_run_info(s);
    int G = info.n_groups;
    frames = malloc((size_t)ri.frame_limit * G * sizeof(int32_t));
    if (!frames) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    int nf = 0, tty = isatty(2) && !a.quiet;
    for (;;) {
        int got = 0;
        if (ct_session_next_frame(s, frames + (size_t)nf * G, &got) != CT_OK) {
            fprintf(stderr, "\nerror: %s\n", ct_session_errmsg(s));
            goto done;
        }
        if (!got) break;
        nf++;
        if (tty)
            fprintf(stderr, "\rframe %d/%d  %.2f s audio  %.1f s elapsed", nf, ri.frame_limit,
                    nf * 0.08, now_s() - t0);
    }
    double wall = now_s() - t0;
    if (tty) fputc('\n', stderr);
    out = a.out && strcmp(a.out, "-") != 0 ? fopen(a.out, bin ? "wb" : "w") : stdout;
    if (!out) {
        fprintf(stderr, "error: cannot open '%s' for writing\n", a.out);
        goto done;
    }
    if (bin) {
        if (fwrite(frames, sizeof(int32_t) * G, (size_t)nf, out) != (size_t)nf) goto write_fail;
    } else {
        fprintf(out, "{\"frames\": [");
        for (int f = 0; f < nf; f++) {
            fprintf(out, f ? ",\n  [" : "\n  [");
            for (int j = 0; j < G; j++) fprintf(out, j ? ", %d" : "%d", frames[(size_t)f * G + j]);
            fputc(']', out);
        }
        fprintf(out, "],\n \"n_frames\": %d, \"stop\": \"%s\", \"prompt_len\": %d, "
                "\"text_tokens\": %d, \"seed\": %llu}\n", nf,
                ct_stop_reason_str(ct_session_stop_reason(s)), ri.prompt_len, ri.text_tokens,
                (unsigned long long)a.seed);
    }
    if (out != stdout ? fclose(out) != 0 : fflush(out) != 0) {
        out = NULL;
        goto write_fail;
    }
    out = NULL;
    if (!a.quiet)
        fprintf(stderr, "%d frames (%.2f s of audio), stop: %s, prefill %.3f s, %.1f ms/frame, "
                "wall %.2f s\n", nf, nf * 0.08, ct_stop_reason_str(ct_session_stop_reason(s)),
                t_prefill, nf ? (wall - t_prefill) * 1e3 / nf : 0.0, wall);
    rc = 0;
    goto done;
write_fail:
    fprintf(stderr, "error: writing frames failed (disk full?)\n");
done:
    if (out && out != stdout) fclose(out);
    free(frames);
    free(xv);
    free(text);
    ct_session_free(s);
    ct_model_free(m);
    return rc;
}

/* ---- make-model --------------------------------------------------------------------- */

static void mm_progress(void *ud, uint64_t done, uint64_t total) {
    (void)ud;
    if (isatty(2) && total)
        fprintf(stderr, "\rwriting %.0f%% (%llu / %llu MiB)", 100.0 * (double)done / (double)total,
                (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
}

static int cmd_make_model(int argc, char **argv) {
    const char *preset = NULL, *out = NULL, *tok = NULL;
    uint64_t seed = 0;
    int force = 0;
    ct_opt opts[] = {
        {"preset", 'p', CT_OPT_STR, &preset, "NAME", "tiny, 0.6b-customvoice, 0.6b-base, "
                                                     "1.7b-customvoice, 1.7b-base, 1.7b-voicedesign"},
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
    const char *model = NULL, *tok = NULL;
    ct_opt opts[] = {{"model", 'm', CT_OPT_STR, &model, "DIR", "model directory"},
                     {"tokenizer", 0, CT_OPT_STR, &tok, "DIR", "tokenizer files directory"},
                     {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk info -m DIR\n"
                                            "Loads and validates a model and prints what it is.");
    if (r) return r < 0 ? 2 : 0;
    ct_model *m = load_model(model, tok, 0);
    if (!m) return 1;
    ct_model_info i = ct_model_get_info(m);
    printf("kind: %s\nsize: %s\ntalker: %d layers, hidden %d\ncode predictor: %d layers, hidden %d\n"
           "codes per frame: %d (codebook %d)\nweights: %.1f MiB\nspeakers:",
           i.kind, i.size_tag, i.talker_layers, i.talker_hidden, i.pred_layers, i.pred_hidden,
           i.n_groups, i.codebook_size, (double)i.weight_bytes / 1048576.0);
    for (int k = 0; k < i.n_speakers; k++) printf(" %s", ct_model_speaker(m, k));
    printf("\nlanguages: auto");
    for (int k = 0; k < i.n_languages; k++) printf(" %s", ct_model_language(m, k));
    printf("\n");
    ct_model_free(m);
    return 0;
}

static void usage(void) {
    printf("codectalk %s: Qwen3-TTS in plain C\n\n"
           "usage: codectalk COMMAND [options]   (COMMAND --help for its options)\n\n"
           "commands:\n"
           "  codes        text -> codec frames (16 codes per 80 ms frame)\n"
           "  tokenize     text -> Qwen2 BPE token ids (JSON)\n"
           "  make-model   write a random-weight model in the published layout\n"
           "  info         load, validate and describe a model directory\n"
           "  probe        describe this machine (ISA, cores, clusters, memory, accelerators)\n"
           "  profile      materialise the layered deploy profile (--auto --explain)\n"
           "  calibrate    derive chunk schedules from measured chunk arrivals\n",
           ct_version());
}

int main(int argc, char **argv) {
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
    if (!strcmp(c, "make-model")) return cmd_make_model(argc - 2, argv + 2);
    if (!strcmp(c, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(c, "probe")) return ct_cli_probe(argc - 2, argv + 2);
    if (!strcmp(c, "profile")) return ct_cli_profile(argc - 2, argv + 2);
    if (!strcmp(c, "calibrate")) return ct_cli_calibrate(argc - 2, argv + 2);
    fprintf(stderr, "error: unknown command '%s'\n\n", c);
    usage();
    return 2;
}
