/* Presets, tensor inventories (docs/MAKE_MODEL.md) and the counter-based weight generator
 * behind ct_make_model. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/make_model.h"

/* ---------------------------------------------------------------------------------------
 * Presets */

#define CODEC_FULL                                                                          \
    .c_codebook_size = 2048, .c_codebook_dim = 512, .c_vq_hidden = 512, .c_nq = 16,         \
    .c_latent = 1024, .c_hidden = 512, .c_layers = 8, .c_heads = 16, .c_kv_heads = 16,      \
    .c_head_dim = 64, .c_ffn = 1024, .c_decoder_dim = 1536, .c_window = 72,                 \
    .c_upsample_rates = {8, 5, 4, 3}, .c_upsampling_ratios = {2, 2}, .e_filters = 64,       \
    .e_hidden = 512, .e_layers = 8, .e_heads = 8, .e_kv_heads = 8, .e_head_dim = 64,        \
    .e_ffn = 2048, .e_cb_dim = 256, .e_nq = 32

#define CODEC_TINY                                                                          \
    .c_codebook_size = 2048, .c_codebook_dim = 64, .c_vq_hidden = 64, .c_nq = 16,           \
    .c_latent = 64, .c_hidden = 64, .c_layers = 2, .c_heads = 4, .c_kv_heads = 4,           \
    .c_head_dim = 16, .c_ffn = 128, .c_decoder_dim = 128, .c_window = 72,                   \
    .c_upsample_rates = {8, 5, 4, 3}, .c_upsampling_ratios = {2, 2}, .e_filters = 16,       \
    .e_hidden = 64, .e_layers = 2, .e_heads = 4, .e_kv_heads = 4, .e_head_dim = 16,         \
    .e_ffn = 256, .e_cb_dim = 16, .e_nq = 20

#define TALKER_COMMON                                                                       \
    .text_vocab = 151936, .text_hidden = 2048, .layers = 28, .heads = 16, .kv_heads = 8,    \
    .head_dim = 128, .codec_vocab = 3072, .code_groups = 16, .mrope = {24, 20, 20},         \
    .cp_hidden = 1024, .cp_ffn = 3072, .cp_layers = 5, .cp_heads = 16, .cp_kv_heads = 8,    \
    .cp_head_dim = 128, .cp_vocab = 2048

#define TINY_TALKER                                                                         \
    .size_tag = "0b6", .text_vocab = 151936, .text_hidden = 64, .hidden = 128, .ffn = 384,  \
    .layers = 4, .heads = 4, .kv_heads = 2, .head_dim = 32, .codec_vocab = 3072,            \
    .code_groups = 16, .mrope = {6, 5, 5}, .cp_hidden = 128, .cp_ffn = 384, .cp_layers = 2, \
    .cp_heads = 4, .cp_kv_heads = 2, .cp_head_dim = 32, .cp_vocab = 2048

/* parity128: the official-parity model at SIMD widths (tests/data/wide_parity): every talker
   and predictor matmul has >= 128 columns, head_dim 64; 2 + 2 layers keep it quick. */
#define PARITY128_TALKER                                                                    \
    .size_tag = "0b6", .text_vocab = 151936, .text_hidden = 128, .hidden = 128, .ffn = 384, \
    .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 64, .codec_vocab = 3072,            \
    .code_groups = 16, .mrope = {12, 10, 10}, .cp_hidden = 128, .cp_ffn = 320,              \
    .cp_layers = 2, .cp_heads = 4, .cp_kv_heads = 2, .cp_head_dim = 64, .cp_vocab = 2048

static const ct_mm_preset presets[] = {
    {.name = "tiny", .model_type = "custom_voice", .voices = 1, .spk_enc_dim = 0, TINY_TALKER, CODEC_TINY},
    {.name = "tiny-base", .model_type = "base", .voices = 0, .spk_enc_dim = 128, TINY_TALKER, CODEC_TINY},
    {.name = "parity128", .model_type = "custom_voice", .voices = 1, .spk_enc_dim = 0, PARITY128_TALKER,
     CODEC_TINY},
    {.name = "0.6b-customvoice", .size_tag = "0b6", .model_type = "custom_voice", .voices = 1,
     .spk_enc_dim = 0, .hidden = 1024, .ffn = 3072, TALKER_COMMON, CODEC_FULL},
    {.name = "0.6b-base", .size_tag = "0b6", .model_type = "base", .voices = 0, .spk_enc_dim = 1024,
     .hidden = 1024, .ffn = 3072, TALKER_COMMON, CODEC_FULL},
    {.name = "1.7b-customvoice", .size_tag = "1b7", .model_type = "custom_voice", .voices = 1,
     .spk_enc_dim = 0, .hidden = 2048, .ffn = 6144, TALKER_COMMON, CODEC_FULL},
    {.name = "1.7b-base", .size_tag = "1b7", .model_type = "base", .voices = 0, .spk_enc_dim = 2048,
     .hidden = 2048, .ffn = 6144, TALKER_COMMON, CODEC_FULL},
    {.name = "1.7b-voicedesign", .size_tag = "1b7", .model_type = "voice_design", .voices = 0,
     .spk_enc_dim = 0, .hidden = 2048, .ffn = 6144, TALKER_COMMON, CODEC_FULL},
};

#define N_PRESETS (sizeof(presets) / sizeof(presets[0]))

static const char *const preset_names[] = {"tiny", "tiny-base", "parity128", "0.6b-customvoice",
                                           "0.6b-base", "1.7b-customvoice", "1.7b-base",
                                           "1.7b-voicedesign", NULL};

const char *const *ct_make_model_presets(void) { return preset_names; }

const ct_mm_preset *ct_mm_find_preset(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

/* ---------------------------------------------------------------------------------------
 * Generator: splitmix64 finaliser over (seed, tensor key, element index). */

#define GOLDEN 0x9E3779B97F4A7C15ULL

static inline uint64_t mix64(uint64_t z) {
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z;
}

static uint64_t name_key(const char *s) {
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return mix64(h);
}

/* Uniform in [-1, 1) from element i of stream. */
static inline float unit(uint64_t stream, uint64_t i) {
    int64_t v = (int64_t)mix64(stream + (i + 1) * GOLDEN) >> 40; /* 24-bit signed */
    return (float)v * (1.0f / 8388608.0f);
}

static inline uint64_t stream_of(uint64_t seed, uint64_t key) { return mix64(seed * GOLDEN + 0x632BE59BD9B4E019ULL) ^ key; }

void ct_mm_generate(const ct_mm_tensor *t, uint64_t seed, uint64_t start, size_t n, float *dst) {
    uint64_t s = stream_of(seed, t->key);
    const float c = t->center, h = t->half;
    if (t->init == CT_MM_INIT_CODEBOOK_SUM && t->row > 0) {
        uint64_t rs = stream_of(seed, t->ref_key);
        uint64_t row = (uint64_t)t->row;
        size_t k = 0;
        while (k < n) {
            uint64_t i = start + k;
            uint64_t r = i / row;
            float usage = t->ref_center + t->ref_half * unit(rs, r);
            size_t m = (size_t)((r + 1) * row - i);
            if (m > n - k) m = n - k;
            for (size_t j = 0; j < m; j++) dst[k + j] = usage * (c + h * unit(s, i + j));
            k += m;
        }
        return;
    }
    for (size_t j = 0; j < n; j++) dst[j] = c + h * unit(s, start + j);
}

uint16_t ct_mm_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

uint64_t ct_mm_numel(const ct_mm_tensor *t) {
    uint64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (uint64_t)t->shape[i];
    return n;
}

/* ---------------------------------------------------------------------------------------
 * Inventory builder */

typedef struct {
    ct_mm_tensor *t;
    size_t n, cap;
    ct_stw_dtype dt;
    int failed;
} builder;

static const float SQRT3 = 1.7320508f;

/* Adds a tensor with uniform values of mean `center` and standard deviation `std`. */
static ct_mm_tensor *add(builder *b, float center, float std, int ndim, const int64_t *shape,
                         const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

static ct_mm_tensor *add(builder *b, float center, float std, int ndim, const int64_t *shape,
                         const char *fmt, ...) {
    if (b->failed) return NULL;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        ct_mm_tensor *nt = realloc(b->t, nc * sizeof(*nt));
        if (!nt) {
            b->failed = 1;
            return NULL;
        }
        b->t = nt;
        b->cap = nc;
    }
    ct_mm_tensor *t = &b->t[b->n++];
    memset(t, 0, sizeof(*t));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->dtype = b->dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->init = CT_MM_INIT_UNIFORM;
    t->center = center;
    t->half = std * SQRT3;
    t->key = name_key(t->name);
    return t;
}

#define S1(a) (const int64_t[]){(a)}
#define S2(a, b) (const int64_t[]){(a), (b)}
#define S3(a, b, c) (const int64_t[]){(a), (b), (c)}

/* Linear weight [out, in] with std gain/sqrt(in). */
#define LIN(b, gain, o, i, ...) add((b), 0.0f, (gain) / sqrtf((float)(i)), 2, S2((o), (i)), __VA_ARGS__)
/* Conv weight [out, in, k] with std gain/sqrt(in*k). */
#define CONV(b, gain, o, i, k, ...) \
    add((b), 0.0f, (gain) / sqrtf((float)(i) * (float)(k)), 3, S3((o), (i), (k)), __VA_ARGS__)
/* Bias: small. */
#define BIAS(b, n, ...) add((b), 0.0f, 0.01f, 1, S1(n), __VA_ARGS__)
/* Norm weight: about 1. */
#define NORMW(b, n, ...) add((b), 1.0f, 0.05f, 1, S1(n), __VA_ARGS__)

/* One Qwen3 decoder layer (11 tensors) at prefix, e.g. "talker.model.layers.3". */
static void add_qwen3_layer(builder *b, const char *pre, int H, int F, int heads, int kv, int hd,
                            int n_layers) {
    float resid = 1.0f / sqrtf(2.0f * (float)n_layers);
    NORMW(b, H, "%s.input_layernorm.weight", pre);
    LIN(b, 1.0f, heads * hd, H, "%s.self_attn.q_proj.weight", pre);
    LIN(b, 1.0f, kv * hd, H, "%s.self_attn.k_proj.weight", pre);
    LIN(b, 1.0f, kv * hd, H, "%s.self_attn.v_proj.weight", pre);
    LIN(b, resid, H, heads * hd, "%s.self_attn.o_proj.weight", pre);
    NORMW(b, hd, "%s.self_attn.q_norm.weight", pre);
    NORMW(b, hd, "%s.self_attn.k_norm.weight", pre);
    NORMW(b, H, "%s.post_attention_layernorm.weight", pre);
    LIN(b, 1.0f, F, H, "%s.mlp.gate_proj.weight", pre);
    LIN(b, 1.0f, F, H, "%s.mlp.up_proj.weight", pre);
    LIN(b, resid, H, F, "%s.mlp.down_proj.weight", pre);
}

static void build_main(builder *b, const ct_mm_preset *p) {
    char pre[96];
    const int H = p->hidden, TH = p->text_hidden;
    add(b, 0.0f, 1.0f, 2, S2(p->text_vocab, TH), "talker.model.text_embedding.weight");
    LIN(b, 1.0f, TH, TH, "talker.text_projection.linear_fc1.weight");
    BIAS(b, TH, "talker.text_projection.linear_fc1.bias");
    LIN(b, 1.0f, H, TH, "talker.text_projection.linear_fc2.weight");
    BIAS(b, H, "talker.text_projection.linear_fc2.bias");
    add(b, 0.0f, 0.5f, 2, S2(p->codec_vocab, H), "talker.model.codec_embedding.weight");
    for (int l = 0; l < p->layers; l++) {
        snprintf(pre, sizeof pre, "talker.model.layers.%d", l);
        add_qwen3_layer(b, pre, H, p->ffn, p->heads, p->kv_heads, p->head_dim, p->layers);
    }
    NORMW(b, H, "talker.model.norm.weight");
    LIN(b, 1.0f, p->codec_vocab, H, "talker.codec_head.weight");

    if (p->cp_hidden != H) {
        LIN(b, 1.0f, p->cp_hidden, H, "talker.code_predictor.small_to_mtp_projection.weight");
        BIAS(b, p->cp_hidden, "talker.code_predictor.small_to_mtp_projection.bias");
    }
    for (int g = 0; g < p->code_groups - 1; g++)
        add(b, 0.0f, 0.25f, 2, S2(p->cp_vocab, H), "talker.code_predictor.model.codec_embedding.%d.weight", g);
    for (int l = 0; l < p->cp_layers; l++) {
        snprintf(pre, sizeof pre, "talker.code_predictor.model.layers.%d", l);
        add_qwen3_layer(b, pre, p->cp_hidden, p->cp_ffn, p->cp_heads, p->cp_kv_heads, p->cp_head_dim,
                        p->cp_layers);
    }
    NORMW(b, p->cp_hidden, "talker.code_predictor.model.norm.weight");
    for (int g = 0; g < p->code_groups - 1; g++)
        LIN(b, 1.0f, p->cp_vocab, p->cp_hidden, "talker.code_predictor.lm_head.%d.weight", g);

    if (p->spk_enc_dim > 0) {
        /* ECAPA-TDNN with the class-default channel layout (docs/MAKE_MODEL.md). */
        const int C = 512, mel = 128, att = 128, se = 128, scale = 8, sub = C / scale;
        CONV(b, 1.0f, C, mel, 5, "speaker_encoder.blocks.0.conv.weight");
        BIAS(b, C, "speaker_encoder.blocks.0.conv.bias");
        for (int k = 1; k <= 3; k++) {
            CONV(b, 1.0f, C, C, 1, "speaker_encoder.blocks.%d.tdnn1.conv.weight", k);
            BIAS(b, C, "speaker_encoder.blocks.%d.tdnn1.conv.bias", k);
            for (int j = 0; j < scale - 1; j++) {
                CONV(b, 1.0f, sub, sub, 3, "speaker_encoder.blocks.%d.res2net_block.blocks.%d.conv.weight", k, j);
                BIAS(b, sub, "speaker_encoder.blocks.%d.res2net_block.blocks.%d.conv.bias", k, j);
            }
            CONV(b, 1.0f, C, C, 1, "speaker_encoder.blocks.%d.tdnn2.conv.weight", k);
            BIAS(b, C, "speaker_encoder.blocks.%d.tdnn2.conv.bias", k);
            CONV(b, 1.0f, se, C, 1, "speaker_encoder.blocks.%d.se_block.conv1.weight", k);
            BIAS(b, se, "speaker_encoder.blocks.%d.se_block.conv1.bias", k);
            CONV(b, 1.0f, C, se, 1, "speaker_encoder.blocks.%d.se_block.conv2.weight", k);
            BIAS(b, C, "speaker_encoder.blocks.%d.se_block.conv2.bias", k);
        }
        CONV(b, 1.0f, 3 * C, 3 * C, 1, "speaker_encoder.mfa.conv.weight");
        BIAS(b, 3 * C, "speaker_encoder.mfa.conv.bias");
        CONV(b, 1.0f, att, 9 * C, 1, "speaker_encoder.asp.tdnn.conv.weight");
        BIAS(b, att, "speaker_encoder.asp.tdnn.conv.bias");
        CONV(b, 1.0f, 3 * C, att, 1, "speaker_encoder.asp.conv.weight");
        BIAS(b, 3 * C, "speaker_encoder.asp.conv.bias");
        CONV(b, 1.0f, p->spk_enc_dim, 6 * C, 1, "speaker_encoder.fc.weight");
        BIAS(b, p->spk_enc_dim, "speaker_encoder.fc.bias");
    }
}

/* SnakeBeta parameters (log scale, near 0). */
static void add_snake(builder *b, int n, const char *pre) {
    add(b, 0.0f, 0.05f, 1, S1(n), "%s.alpha", pre);
    add(b, 0.0f, 0.05f, 1, S1(n), "%s.beta", pre);
}

/* A codebook at pre: the decoder's names (sum "embedding_sum" under "_codebook") or the
   encoder's ("embed_sum" under "codebook", plus its `initialized` flag); entries of std `std`. */
static void add_codebook_named(builder *b, const char *pre, int rows, int dim, int encoder, float std) {
    if (encoder) add(b, 1.0f, 0.0f, 1, S1(1), "%s.codebook.initialized", pre);
    ct_mm_tensor *es = add(b, 0.0f, std, 2, S2(rows, dim), encoder ? "%s.codebook.embed_sum" : "%s._codebook.embedding_sum", pre);
    ct_mm_tensor *cu = add(b, 50.5f, 49.5f / SQRT3, 1, S1(rows), encoder ? "%s.codebook.cluster_usage" : "%s._codebook.cluster_usage", pre);
    if (!es || !cu) return;
    es = &b->t[b->n - 2]; /* add() may have moved the array */
    es->init = CT_MM_INIT_CODEBOOK_SUM;
    es->ref_key = cu->key;
    es->ref_center = cu->center;
    es->ref_half = cu->half;
    es->row = dim;
}

static void add_codebook(builder *b, const char *pre, int rows, int dim) { add_codebook_named(b, pre, rows, dim, 0, 0.25f); }

/* The speech-tokenizer encoder (MODEL.md 1.11): SEANet, transformer, downsample, split RVQ. */
static void build_encoder(builder *b, const ct_mm_preset *p) {
    static const int ratios[4] = {4, 5, 6, 8}; /* reversed upsampling_ratios */
    char pre[112];
    const int H = p->e_hidden, D = p->e_cb_dim;
    CONV(b, 1.0f, p->e_filters, 1, 7, "encoder.encoder.layers.0.conv.weight");
    BIAS(b, p->e_filters, "encoder.encoder.layers.0.conv.bias");
    int idx = 1, C = p->e_filters;
    for (int s = 0; s < 4; s++, idx += 3, C *= 2) {
        CONV(b, 1.0f, C / 2, C, 3, "encoder.encoder.layers.%d.block.1.conv.weight", idx);
        BIAS(b, C / 2, "encoder.encoder.layers.%d.block.1.conv.bias", idx);
        CONV(b, 0.5f, C, C / 2, 1, "encoder.encoder.layers.%d.block.3.conv.weight", idx);
        BIAS(b, C, "encoder.encoder.layers.%d.block.3.conv.bias", idx);
        CONV(b, 1.0f, 2 * C, C, 2 * ratios[s], "encoder.encoder.layers.%d.conv.weight", idx + 2);
        BIAS(b, 2 * C, "encoder.encoder.layers.%d.conv.bias", idx + 2);
    }
    CONV(b, 1.0f, H, C, 3, "encoder.encoder.layers.%d.conv.weight", idx + 1);
    BIAS(b, H, "encoder.encoder.layers.%d.conv.bias", idx + 1);
    const int qd = p->e_heads * p->e_head_dim, kvd = p->e_kv_heads * p->e_head_dim;
    for (int l = 0; l < p->e_layers; l++) {
        snprintf(pre, sizeof pre, "encoder.encoder_transformer.layers.%d", l);
        NORMW(b, H, "%s.input_layernorm.weight", pre);
        BIAS(b, H, "%s.input_layernorm.bias", pre);
        NORMW(b, H, "%s.post_attention_layernorm.weight", pre);
        BIAS(b, H, "%s.post_attention_layernorm.bias", pre);
        LIN(b, 1.0f, qd, H, "%s.self_attn.q_proj.weight", pre);
        LIN(b, 1.0f, kvd, H, "%s.self_attn.k_proj.weight", pre);
        LIN(b, 1.0f, kvd, H, "%s.self_attn.v_proj.weight", pre);
        LIN(b, 1.0f, H, qd, "%s.self_attn.o_proj.weight", pre);
        LIN(b, 1.0f, p->e_ffn, H, "%s.mlp.fc1.weight", pre);
        LIN(b, 1.0f, H, p->e_ffn, "%s.mlp.fc2.weight", pre);
        add(b, 0.05f, 0.02f, 1, S1(H), "%s.self_attn_layer_scale.scale", pre);
        add(b, 0.05f, 0.02f, 1, S1(H), "%s.mlp_layer_scale.scale", pre);
    }
    CONV(b, 1.0f, H, H, 4, "encoder.downsample.conv.weight");
    static const char *const rvq[2] = {"encoder.quantizer.semantic_residual_vector_quantizer",
                                       "encoder.quantizer.acoustic_residual_vector_quantizer"};
    for (int k = 0; k < 2; k++) {
        CONV(b, 1.0f, D, H, 1, "%s.input_proj.weight", rvq[k]);
        CONV(b, 1.0f, H, D, 1, "%s.output_proj.weight", rvq[k]);
        for (int q = 0; q < (k ? p->e_nq - 1 : 1); q++) {
            snprintf(pre, sizeof pre, "%s.layers.%d", rvq[k], q);
            add_codebook_named(b, pre, 2048, D, 1, 1.0f);
        }
    }
}

static void build_codec(builder *b, const ct_mm_preset *p) {
    char pre[96];
    const int D = p->c_codebook_dim / 2, O = p->c_codebook_dim, L = p->c_latent, C = p->c_hidden;
    add_codebook(b, "decoder.quantizer.rvq_first.vq.layers.0", p->c_codebook_size, D);
    for (int q = 0; q < p->c_nq - 1; q++) {
        snprintf(pre, sizeof pre, "decoder.quantizer.rvq_rest.vq.layers.%d", q);
        add_codebook(b, pre, p->c_codebook_size, D);
    }
    CONV(b, 1.0f, O, D, 1, "decoder.quantizer.rvq_first.output_proj.weight");
    CONV(b, 1.0f, O, D, 1, "decoder.quantizer.rvq_rest.output_proj.weight");
    CONV(b, 1.0f, D, O, 1, "decoder.quantizer.rvq_first.input_proj.weight");
    CONV(b, 1.0f, D, O, 1, "decoder.quantizer.rvq_rest.input_proj.weight");
    CONV(b, 1.0f, L, O, 3, "decoder.pre_conv.conv.weight");
    BIAS(b, L, "decoder.pre_conv.conv.bias");

    LIN(b, 1.0f, C, L, "decoder.pre_transformer.input_proj.weight");
    BIAS(b, C, "decoder.pre_transformer.input_proj.bias");
    const int qd = p->c_heads * p->c_head_dim, kvd = p->c_kv_heads * p->c_head_dim;
    for (int l = 0; l < p->c_layers; l++) {
        snprintf(pre, sizeof pre, "decoder.pre_transformer.layers.%d", l);
        NORMW(b, C, "%s.input_layernorm.weight", pre);
        NORMW(b, C, "%s.post_attention_layernorm.weight", pre);
        LIN(b, 1.0f, qd, C, "%s.self_attn.q_proj.weight", pre);
        LIN(b, 1.0f, kvd, C, "%s.self_attn.k_proj.weight", pre);
        LIN(b, 1.0f, kvd, C, "%s.self_attn.v_proj.weight", pre);
        LIN(b, 1.0f, C, qd, "%s.self_attn.o_proj.weight", pre);
        LIN(b, 1.0f, p->c_ffn, C, "%s.mlp.gate_proj.weight", pre);
        LIN(b, 1.0f, p->c_ffn, C, "%s.mlp.up_proj.weight", pre);
        LIN(b, 1.0f, C, p->c_ffn, "%s.mlp.down_proj.weight", pre);
        add(b, 0.05f, 0.02f, 1, S1(C), "%s.self_attn_layer_scale.scale", pre);
        add(b, 0.05f, 0.02f, 1, S1(C), "%s.mlp_layer_scale.scale", pre);
    }
    NORMW(b, C, "decoder.pre_transformer.norm.weight");
    LIN(b, 1.0f, L, C, "decoder.pre_transformer.output_proj.weight");
    BIAS(b, L, "decoder.pre_transformer.output_proj.bias");

    for (int u = 0; u < 2; u++) {
        int r = p->c_upsampling_ratios[u];
        /* ConvTranspose [in, out, k]; k == stride, so each output sees `in` taps. */
        add(b, 0.0f, 1.0f / sqrtf((float)L), 3, S3(L, L, r), "decoder.upsample.%d.0.conv.weight", u);
        BIAS(b, L, "decoder.upsample.%d.0.conv.bias", u);
        CONV(b, 1.0f, L, 1, 7, "decoder.upsample.%d.1.dwconv.conv.weight", u);
        BIAS(b, L, "decoder.upsample.%d.1.dwconv.conv.bias", u);
        NORMW(b, L, "decoder.upsample.%d.1.norm.weight", u);
        BIAS(b, L, "decoder.upsample.%d.1.norm.bias", u);
        LIN(b, 1.0f, 4 * L, L, "decoder.upsample.%d.1.pwconv1.weight", u);
        BIAS(b, 4 * L, "decoder.upsample.%d.1.pwconv1.bias", u);
        LIN(b, 1.0f, L, 4 * L, "decoder.upsample.%d.1.pwconv2.weight", u);
        BIAS(b, L, "decoder.upsample.%d.1.pwconv2.bias", u);
        add(b, 0.05f, 0.02f, 1, S1(L), "decoder.upsample.%d.1.gamma", u);
    }

    const int DD = p->c_decoder_dim;
    CONV(b, 1.0f, DD, L, 7, "decoder.decoder.0.conv.weight");
    BIAS(b, DD, "decoder.decoder.0.conv.bias");
    int cin = DD;
    for (int k = 1; k <= 4; k++) {
        int r = p->c_upsample_rates[k - 1], cout = cin / 2;
        snprintf(pre, sizeof pre, "decoder.decoder.%d.block.0", k);
        add_snake(b, cin, pre);
        /* ConvTranspose [in, out, 2r] with stride r: each output sees 2*in taps. */
        add(b, 0.0f, 1.0f / sqrtf(2.0f * (float)cin), 3, S3(cin, cout, 2 * r), "decoder.decoder.%d.block.1.conv.weight", k);
        BIAS(b, cout, "decoder.decoder.%d.block.1.conv.bias", k);
        for (int u = 2; u <= 4; u++) {
            snprintf(pre, sizeof pre, "decoder.decoder.%d.block.%d.act1", k, u);
            add_snake(b, cout, pre);
            CONV(b, 1.0f, cout, cout, 7, "decoder.decoder.%d.block.%d.conv1.conv.weight", k, u);
            BIAS(b, cout, "decoder.decoder.%d.block.%d.conv1.conv.bias", k, u);
            snprintf(pre, sizeof pre, "decoder.decoder.%d.block.%d.act2", k, u);
            add_snake(b, cout, pre);
            CONV(b, 0.25f, cout, cout, 1, "decoder.decoder.%d.block.%d.conv2.conv.weight", k, u);
            BIAS(b, cout, "decoder.decoder.%d.block.%d.conv2.conv.bias", k, u);
        }
        cin = cout;
    }
    add_snake(b, cin, "decoder.decoder.5");
    CONV(b, 0.08f, 1, cin, 7, "decoder.decoder.6.conv.weight");
    BIAS(b, 1, "decoder.decoder.6.conv.bias");
}

ct_status ct_mm_tensors(const ct_mm_preset *p, int file, ct_mm_tensor **out, size_t *n_out,
                        char *err, size_t errcap) {
    if (!p || !out || !n_out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "make_model: NULL argument");
    if (file != CT_MM_FILE_MAIN && file != CT_MM_FILE_CODEC)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "make_model: unknown file id %d", file);
    builder b = {0};
    if (file == CT_MM_FILE_MAIN) {
        b.dt = CT_STW_BF16;
        build_main(&b, p);
    } else {
        b.dt = CT_STW_F32;
        build_codec(&b, p);
        build_encoder(&b, p);
    }
    if (b.failed) {
        free(b.t);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "make_model: out of memory building the tensor list");
    }
    *out = b.t;
    *n_out = b.n;
    return CT_OK;
}
