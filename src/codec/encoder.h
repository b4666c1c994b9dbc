/* Speech-tokenizer encoder (Mimi-style, MODEL.md 5.4; docs/CLONING.md "Speech-tokenizer
 * encoder"): 24 kHz mono PCM -> SEANet causal convs (ELU, strided downsampling to 25 Hz) ->
 * 8-layer pre-LayerNorm transformer (plain causal mask, as the official code builds it) ->
 * k4/s2 downsample with replicate padding (12.5 Hz) -> split RVQ (1 semantic + 15 acoustic
 * codebooks) -> 16 codes per 80 ms frame. F32 throughout, on the codec conv kernels
 * (codec/conv.h). Public entry points: ct_speech_encoder_load / ct_speech_encode /
 * ct_speech_encoder_free (codectalk.h). */
#ifndef CT_CODEC_ENCODER_H
#define CT_CODEC_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "codec/conv.h"
#include "codec/st_bind.h"
#include "codectalk.h"

#define CT_ENC_MAX_STAGES 8 /* SEANet downsampling stages (len(upsampling_ratios)) */
#define CT_ENC_MAX_RES 4    /* residual blocks per stage (num_residual_layers) */
#define CT_ENC_N_CODES 16   /* codes per frame (encoder_valid_num_quantizers) */

typedef struct {
    ct_cv_packed c1;   /* k res_k, dilation dil: C -> C / compress */
    float *c1_b;       /* [C / compress] */
    ct_cv_packed c2;   /* k1: C / compress -> C */
    float *c2_b;       /* [C] */
    int dil;
} ct_enc_res;

typedef struct {
    int C, ratio;      /* input channels, stride (kernel 2 * ratio) */
    ct_enc_res res[CT_ENC_MAX_RES];
    ct_cv_packed down; /* the strided conv over super-rows of `ratio` steps: k 2, ratio*C -> 2C */
    float *down_b;     /* [2C] */
} ct_enc_stage;

typedef struct {
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* [hidden] LayerNorm */
    float *ls_attn, *ls_mlp;              /* [hidden] LayerScale */
    ct_cv_packed q, k, v;                 /* hidden -> heads*hd, kv*hd, kv*hd */
    ct_cv_packed o;                       /* heads*hd -> hidden */
    ct_cv_packed fc1, fc2;                /* hidden -> ffn -> hidden */
} ct_enc_layer;

struct ct_speech_encoder {
    /* encoder_config */
    int filters, n_stages, n_res, res_k, compress, k0, k_last;
    int hidden, n_layers, n_heads, n_kv, head_dim, ffn;
    float norm_eps;
    double rope_theta;
    int codebook_size, cb_dim;  /* 2048, 256 */
    int n_codes;                /* 16: 1 semantic + 15 acoustic */
    int hop;                    /* samples per 25 Hz step: product of the ratios (960) */
    int spf;                    /* samples per code frame: 2 * hop (1920) */

    /* weights (owned, F32, repacked) */
    ct_cv_packed conv0;         /* k0: 1 -> filters */
    float *conv0_b;
    ct_enc_stage st[CT_ENC_MAX_STAGES];
    ct_cv_packed conv_last;     /* k_last: filters << n_stages -> hidden */
    float *conv_last_b;
    ct_enc_layer *layers;       /* [n_layers] */
    ct_cv_packed down;          /* k4 s2 as super-rows: k 2, 2*hidden -> hidden, no bias */
    int has_in_proj;            /* 0 when vq dim == hidden (identity) */
    ct_cv_packed sem_in, ac_in; /* hidden -> cb_dim (1x1, no bias) */
    ct_cv_packed cb[CT_ENC_N_CODES]; /* codebook g as a linear cb_dim -> codebook_size (entries) */
    float *cb_bias[CT_ENC_N_CODES];  /* [codebook_size]: -0.5 |entry|^2 */
    ct_allocs al;
};

/* Intermediate outputs (test hook); each pointer NULL or a buffer of the stated size, with
 * T = ceil(n / hop) and F = ceil(T / 2). Time-major. */
typedef struct {
    float *seanet;      /* [T][hidden] SEANet output */
    float *transformer; /* [T][hidden] transformer output */
    float *downsample;  /* [F][hidden] 12.5 Hz embeddings (RVQ input) */
} ct_speech_enc_taps;

/* ct_speech_encode with the GEMMs run through ex (NULL: the process kernel table, calling
 * thread only; ex->pool splits GEMMs over threads, the result is the same bits for every
 * thread count) and optional taps. Allocates its working memory once per call, sized from n. */
ct_status ct_speech_encode_ex(const ct_speech_encoder *e, const ct_cv_exec *ex, const float *pcm, size_t n,
                              int32_t *codes, int max_frames, int *n_frames, ct_speech_enc_taps *taps,
                              char *err, size_t errcap);

#endif
