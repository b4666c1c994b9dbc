/* The CLI's audio output: one writer for every format -o can ask for: WAV (PCM16 or float) and
   raw s16le through audio/wav.h, MP3 / Ogg Opus / AAC / FLAC through audio/encode.h, each
   written to the FILE as it is produced. */
#ifndef CT_CLI_AUDIO_OUT_H
#define CT_CLI_AUDIO_OUT_H

#include <stddef.h>
#include <stdio.h>

#include "audio/encode.h"
#include "audio/wav.h"

typedef struct {
    int fmt;             /* ct_audio_format */
    FILE *f;             /* borrowed */
    ct_wav_writer w;     /* WAV, PCM */
    ct_audio_enc *enc;   /* compressed formats */
    int err;             /* errno of the first failed write, 0 */
    char msg[256];       /* the encoder's message when it failed on its own */
} ct_cli_audio_out;

/* The format for `-o out` and `--format`: fmt_flag (NULL = not given) wins; else the file's
   extension; else WAV for a file and raw s16le for "-". -1 with an error printed for an unknown
   --format; float32 only with WAV. */
int ct_cli_audio_format(const char *out, const char *fmt_flag, int float32);

/* Starts writing fmt to f at rate Hz (float32: 32-bit float WAV). 0, or an errno value (the
   stream could not start; msg says why when it is not a write error). */
int ct_cli_audio_begin(ct_cli_audio_out *o, FILE *f, int fmt, int rate, int float32);

/* Appends n samples; 0 or an errno value (EIO when the encoder failed on its own). */
int ct_cli_audio_write(ct_cli_audio_out *o, const float *pcm, size_t n);

/* Finishes the stream (sizes, trailers, flush); 0 or an errno value. Frees the encoder. */
int ct_cli_audio_end(ct_cli_audio_out *o);

/* Frees what begin made (after an error; end already frees). */
void ct_cli_audio_free(ct_cli_audio_out *o);

#endif
