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

typedef struct ct_codec ct_codec;               /* immutable after load, shareable */
typedef struct ct_codec_stream ct_codec_stream; /* per-stream state, one thread at a time */

/* Loads dir/speech_tokenizer/{config.json,model.safetensors} (dir = model directory).
 * Every width comes from decoder_config and is checked against the tensor shapes; the
 * weights are copied (repacked) so the file is unmapped before returning.
 * Errors: CT_ERR_INVALID_ARG (NULL args), CT_ERR_IO (missing/unreadable file),
 * CT_ERR_FORMAT (bad JSON, missing/mis-shaped/non-F32 tensor: the message names the
 * tensor and both shapes), CT_ERR_UNSUPPORTED (a config variant not handled),
 * CT_ERR_NOMEM. */
ct_status ct_codec_load(const char *model_dir, ct_codec **out, char *err, size_t errcap);

/* Frees a codec (NULL is fine). No stream created from it may be used afterwards. */
void ct_codec_free(ct_codec *c);

int ct_codec_samples_per_frame(const ct_codec *c); /* product of all upsampling factors: 1920 */
int ct_codec_sample_rate(const ct_codec *c);       /* output_sample_rate: 24000 */
int ct_codec_n_groups(const ct_codec *c);          /* codebooks per frame: 16 */
/* Multiply-adds the decoder does per frame: every conv and linear, counted from the loaded
   widths (attention scores excluded). */
double ct_codec_macs_per_frame(const ct_codec *c);

/* One-shot: codes [n_frames][n_groups] (frame-major, codebook 0 first) ->
 * pcm[n_frames * samples_per_frame]. Allocates its working memory per call (offline path;
 * long inputs are processed in pieces through the exact streaming state, so memory stays
 * bounded and the result is that of decoding the whole sequence at once).
 * n_frames == 0 is a no-op. Codes outside [0, codebook_size) -> CT_ERR_INVALID_ARG naming
 * the frame and group (nothing written). Thread-safe on a shared codec. */
ct_status ct_codec_decode(const ct_codec *c, const int32_t *codes, int n_frames, float *pcm,
                          char *err, size_t errcap);

/* One-shot decode as ct_codec_decode, with the heavy stages split over pool's threads
 * (pool may be NULL = calling thread only). The output does not depend on the thread
 * count (bit-identical). The pool must not be running another job during the call. */
ct_status ct_codec_decode_pool(const ct_codec *c, ct_pool *pool, const int32_t *codes, int n_frames,
                               float *pcm, char *err, size_t errcap);

/* Streaming: the state is sized up front for up to max_chunk (>= 1) frames per push;
 * nothing allocates per push. CT_ERR_INVALID_ARG, CT_ERR_NOMEM. */
ct_status ct_codec_stream_create(const ct_codec *c, int max_chunk, ct_codec_stream **out,
                                 char *err, size_t errcap);

/* Pushes n_frames (1..max_chunk) new frames and writes exactly n_frames * samples_per_frame
 * new samples to pcm. The concatenated output of any sequence of pushes equals the one-shot
 * decode of the concatenated codes. Bad codes or n_frames out of range ->
 * CT_ERR_INVALID_ARG with the state untouched. Cost per frame does not depend on how many
 * frames were pushed before. */
ct_status ct_codec_stream_push(ct_codec_stream *s, const int32_t *codes, int n_frames, float *pcm,
                               char *err, size_t errcap);

/* Makes later pushes run the heavy stages (GEMMs, SnakeBeta) on pool's threads; NULL goes
 * back to the calling thread only. The pool is borrowed (must outlive its use by the
 * stream, and not be running another job during a push). Output is bit-identical for every
 * thread count. CT_ERR_INVALID_ARG when s is NULL. */
ct_status ct_codec_stream_set_pool(ct_codec_stream *s, ct_pool *pool);

/* Back to the start-of-stream state (zero history, position 0). */
void ct_codec_stream_reset(ct_codec_stream *s);

/* Frees a stream (NULL is fine). */
void ct_codec_stream_free(ct_codec_stream *s);

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
