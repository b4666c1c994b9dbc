/* One-shot codec decode: the whole code sequence through a fresh streaming state, in pieces
 * of CT_CODEC_ONESHOT_PIECE frames (exact, since streaming equals one-shot), so memory
 * stays bounded for long inputs. */
#include <stdlib.h>

#include "codec/codec_internal.h"

ct_status ct_codec_decode(const ct_codec *c, const int32_t *codes, int n_frames, float *pcm,
                          char *err, size_t errcap) {
    return ct_codec_decode_pool(c, NULL, codes, n_frames, pcm, err, errcap);
}

ct_status ct_codec_decode_pool(const ct_codec *c, ct_pool *pool, const int32_t *codes, int n_frames,
                               float *pcm, char *err, size_t errcap) {
    if (!c || n_frames < 0 || (n_frames > 0 && (!codes || !pcm)))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_decode: NULL argument or negative frame count");
    if (n_frames == 0) return CT_OK;
    if ((long long)n_frames * c->spf > (long long)(((size_t)-1) / 2 / sizeof(float)))
        return ct_errf(err, errcap, CT_ERR_LIMIT, "ct_codec_decode: %d frames is too many", n_frames);
    ct_status st = ct_codec_check_codes(c, codes, n_frames, 0, err, errcap);
    if (st != CT_OK) return st;
    int piece = n_frames < CT_CODEC_ONESHOT_PIECE ? n_frames : CT_CODEC_ONESHOT_PIECE;
    ct_codec_stream *s = NULL;
    st = ct_codec_stream_create(c, piece, &s, err, errcap);
    if (st != CT_OK) return st;
    ct_codec_stream_set_pool(s, pool);
    for (int f = 0; f < n_frames; f += piece) {
        int n = n_frames - f < piece ? n_frames - f : piece;
        ct_codec_run_chunk(s, codes + (size_t)f * (size_t)c->n_q, n, pcm + (size_t)f * (size_t)c->spf);
    }
    ct_codec_stream_free(s);
    return CT_OK;
}
