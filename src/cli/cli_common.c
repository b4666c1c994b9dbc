/* Shared CLI helpers (see cli_common.h). */
#include "cli/cli_common.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "edge/calibrate.h"

/* "Not given" marks: the parser never produces them (floats are finite, ints > INT_MIN), so
   a flag given with any value, even the library's own "default" sentinel, is range-checked. */
#define UNSET_F NAN
#define UNSET_I INT_MIN

void ct_cli_gen_init(ct_cli_gen *a) {
    memset(a, 0, sizeof *a);
    a->ctx = 2048;
    a->temperature = a->top_p = a->rep = a->sub_temperature = a->sub_top_p = UNSET_F;
    a->top_k = a->sub_top_k = a->max_frames = a->max_new_tokens = UNSET_I;
    a->min_new_tokens = 2;
}

static int check_f(const char *flag, float v, double lo, int lo_open, double hi) {
    if (isnan(v) || (v <= hi && (lo_open ? v > lo : v >= lo))) return 0;
    fprintf(stderr, "error: %s must be in %s%g, %g], got %g\n", flag, lo_open ? "(" : "[", lo, hi, (double)v);
    return -1;
}

static int check_i(const char *flag, int v, long lo, long hi) {
    if (v == UNSET_I || (v >= lo && v <= hi)) return 0;
    fprintf(stderr, "error: %s must be in [%ld, %ld], got %d\n", flag, lo, hi, v);
    return -1;
}

/* The same ranges as the server's request fields (src/serve/request.c). */
int ct_cli_gen_check(const ct_cli_gen *a) {
    const long cap = 1L << 20;
    if (check_f("--temperature", a->temperature, 0, 0, 10) || check_f("--top-p", a->top_p, 0, 1, 1) ||
        check_f("--repetition-penalty", a->rep, 0, 1, 10) ||
        check_f("--sub-temperature", a->sub_temperature, 0, 1, 10) ||
        check_f("--sub-top-p", a->sub_top_p, 0, 1, 1) || check_i("--top-k", a->top_k, 0, cap) ||
        check_i("--sub-top-k", a->sub_top_k, 0, cap) || check_i("--max-frames", a->max_frames, 1, cap) ||
        check_i("--max-new-tokens", a->max_new_tokens, 1, cap) ||
        check_i("--min-new-tokens", a->min_new_tokens, 0, cap) || check_i("--threads", a->threads, 0, 256) ||
        check_i("--context", a->ctx, 1, cap))
        return -1;
    if (a->streaming && a->non_streaming) {
        fprintf(stderr, "error: --streaming-text and --non-streaming-text exclude each other\n");
        return -1;
    }
    return 0;
}

int ct_cli_gen_opts(ct_cli_gen *a, ct_opt *o, int cap) {
    const ct_opt all[] = {
        {"model", 'm', CT_OPT_STR, &a->model, "DIR", "model directory (config.json, model.safetensors, ...)"},
        {"text", 't', CT_OPT_STR, &a->text, "TEXT", "text to speak (default: stdin)"},
        {"file", 'f', CT_OPT_STR, &a->file, "FILE", "read the text from FILE ('-' = stdin)"},
        {"speaker", 's', CT_OPT_STR, &a->speaker, "NAME", "CustomVoice speaker (e.g. vivian)"},
        {"language", 'l', CT_OPT_STR, &a->language, "NAME", "language name or 'auto' (default auto)"},
        {"instruct", 'i', CT_OPT_STR, &a->instruct, "TEXT", "voice instruction (VoiceDesign, 1.7B CustomVoice)"},
        {"xvector", 0, CT_OPT_STR, &a->xvec, "FILE", "Base: raw float32 x-vector file (talker hidden values)"},
        {"voice", 0, CT_OPT_STR, &a->voice, "FILE", "Base: a cloned voice file (codectalk voice create)"},
        {"ref-audio", 0, CT_OPT_STR, &a->ref_audio, "CLIP", "Base: clone the voice of this clip (WAV, FLAC, Ogg, MP3; 1-30 s)"},
        {"ref-text", 0, CT_OPT_STR, &a->ref_text, "TEXT", "the transcript of the whole --ref-audio clip (ICL mode)"},
        {"x-vector-only", 0, CT_OPT_FLAG, &a->x_vector_only, NULL, "clone in x-vector-only mode (no reference codes or transcript)"},
        {"seed", 0, CT_OPT_U64, &a->seed, "N", "random seed (default 0); a seed replays exactly"},
        {"greedy", 0, CT_OPT_FLAG, &a->greedy, NULL, "argmax decoding (parity checks; loops on real models)"},
        {"temperature", 0, CT_OPT_FLOAT, &a->temperature, "T", "talker temperature in [0, 10]; 0 = greedy (default: generation_config)"},
        {"top-k", 0, CT_OPT_INT, &a->top_k, "K", "talker top-k in [0, 1048576] (0 disables)"},
        {"top-p", 0, CT_OPT_FLOAT, &a->top_p, "P", "talker top-p in (0, 1]"},
        {"repetition-penalty", 0, CT_OPT_FLOAT, &a->rep, "R", "talker repetition penalty in (0, 10]"},
        {"sub-temperature", 0, CT_OPT_FLOAT, &a->sub_temperature, "T", "code-predictor temperature in (0, 10]"},
        {"sub-top-k", 0, CT_OPT_INT, &a->sub_top_k, "K", "code-predictor top-k in [0, 1048576] (0 disables)"},
        {"sub-top-p", 0, CT_OPT_FLOAT, &a->sub_top_p, "P", "code-predictor top-p in (0, 1]"},
        {"min-new-tokens", 0, CT_OPT_INT, &a->min_new_tokens, "N", "frames before EOS is allowed (default 2)"},
        {"max-frames", 0, CT_OPT_INT, &a->max_frames, "N", "stop after N >= 1 frames (per utterance; default: no cap)"},
        {"max-new-tokens", 0, CT_OPT_INT, &a->max_new_tokens, "N", "reference budget, N >= 1 (N-1 frames; default: generation_config)"},
        {"streaming-text", 0, CT_OPT_FLAG, &a->streaming, NULL, "use the streaming-text prompt layout"},
        {"non-streaming-text", 0, CT_OPT_FLAG, &a->non_streaming, NULL, "use the non-streaming prompt layout"},
        {"threads", 0, CT_OPT_INT, &a->threads, "N", "compute threads (default 0 = all CPUs; synth overlapped: all but one)"},
        {"context", 0, CT_OPT_INT, &a->ctx, "N", "talker KV positions to reserve (default 2048)"},
        {"f32", 0, CT_OPT_FLAG, &a->f32, NULL, "convert weights to f32 at load (reference mode)"},
        {"weights", 0, CT_OPT_STR, &a->weights, "FMT", "bf16 (as stored) | int8 | int4 | mixed, converted at load"},
        {"tokenizer", 0, CT_OPT_STR, &a->tok, "DIR", "tokenizer files directory (default: model dir)"},
        {"quiet", 'q', CT_OPT_FLAG, &a->quiet, NULL, "no progress line or summary"},
    };
    int n = (int)(sizeof all / sizeof *all);
    if (n > cap) n = cap;
    memcpy(o, all, sizeof(ct_opt) * (size_t)n);
    return n;
}

void ct_cli_gen_params(const ct_cli_gen *a, ct_gen_params *g, const char *text, const float *xv,
                       const ct_model *m) {
    *g = ct_gen_params_default();
    g->text = text;
    g->speaker = a->speaker;
    g->language = a->language;
    g->instruct = a->instruct;
    g->xvector = xv;
    g->xvector_len = xv ? ct_model_get_info(m).talker_hidden : 0;
    g->non_streaming = a->streaming ? 0 : a->non_streaming ? 1 : -1;
    g->seed = a->seed;
    g->greedy = a->greedy || a->temperature == 0.0f; /* 0: argmax, as the server reads it */
    g->temperature = isnan(a->temperature) || a->temperature == 0.0f ? -1.0f : a->temperature;
    g->top_k = a->top_k == UNSET_I ? -1 : a->top_k;
    g->top_p = isnan(a->top_p) ? -1.0f : a->top_p;
    g->repetition_penalty = isnan(a->rep) ? -1.0f : a->rep;
    g->sub_temperature = isnan(a->sub_temperature) ? -1.0f : a->sub_temperature;
    g->sub_top_k = a->sub_top_k == UNSET_I ? -1 : a->sub_top_k;
    g->sub_top_p = isnan(a->sub_top_p) ? -1.0f : a->sub_top_p;
    g->min_new_tokens = a->min_new_tokens;
    g->max_frames = a->max_frames == UNSET_I ? 0 : a->max_frames;
    g->max_new_tokens = a->max_new_tokens == UNSET_I ? 0 : a->max_new_tokens;
}

int ct_cli_read_xvector(const ct_cli_gen *a, const ct_model *m, float **out) {
    *out = NULL;
    if (!a->xvec) return 0;
    int n = ct_model_get_info(m).talker_hidden;
    float *xv = malloc((size_t)n * sizeof(float) + sizeof(float));
    FILE *f = xv ? fopen(a->xvec, "rb") : NULL;
    size_t got = f ? fread(xv, sizeof(float), (size_t)n + 1, f) : 0;
    if (f) fclose(f);
    if (!f || got != (size_t)n) {
        fprintf(stderr, "error: --xvector '%s' must hold exactly %d float32 values\n", a->xvec, n);
        free(xv);
        return -1;
    }
    *out = xv;
    return 0;
}

/* Reads f to its end (at most max bytes) into a NUL-terminated buffer; *len gets the byte
   count. NULL on a read error (errno set), over max (errno EFBIG) or out of memory. */
static char *slurp(FILE *f, size_t max, size_t *len) {
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
            errno = EFBIG;
            return NULL;
        }
        if (got < 4096) {
            if (ferror(f)) {
                int e = errno;
                free(b);
                errno = e ? e : EIO;
                return NULL;
            }
            break;
        }
    }
    b[n] = 0;
    *len = n;
    return b;
}

char *ct_cli_get_text(const char *text, const char *file, int strip) {
    char *t = NULL;
    size_t len = 0;
    const char *from = "stdin";
    if (text) {
        t = strdup(text);
        len = t ? strlen(t) : 0;
    } else if (file && strcmp(file, "-") != 0) {
        struct stat sb;
        from = file;
        if (stat(file, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "error: --file '%s' is a directory, not a text file\n", file);
            return NULL;
        }
        FILE *f = fopen(file, "rb");
        if (!f) {
            fprintf(stderr, "error: cannot open text file '%s': %s\n", file, strerror(errno));
            return NULL;
        }
        t = slurp(f, 16u << 20, &len);
        int e = errno;
        fclose(f);
        if (!t) fprintf(stderr, "error: cannot read '%s': %s\n", file, e == EFBIG ? "over 16 MiB" : strerror(e));
    } else {
        if (isatty(0)) fprintf(stderr, "reading text from stdin (end with Ctrl-D)...\n");
        t = slurp(stdin, 16u << 20, &len);
        if (!t) fprintf(stderr, "error: cannot read stdin: %s\n", errno == EFBIG ? "over 16 MiB" : strerror(errno));
    }
    if (t && memchr(t, 0, len)) {
        fprintf(stderr, "error: the text from %s contains a NUL byte (at byte %zu); text must be UTF-8 without NULs\n",
                from, (size_t)((const char *)memchr(t, 0, len) - t));
        free(t);
        return NULL;
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

ct_model *ct_cli_load_model(const char *dir, const char *tok_dir, int f32) {
    return ct_cli_load_model_w(dir, tok_dir, f32, NULL);
}

ct_model *ct_cli_load_model_w(const char *dir, const char *tok_dir, int f32, const char *weights) {
    ct_model_params mp = ct_model_params_default();
    mp.tokenizer_dir = tok_dir;
    mp.f32_weights = f32;
    mp.weights = weights;
    return ct_cli_load_model_p(dir, &mp);
}

ct_model *ct_cli_load_model_p(const char *dir, const ct_model_params *mp) {
    if (!dir) {
        fprintf(stderr, "error: --model DIR is required\n");
        return NULL;
    }
    ct_model *m = NULL;
    char err[1024], root[4096];
    ct_model_params p = mp ? *mp : ct_model_params_default();
    if (!p.cache_dir && ct_cache_root(NULL, root, sizeof root, err, sizeof err) == CT_OK) p.cache_dir = root;
    if (ct_model_load(dir, &p, &m, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return NULL;
    }
    const char *w = ct_model_get_info(m).cache_warning;
    if (w && w[0]) fprintf(stderr, "warning: %s\n", w);
    return m;
}

void ct_cli_gen_over_profile(const ct_cli_gen *a, ct_model_params *mp, ct_engine_params *ep, ct_cli_deploy *cp) {
    if (mp) {
        mp->tokenizer_dir = a->tok;
        if (ct_args_given(&a->f32)) mp->f32_weights = a->f32, ct_cli_deploy_over(cp, "f32", NULL);
        if (ct_args_given(&a->weights)) { /* one format for both: the profile's split no longer applies */
            mp->weights = a->weights;
            mp->talker_weights = mp->predictor_weights = NULL;
            ct_cli_deploy_over(cp, "weights", a->weights);
        }
    }
    if (ep) {
        if (ct_args_given(&a->ctx)) ep->max_context = a->ctx, ct_cli_deploy_over_int(cp, "context", a->ctx);
        if (ct_args_given(&a->threads)) ep->talker_threads = a->threads, ct_cli_deploy_over_int(cp, "threads", a->threads);
    }
}

typedef struct {
    ct_stream *s;
    const char *text;
    double cps;
} feeder;

/* Appends f->text 4 characters at a time at f->cps characters a second, then ends it. */
static void *feed_text(void *arg) {
    feeder *f = arg;
    size_t len = strlen(f->text), i = 0;
    double t0 = ct_now_ms();
    int chars = 0;
    while (i < len) {
        size_t j = i;
        for (int k = 0; k < 4 && j < len; k++) /* whole UTF-8 characters */
            do j++;
            while (j < len && ((unsigned char)f->text[j] & 0xC0) == 0x80);
        if (ct_stream_append_text(f->s, f->text + i, j - i) != CT_OK) return NULL;
        i = j;
        chars += 4;
        double due = t0 + 1e3 * chars / f->cps - ct_now_ms();
        if (i < len && due > 0) {
            struct timespec ts = {(time_t)(due / 1e3), (long)(fmod(due, 1e3) * 1e6)};
            nanosleep(&ts, NULL);
        }
    }
    ct_stream_end_text(f->s);
    return NULL;
}

int ct_cli_run_stream(ct_engine *e, const ct_gen_params *g, const ct_stream_params *sp, const char *what,
                      ct_chunk_rec **chunks, int *n, ct_stream_info *info) {
    return ct_cli_run_stream_fed(e, g, sp, what, 0, chunks, n, info);
}

int ct_cli_run_stream_fed(ct_engine *e, const ct_gen_params *g, const ct_stream_params *sp, const char *what,
                          double text_cps, ct_chunk_rec **chunks, int *n, ct_stream_info *info) {
    char err[1024];
    ct_stream *s = NULL;
    *chunks = NULL;
    *n = 0;
    ct_gen_params gi = *g;
    ct_stream_params spi = *sp;
    if (text_cps > 0) {
        gi.text = NULL;
        spi.text_incremental = 1;
    }
    if (ct_engine_submit(e, &gi, &spi, &s, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s: %s\n", what, err);
        return -1;
    }
    feeder fd = {s, g->text, text_cps};
    pthread_t th;
    int fed = text_cps > 0 && pthread_create(&th, NULL, feed_text, &fd) == 0;
    if (text_cps > 0 && !fed) ct_stream_cancel(s);
    enum { CAP = 8192 };
    float *pcm = malloc(sizeof(float) * CAP);
    int finished = 0, rc = -1;
    while (pcm && !finished) ct_stream_read(s, pcm, CAP, 1000, &finished);
    free(pcm);
    if (fed) pthread_join(th, NULL);
    *info = ct_stream_get_info(s);
    if (!finished || info->state == CT_STREAM_FAILED) {
        fprintf(stderr, "error: %s: %s\n", what, finished ? ct_stream_errmsg(s) : "out of memory");
        goto done;
    }
    int nc = ct_stream_timeline(s, NULL, NULL, 0);
    double *t = malloc(sizeof(double) * (size_t)(nc ? nc : 1));
    int *ns = malloc(sizeof(int) * (size_t)(nc ? nc : 1));
    *chunks = malloc(sizeof(ct_chunk_rec) * (size_t)(nc ? nc : 1));
    if (t && ns && *chunks) {
        nc = ct_stream_timeline(s, t, ns, nc);
        for (int i = 0; i < nc; i++) (*chunks)[i] = (ct_chunk_rec){t[i], ns[i]};
        *n = nc;
        rc = 0;
    } else {
        fprintf(stderr, "error: %s: out of memory\n", what);
        free(*chunks);
        *chunks = NULL;
    }
    free(t);
    free(ns);
done:
    ct_stream_release(s);
    return rc;
}

int ct_cli_out_in_place(const char *out) {
    struct stat sb;
    if (lstat(out, &sb) != 0) return 0; /* a new file (or an error fopen will name) */
    if (S_ISLNK(sb.st_mode) && stat(out, &sb) != 0) return 1; /* dangling: create its target */
    if (S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "error: -o '%s' is a directory; name a file in it (e.g. %s/out.wav)\n", out, out);
        return -1;
    }
    struct stat lsb;
    return lstat(out, &lsb) == 0 && S_ISREG(lsb.st_mode) ? 0 : 1;
}

FILE *ct_cli_open_audio_out(const char *out, int raw, char *tmp_path, size_t cap) {
    tmp_path[0] = 0;
    int in_place = raw ? 1 : ct_cli_out_in_place(out);
    if (in_place < 0) return NULL;
    if (!in_place) {
        snprintf(tmp_path, cap, "%s.partial", out);
        ct_cli_catch_signals(); /* before the partial file exists: an interrupt removes it */
    }
    FILE *f = raw ? stdout : fopen(in_place ? out : tmp_path, "wb");
    if (!f) {
        fprintf(stderr, "error: cannot open '%s' for writing: %s\n", in_place ? out : tmp_path, strerror(errno));
        tmp_path[0] = 0;
        return NULL;
    }
    if (in_place) ct_cli_catch_signals(); /* after the open: an open blocked on a FIFO stays killable */
    if (!raw && in_place && isatty(fileno(f))) {
        fprintf(stderr, "error: refusing to write audio to a terminal ('%s')\n", out);
        fclose(f);
        return NULL;
    }
    return f;
}

int ct_cli_write_error(FILE *f, const char *what, int e, int tty) {
    if (e == EPIPE) {
        if (f) clearerr(f); /* handled here: main's final stdout check stays quiet */
        return 0;
    }
    fprintf(stderr, "%serror: writing '%s' failed: %s\n", tty ? "\n" : "", what,
            e == ENOSPC ? "no space left on device" : strerror(e));
    return 1;
}

volatile sig_atomic_t ct_cli_signal;

static void on_signal(int sig) { ct_cli_signal = sig; }

void ct_cli_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* the engine's threads may take the signal: keep their calls going */
    const int sigs[] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        /* a signal ignored on entry (nohup, a background job) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
    }
}

int ct_cli_exit_signal(int rc) {
    if (!ct_cli_signal) return rc;
    int sig = ct_cli_signal;
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
}

int ct_cli_text_opts(ct_cli_text *t, ct_opt *o, int cap) {
    const ct_opt all[] = {
        {"sentence-pause-ms", 0, CT_OPT_INT, &t->sentence_pause_ms, "MS",
         "silence between sentences, 0-10000 ms (default 0; > 0 makes each sentence its own utterance)"},
        {"paragraph-pause-ms", 0, CT_OPT_INT, &t->paragraph_pause_ms, "MS",
         "silence between paragraphs (a blank line), 0-10000 ms (default 0)"},
        {"normalize", 0, CT_OPT_FLAG, &t->normalize, NULL,
         "read numbers, dates, times, money, units and abbreviations out as words (English, Chinese; default off)"},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0] && n < cap; i++) o[n++] = all[i];
    return n;
}

int ct_cli_text_check(const ct_cli_text *t) {
    const int *v[2] = {&t->sentence_pause_ms, &t->paragraph_pause_ms};
    const char *name[2] = {"--sentence-pause-ms", "--paragraph-pause-ms"};
    for (int i = 0; i < 2; i++)
        if (*v[i] < 0 || *v[i] > 10000) {
            fprintf(stderr, "error: %s %d is outside [0, 10000]\n", name[i], *v[i]);
            return -1;
        }
    return 0;
}

void ct_cli_text_apply(const ct_cli_text *t, ct_stream_params *sp) {
    if (ct_args_given(&t->sentence_pause_ms)) sp->sentence_pause_ms = t->sentence_pause_ms;
    if (ct_args_given(&t->paragraph_pause_ms)) sp->paragraph_pause_ms = t->paragraph_pause_ms;
    if (ct_args_given(&t->normalize)) sp->normalize = t->normalize;
}
