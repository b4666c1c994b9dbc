/* Codec-decoder loading: speech_tokenizer/config.json (decoder_config) + model.safetensors
 * (F32 `decoder.*` tensors), with name/shape/dtype checks, codebook normalisation,
 * SnakeBeta pre-exponentiation and repacking of every weight into conv panels. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "codec/st_bind.h"
#include "core/fileio.h"

void ct_codec_free(ct_codec *c) {
    if (!c) return;
    ct_allocs_free(&c->al);
    free(c->layers);
    free(c);
}

int ct_codec_samples_per_frame(const ct_codec *c) { return c ? c->spf : 0; }
int ct_codec_sample_rate(const ct_codec *c) { return c ? c->sample_rate : 0; }
int ct_codec_n_groups(const ct_codec *c) { return c ? c->n_q : 0; }

/* ---------------------------------------------------------------------------------------
 * Config */

static ct_status parse_config(ct_codec *c, const char *path, int *up_ratios, int *rates, char *err,
                              size_t errcap) {
    json_t *root = NULL;
    ct_status st = ct_json_load_object(path, &root, err, errcap);
    if (st != CT_OK) return st;
    json_t *d = json_object_get(root, "decoder_config");
    if (!json_is_object(d)) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: no decoder_config object", path);
        goto done;
    }
    int cb_dim = 0, n_sem = 0;
    double eps = 0, theta = 0;
#define GI(key, lo, hi, dst)                                                         \
    do {                                                                             \
        st = ct_cfg_int(d, "decoder_config", key, lo, hi, dst, path, err, errcap);                        \
        if (st != CT_OK) goto done;                                                  \
    } while (0)
    GI("codebook_size", 1, 1 << 20, &c->codebook_size);
    GI("codebook_dim", 2, 1 << 14, &cb_dim);
    GI("num_quantizers", 2, 64, &c->n_q);
    GI("num_semantic_quantizers", 1, 1, &n_sem);
    GI("latent_dim", 1, 1 << 14, &c->latent);
    GI("hidden_size", 1, 1 << 14, &c->hidden);
    GI("num_hidden_layers", 0, 64, &c->n_layers);
    GI("num_attention_heads", 1, 256, &c->n_heads);
    GI("num_key_value_heads", 1, 256, &c->n_kv);
    GI("head_dim", 2, 1024, &c->head_dim);
    GI("intermediate_size", 1, 1 << 16, &c->ffn);
    GI("sliding_window", 1, 1 << 14, &c->window);
    GI("decoder_dim", 1, 1 << 14, &c->decoder_dim);
#undef GI
    if (cb_dim % 2) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: decoder_config.codebook_dim %d is odd", path, cb_dim);
        goto done;
    }
    c->entry_dim = cb_dim / 2;
    c->vq_dim = cb_dim;
    if (c->head_dim % 2 || c->n_heads % c->n_kv) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED,
                     "%s: head_dim %d must be even and heads %d a multiple of kv heads %d", path,
                     c->head_dim, c->n_heads, c->n_kv);
        goto done;
    }
    st = ct_cfg_real(d, "decoder_config", "rms_norm_eps", 0.0, 1.0, &eps, path, err, errcap);
    if (st != CT_OK) goto done;
    st = ct_cfg_real(d, "decoder_config", "rope_theta", 1.0, 1e12, &theta, path, err, errcap);
    if (st != CT_OK) goto done;
    c->rms_eps = (float)eps;
    c->rope_theta = theta;
    json_t *act = json_object_get(d, "hidden_act");
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), "silu") != 0)) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: decoder_config.hidden_act must be \"silu\"", path);
        goto done;
    }
    st = ct_cfg_int_array(d, "decoder_config", "upsampling_ratios", CT_CODEC_MAX_UP, 1, 32, up_ratios, &c->n_up, path, err, errcap);
    if (st != CT_OK) goto done;
    st = ct_cfg_int_array(d, "decoder_config", "upsample_rates", CT_CODEC_MAX_BLOCKS, 1, 32, rates, &c->n_blocks, path, err, errcap);
    if (st != CT_OK) goto done;
    if (c->decoder_dim % (1 << c->n_blocks)) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: decoder_dim %d not divisible by 2^%d", path,
                     c->decoder_dim, c->n_blocks);
        goto done;
    }
    long spf = 1;
    for (int i = 0; i < c->n_up; i++) spf *= up_ratios[i];
    for (int i = 0; i < c->n_blocks; i++) spf *= rates[i];
    if (spf > (1L << 20)) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: %ld samples per frame is too many", path, spf);
        goto done;
    }
    c->spf = (int)spf;
    json_t *dur = json_object_get(root, "decode_upsample_rate");
    if (dur && (!json_is_integer(dur) || json_integer_value(dur) != spf)) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT,
                     "%s: decode_upsample_rate disagrees with the product of the upsampling factors (%ld)", path, spf);
        goto done;
    }
    json_t *sr = json_object_get(root, "output_sample_rate");
    c->sample_rate = 24000;
    if (sr) {
        if (!json_is_integer(sr) || json_integer_value(sr) < 1 || json_integer_value(sr) > 1000000) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: bad output_sample_rate", path);
            goto done;
        }
        c->sample_rate = (int)json_integer_value(sr);
    }
done:
    json_decref(root);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * Tensor binding */

#define NAMEF(buf, ...) snprintf(buf, sizeof buf, __VA_ARGS__)
#define TRY(x)                                                                       \
    do {                                                                             \
        ct_status st_ = (x);                                                         \
        if (st_ != CT_OK) return st_;                                                \
    } while (0)

static ct_status wsnake(ct_binder *L, const char *prefix, int n, ct_codec_snake *s) {
    char name[160];
    NAMEF(name, "%s.alpha", prefix);
    TRY(ct_bind_vec(L, name, n, &s->ea));
    NAMEF(name, "%s.beta", prefix);
    TRY(ct_bind_vec(L, name, n, &s->ib));
    for (int i = 0; i < n; i++) {
        s->ea[i] = expf(s->ea[i]);
        s->ib[i] = 1.0f / (expf(s->ib[i]) + 1e-9f);
    }
    return CT_OK;
}

static ct_status wcodebook(ct_binder *L, ct_codec *c, const char *prefix, int g) {
    char name[160];
    const float *es, *cu;
    int64_t sh2[2] = {c->codebook_size, c->entry_dim}, sh1[1] = {c->codebook_size};
    NAMEF(name, "%s._codebook.cluster_usage", prefix);
    TRY(ct_bind_get(L, name, 1, sh1, &cu));
    NAMEF(name, "%s._codebook.embedding_sum", prefix);
    TRY(ct_bind_get(L, name, 2, sh2, &es));
    float *dst = c->codebooks + (size_t)g * (size_t)c->codebook_size * (size_t)c->entry_dim;
    for (int r = 0; r < c->codebook_size; r++) {
        float u = cu[r] > 1e-5f ? cu[r] : 1e-5f;
        for (int i = 0; i < c->entry_dim; i++) {
            size_t j = (size_t)r * (size_t)c->entry_dim + (size_t)i;
            dst[j] = es[j] / u;
        }
    }
    return CT_OK;
}

/* Marks the weights whose GEMM calls read at least CT_CODEC_AMX_ROWS input rows per frame for the
   AMX GEMM where it runs (kernels/conv.h ct_cv_packed.amx): the decoder blocks' residual units
   and the later blocks' transposed convs, and the final conv; the pre-transformer, the
   transformer, the upsampling stages, decoder.0 and the first block's transposed conv (1-4 rows
   per frame in the published 12 Hz decoder) keep the FMA GEMM. */
static void mark_amx(ct_codec *c) {
    int rpf = 1; /* input rows per frame of the stage */
    for (int u = 0; u < c->n_up; u++) {
        c->up[u].tconv.amx = rpf >= CT_CODEC_AMX_ROWS;
        rpf *= c->up[u].ratio;
        c->up[u].pw1.amx = c->up[u].pw2.amx = rpf >= CT_CODEC_AMX_ROWS;
    }
    c->dec0.amx = rpf >= CT_CODEC_AMX_ROWS;
    for (int b = 0; b < c->n_blocks; b++) {
        ct_codec_block *bl = &c->blocks[b];
        bl->tconv.amx = rpf >= CT_CODEC_AMX_ROWS;
        rpf *= bl->rate;
        for (int j = 0; j < CT_CODEC_N_RU; j++) bl->ru[j].c1.amx = bl->ru[j].c2.amx = rpf >= CT_CODEC_AMX_ROWS;
    }
    c->fin.amx = rpf >= CT_CODEC_AMX_ROWS;
}

static ct_status bind_all(ct_binder *L, ct_codec *c, const int *up_ratios, const int *rates) {
    char name[160], pre[128];
    const int D = c->entry_dim, O = c->vq_dim, Lt = c->latent, H = c->hidden;
    const int qd = c->n_heads * c->head_dim, kvd = c->n_kv * c->head_dim;

    c->codebooks = ct_allocs_floats(&c->al, (size_t)c->n_q * (size_t)c->codebook_size * (size_t)D);
    if (!c->codebooks) return ct_bind_nomem(L, "codebooks");
    TRY(wcodebook(L, c, "decoder.quantizer.rvq_first.vq.layers.0", 0));
    for (int g = 1; g < c->n_q; g++) {
        NAMEF(pre, "decoder.quantizer.rvq_rest.vq.layers.%d", g - 1);
        TRY(wcodebook(L, c, pre, g));
    }
    TRY(ct_bind_conv(L, "decoder.quantizer.rvq_first.output_proj.weight", O, D, 1, &c->proj_first));
    TRY(ct_bind_conv(L, "decoder.quantizer.rvq_rest.output_proj.weight", O, D, 1, &c->proj_rest));
    TRY(ct_bind_conv(L, "decoder.pre_conv.conv.weight", Lt, O, CT_CODEC_PRE_K, &c->pre_conv));
    TRY(ct_bind_vec(L, "decoder.pre_conv.conv.bias", Lt, &c->pre_conv_b));

    TRY(ct_bind_linear(L, "decoder.pre_transformer.input_proj.weight", H, Lt, &c->in_proj));
    TRY(ct_bind_vec(L, "decoder.pre_transformer.input_proj.bias", H, &c->in_proj_b));
    c->layers = calloc((size_t)(c->n_layers ? c->n_layers : 1), sizeof *c->layers);
    if (!c->layers) return ct_bind_nomem(L, "layers");
    for (int l = 0; l < c->n_layers; l++) {
        ct_codec_layer *ly = &c->layers[l];
        NAMEF(pre, "decoder.pre_transformer.layers.%d", l);
        NAMEF(name, "%s.input_layernorm.weight", pre);
        TRY(ct_bind_vec(L, name, H, &ly->ln1));
        NAMEF(name, "%s.post_attention_layernorm.weight", pre);
        TRY(ct_bind_vec(L, name, H, &ly->ln2));
        NAMEF(name, "%s.self_attn.q_proj.weight", pre);
        TRY(ct_bind_linear(L, name, qd, H, &ly->q));
        NAMEF(name, "%s.self_attn.k_proj.weight", pre);
        TRY(ct_bind_linear(L, name, kvd, H, &ly->k));
        NAMEF(name, "%s.self_attn.v_proj.weight", pre);
        TRY(ct_bind_linear(L, name, kvd, H, &ly->v));
        NAMEF(name, "%s.self_attn.o_proj.weight", pre);
        TRY(ct_bind_linear(L, name, H, qd, &ly->o));
        NAMEF(name, "%s.mlp.gate_proj.weight", pre);
        TRY(ct_bind_linear(L, name, c->ffn, H, &ly->gate));
        NAMEF(name, "%s.mlp.up_proj.weight", pre);
        TRY(ct_bind_linear(L, name, c->ffn, H, &ly->up));
        NAMEF(name, "%s.mlp.down_proj.weight", pre);
        TRY(ct_bind_linear(L, name, H, c->ffn, &ly->down));
        NAMEF(name, "%s.self_attn_layer_scale.scale", pre);
        TRY(ct_bind_vec(L, name, H, &ly->ls_attn));
        NAMEF(name, "%s.mlp_layer_scale.scale", pre);
        TRY(ct_bind_vec(L, name, H, &ly->ls_mlp));
    }
    TRY(ct_bind_vec(L, "decoder.pre_transformer.norm.weight", H, &c->norm));
    TRY(ct_bind_linear(L, "decoder.pre_transformer.output_proj.weight", Lt, H, &c->out_proj));
    TRY(ct_bind_vec(L, "decoder.pre_transformer.output_proj.bias", Lt, &c->out_proj_b));

    for (int u = 0; u < c->n_up; u++) {
        ct_codec_up *up = &c->up[u];
        up->ratio = up_ratios[u];
        NAMEF(name, "decoder.upsample.%d.0.conv.weight", u);
        TRY(ct_bind_tconv(L, name, Lt, Lt, up->ratio, &up->tconv));
        NAMEF(name, "decoder.upsample.%d.0.conv.bias", u);
        TRY(ct_bind_vec(L, name, Lt, &up->tconv_b));
        NAMEF(name, "decoder.upsample.%d.1.dwconv.conv.weight", u);
        {
            int64_t sh[3] = {Lt, 1, CT_CODEC_CONV_K};
            const float *src;
            TRY(ct_bind_get(L, name, 3, sh, &src));
            up->dw = ct_allocs_floats(&c->al, (size_t)CT_CODEC_CONV_K * (size_t)Lt);
            if (!up->dw) return ct_bind_nomem(L, name);
            for (int ch = 0; ch < Lt; ch++)
                for (int j = 0; j < CT_CODEC_CONV_K; j++)
                    up->dw[(size_t)j * (size_t)Lt + (size_t)ch] = src[(size_t)ch * CT_CODEC_CONV_K + (size_t)j];
        }
        NAMEF(name, "decoder.upsample.%d.1.dwconv.conv.bias", u);
        TRY(ct_bind_vec(L, name, Lt, &up->dw_b));
        NAMEF(name, "decoder.upsample.%d.1.norm.weight", u);
        TRY(ct_bind_vec(L, name, Lt, &up->ln_w));
        NAMEF(name, "decoder.upsample.%d.1.norm.bias", u);
        TRY(ct_bind_vec(L, name, Lt, &up->ln_b));
        NAMEF(name, "decoder.upsample.%d.1.pwconv1.weight", u);
        TRY(ct_bind_linear(L, name, 4 * Lt, Lt, &up->pw1));
        NAMEF(name, "decoder.upsample.%d.1.pwconv1.bias", u);
        TRY(ct_bind_vec(L, name, 4 * Lt, &up->pw1_b));
        NAMEF(name, "decoder.upsample.%d.1.pwconv2.weight", u);
        TRY(ct_bind_linear(L, name, Lt, 4 * Lt, &up->pw2));
        NAMEF(name, "decoder.upsample.%d.1.pwconv2.bias", u);
        TRY(ct_bind_vec(L, name, Lt, &up->pw2_b));
        NAMEF(name, "decoder.upsample.%d.1.gamma", u);
        TRY(ct_bind_vec(L, name, Lt, &up->gamma));
    }

    TRY(ct_bind_conv(L, "decoder.decoder.0.conv.weight", c->decoder_dim, Lt, CT_CODEC_CONV_K, &c->dec0));
    TRY(ct_bind_vec(L, "decoder.decoder.0.conv.bias", c->decoder_dim, &c->dec0_b));
    static const int dils[CT_CODEC_N_RU] = {1, 3, 9};
    int cin = c->decoder_dim;
    for (int b = 0; b < c->n_blocks; b++) {
        ct_codec_block *bl = &c->blocks[b];
        bl->cin = cin;
        bl->cout = cin / 2;
        bl->rate = rates[b];
        NAMEF(pre, "decoder.decoder.%d.block.0", b + 1);
        TRY(wsnake(L, pre, cin, &bl->snake));
        NAMEF(name, "decoder.decoder.%d.block.1.conv.weight", b + 1);
        TRY(ct_bind_tconv(L, name, cin, bl->cout, 2 * bl->rate, &bl->tconv));
        NAMEF(name, "decoder.decoder.%d.block.1.conv.bias", b + 1);
        TRY(ct_bind_vec(L, name, bl->cout, &bl->tconv_b));
        for (int j = 0; j < CT_CODEC_N_RU; j++) {
            ct_codec_ru *ru = &bl->ru[j];
            ru->dil = dils[j];
            NAMEF(pre, "decoder.decoder.%d.block.%d.act1", b + 1, j + 2);
            TRY(wsnake(L, pre, bl->cout, &ru->a1));
            NAMEF(pre, "decoder.decoder.%d.block.%d.act2", b + 1, j + 2);
            TRY(wsnake(L, pre, bl->cout, &ru->a2));
            NAMEF(name, "decoder.decoder.%d.block.%d.conv1.conv.weight", b + 1, j + 2);
            TRY(ct_bind_conv(L, name, bl->cout, bl->cout, CT_CODEC_CONV_K, &ru->c1));
            NAMEF(name, "decoder.decoder.%d.block.%d.conv1.conv.bias", b + 1, j + 2);
            TRY(ct_bind_vec(L, name, bl->cout, &ru->c1_b));
            NAMEF(name, "decoder.decoder.%d.block.%d.conv2.conv.weight", b + 1, j + 2);
            TRY(ct_bind_conv(L, name, bl->cout, bl->cout, 1, &ru->c2));
            NAMEF(name, "decoder.decoder.%d.block.%d.conv2.conv.bias", b + 1, j + 2);
            TRY(ct_bind_vec(L, name, bl->cout, &ru->c2_b));
        }
        cin = bl->cout;
    }
    NAMEF(pre, "decoder.decoder.%d", c->n_blocks + 1);
    TRY(wsnake(L, pre, cin, &c->fin_snake));
    NAMEF(name, "decoder.decoder.%d.conv.weight", c->n_blocks + 2);
    TRY(ct_bind_conv(L, name, 1, cin, CT_CODEC_CONV_K, &c->fin));
    NAMEF(name, "decoder.decoder.%d.conv.bias", c->n_blocks + 2);
    TRY(ct_bind_vec(L, name, 1, &c->fin_b));
    mark_amx(c);
    return CT_OK;
}

ct_status ct_codec_load(const char *model_dir, ct_codec **out, char *err, size_t errcap) {
    if (!model_dir || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_codec_load: NULL argument");
    *out = NULL;
    size_t dl = strlen(model_dir);
    char *cfg = malloc(dl + 64), *wpath = malloc(dl + 64);
    ct_codec *c = calloc(1, sizeof *c);
    if (!cfg || !wpath || !c) {
        free(cfg);
        free(wpath);
        free(c);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "ct_codec_load: out of memory");
    }
    snprintf(cfg, dl + 64, "%s/speech_tokenizer/config.json", model_dir);
    snprintf(wpath, dl + 64, "%s/speech_tokenizer/model.safetensors", model_dir);
    int up_ratios[CT_CODEC_MAX_UP] = {0}, rates[CT_CODEC_MAX_BLOCKS] = {0};
    ct_status st = parse_config(c, cfg, up_ratios, rates, err, errcap);
    ct_binder L = {&c->al, NULL, wpath, "codec", err, errcap};
    if (st == CT_OK) st = ct_st_open(wpath, &L.f, err, errcap);
    if (st == CT_OK) st = bind_all(&L, c, up_ratios, rates);
    ct_st_close(L.f);
    free(cfg);
    free(wpath);
    if (st != CT_OK) {
        ct_codec_free(c);
        return st;
    }
    *out = c;
    return CT_OK;
}

/* Multiply-adds per frame of every conv / linear (attention scores excluded). */
double ct_codec_macs_per_frame(const ct_codec *c) {
    double m = 0, T = 1;
    m += 2.0 * c->entry_dim * c->vq_dim;                        /* two output_proj */
    m += (double)CT_CODEC_PRE_K * c->vq_dim * c->latent;         /* pre_conv */
    m += 2.0 * c->latent * c->hidden;                            /* input/output proj */
    double qd = (double)c->n_heads * c->head_dim, kvd = (double)c->n_kv * c->head_dim;
    m += c->n_layers * (c->hidden * (qd + 2 * kvd) + qd * c->hidden + 3.0 * c->hidden * c->ffn);
    for (int u = 0; u < c->n_up; u++) {
        m += T * c->up[u].ratio * (double)c->latent * c->latent; /* tconv k = s: one tap per output */
        T *= c->up[u].ratio;
        m += T * (8.0 * c->latent * c->latent + 7.0 * c->latent);
    }
    m += T * CT_CODEC_CONV_K * (double)c->latent * c->decoder_dim;
    for (int b = 0; b < c->n_blocks; b++) {
        const ct_codec_block *bl = &c->blocks[b];
        m += T * 2.0 * bl->rate * (double)bl->cin * bl->cout; /* k = 2s: two taps per output row */
        T *= bl->rate;
        m += CT_CODEC_N_RU * T * 8.0 * bl->cout * bl->cout;
    }
    m += T * CT_CODEC_CONV_K * (double)(c->decoder_dim >> c->n_blocks);
    return m;
}
