/* Tests for the random-weight model generator and the streaming safetensors writer:
 * inventories and parameter totals against MODEL.md 1.8-1.10 / 7 for every preset, and a
 * full write of the tiny preset checked file by file. */
#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ct_test.h"
#include "io/safetensors.h"
#include "io/st_write.h"
#include "model/make_model.h"

#ifndef CT_SRC_DIR
#define CT_SRC_DIR "."
#endif
#define TOK_DIR CT_SRC_DIR "/assets/qwen3-tokenizer"

/* ---------------------------------------------------------------------------------------
 * Small helpers */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = 0;
        *len = (size_t)n;
    }
    return b;
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int files_equal(const char *a, const char *b) {
    size_t la = 0, lb = 0;
    char *x = read_all(a, &la), *y = read_all(b, &lb);
    int eq = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return eq;
}

static void pjoin(char *dst, size_t cap, const char *a, const char *b) {
    int n = snprintf(dst, cap, "%s/%s", a, b);
    if (n < 0 || (size_t)n >= cap) {
        fprintf(stderr, "test path too long: %s/%s\n", a, b);
        exit(2);
    }
}

static const char *const top_files[] = {"config.json",          "generation_config.json", "model.safetensors",
                                        "vocab.json",           "merges.txt",             "tokenizer_config.json",
                                        "preprocessor_config.json", NULL};
static const char *const st_files[] = {"config.json", "preprocessor_config.json", "model.safetensors", NULL};

/* Number of directory entries (excluding . and ..), -1 if unreadable. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void remove_model_dir(const char *dir) {
    char p[1024], sd[1024];
    pjoin(sd, sizeof sd, dir, "speech_tokenizer");
    for (int i = 0; st_files[i]; i++) {
        pjoin(p, sizeof p, sd, st_files[i]);
        remove(p);
    }
    rmdir(sd);
    for (int i = 0; top_files[i]; i++) {
        pjoin(p, sizeof p, dir, top_files[i]);
        remove(p);
    }
    rmdir(dir);
}

static uint64_t sum_params(const ct_mm_tensor *t, size_t n, const char *prefix) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        if (!prefix || strncmp(t[i].name, prefix, strlen(prefix)) == 0) s += ct_mm_numel(&t[i]);
    return s;
}

static size_t count_prefix(const ct_mm_tensor *t, size_t n, const char *prefix) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(t[i].name, prefix, strlen(prefix)) == 0) c++;
    return c;
}

static const ct_mm_tensor *find_t(const ct_mm_tensor *t, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0) return &t[i];
    return NULL;
}

static int shape_is(const ct_mm_tensor *t, int ndim, int64_t a, int64_t b, int64_t c) {
    if (!t || t->ndim != ndim) return 0;
    int64_t s[3] = {a, b, c};
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != s[i]) return 0;
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int names_unique(const ct_mm_tensor *t, size_t n) {
    char **v = malloc(n * sizeof(char *));
    if (!v) return 0;
    for (size_t i = 0; i < n; i++) v[i] = (char *)t[i].name;
    qsort(v, n, sizeof(char *), cmp_str);
    int ok = 1;
    for (size_t i = 1; i < n; i++)
        if (strcmp(v[i - 1], v[i]) == 0) ok = 0;
    free(v);
    return ok;
}

/* ---------------------------------------------------------------------------------------
 * Inventories and parameter totals (no files written) */

static void test_inventories(void) {
    static const struct {
        const char *preset;
        size_t n_main;
        uint64_t params;
        int hidden;
        int has_proj;
        uint64_t spk_params;
    } exp[] = {
        {"0.6b-customvoice", 402, 905788672ULL, 1024, 0, 0},
        {"0.6b-base", 478, 914643008ULL, 1024, 0, 8854336ULL},
        {"1.7b-customvoice", 404, 1916676352ULL, 2048, 1, 0},
        {"1.7b-base", 480, 1928677440ULL, 2048, 1, 12001088ULL},
        {"1.7b-voicedesign", 404, 1916676352ULL, 2048, 1, 0},
    };
    char err[256];
    for (size_t k = 0; k < sizeof exp / sizeof exp[0]; k++) {
        const ct_mm_preset *p = ct_mm_find_preset(exp[k].preset);
        CHECKF(p != NULL, "%s", exp[k].preset);
        if (!p) continue;
        ct_mm_tensor *t = NULL, *c = NULL;
        size_t n = 0, nc = 0;
        CHECK(ct_mm_tensors(p, CT_MM_FILE_MAIN, &t, &n, err, sizeof err) == CT_OK);
        CHECK(ct_mm_tensors(p, CT_MM_FILE_CODEC, &c, &nc, err, sizeof err) == CT_OK);
        if (!t || !c) {
            free(t);
            free(c);
            continue;
        }
        uint64_t params = sum_params(t, n, NULL);
        CHECKF(n == exp[k].n_main, "%s: %zu tensors, want %zu", exp[k].preset, n, exp[k].n_main);
        CHECKF(params == exp[k].params, "%s: %llu params, want %llu", exp[k].preset, (unsigned long long)params,
               (unsigned long long)exp[k].params);
        CHECK(names_unique(t, n));
        size_t n_spk = count_prefix(t, n, "speaker_encoder.");
        CHECKF(n_spk == (exp[k].spk_params ? 76u : 0u), "%s: %zu speaker tensors", exp[k].preset, n_spk);
        CHECK(sum_params(t, n, "speaker_encoder.") == exp[k].spk_params);
        /* Section 7 component split. */
        CHECK(sum_params(t, n, "talker.model.text_embedding.") == 311164928ULL);
        CHECK(sum_params(t, n, "talker.code_predictor.") == (exp[k].hidden == 1024 ? 141570304ULL : 175125760ULL));
        CHECK(sum_params(t, n, "talker.model.layers.") + sum_params(t, n, "talker.model.norm.") ==
              (exp[k].hidden == 1024 ? 440467456ULL : 1409410048ULL));
        for (size_t i = 0; i < n; i++) CHECK(t[i].dtype == CT_STW_BF16);
        /* Spot shapes. */
        const int H = exp[k].hidden;
        CHECK(shape_is(find_t(t, n, "talker.model.text_embedding.weight"), 2, 151936, 2048, 0));
        CHECK(shape_is(find_t(t, n, "talker.text_projection.linear_fc2.weight"), 2, H, 2048, 0));
        CHECK(shape_is(find_t(t, n, "talker.model.codec_embedding.weight"), 2, 3072, H, 0));
        CHECK(shape_is(find_t(t, n, "talker.model.layers.27.self_attn.q_proj.weight"), 2, 2048, H, 0));
        CHECK(shape_is(find_t(t, n, "talker.model.layers.27.self_attn.k_proj.weight"), 2, 1024, H, 0));
        CHECK(shape_is(find_t(t, n, "talker.model.layers.0.self_attn.o_proj.weight"), 2, H, 2048, 0));
        CHECK(shape_is(find_t(t, n, "talker.model.layers.0.self_attn.q_norm.weight"), 1, 128, 0, 0));
        CHECK(shape_is(find_t(t, n, "talker.model.layers.0.mlp.down_proj.weight"), 2, H, H * 3, 0));
        CHECK(shape_is(find_t(t, n, "talker.codec_head.weight"), 2, 3072, H, 0));
        CHECK(shape_is(find_t(t, n, "talker.code_predictor.model.codec_embedding.14.weight"), 2, 2048, H, 0));
        CHECK(find_t(t, n, "talker.code_predictor.model.codec_embedding.15.weight") == NULL);
        CHECK(shape_is(find_t(t, n, "talker.code_predictor.model.layers.4.mlp.gate_proj.weight"), 2, 3072, 1024, 0));
        CHECK(shape_is(find_t(t, n, "talker.code_predictor.lm_head.14.weight"), 2, 2048, 1024, 0));
        CHECK((find_t(t, n, "talker.code_predictor.small_to_mtp_projection.weight") != NULL) == exp[k].has_proj);
        if (exp[k].has_proj) {
            CHECK(shape_is(find_t(t, n, "talker.code_predictor.small_to_mtp_projection.weight"), 2, 1024, 2048, 0));
            CHECK(shape_is(find_t(t, n, "talker.code_predictor.small_to_mtp_projection.bias"), 1, 1024, 0, 0));
        }
        if (exp[k].spk_params) {
            CHECK(shape_is(find_t(t, n, "speaker_encoder.fc.weight"), 3, H, 3072, 1));
            CHECK(shape_is(find_t(t, n, "speaker_encoder.blocks.3.res2net_block.blocks.6.conv.weight"), 3, 64, 64, 3));
            CHECK(shape_is(find_t(t, n, "speaker_encoder.asp.tdnn.conv.weight"), 3, 128, 4608, 1));
        }

        /* Codec decoder (MODEL.md 1.10) and encoder (1.11: 225 tensors, 56234304 values, the
           count of the official encoder's state dict with the published MimiConfig). */
        CHECKF(nc == 271 + 225, "%s codec: %zu tensors", exp[k].preset, nc);
        CHECKF(sum_params(c, nc, "decoder.") == 114323137ULL, "%s codec: %llu params", exp[k].preset,
               (unsigned long long)sum_params(c, nc, "decoder."));
        CHECKF(sum_params(c, nc, "encoder.") == 56234304ULL, "%s encoder: %llu params", exp[k].preset,
               (unsigned long long)sum_params(c, nc, "encoder."));
        CHECK(names_unique(c, nc));
        CHECK(count_prefix(c, nc, "decoder.") == 271 && count_prefix(c, nc, "encoder.") == 225);
        CHECK(shape_is(find_t(c, nc, "encoder.encoder.layers.0.conv.weight"), 3, 64, 1, 7));
        CHECK(shape_is(find_t(c, nc, "encoder.encoder.layers.10.block.1.conv.weight"), 3, 256, 512, 3));
        CHECK(shape_is(find_t(c, nc, "encoder.encoder.layers.12.conv.weight"), 3, 1024, 512, 16));
        CHECK(shape_is(find_t(c, nc, "encoder.encoder.layers.14.conv.weight"), 3, 512, 1024, 3));
        CHECK(shape_is(find_t(c, nc, "encoder.encoder_transformer.layers.7.mlp.fc1.weight"), 2, 2048, 512, 0));
        CHECK(shape_is(find_t(c, nc, "encoder.encoder_transformer.layers.7.input_layernorm.bias"), 1, 512, 0, 0));
        CHECK(shape_is(find_t(c, nc, "encoder.downsample.conv.weight"), 3, 512, 512, 4));
        CHECK(shape_is(find_t(c, nc, "encoder.quantizer.acoustic_residual_vector_quantizer.layers.30.codebook.embed_sum"),
                       2, 2048, 256, 0));
        CHECK(shape_is(find_t(c, nc, "encoder.quantizer.semantic_residual_vector_quantizer.input_proj.weight"), 3, 256,
                       512, 1));
        for (size_t i = 0; i < nc; i++) CHECK(c[i].dtype == CT_STW_F32);
        CHECK(shape_is(find_t(c, nc, "decoder.quantizer.rvq_first.vq.layers.0._codebook.embedding_sum"), 2, 2048, 256, 0));
        CHECK(shape_is(find_t(c, nc, "decoder.quantizer.rvq_rest.vq.layers.14._codebook.cluster_usage"), 1, 2048, 0, 0));
        CHECK(shape_is(find_t(c, nc, "decoder.quantizer.rvq_rest.output_proj.weight"), 3, 512, 256, 1));
        CHECK(shape_is(find_t(c, nc, "decoder.quantizer.rvq_first.input_proj.weight"), 3, 256, 512, 1));
        CHECK(shape_is(find_t(c, nc, "decoder.pre_conv.conv.weight"), 3, 1024, 512, 3));
        CHECK(shape_is(find_t(c, nc, "decoder.pre_transformer.layers.7.self_attn.q_proj.weight"), 2, 1024, 512, 0));
        CHECK(shape_is(find_t(c, nc, "decoder.pre_transformer.layers.7.mlp_layer_scale.scale"), 1, 512, 0, 0));
        CHECK(shape_is(find_t(c, nc, "decoder.upsample.1.0.conv.weight"), 3, 1024, 1024, 2));
        CHECK(shape_is(find_t(c, nc, "decoder.upsample.0.1.dwconv.conv.weight"), 3, 1024, 1, 7));
        CHECK(shape_is(find_t(c, nc, "decoder.upsample.0.1.pwconv1.weight"), 2, 4096, 1024, 0));
        CHECK(shape_is(find_t(c, nc, "decoder.decoder.0.conv.weight"), 3, 1536, 1024, 7));
        CHECK(shape_is(find_t(c, nc, "decoder.decoder.1.block.1.conv.weight"), 3, 1536, 768, 16));
        CHECK(shape_is(find_t(c, nc, "decoder.decoder.4.block.1.conv.weight"), 3, 192, 96, 6));
        CHECK(shape_is(find_t(c, nc, "decoder.decoder.2.block.4.conv1.conv.weight"), 3, 384, 384, 7));
        CHECK(shape_is(find_t(c, nc, "decoder.decoder.3.block.0.alpha"), 1, 384, 0, 0));
        CHECK(shape_is(find_t(c, nc, "decoder.decoder.5.beta"), 1, 96, 0, 0));
        CHECK(shape_is(find_t(c, nc, "decoder.decoder.6.conv.weight"), 3, 1, 96, 7));
        free(t);
        free(c);
    }
}

static void test_tiny_inventory(void) {
    char err[256];
    const ct_mm_preset *p = ct_mm_find_preset("tiny");
    CHECK(p != NULL);
    if (!p) return;
    CHECK(p->text_vocab == 151936 && p->codec_vocab == 3072 && p->cp_vocab == 2048 && p->code_groups == 16);
    CHECK(p->mrope[0] + p->mrope[1] + p->mrope[2] == p->head_dim / 2);
    int up = p->c_upsampling_ratios[0] * p->c_upsampling_ratios[1];
    for (int i = 0; i < 4; i++) up *= p->c_upsample_rates[i];
    CHECK(up == 1920);
    ct_mm_tensor *t = NULL, *c = NULL;
    size_t n = 0, nc = 0;
    CHECK(ct_mm_tensors(p, CT_MM_FILE_MAIN, &t, &n, err, sizeof err) == CT_OK);
    CHECK(ct_mm_tensors(p, CT_MM_FILE_CODEC, &c, &nc, err, sizeof err) == CT_OK);
    /* 6 fixed + 11 per talker layer + final norm + head; 15 emb + 11 per layer + norm + 15 heads. */
    CHECK(n == (size_t)(6 + 11 * p->layers + 2 + 15 + 11 * p->cp_layers + 1 + 15));
    /* decoder: 36 quantizer + 2 + (5 + 11 L) + 22 + 2 + 112 + 4; encoder: 28 SEANet + 12 L + 1
       downsample + 2 x 2 projections + 3 per codebook (1 semantic + nq - 1 acoustic) */
    CHECK(nc == (size_t)(36 + 2 + 5 + 11 * p->c_layers + 22 + 2 + 112 + 4) +
                    (size_t)(28 + 12 * p->e_layers + 1 + 4 + 3 * p->e_nq));
    uint64_t bytes = sum_params(t, n, NULL) * 2 + sum_params(c, nc, NULL) * 4;
    CHECKF(bytes < 55ull * 1000 * 1000, "tiny weights are %llu bytes", (unsigned long long)bytes);
    free(t);
    free(c);

    const ct_mm_preset *tb = ct_mm_find_preset("tiny-base");
    CHECK(tb && tb->spk_enc_dim == tb->hidden);
    CHECK(ct_mm_find_preset("nope") == NULL);
    int count = 0;
    for (const char *const *nm = ct_make_model_presets(); *nm; nm++, count++) CHECKF(ct_mm_find_preset(*nm) != NULL, "%s", *nm);
    CHECK(count >= 6);
}

/* ---------------------------------------------------------------------------------------
 * Generator and bf16 rounding */

static uint16_t bf16_ref(float f) {
    /* Nearest of the two truncation neighbours, ties to even mantissa: independent of the
     * bit trick in the library. */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    float flo, fhi;
    memcpy(&flo, &lo, 4);
    memcpy(&fhi, &hi, 4);
    double dl = (double)f - (double)flo, dh = (double)fhi - (double)f;
    if (dl < 0) dl = -dl;
    if (dh < 0) dh = -dh;
    if (dl < dh) return (uint16_t)(lo >> 16);
    if (dh < dl) return (uint16_t)(hi >> 16);
    return (uint16_t)(((lo >> 16) & 1) ? hi >> 16 : lo >> 16);
}

static void test_bf16_and_generator(void) {
    CHECK(ct_mm_f32_to_bf16(1.0f) == 0x3f80);
    float f;
    uint32_t u = 0x3f808000u; /* exact tie, even below */
    memcpy(&f, &u, 4);
    CHECK(ct_mm_f32_to_bf16(f) == 0x3f80);
    u = 0x3f818000u; /* exact tie, odd below -> round up */
    memcpy(&f, &u, 4);
    CHECK(ct_mm_f32_to_bf16(f) == 0x3f82);
    u = 0x7fc00001u;
    memcpy(&f, &u, 4);
    CHECK((ct_mm_f32_to_bf16(f) & 0x7fc0) == 0x7fc0);
    u = 0x7f800000u;
    memcpy(&f, &u, 4);
    CHECK(ct_mm_f32_to_bf16(f) == 0x7f80);
    int bad = 0;
    uint32_t x = 12345;
    for (int i = 0; i < 200000; i++) {
        x = x * 1664525u + 1013904223u;
        uint32_t b = x & 0x7f7fffffu; /* finite, below max */
        if ((b & 0x7f800000u) == 0x7f000000u) b &= 0xfeffffffu;
        memcpy(&f, &b, 4);
        if (i & 1) f = -f;
        if (ct_mm_f32_to_bf16(f) != bf16_ref(f)) bad++;
    }
    CHECKF(bad == 0, "%d bf16 mismatches", bad);

    /* Chunking independence, seed sensitivity, range. */
    ct_mm_tensor t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "x");
    t.ndim = 1;
    t.shape[0] = 1000;
    t.center = 0.5f;
    t.half = 0.25f;
    t.key = 99;
    float a[1000], b[1000], c[1000];
    ct_mm_generate(&t, 7, 0, 1000, a);
    ct_mm_generate(&t, 7, 0, 333, b);
    ct_mm_generate(&t, 7, 333, 667, b + 333);
    ct_mm_generate(&t, 8, 0, 1000, c);
    CHECK(memcmp(a, b, sizeof a) == 0);
    int same = 0;
    double mean = 0;
    float mn = 1e9f, mx = -1e9f;
    for (int i = 0; i < 1000; i++) {
        same += a[i] == c[i];
        mean += a[i];
        if (a[i] < mn) mn = a[i];
        if (a[i] > mx) mx = a[i];
    }
    mean /= 1000;
    CHECK(same < 5);
    CHECK(mn >= 0.25f && mx <= 0.75f && mx - mn > 0.45f);
    CHECKF(mean > 0.48 && mean < 0.52, "mean %f", mean);
}

/* ---------------------------------------------------------------------------------------
 * Safetensors writer */

static json_t *load_st_header(const char *path, uint64_t *hlen, long long *fsize) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char le[8];
    json_t *j = NULL;
    if (fread(le, 1, 8, f) == 8) {
        uint64_t n = 0;
        for (int i = 0; i < 8; i++) n |= (uint64_t)le[i] << (8 * i);
        *hlen = n;
        char *h = n < (1u << 26) ? malloc((size_t)n) : NULL;
        if (h && fread(h, 1, (size_t)n, f) == n) {
            json_error_t e;
            j = json_loadb(h, (size_t)n, 0, &e);
        }
        free(h);
    }
    fclose(f);
    *fsize = file_size(path);
    return j;
}

static size_t dtype_bytes(const char *s) {
    if (!strcmp(s, "BF16") || !strcmp(s, "F16")) return 2;
    if (!strcmp(s, "F32") || !strcmp(s, "I32")) return 4;
    return 0;
}

/* Validates the header layout: metadata, dtype x shape = byte size, offsets contiguous in
 * key (= name) order, file size = 8 + header + data. Returns number of tensors or -1. */
static int check_st_layout(const char *path) {
    uint64_t hlen = 0;
    long long fsize = -1;
    json_t *j = load_st_header(path, &hlen, &fsize);
    CHECKF(j != NULL, "header of %s parses", path);
    if (!j) return -1;
    CHECK(hlen % 8 == 0);
    json_t *meta = json_object_get(j, "__metadata__");
    CHECK(json_is_object(meta) && json_is_string(json_object_get(meta, "format")) &&
          !strcmp(json_string_value(json_object_get(meta, "format")), "pt"));
    const char *key, *prev = NULL;
    json_t *v;
    uint64_t expect_off = 0;
    int n = 0, bad = 0;
    json_object_foreach(j, key, v) {
        if (!strcmp(key, "__metadata__")) continue;
        if (prev && strcmp(prev, key) >= 0) bad++;
        prev = key;
        const char *dt = json_string_value(json_object_get(v, "dtype"));
        json_t *shape = json_object_get(v, "shape"), *off = json_object_get(v, "data_offsets");
        size_t esz = dt ? dtype_bytes(dt) : 0;
        if (!esz || !json_is_array(shape) || json_array_size(off) != 2) {
            bad++;
            continue;
        }
        uint64_t elems = 1;
        for (size_t i = 0; i < json_array_size(shape); i++) elems *= (uint64_t)json_integer_value(json_array_get(shape, i));
        uint64_t b = (uint64_t)json_integer_value(json_array_get(off, 0));
        uint64_t e = (uint64_t)json_integer_value(json_array_get(off, 1));
        if (b != expect_off || e - b != elems * esz) bad++;
        expect_off = e;
        n++;
    }
    CHECKF(bad == 0, "%s: %d layout errors", path, bad);
    CHECKF((long long)(8 + hlen + expect_off) == fsize, "%s: size %lld vs %llu", path, fsize,
           (unsigned long long)(8 + hlen + expect_off));
    json_decref(j);
    return n;
}

static void test_writer(const char *tmp) {
    char path[512], part[560], err[256];
    pjoin(path, sizeof path, tmp, "w.safetensors");
    snprintf(part, sizeof part, "%s.partial", path);
    ct_stw *w = NULL;
    CHECK(ct_stw_create(&w, err, sizeof err) == CT_OK);
    int64_t s23[2] = {2, 3}, s0[1] = {0}, s5[1] = {5};
    CHECK(ct_stw_declare(w, "zeta", CT_STW_F32, 2, s23, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "alpha \"q\"\\", CT_STW_I32, 0, NULL, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "empty", CT_STW_F16, 1, s0, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "mid", CT_STW_BF16, 1, s5, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "", CT_STW_BF16, 1, s5, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(ct_stw_declare(w, "__metadata__", CT_STW_BF16, 1, s5, err, sizeof err) == CT_ERR_INVALID_ARG);
    int64_t neg[1] = {-1};
    CHECK(ct_stw_declare(w, "neg", CT_STW_BF16, 1, neg, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(ct_stw_declare(w, "dt", (ct_stw_dtype)42, 1, s5, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(ct_stw_count(w) == 4);
    CHECK(ct_stw_data_len(w) == 24 + 4 + 0 + 10);
    CHECK(ct_stw_begin(w, path, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "late", CT_STW_F32, 1, s5, err, sizeof err) == CT_ERR_STATE);
    CHECK(ct_stw_header_len(w) % 8 == 0 && ct_stw_header_len(w) > 0);
    { /* ct_stw_align64: the data start at a multiple of 64 */
        char p64[560];
        ct_stw *w64 = NULL;
        pjoin(p64, sizeof p64, tmp, "w64.safetensors");
        CHECK(ct_stw_create(&w64, err, sizeof err) == CT_OK);
        CHECK(ct_stw_declare(w64, "zeta", CT_STW_F32, 2, s23, err, sizeof err) == CT_OK);
        ct_stw_align64(w64);
        CHECK(ct_stw_begin(w64, p64, err, sizeof err) == CT_OK);
        CHECK((8 + ct_stw_header_len(w64)) % 64 == 0);
        float z[6] = {0};
        CHECK(ct_stw_write(w64, z, sizeof z, err, sizeof err) == CT_OK && ct_stw_finish(w64, err, sizeof err) == CT_OK);
        ct_st_file *f = NULL;
        CHECK(ct_st_open(p64, &f, err, sizeof err) == CT_OK && f && ct_st_find(f, "zeta") &&
              (uintptr_t)ct_st_find(f, "zeta")->data % 64 == 0);
        ct_st_close(f);
        ct_stw_free(w64);
        remove(p64);
    }
    size_t idx = 99;
    uint64_t rem = 0;
    /* Order by name: "alpha..." (decl 1), "empty" skipped, "mid" (3), "zeta" (0). */
    CHECK(ct_stw_next(w, &idx, &rem) == 1 && idx == 1 && rem == 4);
    int32_t iv = 7;
    CHECK(ct_stw_write(w, &iv, 4, err, sizeof err) == CT_OK);
    CHECK(ct_stw_next(w, &idx, &rem) == 1 && idx == 3 && rem == 10);
    uint16_t h[6] = {1, 2, 3, 4, 5, 6};
    CHECK(ct_stw_write(w, h, 12, err, sizeof err) == CT_ERR_INVALID_ARG); /* crosses boundary */
    CHECK(ct_stw_write(w, h, 4, err, sizeof err) == CT_OK);
    CHECK(ct_stw_next(w, &idx, &rem) == 1 && idx == 3 && rem == 6);
    CHECK(ct_stw_write(w, h + 2, 6, err, sizeof err) == CT_OK);
    CHECK(ct_stw_next(w, &idx, &rem) == 1 && idx == 0 && rem == 24);
    float fv[6] = {1, 2, 3, 4, 5, 6};
    CHECK(ct_stw_write(w, fv, 20, err, sizeof err) == CT_OK);
    CHECK(ct_stw_finish(w, err, sizeof err) == CT_ERR_STATE); /* 4 bytes missing */
    CHECKF(strstr(err, "zeta") != NULL, "%s", err);
    CHECK(ct_stw_write(w, fv + 5, 4, err, sizeof err) == CT_OK);
    CHECK(ct_stw_next(w, NULL, NULL) == 0);
    CHECK(ct_stw_write(w, fv, 4, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(ct_stw_finish(w, err, sizeof err) == CT_OK);
    CHECK(ct_stw_finish(w, err, sizeof err) == CT_ERR_STATE);
    ct_stw_free(w);
    CHECK(file_size(part) < 0);
    CHECK(check_st_layout(path) == 4);
    /* The escaped name round-trips and the data sits at its offset. */
    uint64_t hlen = 0;
    long long fsz = 0;
    json_t *j = load_st_header(path, &hlen, &fsz);
    json_t *a = j ? json_object_get(j, "alpha \"q\"\\") : NULL;
    CHECK(a && json_array_size(json_object_get(a, "shape")) == 0);
    CHECK(a && !strcmp(json_string_value(json_object_get(a, "dtype")), "I32"));
    json_t *z = j ? json_object_get(j, "zeta") : NULL;
    size_t len = 0;
    char *all = read_all(path, &len);
    if (z && all) {
        uint64_t off = (uint64_t)json_integer_value(json_array_get(json_object_get(z, "data_offsets"), 0));
        CHECK(memcmp(all + 8 + hlen + off, fv, 24) == 0);
    }
    free(all);
    json_decref(j);
    remove(path);

    /* Duplicate names, unfinished files are removed, unwritable path. */
    CHECK(ct_stw_create(&w, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "a", CT_STW_F32, 1, s5, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "a", CT_STW_F32, 1, s5, err, sizeof err) == CT_OK);
    CHECK(ct_stw_begin(w, path, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(strstr(err, "duplicate") != NULL);
    ct_stw_free(w);
    CHECK(ct_stw_create(&w, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "a", CT_STW_F32, 1, s5, err, sizeof err) == CT_OK);
    CHECK(ct_stw_begin(w, path, err, sizeof err) == CT_OK);
    CHECK(file_size(part) >= 0); /* exists while open */
    ct_stw_free(w);
    CHECK(file_size(part) < 0 && file_size(path) < 0);
    CHECK(ct_stw_create(&w, err, sizeof err) == CT_OK);
    CHECK(ct_stw_declare(w, "a", CT_STW_F32, 1, s5, err, sizeof err) == CT_OK);
    snprintf(part, sizeof part, "%s/no/such/dir/x.safetensors", tmp);
    CHECK(ct_stw_begin(w, part, err, sizeof err) == CT_ERR_IO);
    CHECK(err[0] != 0);
    CHECK(ct_stw_write(w, fv, 4, err, sizeof err) == CT_ERR_STATE);
    ct_stw_free(w);
    CHECK(ct_stw_next(NULL, NULL, NULL) == 0);
    ct_stw_free(NULL);
}

/* ---------------------------------------------------------------------------------------
 * Full tiny write */

typedef struct {
    uint64_t last_done, total;
    int calls, monotonic;
} prog;

static void on_progress(void *ud, uint64_t done, uint64_t total) {
    prog *p = ud;
    if (done < p->last_done || done > total) p->monotonic = 0;
    p->last_done = done;
    p->total = total;
    p->calls++;
}

static json_t *load_json(const char *dir, const char *name) {
    char p[1024];
    pjoin(p, sizeof p, dir, name);
    json_error_t e;
    return json_load_file(p, 0, &e);
}

static long long jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

static void check_configs(const char *dir) {
    json_t *c = load_json(dir, "config.json");
    CHECK(c != NULL);
    if (c) {
        CHECK(!strcmp(json_string_value(json_array_get(json_object_get(c, "architectures"), 0)),
                      "Qwen3TTSForConditionalGeneration"));
        CHECK(!strcmp(json_string_value(json_object_get(c, "model_type")), "qwen3_tts"));
        CHECK(!strcmp(json_string_value(json_object_get(c, "tts_model_type")), "custom_voice"));
        CHECK(!strcmp(json_string_value(json_object_get(c, "tokenizer_type")), "qwen3_tts_tokenizer_12hz"));
        CHECK(!strcmp(json_string_value(json_object_get(c, "transformers_version")), "4.57.3"));
        CHECK(jint(c, "im_start_token_id") == 151644 && jint(c, "im_end_token_id") == 151645);
        CHECK(jint(c, "tts_pad_token_id") == 151671 && jint(c, "tts_bos_token_id") == 151672 &&
              jint(c, "tts_eos_token_id") == 151673 && jint(c, "assistant_token_id") == 77091);
        CHECK(json_object_get(c, "speaker_encoder_config") == NULL);
        json_t *t = json_object_get(c, "talker_config");
        CHECK(json_is_object(t));
        CHECK(jint(t, "hidden_size") == 128 && jint(t, "num_hidden_layers") == 4 && jint(t, "head_dim") == 32);
        CHECK(jint(t, "num_attention_heads") == 4 && jint(t, "num_key_value_heads") == 2);
        CHECK(jint(t, "text_vocab_size") == 151936 && jint(t, "vocab_size") == 3072 && jint(t, "num_code_groups") == 16);
        CHECK(jint(t, "codec_pad_id") == 2148 && jint(t, "codec_bos_id") == 2149 && jint(t, "codec_eos_token_id") == 2150);
        CHECK(jint(t, "codec_think_id") == 2154 && jint(t, "codec_nothink_id") == 2155);
        CHECK(jint(t, "codec_think_bos_id") == 2156 && jint(t, "codec_think_eos_id") == 2157 && jint(t, "pad_token_id") == 2148);
        CHECK(!strcmp(json_string_value(json_object_get(t, "model_type")), "qwen3_tts_talker"));
        CHECK(json_real_value(json_object_get(t, "rms_norm_eps")) == 1e-6);
        CHECK(jint(t, "rope_theta") == 1000000);
        json_t *rs = json_object_get(t, "rope_scaling");
        json_t *ms = json_object_get(rs, "mrope_section");
        CHECK(json_array_size(ms) == 3);
        CHECK(json_integer_value(json_array_get(ms, 0)) + json_integer_value(json_array_get(ms, 1)) +
                  json_integer_value(json_array_get(ms, 2)) == 16);
        CHECK(json_is_true(json_object_get(rs, "interleaved")));
        json_t *lang = json_object_get(t, "codec_language_id"), *spk = json_object_get(t, "spk_id");
        json_t *dia = json_object_get(t, "spk_is_dialect");
        CHECK(json_object_size(lang) == 12 && jint(lang, "english") == 2050 && jint(lang, "sichuan_dialect") == 2062);
        CHECK(json_object_size(spk) == 9 && jint(spk, "vivian") == 3065 && jint(spk, "aiden") == 2861);
        CHECK(json_object_size(dia) == 9 && json_is_false(json_object_get(dia, "ryan")));
        CHECK(!strcmp(json_string_value(json_object_get(dia, "dylan")), "beijing_dialect"));
        json_t *cp = json_object_get(t, "code_predictor_config");
        CHECK(jint(cp, "num_hidden_layers") == 2 && jint(cp, "hidden_size") == 128 && jint(cp, "vocab_size") == 2048);
        CHECK(jint(cp, "head_dim") == 32 && jint(cp, "num_code_groups") == 16);
        CHECK(json_array_size(json_object_get(cp, "layer_types")) == 2);
        CHECK(json_is_null(json_object_get(cp, "rope_scaling")));
        CHECK(!strcmp(json_string_value(json_object_get(cp, "model_type")), "qwen3_tts_talker_code_predictor"));
        json_decref(c);
    }
    json_t *g = load_json(dir, "generation_config.json");
    CHECK(g && json_is_true(json_object_get(g, "do_sample")) && jint(g, "top_k") == 50);
    CHECK(g && json_real_value(json_object_get(g, "temperature")) == 0.9 &&
          json_real_value(json_object_get(g, "repetition_penalty")) == 1.05 && jint(g, "max_new_tokens") == 8192);
    CHECK(g && json_is_true(json_object_get(g, "subtalker_dosample")) && jint(g, "subtalker_top_k") == 50);
    json_decref(g);
    json_t *pp = load_json(dir, "preprocessor_config.json");
    CHECK(pp && !strcmp(json_string_value(json_object_get(pp, "processor_class")), "Qwen3TTSProcessor"));
    json_decref(pp);
    json_t *s = load_json(dir, "speech_tokenizer/config.json");
    CHECK(s != NULL);
    if (s) {
        CHECK(!strcmp(json_string_value(json_object_get(s, "model_type")), "qwen3_tts_tokenizer_12hz"));
        CHECK(jint(s, "decode_upsample_rate") == 1920 && jint(s, "encode_downsample_rate") == 1920);
        CHECK(jint(s, "encoder_valid_num_quantizers") == 16 && jint(s, "output_sample_rate") == 24000);
        json_t *d = json_object_get(s, "decoder_config");
        CHECK(jint(d, "codebook_size") == 2048 && jint(d, "num_quantizers") == 16 && jint(d, "sliding_window") == 72);
        CHECK(json_array_size(json_object_get(d, "upsample_rates")) == 4 &&
              json_integer_value(json_array_get(json_object_get(d, "upsample_rates"), 0)) == 8);
        CHECK(json_array_size(json_object_get(d, "upsampling_ratios")) == 2);
        CHECK(jint(d, "head_dim") * jint(d, "num_attention_heads") > 0);
        json_t *e = json_object_get(s, "encoder_config");
        CHECK(jint(e, "num_quantizers") == 20 && jint(e, "codebook_dim") == 16 && jint(e, "hidden_size") == 64 &&
              jint(e, "num_filters") == 16 && jint(e, "upsample_groups") == 64);
        json_decref(s);
    }
    json_t *sp = load_json(dir, "speech_tokenizer/preprocessor_config.json");
    CHECK(sp && jint(sp, "sampling_rate") == 24000 && jint(sp, "feature_size") == 1);
    json_decref(sp);
}

static float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Checks the stored values of a few tensors against the generator, and that all are finite. */
static void check_values(const char *dir, uint64_t seed) {
    char err[256], path[1024];
    const ct_mm_preset *p = ct_mm_find_preset("tiny");
    for (int file = 0; file < 2; file++) {
        ct_mm_tensor *t = NULL;
        size_t n = 0;
        if (ct_mm_tensors(p, file, &t, &n, err, sizeof err) != CT_OK) {
            CHECK(0);
            continue;
        }
        pjoin(path, sizeof path, dir, file == 0 ? "model.safetensors" : "speech_tokenizer/model.safetensors");
        uint64_t hlen = 0;
        long long fsz = 0;
        json_t *j = load_st_header(path, &hlen, &fsz);
        size_t len = 0;
        unsigned char *all = (unsigned char *)read_all(path, &len);
        CHECK(j && all);
        CHECK(j && json_object_size(j) == n + 1);
        int missing = 0, nonfinite = 0, mismatch = 0, shape_bad = 0;
        for (size_t i = 0; j && all && i < n; i++) {
            json_t *v = json_object_get(j, t[i].name);
            if (!v) {
                missing++;
                continue;
            }
            json_t *shape = json_object_get(v, "shape");
            if ((int)json_array_size(shape) != t[i].ndim) shape_bad++;
            for (int d = 0; d < t[i].ndim; d++)
                if (json_integer_value(json_array_get(shape, (size_t)d)) != t[i].shape[d]) shape_bad++;
            if (strcmp(json_string_value(json_object_get(v, "dtype")), file == 0 ? "BF16" : "F32")) shape_bad++;
            uint64_t off = (uint64_t)json_integer_value(json_array_get(json_object_get(v, "data_offsets"), 0));
            const unsigned char *base = all + 8 + hlen + off;
            uint64_t ne = ct_mm_numel(&t[i]);
            float ref[64];
            size_t m = ne < 64 ? (size_t)ne : 64;
            uint64_t start = ne - m; /* check the tail: catches offset drift */
            ct_mm_generate(&t[i], seed, start, m, ref);
            for (size_t k = 0; k < m; k++) {
                float got;
                if (file == 0) {
                    uint16_t h;
                    memcpy(&h, base + (start + k) * 2, 2);
                    got = bf16_to_f32(h);
                    if (h != ct_mm_f32_to_bf16(ref[k])) mismatch++;
                } else {
                    memcpy(&got, base + (start + k) * 4, 4);
                    if (got != ref[k]) mismatch++;
                }
            }
            for (uint64_t k = 0; k < ne; k++) {
                float got;
                if (file == 0) {
                    uint16_t h;
                    memcpy(&h, base + k * 2, 2);
                    got = bf16_to_f32(h);
                } else {
                    memcpy(&got, base + k * 4, 4);
                }
                if (!(got > -1e4f && got < 1e4f)) nonfinite++;
            }
            /* Value ranges that the runtime's numerics rely on. */
            if (strstr(t[i].name, "cluster_usage")) {
                int out = 0;
                for (uint64_t k = 0; k < ne; k++) {
                    float u;
                    memcpy(&u, base + k * 4, 4);
                    if (!(u >= 0.99f && u <= 100.01f)) out++;
                }
                CHECKF(out == 0, "%s out of [1,100]", t[i].name);
            }
            if (strstr(t[i].name, "layernorm.weight") || strstr(t[i].name, "model.norm.weight")) {
                float w0;
                if (file == 0) {
                    uint16_t h;
                    memcpy(&h, base, 2);
                    w0 = bf16_to_f32(h);
                } else {
                    memcpy(&w0, base, 4);
                }
                CHECKF(w0 > 0.8f && w0 < 1.2f, "%s[0] = %f", t[i].name, w0);
            }
        }
        /* embedding_sum / cluster_usage stays within the entry range. */
        if (file == 1 && j && all) {
            json_t *es = json_object_get(j, "decoder.quantizer.rvq_rest.vq.layers.3._codebook.embedding_sum");
            json_t *cu = json_object_get(j, "decoder.quantizer.rvq_rest.vq.layers.3._codebook.cluster_usage");
            CHECK(es && cu);
            if (es && cu) {
                uint64_t eo = (uint64_t)json_integer_value(json_array_get(json_object_get(es, "data_offsets"), 0));
                uint64_t co = (uint64_t)json_integer_value(json_array_get(json_object_get(cu, "data_offsets"), 0));
                int64_t dim = json_integer_value(json_array_get(json_object_get(es, "shape"), 1));
                int out = 0;
                double sq = 0;
                for (int r = 0; r < 2048; r++) {
                    float u;
                    memcpy(&u, all + 8 + hlen + co + (size_t)r * 4, 4);
                    for (int64_t k = 0; k < dim; k++) {
                        float e;
                        memcpy(&e, all + 8 + hlen + eo + ((size_t)r * (size_t)dim + (size_t)k) * 4, 4);
                        float q = e / u;
                        if (!(q > -0.44f && q < 0.44f)) out++;
                        sq += (double)q * q;
                    }
                }
                double rms = sqrt(sq / (2048.0 * (double)dim));
                CHECKF(out == 0 && rms > 0.2 && rms < 0.3, "codebook entries: %d out of range, rms %f", out, rms);
            }
        }
        CHECKF(missing == 0 && shape_bad == 0, "file %d: %d missing, %d bad shape/dtype", file, missing, shape_bad);
        CHECKF(mismatch == 0, "file %d: %d values differ from the generator", file, mismatch);
        CHECKF(nonfinite == 0, "file %d: %d non-finite/huge values", file, nonfinite);
        json_decref(j);
        free(all);
        free(t);
    }
}

static void test_tiny_write(const char *tmp) {
    char d1[512], d2[512], d3[512], a[1024], b[1024], err[512];
    pjoin(d1, sizeof d1, tmp, "tiny1/nested");
    pjoin(d2, sizeof d2, tmp, "tiny2");
    pjoin(d3, sizeof d3, tmp, "tiny3");
    prog pr = {0, 0, 0, 1};
    double t0 = now_s();
    ct_status st = ct_make_model("tiny", 42, d1, TOK_DIR, 0, on_progress, &pr, err, sizeof err);
    double dt = now_s() - t0;
    CHECKF(st == CT_OK, "make tiny: %s", err);
    if (st != CT_OK) return;

    long long total = 0;
    for (int i = 0; top_files[i]; i++) {
        pjoin(a, sizeof a, d1, top_files[i]);
        long long s = file_size(a);
        CHECKF(s > 0, "%s exists", a);
        total += s;
    }
    char sd[600];
    pjoin(sd, sizeof sd, d1, "speech_tokenizer");
    for (int i = 0; st_files[i]; i++) {
        pjoin(a, sizeof a, sd, st_files[i]);
        long long s = file_size(a);
        CHECKF(s > 0, "%s exists", a);
        total += s;
    }
    CHECK(count_entries(d1) == 8);  /* 7 files + speech_tokenizer/, no leftovers */
    CHECK(count_entries(sd) == 3);
    printf("tiny preset: %.2f s, %.1f MB\n", dt, (double)total / 1e6);
    CHECKF(total < 60ll * 1000 * 1000, "tiny dir is %lld bytes", total);
    pjoin(a, sizeof a, d1, "vocab.json");
    CHECK(files_equal(a, TOK_DIR "/vocab.json"));
    pjoin(a, sizeof a, d1, "merges.txt");
    CHECK(files_equal(a, TOK_DIR "/merges.txt"));

    CHECK(pr.calls >= 1 && pr.monotonic && pr.last_done == pr.total && pr.total > 0);

    check_configs(d1);
    pjoin(a, sizeof a, d1, "model.safetensors");
    CHECK(check_st_layout(a) == 6 + 11 * 4 + 2 + 15 + 11 * 2 + 1 + 15);
    pjoin(a, sizeof a, d1, "speech_tokenizer/model.safetensors");
    CHECK(check_st_layout(a) > 100);
    check_values(d1, 42);

    /* Same seed -> identical bytes; different seed -> different weights, same layout. */
    CHECK(ct_make_model("tiny", 42, d2, TOK_DIR, 0, NULL, NULL, err, sizeof err) == CT_OK);
    CHECK(ct_make_model("tiny", 43, d3, TOK_DIR, 0, NULL, NULL, err, sizeof err) == CT_OK);
    static const char *const cmp[] = {"model.safetensors", "speech_tokenizer/model.safetensors", "config.json",
                                      "speech_tokenizer/config.json", NULL};
    for (int i = 0; cmp[i]; i++) {
        pjoin(a, sizeof a, d1, cmp[i]);
        pjoin(b, sizeof b, d2, cmp[i]);
        CHECKF(files_equal(a, b), "%s same seed", cmp[i]);
        pjoin(b, sizeof b, d3, cmp[i]);
        if (i < 2) {
            CHECKF(!files_equal(a, b), "%s different seed", cmp[i]);
            CHECK(file_size(a) == file_size(b));
        } else {
            CHECK(files_equal(a, b));
        }
    }

    /* Overwrite refusal and overwrite. */
    err[0] = 0;
    CHECK(ct_make_model("tiny", 43, d1, TOK_DIR, 0, NULL, NULL, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "not empty") != NULL, "%s", err);
    pjoin(a, sizeof a, d1, "model.safetensors");
    pjoin(b, sizeof b, d2, "model.safetensors");
    CHECK(files_equal(a, b)); /* untouched */
    CHECK(ct_make_model("tiny", 43, d1, TOK_DIR, 1, NULL, NULL, err, sizeof err) == CT_OK);
    pjoin(b, sizeof b, d3, "model.safetensors");
    CHECK(files_equal(a, b));
    CHECK(count_entries(d1) == 8);

    remove_model_dir(d1);
    pjoin(a, sizeof a, tmp, "tiny1");
    rmdir(a);
    remove_model_dir(d2);
    remove_model_dir(d3);
}

static void test_tiny_base(const char *tmp) {
    char d[512], a[1024], err[512];
    pjoin(d, sizeof d, tmp, "tinybase");
    CHECKF(ct_make_model("tiny-base", 1, d, TOK_DIR, 0, NULL, NULL, err, sizeof err) == CT_OK, "%s", err);
    json_t *c = load_json(d, "config.json");
    json_t *se = c ? json_object_get(c, "speaker_encoder_config") : NULL;
    CHECK(se && jint(se, "enc_dim") == 128 && jint(se, "sample_rate") == 24000);
    CHECK(c && !strcmp(json_string_value(json_object_get(c, "tts_model_type")), "base"));
    json_t *t = c ? json_object_get(c, "talker_config") : NULL;
    CHECK(t && json_object_size(json_object_get(t, "spk_id")) == 0 &&
          json_object_size(json_object_get(t, "spk_is_dialect")) == 0 &&
          json_object_size(json_object_get(t, "codec_language_id")) == 10);
    json_decref(c);
    pjoin(a, sizeof a, d, "model.safetensors");
    CHECK(check_st_layout(a) == 6 + 11 * 4 + 2 + 15 + 11 * 2 + 1 + 15 + 76);
    remove_model_dir(d);
}

static void test_errors(const char *tmp) {
    char err[512], d[512], f[512];
    err[0] = 0;
    pjoin(d, sizeof d, tmp, "never");
    CHECK(ct_make_model("0.6b", 1, d, TOK_DIR, 0, NULL, NULL, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "0.6b") && strstr(err, "tiny") && strstr(err, "0.6b-customvoice") && strstr(err, "0.6b-base") &&
               strstr(err, "1.7b-customvoice") && strstr(err, "1.7b-base") && strstr(err, "1.7b-voicedesign"),
           "%s", err);
    CHECK(ct_make_model(NULL, 1, d, TOK_DIR, 0, NULL, NULL, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(ct_make_model("tiny", 1, NULL, TOK_DIR, 0, NULL, NULL, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(ct_make_model("tiny", 1, "", TOK_DIR, 0, NULL, NULL, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(count_entries(d) == -1); /* nothing created */

    /* Missing tokenizer source: clean CT_ERR_IO before anything is written. */
    err[0] = 0;
    CHECK(ct_make_model("tiny", 1, d, "/nonexistent/tok", 0, NULL, NULL, err, sizeof err) == CT_ERR_IO);
    CHECKF(strstr(err, "vocab.json") != NULL, "%s", err);
    CHECK(count_entries(d) == -1);

    /* Output below a regular file: cannot create the directory. */
    pjoin(f, sizeof f, tmp, "plainfile");
    FILE *fp = fopen(f, "wb");
    if (fp) {
        fputs("x", fp);
        fclose(fp);
    }
    pjoin(d, sizeof d, f, "sub");
    err[0] = 0;
    ct_status st = ct_make_model("tiny", 1, d, TOK_DIR, 0, NULL, NULL, err, sizeof err);
    CHECKF(st == CT_ERR_IO && err[0], "status %d: %s", (int)st, err);
    /* Output is itself a regular file. */
    err[0] = 0;
    st = ct_make_model("tiny", 1, f, TOK_DIR, 1, NULL, NULL, err, sizeof err);
    CHECKF(st == CT_ERR_IO && err[0], "status %d: %s", (int)st, err);
    remove(f);

    /* A directory in the way of a file: the write fails cleanly and leaves no .partial. */
    pjoin(d, sizeof d, tmp, "blocked");
    char blk[700];
    pjoin(blk, sizeof blk, d, "model.safetensors");
    mkdir(d, 0777);
    mkdir(blk, 0777);
    err[0] = 0;
    st = ct_make_model("tiny", 1, d, TOK_DIR, 1, NULL, NULL, err, sizeof err);
    CHECKF(st == CT_ERR_IO && strstr(err, "model.safetensors"), "status %d: %s", (int)st, err);
    char part[760];
    snprintf(part, sizeof part, "%s.partial", blk);
    CHECK(file_size(part) < 0);
    rmdir(blk);
    remove_model_dir(d);
}

int main(void) {
    char tmp[] = "/tmp/ct_make_model_XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_inventories();
    test_tiny_inventory();
    test_bf16_and_generator();
    test_writer(tmp);
    test_tiny_write(tmp);
    test_tiny_base(tmp);
    test_errors(tmp);
    rmdir(tmp);
    return ct_test_finish();
}
