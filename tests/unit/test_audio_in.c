/* Reference audio in (audio/audio_in.h): each format round-trips from a file and from memory,
   stereo and 8 kHz clips are converted (with notes), and each refusal and warning fires. The
   test clips are written here with libsndfile. */
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audio/audio_in.h"
#include "core/fileio.h"
#include "ct_test.h"
#include "test_models.h"

#define PI 3.14159265358979323846

static char dir[1024];

/* Writes frames x ch interleaved samples to dir/name; returns the path (static per slot). */
static const char *write_clip(const char *name, int format, int rate, int ch, const float *x,
                              size_t frames) {
    static char paths[4][1200];
    static int next;
    char *p = paths[next++ & 3];
    snprintf(p, 1200, "%s/%s", dir, name);
    SF_INFO info = {0};
    info.samplerate = rate;
    info.channels = ch;
    info.format = format;
    SNDFILE *f = sf_open(p, SFM_WRITE, &info);
    if (!f) {
        fprintf(stderr, "sf_open(%s): %s\n", p, sf_strerror(NULL));
        return NULL;
    }
    sf_writef_float(f, x, (sf_count_t)frames);
    sf_close(f);
    return p;
}

/* amp * sin(2 pi f t) at rate for secs seconds (mono). */
static float *tone(int rate, double secs, double f, double amp, size_t *n) {
    *n = (size_t)(rate * secs + 0.5);
    float *x = malloc(*n * sizeof *x);
    for (size_t i = 0; i < *n; i++) x[i] = (float)(amp * sin(2 * PI * f * (double)i / rate));
    return x;
}

/* Best normalised correlation of a against b over lags in [-maxlag, maxlag]. */
static double best_corr(const float *a, size_t na, const float *b, size_t nb, int maxlag) {
    double best = -1;
    for (int lag = -maxlag; lag <= maxlag; lag += 1) {
        double ab = 0, aa = 0, bb = 0;
        for (size_t i = 4000; i + 4000 < na; i += 3) {
            long j = (long)i + lag;
            if (j < 0 || (size_t)j >= nb) continue;
            ab += (double)a[i] * b[j], aa += (double)a[i] * a[i], bb += (double)b[j] * b[j];
        }
        double c = ab / sqrt(aa * bb + 1e-30);
        if (c > best) best = c;
    }
    return best;
}

static int has_note(const ct_ref_audio *a, unsigned kind, const char *text) {
    if (!(a->note_mask & kind)) return 0;
    for (int i = 0; i < a->n_notes; i++)
        if (strstr(a->notes[i], text)) return 1;
    return 0;
}

static void test_formats(void) {
    size_t n;
    float *x = tone(24000, 2.0, 440.0, 0.5, &n);
    struct { const char *name; int fmt; int lossy; } f[] = {
        {"a.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 0},
        {"a.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 0},
        {"a.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 1},
        {"a.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 1},
    };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        const char *p = write_clip(f[k].name, f[k].fmt, 24000, 1, x, n);
        CHECKF(p != NULL, "%s", f[k].name);
        if (!p) continue;
        ct_ref_audio a, b;
        char err[512];
        ct_status st = ct_ref_audio_load_file(p, &a, err, sizeof err);
        CHECKF(st == CT_OK, "%s: %s", f[k].name, err);
        if (st != CT_OK) continue;
        CHECKF(a.src_rate == 24000 && a.src_channels == 1 && a.n_notes == 0 && a.note_mask == 0,
               "%s: rate %d ch %d notes %d", f[k].name, a.src_rate, a.src_channels, a.n_notes);
        if (!f[k].lossy) {
            CHECKF(a.n == n, "%s: %zu samples", f[k].name, a.n);
            double maxd = 0;
            for (size_t i = 0; i < n && i < a.n; i++) maxd = fmax(maxd, fabs(a.pcm[i] - x[i]));
            CHECKF(maxd <= 1.0 / 32768, "%s: max diff %g (PCM16 quantisation is 1/32768)", f[k].name, maxd);
        } else {
            /* lossy: length within one codec frame, the tone kept (best correlation) */
            CHECKF(a.n + 2304 >= n && a.n <= n + 2304, "%s: %zu samples", f[k].name, a.n);
            double c = best_corr(x, n, a.pcm, a.n, 1200);
            CHECKF(c > 0.98, "%s: correlation %f", f[k].name, c);
        }
        /* the memory entry point decodes the same bytes to the same samples */
        char *buf = NULL;
        size_t len = 0;
        CHECK(ct_read_file(p, 1u << 24, &buf, &len, err, sizeof err) == CT_OK);
        st = ct_ref_audio_load_memory(buf, len, f[k].name, &b, err, sizeof err);
        CHECKF(st == CT_OK, "%s from memory: %s", f[k].name, err);
        if (st == CT_OK) {
            CHECKF(b.n == a.n && memcmp(a.pcm, b.pcm, a.n * sizeof(float)) == 0,
                   "%s: memory and file decode differ (%zu vs %zu)", f[k].name, b.n, a.n);
            ct_ref_audio_free(&b);
        }
        free(buf);
        ct_ref_audio_free(&a);
        CHECK(a.pcm == NULL && a.n == 0);
    }
    free(x);
}

static void test_conversions(void) {
    char err[512];
    ct_ref_audio a;
    /* stereo 48 kHz: L = tone, R = -0.5 tone -> mean 0.25 tone, resampled to 24 kHz */
    size_t n;
    float *x = tone(48000, 1.5, 300.0, 0.8, &n);
    float *st2 = malloc(2 * n * sizeof *st2);
    for (size_t i = 0; i < n; i++) st2[2 * i] = x[i], st2[2 * i + 1] = -0.5f * x[i];
    const char *p = write_clip("st.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 48000, 2, st2, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK);
    CHECKF(a.n == (n + 1) / 2, "%zu samples from %zu at 48 kHz", a.n, n);
    CHECK(a.src_channels == 2 && a.src_rate == 48000);
    CHECKF(has_note(&a, CT_REF_NOTE_DOWNMIXED, "2 channels averaged to mono"), "%s", a.notes[0]);
    CHECK(has_note(&a, CT_REF_NOTE_RESAMPLED, "resampled from 48000 Hz to 24000 Hz"));
    CHECK(!has_note(&a, CT_REF_NOTE_RESAMPLED, "narrow-band"));
    double maxd = 0;
    for (size_t i = 2000; i + 2000 < a.n; i++) {
        double want = 0.25 * 0.8 * sin(2 * PI * 300.0 * (double)i / 24000);
        maxd = fmax(maxd, fabs(a.pcm[i] - want));
    }
    CHECKF(maxd < 1e-3, "downmix+resample max error %g", maxd);
    ct_ref_audio_free(&a);
    free(st2);
    free(x);

    /* 8 kHz telephone clip: 3x the samples, a narrow-band note */
    x = tone(8000, 2.0, 500.0, 0.5, &n);
    p = write_clip("tel.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK);
    CHECKF(a.n == 3 * n, "%zu samples from %zu at 8 kHz", a.n, n);
    CHECK(a.n_notes == 1 && has_note(&a, CT_REF_NOTE_RESAMPLED, "resampled from 8000 Hz to 24000 Hz (a narrow-band"));
    ct_ref_audio_free(&a);
    free(x);

    /* 31 s -> the first 30 s, a note naming both lengths */
    x = tone(24000, 31.0, 200.0, 0.3, &n);
    p = write_clip("long.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 24000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK);
    CHECKF(a.n == 30 * 24000, "%zu samples", a.n);
    CHECKF(has_note(&a, CT_REF_NOTE_TRIMMED, "longer than 30 s (31.0 s)"), "%s", a.notes[0]);
    CHECK(fabs(a.src_seconds - 31.0) < 1e-9);
    ct_ref_audio_free(&a);
    /* exactly 30 s: kept whole, no note */
    p = write_clip("thirty.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, x, 30 * 24000);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK);
    CHECK(a.n == 30 * 24000 && a.n_notes == 0);
    ct_ref_audio_free(&a);
    free(x);
}

static void test_refusals(void) {
    char err[512];
    ct_ref_audio a;
    size_t n;
    /* 0.9 s: refused; 1.0 s: accepted */
    float *x = tone(24000, 1.0, 440.0, 0.5, &n);
    const char *p = write_clip("short.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, x, 21600);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "short.wav") && strstr(err, "0.90 s") && strstr(err, "at least 1 s"), "%s", err);
    CHECK(a.pcm == NULL);
    p = write_clip("one.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK && a.n == 24000);
    ct_ref_audio_free(&a);
    free(x);

    /* digital silence (zeros, and a -80 dBFS tone) refused; a -60 dBFS tone accepted */
    x = tone(24000, 2.0, 440.0, 0.0, &n);
    p = write_clip("zero.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "zero.wav") && strstr(err, "digital silence"), "%s", err);
    free(x);
    x = tone(24000, 2.0, 440.0, 1e-4, &n);
    p = write_clip("quiet.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "digital silence (peak -80.0 dBFS"), "%s", err);
    free(x);
    x = tone(24000, 2.0, 440.0, 1e-3, &n);
    p = write_clip("soft.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK && a.n_notes == 0);
    ct_ref_audio_free(&a);
    free(x);

    /* clipping: a tone driven to 2x full scale, stored clipped; a 0.9 peak tone is not */
    x = tone(24000, 2.0, 440.0, 2.0, &n);
    for (size_t i = 0; i < n; i++) x[i] = fmaxf(-1.0f, fminf(1.0f, x[i]));
    p = write_clip("clip.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK);
    CHECKF(a.n_notes == 1 && has_note(&a, CT_REF_NOTE_CLIPPING, "at full scale (clipping)"), "%d", a.n_notes);
    ct_ref_audio_free(&a);
    free(x);
    x = tone(24000, 2.0, 440.0, 0.9, &n);
    p = write_clip("loud.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK && a.note_mask == 0);
    ct_ref_audio_free(&a);
    free(x);

    /* unreadable: not audio, missing, empty, truncated header; from a file and from memory */
    char path[1200];
    snprintf(path, sizeof path, "%s/notaudio.wav", dir);
    FILE *f = fopen(path, "wb");
    fputs("this is plain text, not a RIFF header at all, long enough to be sniffed", f);
    fclose(f);
    CHECK(ct_ref_audio_load_file(path, &a, err, sizeof err) == CT_ERR_IO);
    CHECKF(strstr(err, path) && strstr(err, "cannot read audio: ") &&
           strlen(strstr(err, "cannot read audio: ")) > strlen("cannot read audio: ") + 3, "%s", err);
    snprintf(path, sizeof path, "%s/missing.flac", dir);
    CHECK(ct_ref_audio_load_file(path, &a, err, sizeof err) == CT_ERR_IO);
    CHECKF(strstr(err, "missing.flac: cannot read audio: "), "%s", err);
    const char junk[] = "RIFF\x24\x00\x00\x00WAVEfmt ";
    CHECK(ct_ref_audio_load_memory(junk, sizeof junk - 1, "upload.wav", &a, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "upload.wav: cannot read audio: "), "%s", err);
    CHECK(ct_ref_audio_load_memory(junk, 0, NULL, &a, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "reference audio: cannot read audio: empty"), "%s", err);
    /* an unsupported rate */
    x = tone(2000, 2.0, 100.0, 0.5, &n);
    p = write_clip("slow.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 2000, 1, x, n);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_ERR_UNSUPPORTED);
    CHECKF(strstr(err, "2000 Hz, 1 channel(s) (4000-192000 Hz, 1-32 channels are read)"), "%s", err);
    free(x);
    /* 33 channels: refused; 32: averaged */
    x = calloc((size_t)24000 * 33, sizeof *x);
    for (size_t i = 0; i < (size_t)24000 * 33; i++) x[i] = (float)(0.3 * sin(0.01 * (double)i));
    p = write_clip("ch33.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 33, x, 24000);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_ERR_UNSUPPORTED);
    CHECKF(strstr(err, "33 channel(s)"), "%s", err);
    p = write_clip("ch32.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 32, x, 24000);
    CHECK(ct_ref_audio_load_file(p, &a, err, sizeof err) == CT_OK && a.n == 24000);
    CHECK(has_note(&a, CT_REF_NOTE_DOWNMIXED, "32 channels averaged to mono"));
    ct_ref_audio_free(&a);
    free(x);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/test_audio_in.d", CT_BIN_DIR);
    ct_test_rm_rf(dir);
    mkdir(dir, 0755);
    test_formats();
    test_conversions();
    test_refusals();
    ct_test_rm_rf(dir);
    return ct_test_finish();
}
