/* Cloned voices on the command line: `codectalk voice info FILE`, and the --voice /
   --x-vector-only flags of synth and codes (docs/CLONING.md "CLI"). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli_common.h"

int ct_cli_voice_get(const ct_cli_gen *a, const ct_model *m, ct_voice **out) {
    *out = NULL;
    if (a->voice && a->xvec) {
        fprintf(stderr, "error: --voice and --xvector both give the voice; use one\n");
        return 2;
    }
    if (!a->voice) {
        if (a->x_vector_only) {
            fprintf(stderr, "error: --x-vector-only applies to a cloned voice (--voice)\n");
            return 2;
        }
        return 0;
    }
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
    if (argc >= 1 && !strcmp(argv[0], "info")) return voice_info(argc - 1, argv + 1);
    int help = argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"));
    fprintf(help ? stdout : stderr, "usage: codectalk voice info FILE [-m DIR]   (a voice file's contents)\n");
    if (!help) fprintf(stderr, "error: voice needs a subcommand: info\n");
    return help ? 0 : 2;
}
