/* Calibration (EDGE.md 4): SHA-1 vectors, the fingerprint against Python's json.dumps +
   hashlib, the rate example, the two schedule cases, the fallback, timeline parsing and the
   atomic cache with its corrupt-file warning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"
#include "codectalk.h"
#include "edge/calibrate.h"
#include "edge/probe.h"


/* Writes text to path (CHECKed). */
static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fputs(text, f) != EOF);
    CHECK(fclose(f) == 0);
}

static void hex(const uint8_t *d, char *out) {
    for (int i = 0; i < 20; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_sha1(void) {
    uint8_t d[20];
    char h[41];
    ct_sha1("", 0, d);
    hex(d, h);
    CHECK(strcmp(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709") == 0);
    ct_sha1("abc", 3, d);
    hex(d, h);
    CHECK(strcmp(h, "a9993e364706816aba3e25717850c26c9cd0d89d") == 0);
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: 2 pad blocks */
    ct_sha1(m, strlen(m), d);
    hex(d, h);
    CHECK(strcmp(h, "84983e441c3bd26ebaae4aa1f95129e5e54670f1") == 0);
    char a[1000];
    memset(a, 'a', sizeof a);
    ct_sha1(a, sizeof a, d);
    hex(d, h);
    CHECK(strcmp(h, "291e9a6c66994949b57ba5e650361e98fc36b1ba") == 0);
}

static void test_fingerprint(void) {
    char err[256], fp[17];
    ct_hw_profile hw;
    CHECK(ct_hw_probe(CT_SRC_DIR "/tests/data/probe/rk3588", &hw, err, sizeof err) == CT_OK);
    /* python3: sha1(json.dumps({...}, sort_keys=True)).hexdigest()[:16] */
    CHECK(ct_hw_fingerprint(&hw, "qwen3-tts-12hz-0b6-custom_voice", fp, err, sizeof err) == CT_OK);
    CHECKF(strcmp(fp, "6cb913cdacdc16eb") == 0, "%s", fp);
    ct_hw_profile g;
    ct_hw_profile_init(&g);
    snprintf(g.accelerator, sizeof g.accelerator, "cuda_discrete");
    snprintf(g.cpu_model, sizeof g.cpu_model, "Caf\xc3\xa9 \"X\"\\ \xe2\x9c\x93 \xf0\x9d\x84\x9e\n");
    snprintf(g.gpu_name, sizeof g.gpu_name, "NVIDIA GeForce RTX 4070 Ti");
    g.gpu_mem_bytes = 12ull << 30;
    g.n_physical = 12;
    g.flags = CT_HWF_BIT(CT_HWF_FMA) | CT_HWF_BIT(CT_HWF_AVX512) | CT_HWF_BIT(CT_HWF_AVX2);
    CHECK(ct_hw_fingerprint(&g, "m", fp, err, sizeof err) == CT_OK);
    CHECKF(strcmp(fp, "056d19ae218c272b") == 0, "%s", fp);
    /* any field change moves it */
    char fp2[17];
    g.gpu_mem_bytes += 256ull << 20;
    CHECK(ct_hw_fingerprint(&g, "m", fp2, err, sizeof err) == CT_OK && strcmp(fp, fp2) != 0);
    g.gpu_mem_bytes = (12ull << 30) + 1; /* same 256 MiB bucket */
    CHECK(ct_hw_fingerprint(&g, "m", fp2, err, sizeof err) == CT_OK && strcmp(fp, fp2) == 0);
}

static int ramp_is(const ct_calibration *c, const int *r, int n) {
    if (c->n_ramp != n) return 0;
    for (int i = 0; i < n; i++)
        if (c->ramp[i] != r[i]) return 0;
    return 1;
}

static void test_schedule(void) {
    /* EDGE.md 4.2: arrivals 30/190/350 ms carrying 1/25/25 frames -> 50 frames / 0.32 s */
    const ct_chunk_rec ex[] = {{0, 0}, {30, 1920}, {190, 25 * 1920}, {350, 25 * 1920}};
    CHECK(fabs(ct_cal_rate(ex, 4, 24000) - 156.25) < 1e-9);
    CHECK(ct_cal_rate(ex, 2, 24000) == 0); /* one audio chunk only */
    CHECK(ct_cal_rate(ex, 4, 0) == 0);
    ct_calibration c;
    ct_cal_from_timeline(ex, 4, 24000, &c);
    CHECK(c.measured && c.ttfa_ms == 30 && fabs(c.rate_frames_per_s - 156.25) < 1e-9);

    static const int r150[] = {1, 2, 4, 8, 16, 25}, r10[] = {7, 14, 25}, fb[] = {2, 4, 8, 16, 25};
    ct_cal_schedule(150, 100, &c);
    CHECK(c.measured && fabs(c.rtf - 0.0833333) < 1e-6 && c.min_frames == 1);
    CHECK(ramp_is(&c, r150, 6) && fabs(c.margin_ms - 46.6667) < 1e-3 && c.adaptive == 0);
    ct_cal_schedule(10, 900, &c); /* slower than real time: lead 40 + 20 x 25 = 540 ms */
    CHECK(fabs(c.rtf - 1.25) < 1e-12 && c.min_frames == 7 && ramp_is(&c, r10, 3));
    CHECK(fabs(c.margin_ms - 140) < 1e-9 && c.adaptive == 1 && c.ttfa_ms == 900);
    ct_cal_schedule(0, -1, &c); /* not measurable */
    CHECK(!c.measured && c.adaptive && c.min_frames == 2 && c.margin_ms == 50 && ramp_is(&c, fb, 5));
    ct_cal_schedule(1, 0, &c); /* very slow: min clamps at 25 -> [12, 25]; margin clamps at 400 */
    static const int half[] = {12, 25};
    CHECK(c.min_frames == 25 && ramp_is(&c, half, 2) && c.margin_ms == 400);
    ct_cal_schedule(1e6, 0, &c); /* margin = jitter + 1000 / r */
    CHECK(fabs(c.margin_ms - 40.001) < 1e-9 && c.min_frames == 1);
    ct_cal_schedule(12.5, 0, &c); /* exactly real time: rtf 1 */
    CHECK(c.adaptive == 1 && c.min_frames == 1 && fabs(c.margin_ms - 120) < 1e-9);
}

static void test_timeline(void) {
    ct_chunk_rec *ch = NULL;
    int n = 0, sr = 0;
    char err[256];
    const char *js = "{\"sample_rate\": 24000, \"chunks\": [{\"t_ms\": 30, \"samples\": 1920},"
                     "{\"t_ms\": 190.5, \"samples\": 48000}, {\"t_ms\": 350, \"samples\": 48000}]}";
    CHECK(ct_cal_parse_timeline(js, strlen(js), "t.json", &ch, &n, &sr, err, sizeof err) == CT_OK);
    CHECK(n == 3 && sr == 24000 && ch && ch[1].t_ms == 190.5 && ch[2].samples == 48000);
    free(ch);
    const char *bare = "[{\"t_ms\": 1, \"samples\": 0}]";
    CHECK(ct_cal_parse_timeline(bare, strlen(bare), "b", &ch, &n, &sr, err, sizeof err) == CT_OK && n == 1);
    free(ch);
    const char *bad = "{\"chunks\": [{\"t_ms\": 1, \"samples\": -5}]}";
    CHECK(ct_cal_parse_timeline(bad, strlen(bad), "bad.json", &ch, &n, &sr, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "bad.json") && strstr(err, "chunks[0]"), "%s", err);
    const char *syn = "{\n\"chunks\": [\n}";
    CHECK(ct_cal_parse_timeline(syn, strlen(syn), "s.json", &ch, &n, &sr, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "s.json:3:") != NULL, "%s", err);
}

static void test_cache(void) {
    char dir[] = "/tmp/ct_edge_cal_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[1024], err[256], warn[1200];
    CHECK(ct_cal_cache_path(dir, "0123456789abcdef", "int8", "int4", path, sizeof path, err, sizeof err) == CT_OK);
    char want[1024];
    snprintf(want, sizeof want, "%s/calibration/0123456789abcdef-int8-int4.json", dir);
    CHECK(strcmp(path, want) == 0);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    CHECK(ct_cal_cache_path(NULL, "ab", "bf16", "bf16", want, sizeof want, err, sizeof err) == CT_OK &&
          strcmp(want, "/xdg/codectalk/calibration/ab-bf16-bf16.json") == 0);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    CHECK(ct_cal_cache_path(NULL, "ab", "bf16", "bf16", want, sizeof want, err, sizeof err) == CT_OK &&
          strcmp(want, "/home/u/.cache/codectalk/calibration/ab-bf16-bf16.json") == 0);

    ct_calibration c, back;
    int found = 1;
    CHECK(ct_cal_load(path, "model-x", ct_version(), "avx2, VPMADDUBSW", &back, &found, warn, sizeof warn) == CT_OK && !found &&
          !warn[0]);
    ct_cal_schedule(10, 420, &c);
    snprintf(c.model_id, sizeof c.model_id, "model-x");
    snprintf(c.engine_version, sizeof c.engine_version, "%s", ct_version());
    snprintf(c.kernels, sizeof c.kernels, "avx2, VPMADDUBSW");
    snprintf(c.talker_weights, sizeof c.talker_weights, "int8");
    snprintf(c.predictor_weights, sizeof c.predictor_weights, "int4");
    c.n_runs = 2;
    c.runs[0] = (ct_cal_run){1, 2, 0, 20.5, 40.25, 30, 95.5, 6.5};
    c.runs[1] = (ct_cal_run){0, 1, 1, 22, 44, 55, 70.25, 7};
    CHECK(ct_cal_save(path, &c, "0123456789abcdef", "model-x", err, sizeof err) == CT_OK);
    CHECK(ct_cal_load(path, "model-x", ct_version(), "avx2, VPMADDUBSW", &back, &found, warn, sizeof warn) == CT_OK && found &&
          !warn[0]);
    CHECK(back.measured == 1 && back.min_frames == 7 && back.n_ramp == 3 && back.ramp[2] == 25 &&
          back.adaptive == 1 && fabs(back.margin_ms - 140) < 1e-9 && fabs(back.rtf - 1.25) < 1e-12 &&
          back.ttfa_ms == 420);
    CHECK(back.n_runs == 2 && back.runs[0].serial == 1 && back.runs[0].talker_threads == 2 &&
          back.runs[1].codec_threads == 1 && back.runs[0].predictor_ms == 40.25 && back.runs[1].frame_ms == 70.25 &&
          !strcmp(back.talker_weights, "int8") && !strcmp(back.predictor_weights, "int4"));
    /* the fastest run decides */
    CHECK(ct_cal_best_run(&back) == &back.runs[1] && ct_cal_best_run(NULL) == NULL);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    CHECK(access(tmp, F_OK) != 0); /* temp file renamed away */

    /* another model or engine version: ignored with a note naming both */
    CHECK(ct_cal_load(path, "model-y", ct_version(), NULL, &back, &found, warn, sizeof warn) == CT_OK && !found);
    CHECKF(strstr(warn, "model-x") && strstr(warn, "model-y") && strstr(warn, path), "%s", warn);
    CHECK(ct_cal_load(path, "model-x", "0.0.0-old", NULL, &back, &found, warn, sizeof warn) == CT_OK && !found);
    CHECKF(strstr(warn, "engine") && strstr(warn, "0.0.0-old"), "%s", warn);
    /* ... or another kernel selection (CODECTALK_ISA, CODECTALK_VNNI, ...): ignored, naming both */
    CHECK(ct_cal_load(path, "model-x", ct_version(), "avx2, VPDPBUSD (AVX-VNNI)", &back, &found, warn, sizeof warn) ==
              CT_OK &&
          !found);
    CHECKF(strstr(warn, "avx2, VPMADDUBSW") && strstr(warn, "avx2, VPDPBUSD (AVX-VNNI)"), "%s", warn);
    CHECK(ct_cal_load(path, "model-x", ct_version(), "avx2, VPMADDUBSW", &back, &found, warn, sizeof warn) == CT_OK &&
          found && !strcmp(back.kernels, "avx2, VPMADDUBSW"));

    write_text(path, "{\"measured\": true, \"rate_frames_per_s\": \"fast\"");
    CHECK(ct_cal_load(path, NULL, NULL, NULL, &back, &found, warn, sizeof warn) == CT_OK && !found);
    CHECKF(strstr(warn, "corrupt") && strstr(warn, path), "%s", warn);
    /* schema 1 (no formats, runs or version): stale, ignored */
    write_text(path, "{\"schema\": 1, \"measured\": true, \"rate_frames_per_s\": 1, \"rtf\": 1, "
                     "\"codec_chunk_adaptive\": true, \"codec_chunk_min_frames\": 2, "
                     "\"codec_chunk_safety_margin_ms\": 1, \"codec_chunk_ramp\": [1]}");
    CHECK(ct_cal_load(path, NULL, NULL, NULL, &back, &found, warn, sizeof warn) == CT_OK && !found);
    CHECKF(strstr(warn, "schema") != NULL, "%s", warn);
    char *js = ct_cal_to_json(&c, "0123456789abcdef", "model-x");
    CHECK(js != NULL);
    char *mm = js ? strstr(js, "\"codec_chunk_min_frames\": 7") : NULL;
    if (mm) mm[strlen("\"codec_chunk_min_frames\": ")] = '0';
    write_text(path, js ? js : "");
    CHECK(ct_cal_load(path, NULL, NULL, NULL, &back, &found, warn, sizeof warn) == CT_OK && !found);
    CHECKF(strstr(warn, "codec_chunk_min_frames") != NULL, "%s", warn);
    char *fm = js ? strstr(js, "\"frame_ms\": 95.5") : NULL;
    if (mm) mm[strlen("\"codec_chunk_min_frames\": ")] = '7';
    if (fm) memcpy(fm + strlen("\"frame_ms\": "), "-1.5", 4);
    write_text(path, js ? js : "");
    CHECK(ct_cal_load(path, NULL, NULL, NULL, &back, &found, warn, sizeof warn) == CT_OK && !found);
    CHECKF(strstr(warn, "runs[]") != NULL, "%s", warn);
    free(js);
    /* rewritten over the corrupt file */
    CHECK(ct_cal_save(path, &c, "0123456789abcdef", "model-x", err, sizeof err) == CT_OK);
    CHECK(ct_cal_load(path, "model-x", ct_version(), "avx2, VPMADDUBSW", &back, &found, warn, sizeof warn) == CT_OK && found);
    remove(path);
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/calibration", dir);
    rmdir(sub);
    rmdir(dir);
}

int main(void) {
    test_sha1();
    test_fingerprint();
    test_schedule();
    test_timeline();
    test_cache();
    return ct_test_finish();
}
