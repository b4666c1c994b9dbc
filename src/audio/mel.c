/* The speaker encoder's log-mel front end (mel.h): FFTW3f STFT, librosa Slaney filterbank. */
#include "audio/mel.h"

#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conv.h"
#include "kernels/cpu.h"

/* FFTW's planner (plan creation and destruction) is not thread-safe; execution of a made plan
   on new arrays (fftwf_execute_dft_r2c) is. */
static pthread_mutex_t plan_mu = PTHREAD_MUTEX_INITIALIZER;

struct ct_mel {
    fftwf_plan plan;          /* r2c, CT_MEL_NFFT, planned on fftwf_malloc'd arrays */
    float window[CT_MEL_NFFT];/* periodic Hann */
    ct_cv_packed fb;          /* filterbank [CT_MEL_BINS][513] packed as a k=1 linear */
};

/* Slaney mel scale (librosa hz_to_mel / mel_to_hz with htk=False). */
static const double F_SP = 200.0 / 3, MIN_LOG_HZ = 1000.0, MIN_LOG_MEL = 1000.0 / (200.0 / 3);

static double hz_to_mel(double f) {
    const double logstep = log(6.4) / 27.0;
    return f >= MIN_LOG_HZ ? MIN_LOG_MEL + log(f / MIN_LOG_HZ) / logstep : f / F_SP;
}

static double mel_to_hz(double m) {
    const double logstep = log(6.4) / 27.0;
    return m >= MIN_LOG_MEL ? MIN_LOG_HZ * exp(logstep * (m - MIN_LOG_MEL)) : F_SP * m;
}

void ct_mel_filterbank(float *fb) {
    enum { NM = CT_MEL_BINS, NS = CT_MEL_NSPEC };
    double mel_f[NM + 2], fftf[NS];
    /* np.fft.rfftfreq(n_fft, 1/sr): k * (1 / (n * d)) */
    const double val = 1.0 / ((double)CT_MEL_NFFT * (1.0 / CT_MEL_RATE));
    for (int k = 0; k < NS; k++) fftf[k] = (double)k * val;
    /* np.linspace(min_mel, max_mel, NM + 2): i * step + start, the last exactly stop */
    const double lo = hz_to_mel(0.0), hi = hz_to_mel(CT_MEL_FMAX), step = (hi - lo) / (NM + 1);
    for (int i = 0; i < NM + 2; i++) mel_f[i] = mel_to_hz(i == NM + 1 ? hi : (double)i * step + lo);
    for (int i = 0; i < NM; i++) {
        const double d0 = mel_f[i + 1] - mel_f[i], d1 = mel_f[i + 2] - mel_f[i + 1];
        const double enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        for (int k = 0; k < NS; k++) {
            double lower = -(mel_f[i] - fftf[k]) / d0, upper = (mel_f[i + 2] - fftf[k]) / d1;
            double w = lower < upper ? lower : upper;
            float wf = (float)(w > 0.0 ? w : 0.0); /* stored f32, then *= enorm in double */
            fb[(size_t)i * NS + k] = (float)((double)wf * enorm);
        }
    }
}

ct_status ct_mel_create(ct_mel **out, char *err, size_t errcap) {
    *out = NULL;
    ct_mel *m = calloc(1, sizeof *m);
    float *fb = malloc((size_t)CT_MEL_BINS * CT_MEL_NSPEC * sizeof *fb);
    if (!m || !fb || ct_cv_packed_alloc(&m->fb, 1, CT_MEL_NSPEC, CT_MEL_BINS) != 0) {
        free(fb);
        if (m) ct_cv_packed_free(&m->fb);
        free(m);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "mel front end: out of memory");
    }
    ct_mel_filterbank(fb);
    ct_cv_pack_linear(&m->fb, fb);
    free(fb);
    /* torch.hann_window(1024) (periodic), in its f32 arithmetic */
    const float scale = (float)(2.0 * 3.14159265358979323846 / CT_MEL_NFFT);
    for (int i = 0; i < CT_MEL_NFFT; i++) m->window[i] = cosf((float)i * scale) * -0.5f + 0.5f;
    float *in = fftwf_malloc(CT_MEL_NFFT * sizeof(float));
    fftwf_complex *spec = fftwf_malloc(CT_MEL_NSPEC * sizeof(fftwf_complex));
    if (in && spec) {
        pthread_mutex_lock(&plan_mu);
        m->plan = fftwf_plan_dft_r2c_1d(CT_MEL_NFFT, in, spec, FFTW_ESTIMATE);
        pthread_mutex_unlock(&plan_mu);
    }
    fftwf_free(in);
    fftwf_free(spec);
    if (!m->plan) {
        ct_mel_free(m);
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "mel front end: FFTW made no plan for a "
                       "%d-point real FFT", CT_MEL_NFFT);
    }
    *out = m;
    return CT_OK;
}

void ct_mel_free(ct_mel *m) {
    if (!m) return;
    if (m->plan) {
        pthread_mutex_lock(&plan_mu);
        fftwf_destroy_plan(m->plan);
        pthread_mutex_unlock(&plan_mu);
    }
    ct_cv_packed_free(&m->fb);
    free(m);
}

int ct_mel_frames(size_t n) {
    if (n <= CT_MEL_PAD) return 0;
    return (int)((n + 2 * CT_MEL_PAD - CT_MEL_NFFT) / CT_MEL_HOP) + 1;
}

ct_status ct_mel_compute(const ct_mel *m, const float *pcm, size_t n, float *out, char *err,
                         size_t errcap) {
    const int T = ct_mel_frames(n);
    if (!m || !pcm || !out || T <= 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "mel: %zu samples (more than %d needed)",
                       n, CT_MEL_PAD);
    const size_t np = n + 2 * CT_MEL_PAD;
    float *pad = malloc(np * sizeof *pad);
    float *mag = malloc((size_t)T * CT_MEL_NSPEC * sizeof *mag);
    float *in = fftwf_malloc(CT_MEL_NFFT * sizeof(float));
    fftwf_complex *spec = fftwf_malloc(CT_MEL_NSPEC * sizeof(fftwf_complex));
    ct_status st = CT_OK;
    if (!pad || !mag || !in || !spec) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "mel: out of memory for %zu samples", n);
        goto done;
    }
    /* reflect pad (no edge repeat), as torch's F.pad(mode="reflect") */
    memcpy(pad + CT_MEL_PAD, pcm, n * sizeof *pad);
    for (int i = 1; i <= CT_MEL_PAD; i++) {
        pad[CT_MEL_PAD - i] = pcm[i];
        pad[CT_MEL_PAD + n - 1 + i] = pcm[n - 1 - i];
    }
    for (int t = 0; t < T; t++) {
        const float *x = pad + (size_t)t * CT_MEL_HOP;
        for (int i = 0; i < CT_MEL_NFFT; i++) in[i] = x[i] * m->window[i];
        fftwf_execute_dft_r2c(m->plan, in, spec);
        float *row = mag + (size_t)t * CT_MEL_NSPEC;
        for (int k = 0; k < CT_MEL_NSPEC; k++)
            row[k] = sqrtf(spec[k][0] * spec[k][0] + spec[k][1] * spec[k][1] + 1e-9f);
    }
    static const int tap0 = 0, off0 = 0;
    ct_cv_gemm_args a = {out, CT_MEL_BINS, mag, CT_MEL_NSPEC, T, &m->fb, 1, &tap0, &off0, NULL, 0};
    ct_kernels()->cv_gemm(&a, 0, m->fb.nb, 0, T);
    for (size_t i = 0; i < (size_t)T * CT_MEL_BINS; i++) out[i] = logf(fmaxf(out[i], 1e-5f));
done:
    free(pad);
    free(mag);
    fftwf_free(in);
    fftwf_free(spec);
    return st;
}
