/* Test helpers: random-weight model directories made with make-model, small file edits, a
   sleep, and the fixed-length request the engine and server tests send. */
#ifndef CT_TEST_MODELS_H
#define CT_TEST_MODELS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codectalk.h"
#include "core/fileio.h"
#include "model/make_model.h"

static inline void ct_test_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A request of exactly `frames` frames for the tiny CustomVoice model (voice uncle_fu). */
static inline ct_gen_params ct_test_gen(const char *text, uint64_t seed, int frames) {
    ct_gen_params g = ct_gen_params_default();
    g.text = text;
    g.speaker = "uncle_fu";
    g.seed = seed;
    g.max_frames = frames;
    g.min_new_tokens = frames;
    return g;
}

/* Writes preset into CT_BIN_DIR/<tag> (overwriting) and returns the path (static buffer per
   call site's tag). Returns NULL and prints the error on failure. */
static inline const char *ct_test_make(const char *preset, const char *tag, uint64_t seed) {
    static char paths[8][1024];
    static int next;
    char *p = paths[next++ & 7];
    snprintf(p, 1024, "%s/%s", CT_BIN_DIR, tag);
    char err[1024];
    if (ct_make_model(preset, seed, p, CT_SRC_DIR "/assets/qwen3-tokenizer", 1, NULL, NULL, err,
                      sizeof err) != CT_OK) {
        fprintf(stderr, "make_model(%s): %s\n", preset, err);
        return NULL;
    }
    return p;
}

/* Replaces the first occurrence of from with to in dir/name (whole-file text edit). */
static inline int ct_test_edit(const char *dir, const char *name, const char *from, const char *to) {
    char path[1200], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *s = NULL;
    size_t n = 0;
    if (ct_read_file(path, 1u << 26, &s, &n, err, sizeof err) != CT_OK) return -1;
    char *hit = strstr(s, from);
    if (!hit) {
        free(s);
        return -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(s);
        return -1;
    }
    fwrite(s, 1, (size_t)(hit - s), f);
    fwrite(to, 1, strlen(to), f);
    fwrite(hit + strlen(from), 1, n - (size_t)(hit - s) - strlen(from), f);
    fclose(f);
    free(s);
    return 0;
}

/* Copies src to dst (binary). */
static inline int ct_test_copy(const char *src, const char *dst) {
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    if (!a || !b) {
        if (a) fclose(a);
        if (b) fclose(b);
        return -1;
    }
    char buf[1 << 16];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, k, b);
    fclose(a);
    fclose(b);
    return 0;
}

/* Removes path and, for a directory, everything under it (no symlinks followed). */
static inline void ct_test_rm_rf(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                char sub[4096];
                if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub) continue;
                ct_test_rm_rf(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Writes preset into CT_BIN_DIR/<tag> and loads its model into *m and, unless c is NULL, its codec
   into *c; returns 1 when all loaded, 0 (message printed) otherwise. */
static inline int ct_test_load(const char *preset, const char *tag, uint64_t seed, ct_model **m, ct_codec **c) {
    char err[1024];
    *m = NULL;
    if (c) *c = NULL;
    const char *dir = ct_test_make(preset, tag, seed);
    if (!dir) return 0;
    if (ct_model_load(dir, NULL, m, err, sizeof err) != CT_OK ||
        (c && ct_codec_load(dir, c, err, sizeof err) != CT_OK)) {
        printf("loading %s: %s\n", dir, err);
        return 0;
    }
    return 1;
}

#endif
