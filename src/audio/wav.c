/* Streaming WAV / raw PCM writer and a strict WAV header parser. */
#include "audio/wav.h"

#include <string.h>

#include "audio/pcm.h"

static void le16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

void ct_wav_header(uint8_t h[CT_WAV_HEADER_BYTES], int rate, ct_wav_format fmt, uint64_t samples) {
    int bps = fmt == CT_WAV_FLOAT32 ? 4 : 2;
    const uint64_t max = (0xFFFFFFFFull - 36) / (uint64_t)bps * (uint64_t)bps; /* whole samples */
    uint64_t data = samples > max / (uint64_t)bps ? max : samples * (uint64_t)bps;
    uint32_t d32 = (uint32_t)data;
    memcpy(h, "RIFF", 4);
    le32(h + 4, d32 + 36);
    memcpy(h + 8, "WAVEfmt ", 8);
    le32(h + 16, 16);
    le16(h + 20, fmt == CT_WAV_FLOAT32 ? 3 : 1);
    le16(h + 22, 1);
    le32(h + 24, (uint32_t)rate);
    le32(h + 28, (uint32_t)(rate * bps));
    le16(h + 32, (uint32_t)bps);
    le16(h + 34, (uint32_t)(bps * 8));
    memcpy(h + 36, "data", 4);
    le32(h + 40, d32);
}

ct_status ct_wav_begin(ct_wav_writer *w, FILE *f, int rate, ct_wav_format fmt) {
    memset(w, 0, sizeof *w);
    w->f = f;
    w->fmt = fmt;
    w->rate = rate;
    if (!f || rate <= 0) return CT_ERR_INVALID_ARG;
    long pos = ftell(f);
    w->seekable = pos >= 0 && fseek(f, pos, SEEK_SET) == 0;
    if (fmt == CT_WAV_RAW_S16LE) return CT_OK;
    uint8_t h[CT_WAV_HEADER_BYTES];
    ct_wav_header(h, rate, fmt, w->seekable ? 0 : CT_WAV_STREAMING);
    if (fwrite(h, 1, sizeof h, f) != sizeof h) return w->failed = 1, CT_ERR_IO;
    return CT_OK;
}

ct_status ct_wav_write(ct_wav_writer *w, const float *pcm, size_t n) {
    uint8_t buf[4096];
    const size_t bps = w->fmt == CT_WAV_FLOAT32 ? 4 : 2, per = sizeof buf / bps;
    for (size_t i = 0; i < n;) {
        size_t m = n - i < per ? n - i : per;
        if (w->fmt == CT_WAV_FLOAT32) {
            for (size_t k = 0; k < m; k++) {
                uint32_t u;
                memcpy(&u, &pcm[i + k], 4);
                le32(buf + 4 * k, u);
            }
        } else {
            ct_pcm_s16le(buf, pcm + i, m);
        }
        if (fwrite(buf, 1, m * bps, w->f) != m * bps) return w->failed = 1, CT_ERR_IO;
        i += m;
    }
    w->samples += n;
    return CT_OK;
}

ct_status ct_wav_end(ct_wav_writer *w) {
    if (w->failed) return CT_ERR_IO;
    if (w->fmt != CT_WAV_RAW_S16LE && w->seekable) {
        long end = ftell(w->f);
        uint8_t h[CT_WAV_HEADER_BYTES];
        ct_wav_header(h, w->rate, w->fmt, w->samples);
        if (fseek(w->f, 0, SEEK_SET) != 0 || fwrite(h, 1, sizeof h, w->f) != sizeof h ||
            fseek(w->f, end, SEEK_SET) != 0)
            return CT_ERR_IO;
    }
    return fflush(w->f) == 0 ? CT_OK : CT_ERR_IO;
}

ct_status ct_wav_parse(const uint8_t *b, size_t len, int *rate, int *channels, int *bits,
                       int *is_float, size_t *data_off, size_t *data_len, char *err,
                       size_t errcap) {
    if (len < 12 || memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "wav: not a RIFF/WAVE file");
    size_t off = 12;
    int have_fmt = 0;
    while (off + 8 <= len) {
        uint32_t sz = rd32(b + off + 4);
        const uint8_t *body = b + off + 8;
        size_t avail = len - off - 8;
        if (memcmp(b + off, "fmt ", 4) == 0) {
            if (sz < 16 || sz > avail)
                return ct_errf(err, errcap, CT_ERR_FORMAT, "wav: fmt chunk of %u bytes is invalid", sz);
            uint32_t tag = rd16(body);
            *channels = (int)rd16(body + 2);
            *rate = (int)rd32(body + 4);
            *bits = (int)rd16(body + 14);
            if (tag == 0xFFFE && sz >= 40) tag = rd16(body + 24); /* WAVE_FORMAT_EXTENSIBLE */
            if (tag != 1 && tag != 3)
                return ct_errf(err, errcap, CT_ERR_FORMAT, "wav: format tag %u is not PCM or float", tag);
            *is_float = tag == 3;
            if (*channels < 1 || *channels > 16 || *rate < 1000 || *rate > 768000 ||
                (*is_float ? *bits != 32 && *bits != 64 : *bits != 8 && *bits != 16 && *bits != 24 &&
                                                         *bits != 32))
                return ct_errf(err, errcap, CT_ERR_FORMAT, "wav: unsupported layout (%d ch, %d Hz, %d bit)",
                               *channels, *rate, *bits);
            have_fmt = 1;
        } else if (memcmp(b + off, "data", 4) == 0) {
            if (!have_fmt) return ct_errf(err, errcap, CT_ERR_FORMAT, "wav: data chunk before fmt");
            *data_off = off + 8;
            *data_len = sz > avail ? avail : sz; /* streamed files carry 0xFFFFFFFF */
            return CT_OK;
        }
        if (sz > avail) break;
        off += 8 + (size_t)sz + (sz & 1);
    }
    return ct_errf(err, errcap, CT_ERR_FORMAT, "wav: no data chunk");
}
