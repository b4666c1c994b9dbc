/* The decode step over N sessions and its working set (a ct_batch). A lone session owns a
   ct_batch of one stream, so a solo frame and a batched frame run the same code
   (docs/MODEL_PATH.md). Included by model/session_internal.h. */
#ifndef CT_STEP_H
#define CT_STEP_H

#include "model/model_internal.h"

/* Working set of one decode step over up to max streams; reserved at create, nothing later. */
struct ct_batch {
    const ct_model *m;
    int max;             /* streams per step */
    int cap;             /* talker KV positions of the largest session it takes */
    ct_pool *pool;       /* compute threads; freed with the batch only when own_pool */
    int own_pool;
    ct_stack_scratch ts; /* talker, max tokens, cap positions */
    ct_stack_scratch ps; /* predictor, 2*max tokens, n_groups positions */
    float *x;            /* [2*max][max(H, PH)] stack inputs/outputs */
    float *e;            /* [2*max][H] predictor embeddings before the projection */
    float *hid;          /* [max][PH] gathered predictor hidden */
    float *logits;       /* [max][max(V, PV)] head outputs */
    ct_kv **kvs;         /* [2*max] cache of each token */
    int *pos;            /* [2*max] position of each token */
    ct_session **act;    /* [max] the sessions taking part in this call */
    int *slot;           /* [max] each one's index into the caller's arrays */
    const float **hin;   /* [max] each one's talker hidden [H], the predictor's input */
    char err[512];       /* message of the last failing call ("" when the last call succeeded) */
};

/* A session whose compute runs on a borrowed pool (no threads of its own); pool (may be NULL:
   inline on the caller's thread) outlives the session. max_context as in ct_session_params. */
ct_status ct_session_create_on(const ct_model *m, int max_context, ct_pool *pool, ct_session **out,
                               char *err, size_t errcap);
/* The same with prefill passes of prefill_chunk tokens (1..CT_PREFILL_CHUNK_MAX, else
   CT_ERR_INVALID_ARG); the prefill scratch is sized from it. ct_session_create_on uses
   CT_PREFILL_CHUNK. */
ct_status ct_session_create_chunked(const ct_model *m, int max_context, int prefill_chunk, ct_pool *pool,
                                    ct_session **out, char *err, size_t errcap);
/* A batch on a borrowed pool (may be NULL); pool outlives the batch. Limits as ct_batch_create. */
ct_status ct_batch_create_on(const ct_model *m, int max_streams, int max_context, ct_pool *pool,
                             ct_batch **out, char *err, size_t errcap);

/* Predictor half of a step: for every running session in ss[n] (NULL / finished entries skipped,
   got[i] = 0), runs the code predictor on its pending c0 and writes the frame's codes to
   codes[i*n_groups..], got[i] = 1; counts the frame (at the frame limit the session stops with
   BUDGET / MAX_FRAMES) and marks the talker step as due when generation goes on.
   CT_ERR_STATE when a session's talker step is still due; CT_ERR_INVALID_ARG for a session of
   another model, with a larger max_context, or more running sessions than max_streams (nothing
   is computed then). Codes do not depend on which other sessions share the call. */
ct_status ct_batch_codes(ct_batch *b, ct_session *const *ss, int n, int32_t *codes, int *got);
/* Talker half: the talker step (next c0 sampled, EOS ends the run) for every session in ss[n]
   whose talker step is due; the others are skipped. CT_ERR_INTERNAL when a session's talker
   logits are all non-finite (that session stops ABORTED; the others still advance). */
ct_status ct_batch_advance(ct_batch *b, ct_session *const *ss, int n);

#endif
