/* Serving engine: one engine thread owns the model and advances every admitted stream one codec
   frame per step (engine_step; a batched multi-stream step replaces its body later), decodes
   each new frame with the stream's exact stateful codec decoder and appends s16le PCM to the
   request's bounded buffer. Admission is without preemption: a request gets a stream slot
   (ct_session + ct_codec_stream created up front) only when its worst-case talker KV fits the
   remaining budget (EDGE.md 3.3); otherwise it waits in a bounded queue or is refused. New
   prefills are held back while any active stream's playback slack minus its next-chunk ETA is
   under the safety margin (EDGE.md 3.1/3.2). See docs/SERVE.md. */
#ifndef CT_SERVE_ENGINE_H
#define CT_SERVE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "codectalk.h"
#include "core/status.h"

typedef struct ct_srv_engine ct_srv_engine;
typedef struct ct_job ct_job;

typedef struct {
    size_t size;
    int max_streams;              /* stream slots, each with its own session (default 1) */
    int queue_cap;                /* requests that may wait for a slot (default 8; 0 = none) */
    int max_context;              /* talker KV positions per session (default 2048) */
    int n_threads;                /* compute threads per session and for the codec (default 1) */
    uint64_t kv_budget_bytes;     /* talker KV budget; 0 = max_streams worst-case sequences */
    uint64_t kv_bytes_per_token;  /* 0: from model_dir's geometry at 4 bytes (f32 KV) */
    const char *model_dir;        /* for the geometry (borrowed during create) */
    double safety_margin_ms;      /* throttle margin (default 120) */
    double max_defer_ms;          /* longest a prefill is held back (default 5000; 0 = forever) */
    int pcm_buffer_ms;            /* per-request PCM buffer (default 10000 ms) */
    int warmup;                   /* 1 (default): run a short generation before ready */
    int codec_chunk;              /* frames per codec push once a stream's first chunk is out
                                     (1..25, default 1 = every frame); larger pushes decode
                                     faster per frame and release audio in steps of that size */
} ct_srv_engine_params;

ct_srv_engine_params ct_srv_engine_params_default(void);

/* Creates the slots (sessions, codec streams) and starts the engine thread, which warms up and
   then serves. Model and codec are borrowed and must outlive the engine. Errors:
   CT_ERR_INVALID_ARG (bad params, no geometry), CT_ERR_LIMIT (the KV budget holds no stream:
   the message gives both numbers), CT_ERR_NOMEM, and session/codec creation failures. */
ct_status ct_srv_engine_create(const ct_model *m, const ct_codec *c, const ct_srv_engine_params *p,
                           ct_srv_engine **out, char *err, size_t errcap);

/* Stops the thread, fails every waiting or running request (CT_ERR_ABORTED) and frees the
   engine once no job is referenced by the engine any more. Jobs still held by callers stay
   valid until ct_job_release. NULL is fine. */
void ct_srv_engine_free(ct_srv_engine *e);

/* 1 after warm-up, 0 while warming up, -1 when warm-up failed (message in err). */
int ct_srv_engine_ready(ct_srv_engine *e, char *err, size_t errcap);

/* Limits actually in force. */
typedef struct {
    int max_streams, queue_cap, max_context, sample_rate, samples_per_frame;
    uint64_t kv_budget_bytes, kv_bytes_per_token, kv_bytes_per_stream;
    double safety_margin_ms;
} ct_srv_engine_limits;

ct_srv_engine_limits ct_srv_engine_get_limits(const ct_srv_engine *e);

/* Submits a request. g's strings (text, speaker, language, instruct) are copied; xvector is
   not supported (must be NULL). initial_frames (>= 0; 0 or 1 = every frame) holds the first
   audio back until that many frames are decoded. Returns CT_OK with *out (release it with
   ct_job_release), CT_ERR_LIMIT when every slot is busy and the queue is full (*retry_after_s
   set to an estimate, >= 1), CT_ERR_STATE when the engine is shutting down or failed. */
ct_status ct_srv_engine_submit(ct_srv_engine *e, const ct_gen_params *g, int initial_frames, ct_job **out,
                           int *retry_after_s);

typedef enum {
    CT_JOB_QUEUED = 0,  /* waiting for a slot (or held by the prefill throttle) */
    CT_JOB_PREFILL = 1, /* admitted, prefill running */
    CT_JOB_RUNNING = 2, /* prefill done, frames flowing */
    CT_JOB_DONE = 3,    /* generation finished (audio may still be buffered) */
    CT_JOB_FAILED = 4   /* prefill/step failed, cancelled or shut down (see ct_job_info) */
} ct_job_state;

/* Waits until the job is past the prefill (RUNNING, DONE or FAILED) or timeout_ms passed;
   returns the state then. */
ct_job_state ct_job_wait_started(ct_job *j, int timeout_ms);

/* Copies up to cap buffered s16 samples into dst and returns the count, waiting up to timeout_ms
   when none are available. *finished = 1 once generation has ended and everything was read. */
size_t ct_job_read(ct_job *j, int16_t *dst, size_t cap, int timeout_ms, int *finished);

/* Facts about a job. */
typedef struct {
    ct_job_state state;
    ct_status status;         /* CT_OK unless FAILED */
    char err[512];            /* message when FAILED */
    int text_tokens, prompt_len, frames;
    ct_stop_reason stop;
    double ttfa_ms;           /* submission to the first audio released (NAN before) */
    double queue_ms;          /* submission to admission */
    uint64_t samples;         /* samples produced so far */
} ct_job_info_t;

ct_job_info_t ct_job_info(ct_job *j);

/* The caller is done with the job: cancels it if still queued or running (its slot, KV and queue
   place are freed by the engine within one step) and drops the caller's reference. */
void ct_job_release(ct_job *j);

/* Prometheus text exposition of the engine's gauges, counters and histograms (names in
   docs/SERVE.md); malloc'd, NULL on OOM. */
char *ct_srv_engine_metrics_text(ct_srv_engine *e);

/* Counters for tests and the CLI. */
typedef struct {
    int active, queued;
    uint64_t admitted, rejected, queued_total, completed, failed, cancelled;
    uint64_t deferrals, forced_admissions, underruns;
    double underrun_ms;
    uint64_t kv_bytes_in_use;
    double step_ms, prefill_ms;   /* EWMAs */
    double audio_s;               /* total audio produced */
} ct_srv_engine_counters;

ct_srv_engine_counters ct_srv_engine_get_counters(ct_srv_engine *e);

/* Little-endian s16 of a float sample exactly as the WAV writer (src/audio/wav.c) quantises:
   clamp to [-1, 1] (NaN -> -1), scale by 32767, round half away from zero. */
int16_t ct_pcm16_of(float v);

#endif
