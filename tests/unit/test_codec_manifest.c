/* The codec program manifest (src/export/codec_manifest.c, docs/EXPORT.md): what the writer
   records reads back; the program picked for n frames; and the reader refuses, naming the
   problem, a manifest of another version or none, a bad codec id, a changed or missing program
   file, a window or output that does not follow from context, chunk and hop, a shape that does
   not, a path outside the directory, a ramp size without a program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ct_test.h"
#include "core/sha256.h"
#include "export/codec_manifest.h"

static char DIR_[1024];

static void put_file(const char *name, const char *text) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", DIR_, name);
    FILE *f = fopen(p, "wb");
    fputs(text, f);
    fclose(f);
}

/* Rewrites the manifest with edit applied to its JSON; returns the read status and err. */
typedef void (*edit_fn)(json_t *m);

static ct_status read_edited(const char *good, edit_fn edit, char *err, size_t cap) {
    json_t *m = json_loads(good, 0, NULL);
    if (edit) edit(m);
    char p[1200];
    snprintf(p, sizeof p, "%s/manifest.json", DIR_);
    json_dump_file(m, p, JSON_INDENT(1));
    json_decref(m);
    ct_codec_manifest man;
    return ct_codec_manifest_read(DIR_, 1, &man, err, cap);
}

static json_t *prog(json_t *m, const char *k) { return json_object_get(json_object_get(m, "programs"), k); }
static void e_version(json_t *m) { json_object_set_new(m, "manifest_version", json_integer(2)); }
static void e_noversion(json_t *m) { json_object_del(m, "manifest_version"); }
static void e_codec(json_t *m) { json_object_set_new(m, "codec_id", json_string("sha256:xyz")); }
static void e_window(json_t *m) { json_object_set_new(prog(m, "4"), "window_frames", json_integer(75)); }
static void e_out(json_t *m) { json_object_set_new(prog(m, "2"), "out_samples", json_integer(3841)); }
static void e_shape(json_t *m) {
    json_array_set_new(json_object_get(json_object_get(prog(m, "2"), "input"), "shape"), 1, json_integer(8));
}
static void e_path(json_t *m) { json_object_set_new(prog(m, "2"), "path", json_string("../c2.onnx")); }
static void e_ramp(json_t *m) { json_array_append_new(json_object_get(m, "ramp"), json_integer(16)); }
static void e_key(json_t *m) { json_object_set_new(prog(m, "4"), "chunk_frames", json_integer(5)); }
static void e_type(json_t *m) { json_object_set_new(m, "hop", json_string("1920")); }

int main(void) {
    char err[1024];
    snprintf(DIR_, sizeof DIR_, "%s/manifest-test", CT_BIN_DIR);
    mkdir(DIR_, 0755);
    put_file("c2.onnx", "program two");
    put_file("c4.onnx", "program four");
    put_file("c4.onnx.data", "weights of four");

    ct_codec_manifest w;
    memset(&w, 0, sizeof w);
    snprintf(w.codec_id, sizeof w.codec_id, "sha256:%064d", 42);
    snprintf(w.model, sizeof w.model, "tiny");
    w.context_frames = 72;
    w.num_quantizers = 16;
    w.codebook_size = 2048;
    w.hop = 1920;
    w.sample_rate = 24000;
    w.n_ramp = 2;
    w.ramp[0] = 2, w.ramp[1] = 4;
    w.n_programs = 2;
    w.programs[0] =
        (ct_manifest_program){.chunk_frames = 2, .window_frames = 74, .out_samples = 3840, .path = "c2.onnx"};
    w.programs[1] = (ct_manifest_program){.chunk_frames = 4,
                                          .window_frames = 76,
                                          .out_samples = 7680,
                                          .path = "c4.onnx",
                                          .external = 1,
                                          .data_path = "c4.onnx.data"};
    CHECKF(ct_codec_manifest_write(DIR_, &w, err, sizeof err) == CT_OK, "%s", err);
    { /* the recorded hashes are the files' SHA-256 (sha256("abc") checks the hasher itself) */
        char hex[65], q[1200];
        put_file("abc", "abc");
        snprintf(q, sizeof q, "%s/abc", DIR_);
        CHECK(ct_sha256_file(q, hex, err, sizeof err) == CT_OK &&
              strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
        snprintf(q, sizeof q, "%s/c2.onnx", DIR_);
        CHECK(ct_sha256_file(q, hex, err, sizeof err) == CT_OK && strcmp(hex, w.programs[0].sha256) == 0);
        snprintf(q, sizeof q, "%s/c4.onnx.data", DIR_);
        CHECK(ct_sha256_file(q, hex, err, sizeof err) == CT_OK && strcmp(hex, w.programs[1].data_sha256) == 0);
        CHECK(ct_sha256_file(DIR_, hex, err, sizeof err) == CT_ERR_IO && strstr(err, "not a regular file"));
    }

    ct_codec_manifest r;
    CHECKF(ct_codec_manifest_read(DIR_, 1, &r, err, sizeof err) == CT_OK, "%s", err);
    CHECK(r.version == 1 && strcmp(r.codec_id, w.codec_id) == 0 && r.context_frames == 72 && r.hop == 1920 &&
          r.sample_rate == 24000 && r.num_quantizers == 16 && r.codebook_size == 2048 && r.n_ramp == 2 &&
          r.ramp[1] == 4 && r.n_programs == 2);
    CHECK(ct_codec_manifest_program(&r, 1)->chunk_frames == 2 && ct_codec_manifest_program(&r, 2)->chunk_frames == 2 &&
          ct_codec_manifest_program(&r, 3)->chunk_frames == 4 && ct_codec_manifest_program(&r, 5) == NULL);
    const ct_manifest_program *p4 = ct_codec_manifest_program(&r, 4);
    CHECK(p4->external && strcmp(p4->data_path, "c4.onnx.data") == 0 && strcmp(p4->sha256, w.programs[1].sha256) == 0);

    char p[1200];
    snprintf(p, sizeof p, "%s/manifest.json", DIR_);
    char *good = NULL;
    {
        json_t *m = json_load_file(p, 0, NULL);
        good = json_dumps(m, 0);
        json_decref(m);
    }
    CHECK(read_edited(good, NULL, err, sizeof err) == CT_OK);
    struct {
        edit_fn f;
        ct_status st;
        const char *msg;
    } cases[] = {
        {e_version, CT_ERR_UNSUPPORTED, "version 2; this codectalk reads version 1"},
        {e_noversion, CT_ERR_FORMAT, "no manifest_version"},
        {e_codec, CT_ERR_FORMAT, "'codec_id' 'sha256:xyz' is not sha256:<64 hex digits>"},
        {e_window, CT_ERR_FORMAT, "program '4': window_frames 75 / out_samples 7680; context 72 + chunk 4"},
        {e_out, CT_ERR_FORMAT, "program '2': window_frames 74 / out_samples 3841"},
        {e_shape, CT_ERR_FORMAT, "program '2': 'input' does not describe codes int64 [1, 16, 74]"},
        {e_path, CT_ERR_FORMAT, "'../c2.onnx' is not a plain file name"},
        {e_ramp, CT_ERR_FORMAT, "the ramp's chunk size 16 has no program"},
        {e_key, CT_ERR_FORMAT, "program '4': chunk_frames is 5"},
        {e_type, CT_ERR_FORMAT, "'hop' is not an integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        err[0] = 0;
        ct_status st = read_edited(good, cases[i].f, err, sizeof err);
        CHECKF(st == cases[i].st && strstr(err, cases[i].msg), "case %zu: %d '%s'", i, st, err);
    }
    /* a changed program, a changed external data file, a missing program */
    CHECK(read_edited(good, NULL, err, sizeof err) == CT_OK);
    put_file("c4.onnx.data", "weights of four!");
    CHECKF(read_edited(good, NULL, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "'c4.onnx.data' has SHA-256") &&
               strstr(err, "the manifest says"),
           "%s", err);
    CHECK(ct_codec_manifest_read(DIR_, 0, &r, err, sizeof err) == CT_OK); /* files unchecked */
    put_file("c4.onnx.data", "weights of four");
    put_file("c2.onnx", "program 2");
    CHECKF(read_edited(good, NULL, err, sizeof err) == CT_ERR_FORMAT &&
               strstr(err, "program '2': 'c2.onnx' has SHA-256"),
           "%s", err);
    snprintf(p, sizeof p, "%s/c2.onnx", DIR_);
    unlink(p);
    CHECKF(read_edited(good, NULL, err, sizeof err) == CT_ERR_IO && strstr(err, "c2.onnx"), "%s", err);
    /* no manifest at all; not JSON */
    snprintf(p, sizeof p, "%s/manifest.json", DIR_);
    unlink(p);
    CHECK(ct_codec_manifest_read(DIR_, 1, &r, err, sizeof err) == CT_ERR_IO && strstr(err, "cannot be opened"));
    put_file("manifest.json", "{\"manifest_version\": 1,");
    CHECK(ct_codec_manifest_read(DIR_, 1, &r, err, sizeof err) == CT_ERR_FORMAT);
    free(good);
    return ct_test_finish();
}
