/* Model configuration read from config.json / generation_config.json (published HF layout). */
#ifndef CT_CONFIG_H
#define CT_CONFIG_H

#include <stdint.h>

#include "core/status.h"

#define CT_MAX_NAMES 64
#define CT_NAME_LEN 48

typedef enum { CT_KIND_CUSTOM_VOICE = 0, CT_KIND_BASE = 1, CT_KIND_VOICE_DESIGN = 2 } ct_model_kind;

/* Geometry of one Qwen3-style decoder stack (talker or code predictor). */
typedef struct {
    int hidden;        /* H */
    int ffn;           /* SwiGLU intermediate */
    int layers;
    int heads;         /* query heads */
    int kv_heads;      /* KV heads; heads % kv_heads == 0 */
    int head_dim;      /* explicit, not hidden/heads */
    int vocab;         /* output vocabulary (talker: codec ids, predictor: per codebook) */
    float eps;         /* RMSNorm epsilon */
    double rope_theta;
    int max_pos;
} ct_stack_cfg;

typedef struct {
    char name[CT_NAME_LEN];
    int id;
    char dialect[CT_NAME_LEN]; /* speakers: dialect language name or "" */
} ct_named_id;

#define CT_SPK_MAX_LAYERS 8

/* speaker_encoder_config of a Base model (MODEL.md 1.9, 6.2; the class defaults for absent
   keys): block 0 is a TDNN mel_dim -> channels[0], blocks 1..n_layers-2 are SE-Res2 blocks,
   the last entry is the MFA TDNN (its input = the SE-Res2 outputs concatenated). */
typedef struct {
    int mel_dim;                          /* 128 (the front end's bins) */
    int enc_dim;                          /* x-vector width = talker hidden */
    int n_layers;                         /* len(enc_channels) */
    int channels[CT_SPK_MAX_LAYERS];      /* enc_channels */
    int kernels[CT_SPK_MAX_LAYERS];       /* enc_kernel_sizes */
    int dilations[CT_SPK_MAX_LAYERS];     /* enc_dilations */
    int attention;                        /* enc_attention_channels */
    int res2net_scale;                    /* enc_res2net_scale */
    int se_channels;                      /* enc_se_channels */
    int sample_rate;                      /* 24000 */
} ct_spk_cfg;

typedef struct {
    ct_model_kind kind;
    char size_tag[16];          /* "0b6" / "1b7" */
    ct_stack_cfg talker;
    ct_stack_cfg pred;
    int text_vocab;             /* text embedding rows */
    int text_hidden;            /* text embedding width */
    int n_groups;               /* code groups per frame (16) */
    int spk_enc_dim;            /* Base speaker-encoder width, 0 if absent */
    ct_spk_cfg spk;             /* valid when spk_enc_dim > 0 */
    /* special text ids */
    int im_start, im_end, assistant, tts_pad, tts_bos, tts_eos;
    /* codec control ids */
    int codec_pad, codec_bos, codec_eos, codec_think, codec_nothink, codec_think_bos,
        codec_think_eos;
    ct_named_id langs[CT_MAX_NAMES];
    int n_langs;
    ct_named_id speakers[CT_MAX_NAMES];
    int n_speakers;
    /* generation_config.json (defaults when absent) */
    int do_sample;
    float temperature, top_p, repetition_penalty;
    int top_k;
    int sub_do_sample;
    float sub_temperature, sub_top_p;
    int sub_top_k;
    int max_new_tokens;
} ct_config;

/* Parses dir/config.json and (optionally present) dir/generation_config.json. Checks every
   field needed, with bounds against absurd sizes; the message names the field. */
ct_status ct_config_load(const char *dir, ct_config *cfg, char *err, size_t errcap);

/* Same from in-memory JSON texts (gen may be NULL). */
ct_status ct_config_parse(const char *config_json, size_t len, const char *gen_json,
                          size_t gen_len, ct_config *cfg, char *err, size_t errcap);

/* Case-insensitive lookup; returns the entry or NULL. */
const ct_named_id *ct_config_find_lang(const ct_config *cfg, const char *name);
const ct_named_id *ct_config_find_speaker(const ct_config *cfg, const char *name);

/* "kind" as written in config.json (custom_voice, base, voice_design). */
const char *ct_model_kind_name(ct_model_kind k);

#endif
