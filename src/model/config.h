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

typedef struct {
    ct_model_kind kind;
    char size_tag[16];          /* "0b6" / "1b7" */
    ct_stack_cfg talker;
    ct_stack_cfg pred;
    int text_vocab;             /* text embedding rows */
    int text_hidden;            /* text embedding width */
    int n_groups;               /* code groups per frame (16) */
    int spk_enc_dim;            /* Base speaker-encoder width, 0 if absent */
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
