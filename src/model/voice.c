/* Cloned voices (ct_voice): made from parts or a reference clip, applied to a request, and the
   model hash that ties a voice file to its model (docs/CLONING.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/sha256.h"
#include "model/model_internal.h"
#include "model/voice_internal.h"

/* ---- model hash ---------------------------------------------------------------------- */

ct_status ct_model_hash_begin(ct_model *m, const char *dir, char *err, size_t errcap) {
    char path[4096], *buf = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/config.json", dir);
    ct_status st = ct_read_file(path, 1u << 24, &buf, &len, err, errcap);
    if (st != CT_OK) return st;
    ct_sha256_init(&m->hash_ctx);
    ct_sha256_update(&m->hash_ctx, buf, len);
    free(buf);
    if (pthread_mutex_init(&m->hash_mu, NULL) != 0)
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "model: cannot create the hash mutex");
    m->hash_mu_init = 1;
    return CT_OK;
}

/* Tensors in the hash: the speaker encoder and the talker's codec embedding (the tables a
   voice's x-vector and reference codes are read through), each as name, NUL, raw bytes, in
   name order. */
static int hashed_tensor(const char *name) {
    return !strncmp(name, "speaker_encoder.", 16) || !strcmp(name, "talker.model.codec_embedding.weight");
}

const char *ct_model_hash(const ct_model *cm) {
    if (!cm) return "";
    ct_model *m = (ct_model *)cm; /* the digest is a cache filled once */
    pthread_mutex_lock(&m->hash_mu);
    if (!m->hash_done) {
        for (size_t i = 0; i < ct_st_count(m->st); i++) {
            const ct_st_tensor *t = ct_st_at(m->st, i);
            if (!hashed_tensor(t->name)) continue;
            ct_sha256_update(&m->hash_ctx, t->name, strlen(t->name) + 1);
            ct_sha256_update(&m->hash_ctx, t->data, (size_t)t->nbytes);
        }
        uint8_t d[32];
        ct_sha256_final(&m->hash_ctx, d);
        ct_sha256_hex(d, m->hash);
        m->hash_done = 1;
    }
    pthread_mutex_unlock(&m->hash_mu);
    return m->hash;
}

void ct_voice_model_name(const ct_model *m, char *buf, size_t cap) {
    snprintf(buf, cap, "%s-%s", m->cfg.size_tag[0] ? m->cfg.size_tag : "unknown",
             ct_model_kind_name(m->cfg.kind));
}

/* ---- the voice object ---------------------------------------------------------------- */

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

ct_voice *ct_voice_alloc(int xvector_len, const float *xvec, int n_groups, int ref_frames,
                         const int32_t *codes, const char *ref_text, const char *model_name,
                         const char *created_by) {
    ct_voice *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->version = CT_VOICE_VERSION;
    v->xvector_len = xvector_len;
    v->xvec = malloc((size_t)xvector_len * sizeof(float));
    v->n_groups = ref_frames ? n_groups : 0;
    v->ref_frames = ref_frames;
    size_t nc = (size_t)ref_frames * (size_t)n_groups;
    if (ref_frames) v->codes = malloc(nc * sizeof(int32_t));
    v->ref_text = ref_frames ? dup_or_null(ref_text) : NULL;
    v->model_name = dup_or_null(model_name ? model_name : "");
    v->created_by = dup_or_null(created_by ? created_by : "");
    if (!v->xvec || (ref_frames && (!v->codes || !v->ref_text)) || !v->model_name || !v->created_by) {
        ct_voice_free(v);
        return NULL;
    }
    if (xvec) memcpy(v->xvec, xvec, (size_t)xvector_len * sizeof(float));
    if (ref_frames && codes) memcpy(v->codes, codes, nc * sizeof(int32_t));
    return v;
}

void ct_voice_free(ct_voice *v) {
    if (!v) return;
    free(v->xvec);
    free(v->codes);
    free(v->ref_text);
    free(v->model_name);
    free(v->created_by);
    free(v);
}

ct_status ct_voice_check(const ct_model *m, int xvector_len, const float *xvec, int n_groups,
                         int ref_frames, const int32_t *codes, const char *ref_text, char *err,
                         size_t errcap) {
    if (m->cfg.kind != CT_KIND_BASE)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "voice: cloned voices need a Base model "
                       "(this one is %s)", ct_model_kind_name(m->cfg.kind));
    if (xvector_len != m->cfg.talker.hidden)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: x-vector has %d values, the model's "
                       "talker hidden size is %d", xvector_len, m->cfg.talker.hidden);
    for (int i = 0; i < xvector_len; i++)
        if (!isfinite(xvec[i]))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: x-vector value %d is not finite", i);
    if (ref_frames < 0 || ref_frames > CT_VOICE_MAX_FRAMES)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: %d reference frames (0..%d)", ref_frames,
                       CT_VOICE_MAX_FRAMES);
    if (!ref_frames) return CT_OK;
    if (n_groups != m->cfg.n_groups)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: reference codes have %d groups per "
                       "frame, the model has %d", n_groups, m->cfg.n_groups);
    if (!codes) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: ref_frames %d without ref_codes", ref_frames);
    if (!ref_text || !ref_text[0])
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: reference codes need the reference "
                       "transcript (ref_text); without one make an x-vector-only voice");
    if (strlen(ref_text) > CT_VOICE_MAX_TEXT)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "voice: reference transcript over %d bytes", CT_VOICE_MAX_TEXT);
    for (size_t i = 0; i < (size_t)ref_frames * (size_t)n_groups; i++)
        if (codes[i] < 0 || codes[i] >= m->cfg.pred.vocab)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: reference code %d (frame %zu, group "
                           "%zu) outside the codebook [0, %d)", codes[i], i / (size_t)n_groups,
                           i % (size_t)n_groups, m->cfg.pred.vocab);
    return CT_OK;
}

ct_status ct_voice_from_parts(const ct_model *m, const float *xvec, int xvector_len,
                              const int32_t *ref_codes, int ref_frames, const char *ref_text,
                              ct_voice **out, char *err, size_t errcap) {
    if (!m || !xvec || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: NULL argument");
    *out = NULL;
    if (!ref_frames && ref_codes)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: ref_codes given with ref_frames 0");
    ct_status st = ct_voice_check(m, xvector_len, xvec, m->cfg.n_groups, ref_frames, ref_codes, ref_text,
                                  err, errcap);
    if (st != CT_OK) return st;
    char name[64];
    ct_voice_model_name(m, name, sizeof name);
    ct_voice *v = ct_voice_alloc(xvector_len, xvec, m->cfg.n_groups, ref_frames, ref_codes, ref_text,
                                 name, "codectalk " CT_VERSION_STRING);
    if (!v) return ct_errf(err, errcap, CT_ERR_NOMEM, "voice: out of memory");
    memcpy(v->model_hash, ct_model_hash(m), 65);
    *out = v;
    return CT_OK;
}

ct_voice_info ct_voice_get_info(const ct_voice *v) {
    ct_voice_info i;
    memset(&i, 0, sizeof i);
    if (!v) return i;
    i.version = v->version;
    i.xvector_len = v->xvector_len;
    i.ref_frames = v->ref_frames;
    i.n_groups = v->n_groups;
    i.ref_text = v->ref_text;
    i.model_hash = v->model_hash;
    i.model_name = v->model_name;
    i.audio_sha256 = v->audio_sha256;
    i.n_samples = v->n_samples;
    i.created_by = v->created_by;
    return i;
}

void ct_voice_apply(const ct_voice *v, ct_gen_params *g, int xvector_only) {
    if (!v || !g) return;
    g->xvector = v->xvec;
    g->xvector_len = v->xvector_len;
    int icl = !xvector_only && v->ref_frames > 0;
    g->ref_codes = icl ? v->codes : NULL;
    g->ref_frames = icl ? v->ref_frames : 0;
    g->ref_text = icl ? v->ref_text : NULL;
}

/* ---- from a reference clip ----------------------------------------------------------- */

ct_status ct_voice_create(const ct_model *m, const ct_speech_encoder *enc, const float *pcm, size_t n,
                          const char *ref_text, ct_voice **out, char *err, size_t errcap) {
    if (!m || !pcm || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "voice: NULL argument");
    *out = NULL;
    if (m->cfg.kind != CT_KIND_BASE)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "voice: cloned voices need a Base model "
                       "(this one is %s)", ct_model_kind_name(m->cfg.kind));
    const int H = m->cfg.talker.hidden, G = m->cfg.n_groups;
    int icl = enc && ref_text && ref_text[0];
    size_t cap = (n + 1919) / 1920;
    if (icl && cap > CT_VOICE_MAX_FRAMES)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "voice: a %.1f s clip is %zu reference frames (at most "
                       "%d)", (double)n / 24000.0, cap, CT_VOICE_MAX_FRAMES);
    float *xv = malloc(sizeof(float) * (size_t)H);
    int32_t *codes = icl ? malloc(sizeof(int32_t) * cap * (size_t)G) : NULL;
    ct_voice *v = NULL;
    int nf = 0;
    ct_status st = !xv || (icl && !codes) ? ct_errf(err, errcap, CT_ERR_NOMEM, "voice: out of memory") : CT_OK;
    if (st == CT_OK) st = ct_model_speaker_embed(m, pcm, n, xv, H, err, errcap);
    if (st == CT_OK && icl) st = ct_speech_encode(enc, pcm, n, codes, (int)cap, &nf, err, errcap);
    if (st == CT_OK) st = ct_voice_check(m, H, xv, G, nf, codes, icl ? ref_text : NULL, err, errcap);
    if (st == CT_OK) {
        char name[64];
        ct_voice_model_name(m, name, sizeof name);
        v = ct_voice_alloc(H, xv, G, nf, codes, icl ? ref_text : NULL, name, "codectalk " CT_VERSION_STRING);
        if (!v) st = ct_errf(err, errcap, CT_ERR_NOMEM, "voice: out of memory");
    }
    if (st == CT_OK) {
        memcpy(v->model_hash, ct_model_hash(m), 65);
        ct_sha256_buf(pcm, n * sizeof(float), v->audio_sha256);
        v->n_samples = n;
        *out = v;
    }
    free(xv);
    free(codes);
    return st;
}

int ct_voice_text_short(const ct_model *m, const char *text, double seconds, int *n_tokens) {
    size_t len = strlen(text), n = 0;
    int32_t *ids = malloc(sizeof(int32_t) * (len + 16));
    if (!ids || ct_tokenize(m, text, len, ids, len + 16, &n, NULL, 0) != CT_OK) n = 0;
    free(ids);
    if (n_tokens) *n_tokens = (int)n;
    return (double)n < CT_VOICE_MIN_TOKENS_PER_S * seconds;
}
