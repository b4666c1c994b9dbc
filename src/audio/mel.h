/* The speaker encoder's log-mel front end (MODEL.md 6.1), the official mel_spectrogram at
   24 kHz: reflect pad 384 both sides, periodic Hann 1024, hop 256, STFT without centering
   (FFTW3 single precision), magnitude sqrt(re^2 + im^2 + 1e-9), librosa's Slaney mel
   filterbank (128 bins, 0-12000 Hz, area-normalised; computed here), ln(max(mel, 1e-5)). The
   filterbank product goes through the kernel table's multi-tap GEMM (kernels/conv.h). */
#ifndef CT_AUDIO_MEL_H
#define CT_AUDIO_MEL_H

#include <stddef.h>

#include "core/status.h"

#define CT_MEL_RATE 24000
#define CT_MEL_NFFT 1024
#define CT_MEL_HOP 256
#define CT_MEL_BINS 128
#define CT_MEL_FMAX 12000.0
#define CT_MEL_PAD ((CT_MEL_NFFT - CT_MEL_HOP) / 2) /* 384 */
#define CT_MEL_NSPEC (CT_MEL_NFFT / 2 + 1)          /* 513 one-sided bins */

/* Window, filterbank and FFT plan; immutable after ct_mel_create, so one front end serves
   any number of threads at once. */
typedef struct ct_mel ct_mel;

/* Builds a front end. FFTW's planner is not thread-safe: plans are made (and destroyed) under
   a process-wide mutex, with FFTW_ESTIMATE so the plan, and so every result, is the same run
   to run. CT_ERR_NOMEM / CT_ERR_INTERNAL (no plan). */
ct_status ct_mel_create(ct_mel **out, char *err, size_t errcap);
void ct_mel_free(ct_mel *m);

/* Frames for n samples: floor((n + 768 - 1024) / 256) + 1, or 0 when n is too short for the
   reflect pad (n <= 384). */
int ct_mel_frames(size_t n);

/* Log-mel of pcm[n] (24 kHz mono) into out[ct_mel_frames(n)][CT_MEL_BINS] (time-major, the
   official [frames, 128] after its transpose). Allocates its working memory per call.
   CT_ERR_INVALID_ARG when n <= 384, CT_ERR_NOMEM. */
ct_status ct_mel_compute(const ct_mel *m, const float *pcm, size_t n, float *out, char *err,
                         size_t errcap);

/* librosa.filters.mel(sr=24000, n_fft=1024, n_mels=128, fmin=0, fmax=12000) (Slaney scale and
   norm), computed in double and rounded to f32 as librosa stores it: fb[CT_MEL_BINS][513]. */
void ct_mel_filterbank(float *fb);

#endif
