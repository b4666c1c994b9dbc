/* The Base models' speaker encoder (MODEL.md 1.9, 6.2): ECAPA-TDNN without BatchNorm over the
   log-mel front end (audio/mel.h) -> the x-vector (talker hidden floats). Weights are the
   speaker_encoder.* tensors (BF16 as published), converted to f32 and panel-packed at load;
   every convolution runs on the kernel table's multi-tap GEMM (kernels/conv.h) over
   time-major [T][C] activations. Immutable after load: any number of threads may embed at
   once; each call allocates its own working memory and runs on the calling thread, so the
   result never depends on a thread count. */
#ifndef CT_MODEL_SPKENC_H
#define CT_MODEL_SPKENC_H

#include <stddef.h>

#include "core/status.h"
#include "io/safetensors.h"
#include "model/config.h"

typedef struct ct_spkenc ct_spkenc;

/* Binds speaker_encoder.* of st (names, shapes [cout, cin, k] / [cout] and float dtypes
   checked against cfg; the message names the tensor) and makes the mel front end. */
ct_status ct_spkenc_load(const ct_st_file *st, const ct_spk_cfg *cfg, ct_spkenc **out, char *err,
                         size_t errcap);
void ct_spkenc_free(ct_spkenc *e);

/* Frames the encoder needs at least: the widest reflect pad of its convolutions + 1. */
int ct_spkenc_min_frames(const ct_spkenc *e);

/* x-vector of a log-mel mel[T][mel_dim] (time-major) into xvec[enc_dim]. CT_ERR_INVALID_ARG
   when T < ct_spkenc_min_frames, CT_ERR_NOMEM. */
ct_status ct_spkenc_forward(const ct_spkenc *e, const float *mel, int T, float *xvec, char *err,
                            size_t errcap);

/* pcm[n] (24 kHz mono) -> log-mel -> x-vector (no clip-length policy; that is the caller's). */
ct_status ct_spkenc_embed(const ct_spkenc *e, const float *pcm, size_t n, float *xvec, char *err,
                          size_t errcap);

#endif
