/* config.json / generation_config.json parsing with range checks (jansson). */
#include "model/config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/fileio.h"
#include "text/langcode.h"

const char *ct_model_kind_name(ct_model_kind k) {
    switch (k) {
    case CT_KIND_CUSTOM_VOICE: return "custom_voice";
    case CT_KIND_BASE: return "base";
    case CT_KIND_VOICE_DESIGN: return "voice_design";
    }
    return "?";
}

/* A missing (or null) field: 1 with *use_def set when def >= lo, else the "is missing" error
   (0). 1 with *use_def = 0 when the field is present. */
static int absent(const json_t *v, double def, double lo, const char *where, const char *key, int *use_def,
                  char *err, size_t errcap) {
    *use_def = !v || json_is_null(v);
    if (*use_def && def < lo) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.%s is missing", where, key);
        return 0;
    }
    return 1;
}

/* Reads an integer field in [lo, hi]; a missing field uses def unless def < lo (required). */
static int get_int(json_t *obj, const char *key, long lo, long hi, long def, int *out,
                   const char *where, char *err, size_t errcap) {
    json_t *v = json_object_get(obj, key);
    int use_def;
    if (!absent(v, (double)def, (double)lo, where, key, &use_def, err, errcap)) return 0;
    if (use_def) {
        *out = (int)def;
        return 1;
    }
    if (!json_is_integer(v)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.%s is not an integer", where, key);
        return 0;
    }
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.%s = %lld is outside [%ld, %ld]", where, key,
                (long long)x, lo, hi);
        return 0;
    }
    *out = (int)x;
    return 1;
}

/* Reads an integer list field of n_min..CT_SPK_MAX_LAYERS entries in [lo, hi] (def[nd] when
   absent); *n gets the count. */
static int get_int_list(json_t *obj, const char *key, int lo, int hi, const int *def, int nd,
                        int *out, int *n, const char *where, char *err, size_t errcap) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        memcpy(out, def, (size_t)nd * sizeof *out);
        *n = nd;
        return 1;
    }
    if (!json_is_array(v) || json_array_size(v) < 3 || json_array_size(v) > CT_SPK_MAX_LAYERS) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.%s is not a list of 3 to %d integers",
                where, key, CT_SPK_MAX_LAYERS);
        return 0;
    }
    *n = (int)json_array_size(v);
    for (int i = 0; i < *n; i++) {
        json_t *e = json_array_get(v, (size_t)i);
        if (!json_is_integer(e) || json_integer_value(e) < lo || json_integer_value(e) > hi) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.%s[%d] is not an integer in [%d, %d]",
                    where, key, i, lo, hi);
            return 0;
        }
        out[i] = (int)json_integer_value(e);
    }
    return 1;
}

/* The speaker encoder's geometry (Qwen3TTSSpeakerEncoderConfig defaults) and the constraints
   its forward needs: equal list lengths, the residual SE-Res2 blocks keep their width, widths
   divisible by the Res2Net scale, the MFA width = the SE-Res2 widths summed, 128 mel bins at
   24 kHz (the front end's), enc_dim = talker hidden (the x-vector fills a talker position). */
static int parse_spk(json_t *se, ct_config *c, char *err, size_t errcap) {
    static const int dch[] = {512, 512, 512, 512, 1536}, dk[] = {5, 3, 3, 3, 1}, dd[] = {1, 2, 3, 4, 1};
    const char *W = "speaker_encoder_config";
    ct_spk_cfg *s = &c->spk;
    int nk = 0, nd = 0;
    s->enc_dim = c->spk_enc_dim;
    if (!get_int(se, "mel_dim", 1, 4096, 128, &s->mel_dim, W, err, errcap) ||
        !get_int(se, "enc_attention_channels", 1, 16384, 128, &s->attention, W, err, errcap) ||
        !get_int(se, "enc_res2net_scale", 2, 64, 8, &s->res2net_scale, W, err, errcap) ||
        !get_int(se, "enc_se_channels", 1, 16384, 128, &s->se_channels, W, err, errcap) ||
        !get_int(se, "sample_rate", 1, 1000000, 24000, &s->sample_rate, W, err, errcap) ||
        !get_int_list(se, "enc_channels", 1, 16384, dch, 5, s->channels, &s->n_layers, W, err, errcap) ||
        !get_int_list(se, "enc_kernel_sizes", 1, 31, dk, 5, s->kernels, &nk, W, err, errcap) ||
        !get_int_list(se, "enc_dilations", 1, 64, dd, 5, s->dilations, &nd, W, err, errcap))
        return 0;
    const int L = s->n_layers;
    if (nk != L || nd != L) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s: enc_channels, enc_kernel_sizes and "
                "enc_dilations have %d, %d and %d entries (must be equal)", W, L, nk, nd);
        return 0;
    }
    int sum = 0;
    for (int i = 1; i < L - 1; i++) {
        if (s->channels[i] != s->channels[i - 1] || s->channels[i] % s->res2net_scale) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s: SE-Res2 block %d has %d channels "
                    "(must equal the block before, %d, and divide by enc_res2net_scale %d)", W, i,
                    s->channels[i], s->channels[i - 1], s->res2net_scale);
            return 0;
        }
        sum += s->channels[i];
    }
    if (sum != s->channels[L - 1]) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s: the MFA width enc_channels[%d] = %d "
                "must be the SE-Res2 widths summed (%d)", W, L - 1, s->channels[L - 1], sum);
        return 0;
    }
    if (s->mel_dim != 128 || s->sample_rate != 24000) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s: mel_dim %d at %d Hz (the front end "
                "makes 128 bins at 24000 Hz)", W, s->mel_dim, s->sample_rate);
        return 0;
    }
    if (s->enc_dim != c->talker.hidden) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.enc_dim = %d but the talker hidden size "
                "is %d (the x-vector fills a talker position)", W, s->enc_dim, c->talker.hidden);
        return 0;
    }
    return 1;
}

/* Reads a number field in [lo, hi], same rule for a missing field. */
static int get_num(json_t *obj, const char *key, double lo, double hi, double def, double *out,
                   const char *where, char *err, size_t errcap) {
    json_t *v = json_object_get(obj, key);
    int use_def;
    if (!absent(v, def, lo, where, key, &use_def, err, errcap)) return 0;
    if (use_def) {
        *out = def;
        return 1;
    }
    if (!json_is_number(v)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.%s is not a number", where, key);
        return 0;
    }
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.%s = %g is outside [%g, %g]", where, key, x,
                lo, hi);
        return 0;
    }
    *out = x;
    return 1;
}

static int get_bool(json_t *obj, const char *key, int def, int *out) {
    json_t *v = json_object_get(obj, key);
    if (json_is_boolean(v)) *out = json_is_true(v);
    else if (json_is_integer(v)) *out = json_integer_value(v) != 0;
    else *out = def;
    return 1;
}

static int parse_stack(json_t *o, const char *where, int max_layers, ct_stack_cfg *s, char *err,
                       size_t errcap) {
    double eps, theta;
    if (!json_is_object(o)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s is missing or not an object", where);
        return 0;
    }
    if (!get_int(o, "hidden_size", 1, 16384, -1, &s->hidden, where, err, errcap) ||
        !get_int(o, "intermediate_size", 1, 65536, -1, &s->ffn, where, err, errcap) ||
        !get_int(o, "num_hidden_layers", 1, max_layers, -1, &s->layers, where, err, errcap) ||
        !get_int(o, "num_attention_heads", 1, 256, -1, &s->heads, where, err, errcap) ||
        !get_int(o, "num_key_value_heads", 1, 256, s->heads, &s->kv_heads, where, err, errcap) ||
        !get_int(o, "head_dim", 2, 1024, s->hidden / s->heads, &s->head_dim, where, err, errcap) ||
        !get_int(o, "vocab_size", 1, 1 << 20, -1, &s->vocab, where, err, errcap) ||
        !get_int(o, "max_position_embeddings", 1, 1 << 22, 32768, &s->max_pos, where, err, errcap) ||
        !get_num(o, "rms_norm_eps", 1e-12, 1e-1, 1e-6, &eps, where, err, errcap) ||
        !get_num(o, "rope_theta", 1.0, 1e12, 10000.0, &theta, where, err, errcap))
        return 0;
    if (s->heads % s->kv_heads) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.num_attention_heads (%d) is not a multiple "
                "of num_key_value_heads (%d)", where, s->heads, s->kv_heads);
        return 0;
    }
    if (s->head_dim % 2) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.head_dim (%d) must be even for RoPE", where,
                s->head_dim);
        return 0;
    }
    s->eps = (float)eps;
    s->rope_theta = theta;
    return 1;
}

static int parse_map(json_t *o, const char *where, ct_named_id *out, int *n, char *err,
                     size_t errcap) {
    *n = 0;
    if (!o || json_is_null(o)) return 1;
    if (!json_is_object(o)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s is not an object", where);
        return 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (*n >= CT_MAX_NAMES) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s has more than %d entries", where,
                    CT_MAX_NAMES);
            return 0;
        }
        if (strlen(k) >= CT_NAME_LEN || !k[0]) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s has a bad name '%.60s'", where, k);
            return 0;
        }
        /* Some ports note list values are allowed; take the first element. */
        json_t *iv = json_is_array(v) ? json_array_get(v, 0) : v;
        if (!json_is_integer(iv) || json_integer_value(iv) < 0 || json_integer_value(iv) > (1 << 20)) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "config: %s.%s is not a valid id", where, k);
            return 0;
        }
        ct_named_id *e = &out[(*n)++];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", k);
        for (char *p = e->name; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
        e->id = (int)json_integer_value(iv);
    }
    return 1;
}

static ct_status parse_gen(json_t *g, ct_config *c, char *err, size_t errcap) {
    double t, p, rp, st, sp;
    const char *w = "generation_config";
    get_bool(g, "do_sample", 1, &c->do_sample);
    get_bool(g, "subtalker_dosample", 1, &c->sub_do_sample);
    if (!get_num(g, "temperature", 1e-4, 100, 0.9, &t, w, err, errcap) ||
        !get_int(g, "top_k", 0, 1 << 20, 50, &c->top_k, w, err, errcap) ||
        !get_num(g, "top_p", 1e-6, 1.0, 1.0, &p, w, err, errcap) ||
        !get_num(g, "repetition_penalty", 1e-3, 100, 1.05, &rp, w, err, errcap) ||
        !get_num(g, "subtalker_temperature", 1e-4, 100, 0.9, &st, w, err, errcap) ||
        !get_int(g, "subtalker_top_k", 0, 1 << 20, 50, &c->sub_top_k, w, err, errcap) ||
        !get_num(g, "subtalker_top_p", 1e-6, 1.0, 1.0, &sp, w, err, errcap) ||
        !get_int(g, "max_new_tokens", 1, 1 << 20, 8192, &c->max_new_tokens, w, err, errcap))
        return CT_ERR_FORMAT;
    c->temperature = (float)t;
    c->top_p = (float)p;
    c->repetition_penalty = (float)rp;
    c->sub_temperature = (float)st;
    c->sub_top_p = (float)sp;
    return CT_OK;
}

ct_status ct_config_parse(const char *config_json, size_t len, const char *gen_json,
                          size_t gen_len, ct_config *c, char *err, size_t errcap) {
    memset(c, 0, sizeof *c);
    json_error_t je;
    json_t *root = json_loadb(config_json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "config.json is not valid JSON (line %d col %d: %s)",
                       je.line, je.column, je.text);
    ct_status st = CT_ERR_FORMAT;
    json_t *gen = NULL;
    if (!json_is_object(root)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config.json is not a JSON object");
        goto done;
    }
    json_t *mt = json_object_get(root, "model_type");
    if (!json_is_string(mt) || strcmp(json_string_value(mt), "qwen3_tts") != 0) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config.json: model_type is '%s', expected 'qwen3_tts'",
                json_is_string(mt) ? json_string_value(mt) : "(missing)");
        goto done;
    }
    json_t *kt = json_object_get(root, "tts_model_type");
    const char *kind = json_is_string(kt) ? json_string_value(kt) : "";
    if (strcmp(kind, "custom_voice") == 0) c->kind = CT_KIND_CUSTOM_VOICE;
    else if (strcmp(kind, "base") == 0) c->kind = CT_KIND_BASE;
    else if (strcmp(kind, "voice_design") == 0) c->kind = CT_KIND_VOICE_DESIGN;
    else {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config.json: tts_model_type '%s' is not one of "
                "custom_voice, base, voice_design", kind);
        goto done;
    }
    json_t *sz = json_object_get(root, "tts_model_size");
    snprintf(c->size_tag, sizeof c->size_tag, "%s", json_is_string(sz) ? json_string_value(sz) : "");
    const char *w = "config";
    if (!get_int(root, "im_start_token_id", 0, 1 << 24, 151644, &c->im_start, w, err, errcap) ||
        !get_int(root, "im_end_token_id", 0, 1 << 24, 151645, &c->im_end, w, err, errcap) ||
        !get_int(root, "assistant_token_id", 0, 1 << 24, 77091, &c->assistant, w, err, errcap) ||
        !get_int(root, "tts_pad_token_id", 0, 1 << 24, -1, &c->tts_pad, w, err, errcap) ||
        !get_int(root, "tts_bos_token_id", 0, 1 << 24, -1, &c->tts_bos, w, err, errcap) ||
        !get_int(root, "tts_eos_token_id", 0, 1 << 24, -1, &c->tts_eos, w, err, errcap))
        goto done;

    json_t *tk = json_object_get(root, "talker_config");
    if (!parse_stack(tk, "talker_config", 256, &c->talker, err, errcap)) goto done;
    json_t *pk = json_object_get(tk, "code_predictor_config");
    if (!parse_stack(pk, "talker_config.code_predictor_config", 64, &c->pred, err, errcap))
        goto done;
    w = "talker_config";
    int pred_groups;
    if (!get_int(tk, "text_vocab_size", 1, 1 << 22, -1, &c->text_vocab, w, err, errcap) ||
        !get_int(tk, "text_hidden_size", 1, 16384, -1, &c->text_hidden, w, err, errcap) ||
        !get_int(tk, "num_code_groups", 2, 64, -1, &c->n_groups, w, err, errcap) ||
        !get_int(tk, "codec_pad_id", 0, c->talker.vocab - 1, -1, &c->codec_pad, w, err, errcap) ||
        !get_int(tk, "codec_bos_id", 0, c->talker.vocab - 1, -1, &c->codec_bos, w, err, errcap) ||
        !get_int(tk, "codec_eos_token_id", 0, c->talker.vocab - 1, -1, &c->codec_eos, w, err, errcap) ||
        !get_int(tk, "codec_think_id", 0, c->talker.vocab - 1, -1, &c->codec_think, w, err, errcap) ||
        !get_int(tk, "codec_nothink_id", 0, c->talker.vocab - 1, -1, &c->codec_nothink, w, err,
                 errcap) ||
        !get_int(tk, "codec_think_bos_id", 0, c->talker.vocab - 1, -1, &c->codec_think_bos, w, err,
                 errcap) ||
        !get_int(tk, "codec_think_eos_id", 0, c->talker.vocab - 1, -1, &c->codec_think_eos, w, err,
                 errcap) ||
        !get_int(pk, "num_code_groups", 2, 64, c->n_groups, &pred_groups,
                 "talker_config.code_predictor_config", err, errcap))
        goto done;
    if (pred_groups != c->n_groups) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: code_predictor num_code_groups %d != talker %d",
                pred_groups, c->n_groups);
        goto done;
    }
    if (c->pred.vocab > c->talker.vocab || c->codec_eos < c->pred.vocab) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: codec vocab %d / codebook size %d / eos %d are "
                "inconsistent", c->talker.vocab, c->pred.vocab, c->codec_eos);
        goto done;
    }
    if (c->tts_pad >= c->text_vocab || c->tts_bos >= c->text_vocab || c->tts_eos >= c->text_vocab ||
        c->im_start >= c->text_vocab || c->im_end >= c->text_vocab ||
        c->assistant >= c->text_vocab) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "config: a special text id is >= text_vocab_size %d",
                c->text_vocab);
        goto done;
    }
    if (!parse_map(json_object_get(tk, "codec_language_id"), "talker_config.codec_language_id",
                   c->langs, &c->n_langs, err, errcap) ||
        !parse_map(json_object_get(tk, "spk_id"), "talker_config.spk_id", c->speakers,
                   &c->n_speakers, err, errcap))
        goto done;
    for (int i = 0; i < c->n_langs; i++)
        if (c->langs[i].id >= c->talker.vocab) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "config: language '%s' id %d >= codec vocab %d",
                    c->langs[i].name, c->langs[i].id, c->talker.vocab);
            goto done;
        }
    for (int i = 0; i < c->n_speakers; i++)
        if (c->speakers[i].id >= c->talker.vocab) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "config: speaker '%s' id %d >= codec vocab %d",
                    c->speakers[i].name, c->speakers[i].id, c->talker.vocab);
            goto done;
        }
    json_t *dia = json_object_get(tk, "spk_is_dialect");
    if (json_is_object(dia)) {
        const char *k;
        json_t *v;
        json_object_foreach(dia, k, v) {
            if (!json_is_string(v)) continue; /* false = no dialect */
            for (int i = 0; i < c->n_speakers; i++)
                if (strcasecmp(c->speakers[i].name, k) == 0) {
                    snprintf(c->speakers[i].dialect, CT_NAME_LEN, "%s", json_string_value(v));
                    if (!ct_config_find_lang(c, c->speakers[i].dialect)) {
                        ct_errf(err, errcap, CT_ERR_FORMAT, "config: speaker '%s' dialect '%s' is "
                                "not in codec_language_id", k, json_string_value(v));
                        goto done;
                    }
                }
        }
    }
    json_t *se = json_object_get(root, "speaker_encoder_config");
    if (json_is_object(se)) {
        if (!get_int(se, "enc_dim", 1, 16384, c->talker.hidden, &c->spk_enc_dim,
                     "speaker_encoder_config", err, errcap))
            goto done;
        if (c->kind == CT_KIND_BASE && !parse_spk(se, c, err, errcap)) goto done;
    }
    if (gen_json) {
        gen = json_loadb(gen_json, gen_len, JSON_REJECT_DUPLICATES, &je);
        if (!gen || !json_is_object(gen)) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "generation_config.json is not a valid JSON object");
            goto done;
        }
    } else {
        gen = json_object();
    }
    if (parse_gen(gen, c, err, errcap) != CT_OK) goto done;
    st = CT_OK;
done:
    json_decref(gen);
    json_decref(root);
    return st;
}

ct_status ct_config_load(const char *dir, ct_config *cfg, char *err, size_t errcap) {
    char path[4096];
    char *cj = NULL, *gj = NULL;
    size_t cl = 0, gl = 0;
    char inner[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    ct_status st = ct_read_file(path, 1 << 24, &cj, &cl, inner, sizeof inner); /* refuses a FIFO */
    if (st != CT_OK) return ct_errf(err, errcap, st, "%s", inner);
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    if ((st = ct_check_regular(path, err, errcap)) != CT_OK) { /* optional, but not a FIFO */
        free(cj);
        return st;
    }
    if (ct_file_exists(path)) {
        st = ct_read_file(path, 1 << 20, &gj, &gl, inner, sizeof inner);
        if (st != CT_OK) {
            free(cj);
            return ct_errf(err, errcap, st, "%s", inner);
        }
    }
    st = ct_config_parse(cj, cl, gj, gl, cfg, err, errcap);
    free(cj);
    free(gj);
    return st;
}

static const ct_named_id *find(const ct_named_id *a, int n, const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < n; i++)
        if (strcasecmp(a[i].name, name) == 0) return &a[i];
    return NULL;
}

const ct_named_id *ct_config_find_lang(const ct_config *cfg, const char *name) {
    const ct_named_id *l = find(cfg->langs, cfg->n_langs, name);
    return l ? l : find(cfg->langs, cfg->n_langs, ct_language_from_code(name)); /* "en-US" -> english */
}

const ct_named_id *ct_config_find_speaker(const ct_config *cfg, const char *name) {
    return find(cfg->speakers, cfg->n_speakers, name);
}
