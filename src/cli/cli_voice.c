/* Cloned voices on the command line (docs/CLONING.md "CLI"): `codectalk voice create` and
   `voice info`, and the --voice / --ref-audio / --ref-text / --x-vector-only flags of synth and
   codes. Reference warnings are printed as "warning: ..."; refusals exit non-zero. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli_common.h"
#include "serve/voices.h"

/* A voice from a clip (see ct_cli_voice_get); returns 0, 1 or 2. */
static int from_clip(const char *model_dir, const ct_model *m, const char *clip, const char *ref_text, int xvo,
                     int quiet, ct_voice **out) {
    int has_text = ref_text && ref_text[0];
    if (!xvo && !has_text) {
        fprintf(stderr, "error: ICL cloning needs the transcript of the whole reference clip: pass --ref-text "
                        "\"...\", or --x-vector-only for x-vector-only mode (the speaker's timbre alone, no "
                        "transcript)\n");
        return 2;
    }
    if (xvo && ref_text) {
        fprintf(stderr, "error: --ref-text is not used in x-vector-only mode; drop one of --ref-text and "
                        "--x-vector-only\n");
        return 2;
    }
    char err[1024];
    ct_ref_audio a;
    if (ct_ref_audio_load_file(clip, &a, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    ct_speech_encoder *enc = NULL;
    int rc = 0;
    if (!xvo && ct_speech_encoder_load(model_dir, &enc, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        rc = 1;
    }
    ct_clone_warnings w;
    if (!rc && ct_clone_make(m, enc, &a, ref_text, xvo, out, &w, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        rc = 1;
    }
    if (!rc && !quiet)
        for (int i = 0; i < w.n; i++) fprintf(stderr, "warning: %s\n", w.w[i]);
    ct_speech_encoder_free(enc);
    ct_ref_audio_free(&a);
    return rc;
}

int ct_cli_voice_get(const ct_cli_gen *a, const ct_model *m, ct_voice **out) {
    *out = NULL;
    int given = !!a->voice + !!a->ref_audio + !!a->xvec;
    if (given > 1) {
        fprintf(stderr, "error: --voice, --ref-audio and --xvector each give the voice; use one\n");
        return 2;
    }
    if (a->ref_text && !a->ref_audio) {
        fprintf(stderr, "error: --ref-text is the transcript of --ref-audio; give the clip too\n");
        return 2;
    }
    if (a->x_vector_only && !a->voice && !a->ref_audio) {
        fprintf(stderr, "error: --x-vector-only applies to a cloned voice (--voice or --ref-audio)\n");
        return 2;
    }
    if (a->ref_audio) return from_clip(a->model, m, a->ref_audio, a->ref_text, a->x_vector_only, a->quiet, out);
    if (!a->voice) return 0;
    char err[1024];
    if (ct_voice_load(m, a->voice, out, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    return 0;
}

void ct_cli_voice_apply(const ct_cli_gen *a, const ct_voice *v, ct_gen_params *g) {
    if (v) ct_voice_apply(v, g, a->x_vector_only);
}

static int voice_create(int argc, char **argv) {
    const char *model = NULL, *clip = NULL, *text = NULL, *out = NULL;
    int xvo = 0, quiet = 0;
    ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &model, "DIR", "a Base model directory"},
        {"ref-audio", 0, CT_OPT_STR, &clip, "CLIP", "the reference clip (WAV, FLAC, Ogg, MP3; 1-30 s, longer is trimmed)"},
        {"ref-text", 0, CT_OPT_STR, &text, "TEXT", "the transcript of the whole clip (ICL voice)"},
        {"x-vector-only", 0, CT_OPT_FLAG, &xvo, NULL, "an x-vector-only voice (no transcript, no reference codes)"},
        {"output", 'o', CT_OPT_STR, &out, "FILE", "the voice file to write (NAME.voice)"},
        {"quiet", 'q', CT_OPT_FLAG, &quiet, NULL, "no warnings or summary"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk voice create -m DIR --ref-audio CLIP [--ref-text TEXT | --x-vector-only] -o NAME.voice\n"
                          "Clones the voice of a reference clip with a Base model: its x-vector (speaker encoder) and,\n"
                          "with --ref-text, its reference codes (speech-tokenizer encoder) and transcript (ICL).\n"
                          "Writes a small voice file that synth --voice and the server reuse without re-encoding.");
    if (r) return r < 0 ? 2 : 0;
    if (!clip || !out) {
        fprintf(stderr, "error: voice create needs --ref-audio CLIP and -o FILE\n");
        return 2;
    }
    ct_model *m = ct_cli_load_model(model, NULL, 0);
    if (!m) return 1;
    ct_voice *v = NULL;
    char err[1024];
    int rc = from_clip(model, m, clip, text, xvo, quiet, &v);
    if (!rc && ct_voice_save(v, out, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        rc = 1;
    }
    if (!rc && !quiet) {
        ct_voice_info i = ct_voice_get_info(v);
        fprintf(stderr, "%s: %s voice, %.2f s reference%s, model %s\n", out,
                i.ref_frames ? "ICL" : "x-vector-only", (double)i.n_samples / 24000.0,
                i.ref_frames ? "" : " (no codes)", i.model_name);
    }
    ct_voice_free(v);
    ct_model_free(m);
    return rc;
}

static int voice_info(int argc, char **argv) {
    const char *model = NULL;
    ct_opt opts[] = {{"model", 'm', CT_OPT_STR, &model, "DIR", "also check the voice against this model"},
                     {NULL, 0, 0, NULL, NULL, NULL}};
    const char *path = argc >= 1 && argv[0][0] != '-' ? argv[0] : NULL; /* FILE comes first */
    int r = ct_args_parse(argc - !!path, argv + !!path, opts,
                          "usage: codectalk voice info FILE [-m DIR]\n"
                          "Validates a voice file and prints what it holds (mode, model hash and name, transcript,\n"
                          "reference length, audio hash); with -m also checks it against that model (exit 1 when\n"
                          "the voice is for another model).");
    if (r) return r < 0 ? 2 : 0;
    if (!path) {
        fprintf(stderr, "error: voice info needs a voice FILE first (codectalk voice info FILE)\n");
        return 2;
    }
    ct_model *m = model ? ct_cli_load_model(model, NULL, 0) : NULL;
    if (model && !m) return 1;
    ct_voice *v = NULL;
    char err[1024];
    ct_status st = ct_voice_load(m, path, &v, err, sizeof err);
    if (st != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        ct_model_free(m);
        return 1;
    }
    ct_voice_info i = ct_voice_get_info(v);
    printf("voice file:   %s (version %d, made by %s)\n", path, i.version, i.created_by);
    printf("mode:         %s\n", i.ref_frames ? "ICL (x-vector + reference codes + transcript)" : "x-vector only");
    printf("model:        %s (hash %s)%s\n", i.model_name, i.model_hash, m ? ", matches -m" : "");
    printf("x-vector:     %d values\n", i.xvector_len);
    if (i.ref_frames) printf("reference:    %d frames x %d codes (%.2f s)\n", i.ref_frames, i.n_groups, i.ref_frames * 0.08);
    if (i.ref_text) printf("transcript:   %s\n", i.ref_text);
    if (i.n_samples) printf("clip:         %" PRIu64 " samples at 24 kHz (%.2f s)\n", i.n_samples, (double)i.n_samples / 24000.0);
    printf("audio sha256: %s\n", i.audio_sha256[0] ? i.audio_sha256 : "(made from parts)");
    ct_voice_free(v);
    ct_model_free(m);
    return 0;
}

int ct_cli_voice(int argc, char **argv) {
    if (argc >= 1 && !strcmp(argv[0], "create")) return voice_create(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "info")) return voice_info(argc - 1, argv + 1);
    int help = argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"));
    fprintf(help ? stdout : stderr,
            "usage: codectalk voice create -m DIR --ref-audio CLIP [--ref-text TEXT | --x-vector-only] -o NAME.voice\n"
            "       codectalk voice info FILE [-m DIR]   (a voice file's contents)\n");
    if (!help) fprintf(stderr, "error: voice needs a subcommand: create or info\n");
    return help ? 0 : 2;
}
