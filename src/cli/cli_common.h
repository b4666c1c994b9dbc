/* Shared CLI pieces: text input, model loading, and the generation flags common to `codes`,
   `synth`, `client` and the benchmarks; one engine request read to its end; the -o output
   file rules and signal handling of `synth` and `client`. */
#ifndef CT_CLI_COMMON_H
#define CT_CLI_COMMON_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/args.h"
#include "cli/cli_profile.h"
#include "codectalk.h"
#include "stream/chunk.h" /* ct_chunk_rec */

typedef struct {
    const char *model, *text, *file, *speaker, *language, *instruct, *tok, *xvec, *weights;
    const char *voice;     /* --voice FILE (a voice file) */
    const char *ref_audio, *ref_text; /* --ref-audio CLIP, --ref-text TEXT: clone from a clip */
    uint64_t seed;
    int x_vector_only; /* --x-vector-only: an ICL voice used in x-vector-only mode */
    int greedy, max_frames, max_new_tokens, streaming, non_streaming, f32, ctx, top_k, sub_top_k,
        min_new_tokens, quiet, threads;
    float temperature, top_p, rep, sub_temperature, sub_top_p;
} ct_cli_gen;

void ct_cli_gen_init(ct_cli_gen *a);
/* Range-checks the generation flags that were given (the server's ranges); prints an error
   naming the flag and returns -1 (a usage error: exit 2), else 0. */
int ct_cli_gen_check(const ct_cli_gen *a);
/* Writes the generation options into opts (at most cap entries, no terminator); returns count. */
int ct_cli_gen_opts(ct_cli_gen *a, ct_opt *opts, int cap);
/* Fills g from the parsed flags for text (xv may be NULL). */
void ct_cli_gen_params(const ct_cli_gen *a, ct_gen_params *g, const char *text, const float *xv,
                       const ct_model *m);
/* Reads --xvector into a malloc'd buffer (*out stays NULL when not given); prints errors. */
int ct_cli_read_xvector(const ct_cli_gen *a, const ct_model *m, float **out);

/* The cloned voice of the flags (cli_voice.c): --voice FILE loaded and checked against m, or
   one made from --ref-audio (+ --ref-text) with the encoders of the model in a->model (warnings
   printed unless a->quiet), or *out NULL when no voice flag was given. Prints errors; returns
   0, 1 (a failure: exit 1) or 2 (flags that do not go together: exit 2). */
int ct_cli_voice_get(const ct_cli_gen *a, const ct_model *m, ct_voice **out);
/* Points g at v (NULL: nothing) in the mode the flags ask for (--x-vector-only). */
void ct_cli_voice_apply(const ct_cli_gen *a, const ct_voice *v, ct_gen_params *g);
/* `codectalk voice create|info` */
int ct_cli_voice(int argc, char **argv);

/* Text from --text, --file, or stdin (malloc'd); strip trims surrounding whitespace. NULL (error
   printed) when it cannot be read, is a directory, or holds a NUL byte. */
char *ct_cli_get_text(const char *text, const char *file, int strip);
/* Loads a model (weights: NULL/"bf16"/"int8"/"int4"/"mixed") or prints the error and
   returns NULL. */
ct_model *ct_cli_load_model_w(const char *dir, const char *tok_dir, int f32, const char *weights);
ct_model *ct_cli_load_model(const char *dir, const char *tok_dir, int f32);
/* The same with full params. Unless mp->cache_dir is set, weights converted at load are cached
   under the cache root ($XDG_CACHE_HOME/codectalk, else ~/.cache/codectalk: <root>/weights/);
   a cache warning is printed to stderr. */
ct_model *ct_cli_load_model_p(const char *dir, const ct_model_params *mp);
/* The model and engine flags of the generation table that were given (--tokenizer always;
   --f32, --weights, --context, --threads when given, whatever their value) over what the deploy
   profile set in mp / ep (either may be NULL). */
/* How synth and serve read text (docs/TEXT.md): the pauses between utterances, the normaliser. */
typedef struct {
    int sentence_pause_ms, paragraph_pause_ms, normalize;
} ct_cli_text;

/* Writes the text flags into opts (at most cap entries, no terminator); returns the count. */
int ct_cli_text_opts(ct_cli_text *t, ct_opt *opts, int cap);
/* Range-checks them; prints an error naming the flag and returns -1 (exit 2), else 0. */
int ct_cli_text_check(const ct_cli_text *t);
/* The flags given, over sp (the profile's or the defaults). */
void ct_cli_text_apply(const ct_cli_text *t, ct_stream_params *sp);

/* The generation flags given (--weights, --f32, --context, --threads) over the profile's mp and ep;
   each is noted in cp's line (ct_cli_deploy_over; NULL cp: not noted). */
void ct_cli_gen_over_profile(const ct_cli_gen *a, ct_model_params *mp, ct_engine_params *ep, ct_cli_deploy *cp);

/* Submits one request to e, reads it to its end (discarding the audio), and returns its chunk
   timeline in *chunks (malloc'd, *n entries) and its facts in *info. Prints errors ("error:
   <what>: ...") and returns -1 when the request could not be submitted or failed. */
int ct_cli_run_stream(ct_engine *e, const ct_gen_params *g, const ct_stream_params *sp, const char *what,
                      ct_chunk_rec **chunks, int *n, ct_stream_info *info);
/* The same with g->text arriving as incremental text (ct_stream_params.text_incremental): the
   first 4 characters at submission, then 4 more every 4 / text_cps seconds, then the end. */
int ct_cli_run_stream_fed(ct_engine *e, const ct_gen_params *g, const ct_stream_params *sp, const char *what,
                          double text_cps, ct_chunk_rec **chunks, int *n, ct_stream_info *info);

/* Output files (synth, client). How -o PATH is written: a regular file (or a new path) is
   written to PATH.partial and renamed over PATH when complete, so a failed or interrupted run
   leaves no half file; anything else (/dev/null, /dev/stdout, a FIFO, a device, a symlink:
   written through to its target) is opened in place and never replaced. Returns 1 for in place,
   0 for partial-then-rename, -1 (error printed) for a directory. */
int ct_cli_out_in_place(const char *out);
/* Opens the audio output by that rule: stdout when raw; else FILE.partial (its path written to
   tmp_path[cap]) or FILE in place; catches SIGINT/SIGTERM around the open (ct_cli_catch_signals:
   before a partial file exists, after an in-place open so a FIFO open stays killable); refuses a
   terminal. NULL with the error printed (and tmp_path "") on failure; the caller closes the file
   and removes tmp_path unless it renamed it. */
FILE *ct_cli_open_audio_out(const char *out, int raw, char *tmp_path, size_t cap);
/* A write error of what (errno e): the reader of a pipe going away (EPIPE) is not an error
   (returns 0, nothing printed: `synth -o - | head -c 100` stops quietly; f's error flag is
   cleared); anything else is named (returns 1). tty: start on a new line (after a progress bar). */
int ct_cli_write_error(FILE *f, const char *what, int e, int tty);
/* Ctrl-C / SIGTERM: ct_cli_catch_signals installs a handler that only records the signal in
   ct_cli_signal (a signal ignored on entry stays ignored); the command's loop sees it, cancels
   and cleans up (removes its partial file), then returns ct_cli_exit_signal(rc), which
   re-raises the signal (so the shell sees 130 / 143) or returns rc when none came. */
extern volatile sig_atomic_t ct_cli_signal;
void ct_cli_catch_signals(void);
int ct_cli_exit_signal(int rc);

int ct_cli_synth(int argc, char **argv);
int ct_cli_client(int argc, char **argv);
int ct_cli_quantize(int argc, char **argv);
int ct_cli_bench(int argc, char **argv);
int ct_cli_bench_stream(int argc, char **argv);
int ct_cli_bench_threads(int argc, char **argv);
int ct_cli_bench_emulate(int argc, char **argv);
int ct_cli_bench_clone(int argc, char **argv);

#endif
