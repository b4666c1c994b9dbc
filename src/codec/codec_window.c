/* Windowed stateless codec decode (the form of docs/EXPORT.md, codec programs): decode
 * context + chunk frames from a fresh state (RoPE positions from 0) and keep only the samples
 * of the chunk frames. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"

ct_status ct_codec_decode_window(const ct_codec *c, const int32_t *ctx_codes, int n_ctx,
                                 const int32_t *chunk_codes, int n_chunk, float *pcm,
                                 char *err, size_t errcap) {
    return ct_codec_decode_window_pool(c, NULL, ctx_codes, n_ctx, chunk_codes, n_chunk, pcm, err, errcap);
}

ct_status ct_codec_decode_window_pool(const ct_codec *c, ct_pool *pool, const int32_t *ctx_codes, int n_ctx,
                                      const int32_t *chunk_codes, int n_chunk, float *pcm, char *err,
                                      size_t errcap) {
    if (!c || !chunk_codes || !pcm || n_chunk < 1 || n_ctx < 0 || (n_ctx > 0 && !ctx_codes))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "ct_codec_decode_window: NULL argument or bad frame counts (context %d, chunk %d)", n_ctx,
                       n_chunk);
    if (n_ctx > (1 << 20) || n_chunk > (1 << 20))
        return ct_errf(err, errcap, CT_ERR_LIMIT, "ct_codec_decode_window: window too long");
    ct_status st = ct_codec_check_codes(c, ctx_codes, n_ctx, 0, err, errcap);
    if (st == CT_OK) st = ct_codec_check_codes(c, chunk_codes, n_chunk, n_ctx, err, errcap);
    if (st != CT_OK) return st;
    const size_t nq = (size_t)c->n_q, spf = (size_t)c->spf, tot = (size_t)n_ctx + (size_t)n_chunk;
    int32_t *codes = malloc(tot * nq * sizeof *codes);
    float *wav = malloc(tot * spf * sizeof *wav);
    if (!codes || !wav) {
        free(codes);
        free(wav);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "ct_codec_decode_window: out of memory");
    }
    if (n_ctx) memcpy(codes, ctx_codes, (size_t)n_ctx * nq * sizeof *codes);
    memcpy(codes + (size_t)n_ctx * nq, chunk_codes, (size_t)n_chunk * nq * sizeof *codes);
    st = ct_codec_decode_pool(c, pool, codes, (int)tot, wav, err, errcap);
    if (st == CT_OK) memcpy(pcm, wav + (size_t)n_ctx * spf, (size_t)n_chunk * spf * sizeof *pcm);
    free(codes);
    free(wav);
    return st;
}
