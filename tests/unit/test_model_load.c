/* Model loading: every preset's config parses; bad checkpoints fail with errors that name the
   problem (missing tensor, wrong shape, truncated file, absurd config, missing tokenizer). */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codectalk.h"
#include "ct_test.h"
#include "io/safetensors.h"
#include "test_models.h"

static ct_status load(const char *dir, char *err, size_t cap) {
    ct_model *m = NULL;
    ct_status st = ct_model_load(dir, NULL, &m, err, cap);
    ct_model_free(m);
    return st;
}

/* Rewrites dir/model.safetensors with the header text edited (from -> to, same data). */
static int edit_header(const char *dir, const char *from, const char *to) {
    char path[1200], err[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    char *s = NULL;
    size_t n = 0;
    if (ct_read_file(path, 1u << 28, &s, &n, err, sizeof err) != CT_OK) return -1;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | (uint8_t)s[i];
    char *hdr = malloc(hl + 1);
    memcpy(hdr, s + 8, hl);
    hdr[hl] = 0;
    char *hit = strstr(hdr, from);
    if (!hit) {
        free(hdr);
        free(s);
        return -1;
    }
    size_t nl = hl - strlen(from) + strlen(to);
    size_t pad = (8 - nl % 8) % 8;
    FILE *f = fopen(path, "wb");
    uint64_t nl64 = nl + pad;
    for (int i = 0; i < 8; i++) fputc((int)((nl64 >> (8 * i)) & 0xff), f);
    fwrite(hdr, 1, (size_t)(hit - hdr), f);
    fwrite(to, 1, strlen(to), f);
    fwrite(hit + strlen(from), 1, hl - (size_t)(hit - hdr) - strlen(from), f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    fwrite(s + 8 + hl, 1, n - 8 - hl, f);
    fclose(f);
    free(hdr);
    free(s);
    return 0;
}

int main(void) {
    char err[1024];
    const char *dir = ct_test_make("tiny", "load-tiny", 3);
    CHECK(dir != NULL);
    if (!dir) return ct_test_finish();

    ct_model *m = NULL;
    CHECKF(ct_model_load(dir, NULL, &m, err, sizeof err) == CT_OK, "%s", err);
    ct_model_info info = ct_model_get_info(m);
    CHECK(strcmp(info.kind, "custom_voice") == 0);
    CHECK(info.n_groups == 16 && info.codebook_size == 2048);
    CHECK(info.n_speakers == 9);
    int found = 0;
    for (int i = 0; i < info.n_speakers; i++) found += strcmp(ct_model_speaker(m, i), "vivian") == 0;
    CHECK(found == 1);
    CHECK(ct_model_speaker(m, 99) == NULL);
    int32_t ids[64];
    size_t n = 0;
    CHECK(ct_tokenize(m, "<|im_start|>assistant\n", 22, ids, 64, &n, err, sizeof err) == CT_OK);
    CHECK(n == 3 && ids[0] == 151644 && ids[1] == 77091 && ids[2] == 198);
    ct_model_free(m);
    ct_model_free(NULL);

    /* f32 reference mode loads too */
    ct_model_params mp = ct_model_params_default();
    mp.f32_weights = 1;
    CHECKF(ct_model_load(dir, &mp, &m, err, sizeof err) == CT_OK, "%s", err);
    ct_model_free(m);

    /* missing directory / files */
    CHECK(load("/nonexistent-model-dir", err, sizeof err) == CT_ERR_IO);
    CHECK(strstr(err, "config.json") != NULL);

    /* missing tensor: rename it in the header */
    const char *d2 = ct_test_make("tiny", "load-missing", 3);
    CHECK(edit_header(d2, "\"talker.codec_head.weight\"", "\"talker.codec_hexd.weight\"") == 0);
    CHECK(load(d2, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "missing tensor 'talker.codec_head.weight'") && strstr(err, "[3072, 128]"),
           "%s", err);

    /* mis-shaped tensor with the same byte count: [3072,128] -> [128,3072] */
    const char *d3 = ct_test_make("tiny", "load-shape", 3);
    CHECK(edit_header(d3, "\"talker.codec_head.weight\":{\"dtype\":\"BF16\",\"shape\":[3072,128]",
                      "\"talker.codec_head.weight\":{\"dtype\":\"BF16\",\"shape\":[128,3072]") == 0);
    CHECK(load(d3, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "talker.codec_head.weight") && strstr(err, "[128, 3072]") &&
           strstr(err, "expected [3072, 128]"), "%s", err);

    /* header that lies about a length */
    const char *d4 = ct_test_make("tiny", "load-lie", 3);
    CHECK(edit_header(d4, "\"talker.codec_head.weight\":{\"dtype\":\"BF16\",\"shape\":[3072,128]",
                      "\"talker.codec_head.weight\":{\"dtype\":\"BF16\",\"shape\":[3072,129]") == 0);
    CHECK(load(d4, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "talker.codec_head.weight") != NULL, "%s", err);

    /* truncated file */
    const char *d5 = ct_test_make("tiny", "load-trunc", 3);
    char path[1200];
    snprintf(path, sizeof path, "%s/model.safetensors", d5);
    struct stat sb;
    stat(path, &sb);
    CHECK(truncate(path, sb.st_size / 2) == 0);
    CHECK(load(d5, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "truncated") != NULL, "%s", err);
    CHECK(truncate(path, 3) == 0);
    CHECK(load(d5, err, sizeof err) == CT_ERR_FORMAT);

    /* absurd config values */
    const char *d6 = ct_test_make("tiny", "load-config", 3);
    CHECK(ct_test_edit(d6, "config.json", "\"num_hidden_layers\": 4", "\"num_hidden_layers\": 100000") == 0);
    CHECK(load(d6, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "num_hidden_layers") != NULL, "%s", err);
    d6 = ct_test_make("tiny", "load-config", 3);
    CHECK(ct_test_edit(d6, "config.json", "\"tts_model_type\": \"custom_voice\"",
                       "\"tts_model_type\": \"karaoke\"") == 0);
    CHECK(load(d6, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "karaoke") != NULL, "%s", err);
    d6 = ct_test_make("tiny", "load-config", 3);
    CHECK(ct_test_edit(d6, "config.json", "{", "[") == 0);
    CHECK(load(d6, err, sizeof err) == CT_ERR_FORMAT);

    /* a config that declares more layers than the checkpoint has */
    const char *d7 = ct_test_make("tiny", "load-layers", 3);
    CHECK(ct_test_edit(d7, "config.json", "\"num_hidden_layers\": 4", "\"num_hidden_layers\": 5") == 0);
    CHECK(load(d7, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "talker.model.layers.4.") != NULL, "%s", err);

    /* missing tokenizer files */
    const char *d8 = ct_test_make("tiny", "load-notok", 3);
    snprintf(path, sizeof path, "%s/vocab.json", d8);
    remove(path);
    CHECK(load(d8, err, sizeof err) != CT_OK);
    CHECKF(strstr(err, "vocab.json") != NULL, "%s", err);
    mp = ct_model_params_default();
    mp.tokenizer_dir = CT_SRC_DIR "/assets/qwen3-tokenizer";
    CHECKF(ct_model_load(d8, &mp, &m, err, sizeof err) == CT_OK, "%s", err);
    ct_model_free(m);
    CHECK(ct_model_load(NULL, NULL, &m, err, sizeof err) == CT_ERR_INVALID_ARG);
    return ct_test_finish();
}
