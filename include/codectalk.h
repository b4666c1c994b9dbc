/* codectalk public API: load a Qwen3-TTS checkpoint once (immutable, shareable), then run
   per-request sessions that turn text into 12.5 Hz codec frames (16 codes per 80 ms). */
#ifndef CODECTALK_H
#define CODECTALK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------------------- */

typedef enum {
    CT_OK = 0,
    CT_ERR_INVALID_ARG = -1, /* caller passed something unusable */
    CT_ERR_NOMEM = -2,       /* allocation failed */
    CT_ERR_IO = -3,          /* open/read/write/mmap failed */
    CT_ERR_FORMAT = -4,      /* file content is malformed or inconsistent */
    CT_ERR_UNSUPPORTED = -5, /* valid but not handled (dtype, variant) */
    CT_ERR_STATE = -6,       /* call made in the wrong state */
    CT_ERR_ABORTED = -7,     /* cancelled by the caller */
    CT_ERR_INTERNAL = -8,    /* a bug: an invariant broke */
    CT_ERR_LIMIT = -9        /* input exceeds a configured or model limit */
} ct_status;
/* Static English description of a status; never NULL. */
const char *ct_status_str(ct_status st);

/* Library version string, e.g. "0.1.0". */
const char *ct_version(void);

/* ---- model -------------------------------------------------------------------------- */

/* Immutable after load; may be shared by any number of sessions on any threads. */
typedef struct ct_model ct_model;

typedef struct {
    size_t size;               /* sizeof(ct_model_params), set by the default */
    const char *tokenizer_dir; /* NULL: the model directory holds vocab.json etc. */
    int f32_weights;           /* 1: convert every weight to f32 at load (reference mode) */
    const char *weights;       /* transformer weight format, converted at load: NULL/"bf16" =
                                  as stored, "int8" (per-row scales), "int4" (group-32
                                  scales; lm heads int8), "mixed" (talker int8, predictor
                                  attention int8 + MLP int4); embeddings and norms stay as
                                  stored. Ignored when f32_weights is set. */
} ct_model_params;

ct_model_params ct_model_params_default(void);

/* Loads dir (config.json, generation_config.json, model.safetensors, tokenizer files).
   Every tensor the config implies is checked by name, shape and dtype. On failure returns
   the status and writes a message naming what is wrong into err[errcap]. */
ct_status ct_model_load(const char *dir, const ct_model_params *params, ct_model **out,
                        char *err, size_t errcap);

/* Frees the model; NULL is fine. All sessions must be freed first. */
void ct_model_free(ct_model *m);

typedef struct {
    const char *kind;       /* "custom_voice", "base", "voice_design" */
    const char *size_tag;   /* "0b6", "1b7", or what config.json says */
    int talker_hidden, talker_layers, pred_hidden, pred_layers;
    int n_groups;           /* codes per frame (16) */
    int codebook_size;      /* 2048 */
    int n_speakers, n_languages;
    uint64_t weight_bytes;  /* bytes of talker + predictor weights used */
} ct_model_info;

ct_model_info ct_model_get_info(const ct_model *m);

/* Name of speaker / language i (lower case), or NULL when out of range. */
const char *ct_model_speaker(const ct_model *m, int i);
const char *ct_model_language(const ct_model *m, int i);

/* Tokenizes UTF-8 text with the model's Qwen2 BPE. *n_out receives the full count; if it
   exceeds cap, CT_ERR_LIMIT is returned. Invalid UTF-8 is CT_ERR_INVALID_ARG. */
ct_status ct_tokenize(const ct_model *m, const char *text, size_t len, int32_t *ids,
                      size_t cap, size_t *n_out, char *err, size_t errcap);

/* ---- sessions ----------------------------------------------------------------------- */

/* Per-request state (KV caches, scratch, RNG). One thread at a time. */
typedef struct ct_session ct_session;

typedef struct {
    size_t size;
    int max_context; /* talker KV positions reserved up front (prompt + frames); default 2048 */
    int n_threads;   /* compute threads (the caller's thread is one of them); 0 = all online CPUs;
                        default 1. Results do not depend on this number. */
    const int *cpus; /* optional CPU ids to pin thread i to cpus[i % n_cpus] (borrowed) */
    int n_cpus;
} ct_session_params;

ct_session_params ct_session_params_default(void);

/* Reserves the whole working set (KV caches, scratch) now; nothing is allocated later. */
ct_status ct_session_create(const ct_model *m, const ct_session_params *p, ct_session **out,
                            char *err, size_t errcap);
void ct_session_free(ct_session *s);

/* Last error message of this session ("" when none). Borrowed until the next call. */
const char *ct_session_errmsg(const ct_session *s);

typedef struct {
    size_t size;
    const char *text;      /* required, UTF-8 */
    const char *speaker;   /* CustomVoice: required, case-insensitive */
    const char *language;  /* NULL or "auto" = no language id; else a name of the model */
    const char *instruct;  /* VoiceDesign (required) and 1.7B CustomVoice; NULL otherwise */
    const float *xvector;  /* Base: optional speaker x-vector [xvector_len] */
    int xvector_len;       /* must equal the talker hidden size when xvector is set */
    int non_streaming;     /* 1: whole text in the prefill; 0: streaming-text layout;
                              -1: the reference default for the model kind */
    uint64_t seed;
    int greedy;            /* 1: argmax for talker and sub-talker (parity/debug only) */
    /* Sampling; negative values (or 0 for top_k = -1) mean "from generation_config.json". */
    float temperature, top_p, repetition_penalty;
    int top_k;
    float sub_temperature, sub_top_p;
    int sub_top_k;
    int min_new_tokens;    /* EOS masked until this many codes; default 2 */
    int max_new_tokens;    /* reference semantics: at most max_new_tokens-1 frames; <= 0: config */
    int max_frames;        /* hard cap on frames; <= 0: none */
    /* Runaway guard: frames <= budget_base + budget_per_token * text_tokens. */
    int budget_base;       /* default 50 frames */
    float budget_per_token; /* default 12 frames per text token */
} ct_gen_params;

ct_gen_params ct_gen_params_default(void);

typedef enum {
    CT_STOP_NONE = 0,       /* still running */
    CT_STOP_EOS = 1,        /* the talker emitted EOS */
    CT_STOP_MAX_FRAMES = 2, /* max_frames / max_new_tokens reached */
    CT_STOP_BUDGET = 3,     /* text-length budget or context capacity reached */
    CT_STOP_ABORTED = 4
} ct_stop_reason;

const char *ct_stop_reason_str(ct_stop_reason r);

/* Validates the request, builds the prompt and runs the prefill. Resets any previous run. */
ct_status ct_session_start(ct_session *s, const ct_gen_params *g);

/* Produces the next frame: codes[n_groups] (codebook 0 first, each in [0, 2048)).
   *got = 1 when a frame was written, 0 when generation has finished (see stop reason). */
ct_status ct_session_next_frame(ct_session *s, int32_t *codes, int *got);

ct_stop_reason ct_session_stop_reason(const ct_session *s);

/* Facts about the current run. */
typedef struct {
    int prompt_len;      /* prefill positions */
    int text_tokens;     /* N */
    int frames;          /* frames produced so far */
    int frame_limit;     /* effective cap from max_frames/max_new_tokens/budget/context */
} ct_run_info;

ct_run_info ct_session_run_info(const ct_session *s);

/* ---- batched decode ----------------------------------------------------------------- */

/* Advances several sessions together: one weight pass per layer for all of them. */
typedef struct ct_batch ct_batch;

/* Reserves scratch for up to max_streams sessions whose max_context is at most max_context,
   and a pool of n_threads compute threads. */
ct_status ct_batch_create(const ct_model *m, int max_streams, int max_context, int n_threads,
                          ct_batch **out, char *err, size_t errcap);
void ct_batch_free(ct_batch *b);

/* Produces the next frame of every running session in sessions[n] (started with
   ct_session_start; finished or NULL entries are skipped): codes[i*n_groups..] and got[i] = 1
   when session i produced a frame. A session's codes are identical to what
   ct_session_next_frame would give it alone. The sessions must not be used elsewhere during
   the call. CT_ERR_INVALID_ARG for a session of another model, with a larger max_context, or
   more running sessions than max_streams. */
ct_status ct_batch_step(ct_batch *b, ct_session *const *sessions, int n, int32_t *codes, int *got);

/* ---- codec decoder ------------------------------------------------------------------ */

/* The codec decoder (speech_tokenizer/ of a model directory); immutable, shareable. */
typedef struct ct_codec ct_codec;

/* Loads model_dir/speech_tokenizer/{config.json, model.safetensors}. */
ct_status ct_codec_load(const char *model_dir, ct_codec **out, char *err, size_t errcap);
void ct_codec_free(ct_codec *c);
int ct_codec_samples_per_frame(const ct_codec *c); /* 1920 */
int ct_codec_sample_rate(const ct_codec *c);       /* 24000 */

/* ---- streaming synthesis (stage threads) -------------------------------------------- */

/* A streaming synthesiser: stage 0 (talker + code predictor) and stage 1 (codec decoder) run
   on their own threads, joined by a bounded frame queue ("overlapped"), or one after the other
   on one thread and its pool ("serial"); PCM reaches a callback in chunks chosen by a schedule.
   One request at a time per object; create one per concurrent stream. */
typedef struct ct_synth ct_synth;

/* How the two stages share the CPUs (ct_synth_params.scheduling; docs/STREAMING.md 4). The
   audio is bit-identical in both modes. */
typedef enum {
    CT_SCHEDULING_OVERLAPPED = 0, /* stage 0 (talker_threads) and stage 1 (codec_threads) run
                                     concurrently on their own threads (default) */
    CT_SCHEDULING_SERIAL = 1,     /* one thread and its pool of talker_threads runs the talker
                                     and predictor for a frame, then decodes a due chunk there;
                                     codec_threads and codec_cpus are not used */
    CT_SCHEDULING_AUTO = 2        /* serial when the CPUs to use (the process's CPU set, or the
                                     union of talker_cpus and codec_cpus when both are given)
                                     number 2 or fewer: the pool then takes talker_threads (0 =
                                     all) + codec_threads threads, at most one per CPU, pinned
                                     to both lists; overlapped otherwise, and when only one
                                     stage is pinned */
} ct_scheduling;

/* "overlapped", "serial", "auto"; "?" for anything else. */
const char *ct_scheduling_str(int mode);
/* Parses one of the names above into *mode; CT_ERR_INVALID_ARG for anything else. */
ct_status ct_scheduling_parse(const char *name, int *mode);

typedef struct {
    size_t size;
    int max_context;         /* talker KV positions (default 2048) */
    int talker_threads;      /* stage-0 compute threads (default 1) */
    const int *talker_cpus;  /* optional pinning for stage 0 (borrowed until create returns) */
    int n_talker_cpus;
    int codec_threads;       /* stage-1 threads (default 1) */
    const int *codec_cpus;   /* optional pinning for stage 1 */
    int n_codec_cpus;
    int queue_frames;        /* frame queue capacity (default 64); a full queue blocks stage 0 */
    const char *schedule;    /* "exact" (default), "fixed:F,S", "ramp:2,4,8,16,25", "dynamic",
                                "adaptive" (see docs/STREAMING.md) */
    int windowed;            /* 1: stateless windowed decode with left context (the exportable
                                form); 0: exact stateful decoder (default) */
    int context_frames;      /* windowed left context (default 72) */
    int max_chunk_frames;    /* largest chunk any schedule may ask for (default 64) */
    int scheduling;          /* ct_scheduling: overlapped (default), serial or auto */
} ct_synth_params;

ct_synth_params ct_synth_params_default(void);

/* PCM sink, called on the stage-1 thread (serial: the one stage thread): n samples (mono f32 at the codec rate) of chunk
   `index`. Return 0 to continue, non-zero to cancel the request. A slow sink blocks stage 1,
   which back-pressures stage 0 through the queue: audio is never dropped or reordered. */
typedef int (*ct_pcm_sink)(void *ud, const float *pcm, int n, int index);

ct_status ct_synth_create(const ct_model *m, const ct_codec *c, const ct_synth_params *p,
                          ct_synth **out, char *err, size_t errcap);
void ct_synth_free(ct_synth *s);

/* Runs one request to completion (blocking the caller). Returns CT_ERR_ABORTED when cancelled
   (by ct_synth_cancel or the sink) — both stages stop within one frame. */
ct_status ct_synth_run(ct_synth *s, const ct_gen_params *g, ct_pcm_sink sink, void *ud);

/* Requests cancellation of the running request; safe from any thread (also a signal-free
   no-op when idle). */
void ct_synth_cancel(ct_synth *s);

const char *ct_synth_errmsg(const ct_synth *s);

/* Per-request facts of the last run. */
typedef struct {
    int frames, chunks;
    double t_first_frame_ms;  /* stage 0: prefill + first frame ready */
    double t_first_audio_ms;  /* first PCM handed to the sink (TTFA) */
    double t_done_ms;
    ct_stop_reason stop;
    double stage0_ms, stage1_ms; /* busy time per stage */
    double prefill_ms;        /* stage 0: ct_session_start (prompt + prefill + first c0) */
    double talker_ms, predictor_ms; /* stage 0 split after the prefill: talker steps, code
                                       predictor; stage1_ms is the decoder */
} ct_synth_stats;

ct_synth_stats ct_synth_get_stats(const ct_synth *s);

/* The scheduling the object runs (overlapped or serial; auto resolved at create). */
ct_scheduling ct_synth_scheduling(const ct_synth *s);

/* Chunk arrival timeline of the last run: t_ms since ct_synth_run began and samples per chunk.
   Returns the number of chunks; fills up to cap entries. */
int ct_synth_timeline(const ct_synth *s, double *t_ms, int *samples, int cap);

#ifdef __cplusplus
}
#endif

#endif
