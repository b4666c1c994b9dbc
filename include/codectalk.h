/* codectalk public API: load a Qwen3-TTS checkpoint once (immutable, shareable), then run
   per-request sessions that turn text into 12.5 Hz codec frames (16 codes per 80 ms). */
#ifndef CODECTALK_H
#define CODECTALK_H

#include <stddef.h>
#include <stdint.h>

#include "codectalk_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------------------- */

/* ct_status (CT_OK = 0, CT_ERR_* < 0) and ct_status_str() live in codectalk_status.h,
   included above. */

/* Version of this header. CMakeLists.txt takes the project version (and the shared library's
   SONAME, libcodectalk.so.MAJOR) from these three lines, so they are the one place to change it. */
#define CT_VERSION_MAJOR 0
#define CT_VERSION_MINOR 1
#define CT_VERSION_PATCH 0
#define CT_VERSION_STRING "0.1.0" /* MAJOR.MINOR.PATCH */

/* Version of the library linked at run time (CT_VERSION_STRING of the header it was built
   with), e.g. "0.1.0". */
CT_API const char *ct_version(void);

/* Process-wide environment switches. The library reads these variables itself (every other
   setting comes through the params structs); each is read at the moment named and not again,
   so set them before that point. Unset or empty means the default.

   CODECTALK_ISA       Kernel level: scalar, avx2, avx512, avx512bf16, neon, neon-dotprod or
                       auto (default: the best this CPU and build run). Read once, when the
                       kernels are selected: the first ct_model_load, or the first codec decode
                       or stream (those fall back to scalar on a bad value). An unknown name
                       makes ct_model_load fail with CT_ERR_INVALID_ARG, a level the CPU lacks
                       with CT_ERR_UNSUPPORTED (never SIGILL). Results differ between levels by
                       rounding only; within one level they do not depend on thread counts.
   CODECTALK_AMX       "0": never use AMX tiles; otherwise the avx512bf16 level uses AMX-BF16
                       for BF16-weight prefill when the CPU has it and Linux grants tile-data
                       permission. Read once, at kernel selection.
   CODECTALK_BF16_ACT  "1": bf16-activation mode for BF16-weight prefill at the avx512bf16
                       level (activations rounded to bf16: faster, about 1e-5 NMSE off the f32
                       result per matmul). Default off. Read once, at kernel selection.
   CODECTALK_INT8_ACT  "0": INT8/INT4 weights keep f32 activations. Default: at the levels with
                       integer-dot kernels (avx512bf16: VNNI, neon-dotprod: SDOT), matmuls
                       quantize activations to int8 per 32 columns (decode and prompt; where
                       AMX is available the prompt keeps f32 activations on AMX tiles), which
                       changes INT8/INT4 results slightly. Read once, at kernel selection.
   CODECTALK_STEP_STATS_DIR
                       A directory: collect per-step timing counters and write them as
                       <dir>/<role>_<pid>.json every 500 samples and at exit (docs/STREAMING.md
                       3). Default off (each hook then costs one branch). Read once, at the
                       first timing hook.
   The last three are read by the deploy-profile code of the codectalk program (its tools
   library), not by libcodectalk (README.md "Embed the C library").
   CODECTALK_HW_PROFILE
                       Hardware record to use instead of probing the machine: a path to a JSON
                       file, or the JSON itself (text starting with '{'); format in
                       docs/EDGE.md 1. Read each time the hardware is detected without an
                       explicit root (deploy profile "auto", `codectalk probe`).
   CODECTALK_PROFILE_DIR
                       Directory holding the layered deploy profiles (qwen3_tts.yaml,
                       hardware/<class>.yaml). Default: profiles/ of the source tree the
                       library was built from. Read each time a profile is resolved.
   XDG_CACHE_HOME, HOME
                       Calibration cache: $XDG_CACHE_HOME/codectalk/calibration/<fingerprint>.json,
                       else $HOME/.cache/codectalk/calibration/...; an explicit cache directory
                       overrides both, and with neither set there is no cache. Read each time
                       the cache path is formed (deploy profile "auto", `codectalk calibrate`). */

/* Params structs (ct_model_params and every other *_params): each starts with `size_t size`,
   which its *_default() constructor sets to sizeof the struct as this header declares it.
   Start from the default, change fields, pass a pointer (NULL = all defaults). The library
   takes only the first `size` bytes of the struct: a program built against an older, smaller
   struct gets the defaults for the fields it does not know. A program built against a newer,
   larger struct is accepted when every byte beyond what this library knows is zero (new
   fields are added so that zero means "as before"); otherwise the call fails with
   CT_ERR_INVALID_ARG ("params from a newer codectalk"). size 0 is taken as the whole struct,
   for code that fills a zeroed struct without setting it; 1..sizeof(size_t)-1 is an error. */

/* ---- model -------------------------------------------------------------------------- */

/* Immutable after load; may be shared by any number of sessions on any threads. */
typedef struct ct_model ct_model;

typedef struct {
    size_t size;               /* sizeof(ct_model_params), set by the default (see Params
                                  structs above) */
    const char *tokenizer_dir; /* NULL: the model directory holds vocab.json etc. */
    int f32_weights;           /* 1: convert every weight to f32 at load (reference mode) */
    const char *weights;       /* transformer weight format, converted at load: NULL/"bf16"/
                                  "stored" = as stored, "int8" (per-row scales), "int4"
                                  (group-32 scales; lm heads int8), "mixed" (talker int8,
                                  predictor attention int8 + MLP int4); embeddings and norms
                                  stay as stored. Ignored when f32_weights is set. */
    const char *talker_weights;    /* the talker's format, same names ("mixed": attention and
                                      lm head int8, MLP int4); NULL = follow `weights` */
    const char *predictor_weights; /* the code predictor's format, likewise */
    const char *cache_dir;         /* NULL (default): no weight cache. Else a cache root: when a
                                      format above makes the loader convert matrices, it reads
                                      them from <cache_dir>/weights/<model id>-<talker>-<predictor>-
                                      <engine version>.safetensors when that file is valid for
                                      this model.safetensors (size, mtime, header), formats and
                                      engine version (mmap'd, nothing converted), and otherwise
                                      converts and writes that file once (atomically: a unique
                                      temporary file renamed into place). A stale or corrupt file
                                      is rebuilt; a cache that cannot be written leaves the load
                                      working without it (ct_model_info.cache_warning). */
    int weight_panels;             /* 1: where the kernels have them (AVX-512 VNNI), INT8 and INT4
                                      matrices also get 16-row panels that calls of 4 (INT8) or
                                      3 (INT4) or more tokens (batched streams, prompts) read
                                      instead of the rows: mapped from the weight file where it
                                      stores them (`codectalk quantize --weight-panels`, the
                                      weight cache), else repacked at load; costs about the
                                      quantized weights' size again in memory
                                      (ct_model_info.packed_bytes; docs/KERNELS.md "Weight panels
                                      packed at load"). 0 (default): rows only */
} ct_model_params;

CT_API ct_model_params ct_model_params_default(void);

/* Loads dir (config.json, generation_config.json, model.safetensors, tokenizer files).
   Every tensor the config implies is checked by name, shape and dtype. On failure returns
   the status and writes a message naming what is wrong into err[errcap]. */
CT_API ct_status ct_model_load(const char *dir, const ct_model_params *params, ct_model **out,
                               char *err, size_t errcap);

/* Frees the model; NULL is fine. All sessions must be freed first. */
CT_API void ct_model_free(ct_model *m);

typedef struct {
    const char *kind;       /* "custom_voice", "base", "voice_design" */
    const char *size_tag;   /* "0b6", "1b7", or what config.json says */
    int talker_hidden, talker_layers, pred_hidden, pred_layers;
    int n_groups;           /* codes per frame (16) */
    int codebook_size;      /* 2048 */
    int n_speakers, n_languages;
    uint64_t weight_bytes;  /* bytes of talker + predictor weights as loaded (after any
                               conversion or quantization, scales included) */
    /* format the talker's / code predictor's layer matrices were loaded in: "bf16", "f16",
       "f32" (stored so, or f32_weights), "int8", "int4", or "mixed" when attention and MLP
       differ (predictor under "mixed") */
    const char *talker_weights, *predictor_weights;
    /* where the layer and head matrices come from: "stored" (model.safetensors as stored),
       "quantized" (model.safetensors is `codectalk quantize` output), "converted" (converted
       at load: no cache_dir, or the cache file was missing or invalid), "cache" (the cache
       file, mmap'd) */
    const char *weights_source;
    const char *weights_file;   /* the file they are read from (model.safetensors, or the cache
                                   file when weights_source is "cache") */
    int converted;              /* matrices converted at load (0 with a valid cache file) */
    const char *cache_file;     /* the weight cache file of this model and formats ("" when no
                                   cache_dir or nothing to convert); written by this load when
                                   weights_source is "converted", unless cache_warning says
                                   "not written" */
    const char *cache_warning;  /* "" or why the cache was not used or not written (read-only
                                   directory, stale or corrupt file rebuilt) */
    uint64_t packed_bytes;      /* bytes of the INT8/INT4 weight panels in use
                                   (ct_model_params.weight_panels); 0 when off or where the
                                   kernels have none */
    const char *panels_source;  /* "none", "packed" (repacked at load into memory held besides
                                   the weights) or "file" (mapped from weights_file, which
                                   stores them: `codectalk quantize --weight-panels`, or the
                                   weight cache written by a load with the panels) */
    const char *panels_note;    /* "" or why the weight file's panels were not used (another
                                   kernel layout, a size that does not match) */
} ct_model_info;

CT_API ct_model_info ct_model_get_info(const ct_model *m);

/* Name of speaker / language i (lower case), or NULL when out of range. */
CT_API const char *ct_model_speaker(const ct_model *m, int i);
CT_API const char *ct_model_language(const ct_model *m, int i);

/* Tokenizes UTF-8 text with the model's Qwen2 BPE. *n_out receives the full count; if it
   exceeds cap, CT_ERR_LIMIT is returned. Invalid UTF-8 is CT_ERR_INVALID_ARG. */
CT_API ct_status ct_tokenize(const ct_model *m, const char *text, size_t len, int32_t *ids,
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

CT_API ct_session_params ct_session_params_default(void);

/* Reserves the whole working set (KV caches, scratch) now; nothing is allocated later. */
CT_API ct_status ct_session_create(const ct_model *m, const ct_session_params *p, ct_session **out,
                                   char *err, size_t errcap);
CT_API void ct_session_free(ct_session *s);

/* Last error message of this session ("" when none). Borrowed until the next call. */
CT_API const char *ct_session_errmsg(const ct_session *s);

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
    /* Base voice cloning, ICL mode (docs/CLONING.md): the reference clip's codes and its
       transcript; requires xvector. Without ref_codes a Base request with an xvector is an
       x-vector-only clone. The output holds only the new speech (MODEL.md 6.3 semantics:
       the reference frames prime the codec and their samples are dropped). */
    const int32_t *ref_codes; /* [ref_frames][n_groups], frame-major, codebook 0 first */
    int ref_frames;
    const char *ref_text;     /* UTF-8 transcript of the whole reference clip */
    /* Prompt reuse (docs/STREAMING.md "Prompt reuse"): 1 (default): the prefill skips the
       leading positions whose prompt rows equal those of the session's previous start (the same
       voice: role block, codec header, speaker, instruction, reference) and keeps their KV; the
       output is bit-identical either way. 0: every position is run. */
    int prompt_reuse;
} ct_gen_params;

CT_API ct_gen_params ct_gen_params_default(void);

typedef enum {
    CT_STOP_NONE = 0,       /* still running */
    CT_STOP_EOS = 1,        /* the talker emitted EOS */
    CT_STOP_MAX_FRAMES = 2, /* max_frames / max_new_tokens reached */
    CT_STOP_BUDGET = 3,     /* text-length budget or context capacity reached */
    CT_STOP_ABORTED = 4
} ct_stop_reason;

CT_API const char *ct_stop_reason_str(ct_stop_reason r);

/* Validates the request, builds the prompt and runs the prefill. Resets any previous run; the
   KV of the leading prompt positions it shares with the previous start is kept unless
   g->prompt_reuse is 0 (ct_run_info.prompt_reused). */
CT_API ct_status ct_session_start(ct_session *s, const ct_gen_params *g);

/* Produces the next frame: codes[n_groups] (codebook 0 first, each in [0, 2048)).
   *got = 1 when a frame was written, 0 when generation has finished (see stop reason). */
CT_API ct_status ct_session_next_frame(ct_session *s, int32_t *codes, int *got);

CT_API ct_stop_reason ct_session_stop_reason(const ct_session *s);

/* Facts about the current run. */
typedef struct {
    int prompt_len;      /* prefill positions */
    int text_tokens;     /* N */
    int frames;          /* frames produced so far */
    int frame_limit;     /* effective cap from max_frames/max_new_tokens/budget/context */
    int prompt_reused;   /* leading prefill positions not run: kept from the previous start, or
                            copied from another member of the session's prompt group (in an
                            engine: another slot) */
} ct_run_info;

CT_API ct_run_info ct_session_run_info(const ct_session *s);

/* Prompt sharing between sessions (docs/STREAMING.md "Prompt reuse", "Across sessions"). A
   start of a session in a group, with prompt_reuse on, copies the talker K/V of the leading
   prompt positions that another member's last prefill holds, where that member holds more of
   them than the session's own KV, instead of running them: the same bits as running them
   (ct_run_info.prompt_reused counts them). Members may run on different threads: a start takes
   the group's lock while it matches and copies, and a member's decode steps never write the
   positions the others copy. Every member must be a session of the same model. */
typedef struct ct_prompt_group ct_prompt_group;

/* cache_bytes: the group's prompt cache. After each member's prefill it keeps the K/V of the
   prompt's voice rows (those before the text: instruction, role block, codec header, an ICL
   clone's reference transcript) for starts to copy when no member holds them any more; least
   recently used voices leave first; 0 = no cache. A 0.6B or 1.7B talker's K/V takes 224 KiB a
   position (a CustomVoice voice with a language: 9 positions, 2 MiB). */
CT_API ct_status ct_prompt_group_create(size_t cache_bytes, ct_prompt_group **out);
/* Every member leaves the group first; none may be starting (ct_session_start) meanwhile. */
CT_API void ct_prompt_group_free(ct_prompt_group *g);
/* Makes s a member of g, leaving the group it was in; g NULL: s leaves its group
   (ct_session_free leaves too). CT_ERR_INVALID_ARG when g's members belong to another model
   (the message is ct_session_errmsg(s)). */
CT_API ct_status ct_session_join_prompts(ct_session *s, ct_prompt_group *g);

/* ---- batched decode ----------------------------------------------------------------- */

/* Advances several sessions together: one weight pass per layer for all of them. */
typedef struct ct_batch ct_batch;

/* Reserves scratch for up to max_streams sessions whose max_context is at most max_context,
   and a pool of n_threads compute threads. */
CT_API ct_status ct_batch_create(const ct_model *m, int max_streams, int max_context, int n_threads,
                                 ct_batch **out, char *err, size_t errcap);
CT_API void ct_batch_free(ct_batch *b);

/* Produces the next frame of every running session in sessions[n] (started with
   ct_session_start; finished or NULL entries are skipped): codes[i*n_groups..] and got[i] = 1
   when session i produced a frame. A session's codes are identical to what
   ct_session_next_frame would give it alone. The sessions must not be used elsewhere during
   the call. CT_ERR_INVALID_ARG for a session of another model, with a larger max_context, or
   more running sessions than max_streams. */
CT_API ct_status ct_batch_step(ct_batch *b, ct_session *const *sessions, int n, int32_t *codes,
                              int *got);
/* Message of the batch's last call when it failed ("" after a successful one). */
CT_API const char *ct_batch_errmsg(const ct_batch *b);

/* ---- codec decoder ------------------------------------------------------------------ */

/* The codec decoder ("Code2Wav", speech_tokenizer/ of a model directory): frames of n_groups
   codes (16 per 80 ms frame) -> samples_per_frame (1920) samples of mono PCM in [-1, 1] at the
   sample rate (24 kHz), F32 throughout. Usable without the engine, e.g. on the frames of a
   CT_OUTPUT_CODES stream: one-shot (ct_codec_decode) or streaming (ct_codec_stream_*), with
   identical output. Kernels follow the process-wide ISA level (CODECTALK_ISA); these calls
   run on the calling thread. The codec is immutable after load and shareable by any number
   of threads and streams. */
typedef struct ct_codec ct_codec;
/* Streaming decoder state over one codec; one thread at a time. */
typedef struct ct_codec_stream ct_codec_stream;

/* Loads model_dir/speech_tokenizer/{config.json, model.safetensors}. Every width comes from
   decoder_config and is checked against the tensor shapes; the weights are copied (repacked),
   so the file is unmapped before returning. Errors: CT_ERR_INVALID_ARG (NULL arguments),
   CT_ERR_IO (missing or unreadable file), CT_ERR_FORMAT (bad JSON, a missing, mis-shaped or
   non-F32 tensor: the message names the tensor and both shapes), CT_ERR_UNSUPPORTED (a config
   variant not handled), CT_ERR_NOMEM; the message goes to err[errcap]. */
CT_API ct_status ct_codec_load(const char *model_dir, ct_codec **out, char *err, size_t errcap);
/* Frees a codec (NULL is fine). No stream created from it may be used afterwards. */
CT_API void ct_codec_free(ct_codec *c);
CT_API int ct_codec_samples_per_frame(const ct_codec *c); /* upsampling factors' product: 1920 */
CT_API int ct_codec_sample_rate(const ct_codec *c);       /* output_sample_rate: 24000 */
CT_API int ct_codec_n_groups(const ct_codec *c);          /* codebooks per frame: 16 */

/* One-shot: codes [n_frames][n_groups] (frame-major, codebook 0 first) ->
   pcm[n_frames * samples_per_frame]. Allocates its working memory per call; long inputs are
   processed in pieces through the exact streaming state, so memory stays bounded and the
   result is that of decoding the whole sequence at once. n_frames == 0 is a no-op. A code
   outside [0, codebook_size) gives CT_ERR_INVALID_ARG naming the frame and group, with
   nothing written. Thread-safe on a shared codec. */
CT_API ct_status ct_codec_decode(const ct_codec *c, const int32_t *codes, int n_frames, float *pcm,
                                 char *err, size_t errcap);

/* Creates a streaming decoder at the start of a stream, sized up front for up to max_chunk
   (1..65536) frames per push; nothing allocates per push. CT_ERR_INVALID_ARG, CT_ERR_NOMEM. */
CT_API ct_status ct_codec_stream_create(const ct_codec *c, int max_chunk, ct_codec_stream **out,
                                        char *err, size_t errcap);

/* Pushes n_frames (1..max_chunk) new frames (codes as for ct_codec_decode) and writes exactly
   n_frames * samples_per_frame new samples to pcm. The concatenated output of any sequence of
   pushes equals, bit for bit, the one-shot decode of the concatenated codes. Bad codes or
   n_frames out of range give CT_ERR_INVALID_ARG with the state untouched. The cost per frame
   does not depend on how many frames were pushed before. */
CT_API ct_status ct_codec_stream_push(ct_codec_stream *s, const int32_t *codes, int n_frames,
                                      float *pcm, char *err, size_t errcap);

/* Back to the start-of-stream state (zero history, position 0), for the next stream. NULL is
   fine. */
CT_API void ct_codec_stream_reset(ct_codec_stream *s);

/* Frees a stream (NULL is fine). */
CT_API void ct_codec_stream_free(ct_codec_stream *s);

/* ---- voice cloning (Base models; docs/CLONING.md) -------------------------------------- */

/* The x-vector of a mono clip at 24 kHz (pcm[n], n >= 1 s worth) through the model's speaker
   encoder (ECAPA-TDNN, MODEL.md 6): writes talker_hidden floats to xvec (cap >= that).
   CT_ERR_UNSUPPORTED for a model without a speaker encoder (not Base), CT_ERR_INVALID_ARG for
   a clip too short. Thread-safe on a shared model; allocates its working memory per call. */
CT_API ct_status ct_model_speaker_embed(const ct_model *m, const float *pcm, size_t n, float *xvec,
                                        int cap, char *err, size_t errcap);

/* The speech-tokenizer encoder (Mimi-style, MODEL.md 5.4): 24 kHz mono PCM -> 16 codes per
   80 ms frame, the codes the decoder and ICL prompts take. Loaded on its own (the encoder.*
   tensors of model_dir/speech_tokenizer/model.safetensors) since only cloning needs it. */
typedef struct ct_speech_encoder ct_speech_encoder;
CT_API ct_status ct_speech_encoder_load(const char *model_dir, ct_speech_encoder **out, char *err,
                                        size_t errcap);
CT_API void ct_speech_encoder_free(ct_speech_encoder *e);
/* Encodes pcm[n] (24 kHz mono) into codes[ceil(n / 1920)][16] (frame-major); *n_frames gets the
   count; CT_ERR_LIMIT when it exceeds max_frames (nothing written). Thread-safe. */
CT_API ct_status ct_speech_encode(const ct_speech_encoder *e, const float *pcm, size_t n,
                                  int32_t *codes, int max_frames, int *n_frames, char *err,
                                  size_t errcap);

/* A cloned voice: the x-vector, and for ICL the reference codes and transcript, tied to the
   model it was made with. Immutable; shareable by threads. */
typedef struct ct_voice ct_voice;

/* Makes a voice from a 24 kHz mono clip: x-vector through the speaker encoder; when enc and
   ref_text are both given also the reference codes (ICL voice), else x-vector-only. */
CT_API ct_status ct_voice_create(const ct_model *m, const ct_speech_encoder *enc, const float *pcm,
                                 size_t n, const char *ref_text, ct_voice **out, char *err,
                                 size_t errcap);
/* Makes a voice from its parts (copied): xvec[xvector_len] (= talker hidden), optional ICL
   ref_codes[ref_frames][n_groups] with ref_text. */
CT_API ct_status ct_voice_from_parts(const ct_model *m, const float *xvec, int xvector_len,
                                     const int32_t *ref_codes, int ref_frames, const char *ref_text,
                                     ct_voice **out, char *err, size_t errcap);
/* Writes the voice file (docs/CLONING.md "Voices and voice files": a safetensors file with the
   x-vector, the reference codes, the transcript, the model hash and name, the audio hash;
   versioned) through path.partial renamed at the end: nothing is left at path on failure. */
CT_API ct_status ct_voice_save(const ct_voice *v, const char *path, char *err, size_t errcap);
/* Reads and validates a voice file: CT_ERR_FORMAT for a corrupt or truncated one (or not a
   voice file), CT_ERR_UNSUPPORTED for another file version, CT_ERR_INVALID_ARG for one made
   with another model (the message names both model hashes). m NULL reads the file without the
   model checks (to inspect it: `codectalk voice info`). */
CT_API ct_status ct_voice_load(const ct_model *m, const char *path, ct_voice **out, char *err,
                               size_t errcap);
CT_API ct_status ct_voice_load_memory(const ct_model *m, const void *buf, size_t len,
                                      ct_voice **out, char *err, size_t errcap);
CT_API void ct_voice_free(ct_voice *v);

typedef struct {
    int version;                   /* voice file format version (1) */
    int xvector_len, ref_frames;   /* ref_frames 0: x-vector-only voice */
    int n_groups;                  /* codes per reference frame (16); 0 for x-vector-only */
    const char *ref_text;          /* NULL for x-vector-only */
    const char *model_hash;        /* ct_model_hash of the model the voice was made with */
    const char *model_name;        /* that model's "<size>-<kind>", e.g. "0b6-base" */
    const char *audio_sha256;      /* of the reference PCM (f32 LE, 24 kHz mono), hex; "" when
                                      made from parts */
    uint64_t n_samples;            /* reference samples at 24 kHz; 0 when made from parts */
    const char *created_by;        /* "codectalk <version>" that made it */
} ct_voice_info;
CT_API ct_voice_info ct_voice_get_info(const ct_voice *v);

/* Points g's xvector (and, unless xvector_only, ref_codes/ref_frames/ref_text) at the voice's
   data, borrowed for as long as g is used. */
CT_API void ct_voice_apply(const ct_voice *v, ct_gen_params *g, int xvector_only);

/* The model's identity for voice files: hex sha256 (64 chars) over config.json and the bytes
   of the speaker-encoder and talker codec-embedding tensors (docs/CLONING.md), computed once
   on the first call (thread-safe). Borrowed; "" for NULL. */
CT_API const char *ct_model_hash(const ct_model *m);

/* ---- the stream engine ----------------------------------------------------------------- */

/* One engine runs every stream: a scheduler loop admits requests, prefills newcomers between
   decode steps, advances all active streams with one batched talker + code-predictor step (a
   single stream is a batch of one), and decodes each stream's due codec chunk by its own chunk
   schedule. PCM (or codec frames) is read from each stream's bounded buffer; a stream whose
   reader falls behind pauses alone. docs/STREAMING.md describes the loop. */
typedef struct ct_engine ct_engine;
typedef struct ct_stream ct_stream;

/* Where the two stages run (ct_engine_params.placement; docs/STREAMING.md 4). The audio is
   bit-identical in every placement. */
typedef enum {
    CT_PLACEMENT_OVERLAPPED = 0, /* the talker + predictor (talker_threads) and the codec
                                    (codec_threads) run side by side on their own threads,
                                    joined by a bounded frame queue (queue_frames) */
    CT_PLACEMENT_SERIAL = 1,     /* one pool of talker_threads runs the step, then the due
                                    codec chunks; codec_threads and codec_cpus are not used */
    CT_PLACEMENT_AUTO = 2        /* serial when the CPUs to use (the process's CPU set, or the
                                    union of talker_cpus and codec_cpus when both are given)
                                    number 2 or fewer: the pool then takes talker_threads (0 =
                                    all) + codec_threads threads, at most one per CPU;
                                    overlapped otherwise, and when only one stage is pinned */
} ct_placement;

/* "overlapped", "serial", "auto"; "?" for anything else. */
CT_API const char *ct_placement_str(int placement);
/* Parses one of the names above into *placement; CT_ERR_INVALID_ARG for anything else. */
CT_API ct_status ct_placement_parse(const char *name, int *placement);

typedef struct {
    size_t size;             /* sizeof(ct_engine_params), set by the default */
    int max_streams;         /* streams generating at once, each with its own KV (default 1) */
    int queue_cap;           /* requests that may wait for a stream slot (default 8; 0 = none) */
    int max_context;         /* talker KV positions per stream (default 2048) */
    uint64_t kv_budget_bytes;/* talker KV budget; 0 = max_streams worst-case streams. Slots
                                the budget cannot back are not created. */
    int placement;           /* ct_placement (default AUTO) */
    int talker_threads;      /* stage-0 pool; 0 = every usable CPU (serial) or all but one
                                (overlapped). Default 0. Results do not depend on it. */
    const int *talker_cpus;  /* optional pinning for stage 0 (borrowed until create returns) */
    int n_talker_cpus;
    int codec_threads;       /* overlapped: the codec stage's threads (default 1) */
    const int *codec_cpus;   /* optional pinning for the codec stage */
    int n_codec_cpus;
    int queue_frames;        /* overlapped: frames in flight between the stages (default 64);
                                a full queue blocks the step */
    int max_chunk_frames;    /* largest codec chunk any stream's schedule may ask for (64) */
    double safety_margin_ms; /* a newcomer's prefill waits while an active stream's playback
                                slack minus its next chunk's ETA is under this (default 120);
                                negative = never wait (no throttle) */
    double max_defer_ms;     /* longest such wait (default 5000; 0 = no limit) */
    int buffer_ms;           /* per-stream output buffer in audio ms (default 10000; at least
                                max_chunk_frames + 1 frames) */
    int warmup;              /* 1: generate two frames before ct_engine_ready says 1 (0) */
    int prefill_chunk_tokens;/* prompt tokens per prefill pass, 1..4096; 0 = 64. The engine runs
                                one pass per scheduler pass, with a decode step of the running
                                streams after each, so a smaller pass holds them up for less time
                                at once. Each slot's prefill scratch is sized from it at create.
                                The audio does not depend on it (docs/STREAMING.md 4) */
    double frame_ms_fixed;   /* predicted wall ms of one frame period of the whole engine with n
                                streams running: frame_ms_fixed + frame_ms_per_stream * n, as the
                                placement runs the stages. A newcomer is admitted only while that
                                keeps up with playback (docs/STREAMING.md 5); measured periods
                                replace the prediction once there are 8 of a batch size. Both 0
                                = unknown: no compute rule. */
    double frame_ms_per_stream;
    uint64_t prompt_cache_bytes; /* the slots' prompt group's cache (ct_prompt_group_create): the
                                voice rows of recent voices, so a voice no slot holds any more
                                starts warm; default 16 MiB (about 7 CustomVoice voices); 0 = none */
} ct_engine_params;

CT_API ct_engine_params ct_engine_params_default(void);

/* Reserves every stream slot (KV caches, scratch, codec state, output buffers) and starts the
   engine's threads. Model and codec are borrowed and must outlive the engine; c may be NULL
   for an engine whose streams all ask for codes (CT_OUTPUT_CODES). Errors:
   CT_ERR_INVALID_ARG (a field out of range: the message names it), CT_ERR_LIMIT (the KV
   budget holds no stream: the message gives both numbers), CT_ERR_FORMAT (model and codec
   disagree), CT_ERR_NOMEM. */
CT_API ct_status ct_engine_create(const ct_model *m, const ct_codec *c, const ct_engine_params *p,
                                  ct_engine **out, char *err, size_t errcap);

/* Stops the threads, fails every waiting or running stream (CT_ERR_ABORTED) and frees the
   engine. Streams still held by callers stay valid (reads return finished) until released.
   NULL is fine. */
CT_API void ct_engine_free(ct_engine *e);

/* 1 when serving, 0 while warming up, -1 when warm-up failed (message in err). */
CT_API int ct_engine_ready(ct_engine *e, char *err, size_t errcap);

/* Limits in force (placement resolved). */
typedef struct {
    int max_streams, queue_cap, max_context, sample_rate, samples_per_frame, n_groups;
    int placement, talker_threads, codec_threads, max_chunk_frames;
    uint64_t kv_budget_bytes, kv_bytes_per_token, kv_bytes_per_stream;
    double safety_margin_ms;
    int prefill_chunk_tokens;
} ct_engine_limits;

CT_API ct_engine_limits ct_engine_get_limits(const ct_engine *e);

/* Engine-wide counters. */
typedef struct {
    int active, queued;
    uint64_t admitted, rejected, queued_total, completed, failed, cancelled;
    uint64_t deferrals;        /* scheduler passes on which a ready prefill was held back by the
                                  playback-slack throttle */
    uint64_t deferred_kv;      /* requests that waited for a slot (its KV) at the queue's head */
    uint64_t deferred_compute; /* requests held back by the compute rule (frame_ms_*) */
    uint64_t timed_out;        /* requests failed with CT_ERR_TIMEOUT (counted in failed too) */
    uint64_t forced_admissions;/* prefills started after max_defer_ms */
    uint64_t underruns;        /* ring-buffer player stalls over all streams (engine clock) */
    double underrun_ms;
    uint64_t kv_bytes_in_use;
    uint64_t steps;            /* batched decode steps */
    double step_ms, prefill_ms;/* EWMAs of one batched step and one prefill */
    double audio_s;            /* audio produced */
    int full;                  /* 1 when a request submitted now would be refused (CT_ERR_LIMIT):
                                  every slot that can start is taken and the queue is full */
    uint64_t icl_primes;       /* ICL utterances whose decoder was primed with the reference
                                  (exact decode) */
    uint64_t icl_prime_reuses; /* of those, primed from a kept state of the same reference
                                  codes instead of decoding them again (docs/STREAMING.md) */
    uint64_t prompt_positions; /* prompt positions of every prefill */
    uint64_t prompt_reused;    /* of those, kept from the slot's previous prefill or copied from
                                  another slot's instead of run (prompt reuse, docs/STREAMING.md) */
    uint64_t prompt_shared;    /* of those, copied from another slot's KV */
    uint64_t prompt_cached;    /* of those, copied from the prompt cache (prompt_cache_bytes) */
} ct_engine_counters;

CT_API ct_engine_counters ct_engine_get_counters(ct_engine *e);

/* Seconds until the earliest admitted stream is expected to finish (its expected frames left
   times the measured, else predicted, frame period), at least 1 and at most 120; for
   Retry-After. */
CT_API int ct_engine_retry_after_s(ct_engine *e);

typedef enum { CT_OUTPUT_PCM = 0, CT_OUTPUT_CODES = 1 } ct_output;

typedef struct {
    size_t size;             /* sizeof(ct_stream_params), set by the default */
    const char *schedule;    /* chunk schedule: "exact" (default), "fixed:IC,S",
                                "ramp:2,4,8,16,25", "dynamic", "adaptive" (docs/STREAMING.md) */
    int windowed;            /* 1: stateless windowed decode with left context (the exportable
                                form); 0: the exact stateful decoder (default) */
    int context_frames;      /* windowed left context (default 72) */
    int utterance_bytes;     /* long text is split at sentence boundaries into utterances of
                                about this many bytes, generated and played back to back
                                (utterance k uses seed + k); default 300; 0 = one utterance */
    int output;              /* ct_output: PCM (default) or codec frames (no decoding) */
    int deadline_ms;         /* the whole request must be done this many ms after submission
                                (also while queued), else it fails with CT_ERR_TIMEOUT; 0 = none */
    int first_audio_timeout_ms; /* the first output must be released to the reader this many ms
                                after submission, else CT_ERR_TIMEOUT; 0 = none */
    int sentence_pause_ms;   /* silence between two utterances of one paragraph, [0, 10000] ms
                                (rate * ms / 1000 zero samples); > 0 also keeps each sentence its
                                own utterance (no merging), so the pause falls between sentences.
                                Needs PCM output and utterance_bytes > 0. Default 0 (docs/TEXT.md) */
    int paragraph_pause_ms;  /* the same between paragraphs (a blank line); default 0 */
    int text_incremental;    /* 1: the text arrives in pieces (g->text, which may be NULL or
                                empty, is the first) through ct_stream_append_text and ends with
                                ct_stream_end_text; see "Incremental text" below. Default 0. */
    int text_idle_timeout_ms;/* text_incremental: the stream fails with CT_ERR_TIMEOUT when no
                                piece (nor the end) arrives for this many ms before the end;
                                its slot and KV are freed within one step. 0 = none (default). */
    int normalize;           /* 1: numbers, ordinals, dates, times, money, percentages, units and
                                common abbreviations are read out as words (English, Chinese;
                                by ct_gen_params.language, auto = by script) before splitting;
                                default 0: the text as given, as the official implementation
                                reads it (docs/TEXT.md) */
} ct_stream_params;

CT_API ct_stream_params ct_stream_params_default(void);

/* Queues a request. g's strings, x-vector and reference codes are copied. Admission happens on the engine
   thread; a request that cannot be generated (unknown voice, text over the context) fails
   there and its stream reports CT_STREAM_FAILED with the message. Returns CT_ERR_INVALID_ARG
   (bad parameters: message in err), CT_ERR_LIMIT when every slot is busy and the queue is full,
   CT_ERR_STATE when the engine is stopping or failed, CT_ERR_NOMEM. *out must be released
   with ct_stream_release. */
CT_API ct_status ct_engine_submit(ct_engine *e, const ct_gen_params *g, const ct_stream_params *sp,
                                  ct_stream **out, char *err, size_t errcap);

typedef enum {
    CT_STREAM_QUEUED = 0,  /* waiting for a slot (or held by the prefill throttle) */
    CT_STREAM_PREFILL = 1, /* admitted, first prefill running */
    CT_STREAM_RUNNING = 2, /* frames flowing */
    CT_STREAM_DONE = 3,    /* generation finished (output may still be buffered) */
    CT_STREAM_FAILED = 4   /* failed, cancelled or shut down (status and message say which) */
} ct_stream_state;

/* Waits until the stream is past the first prefill (RUNNING, DONE or FAILED) or timeout_ms
   passed (< 0 = no limit); returns the state then. */
CT_API ct_stream_state ct_stream_wait_started(ct_stream *s, int timeout_ms);

/* Copies up to cap samples (mono f32 at the codec rate) into pcm, waiting up to timeout_ms
   (< 0 = no limit) when none are buffered. Returns the count; *finished = 1 once the stream
   has ended (DONE or FAILED) and everything was read. CT_OUTPUT_CODES streams return 0. */
CT_API size_t ct_stream_read(ct_stream *s, float *pcm, size_t cap, int timeout_ms, int *finished);

/* The same for CT_OUTPUT_CODES streams: up to max_frames frames of n_groups codes each. */
CT_API size_t ct_stream_read_codes(ct_stream *s, int32_t *codes, size_t max_frames, int timeout_ms,
                                   int *finished);

/* Requests cancellation; safe from any thread. The stream's slot and KV are freed within one
   step; it then reads as finished with status CT_ERR_ABORTED. */
CT_API void ct_stream_cancel(ct_stream *s);

/* Cancels the stream if it still runs and drops the caller's handle. NULL is fine. */
CT_API void ct_stream_release(ct_stream *s);

/* Facts about a stream. Times are ms since submission; NAN before they happen. */
typedef struct {
    ct_stream_state state;
    ct_status status;        /* CT_OK unless FAILED */
    ct_stop_reason stop;     /* of the last utterance */
    int utterances, utterance; /* how many, and the one generating now (0-based) */
    int text_tokens, prompt_len; /* summed over utterances */
    int frames, chunks;      /* frames generated, codec chunks (or code frames) released */
    uint64_t samples;        /* samples released */
    double queue_ms;         /* submission to admission */
    double first_frame_ms;   /* first frame of codes */
    double ttfa_ms;          /* first output released to the reader */
    double done_ms;
    double prefill_ms, step_ms, codec_ms; /* busy time: prefills, batched steps this stream
                                             took part in (wall time of the whole step),
                                             codec chunks */
    double talker_ms, predictor_ms; /* step_ms split into its two halves */
    int stalls;              /* ring-buffer player stalls, playback starting at TTFA */
    double stall_ms;
    int prefill_passes;      /* talker passes of the prefills (prefill_chunk_tokens each), summed
                                over utterances */
    int prompt_reused;       /* prompt positions whose KV the slot kept from its previous
                                prefill or copied from another slot's (ct_gen_params.prompt_reuse),
                                summed over utterances */
} ct_stream_info;

CT_API ct_stream_info ct_stream_get_info(ct_stream *s);

/* Message of a FAILED stream ("" otherwise). Borrowed while the stream is held. */
CT_API const char *ct_stream_errmsg(ct_stream *s);

/* ---- incremental text ------------------------------------------------------------------

   A stream submitted with ct_stream_params.text_incremental = 1 takes its text in pieces: any
   split of the bytes, UTF-8 sequences split across pieces included (they are reassembled).
   Generation uses the streaming-text layout (docs/STREAMING.md "Incremental text"; MODEL.md
   2.6 with non_streaming = 0: g->non_streaming -1 means 0 here and 1 is CT_ERR_INVALID_ARG):
   decode step k consumes text token k+2 of the utterance, so the first utterance starts as soon
   as its first token can no longer change, and a step whose token is not known yet waits (the
   other streams of the batch step on). Tokens are consumed only where more text cannot change
   them (the tokenizer's pre-tokenizer pieces before the last one), and long text is split into
   utterances of about utterance_bytes by the sentence splitter as it arrives (an utterance is
   closed once the splitter places two more after it, or at the end). With those rules the
   audio equals that of one ct_engine_submit of the whole text with non_streaming = 0, the same
   seed and voice; docs/STREAMING.md lists where it cannot. A stream whose text never ends is
   bounded by deadline_ms and text_idle_timeout_ms. */

/* Appends len bytes of UTF-8 text (NUL bytes are not text). CT_OK, or: CT_ERR_STATE when the
   stream is not incremental, its text was ended, or it has ended (its status then says why);
   CT_ERR_INVALID_ARG when the bytes are not UTF-8 (the stream fails; ct_stream_errmsg names the
   byte offset in the whole text); CT_ERR_LIMIT past 64 MiB of text (the stream fails). Safe from
   any thread (one appender at a time keeps the order). */
CT_API ct_status ct_stream_append_text(ct_stream *s, const char *utf8, size_t len);

/* Ends the text: the rest is generated and the stream then finishes. CT_ERR_STATE as above;
   CT_ERR_INVALID_ARG when the text ends inside a UTF-8 sequence or holds no words (the stream
   fails with the message). */
CT_API ct_status ct_stream_end_text(ct_stream *s);

/* Chunk release timeline: t_ms since submission and samples per chunk (codes: the samples the
   frames decode to), in order. Returns the number of chunks; fills up to cap entries (arrays may be NULL). */
CT_API int ct_stream_timeline(ct_stream *s, double *t_ms, int *samples, int cap);

#ifdef __cplusplus
}
#endif

#endif
