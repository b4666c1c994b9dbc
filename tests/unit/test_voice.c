/* Voices (src/model/voice.c, voice_file.c) and the runtime SHA-256: digests against FIPS 180-4
   vectors, the model hash, voices from parts, the voice file's round trip and every refusal
   (corrupt, truncated, another version, another model), applying a voice to a request. */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/sha256.h"
#include "ct_test.h"
#include "io/st_write.h"
#include "model/model_internal.h"
#include "test_models.h"

static void test_sha256(void) {
    char hex[65];
    ct_sha256_buf("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    ct_sha256_buf("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: 2 blocks */
    ct_sha256_buf(two, strlen(two), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    /* one million 'a' fed in uneven pieces (partial-block paths) */
    static char a[1000000];
    memset(a, 'a', sizeof a);
    ct_sha256_ctx c;
    ct_sha256_init(&c);
    size_t off = 0, step = 1;
    while (off < sizeof a) {
        size_t k = step < sizeof a - off ? step : sizeof a - off;
        ct_sha256_update(&c, a + off, k);
        off += k;
        step = step * 3 % 1000 + 1;
    }
    uint8_t d[32];
    ct_sha256_final(&c, d);
    ct_sha256_hex(d, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/voice-sha.bin", CT_BIN_DIR);
    CHECK(ct_write_file_atomic(path, "abc", 3, err, sizeof err) == CT_OK);
    CHECK(ct_sha256_file(path, hex, err, sizeof err) == CT_OK &&
          !strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}

static int exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Writes a voice-like safetensors file with the given metadata and tensors (test forgeries). */
static void forge(const char *path, const char *version, const char *hash, int H, int F, int G,
                  const char *text, float x0) {
    ct_stw *w = NULL;
    char err[256];
    ct_stw_create(&w, err, sizeof err);
    int64_t xs[1] = {H}, cs[2] = {F, G};
    ct_stw_declare(w, "xvector", CT_STW_F32, 1, xs, err, sizeof err);
    if (F) ct_stw_declare(w, "ref_codes", CT_STW_I32, 2, cs, err, sizeof err);
    ct_stw_meta(w, "format", "codectalk-voice", err, sizeof err);
    ct_stw_meta(w, "version", version, err, sizeof err);
    ct_stw_meta(w, "model_hash", hash, err, sizeof err);
    ct_stw_meta(w, "model_name", "0b6-base", err, sizeof err);
    ct_stw_meta(w, "audio_sha256", "", err, sizeof err);
    ct_stw_meta(w, "n_samples", "0", err, sizeof err);
    ct_stw_meta(w, "created_by", "test", err, sizeof err);
    if (text) ct_stw_meta(w, "ref_text", text, err, sizeof err);
    CHECKF(ct_stw_begin(w, path, err, sizeof err) == CT_OK, "%s", err);
    if (F) {
        int32_t *c = calloc((size_t)F * (size_t)G, sizeof *c);
        ct_stw_write(w, c, (size_t)F * (size_t)G * 4, err, sizeof err);
        free(c);
    }
    float *x = calloc((size_t)H, sizeof *x);
    x[0] = x0;
    ct_stw_write(w, x, (size_t)H * 4, err, sizeof err);
    free(x);
    CHECKF(ct_stw_finish(w, err, sizeof err) == CT_OK, "%s", err);
    ct_stw_free(w);
}

int main(void) {
    test_sha256();
    const char *d1 = ct_test_make("tiny-base", "voice-base1", 1);
    const char *d2 = ct_test_make("tiny-base", "voice-base2", 2);
    const char *dc = ct_test_make("tiny", "voice-cv", 1);
    if (!d1 || !d2 || !dc) return 1;
    char err[1024];
    ct_model *m = NULL, *m1b = NULL, *m2 = NULL, *mc = NULL;
    CHECKF(ct_model_load(d1, NULL, &m, err, sizeof err) == CT_OK, "%s", err);
    CHECKF(ct_model_load(d1, NULL, &m1b, err, sizeof err) == CT_OK, "%s", err);
    CHECKF(ct_model_load(d2, NULL, &m2, err, sizeof err) == CT_OK, "%s", err);
    CHECKF(ct_model_load(dc, NULL, &mc, err, sizeof err) == CT_OK, "%s", err);
    if (!m || !m1b || !m2 || !mc) return ct_test_finish();

    /* model hash: 64 hex digits, equal for the same files, different for other weights */
    const char *h1 = ct_model_hash(m);
    CHECK(strlen(h1) == 64 && strspn(h1, "0123456789abcdef") == 64);
    CHECK(ct_model_hash(m) == h1); /* computed once */
    CHECK(!strcmp(h1, ct_model_hash(m1b)));
    CHECK(strcmp(h1, ct_model_hash(m2)) != 0);
    CHECK(!strcmp(ct_model_hash(NULL), ""));

    const int H = m->cfg.talker.hidden, G = m->cfg.n_groups, F = 7;
    float *xv = malloc(sizeof(float) * (size_t)H);
    for (int i = 0; i < H; i++) xv[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    int32_t *codes = malloc(sizeof(int32_t) * (size_t)(F * G));
    for (int i = 0; i < F * G; i++) codes[i] = (i * 131) % m->cfg.pred.vocab;
    const char *text = "Reference transcript, \"quoted\" and ünïcode.";

    /* refusals from parts, each naming the problem */
    ct_voice *v = NULL;
    CHECK(ct_voice_from_parts(mc, xv, mc->cfg.talker.hidden, NULL, 0, NULL, &v, err, sizeof err) ==
          CT_ERR_UNSUPPORTED && strstr(err, "Base"));
    CHECK(ct_voice_from_parts(m, xv, H - 1, NULL, 0, NULL, &v, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "hidden size"));
    CHECK(ct_voice_from_parts(m, xv, H, codes, F, NULL, &v, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "x-vector-only"));
    codes[5] = m->cfg.pred.vocab;
    CHECK(ct_voice_from_parts(m, xv, H, codes, F, text, &v, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "codebook"));
    codes[5] = 3;
    xv[3] = NAN;
    CHECK(ct_voice_from_parts(m, xv, H, NULL, 0, NULL, &v, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "not finite"));
    xv[3] = 0.25f;
    CHECK(v == NULL);

    /* an ICL voice: info, apply, save, load */
    CHECKF(ct_voice_from_parts(m, xv, H, codes, F, text, &v, err, sizeof err) == CT_OK, "%s", err);
    ct_voice_info vi = ct_voice_get_info(v);
    CHECK(vi.version == 1 && vi.xvector_len == H && vi.ref_frames == F && vi.n_groups == G);
    CHECK(vi.ref_text && !strcmp(vi.ref_text, text) && !strcmp(vi.model_hash, h1));
    CHECK(!strcmp(vi.model_name, "0b6-base") || strstr(vi.model_name, "-base"));
    CHECK(!strcmp(vi.audio_sha256, "") && vi.n_samples == 0 && strstr(vi.created_by, "codectalk"));
    ct_gen_params g = ct_gen_params_default();
    ct_voice_apply(v, &g, 0);
    CHECK(g.xvector_len == H && !memcmp(g.xvector, xv, sizeof(float) * (size_t)H));
    CHECK(g.ref_frames == F && !memcmp(g.ref_codes, codes, sizeof(int32_t) * (size_t)(F * G)));
    CHECK(g.ref_text && !strcmp(g.ref_text, text));
    ct_voice_apply(v, &g, 1); /* x-vector only from an ICL voice */
    CHECK(g.xvector && g.ref_codes == NULL && g.ref_frames == 0 && g.ref_text == NULL);

    char path[1024], part[1100], other[1024];
    snprintf(path, sizeof path, "%s/voice-a.voice", CT_BIN_DIR);
    snprintf(part, sizeof part, "%s.partial", path);
    remove(path);
    CHECKF(ct_voice_save(v, path, err, sizeof err) == CT_OK, "%s", err);
    CHECK(exists(path) && !exists(part));
    ct_voice *r = NULL;
    CHECKF(ct_voice_load(m1b, path, &r, err, sizeof err) == CT_OK, "%s", err);
    if (r) {
        ct_voice_info ri = ct_voice_get_info(r);
        CHECK(ri.xvector_len == H && ri.ref_frames == F && ri.n_groups == G && !strcmp(ri.ref_text, text));
        CHECK(!strcmp(ri.model_hash, h1) && !strcmp(ri.model_name, vi.model_name));
        CHECK(!strcmp(ri.created_by, vi.created_by) && ri.version == 1);
        ct_gen_params g2 = ct_gen_params_default();
        ct_voice_apply(r, &g2, 0);
        CHECK(!memcmp(g2.xvector, xv, sizeof(float) * (size_t)H));
        CHECK(!memcmp(g2.ref_codes, codes, sizeof(int32_t) * (size_t)(F * G)));
        ct_voice_free(r);
        r = NULL;
    }
    /* another model: refused, the message names both hashes */
    CHECK(ct_voice_load(m2, path, &r, err, sizeof err) == CT_ERR_INVALID_ARG && r == NULL);
    CHECK(strstr(err, h1) && strstr(err, ct_model_hash(m2)) && strstr(err, path));
    CHECK(ct_voice_load(mc, path, &r, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "another model"));
    /* no model: read for inspection */
    CHECK(ct_voice_load(NULL, path, &r, err, sizeof err) == CT_OK && r);
    ct_voice_free(r);
    r = NULL;

    /* corrupt: every truncation and a flipped header byte are refused, never crash */
    char *buf = NULL;
    size_t len = 0;
    CHECK(ct_read_file(path, 1u << 20, &buf, &len, err, sizeof err) == CT_OK);
    int bad_ok = 0;
    for (size_t k = 0; k < len; k += (k < 64 ? 1 : 13)) {
        ct_status s = ct_voice_load_memory(m, buf, k, &r, err, sizeof err);
        if (s == CT_OK) bad_ok++, ct_voice_free(r), r = NULL;
    }
    CHECK(bad_ok == 0);
    CHECK(ct_voice_load_memory(m, buf, len - 1, &r, err, sizeof err) == CT_ERR_FORMAT &&
          strstr(err, "corrupt voice file"));
    buf[10] ^= 0x55;
    CHECK(ct_voice_load_memory(m, buf, len, &r, err, sizeof err) == CT_ERR_FORMAT && r == NULL);
    free(buf);
    /* a plain safetensors file (the model's codec) is not a voice file */
    snprintf(other, sizeof other, "%s/speech_tokenizer/model.safetensors", d1);
    CHECK(ct_voice_load(m, other, &r, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "not a codectalk voice"));
    /* a directory and a missing file */
    CHECK(ct_voice_load(m, d1, &r, err, sizeof err) == CT_ERR_IO);
    snprintf(other, sizeof other, "%s/voice-missing.voice", CT_BIN_DIR);
    CHECK(ct_voice_load(m, other, &r, err, sizeof err) == CT_ERR_IO && strstr(err, "voice-missing"));

    /* forgeries: another version, codes without text, a NaN, a width for another model */
    snprintf(other, sizeof other, "%s/voice-forged.voice", CT_BIN_DIR);
    forge(other, "2", h1, H, 0, 0, NULL, 0.f);
    CHECK(ct_voice_load(m, other, &r, err, sizeof err) == CT_ERR_UNSUPPORTED && strstr(err, "version 2"));
    forge(other, "1", h1, H, 0, 0, NULL, 0.f);
    CHECKF(ct_voice_load(m, other, &r, err, sizeof err) == CT_OK, "%s", err);
    ct_voice_free(r);
    r = NULL;
    forge(other, "1", h1, H, 3, G, NULL, 0.f);
    CHECK(ct_voice_load(m, other, &r, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "without ref_text"));
    forge(other, "1", h1, H, 0, 0, NULL, NAN);
    CHECK(ct_voice_load(m, other, &r, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "not finite"));
    forge(other, "1", h1, H + 1, 0, 0, NULL, 0.f);
    CHECK(ct_voice_load(m, other, &r, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "hidden size"));
    forge(other, "1", h1, H, 2, G + 1, "t", 0.f);
    CHECK(ct_voice_load(m, other, &r, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "groups"));
    forge(other, "x1", h1, H, 0, 0, NULL, 0.f);
    CHECK(ct_voice_load(m, other, &r, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "version"));

    /* a failed save leaves nothing: a missing directory, a directory in the way */
    snprintf(other, sizeof other, "%s/voice-no-such-dir/x.voice", CT_BIN_DIR);
    CHECK(ct_voice_save(v, other, err, sizeof err) == CT_ERR_IO && !exists(other));
    snprintf(other, sizeof other, "%s/voice-dir.voice", CT_BIN_DIR);
    mkdir(other, 0755);
    snprintf(part, sizeof part, "%s.partial", other);
    CHECK(ct_voice_save(v, other, err, sizeof err) == CT_ERR_IO && !exists(part));

    /* an x-vector-only voice applied to a session gives the frames of the raw x-vector */
    ct_voice *xo = NULL;
    CHECKF(ct_voice_from_parts(m, xv, H, NULL, 0, NULL, &xo, err, sizeof err) == CT_OK, "%s", err);
    ct_session *s = NULL;
    CHECK(ct_session_create(m, NULL, &s, err, sizeof err) == CT_OK);
    int32_t fa[8][64] = {{0}}, fb[8][64] = {{0}};
    int na = 0, nb = 0, got = 0;
    ct_gen_params ga = ct_gen_params_default();
    ga.text = "Hello there.";
    ga.language = "english";
    ga.seed = 5;
    ga.max_frames = 8;
    ct_gen_params gb = ga;
    ga.xvector = xv;
    ga.xvector_len = H;
    ct_voice_apply(xo, &gb, 0);
    CHECK(gb.ref_frames == 0 && gb.ref_codes == NULL);
    CHECKF(ct_session_start(s, &ga) == CT_OK, "%s", ct_session_errmsg(s));
    while (na < 8 && ct_session_next_frame(s, fa[na], &got) == CT_OK && got) na++;
    CHECKF(ct_session_start(s, &gb) == CT_OK, "%s", ct_session_errmsg(s));
    while (nb < 8 && ct_session_next_frame(s, fb[nb], &got) == CT_OK && got) nb++;
    CHECK(na > 0 && na == nb && !memcmp(fa, fb, sizeof(int32_t) * 64 * (size_t)na));
    ct_session_free(s);
    ct_voice_free(xo);

    ct_voice_free(v);
    free(xv);
    free(codes);
    ct_model_free(m);
    ct_model_free(m1b);
    ct_model_free(m2);
    ct_model_free(mc);
    return ct_test_finish();
}
