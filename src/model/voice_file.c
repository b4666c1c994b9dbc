/* The voice file (docs/CLONING.md "Voices and voice files"): a safetensors file holding
   xvector F32 [H] and, for ICL voices, ref_codes I32 [F, 16], with __metadata__ format
   "codectalk-voice", version, model_hash, model_name, ref_text, audio_sha256, n_samples,
   created_by. Written through src/io/st_write (path.partial renamed at the end), read through
   src/io/safetensors with every field checked (the file is untrusted input). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "io/safetensors.h"
#include "io/st_write.h"
#include "model/model_internal.h"
#include "model/voice_internal.h"

#define CT_VOICE_MAX_FILE (16u << 20)

ct_status ct_voice_save(const ct_voice *v, const char *path, char *err, size_t errcap) {
    if (!v || !path || !path[0]) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice save: NULL argument");
    ct_stw *w = NULL;
    ct_status st = ct_stw_create(&w, err, errcap);
    if (st != CT_OK) return st;
    char ver[16], ns[32];
    snprintf(ver, sizeof ver, "%d", CT_VOICE_VERSION);
    snprintf(ns, sizeof ns, "%" PRIu64, v->n_samples);
    int64_t xs[1] = {v->xvector_len}, cs[2] = {v->ref_frames, v->n_groups};
    st = ct_stw_declare(w, "xvector", CT_STW_F32, 1, xs, err, errcap);
    if (st == CT_OK && v->ref_frames) st = ct_stw_declare(w, "ref_codes", CT_STW_I32, 2, cs, err, errcap);
    const char *kv[][2] = {{"format", CT_VOICE_FORMAT}, {"version", ver}, {"model_hash", v->model_hash},
                           {"model_name", v->model_name}, {"audio_sha256", v->audio_sha256},
                           {"n_samples", ns}, {"created_by", v->created_by},
                           {"ref_text", v->ref_frames ? v->ref_text : NULL}};
    for (size_t i = 0; st == CT_OK && i < sizeof kv / sizeof kv[0]; i++)
        if (kv[i][1]) st = ct_stw_meta(w, kv[i][0], kv[i][1], err, errcap);
    if (st == CT_OK) st = ct_stw_begin(w, path, err, errcap);
    /* tensors go in name order: ref_codes before xvector */
    if (st == CT_OK && v->ref_frames)
        st = ct_stw_write(w, v->codes, (size_t)v->ref_frames * (size_t)v->n_groups * sizeof(int32_t), err,
                          errcap);
    if (st == CT_OK) st = ct_stw_write(w, v->xvec, (size_t)v->xvector_len * sizeof(float), err, errcap);
    if (st == CT_OK) st = ct_stw_finish(w, err, errcap);
    ct_stw_free(w); /* removes path.partial unless finished */
    return st;
}

static int is_hex64(const char *s) {
    if (!s || strlen(s) != 64) return 0;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* A decimal in [0, max] (no sign, no spaces); 1 on success. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out) {
    if (!s || !*s || strlen(s) > 20) return 0;
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        if (x > (max - (uint64_t)(*p - '0')) / 10) return 0;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    *out = x;
    return 1;
}

/* Everything a voice file must hold, checked without a model. */
static ct_status parse(const ct_st_file *f, ct_voice **out, char *err, size_t errcap) {
    const char *format = ct_st_meta(f, "format");
    if (!format || strcmp(format, CT_VOICE_FORMAT) != 0)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "not a codectalk voice file (metadata format '%s', "
                       "expected '%s')", format ? format : "(none)", CT_VOICE_FORMAT);
    uint64_t version = 0;
    if (!parse_u64(ct_st_meta(f, "version"), 1000000, &version))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: version '%s' is not a number",
                       ct_st_meta(f, "version") ? ct_st_meta(f, "version") : "(missing)");
    if (version != CT_VOICE_VERSION)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "voice file version %" PRIu64 "; this build "
                       "reads version %d (make the voice again with this build)", version, CT_VOICE_VERSION);
    const char *hash = ct_st_meta(f, "model_hash"), *name = ct_st_meta(f, "model_name");
    const char *audio = ct_st_meta(f, "audio_sha256"), *by = ct_st_meta(f, "created_by");
    const char *text = ct_st_meta(f, "ref_text");
    uint64_t n_samples = 0;
    if (!is_hex64(hash))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: model_hash is missing or not 64 hex digits");
    if (!name || !by)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: model_name or created_by is missing");
    if (!audio || (audio[0] && !is_hex64(audio)))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: audio_sha256 is missing or not 64 hex digits");
    if (!parse_u64(ct_st_meta(f, "n_samples"), UINT64_MAX / 2, &n_samples))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: n_samples is missing or not a number");
    const ct_st_tensor *xv = ct_st_find(f, "xvector"), *rc = ct_st_find(f, "ref_codes");
    if (ct_st_count(f) != 1u + (rc != NULL))
        return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: expected the tensors xvector and "
                       "(ICL) ref_codes, found %zu tensors", ct_st_count(f));
    if (!xv || xv->dtype != CT_DT_F32 || xv->ndim != 1 || xv->shape[0] < 1 || xv->shape[0] > CT_VOICE_MAX_XVEC)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: xvector must be F32 [H] with 1 <= H <= %d",
                       CT_VOICE_MAX_XVEC);
    int H = (int)xv->shape[0], F = 0, G = 0;
    if (rc) {
        if (rc->dtype != CT_DT_I32 || rc->ndim != 2 || rc->shape[0] < 1 || rc->shape[0] > CT_VOICE_MAX_FRAMES ||
            rc->shape[1] < 1 || rc->shape[1] > CT_MAX_GROUPS)
            return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: ref_codes must be I32 [F, G] with "
                           "1 <= F <= %d, 1 <= G <= %d", CT_VOICE_MAX_FRAMES, CT_MAX_GROUPS);
        F = (int)rc->shape[0];
        G = (int)rc->shape[1];
        if (!text || !text[0])
            return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: ref_codes without ref_text");
        if (strlen(text) > CT_VOICE_MAX_TEXT)
            return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: ref_text over %d bytes", CT_VOICE_MAX_TEXT);
    } else if (text) {
        return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: ref_text without ref_codes");
    }
    ct_voice *v = ct_voice_alloc(H, NULL, G, F, NULL, text, name, by);
    if (!v) return ct_errf(err, errcap, CT_ERR_NOMEM, "voice file: out of memory");
    memcpy(v->xvec, xv->data, (size_t)H * sizeof(float)); /* the data may be unaligned */
    if (F) memcpy(v->codes, rc->data, (size_t)F * (size_t)G * sizeof(int32_t));
    for (int i = 0; i < H; i++)
        if (!isfinite(v->xvec[i])) {
            ct_voice_free(v);
            return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: x-vector value %d is not finite", i);
        }
    for (size_t i = 0; i < (size_t)F * (size_t)G; i++)
        if (v->codes[i] < 0) {
            ct_voice_free(v);
            return ct_errf(err, errcap, CT_ERR_FORMAT, "voice file: negative reference code at frame %zu",
                           i / (size_t)G);
        }
    memcpy(v->model_hash, hash, 65);
    snprintf(v->audio_sha256, sizeof v->audio_sha256, "%s", audio);
    v->n_samples = n_samples;
    *out = v;
    return CT_OK;
}

ct_status ct_voice_load_memory(const ct_model *m, const void *buf, size_t len, ct_voice **out, char *err,
                               size_t errcap) {
    if (!out || (!buf && len)) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice load: NULL argument");
    *out = NULL;
    ct_st_file *f = NULL;
    char inner[512];
    ct_status st = ct_st_open_buffer(buf, len, &f, inner, sizeof inner);
    if (st != CT_OK) return ct_errf(err, errcap, CT_ERR_FORMAT, "corrupt voice file: %s", inner);
    ct_voice *v = NULL;
    st = parse(f, &v, err, errcap);
    ct_st_close(f);
    if (st != CT_OK) return st;
    if (m) {
        const char *mine = ct_model_hash(m);
        if (strcmp(v->model_hash, mine) != 0) {
            char name[64];
            ct_voice_model_name(m, name, sizeof name);
            st = ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice was made with another model: voice "
                         "model hash %s (%s), this model's hash %s (%s)", v->model_hash, v->model_name,
                         mine, name);
        } else {
            st = ct_voice_check(m, v->xvector_len, v->xvec, v->n_groups, v->ref_frames, v->codes,
                                v->ref_text, err, errcap);
        }
        if (st != CT_OK) {
            ct_voice_free(v);
            return st;
        }
    }
    *out = v;
    return CT_OK;
}

ct_status ct_voice_load(const ct_model *m, const char *path, ct_voice **out, char *err, size_t errcap) {
    if (!path || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice load: NULL argument");
    *out = NULL;
    char inner[768];
    char *buf = NULL;
    size_t len = 0;
    ct_status st = ct_read_file(path, CT_VOICE_MAX_FILE, &buf, &len, err, errcap); /* refuses a FIFO */
    if (st != CT_OK) return st;
    st = ct_voice_load_memory(m, buf, len, out, inner, sizeof inner);
    free(buf);
    if (st != CT_OK) ct_errf(err, errcap, st, "%s: %s", path, inner);
    return st;
}
