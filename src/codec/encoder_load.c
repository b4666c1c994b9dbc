/* Speech-tokenizer encoder loading: speech_tokenizer/config.json (encoder_config, a
 * transformers MimiConfig) + the F32 `encoder.*` tensors of speech_tokenizer/model.safetensors,
 * widths checked against every tensor shape; strided convs repacked into super-row form,
 * codebooks normalised (embed_sum / max(cluster_usage, 1e-5)) and packed for the distance GEMM. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/encoder.h"
#include "core/fileio.h"

#define SEC "encoder_config"
#define NAMEF(buf, ...) snprintf(buf, sizeof buf, __VA_ARGS__)
#define TRY(x)                                                                       \
    do {                                                                             \
        ct_status st_ = (x);                                                         \
        if (st_ != CT_OK) return st_;                                                \
    } while (0)

void ct_speech_encoder_free(ct_speech_encoder *e) {
    if (!e) return;
    ct_allocs_free(&e->al);
    free(e->layers);
    free(e);
}

/* ---------------------------------------------------------------------------------------
 * Config */

/* An optional integer (MimiConfig default def when absent). */
static ct_status opt_int(json_t *o, const char *key, int def, int lo, int hi, int *out, const char *path,
                         char *err, size_t errcap) {
    if (!json_object_get(o, key) || json_is_null(json_object_get(o, key))) {
        *out = def;
        return CT_OK;
    }
    return ct_cfg_int(o, SEC, key, lo, hi, out, path, err, errcap);
}

/* An optional boolean that must equal want (absent = the MimiConfig default, which is want). */
static ct_status need_bool(json_t *o, const char *key, int want, const char *path, char *err, size_t errcap) {
    json_t *v = json_object_get(o, key);
    if (!v) return CT_OK;
    if (!json_is_boolean(v)) return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: %s.%s is not a boolean", path, SEC, key);
    if (json_is_true(v) != want)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: %s.%s = %s is not supported (only %s)", path, SEC, key,
                       want ? "false" : "true", want ? "true" : "false");
    return CT_OK;
}

/* An optional string that must equal want. */
static ct_status need_str(json_t *o, const char *key, const char *want, const char *path, char *err,
                          size_t errcap) {
    json_t *v = json_object_get(o, key);
    if (!v) return CT_OK;
    if (!json_is_string(v) || strcmp(json_string_value(v), want) != 0)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: %s.%s must be \"%s\"", path, SEC, key, want);
    return CT_OK;
}

static ct_status parse_config(ct_speech_encoder *e, const char *path, int *ratios, int *n_quant, char *err,
                              size_t errcap) {
    json_t *root = NULL;
    ct_status st = ct_json_load_object(path, &root, err, errcap);
    if (st != CT_OK) return st;
    json_t *o = json_object_get(root, SEC);
    int up[CT_ENC_MAX_STAGES] = {0}, vq_hidden = 0, n_sem = 0, sr = 0, ch = 0, growth = 0, valid = 0;
    double eps = 0, theta = 0;
    if (!json_is_object(o)) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: no %s object (needed by the speech encoder)", path, SEC);
        goto done;
    }
#define GI(key, lo, hi, dst)                                                         \
    do {                                                                             \
        st = ct_cfg_int(o, SEC, key, lo, hi, dst, path, err, errcap);                \
        if (st != CT_OK) goto done;                                                  \
    } while (0)
#define OI(key, def, lo, hi, dst)                                                    \
    do {                                                                             \
        st = opt_int(o, key, def, lo, hi, dst, path, err, errcap);                   \
        if (st != CT_OK) goto done;                                                  \
    } while (0)
    GI("num_filters", 1, 1 << 12, &e->filters);
    GI("hidden_size", 1, 1 << 14, &e->hidden);
    GI("num_hidden_layers", 0, 64, &e->n_layers);
    GI("num_attention_heads", 1, 256, &e->n_heads);
    GI("num_key_value_heads", 1, 256, &e->n_kv);
    GI("intermediate_size", 1, 1 << 16, &e->ffn);
    GI("codebook_size", 1, 1 << 16, &e->codebook_size);
    GI("codebook_dim", 1, 1 << 14, &e->cb_dim);
    GI("num_quantizers", 2, 256, n_quant);
    OI("vector_quantization_hidden_dimension", 256, 1, 1 << 14, &vq_hidden);
    OI("num_semantic_quantizers", 1, 1, 1, &n_sem);
    OI("audio_channels", 1, 1, 1, &ch);
    OI("sampling_rate", 24000, 24000, 24000, &sr);
    OI("kernel_size", 7, 1, 64, &e->k0);
    OI("last_kernel_size", 3, 1, 64, &e->k_last);
    OI("residual_kernel_size", 3, 1, 64, &e->res_k);
    OI("num_residual_layers", 1, 1, CT_ENC_MAX_RES, &e->n_res);
    OI("dilation_growth_rate", 2, 1, 16, &growth);
    OI("compress", 2, 1, 64, &e->compress);
    e->head_dim = e->hidden / e->n_heads;
    OI("head_dim", e->head_dim, 2, 1024, &e->head_dim);
#undef GI
#undef OI
    for (int j = 0; j < e->n_res; j++) {
        int d = 1;
        for (int i = 0; i < j; i++) d *= growth;
        for (int s = 0; s < CT_ENC_MAX_STAGES; s++) e->st[s].res[j].dil = d;
    }
    if (vq_hidden != e->cb_dim) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED,
                     "%s: %s.vector_quantization_hidden_dimension %d differs from codebook_dim %d", path, SEC, vq_hidden,
                     e->cb_dim);
        goto done;
    }
    e->has_in_proj = vq_hidden != e->hidden;
    if (e->head_dim % 2 || e->n_heads % e->n_kv || e->filters % e->compress) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED,
                     "%s: %s: head_dim %d must be even, heads %d a multiple of kv heads %d and num_filters %d of "
                     "compress %d", path, SEC, e->head_dim, e->n_heads, e->n_kv, e->filters, e->compress);
        goto done;
    }
    if ((st = ct_cfg_real(o, SEC, "norm_eps", 0.0, 1.0, &eps, path, err, errcap)) != CT_OK) goto done;
    if ((st = ct_cfg_real(o, SEC, "rope_theta", 1.0, 1e12, &theta, path, err, errcap)) != CT_OK) goto done;
    e->norm_eps = (float)eps;
    e->rope_theta = theta;
    if ((st = need_str(o, "hidden_act", "gelu", path, err, errcap)) != CT_OK) goto done;
    if ((st = need_str(o, "pad_mode", "constant", path, err, errcap)) != CT_OK) goto done;
    if ((st = need_bool(o, "use_causal_conv", 1, path, err, errcap)) != CT_OK) goto done;
    if ((st = need_bool(o, "use_conv_shortcut", 0, path, err, errcap)) != CT_OK) goto done;
    if ((st = need_bool(o, "attention_bias", 0, path, err, errcap)) != CT_OK) goto done;
    st = ct_cfg_int_array(o, SEC, "upsampling_ratios", CT_ENC_MAX_STAGES, 2, 64, up, &e->n_stages, path, err,
                          errcap);
    if (st != CT_OK) goto done;
    long hop = 1;
    for (int s = 0; s < e->n_stages; s++) {
        ratios[s] = up[e->n_stages - 1 - s]; /* applied reversed when encoding */
        hop *= ratios[s];
    }
    if ((long)e->filters << e->n_stages > (1L << 14)) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: %s: num_filters %d x 2^%d channels is too wide", path, SEC,
                     e->filters, e->n_stages);
        goto done;
    }
    /* The 12.5 Hz downsample (k = 2 * encodec_rate / frame_rate, stride 2) exists when the frame
     * rate differs from the SEANet rate; only the factor-2 form of the published model is built. */
    double fr = (double)sr / (double)(2 * hop);
    json_t *jf = json_object_get(o, "_frame_rate");
    if (!jf || json_is_null(jf)) jf = json_object_get(o, "frame_rate");
    if (jf && !json_is_null(jf)) {
        if (!json_is_number(jf)) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: %s.frame_rate is not a number", path, SEC);
            goto done;
        }
        fr = json_number_value(jf);
    }
    double enc_rate = ceil((double)sr / (double)hop);
    if (!(fr > 0) || fr == enc_rate || (int)(enc_rate / fr) != 2) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED,
                     "%s: %s: frame_rate %g with a SEANet rate of %g Hz: only a 2x downsample is supported", path, SEC,
                     fr, enc_rate);
        goto done;
    }
    e->hop = (int)hop;
    e->spf = 2 * (int)hop;
    if (e->spf != 1920) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED,
                     "%s: %s.upsampling_ratios give %d samples per code frame, the codec's frame is 1920", path, SEC,
                     e->spf);
        goto done;
    }
    json_t *jd = json_object_get(root, "encode_downsample_rate");
    if (jd && (!json_is_integer(jd) || json_integer_value(jd) != e->spf)) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT,
                     "%s: encode_downsample_rate disagrees with the encoder's %d samples per frame", path, e->spf);
        goto done;
    }
    st = ct_cfg_int(root, "config", "encoder_valid_num_quantizers", 2, 256, &valid, path, err, errcap);
    if (st != CT_OK) goto done;
    if (valid != CT_ENC_N_CODES || valid > *n_quant) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED,
                     "%s: encoder_valid_num_quantizers %d (with %s.num_quantizers %d): the encoder emits %d codes "
                     "per frame", path, valid, SEC, *n_quant, CT_ENC_N_CODES);
        goto done;
    }
    e->n_codes = valid;
done:
    json_decref(root);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * Tensors */

/* A strided conv of kernel 2r, stride r (PyTorch [cout][cin][2r]) as a k2 conv over
 * super-rows of r time steps: W'[m][j*cin + i][o] = W[o][i][m*r + j]. */
static ct_status bind_strided(ct_binder *b, const char *name, int cout, int cin, int r, ct_cv_packed *dst) {
    int64_t sh[3] = {cout, cin, 2 * r};
    const float *src;
    TRY(ct_bind_get(b, name, 3, sh, &src));
    const size_t ci2 = (size_t)r * (size_t)cin;
    float *tmp = malloc((size_t)cout * ci2 * 2 * sizeof(float));
    if (!tmp || ct_allocs_packed(b->al, dst, 2, (int)ci2, cout) != 0) {
        free(tmp);
        return ct_bind_nomem(b, name);
    }
    for (int o = 0; o < cout; o++)
        for (int i = 0; i < cin; i++)
            for (int m = 0; m < 2; m++)
                for (int j = 0; j < r; j++)
                    tmp[((size_t)o * ci2 + (size_t)j * (size_t)cin + (size_t)i) * 2 + (size_t)m] =
                        src[((size_t)o * (size_t)cin + (size_t)i) * (size_t)(2 * r) + (size_t)(m * r + j)];
    ct_cv_pack_conv(dst, tmp);
    free(tmp);
    return CT_OK;
}

/* Codebook g at prefix: entries = embed_sum / max(cluster_usage, 1e-5), packed as a linear
 * cb_dim -> codebook_size, and the bias -0.5 |entry|^2 of the distance GEMM. */
static ct_status bind_codebook(ct_binder *b, ct_speech_encoder *e, const char *prefix, int g) {
    char name[192];
    const float *es, *cu;
    const int R = e->codebook_size, D = e->cb_dim;
    int64_t sh2[2] = {R, D}, sh1[1] = {R};
    NAMEF(name, "%s.codebook.cluster_usage", prefix);
    TRY(ct_bind_get(b, name, 1, sh1, &cu));
    NAMEF(name, "%s.codebook.embed_sum", prefix);
    TRY(ct_bind_get(b, name, 2, sh2, &es));
    float *tmp = malloc((size_t)R * (size_t)D * sizeof(float));
    e->cb_bias[g] = ct_allocs_floats(b->al, (size_t)R);
    if (!tmp || !e->cb_bias[g] || ct_allocs_packed(b->al, &e->cb[g], 1, D, R) != 0) {
        free(tmp);
        return ct_bind_nomem(b, name);
    }
    for (int r = 0; r < R; r++) {
        const float u = cu[r] > 1e-5f ? cu[r] : 1e-5f;
        double nn = 0;
        for (int i = 0; i < D; i++) {
            const size_t j = (size_t)r * (size_t)D + (size_t)i;
            tmp[j] = es[j] / u;
            nn += (double)tmp[j] * (double)tmp[j];
        }
        e->cb_bias[g][r] = (float)(-0.5 * nn);
    }
    ct_cv_pack_linear(&e->cb[g], tmp);
    free(tmp);
    return CT_OK;
}

static ct_status bind_all(ct_binder *b, ct_speech_encoder *e, const int *ratios) {
    char name[192], pre[160];
    const int H = e->hidden, F = e->filters, qd = e->n_heads * e->head_dim, kvd = e->n_kv * e->head_dim;
    TRY(ct_bind_conv(b, "encoder.encoder.layers.0.conv.weight", F, 1, e->k0, &e->conv0));
    TRY(ct_bind_vec(b, "encoder.encoder.layers.0.conv.bias", F, &e->conv0_b));
    int idx = 1, C = F;
    for (int s = 0; s < e->n_stages; s++) {
        ct_enc_stage *sg = &e->st[s];
        sg->C = C;
        sg->ratio = ratios[s];
        for (int j = 0; j < e->n_res; j++, idx++) {
            ct_enc_res *rb = &sg->res[j];
            const int hc = C / e->compress;
            NAMEF(name, "encoder.encoder.layers.%d.block.1.conv.weight", idx);
            TRY(ct_bind_conv(b, name, hc, C, e->res_k, &rb->c1));
            NAMEF(name, "encoder.encoder.layers.%d.block.1.conv.bias", idx);
            TRY(ct_bind_vec(b, name, hc, &rb->c1_b));
            NAMEF(name, "encoder.encoder.layers.%d.block.3.conv.weight", idx);
            TRY(ct_bind_conv(b, name, C, hc, 1, &rb->c2));
            NAMEF(name, "encoder.encoder.layers.%d.block.3.conv.bias", idx);
            TRY(ct_bind_vec(b, name, C, &rb->c2_b));
        }
        idx++; /* ELU */
        NAMEF(name, "encoder.encoder.layers.%d.conv.weight", idx);
        TRY(bind_strided(b, name, 2 * C, C, sg->ratio, &sg->down));
        NAMEF(name, "encoder.encoder.layers.%d.conv.bias", idx);
        TRY(ct_bind_vec(b, name, 2 * C, &sg->down_b));
        idx++;
        C *= 2;
    }
    idx++; /* ELU */
    NAMEF(name, "encoder.encoder.layers.%d.conv.weight", idx);
    TRY(ct_bind_conv(b, name, H, C, e->k_last, &e->conv_last));
    NAMEF(name, "encoder.encoder.layers.%d.conv.bias", idx);
    TRY(ct_bind_vec(b, name, H, &e->conv_last_b));

    e->layers = calloc((size_t)(e->n_layers ? e->n_layers : 1), sizeof *e->layers);
    if (!e->layers) return ct_bind_nomem(b, "encoder_transformer.layers");
    for (int l = 0; l < e->n_layers; l++) {
        ct_enc_layer *ly = &e->layers[l];
        NAMEF(pre, "encoder.encoder_transformer.layers.%d", l);
#define V(field, suffix)                                                             \
    do {                                                                             \
        NAMEF(name, "%s.%s", pre, suffix);                                           \
        TRY(ct_bind_vec(b, name, H, &ly->field));                                    \
    } while (0)
#define L(field, suffix, o, i)                                                       \
    do {                                                                             \
        NAMEF(name, "%s.%s", pre, suffix);                                           \
        TRY(ct_bind_linear(b, name, o, i, &ly->field));                              \
    } while (0)
        V(ln1_w, "input_layernorm.weight");
        V(ln1_b, "input_layernorm.bias");
        V(ln2_w, "post_attention_layernorm.weight");
        V(ln2_b, "post_attention_layernorm.bias");
        V(ls_attn, "self_attn_layer_scale.scale");
        V(ls_mlp, "mlp_layer_scale.scale");
        L(q, "self_attn.q_proj.weight", qd, H);
        L(k, "self_attn.k_proj.weight", kvd, H);
        L(v, "self_attn.v_proj.weight", kvd, H);
        L(o, "self_attn.o_proj.weight", H, qd);
        L(fc1, "mlp.fc1.weight", e->ffn, H);
        L(fc2, "mlp.fc2.weight", H, e->ffn);
#undef V
#undef L
    }
    TRY(bind_strided(b, "encoder.downsample.conv.weight", H, H, 2, &e->down));

    static const char *const rvq[2] = {"encoder.quantizer.semantic_residual_vector_quantizer",
                                       "encoder.quantizer.acoustic_residual_vector_quantizer"};
    if (e->has_in_proj) {
        NAMEF(name, "%s.input_proj.weight", rvq[0]);
        TRY(ct_bind_conv(b, name, e->cb_dim, H, 1, &e->sem_in));
        NAMEF(name, "%s.input_proj.weight", rvq[1]);
        TRY(ct_bind_conv(b, name, e->cb_dim, H, 1, &e->ac_in));
    }
    NAMEF(pre, "%s.layers.0", rvq[0]);
    TRY(bind_codebook(b, e, pre, 0));
    for (int g = 1; g < e->n_codes; g++) {
        NAMEF(pre, "%s.layers.%d", rvq[1], g - 1);
        TRY(bind_codebook(b, e, pre, g));
    }
    return CT_OK;
}

ct_status ct_speech_encoder_load(const char *model_dir, ct_speech_encoder **out, char *err, size_t errcap) {
    if (!model_dir || !out)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_speech_encoder_load: NULL argument");
    *out = NULL;
    size_t dl = strlen(model_dir);
    char *cfg = malloc(dl + 64), *wpath = malloc(dl + 64);
    ct_speech_encoder *e = calloc(1, sizeof *e);
    if (!cfg || !wpath || !e) {
        free(cfg);
        free(wpath);
        free(e);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "ct_speech_encoder_load: out of memory");
    }
    snprintf(cfg, dl + 64, "%s/speech_tokenizer/config.json", model_dir);
    snprintf(wpath, dl + 64, "%s/speech_tokenizer/model.safetensors", model_dir);
    int ratios[CT_ENC_MAX_STAGES] = {0}, n_quant = 0;
    ct_status st = parse_config(e, cfg, ratios, &n_quant, err, errcap);
    ct_binder b = {&e->al, NULL, wpath, "speech encoder", err, errcap};
    if (st == CT_OK) st = ct_st_open(wpath, &b.f, err, errcap);
    if (st == CT_OK) st = bind_all(&b, e, ratios);
    ct_st_close(b.f);
    free(cfg);
    free(wpath);
    if (st != CT_OK) {
        ct_speech_encoder_free(e);
        return st;
    }
    *out = e;
    return CT_OK;
}
