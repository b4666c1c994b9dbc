/* Internal layout of the codec decoder: hyper-parameters, repacked weights and the
 * streaming state. Shared by codec_load.c, codec_stream.c, codec_decode.c, codec_window.c. */
#ifndef CT_CODEC_INTERNAL_H
#define CT_CODEC_INTERNAL_H

#include <stdint.h>

#include "codec/codec.h"
#include "codec/conv.h"
#include "codec/st_bind.h"

#define CT_CODEC_MAX_UP 4     /* ConvNeXt upsample stages */
#define CT_CODEC_MAX_BLOCKS 6 /* DAC-style decoder blocks */
#define CT_CODEC_N_RU 3       /* residual units per block */
#define CT_CODEC_CONV_K 7     /* kernel of pre-conv-free decoder convs (dwconv, decoder.0, RU, final) */
#define CT_CODEC_PRE_K 3      /* pre_conv kernel */
#define CT_CODEC_ONESHOT_PIECE 64 /* frames per internal push of the one-shot path */
/* The AMX GEMM takes the weights whose calls read at least this many input rows per frame
   (ct_cv_packed.amx, set at load): with 4, a 1-frame push's 4-row calls of decoder.0 and the last
   upsampling stage's pointwise convs split their weights per call for 4 rows, and 1-frame pushes
   ran slower than on the FMA GEMM (docs/BENCH.md "Issue 15, nineteenth sitting") */
#define CT_CODEC_AMX_ROWS 8

/* Per-stage timers (ct_codec_stream_profile): rvq+pre_conv, transformer, ConvNeXt upsample,
 * decoder.0, blocks 0..MAX_BLOCKS-1, final snake+conv. */
enum {
    CT_CODEC_PROF_PRE = 0,
    CT_CODEC_PROF_TX,
    CT_CODEC_PROF_UP,
    CT_CODEC_PROF_DEC0,
    CT_CODEC_PROF_BLOCK0,
    CT_CODEC_PROF_FIN = CT_CODEC_PROF_BLOCK0 + CT_CODEC_MAX_BLOCKS,
    CT_CODEC_PROF_N
};

/* SnakeBeta parameters, precomputed: ea = exp(alpha), ib = 1 / (exp(beta) + 1e-9). */
typedef struct {
    float *ea, *ib; /* [C] */
} ct_codec_snake;

typedef struct {
    float *ln1, *ln2;         /* [hidden] RMSNorm weights */
    float *ls_attn, *ls_mlp;  /* [hidden] LayerScale */
    ct_cv_packed q, k, v;     /* hidden -> heads*hd, kv*hd, kv*hd */
    ct_cv_packed o;           /* heads*hd -> hidden */
    ct_cv_packed gate, up;    /* hidden -> ffn */
    ct_cv_packed down;        /* ffn -> hidden */
} ct_codec_layer;

typedef struct {
    int ratio;               /* transposed-conv kernel == stride */
    ct_cv_packed tconv;      /* [latent -> latent], k = ratio */
    float *tconv_b;          /* [latent] */
    float *dw, *dw_b;        /* [7][latent] (repacked), [latent] */
    float *ln_w, *ln_b;      /* [latent] LayerNorm eps 1e-6 */
    ct_cv_packed pw1, pw2;   /* latent -> 4*latent -> latent */
    float *pw1_b, *pw2_b;    /* [4*latent], [latent] */
    float *gamma;            /* [latent] */
} ct_codec_up;

typedef struct {
    ct_codec_snake a1, a2;   /* [C] */
    ct_cv_packed c1, c2;     /* k7 dilated, k1; C -> C */
    float *c1_b, *c2_b;      /* [C] */
    int dil;                 /* 1, 3, 9 */
} ct_codec_ru;

typedef struct {
    int cin, cout, rate;     /* cout = cin / 2; transposed conv k = 2*rate, stride rate */
    ct_codec_snake snake;    /* [cin] */
    ct_cv_packed tconv;      /* cin -> cout */
    float *tconv_b;          /* [cout] */
    ct_codec_ru ru[CT_CODEC_N_RU];
} ct_codec_block;

struct ct_codec {
    /* decoder_config */
    int codebook_size;   /* rows per codebook: 2048 */
    int entry_dim;       /* codebook vector width = codebook_dim / 2: 256 */
    int vq_dim;          /* RVQ output width = codebook_dim: 512 */
    int n_q;             /* codebooks per frame: 16 (1 semantic + 15 acoustic) */
    int latent;          /* 1024 */
    int hidden;          /* transformer width 512 */
    int n_layers, n_heads, n_kv, head_dim, ffn, window;
    float rms_eps;
    double rope_theta;
    int n_up;            /* len(upsampling_ratios) */
    int n_blocks;        /* len(upsample_rates) */
    int decoder_dim;     /* 1536 */
    int spf;             /* samples per frame (1920) */
    int sample_rate;     /* 24000 */

    /* weights (all owned, F32) */
    float *codebooks;            /* [n_q][codebook_size][entry_dim], normalised entries */
    ct_cv_packed proj_first;     /* entry_dim -> vq_dim */
    ct_cv_packed proj_rest;      /* entry_dim -> vq_dim */
    ct_cv_packed pre_conv;       /* k3, vq_dim -> latent */
    float *pre_conv_b;           /* [latent] */
    ct_cv_packed in_proj;        /* latent -> hidden */
    float *in_proj_b;            /* [hidden] */
    ct_codec_layer *layers;      /* [n_layers] */
    float *norm;                 /* [hidden] */
    ct_cv_packed out_proj;       /* hidden -> latent */
    float *out_proj_b;           /* [latent] */
    ct_codec_up up[CT_CODEC_MAX_UP];
    ct_cv_packed dec0;           /* k7, latent -> decoder_dim */
    float *dec0_b;               /* [decoder_dim] */
    ct_codec_block blocks[CT_CODEC_MAX_BLOCKS];
    ct_codec_snake fin_snake;    /* [decoder_dim >> n_blocks] */
    ct_cv_packed fin;            /* k7, C -> 1 */
    float *fin_b;                /* [1] */

    ct_allocs al;                /* every float allocation above, for ct_codec_free */
};

/* Streaming state. Tails hold the last H input rows of each causal op (H = (k-1)*dil for
 * convs, ceil(k/s)-1 for transposed convs); work buffers A/B/X are shared scratch. */
struct ct_codec_stream {
    const ct_codec *c;
    ct_cv_exec ex;               /* kernel variants (dispatched ISA) + pool (NULL = 1 thread) */
    int prof_on;                 /* accumulate prof[] when set */
    double prof[CT_CODEC_PROF_N]; /* seconds per stage since the last profile call */
    int max_chunk;
    int64_t pos;                 /* absolute frame position of the next pushed frame */
    int ring;                    /* KV ring slots = window - 1 + max_chunk */
    float *kv_k, *kv_v;          /* [n_layers][ring][n_kv*head_dim] */

    float *t_pre;                            /* [2][vq_dim] pre_conv input tail */
    float *t_up_in[CT_CODEC_MAX_UP];         /* [h_up[u]][latent] upsample tconv input tail */
    int h_up[CT_CODEC_MAX_UP];
    float *t_dw[CT_CODEC_MAX_UP];            /* [6][latent] ConvNeXt dwconv input tail */
    float *t_dec0;                           /* [6][latent] */
    float *t_tc[CT_CODEC_MAX_BLOCKS];        /* [h_tc[b]][cin] block transposed-conv input tail */
    int h_tc[CT_CODEC_MAX_BLOCKS];
    float *t_ru[CT_CODEC_MAX_BLOCKS][CT_CODEC_N_RU]; /* [6*dil][cout] residual conv1 input tail */
    float *t_fin;                            /* [6][C] final conv input tail */

    int piece[CT_CODEC_MAX_BLOCKS];          /* block input rows per sub-piece (cache blocking) */
    float *O[CT_CODEC_MAX_BLOCKS];           /* [piece[b] * rate][cout] block output of one sub-piece */
    size_t work;                 /* floats in each of A, B, X */
    float *A, *B, *X;            /* shared work buffers (with history headroom) */
    /* transformer scratch, rows = max_chunk */
    float *tx, *th, *tq, *tk, *tv, *ta, *tt, *tg, *tu; /* [N][hidden|hidden|qd|kvd|kvd|qd|hidden|ffn|ffn] */
    float *e0, *er;              /* [N][entry_dim] dequant scratch */
    float *rc, *rs;              /* [N][head_dim/2] RoPE tables */
    float *sc;                   /* [window] attention scores */
};

/* Checks every code in codes[n][n_q] is in [0, codebook_size). */
ct_status ct_codec_check_codes(const ct_codec *c, const int32_t *codes, int n, int frame0,
                               char *err, size_t errcap);

/* Test/bench hook: enable (1) or disable (0) the per-stage timers and zero them. */
void ct_codec_stream_profile(ct_codec_stream *s, int enable);

/* Test/bench hook: use kernel variants for ISA level isa (keeps the pool). Returns CT_OK or
 * CT_ERR_UNSUPPORTED when this build or CPU lacks them. */
ct_status ct_codec_stream_set_isa(ct_codec_stream *s, ct_isa isa);

/* Decodes n (1..max_chunk) already-checked frames, advancing the state. */
void ct_codec_run_chunk(ct_codec_stream *s, const int32_t *codes, int n, float *pcm);

#endif
