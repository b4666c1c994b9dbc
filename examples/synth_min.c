/* The smallest program embedding libcodectalk through its public API only: load a model
   directory and its codec, start the stream engine, synthesize one text with the model's first
   speaker and write it as a 16-bit mono WAV file.

     usage: synth_min MODEL_DIR TEXT OUT.wav

   Built against an installed tree with pkg-config (README "Embed the C library"):
     cc synth_min.c $(pkg-config --cflags --libs codectalk) -o synth_min
     cc -static synth_min.c $(pkg-config --cflags codectalk) $(pkg-config --static --libs codectalk) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "codectalk.h"

static void put_le(unsigned char *p, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* 44-byte PCM WAV header for n_samples 16-bit mono samples at rate Hz. */
static void wav_header(unsigned char h[44], uint32_t n_samples, uint32_t rate) {
    memcpy(h, "RIFF", 4);
    put_le(h + 4, 36 + 2 * n_samples, 4);
    memcpy(h + 8, "WAVEfmt ", 8);
    put_le(h + 16, 16, 4);       /* fmt chunk size */
    put_le(h + 20, 1, 2);        /* PCM */
    put_le(h + 22, 1, 2);        /* mono */
    put_le(h + 24, rate, 4);
    put_le(h + 28, 2 * rate, 4); /* bytes per second */
    put_le(h + 32, 2, 2);        /* block align */
    put_le(h + 34, 16, 2);       /* bits per sample */
    memcpy(h + 36, "data", 4);
    put_le(h + 40, 2 * n_samples, 4);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL_DIR TEXT OUT.wav\n", argv[0]);
        return 2;
    }
    char err[512] = "";
    ct_model *model = NULL;
    ct_codec *codec = NULL;
    ct_engine *engine = NULL;
    ct_stream *stream = NULL;
    FILE *f = NULL;
    int rc = 1;

    ct_status st = ct_model_load(argv[1], NULL, &model, err, sizeof err);
    if (st == CT_OK) st = ct_codec_load(argv[1], &codec, err, sizeof err);
    if (st == CT_OK) st = ct_engine_create(model, codec, NULL, &engine, err, sizeof err);
    if (st == CT_OK) {
        ct_gen_params g = ct_gen_params_default();
        g.text = argv[2];
        g.speaker = ct_model_speaker(model, 0); /* CustomVoice models need one */
        g.seed = 1;
        st = ct_engine_submit(engine, &g, NULL, &stream, err, sizeof err);
    }
    if (st != CT_OK) {
        fprintf(stderr, "synth_min: %s (%s)\n", err, ct_status_str(st));
        goto done;
    }

    f = fopen(argv[3], "wb");
    unsigned char header[44];
    uint32_t rate = (uint32_t)ct_codec_sample_rate(codec), n = 0;
    wav_header(header, 0, rate); /* sizes filled in at the end */
    if (!f || fwrite(header, 1, sizeof header, f) != sizeof header) {
        fprintf(stderr, "synth_min: cannot write %s\n", argv[3]);
        goto done;
    }
    float pcm[4096];
    int finished = 0;
    while (!finished) {
        size_t got = ct_stream_read(stream, pcm, 4096, -1, &finished);
        for (size_t i = 0; i < got; i++) {
            float x = pcm[i] < -1.0f ? -1.0f : pcm[i] > 1.0f ? 1.0f : pcm[i];
            unsigned char s[2];
            put_le(s, (uint32_t)(uint16_t)(int16_t)(x * 32767.0f), 2);
            if (fwrite(s, 1, 2, f) != 2) {
                fprintf(stderr, "synth_min: cannot write %s\n", argv[3]);
                goto done;
            }
        }
        n += (uint32_t)got;
    }
    ct_stream_info info = ct_stream_get_info(stream);
    if (info.status != CT_OK) {
        fprintf(stderr, "synth_min: %s (%s)\n", ct_stream_errmsg(stream), ct_status_str(info.status));
        goto done;
    }
    wav_header(header, n, rate);
    if (fseek(f, 0, SEEK_SET) != 0 || fwrite(header, 1, sizeof header, f) != sizeof header) {
        fprintf(stderr, "synth_min: cannot write %s\n", argv[3]);
        goto done;
    }
    printf("%u samples at %u Hz (codectalk %s)\n", (unsigned)n, (unsigned)rate, ct_version());
    rc = 0;
done:
    if (f && fclose(f) != 0) rc = 1;
    ct_stream_release(stream);
    ct_engine_free(engine);
    ct_codec_free(codec);
    ct_model_free(model);
    return rc;
}
