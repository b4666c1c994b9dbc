/* Qwen3-TTS-Tokenizer-12Hz decoder ("Code2Wav"): 16 codes per 80 ms frame -> 1920 samples
 * of 24 kHz mono PCM in [-1, 1] (stages in docs/CODEC.md). F32 throughout. Three entry points
 * share one implementation: a one-shot decode, an exact stateful streaming decoder (per-conv
 * history tails, KV ring per transformer layer, absolute RoPE positions) and a stateless
 * windowed decode (the exportable form: docs/EXPORT.md, codec programs). Kernels follow the
 * process-wide dispatched ISA (ct_kernels()); an optional ct_pool splits the heavy stages over
 * threads. */
#ifndef CT_CODEC_H
#define CT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "codectalk.h"
#include "core/pool.h"

/* ct_codec, ct_codec_stream, ct_codec_load / free, samples_per_frame, sample_rate, n_groups,
 * ct_codec_decode and ct_codec_stream_create / push / reset / free are public (codectalk.h,
 * codec decoder section, with their contracts). The variants below are internal. */

/* Multiply-adds the decoder does per frame: every conv and linear, counted from the loaded
   widths (attention scores excluded). */
double ct_codec_macs_per_frame(const ct_codec *c);

/* One-shot decode as ct_codec_decode, with the heavy stages split over pool's threads
 * (pool may be NULL = calling thread only). The output does not depend on the thread
 * count (bit-identical). The pool must not be running another job during the call. */
ct_status ct_codec_decode_pool(const ct_codec *c, ct_pool *pool, const int32_t *codes, int n_frames,
                               float *pcm, char *err, size_t errcap);

/* Makes later pushes run the heavy stages (GEMMs, SnakeBeta) on pool's threads; NULL goes
 * back to the calling thread only. The pool is borrowed (must outlive its use by the
 * stream, and not be running another job during a push). Output is bit-identical for every
 * thread count. CT_ERR_INVALID_ARG when s is NULL. */
ct_status ct_codec_stream_set_pool(ct_codec_stream *s, ct_pool *pool);

/* A streaming decoder's state (the history of the frames pushed so far: every conv tail, the
 * KV entries of the last window - 1 positions per layer, the position) as a snapshot: pushing
 * the same frames into any stream of the same codec after ct_codec_stream_state_load gives
 * bit for bit the samples the saved stream would give. The engine keeps the state after an
 * ICL reference (docs/STREAMING.md). Floats of a snapshot (fixed per codec): */
size_t ct_codec_stream_state_floats(const ct_codec_stream *s);
/* Writes the snapshot to buf[ct_codec_stream_state_floats(s)] and the position to *pos. */
void ct_codec_stream_state_save(const ct_codec_stream *s, float *buf, int64_t *pos);
/* Makes s (any max_chunk) continue from a snapshot of a stream of the same codec. */
void ct_codec_stream_state_load(ct_codec_stream *s, const float *buf, int64_t pos);

/* Decodes the next n_frames[k] frames of each of ns streams in one call, as ns calls of
 * ct_codec_stream_push would (each stream's PCM bit-identical to its own push, in any batch
 * and on any thread count), but with the weight-heavy GEMMs passing over each weight once for
 * all streams (codec/conv.h batched forms); per-stream state (conv histories, KV ring,
 * positions) stays per stream. The streams must be distinct and of one codec with the same
 * kernel level; the heavy stages run on s[0]'s pool. pcm[k] receives n_frames[k] *
 * samples_per_frame samples. Checks everything (NULLs, frame counts within each stream's
 * max_chunk, codes) before decoding anything: on an error (CT_ERR_INVALID_ARG naming the
 * stream) no state changes. ct_codec_stream_push is the batch of one. */
ct_status ct_codec_stream_push_batch(ct_codec_stream *const *s, int ns, const int32_t *const *codes,
                                     const int *n_frames, float *const *pcm, char *err, size_t errcap);

/* Windowed stateless decode: decodes (n_ctx + n_chunk) frames with no state (RoPE
 * positions from 0) and writes only the last n_chunk * samples_per_frame samples to pcm.
 * ctx_codes holds the n_ctx (= min(context, available)) frames before the chunk; it may be
 * NULL when n_ctx == 0. Allocates per call. With n_ctx covering all previous frames the
 * result equals the one-shot decode of the prefix. Errors as ct_codec_decode. */
ct_status ct_codec_decode_window(const ct_codec *c, const int32_t *ctx_codes, int n_ctx,
                                 const int32_t *chunk_codes, int n_chunk, float *pcm,
                                 char *err, size_t errcap);
/* The same with a pool (NULL = calling thread only). */
ct_status ct_codec_decode_window_pool(const ct_codec *c, ct_pool *pool, const int32_t *ctx_codes, int n_ctx,
                                      const int32_t *chunk_codes, int n_chunk, float *pcm, char *err,
                                      size_t errcap);

#endif
