/* The loaded model (weights bound by name into the mmap'd checkpoint) and the step entry
   points shared by sessions and tests. */
#ifndef CT_MODEL_INTERNAL_H
#define CT_MODEL_INTERNAL_H

#include <pthread.h>

#include "codectalk.h"
#include "core/sha256.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/config.h"
#include "model/spkenc.h"
#include "model/stack.h"
#include "text/bpe.h"

#define CT_MAX_GROUPS 64

/* Load-time weight format of one component (ct_model_params.talker_weights, predictor_weights;
   MIXED = attention and lm heads int8, MLP int4). */
enum { CT_WFMT_STORED = 0, CT_WFMT_INT8, CT_WFMT_INT4, CT_WFMT_MIXED };

/* Weight panels stored in a weight file (quantize --weight-panels, the weight cache): one U8
   tensor holding the block pack_panels would build (ct_model.pan_base), first in the file and
   64-byte aligned, and the __metadata__ key naming the kernels' layout (CT_XQ_PAN_LAYOUT). */
#define CT_PANELS_TENSOR "codectalk.weight_panels"
#define CT_PANELS_META_LAYOUT "codectalk.panel_layout"

struct ct_model {
    ct_config cfg;
    ct_st_file *st;          /* model.safetensors mapping */
    ct_bpe *tok;
    int f32_weights;
    int weight_panels;         /* ct_model_params.weight_panels */
    int wfmt[2];             /* CT_WFMT_* of the talker [0] and the code predictor [1] */
    void **owned;            /* f32 copies and quantized weights made at load */
    size_t n_owned, cap_owned;
    uint64_t weight_bytes;   /* bytes of every bound weight as loaded (ct_mat_bytes, f32 vectors) */
    uint64_t pan_bytes;      /* bytes of the weight panels in use (ct_mat.pan), 0: none */
    const uint8_t *pan_base; /* [pan_bytes] those panels, one block in the order of pack_panels */
    int pan_mapped;          /* 1: pan_base lies in the weight file's mapping, 0: packed at load */
    char pan_note[256];      /* "" or why the weight file's panels were not used */
    /* weight cache (model/wcache.h) and where the matrices came from (ct_model_info) */
    ct_st_file *qst;         /* the cache file's mapping when valid (NULL: none) */
    char src_path[4096];     /* <dir>/model.safetensors */
    char cache_path[4096];   /* the cache file of this model and formats ("" = no caching) */
    char cache_warn[1024];   /* "" or why the cache was not used / not written */
    int n_converted, n_cached, n_prequant; /* matrices converted at load / from qst / stored quantized */
    /* talker */
    ct_mat text_emb;         /* [text_vocab, text_hidden] */
    ct_mat tp_fc1;           /* [text_hidden, text_hidden] */
    const float *tp_b1;      /* [text_hidden] */
    ct_mat tp_fc2;           /* [H, text_hidden] */
    const float *tp_b2;      /* [H] */
    ct_mat codec_emb;        /* [talker vocab, H] */
    ct_mat codec_head;       /* [talker vocab, H] */
    ct_layer_w *t_layers;    /* [talker layers] */
    ct_stack_w talker;
    /* code predictor */
    int has_proj;
    ct_mat mtp_proj;         /* [pH, H] (1.7B only) */
    const float *mtp_b;      /* [pH] */
    ct_mat pred_emb[CT_MAX_GROUPS];  /* [n_groups-1] x [codebook, H] */
    ct_mat pred_head[CT_MAX_GROUPS]; /* [n_groups-1] x [codebook, pH] */
    ct_layer_w *p_layers;    /* [pred layers] */
    ct_stack_w pred;
    /* ct_model_hash: config.json is hashed at load into hash_ctx; the tensors are added and
       the digest finished once, on the first call (under hash_mu). */
    ct_sha256_ctx hash_ctx;
    pthread_mutex_t hash_mu;
    int hash_mu_init, hash_done;
    char hash[65];
    /* speaker encoder (Base models only; NULL otherwise) */
    ct_spkenc *spk;
};

/* Starts the model hash with the bytes of dir/config.json (model/voice.c); at load. */
ct_status ct_model_hash_begin(ct_model *m, const char *dir, char *err, size_t errcap);

/* t(id): text_projection(text_embedding[id]) -> out[H]; tmp needs 2*text_hidden floats. */
void ct_embed_text(const ct_model *m, int id, float *out, float *tmp);
/* Adds codec_embedding[id] (talker table) to out[H]. */
void ct_embed_codec_add(const ct_model *m, int id, float *out);
/* Adds code_predictor.codec_embedding[g-1][code] (g in 1..n_groups-1) to out[H]. */
void ct_embed_group_add(const ct_model *m, int g, int code, float *out);

#endif
