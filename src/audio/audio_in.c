/* Reference audio in: libsndfile decode (file or memory), downmix, libsoxr resample to 24 kHz,
   the reference checks (audio_in.h). */
#include "audio/audio_in.h"

#include <math.h>
#include <pthread.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_RATE 4000    /* below: refused as unsupported */
#define MAX_RATE 192000  /* above: refused as unsupported */
#define MAX_CHANNELS 32  /* more: refused (bounds the decode work of 30 s to 184 M samples) */

/* libsndfile keeps the reason for a failed open in one process-wide slot (sf_strerror(NULL)):
   opens and that read are serialised so that concurrent loads name their own reason. */
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- memory source for sf_open_virtual ------------------------------------------------ */

typedef struct {
    const unsigned char *p;
    sf_count_t len, pos;
} membuf;

static sf_count_t mem_len(void *u) { return ((membuf *)u)->len; }

static sf_count_t mem_seek(sf_count_t off, int whence, void *u) {
    membuf *m = u;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->len;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return -1;
    if (off > m->len - base || off < -base) return -1; /* before the start or past the end */
    m->pos = base + off;
    return m->pos;
}

static sf_count_t mem_read(void *dst, sf_count_t count, void *u) {
    membuf *m = u;
    if (count <= 0 || m->pos >= m->len) return 0;
    sf_count_t n = count < m->len - m->pos ? count : m->len - m->pos;
    memcpy(dst, m->p + m->pos, (size_t)n);
    m->pos += n;
    return n;
}

static sf_count_t mem_write(const void *src, sf_count_t count, void *u) {
    (void)src, (void)count, (void)u;
    return 0;
}

static sf_count_t mem_tell(void *u) { return ((membuf *)u)->pos; }

/* ---- notes ----------------------------------------------------------------------------- */

static void add_note(ct_ref_audio *a, ct_ref_note_kind k, const char *name, const char *body) {
    if (a->n_notes >= CT_REF_MAX_NOTES) return;
    /* a long name truncates the note (the return value tells, and is not needed) */
    if (snprintf(a->notes[a->n_notes], CT_REF_NOTE_LEN, "%s: %s", name, body) < 0)
        a->notes[a->n_notes][0] = '\0';
    a->n_notes++;
    a->note_mask |= (unsigned)k;
}

/* ---- resampling ------------------------------------------------------------------------ */

ct_status ct_ref_resample(const float *in, size_t n_in, int in_rate, float **out, size_t *n_out,
                          char *err, size_t errcap) {
    *out = NULL;
    *n_out = 0;
    const double ir = in_rate, orate = CT_REF_RATE;
    /* librosa.resample: n_samples = ceil(n * ratio); python-soxr's buffer and chunking */
    const size_t target = (size_t)ceil((double)n_in * (orate / ir));
    const size_t olen = (size_t)((double)n_in * orate / ir) + 1;
    const size_t chunk = (size_t)(48000.0 * ir / orate);
    const size_t cap = olen > target ? olen : target;
    float *y = calloc(cap ? cap : 1, sizeof *y);
    if (!y) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory resampling %zu samples", n_in);
    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    soxr_t s = soxr_create(ir, orate, 1, &e, &io, &q, NULL);
    if (e || !s) {
        free(y);
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "libsoxr: %s", e ? e : "soxr_create failed");
    }
    size_t pos = 0, done = 0;
    for (size_t i = 0; i < n_in && !e; i += chunk) {
        size_t len = n_in - i < chunk ? n_in - i : chunk;
        e = soxr_process(s, in + i, len, NULL, y + pos, olen - pos, &done);
        pos += done;
    }
    if (!e) {
        e = soxr_process(s, NULL, 0, NULL, y + pos, olen - pos, &done); /* flush */
        pos += done;
    }
    soxr_delete(s);
    if (e) {
        free(y);
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "libsoxr: %s", e);
    }
    /* librosa.util.fix_length: cut, or pad with zeros (calloc) */
    *out = y;
    *n_out = target;
    return CT_OK;
}

/* ---- loading --------------------------------------------------------------------------- */

static ct_status load(SNDFILE *f, const SF_INFO *info, const char *name, ct_ref_audio *out,
                      char *err, size_t errcap) {
    const int ch = info->channels, rate = info->samplerate;
    if (ch < 1 || ch > MAX_CHANNELS || rate < MIN_RATE || rate > MAX_RATE)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: unsupported audio: %d Hz, %d "
                       "channel(s) (%d-%d Hz, 1-%d channels are read)", name, rate, ch, MIN_RATE,
                       MAX_RATE, MAX_CHANNELS);
    const size_t limit = (size_t)CT_REF_MAX_SECONDS * (size_t)rate;
    const size_t step = (size_t)(65536 / ch > 0 ? 65536 / ch : 1);
    float *inter = malloc(step * (size_t)ch * sizeof *inter);
    float *mono = NULL;
    size_t n = 0, cap = 0, clipped = 0;
    float peak = 0.0f;
    int trimmed = 0;
    ct_status st = CT_OK;
    if (!inter) return ct_errf(err, errcap, CT_ERR_NOMEM, "%s: out of memory", name);
    for (;;) {
        size_t want = n < limit ? (limit - n < step ? limit - n : step) : 1;
        sf_count_t got = sf_readf_float(f, inter, (sf_count_t)want);
        if (got <= 0) break;
        if (n >= limit) { /* one frame past the limit: the clip is longer */
            trimmed = 1;
            break;
        }
        if (n + (size_t)got > cap) {
            size_t nc = cap ? cap * 2 : (size_t)rate * 4;
            while (nc < n + (size_t)got) nc *= 2;
            if (nc > limit) nc = limit;
            float *m = realloc(mono, nc * sizeof *m);
            if (!m) {
                st = ct_errf(err, errcap, CT_ERR_NOMEM, "%s: out of memory", name);
                goto done;
            }
            mono = m, cap = nc;
        }
        for (sf_count_t t = 0; t < got; t++) {
            const float *x = inter + (size_t)t * (size_t)ch;
            float s = 0.0f;
            for (int c = 0; c < ch; c++) {
                float v = x[c], av = fabsf(v);
                if (!(av <= 1e30f)) { /* NaN or inf in a float file */
                    st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: sample %zu is not a finite "
                                 "number", name, n + (size_t)t);
                    goto done;
                }
                if (av > peak) peak = av;
                if (av >= CT_REF_CLIP_LEVEL) clipped++;
                s += v;
            }
            mono[n + (size_t)t] = ch == 1 ? s : s / (float)ch; /* librosa.to_mono: the mean */
        }
        n += (size_t)got;
    }
    if (sf_error(f) != SF_ERR_NO_ERROR) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: cannot decode: %s", name, sf_strerror(f));
        goto done;
    }
    const double secs = (double)n / rate;
    if (n < (size_t)CT_REF_MIN_SECONDS * (size_t)rate) {
        st = ct_errf(err, errcap, CT_ERR_INVALID_ARG, "%s: the clip is %.2f s long; a reference "
                     "needs at least %d s of speech", name, secs, CT_REF_MIN_SECONDS);
        goto done;
    }
    if (peak < CT_REF_SILENCE_PEAK) {
        st = ct_errf(err, errcap, CT_ERR_INVALID_ARG, "%s: the clip is digital silence (peak "
                     "%.1f dBFS, below -70 dBFS)", name, peak > 0 ? 20.0 * log10(peak) : -INFINITY);
        goto done;
    }
    memset(out, 0, sizeof *out);
    out->src_rate = rate;
    out->src_channels = ch;
    out->src_seconds = secs;
    char body[192];
    if (trimmed) {
        /* info->frames is the decoder's count (an estimate for some MP3s); at least the limit */
        double full = info->frames > (sf_count_t)n ? (double)info->frames / rate : secs;
        out->src_seconds = full;
        snprintf(body, sizeof body, "the clip is longer than %d s (%.1f s); only its first %d s "
                 "are used", CT_REF_MAX_SECONDS, full, CT_REF_MAX_SECONDS);
        add_note(out, CT_REF_NOTE_TRIMMED, name, body);
    }
    if (ch > 1) {
        snprintf(body, sizeof body, "%d channels averaged to mono", ch);
        add_note(out, CT_REF_NOTE_DOWNMIXED, name, body);
    }
    if (rate != CT_REF_RATE) {
        snprintf(body, sizeof body, "resampled from %d Hz to %d Hz%s", rate, CT_REF_RATE,
                 rate < 16000 ? " (a narrow-band source: the clone inherits its muffled sound)" : "");
        add_note(out, CT_REF_NOTE_RESAMPLED, name, body);
    }
    const double cf = (double)clipped / ((double)n * ch);
    if (cf > CT_REF_CLIP_FRACTION) {
        snprintf(body, sizeof body, "%.2f %% of the samples are at full scale (clipping); the "
                 "clone will copy the distortion", 100.0 * cf);
        add_note(out, CT_REF_NOTE_CLIPPING, name, body);
    }
    if (rate == CT_REF_RATE) {
        out->pcm = mono;
        out->n = n;
        mono = NULL;
    } else {
        st = ct_ref_resample(mono, n, rate, &out->pcm, &out->n, err, errcap);
        if (st != CT_OK) memset(out, 0, sizeof *out);
    }
done:
    free(inter);
    free(mono);
    return st;
}

ct_status ct_ref_audio_load_file(const char *path, ct_ref_audio *out, char *err, size_t errcap) {
    if (!path || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "reference audio: NULL argument");
    memset(out, 0, sizeof *out);
    SF_INFO info;
    memset(&info, 0, sizeof info);
    pthread_mutex_lock(&open_mu);
    SNDFILE *f = sf_open(path, SFM_READ, &info);
    char why[256];
    if (!f) snprintf(why, sizeof why, "%s", sf_strerror(NULL));
    pthread_mutex_unlock(&open_mu);
    if (!f) return ct_errf(err, errcap, CT_ERR_IO, "%s: cannot read audio: %s", path, why);
    ct_status st = load(f, &info, path, out, err, errcap);
    sf_close(f);
    return st;
}

ct_status ct_ref_audio_load_memory(const void *buf, size_t len, const char *name,
                                   ct_ref_audio *out, char *err, size_t errcap) {
    if (!name) name = "reference audio";
    if ((!buf && len) || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "%s: NULL argument", name);
    memset(out, 0, sizeof *out);
    if (len == 0) return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: cannot read audio: empty", name);
    membuf m = {buf, (sf_count_t)len, 0};
    SF_VIRTUAL_IO io = {mem_len, mem_seek, mem_read, mem_write, mem_tell};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    pthread_mutex_lock(&open_mu);
    SNDFILE *f = sf_open_virtual(&io, SFM_READ, &info, &m);
    char why[256];
    if (!f) snprintf(why, sizeof why, "%s", sf_strerror(NULL));
    pthread_mutex_unlock(&open_mu);
    if (!f) return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: cannot read audio: %s", name, why);
    ct_status st = load(f, &info, name, out, err, errcap);
    sf_close(f);
    return st;
}

void ct_ref_audio_free(ct_ref_audio *a) {
    if (!a) return;
    free(a->pcm);
    memset(a, 0, sizeof *a);
}
