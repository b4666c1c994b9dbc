/* ct_make_model: writes a random-weight Qwen3-TTS model directory (configs, tokenizer
 * copies, BF16 main weights, F32 speech-tokenizer decoder and encoder weights) in the published
 * HF layout. */
#include "model/make_model.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#define MM_PATH_MAX 4096

/* ---------------------------------------------------------------------------------------
 * Filesystem helpers */

static ct_status join(char *dst, size_t cap, const char *a, const char *b, char *err, size_t errcap) {
    int n = snprintf(dst, cap, "%s/%s", a, b);
    if (n < 0 || (size_t)n >= cap)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "make_model: path too long: %s/%s", a, b);
    return CT_OK;
}

/* mkdir -p; existing directories are fine. */
static ct_status mkdir_p(const char *path, char *err, size_t errcap) {
    char buf[MM_PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "make_model: bad directory path");
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char save = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            return ct_errf(err, errcap, CT_ERR_IO, "make_model: cannot create directory '%s': %s", buf, strerror(e));
        }
        buf[i] = save;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return ct_errf(err, errcap, CT_ERR_IO, "make_model: '%s' is not a directory", path);
    return CT_OK;
}

/* 1 if dir holds any entry besides . and .., 0 if empty or absent, -1 on error. */
static int dir_nonempty(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            found = 1;
            break;
        }
    }
    closedir(d);
    return found;
}

/* Writes len bytes to path via "<path>.partial" + rename. */
static ct_status write_bytes(const char *path, const char *data, size_t len, char *err, size_t errcap) {
    char tmp[MM_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.partial", path);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        int e = errno;
        return ct_errf(err, errcap, CT_ERR_IO, "make_model: cannot create '%s': %s", tmp, strerror(e));
    }
    int ok = fwrite(data, 1, len, fp) == len;
    int e = errno;
    if (fclose(fp) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok || rename(tmp, path) != 0) {
        if (ok) e = errno;
        remove(tmp);
        return ct_errf(err, errcap, CT_ERR_IO, "make_model: writing '%s' failed: %s", path, strerror(e));
    }
    return CT_OK;
}

static ct_status copy_file(const char *src, const char *dst, char *err, size_t errcap) {
    FILE *in = fopen(src, "rb");
    if (!in) {
        int e = errno;
        return ct_errf(err, errcap, CT_ERR_IO, "make_model: cannot open '%s': %s", src, strerror(e));
    }
    char tmp[MM_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.partial", dst);
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        int e = errno;
        fclose(in);
        return ct_errf(err, errcap, CT_ERR_IO, "make_model: cannot create '%s': %s", tmp, strerror(e));
    }
    char buf[1 << 16];
    size_t n;
    int ok = 1;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) {
            ok = 0;
            break;
        }
    if (ferror(in)) ok = 0;
    int e = errno;
    fclose(in);
    if (fclose(out) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok || rename(tmp, dst) != 0) {
        if (ok) e = errno;
        remove(tmp);
        return ct_errf(err, errcap, CT_ERR_IO, "make_model: copying '%s' to '%s' failed: %s", src, dst, strerror(e));
    }
    return CT_OK;
}

static ct_status write_json(const char *path, json_t *root, size_t flags, char *err, size_t errcap) {
    if (!root) return ct_errf(err, errcap, CT_ERR_NOMEM, "make_model: out of memory building %s", path);
    char *s = json_dumps(root, flags | JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!s) return ct_errf(err, errcap, CT_ERR_NOMEM, "make_model: out of memory serialising %s", path);
    size_t len = strlen(s);
    char *full = malloc(len + 2);
    if (!full) {
        free(s);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "make_model: out of memory");
    }
    memcpy(full, s, len);
    full[len] = '\n';
    full[len + 1] = 0;
    free(s);
    ct_status st = write_bytes(path, full, len + 1, err, errcap);
    free(full);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * Config files */

/* Small helpers: jansson "set_new" with shorter names. json_object_set_new ignores a NULL
 * value, so an allocation failure of a leaf drops that key instead of crashing; the
 * containers themselves are checked. */
#define SETI(o, k, v) json_object_set_new((o), (k), json_integer(v))
#define SETR(o, k, v) json_object_set_new((o), (k), json_real(v))
#define SETS(o, k, v) json_object_set_new((o), (k), json_string(v))
#define SETB(o, k, v) json_object_set_new((o), (k), json_boolean(v))
#define SETN(o, k) json_object_set_new((o), (k), json_null())

static json_t *int_array(const int *v, int n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) json_array_append_new(a, json_integer(v[i]));
    return a;
}

static const struct {
    const char *name;
    int id;
} languages[] = {{"chinese", 2055}, {"english", 2050},  {"german", 2053},         {"italian", 2070},
                 {"portuguese", 2071}, {"spanish", 2054}, {"japanese", 2058},       {"korean", 2064},
                 {"french", 2061},  {"russian", 2069},  {"beijing_dialect", 2074}, {"sichuan_dialect", 2062}};

static const struct {
    const char *name;
    int id;
    const char *dialect;
} speakers[] = {{"serena", 3066, NULL}, {"vivian", 3065, NULL}, {"uncle_fu", 3010, NULL},
                {"ryan", 3061, NULL},   {"aiden", 2861, NULL},  {"ono_anna", 2873, NULL},
                {"sohee", 2864, NULL},  {"eric", 2875, "sichuan_dialect"},
                {"dylan", 2878, "beijing_dialect"}};

static json_t *code_predictor_config(const ct_mm_preset *p) {
    json_t *c = json_object();
    if (!c) return NULL;
    SETS(c, "_name_or_path", "");
    SETB(c, "add_cross_attention", 0);
    SETN(c, "architectures");
    SETB(c, "attention_bias", 0);
    SETI(c, "attention_dropout", 0);
    SETN(c, "bad_words_ids");
    SETN(c, "begin_suppress_tokens");
    SETN(c, "bos_token_id");
    SETI(c, "chunk_size_feed_forward", 0);
    SETN(c, "cross_attention_hidden_size");
    SETN(c, "decoder_start_token_id");
    SETR(c, "diversity_penalty", 0.0);
    SETB(c, "do_sample", 0);
    SETB(c, "early_stopping", 0);
    SETI(c, "encoder_no_repeat_ngram_size", 0);
    SETN(c, "eos_token_id");
    SETN(c, "exponential_decay_length_penalty");
    SETN(c, "finetuning_task");
    SETN(c, "forced_bos_token_id");
    SETN(c, "forced_eos_token_id");
    SETI(c, "head_dim", p->cp_head_dim);
    SETS(c, "hidden_act", "silu");
    SETI(c, "hidden_size", p->cp_hidden);
    json_t *id2label = json_object(), *label2id = json_object();
    if (id2label) {
        SETS(id2label, "0", "LABEL_0");
        SETS(id2label, "1", "LABEL_1");
    }
    if (label2id) {
        SETI(label2id, "LABEL_0", 0);
        SETI(label2id, "LABEL_1", 1);
    }
    json_object_set_new(c, "id2label", id2label);
    SETR(c, "initializer_range", 0.02);
    SETI(c, "intermediate_size", p->cp_ffn);
    SETB(c, "is_decoder", 0);
    SETB(c, "is_encoder_decoder", 0);
    json_object_set_new(c, "label2id", label2id);
    json_t *lt = json_array();
    for (int i = 0; lt && i < p->cp_layers; i++) json_array_append_new(lt, json_string("full_attention"));
    json_object_set_new(c, "layer_types", lt);
    SETR(c, "length_penalty", 1.0);
    SETI(c, "max_length", 20);
    SETI(c, "max_position_embeddings", 65536);
    SETI(c, "max_window_layers", 28);
    SETI(c, "min_length", 0);
    SETS(c, "model_type", "qwen3_tts_talker_code_predictor");
    SETI(c, "no_repeat_ngram_size", 0);
    SETI(c, "num_attention_heads", p->cp_heads);
    SETI(c, "num_beam_groups", 1);
    SETI(c, "num_beams", 1);
    SETI(c, "num_code_groups", p->code_groups);
    SETI(c, "num_hidden_layers", p->cp_layers);
    SETI(c, "num_key_value_heads", p->cp_kv_heads);
    SETI(c, "num_return_sequences", 1);
    SETB(c, "output_attentions", 0);
    SETB(c, "output_hidden_states", 0);
    SETB(c, "output_scores", 0);
    SETN(c, "pad_token_id");
    SETN(c, "prefix");
    SETN(c, "problem_type");
    json_object_set_new(c, "pruned_heads", json_object());
    SETB(c, "remove_invalid_values", 0);
    SETR(c, "repetition_penalty", 1.0);
    SETB(c, "return_dict", 1);
    SETB(c, "return_dict_in_generate", 0);
    SETR(c, "rms_norm_eps", 1e-6);
    SETN(c, "rope_scaling");
    SETI(c, "rope_theta", 1000000);
    SETN(c, "sep_token_id");
    SETN(c, "sliding_window");
    SETN(c, "suppress_tokens");
    SETN(c, "task_specific_params");
    SETR(c, "temperature", 1.0);
    SETB(c, "tf_legacy_loss", 0);
    SETB(c, "tie_encoder_decoder", 0);
    SETB(c, "tie_word_embeddings", 0);
    SETN(c, "tokenizer_class");
    SETI(c, "top_k", 50);
    SETR(c, "top_p", 1.0);
    SETN(c, "dtype");
    SETB(c, "torchscript", 0);
    SETR(c, "typical_p", 1.0);
    SETB(c, "use_bfloat16", 0);
    SETB(c, "use_cache", 1);
    SETB(c, "use_sliding_window", 0);
    SETI(c, "vocab_size", p->cp_vocab);
    if (!id2label || !label2id || !lt) {
        json_decref(c);
        return NULL;
    }
    return c;
}

static json_t *main_config(const ct_mm_preset *p) {
    json_t *root = json_object();
    json_t *arch = json_array();
    json_t *t = json_object();
    json_t *cp = code_predictor_config(p);
    json_t *lang = json_object(), *spk = json_object(), *dia = json_object();
    json_t *rope = json_object();
    json_t *se = p->spk_enc_dim > 0 ? json_object() : NULL;
    if (!root || !arch || !t || !cp || !lang || !spk || !dia || !rope || (p->spk_enc_dim > 0 && !se)) {
        json_decref(root);
        json_decref(arch);
        json_decref(t);
        json_decref(cp);
        json_decref(lang);
        json_decref(spk);
        json_decref(dia);
        json_decref(rope);
        json_decref(se);
        return NULL;
    }
    json_array_append_new(arch, json_string("Qwen3TTSForConditionalGeneration"));
    json_object_set_new(root, "architectures", arch);
    SETI(root, "assistant_token_id", 77091);
    SETI(root, "im_end_token_id", 151645);
    SETI(root, "im_start_token_id", 151644);
    SETI(root, "tts_bos_token_id", 151672);
    SETI(root, "tts_eos_token_id", 151673);
    SETI(root, "tts_pad_token_id", 151671);
    SETS(root, "model_type", "qwen3_tts");
    SETS(root, "tokenizer_type", "qwen3_tts_tokenizer_12hz");
    SETS(root, "tts_model_size", p->size_tag);
    SETS(root, "tts_model_type", p->model_type);
    if (se) {
        SETI(se, "enc_dim", p->spk_enc_dim);
        SETI(se, "sample_rate", 24000);
        json_object_set_new(root, "speaker_encoder_config", se);
    }

    SETB(t, "attention_bias", 0);
    SETI(t, "attention_dropout", 0);
    json_object_set_new(t, "code_predictor_config", cp);
    SETI(t, "codec_bos_id", 2149);
    SETI(t, "codec_eos_token_id", 2150);
    SETI(t, "codec_think_id", 2154);
    int n_lang = p->voices ? 12 : 10;
    for (int i = 0; i < n_lang; i++) SETI(lang, languages[i].name, languages[i].id);
    json_object_set_new(t, "codec_language_id", lang);
    SETI(t, "codec_nothink_id", 2155);
    SETI(t, "codec_pad_id", 2148);
    SETI(t, "codec_think_bos_id", 2156);
    SETI(t, "codec_think_eos_id", 2157);
    if (p->voices) {
        for (size_t i = 0; i < sizeof speakers / sizeof speakers[0]; i++) {
            SETI(spk, speakers[i].name, speakers[i].id);
            if (speakers[i].dialect)
                SETS(dia, speakers[i].name, speakers[i].dialect);
            else
                SETB(dia, speakers[i].name, 0);
        }
    }
    json_object_set_new(t, "spk_id", spk);
    json_object_set_new(t, "spk_is_dialect", dia);
    SETI(t, "head_dim", p->head_dim);
    SETS(t, "hidden_act", "silu");
    SETI(t, "hidden_size", p->hidden);
    SETR(t, "initializer_range", 0.02);
    SETI(t, "intermediate_size", p->ffn);
    SETI(t, "max_position_embeddings", 32768);
    SETS(t, "model_type", "qwen3_tts_talker");
    SETI(t, "num_attention_heads", p->heads);
    SETI(t, "num_code_groups", p->code_groups);
    SETI(t, "num_hidden_layers", p->layers);
    SETI(t, "num_key_value_heads", p->kv_heads);
    SETI(t, "position_id_per_seconds", 13);
    SETR(t, "rms_norm_eps", 1e-6);
    SETB(rope, "interleaved", 1);
    json_object_set_new(rope, "mrope_section", int_array(p->mrope, 3));
    SETS(rope, "rope_type", "default");
    SETS(rope, "type", "default");
    json_object_set_new(t, "rope_scaling", rope);
    SETI(t, "rope_theta", 1000000);
    SETN(t, "sliding_window");
    SETI(t, "text_hidden_size", p->text_hidden);
    SETI(t, "text_vocab_size", p->text_vocab);
    SETB(t, "use_cache", 1);
    SETB(t, "use_sliding_window", 0);
    SETI(t, "vocab_size", p->codec_vocab);
    SETI(t, "pad_token_id", 2148);
    json_object_set_new(root, "talker_config", t);
    SETS(root, "transformers_version", "4.57.3");
    return root;
}

static json_t *generation_config(void) {
    json_t *g = json_object();
    if (!g) return NULL;
    SETB(g, "do_sample", 1);
    SETR(g, "temperature", 0.9);
    SETI(g, "top_k", 50);
    SETR(g, "top_p", 1.0);
    SETR(g, "repetition_penalty", 1.05);
    SETB(g, "subtalker_dosample", 1);
    SETR(g, "subtalker_temperature", 0.9);
    SETI(g, "subtalker_top_k", 50);
    SETR(g, "subtalker_top_p", 1.0);
    SETI(g, "max_new_tokens", 8192);
    return g;
}

static json_t *codec_config(const ct_mm_preset *p) {
    json_t *root = json_object(), *arch = json_array(), *d = json_object(), *e = json_object();
    if (!root || !arch || !d || !e) {
        json_decref(root);
        json_decref(arch);
        json_decref(d);
        json_decref(e);
        return NULL;
    }
    int up = 1;
    for (int i = 0; i < 4; i++) up *= p->c_upsample_rates[i];
    for (int i = 0; i < 2; i++) up *= p->c_upsampling_ratios[i];

    json_array_append_new(arch, json_string("Qwen3TTSTokenizerV2Model"));
    json_object_set_new(root, "architectures", arch);
    SETI(root, "decode_upsample_rate", up);
    SETB(d, "attention_bias", 0);
    SETI(d, "codebook_dim", p->c_codebook_dim);
    SETI(d, "codebook_size", p->c_codebook_size);
    SETI(d, "decoder_dim", p->c_decoder_dim);
    SETI(d, "head_dim", p->c_head_dim);
    SETS(d, "hidden_act", "silu");
    SETI(d, "hidden_size", p->c_hidden);
    SETI(d, "intermediate_size", p->c_ffn);
    SETI(d, "latent_dim", p->c_latent);
    SETR(d, "layer_scale_initial_scale", 0.01);
    SETI(d, "max_position_embeddings", 8000);
    SETI(d, "num_attention_heads", p->c_heads);
    SETI(d, "num_hidden_layers", p->c_layers);
    SETI(d, "num_key_value_heads", p->c_kv_heads);
    SETI(d, "num_quantizers", p->c_nq);
    SETI(d, "num_semantic_quantizers", 1);
    SETR(d, "rms_norm_eps", 1e-5);
    SETI(d, "rope_theta", 10000);
    SETI(d, "semantic_codebook_size", 4096);
    SETI(d, "sliding_window", p->c_window);
    json_object_set_new(d, "upsample_rates", int_array(p->c_upsample_rates, 4));
    json_object_set_new(d, "upsampling_ratios", int_array(p->c_upsampling_ratios, 2));
    SETI(d, "vector_quantization_hidden_dimension", p->c_vq_hidden);
    json_object_set_new(root, "decoder_config", d);
    SETI(root, "encode_downsample_rate", up);

    static const int enc_ratios[4] = {8, 6, 5, 4};
    SETI(e, "audio_channels", 1);
    SETI(e, "codebook_dim", p->e_cb_dim);
    SETI(e, "codebook_size", 2048);
    SETI(e, "compress", 2);
    SETI(e, "dilation_growth_rate", 2);
    SETS(e, "dtype", "float32");
    SETR(e, "frame_rate", 12.5);
    SETI(e, "head_dim", p->e_head_dim);
    SETS(e, "hidden_act", "gelu");
    SETI(e, "hidden_size", p->e_hidden);
    SETI(e, "intermediate_size", p->e_ffn);
    SETI(e, "kernel_size", 7);
    SETI(e, "last_kernel_size", 3);
    SETR(e, "layer_scale_initial_scale", 0.01);
    SETI(e, "max_position_embeddings", 8000);
    SETS(e, "model_type", "mimi");
    SETR(e, "norm_eps", 1e-5);
    SETI(e, "num_attention_heads", p->e_heads);
    SETI(e, "num_filters", p->e_filters);
    SETI(e, "num_hidden_layers", p->e_layers);
    SETI(e, "num_key_value_heads", p->e_kv_heads);
    SETI(e, "num_quantizers", p->e_nq);
    SETI(e, "num_residual_layers", 1);
    SETI(e, "num_semantic_quantizers", 1);
    SETS(e, "pad_mode", "constant");
    SETI(e, "residual_kernel_size", 3);
    SETR(e, "rope_theta", 10000.0);
    SETI(e, "sampling_rate", 24000);
    SETI(e, "sliding_window", 250);
    SETI(e, "upsample_groups", p->e_hidden);
    json_object_set_new(e, "upsampling_ratios", int_array(enc_ratios, 4));
    SETB(e, "use_causal_conv", 1);
    SETB(e, "use_conv_shortcut", 0);
    SETI(e, "vector_quantization_hidden_dimension", p->e_cb_dim);
    json_object_set_new(root, "encoder_config", e);
    SETI(root, "encoder_valid_num_quantizers", p->c_nq);
    SETI(root, "input_sample_rate", 24000);
    SETS(root, "model_type", "qwen3_tts_tokenizer_12hz");
    SETI(root, "output_sample_rate", 24000);
    SETS(root, "transformers_version", "4.57.3");
    return root;
}

static json_t *processor_config(void) {
    json_t *o = json_object();
    if (!o) return NULL;
    SETS(o, "padding_side", "left");
    SETR(o, "padding_value", 0.0);
    SETS(o, "processor_class", "Qwen3TTSProcessor");
    SETB(o, "return_attention_mask", 1);
    return o;
}

static json_t *codec_preprocessor_config(void) {
    json_t *o = json_object();
    if (!o) return NULL;
    SETS(o, "feature_extractor_type", "EncodecFeatureExtractor");
    SETI(o, "feature_size", 1);
    SETS(o, "padding_side", "right");
    SETR(o, "padding_value", 0.0);
    SETB(o, "return_attention_mask", 1);
    SETI(o, "sampling_rate", 24000);
    return o;
}

/* ---------------------------------------------------------------------------------------
 * Weight files */

#define CHUNK_ELEMS (1u << 16)

typedef struct {
    void (*fn)(void *ud, uint64_t done, uint64_t total);
    void *ud;
    uint64_t done, total, last;
} progress_state;

static void report(progress_state *ps, int force) {
    if (!ps->fn) return;
    if (force || ps->done - ps->last >= (64u << 20)) {
        ps->last = ps->done;
        ps->fn(ps->ud, ps->done, ps->total);
    }
}

static uint64_t list_bytes(const ct_mm_tensor *t, size_t n) {
    uint64_t b = 0;
    for (size_t i = 0; i < n; i++) b += ct_mm_numel(&t[i]) * ct_stw_dtype_size(t[i].dtype);
    return b;
}

static ct_status write_weights(const char *path, const ct_mm_tensor *t, size_t n, uint64_t seed,
                               progress_state *ps, char *err, size_t errcap) {
    ct_stw *w = NULL;
    float *fbuf = malloc(CHUNK_ELEMS * sizeof(float));
    uint16_t *hbuf = malloc(CHUNK_ELEMS * sizeof(uint16_t));
    ct_status st = (fbuf && hbuf) ? ct_stw_create(&w, err, errcap)
                                  : ct_errf(err, errcap, CT_ERR_NOMEM, "make_model: out of memory");
    for (size_t i = 0; st == CT_OK && i < n; i++)
        st = ct_stw_declare(w, t[i].name, t[i].dtype, t[i].ndim, t[i].shape, err, errcap);
    if (st == CT_OK) st = ct_stw_begin(w, path, err, errcap);
    size_t idx;
    uint64_t remaining;
    while (st == CT_OK && ct_stw_next(w, &idx, &remaining)) {
        const ct_mm_tensor *tt = &t[idx];
        size_t esz = ct_stw_dtype_size(tt->dtype);
        uint64_t numel = ct_mm_numel(tt);
        uint64_t start = numel - remaining / esz;
        size_t m = remaining / esz > CHUNK_ELEMS ? CHUNK_ELEMS : (size_t)(remaining / esz);
        ct_mm_generate(tt, seed, start, m, fbuf);
        if (tt->dtype == CT_STW_BF16) {
            for (size_t j = 0; j < m; j++) hbuf[j] = ct_mm_f32_to_bf16(fbuf[j]);
            st = ct_stw_write(w, hbuf, m * 2, err, errcap);
        } else if (tt->dtype == CT_STW_F32) {
            st = ct_stw_write(w, fbuf, m * 4, err, errcap);
        } else {
            st = ct_errf(err, errcap, CT_ERR_INTERNAL, "make_model: tensor '%s' has an ungenerated dtype", tt->name);
        }
        ps->done += m * esz;
        report(ps, 0);
    }
    if (st == CT_OK) st = ct_stw_finish(w, err, errcap);
    ct_stw_free(w);
    free(fbuf);
    free(hbuf);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * Entry point */

ct_status ct_make_model(const char *preset, uint64_t seed, const char *out_dir,
                        const char *tok_src_dir, int overwrite,
                        void (*progress)(void *ud, uint64_t done, uint64_t total), void *ud,
                        char *err, size_t errcap) {
    const ct_mm_preset *p = ct_mm_find_preset(preset);
    if (!p) {
        char list[256] = "";
        for (const char *const *n = ct_make_model_presets(); *n; n++) {
            if (list[0]) strncat(list, ", ", sizeof list - strlen(list) - 1);
            strncat(list, *n, sizeof list - strlen(list) - 1);
        }
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "make_model: unknown preset '%s' (valid presets: %s)",
                       preset ? preset : "(null)", list);
    }
    if (!out_dir || !out_dir[0]) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "make_model: no output directory");
    if (strlen(out_dir) > MM_PATH_MAX - 64)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "make_model: output path too long");
#ifdef CT_ASSET_DIR
    if (!tok_src_dir) tok_src_dir = CT_ASSET_DIR "/qwen3-tokenizer";
#endif
    if (!tok_src_dir) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "make_model: no tokenizer source directory");

    static const char *const tok_files[] = {"vocab.json", "merges.txt", "tokenizer_config.json"};
    char src[MM_PATH_MAX], dst[MM_PATH_MAX];
    ct_status st;
    for (size_t i = 0; i < 3; i++) {
        if ((st = join(src, sizeof src, tok_src_dir, tok_files[i], err, errcap)) != CT_OK) return st;
        FILE *f = fopen(src, "rb");
        if (!f) {
            int e = errno;
            return ct_errf(err, errcap, CT_ERR_IO, "make_model: tokenizer file '%s': %s", src, strerror(e));
        }
        fclose(f);
    }

    int ne = dir_nonempty(out_dir);
    if (ne < 0) {
        int e = errno;
        return ct_errf(err, errcap, CT_ERR_IO, "make_model: cannot read '%s': %s", out_dir, strerror(e));
    }
    if (ne > 0 && !overwrite)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "make_model: '%s' is not empty; refusing to overwrite it (the overwrite argument; the CLI's --force)", out_dir);

    ct_mm_tensor *tm = NULL, *tc = NULL;
    size_t nm = 0, nc = 0;
    if ((st = ct_mm_tensors(p, CT_MM_FILE_MAIN, &tm, &nm, err, errcap)) != CT_OK) return st;
    if ((st = ct_mm_tensors(p, CT_MM_FILE_CODEC, &tc, &nc, err, errcap)) != CT_OK) {
        free(tm);
        return st;
    }

    char st_dir[MM_PATH_MAX];
    st = join(st_dir, sizeof st_dir, out_dir, "speech_tokenizer", err, errcap);
    if (st == CT_OK) st = mkdir_p(out_dir, err, errcap);
    if (st == CT_OK) st = mkdir_p(st_dir, err, errcap);

    if (st == CT_OK && (st = join(dst, sizeof dst, out_dir, "config.json", err, errcap)) == CT_OK)
        st = write_json(dst, main_config(p), JSON_PRESERVE_ORDER, err, errcap);
    if (st == CT_OK && (st = join(dst, sizeof dst, out_dir, "generation_config.json", err, errcap)) == CT_OK)
        st = write_json(dst, generation_config(), JSON_PRESERVE_ORDER, err, errcap);
    if (st == CT_OK && (st = join(dst, sizeof dst, out_dir, "preprocessor_config.json", err, errcap)) == CT_OK)
        st = write_json(dst, processor_config(), JSON_PRESERVE_ORDER, err, errcap);
    if (st == CT_OK && (st = join(dst, sizeof dst, st_dir, "config.json", err, errcap)) == CT_OK)
        st = write_json(dst, codec_config(p), JSON_PRESERVE_ORDER, err, errcap);
    if (st == CT_OK && (st = join(dst, sizeof dst, st_dir, "preprocessor_config.json", err, errcap)) == CT_OK)
        st = write_json(dst, codec_preprocessor_config(), JSON_PRESERVE_ORDER, err, errcap);
    for (size_t i = 0; st == CT_OK && i < 3; i++) {
        st = join(src, sizeof src, tok_src_dir, tok_files[i], err, errcap);
        if (st == CT_OK) st = join(dst, sizeof dst, out_dir, tok_files[i], err, errcap);
        if (st == CT_OK) st = copy_file(src, dst, err, errcap);
    }

    progress_state ps = {progress, ud, 0, list_bytes(tm, nm) + list_bytes(tc, nc), 0};
    if (st == CT_OK && (st = join(dst, sizeof dst, out_dir, "model.safetensors", err, errcap)) == CT_OK)
        st = write_weights(dst, tm, nm, seed, &ps, err, errcap);
    if (st == CT_OK && (st = join(dst, sizeof dst, st_dir, "model.safetensors", err, errcap)) == CT_OK)
        st = write_weights(dst, tc, nc, seed, &ps, err, errcap);
    if (st == CT_OK) report(&ps, 1);
    free(tm);
    free(tc);
    return st;
}
