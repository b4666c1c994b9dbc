/* Compressed audio out (src/audio/encode.c): each format encodes a tone into memory as it comes
   (bytes before the end), decodes back with FFmpeg to the same length and the same tone (FLAC:
   the same 16-bit samples), a refusing sink fails the stream, and the name/extension tables. */
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/encode.h"
#include "ct_test.h"

typedef struct {
    unsigned char *b;
    size_t n, cap, pos;
    int refuse_after; /* > 0: refuse the write after this many calls */
    int calls;
} mem;

static int mem_sink(void *ud, const uint8_t *buf, size_t n) {
    mem *m = ud;
    if (m->refuse_after && ++m->calls > m->refuse_after) return -1;
    if (m->n + n > m->cap) {
        size_t c = (m->n + n) * 2;
        unsigned char *nb = realloc(m->b, c);
        if (!nb) return -1;
        m->b = nb;
        m->cap = c;
    }
    memcpy(m->b + m->n, buf, n);
    m->n += n;
    return 0;
}

static int mem_read(void *opaque, uint8_t *buf, int n) {
    mem *m = opaque;
    size_t left = m->n - m->pos;
    if (left == 0) return AVERROR_EOF;
    if ((size_t)n > left) n = (int)left;
    memcpy(buf, m->b + m->pos, (size_t)n);
    m->pos += (size_t)n;
    return n;
}

/* Decodes m with FFmpeg into mono floats (*out, malloc'd); returns the count or -1. */
static long decode(mem *m, float **out, int *rate) {
    AVFormatContext *ic = avformat_alloc_context();
    unsigned char *iob = av_malloc(4096);
    AVIOContext *io = avio_alloc_context(iob, 4096, 0, m, mem_read, NULL, NULL);
    long total = -1;
    *out = NULL;
    ic->pb = io;
    m->pos = 0;
    AVCodecContext *dc = NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *fr = av_frame_alloc();
    if (avformat_open_input(&ic, NULL, NULL, NULL) < 0 || avformat_find_stream_info(ic, NULL) < 0) goto done;
    const AVCodec *c = avcodec_find_decoder(ic->streams[0]->codecpar->codec_id);
    dc = avcodec_alloc_context3(c);
    if (!c || avcodec_parameters_to_context(dc, ic->streams[0]->codecpar) < 0 || avcodec_open2(dc, c, NULL) < 0)
        goto done;
    size_t cap = 1 << 16, n = 0;
    float *o = malloc(sizeof(float) * cap);
    for (int eof = 0; !eof;) {
        int rc = av_read_frame(ic, pkt);
        if (rc < 0) eof = 1;
        avcodec_send_packet(dc, eof ? NULL : pkt);
        av_packet_unref(pkt);
        while (avcodec_receive_frame(dc, fr) == 0) {
            for (int i = 0; i < fr->nb_samples; i++) {
                float x;
                switch (fr->format) {
                case AV_SAMPLE_FMT_FLT:
                case AV_SAMPLE_FMT_FLTP: x = ((float *)fr->data[0])[i]; break;
                case AV_SAMPLE_FMT_S16:
                case AV_SAMPLE_FMT_S16P: x = ((int16_t *)fr->data[0])[i] / 32767.0f; break;
                default: x = (float)(((int32_t *)fr->data[0])[i] / 2147483647.0); break;
                }
                if (n == cap) o = realloc(o, sizeof(float) * (cap *= 2));
                o[n++] = x;
            }
        }
    }
    *rate = dc->sample_rate;
    *out = o;
    total = (long)n;
done:
    av_frame_free(&fr);
    av_packet_free(&pkt);
    avcodec_free_context(&dc);
    avformat_close_input(&ic);
    if (io) {
        av_freep(&io->buffer);
        avio_context_free(&io);
    }
    return total;
}

#define RATE 24000
#define N (RATE * 6 / 5) /* 1.2 s */

static void test_formats(void) {
    float *tone = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) tone[i] = 0.5f * sinf(2.0f * 3.14159265f * 440.0f * (float)i / RATE);
    static const int F[] = {CT_AF_MP3, CT_AF_OPUS, CT_AF_AAC, CT_AF_FLAC};
    for (size_t k = 0; k < sizeof F / sizeof F[0]; k++) {
        mem m = {0};
        char err[256];
        ct_audio_enc *e = NULL;
        CHECKF(ct_audio_enc_open(F[k], RATE, mem_sink, &m, &e, err, sizeof err) == CT_OK, "%s: %s",
               ct_audio_format_name(F[k]), err);
        if (!e) continue;
        size_t before_end = 0;
        for (int i = 0; i < N; i += 1920) { /* 80 ms pushes, as the engine releases them */
            int n = N - i < 1920 ? N - i : 1920;
            CHECK(ct_audio_enc_write(e, tone + i, (size_t)n, err, sizeof err) == CT_OK);
        }
        before_end = m.n;
        CHECKF(ct_audio_enc_finish(e, err, sizeof err) == CT_OK, "%s", err);
        ct_audio_enc_free(e);
        CHECKF(before_end > 0 && m.n > before_end, "%s: %zu bytes before the end, %zu after",
               ct_audio_format_name(F[k]), before_end, m.n);
        float *dec = NULL;
        int rate = 0;
        long nd = decode(&m, &dec, &rate);
        if (F[k] == CT_AF_OPUS && rate == 48000 && nd > 0) { /* Opus decodes at 48 kHz: back to 24 kHz */
            for (long i = 0; i < nd / 2; i++) dec[i] = dec[2 * i];
            nd /= 2;
            rate = RATE;
        }
        /* the length: the tone plus at most the codec's priming and its last frame */
        CHECKF(rate == RATE && nd >= N - 8 && nd <= N + 2400, "%s: %ld samples at %d Hz", ct_audio_format_name(F[k]),
               nd, rate);
        if (F[k] == CT_AF_FLAC) { /* lossless: the 16-bit samples exactly */
            int same = nd == N;
            for (long i = 0; same && i < N; i++) same = dec[i] == (float)(int16_t)(tone[i] * 32767.0f) / 32767.0f;
            CHECK(same);
        } else if (nd > 0) { /* lossy: the same tone, energy within 2 dB over the middle */
            double ein = 0, eout = 0;
            for (long i = N / 4; i < 3 * N / 4; i++) {
                ein += (double)tone[i] * tone[i];
                eout += (double)dec[i] * dec[i];
            }
            CHECKF(eout > ein * 0.63 && eout < ein * 1.58, "%s: energy %.3f vs %.3f", ct_audio_format_name(F[k]),
                   eout, ein);
        }
        free(dec);
        free(m.b);
    }
    /* a sink that stops taking bytes fails the stream, and every later call */
    mem m = {0};
    m.refuse_after = 1;
    char err[256];
    ct_audio_enc *e = NULL;
    ct_status st = ct_audio_enc_open(CT_AF_MP3, RATE, mem_sink, &m, &e, err, sizeof err);
    if (st == CT_OK) {
        for (int i = 0; i < N && st == CT_OK; i += 1920) st = ct_audio_enc_write(e, tone + i, 1920, err, sizeof err);
        if (st == CT_OK) st = ct_audio_enc_finish(e, err, sizeof err);
    }
    CHECKF(st == CT_ERR_IO && strstr(err, "refused"), "%d %s", st, err);
    CHECK(!e || ct_audio_enc_write(e, tone, 10, err, sizeof err) == CT_ERR_IO);
    ct_audio_enc_free(e);
    free(m.b);
    /* WAV and PCM are not this module's; a rate a codec cannot take is named */
    CHECK(ct_audio_enc_open(CT_AF_WAV, RATE, mem_sink, &m, &e, err, sizeof err) == CT_ERR_UNSUPPORTED && !e);
    CHECK(ct_audio_enc_open(CT_AF_OPUS, 44100, mem_sink, &m, &e, err, sizeof err) == CT_ERR_UNSUPPORTED &&
          strstr(err, "44100"));
    free(tone);
}

static void test_names(void) {
    CHECK(ct_audio_format_parse("mp3") == CT_AF_MP3 && ct_audio_format_parse("opus") == CT_AF_OPUS &&
          ct_audio_format_parse("aac") == CT_AF_AAC && ct_audio_format_parse("flac") == CT_AF_FLAC &&
          ct_audio_format_parse("wav") == CT_AF_WAV && ct_audio_format_parse("pcm") == CT_AF_PCM &&
          ct_audio_format_parse("ogg") == -1 && ct_audio_format_parse(NULL) == -1);
    CHECK(ct_audio_format_from_path("a/b.MP3") == CT_AF_MP3 && ct_audio_format_from_path("x.ogg") == CT_AF_OPUS &&
          ct_audio_format_from_path("x.raw") == CT_AF_PCM && ct_audio_format_from_path("x.wav") == CT_AF_WAV &&
          ct_audio_format_from_path("x.flac") == CT_AF_FLAC && ct_audio_format_from_path("x.mp3.d/out") == -1 &&
          ct_audio_format_from_path("noext") == -1 && ct_audio_format_from_path("x.m4a") == -1);
    CHECK(!strcmp(ct_audio_format_mime(CT_AF_MP3), "audio/mpeg") && !strcmp(ct_audio_format_mime(CT_AF_OPUS), "audio/ogg"));
}

int main(void) {
    test_names();
    test_formats();
    return ct_test_finish();
}
