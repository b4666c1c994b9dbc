/* The CLI's audio output in every format (see audio_out.h). */
#include "cli/audio_out.h"

#include <errno.h>
#include <string.h>

int ct_cli_audio_format(const char *out, const char *fmt_flag, int float32) {
    int f;
    if (fmt_flag) {
        if ((f = ct_audio_format_parse(fmt_flag)) < 0) {
            fprintf(stderr, "error: --format '%s': expected wav, pcm, mp3, opus, aac or flac\n", fmt_flag);
            return -1;
        }
    } else if (out && strcmp(out, "-") == 0) {
        f = CT_AF_PCM;
    } else {
        f = ct_audio_format_from_path(out);
        if (f < 0) f = CT_AF_WAV;
    }
    if (float32 && f != CT_AF_WAV) {
        fprintf(stderr, "error: --float writes a 32-bit float WAV; the output format is %s\n", ct_audio_format_name(f));
        return -1;
    }
    return f;
}

static int file_sink(void *ud, const uint8_t *buf, size_t n) {
    ct_cli_audio_out *o = ud;
    errno = 0;
    if (fwrite(buf, 1, n, o->f) != n || fflush(o->f) != 0) { /* flushed: a pipe gets audio as it is made */
        o->err = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

int ct_cli_audio_begin(ct_cli_audio_out *o, FILE *f, int fmt, int rate, int float32) {
    memset(o, 0, sizeof *o);
    o->fmt = fmt;
    o->f = f;
    errno = 0;
    if (fmt == CT_AF_WAV || fmt == CT_AF_PCM) {
        ct_wav_format wf = fmt == CT_AF_PCM ? CT_WAV_RAW_S16LE : float32 ? CT_WAV_FLOAT32 : CT_WAV_PCM16;
        if (ct_wav_begin(&o->w, f, rate, wf) != CT_OK) return o->err = errno ? errno : EIO;
        return 0;
    }
    if (ct_audio_enc_open(fmt, rate, file_sink, o, &o->enc, o->msg, sizeof o->msg) != CT_OK)
        return o->err ? o->err : EINVAL;
    return 0;
}

int ct_cli_audio_write(ct_cli_audio_out *o, const float *pcm, size_t n) {
    errno = 0;
    if (!o->enc) {
        if (ct_wav_write(&o->w, pcm, n) != CT_OK) return o->err = errno ? errno : EIO;
        return 0;
    }
    if (ct_audio_enc_write(o->enc, pcm, n, o->msg, sizeof o->msg) != CT_OK) return o->err ? o->err : EIO;
    return 0;
}

int ct_cli_audio_end(ct_cli_audio_out *o) {
    errno = 0;
    if (!o->enc) return ct_wav_end(&o->w) == CT_OK ? 0 : (errno ? errno : EIO);
    int rc = ct_audio_enc_finish(o->enc, o->msg, sizeof o->msg) == CT_OK ? 0 : (o->err ? o->err : EIO);
    ct_cli_audio_free(o);
    return rc;
}

void ct_cli_audio_free(ct_cli_audio_out *o) {
    ct_audio_enc_free(o->enc);
    o->enc = NULL;
}
