/* Compressed audio encoders on libavcodec + libavformat (see encode.h). */
#include "audio/encode.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name, *codec, *muxer, *mime;
    int64_t bit_rate;
} FMT[CT_AF_COUNT] = {
    {"wav", NULL, NULL, "audio/wav", 0},
    {"pcm", NULL, NULL, "audio/pcm", 0},
    {"mp3", "libmp3lame", "mp3", "audio/mpeg", 64000},
    {"opus", "libopus", "ogg", "audio/ogg", 32000},
    {"aac", "aac", "adts", "audio/aac", 64000},
    {"flac", "flac", "flac", "audio/flac", 0},
};

int ct_audio_format_parse(const char *name) {
    for (int i = 0; name && i < CT_AF_COUNT; i++)
        if (!strcmp(FMT[i].name, name)) return i;
    return -1;
}

const char *ct_audio_format_name(int f) { return f >= 0 && f < CT_AF_COUNT ? FMT[f].name : "?"; }

const char *ct_audio_format_mime(int f) { return f >= 0 && f < CT_AF_COUNT ? FMT[f].mime : "application/octet-stream"; }

int ct_audio_format_from_path(const char *path) {
    static const struct {
        const char *ext;
        int f;
    } EXT[] = {{".wav", CT_AF_WAV},   {".pcm", CT_AF_PCM},   {".raw", CT_AF_PCM}, {".mp3", CT_AF_MP3},
               {".opus", CT_AF_OPUS}, {".ogg", CT_AF_OPUS}, {".aac", CT_AF_AAC}, {".flac", CT_AF_FLAC}};
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot || strchr(dot, '/')) return -1;
    for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++)
        if (!strcasecmp(dot, EXT[i].ext)) return EXT[i].f;
    return -1;
}

struct ct_audio_enc {
    int fmt, failed;
    ct_audio_sink sink;
    void *ud;
    AVFormatContext *oc;
    AVCodecContext *cc;
    AVStream *st;
    AVFrame *frame;
    AVPacket *pkt;
    int frame_size;    /* samples per codec frame */
    int pad_last;      /* the last frame must be full: pad it with silence */
    float *buf;        /* [frame_size] samples waiting for a full frame */
    int n_buf;
    int64_t pts;       /* samples sent to the codec */
};

static int sink_write(void *opaque, uint8_t *buf, int n) { /* libavformat's AVIOContext callback */
    ct_audio_enc *e = opaque;
    if (n <= 0) return 0;
    if (e->sink(e->ud, buf, (size_t)n) != 0) {
        e->failed = 1;
        return AVERROR(EIO);
    }
    return n;
}

static ct_status averr(char *err, size_t errcap, ct_status st, const char *what, int rc) {
    char m[128];
    av_strerror(rc, m, sizeof m);
    return ct_errf(err, errcap, st, "audio encoder: %s: %s", what, m);
}

static enum AVSampleFormat pick_format(const AVCodec *c) {
    static const enum AVSampleFormat pref[] = {AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_S16,
                                               AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_S32P};
    if (!c->sample_fmts) return AV_SAMPLE_FMT_NONE;
    for (size_t i = 0; i < sizeof pref / sizeof pref[0]; i++)
        for (const enum AVSampleFormat *f = c->sample_fmts; *f != AV_SAMPLE_FMT_NONE; f++)
            if (*f == pref[i]) return *f;
    return AV_SAMPLE_FMT_NONE;
}

static int rate_ok(const AVCodec *c, int rate) {
    if (!c->supported_samplerates) return 1;
    for (const int *r = c->supported_samplerates; *r; r++)
        if (*r == rate) return 1;
    return 0;
}

ct_status ct_audio_enc_open(int fmt, int rate, ct_audio_sink sink, void *ud, ct_audio_enc **out, char *err,
                            size_t errcap) {
    *out = NULL;
    if (fmt < 0 || fmt >= CT_AF_COUNT || !FMT[fmt].codec)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "audio encoder: '%s' is not a compressed format",
                       ct_audio_format_name(fmt));
    if (!sink || rate <= 0) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "audio encoder: no sink or rate");
    av_log_set_level(AV_LOG_QUIET); /* the library never prints */
    const AVCodec *codec = avcodec_find_encoder_by_name(FMT[fmt].codec);
    if (!codec)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "audio encoder: this FFmpeg has no '%s' encoder",
                       FMT[fmt].codec);
    if (!rate_ok(codec, rate))
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "audio encoder: %s does not take %d Hz", FMT[fmt].name,
                       rate);
    enum AVSampleFormat sf = pick_format(codec);
    if (sf == AV_SAMPLE_FMT_NONE)
        return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "audio encoder: %s takes no sample format we write",
                       FMT[fmt].name);
    ct_audio_enc *e = calloc(1, sizeof *e);
    if (!e) return ct_errf(err, errcap, CT_ERR_NOMEM, "audio encoder: out of memory");
    e->fmt = fmt;
    e->sink = sink;
    e->ud = ud;
    ct_status st = CT_ERR_NOMEM;
    int rc;
    unsigned char *iobuf = NULL;
    if (avformat_alloc_output_context2(&e->oc, NULL, FMT[fmt].muxer, NULL) < 0 || !e->oc) goto fail;
    if (!(iobuf = av_malloc(4096))) goto fail;
    if (!(e->oc->pb = avio_alloc_context(iobuf, 4096, 1, e, NULL, sink_write, NULL))) {
        av_free(iobuf);
        goto fail;
    }
    e->oc->flags |= AVFMT_FLAG_CUSTOM_IO | AVFMT_FLAG_FLUSH_PACKETS; /* every packet reaches the sink */
    if (!(e->cc = avcodec_alloc_context3(codec)) || !(e->st = avformat_new_stream(e->oc, NULL)) ||
        !(e->frame = av_frame_alloc()) || !(e->pkt = av_packet_alloc()))
        goto fail;
    e->cc->sample_rate = rate;
    e->cc->sample_fmt = sf;
    av_channel_layout_default(&e->cc->ch_layout, 1);
    e->cc->time_base = (AVRational){1, rate};
    if (FMT[fmt].bit_rate) e->cc->bit_rate = FMT[fmt].bit_rate;
    if (e->oc->oformat->flags & AVFMT_GLOBALHEADER) e->cc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if ((rc = avcodec_open2(e->cc, codec, NULL)) < 0) {
        st = averr(err, errcap, CT_ERR_UNSUPPORTED, "opening the codec", rc);
        goto fail_msg;
    }
    if ((rc = avcodec_parameters_from_context(e->st->codecpar, e->cc)) < 0) goto fail;
    e->st->time_base = e->cc->time_base;
    int variable = (codec->capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE) || e->cc->frame_size <= 0;
    e->frame_size = variable ? 1024 : e->cc->frame_size;
    e->pad_last = !variable && !(codec->capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME);
    if (!(e->buf = malloc(sizeof(float) * (size_t)e->frame_size))) goto fail;
    e->frame->format = sf;
    e->frame->sample_rate = rate;
    if (av_channel_layout_copy(&e->frame->ch_layout, &e->cc->ch_layout) < 0) goto fail;
    e->frame->nb_samples = e->frame_size;
    if (av_frame_get_buffer(e->frame, 0) < 0) goto fail;
    if (fmt == CT_AF_MP3) av_opt_set_int(e->oc->priv_data, "write_xing", 0, 0); /* no seeking back */
    if ((rc = avformat_write_header(e->oc, NULL)) < 0) {
        st = averr(err, errcap, e->failed ? CT_ERR_IO : CT_ERR_UNSUPPORTED, "writing the header", rc);
        goto fail_msg;
    }
    *out = e;
    return CT_OK;
fail:
    ct_errf(err, errcap, st, "audio encoder: out of memory");
fail_msg:
    ct_audio_enc_free(e);
    return st;
}

/* Sends frame (NULL = drain) and writes every packet the codec returns. */
static ct_status encode(ct_audio_enc *e, AVFrame *frame, char *err, size_t errcap) {
    int rc = avcodec_send_frame(e->cc, frame);
    if (rc < 0) return averr(err, errcap, CT_ERR_INTERNAL, "encoding", rc);
    for (;;) {
        rc = avcodec_receive_packet(e->cc, e->pkt);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return CT_OK;
        if (rc < 0) return averr(err, errcap, CT_ERR_INTERNAL, "encoding", rc);
        av_packet_rescale_ts(e->pkt, e->cc->time_base, e->st->time_base);
        e->pkt->stream_index = e->st->index;
        rc = av_write_frame(e->oc, e->pkt);
        av_packet_unref(e->pkt);
        if (rc < 0 || e->failed) {
            int refused = e->failed;
            e->failed = 1;
            return refused ? ct_errf(err, errcap, CT_ERR_IO, "audio encoder: the output refused bytes")
                           : averr(err, errcap, CT_ERR_IO, "writing", rc);
        }
    }
}

/* Converts the n buffered samples into the codec's sample format and encodes them. */
static ct_status send_buffered(ct_audio_enc *e, int n, char *err, size_t errcap) {
    if (av_frame_make_writable(e->frame) < 0) return ct_errf(err, errcap, CT_ERR_NOMEM, "audio encoder: out of memory");
    e->frame->nb_samples = n;
    void *d = e->frame->data[0];
    for (int i = 0; i < n; i++) {
        float x = e->buf[i] > 1.0f ? 1.0f : e->buf[i] < -1.0f ? -1.0f : e->buf[i];
        switch (e->cc->sample_fmt) {
        case AV_SAMPLE_FMT_FLT:
        case AV_SAMPLE_FMT_FLTP: ((float *)d)[i] = x; break;
        case AV_SAMPLE_FMT_S16:
        case AV_SAMPLE_FMT_S16P: ((int16_t *)d)[i] = (int16_t)(x * 32767.0f); break;
        default: ((int32_t *)d)[i] = (int32_t)((double)x * 2147483647.0); break;
        }
    }
    e->frame->pts = e->pts;
    e->pts += n;
    e->n_buf = 0;
    return encode(e, e->frame, err, errcap);
}

ct_status ct_audio_enc_write(ct_audio_enc *e, const float *pcm, size_t n, char *err, size_t errcap) {
    if (!e || e->failed) return ct_errf(err, errcap, CT_ERR_IO, "audio encoder: the stream has failed");
    for (size_t k = 0; k < n;) {
        size_t take = (size_t)(e->frame_size - e->n_buf);
        if (take > n - k) take = n - k;
        memcpy(e->buf + e->n_buf, pcm + k, sizeof(float) * take);
        e->n_buf += (int)take;
        k += take;
        if (e->n_buf == e->frame_size) {
            ct_status st = send_buffered(e, e->frame_size, err, errcap);
            if (st != CT_OK) return st;
        }
    }
    return CT_OK;
}

ct_status ct_audio_enc_finish(ct_audio_enc *e, char *err, size_t errcap) {
    if (!e || e->failed) return ct_errf(err, errcap, CT_ERR_IO, "audio encoder: the stream has failed");
    ct_status st = CT_OK;
    if (e->n_buf > 0) {
        int n = e->n_buf;
        if (e->pad_last) { /* a codec that needs whole frames: finish with silence */
            memset(e->buf + n, 0, sizeof(float) * (size_t)(e->frame_size - n));
            n = e->frame_size;
        }
        st = send_buffered(e, n, err, errcap);
    }
    if (st == CT_OK) st = encode(e, NULL, err, errcap);
    if (st == CT_OK) {
        int rc = av_write_trailer(e->oc);
        avio_flush(e->oc->pb);
        if (rc < 0 || e->failed) st = averr(err, errcap, CT_ERR_IO, "writing the trailer", rc < 0 ? rc : AVERROR(EIO));
    }
    if (st != CT_OK) e->failed = 1;
    return st;
}

void ct_audio_enc_free(ct_audio_enc *e) {
    if (!e) return;
    if (e->oc) {
        if (e->oc->pb) {
            av_freep(&e->oc->pb->buffer);
            avio_context_free(&e->oc->pb);
        }
        avformat_free_context(e->oc);
    }
    avcodec_free_context(&e->cc);
    av_frame_free(&e->frame);
    av_packet_free(&e->pkt);
    free(e->buf);
    free(e);
}
