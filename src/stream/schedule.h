/* Chunk-size schedules (docs/STREAMING.md 1): when the codec decoder should emit audio, as a pure
   per-request state machine re-evaluated on every new codec frame. No threads, no clocks and no
   allocation: the caller passes the frame count and its own clock in a ct_sched_obs.

   Policies: EXACT (every frame), FIXED (first chunk IC then steady), RAMP (explicit per-chunk
   sizes, then steady), DYNAMIC (first chunk from the load, then steady) and ADAPTIVE (first chunk
   by the IC logic, then an EWMA/buffer controller that never shrinks). docs/STREAMING.md states
   the rules as implemented. */
#ifndef CT_STREAM_SCHEDULE_H
#define CT_STREAM_SCHEDULE_H

#include <stddef.h>

#include "core/status.h"

#define CT_SCHED_MAX_RAMP 16

typedef enum {
    CT_SCHED_EXACT = 0, /* one chunk per frame (stateful decoder) */
    CT_SCHED_FIXED,     /* first chunk `initial` frames, then `steady` (docs/STREAMING.md 1, rule 1) */
    CT_SCHED_RAMP,      /* chunk k holds ramp[k] frames, past the table `steady` (rule 3) */
    CT_SCHED_DYNAMIC,   /* first chunk from active/max streams, then `steady` (rule 2) */
    CT_SCHED_ADAPTIVE   /* IC logic for chunk 0, then the EWMA controller (rule 4) */
} ct_sched_kind;

typedef struct {
    ct_sched_kind kind;
    int steady;          /* codec_chunk_frames: steady chunk, frames (25) */
    int left_context;    /* codec_left_context_frames: windowed-decoder context, frames (72) */
    int initial;         /* FIXED: first chunk frames (0 = plain steady chunks, >= steady clamps
                            to steady). ADAPTIVE: first chunk frames, 0 = dynamic IC. (0) */
    int n_ramp;          /* RAMP: entries used in ramp[] (5) */
    int ramp[CT_SCHED_MAX_RAMP]; /* [n_ramp] frames of chunk k; default 2,4,8,16,25 */
    int max_streams;     /* max_num_seqs for the dynamic load (64) */
    int min_frames;      /* codec_chunk_min_frames: adaptive floor (2) */
    double margin_ms;    /* codec_chunk_safety_margin_ms (50) */
    int ramp_divisor;    /* codec_chunk_ramp_divisor: adaptive growth divisor (15) */
    int delta_min;       /* codec_chunk_ramp_delta_min: adaptive minimum growth (2) */
    double alpha;        /* EWMA weight of the newest production sample (0.3) */
    double frame_ms;     /* audio per codec frame, ms (80) */
} ct_sched_params;

/* What the caller knows when a frame arrives (or the request finishes). */
typedef struct {
    int frames_total;   /* frames produced for this request so far ("length"), >= 0 */
    int finished;       /* 1: no more frames will come; flush */
    double now_ms;      /* caller's monotonic clock, ms (any origin, same for every call) */
    int active_streams; /* requests active in the engine (DYNAMIC / adaptive dynamic IC) */
    int use_buffer;     /* 1: buffer_ms below replaces the ADAPTIVE buffer estimate */
    double buffer_ms;   /* audio buffered ahead of the playback cursor, ms (if use_buffer) */
} ct_sched_obs;

/* Per-request state. All fields are readable; only the ct_sched_* functions write them. */
typedef struct {
    ct_sched_params p;
    int ic;              /* resolved first-chunk frames (FIXED/DYNAMIC/ADAPTIVE); 0 = not yet */
    int chunks;          /* chunks emitted so far */
    int frames_emitted;  /* frames shipped in those chunks */
    int target;          /* frames the chunk being assembled needs (last evaluation) */
    int last_target;     /* frames of the previously emitted chunk (ADAPTIVE growth floor base) */
    double ewma_ms;      /* ADAPTIVE: EWMA of production ms per frame; < 0 = no sample yet */
    double first_emit_ms, last_emit_ms; /* obs->now_ms of the first / latest emit */
    int locked;          /* ADAPTIVE: locked to steady for the rest of the request */
} ct_sched;

/* The seed defaults: RAMP 2,4,8,16,25, steady 25, left context 72, initial 0, max_streams 64,
   min_frames 2, margin 50 ms, divisor 15, delta_min 2, alpha 0.3, frame 80 ms. */
ct_sched_params ct_sched_params_default(void);

/* Parses a policy string into *p, changing only the policy fields (kind, initial, ramp,
   max_streams, steady for "fixed:IC,S"); every other field keeps its value. Accepted:
     "exact" | "fixed:IC[,STEADY]" | "ramp:A,B[,...]" | "dynamic[:MAX_STREAMS]" |
     "adaptive[:IC]"   (IC 0 or absent = dynamic first chunk)
   each optionally followed by ";steady=N", ";min=N" (adaptive floor) and ";margin=MS" (adaptive
   safety margin), e.g. "adaptive;min=3;margin=160" (the calibrated controller). The result is validated with ct_sched_params_check. On error *p is unchanged and err names
   the bad part (CT_ERR_INVALID_ARG). */
ct_status ct_sched_parse(const char *spec, ct_sched_params *p, char *err, size_t errcap);

/* Validates p: steady >= 1, left_context >= 0, initial >= 0, RAMP needs 2..CT_SCHED_MAX_RAMP
   entries all > 0, max_streams >= 1, 1 <= min_frames <= steady, margin >= 0, divisor >= 1,
   delta_min >= 1, 0 < alpha <= 1, frame_ms > 0. CT_ERR_INVALID_ARG naming the field. When warn
   is non-NULL it receives "" or a non-fatal note (ramp's last entry differs from steady). */
ct_status ct_sched_params_check(const ct_sched_params *p, char *warn, size_t wcap, char *err,
                                size_t errcap);

/* Canonical policy string of p ("ramp:2,4,8,16,25"), parseable by ct_sched_parse; returns out. */
const char *ct_sched_format(const ct_sched_params *p, char *out, size_t cap);

/* Starts a request with params p (copied; checked as above, CT_ERR_INVALID_ARG on error). */
ct_status ct_sched_init(ct_sched *s, const ct_sched_params *p, char *err, size_t errcap);

/* Forgets the request state (keeps the params) for the next request. */
void ct_sched_reset(ct_sched *s);

/* Re-evaluates the schedule after a new frame (or at finish). Returns how many of the pending
   frames (frames_total - frames_emitted) to emit now as one chunk: 0 = keep waiting (or, with
   finished set, nothing left: send the end-of-stream sentinel). More than one chunk can be due
   when frames arrive in bursts: call again with the same obs until it returns 0. Returns -1 when
   obs is invalid (NULL, frames_total below what was already emitted). Never allocates. */
int ct_sched_next_chunk(ct_sched *s, const ct_sched_obs *obs);

/* Dynamic first chunk (docs/STREAMING.md 1, rule 2): steps 2,4,..,largest power of two < steady; load =
   min(active/max_streams, 1); returns steps[round_half_even(load * (n_steps - 1))], or 1 when
   steady <= 2. active < 0 counts as 0; max_streams < 1 as 1. */
int ct_sched_dynamic_ic(int steady, int active_streams, int max_streams);

/* Windowed stateless decoder: frames to decode for a chunk of new_frames ending at frame
   length_after: min(length_after, left_context + new_frames). The first
   (window - new_frames) decoded frames are context whose audio is trimmed. */
int ct_sched_decode_window(int length_after, int new_frames, int left_context);

/* Python-style round() to the nearest integer, ties to even (the seed's rounding rule). */
double ct_round_half_even(double x);

#endif
