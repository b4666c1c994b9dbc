/* Random-weight Qwen3-TTS model directories in the exact published Hugging Face layout
 * (config files, BF16 main safetensors, F32 codec-decoder safetensors, tokenizer files). */
#ifndef CT_MAKE_MODEL_H
#define CT_MAKE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "io/st_write.h"

/* Writes a complete model directory for preset (see ct_make_model_presets) into out_dir:
 *   config.json, generation_config.json, model.safetensors (BF16), vocab.json, merges.txt,
 *   tokenizer_config.json (copied from tok_src_dir; NULL = the in-tree
 *   assets/qwen3-tokenizer), preprocessor_config.json, speech_tokenizer/config.json,
 *   speech_tokenizer/preprocessor_config.json, speech_tokenizer/model.safetensors (F32
 *   `decoder.*` tensors only).
 * out_dir is created (with parents) if needed. A non-empty out_dir is refused unless
 * overwrite != 0 (then our files are replaced, other files are left alone). Output is a
 * pure function of (preset, seed). Files are written to "<name>.partial" and renamed, so a
 * failure never leaves a truncated file under a final name.
 * progress (may be NULL) is called now and then with tensor bytes written so far and the
 * total over both safetensors files; the last call has done == total.
 * Errors: CT_ERR_INVALID_ARG (unknown preset: the message lists the valid ones; NULL
 * out_dir; non-empty out_dir without overwrite), CT_ERR_IO (cannot create/write/copy),
 * CT_ERR_NOMEM. Not thread-safe with respect to the same out_dir. */
ct_status ct_make_model(const char *preset, uint64_t seed, const char *out_dir,
                        const char *tok_src_dir, int overwrite,
                        void (*progress)(void *ud, uint64_t done, uint64_t total), void *ud,
                        char *err, size_t errcap);

/* NULL-terminated list of preset names (static storage). */
const char *const *ct_make_model_presets(void);

/* ---------------------------------------------------------------------------------------
 * Introspection used by the writer and the tests (no files touched). */

/* Hyper-parameters of one preset; every field is written to the config files. */
typedef struct {
    const char *name;       /* preset name */
    const char *size_tag;   /* tts_model_size: "0b6" / "1b7" */
    const char *model_type; /* tts_model_type: "custom_voice" / "base" / "voice_design" */
    int voices;             /* 1: CustomVoice speaker + dialect maps (12 languages), 0: empty */
    int spk_enc_dim;        /* speaker encoder output width; 0 = no speaker encoder (not Base) */
    /* talker */
    int text_vocab, text_hidden, hidden, ffn, layers, heads, kv_heads, head_dim;
    int codec_vocab, code_groups;
    int mrope[3]; /* mrope_section, sums to head_dim/2 */
    /* code predictor */
    int cp_hidden, cp_ffn, cp_layers, cp_heads, cp_kv_heads, cp_head_dim, cp_vocab;
    /* codec decoder (speech_tokenizer/config.json decoder_config) */
    int c_codebook_size, c_codebook_dim, c_vq_hidden, c_nq, c_latent, c_hidden, c_layers;
    int c_heads, c_kv_heads, c_head_dim, c_ffn, c_decoder_dim, c_window;
    int c_upsample_rates[4], c_upsampling_ratios[2];
    /* speech-tokenizer encoder (encoder_config; SEANet ratios [8, 6, 5, 4], 1 residual layer,
       16 codes per frame) */
    int e_filters, e_hidden, e_layers, e_heads, e_kv_heads, e_head_dim, e_ffn, e_cb_dim, e_nq;
} ct_mm_preset;

/* The preset called name, or NULL. */
const ct_mm_preset *ct_mm_find_preset(const char *name);

/* How a tensor's values are generated: uniform in [center - half, center + half], except
 * CT_MM_INIT_CODEBOOK_SUM where row r is usage_r x U(center +- half) and usage_r is the
 * value the generator produces for element r of the tensor with key ref_key
 * (the matching cluster_usage), so embedding_sum / cluster_usage is well scaled. */
typedef enum { CT_MM_INIT_UNIFORM = 0, CT_MM_INIT_CODEBOOK_SUM = 1 } ct_mm_init;

/* One tensor of a generated file. */
typedef struct {
    char name[112];
    ct_stw_dtype dtype;
    int ndim;
    int64_t shape[4]; /* [ndim] */
    ct_mm_init init;
    float center, half; /* uniform range (entry range for CODEBOOK_SUM) */
    uint64_t key;       /* generator stream key, from the tensor name */
    uint64_t ref_key;   /* CODEBOOK_SUM: key of the cluster_usage tensor */
    float ref_center, ref_half; /* CODEBOOK_SUM: range of that cluster_usage tensor */
    int64_t row;        /* CODEBOOK_SUM: elements per row */
} ct_mm_tensor;

enum { CT_MM_FILE_MAIN = 0, CT_MM_FILE_CODEC = 1 };

/* Builds the tensor inventory of one file (CT_MM_FILE_MAIN = model.safetensors,
 * CT_MM_FILE_CODEC = speech_tokenizer/model.safetensors) of preset p, in declaration
 * order. *out is owned by the caller (free()). Errors: CT_ERR_INVALID_ARG, CT_ERR_NOMEM. */
ct_status ct_mm_tensors(const ct_mm_preset *p, int file, ct_mm_tensor **out, size_t *n_out,
                        char *err, size_t errcap);

/* Element count of t. */
uint64_t ct_mm_numel(const ct_mm_tensor *t);

/* Generates elements [start, start+n) of tensor t (row-major) as floats into dst[n],
 * for a given seed. Deterministic and independent of chunking. */
void ct_mm_generate(const ct_mm_tensor *t, uint64_t seed, uint64_t start, size_t n, float *dst);

/* float -> bf16 bits with round-to-nearest-even (NaN stays a quiet NaN). */
uint16_t ct_mm_f32_to_bf16(float f);

#endif
