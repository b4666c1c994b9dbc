/* Cloned voices for the server and the command line (see voices.h). */
#include "serve/voices.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "model/voice_internal.h"

ct_status ct_clone_make(const ct_model *m, const ct_speech_encoder *enc, const ct_ref_audio *clip,
                        const char *ref_text, int x_vector_only, ct_voice **out, ct_clone_warnings *w,
                        char *err, size_t errcap) {
    *out = NULL;
    w->n = 0;
    int has_text = ref_text && ref_text[0];
    if (x_vector_only && has_text)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "a reference transcript was given with x-vector-only "
                       "mode, which does not use one: drop one of them");
    if (!x_vector_only && !has_text)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ICL cloning needs the transcript of the reference "
                       "clip (ref_text); without one, ask for x-vector-only mode (x_vector_only: the "
                       "speaker's timbre from the x-vector alone)");
    if (!x_vector_only && !enc)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "ICL cloning needs the speech-tokenizer encoder, "
                       "which this model did not load; use x-vector-only mode");
    for (int i = 0; i < clip->n_notes && w->n < CT_CLONE_MAX_WARN; i++)
        snprintf(w->w[w->n++], sizeof w->w[0], "%s", clip->notes[i]);
    double sec = (double)clip->n / CT_REF_RATE;
    int ntok = 0;
    if (has_text && ct_voice_text_short(m, ref_text, sec, &ntok) && w->n < CT_CLONE_MAX_WARN)
        snprintf(w->w[w->n++], sizeof w->w[0], "the transcript has %d tokens for %.1f s of reference audio "
                 "(fewer than %.1f per second): it looks shorter than the clip; ICL needs the transcript "
                 "of the whole clip, or the output may run on", ntok, sec, CT_VOICE_MIN_TOKENS_PER_S);
    return ct_voice_create(m, x_vector_only ? NULL : enc, clip->pcm, clip->n, x_vector_only ? NULL : ref_text,
                           out, err, errcap);
}

int ct_voice_name_ok(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n < 1 || n > 64) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

struct ct_voice_store {
    char dir[4096];
    pthread_mutex_t mu; /* writers (put, delete) */
};

ct_status ct_voice_store_open(const char *dir, ct_voice_store **out, char *err, size_t errcap) {
    *out = NULL;
    if (!dir || !dir[0] || strlen(dir) > 4000)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voices dir: empty or too long a path");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/x", dir);
    ct_status st = ct_mkdir_parents(probe, err, errcap);
    if (st != CT_OK) return st;
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ct_errf(err, errcap, CT_ERR_IO, "voices dir '%s' is not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return ct_errf(err, errcap, CT_ERR_IO, "voices dir '%s' is not writable: %s", dir, strerror(errno));
    ct_voice_store *s = calloc(1, sizeof *s);
    if (!s) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return CT_OK;
}

void ct_voice_store_free(ct_voice_store *s) {
    if (!s) return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static ct_status path_of(const ct_voice_store *s, const char *name, char *path, size_t cap, char *err,
                         size_t errcap) {
    if (!ct_voice_name_ok(name))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "'%.80s' is not a voice name (1 to 64 of A-Z a-z 0-9 _ -)",
                       name ? name : "");
    snprintf(path, cap, "%s/%s.voice", s->dir, name);
    return CT_OK;
}

ct_status ct_voice_store_get(ct_voice_store *s, const ct_model *m, const char *name, ct_voice **out, char *err,
                             size_t errcap) {
    char path[4200];
    *out = NULL;
    ct_status st = path_of(s, name, path, sizeof path, err, errcap);
    if (st != CT_OK) return st;
    if (!ct_file_exists(path)) return ct_errf(err, errcap, CT_ERR_IO, "no voice named '%s'", name);
    char inner[900];
    st = ct_voice_load(m, path, out, inner, sizeof inner);
    if (st != CT_OK) ct_errf(err, errcap, st, "voice '%s': %s", name, inner);
    return st;
}

ct_status ct_voice_store_put(ct_voice_store *s, const char *name, const ct_voice *v, char *err, size_t errcap) {
    char path[4200];
    ct_status st = path_of(s, name, path, sizeof path, err, errcap);
    if (st != CT_OK) return st;
    pthread_mutex_lock(&s->mu);
    struct stat sb;
    if (lstat(path, &sb) == 0) st = ct_errf(err, errcap, CT_ERR_STATE, "a voice named '%s' exists (DELETE it first)", name);
    else st = ct_voice_save(v, path, err, errcap);
    pthread_mutex_unlock(&s->mu);
    return st;
}

int ct_voice_store_has(ct_voice_store *s, const char *name) {
    char path[4200], err[200];
    struct stat sb;
    return path_of(s, name, path, sizeof path, err, sizeof err) == CT_OK && lstat(path, &sb) == 0;
}

ct_status ct_voice_store_delete(ct_voice_store *s, const char *name, char *err, size_t errcap) {
    char path[4200];
    ct_status st = path_of(s, name, path, sizeof path, err, errcap);
    if (st != CT_OK) return st;
    pthread_mutex_lock(&s->mu);
    if (!ct_file_exists(path)) st = ct_errf(err, errcap, CT_ERR_IO, "no voice named '%s'", name);
    else if (unlink(path) != 0) st = ct_errf(err, errcap, CT_ERR_IO, "cannot remove voice '%s': %s", name, strerror(errno));
    pthread_mutex_unlock(&s->mu);
    return st;
}

json_t *ct_voice_store_describe(ct_voice_store *s, const ct_model *m, const char *name) {
    char path[4200], err[900];
    if (path_of(s, name, path, sizeof path, err, sizeof err) != CT_OK || !ct_file_exists(path)) return NULL;
    ct_voice *v = NULL;
    json_t *o = json_pack("{s:s}", "name", name);
    if (!o) return NULL;
    if (ct_voice_load(NULL, path, &v, err, sizeof err) != CT_OK) {
        json_object_set_new(o, "usable", json_false());
        json_object_set_new(o, "error", json_string(err));
        return o;
    }
    ct_voice_info i = ct_voice_get_info(v);
    json_object_set_new(o, "mode", json_string(i.ref_frames ? "icl" : "x_vector_only"));
    json_object_set_new(o, "ref_text", i.ref_text ? json_string(i.ref_text) : json_null());
    json_object_set_new(o, "ref_seconds", json_real((double)i.n_samples / CT_REF_RATE));
    json_object_set_new(o, "model_name", json_string(i.model_name));
    int usable = !strcmp(i.model_hash, ct_model_hash(m));
    json_object_set_new(o, "usable", json_boolean(usable));
    if (!usable) json_object_set_new(o, "error", json_string("made with another model"));
    ct_voice_free(v);
    return o;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

json_t *ct_voice_store_list(ct_voice_store *s, const ct_model *m) {
    json_t *arr = json_array();
    DIR *d = opendir(s->dir);
    if (!d || !arr) {
        if (d) closedir(d);
        return arr;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 7 || strcmp(e->d_name + l - 6, ".voice") != 0) continue;
        char *nm = strndup(e->d_name, l - 6);
        if (!nm || !ct_voice_name_ok(nm)) {
            free(nm);
            continue;
        }
        if (n == cap) {
            char **nn = realloc(names, sizeof *nn * (cap = cap ? 2 * cap : 16));
            if (!nn) {
                free(nm);
                break;
            }
            names = nn;
        }
        names[n++] = nm;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        json_t *o = ct_voice_store_describe(s, m, names[i]);
        if (o) json_array_append_new(arr, o);
        free(names[i]);
    }
    free(names);
    return arr;
}
