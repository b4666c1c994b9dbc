/* `codectalk export`: writes the talker / code-predictor decode-step graphs, the windowed
   codec programs and runs the ONNX sanitizer; prints file sizes and the weight bytes read
   per step (the bandwidth bound of a step on an NPU). */
#include "cli/cmd_export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codectalk.h"
#include "export/export.h"

static void usage_to(FILE *o) {
    fprintf(o,
            "usage: codectalk export step -m DIR --component talker|predictor [--cache-len 256]\n"
            "                             [--dtype fp32|fp16] [--layout v2|v1] [--external] -o OUTDIR\n"
            "       codectalk export codec -m DIR [--context 72] [--ramp 2,4,8,16,25] [--external] -o OUTDIR\n"
            "       codectalk export sanitize IN.onnx -o OUT.onnx\n"
            "\nstep options:\n"
            "  -m, --model DIR        model directory\n"
            "  --component NAME       talker | predictor\n"
            "  --cache-len N          KV cache positions in the graph, [1, 32768] (default 256)\n"
            "  --dtype fp32|fp16      weight and activation type (default fp32)\n"
            "  --layout v2|v1         I/O layout (default v2)\n"
            "  --external             weights in a separate .data file\n"
            "  -o, --out OUTDIR       output directory\n"
            "codec options:\n"
            "  -m, --model DIR        model directory\n"
            "  --context N            left context frames, [0, 4096] (default 72)\n"
            "  --ramp LIST            window sizes in frames (default 2,4,8,16,25)\n"
            "  --external             weights in a separate .data file\n"
            "  -o, --out OUTDIR       output directory\n"
            "sanitize options:\n"
            "  -o, --out OUT.onnx     sanitized output file\n"
            "  -h, --help             show this help\n");
}

static void usage(void) { usage_to(stderr); }

/* 1 when argv[2..argc) asks for help (then printed to stdout). */
static int wants_help(int argc, char **argv) {
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage_to(stdout);
            return 1;
        }
    return 0;
}

static int parse_int(const char *s, int *v) {
    char *e;
    errno = 0;
    long x = strtol(s, &e, 10);
    if (errno || e == s || *e || x < -2147483647L || x > 2147483647L) return 0;
    *v = (int)x;
    return 1;
}

static int ensure_dir(const char *d) {
    struct stat sb;
    if (stat(d, &sb) == 0) return S_ISDIR(sb.st_mode) ? 0 : -1;
    return mkdir(d, 0755);
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

static int cmd_step(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *comp = NULL, *dtype = "fp32", *layout = "v2";
    int cache = 256, external = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--external")) external = 1;
        else if (!v) {
            fprintf(stderr, "export step: %s needs a value\n", a);
            return 2;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v, i++;
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) out = v, i++;
        else if (!strcmp(a, "--component")) comp = v, i++;
        else if (!strcmp(a, "--dtype")) dtype = v, i++;
        else if (!strcmp(a, "--layout")) layout = v, i++;
        else if (!strcmp(a, "--cache-len")) {
            if (!parse_int(v, &cache)) {
                fprintf(stderr, "export step: --cache-len '%s' is not an integer\n", v);
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "export step: unknown option %s\n", a);
            usage();
            return 2;
        }
    }
    if (!model || !out || !comp) {
        fprintf(stderr, "export step: -m, --component and -o are required\n");
        usage();
        return 2;
    }
    ct_export_step_opts o = {0};
    if (!strcmp(comp, "talker")) o.predictor = 0;
    else if (!strcmp(comp, "predictor")) o.predictor = 1;
    else {
        fprintf(stderr, "export step: --component must be talker or predictor, got '%s'\n", comp);
        return 2;
    }
    if (!strcmp(dtype, "fp16")) o.fp16 = 1;
    else if (strcmp(dtype, "fp32") != 0) {
        fprintf(stderr, "export step: --dtype must be fp32 or fp16, got '%s'\n", dtype);
        return 2;
    }
    if (!strcmp(layout, "v1")) o.layout_v1 = 1;
    else if (strcmp(layout, "v2") != 0) {
        fprintf(stderr, "export step: --layout must be v2 or v1, got '%s'\n", layout);
        return 2;
    }
    if (cache < 1 || cache > 32768) {
        fprintf(stderr, "export step: --cache-len %d outside [1, 32768]\n", cache);
        return 2;
    }
    o.cache_len = cache;
    o.external = external;
    if (ensure_dir(out) != 0) {
        fprintf(stderr, "export step: cannot create directory %s\n", out);
        return 1;
    }
    char err[1024];
    ct_model_params mp = ct_model_params_default();
    ct_model *m = NULL;
    ct_status st = ct_model_load(model, &mp, &m, err, sizeof err);
    if (st != CT_OK) {
        fprintf(stderr, "export step: %s\n", err);
        return 1;
    }
    ct_export_result r;
    st = ct_export_step(m, model, &o, out, &r, err, sizeof err);
    ct_model_free(m);
    if (st != CT_OK) {
        fprintf(stderr, "export step: %s\n", err);
        return 1;
    }
    printf("wrote %s (%.1f MiB%s), %s\n", r.onnx_path, mib(r.file_bytes), r.external ? ", external data" : "",
           r.json_path);
    printf("%s step: %d inputs, %d outputs, weight bytes read per step %.1f MiB (%llu)\n", comp, r.n_inputs,
           r.n_outputs, mib(r.weight_bytes), (unsigned long long)r.weight_bytes);
    return 0;
}

static int cmd_codec(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *ramp = "2,4,8,16,25";
    ct_export_codec_opts o = {0};
    o.context = 72;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--external")) o.external = 1;
        else if (!v) {
            fprintf(stderr, "export codec: %s needs a value\n", a);
            return 2;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v, i++;
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) out = v, i++;
        else if (!strcmp(a, "--ramp")) ramp = v, i++;
        else if (!strcmp(a, "--context")) {
            if (!parse_int(v, &o.context) || o.context < 0 || o.context > 4096) {
                fprintf(stderr, "export codec: --context '%s' must be an integer in [0, 4096]\n", v);
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "export codec: unknown option %s\n", a);
            usage();
            return 2;
        }
    }
    if (!model || !out) {
        fprintf(stderr, "export codec: -m and -o are required\n");
        usage();
        return 2;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", ramp);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int v;
        if (!parse_int(tok, &v) || v < 1 || v > 4096) {
            fprintf(stderr, "export codec: ramp entry '%s' must be an integer in [1, 4096]\n", tok);
            return 2;
        }
        int dup = 0;
        for (int j = 0; j < o.n_ramp; j++) dup |= o.ramp[j] == v;
        if (dup) continue;
        if (o.n_ramp == CT_EXPORT_MAX_PROGRAMS) {
            fprintf(stderr, "export codec: at most %d ramp sizes\n", CT_EXPORT_MAX_PROGRAMS);
            return 2;
        }
        o.ramp[o.n_ramp++] = v;
    }
    if (o.n_ramp == 0) {
        fprintf(stderr, "export codec: --ramp is empty\n");
        return 2;
    }
    if (ensure_dir(out) != 0) {
        fprintf(stderr, "export codec: cannot create directory %s\n", out);
        return 1;
    }
    ct_export_result r[CT_EXPORT_MAX_PROGRAMS];
    char err[1024];
    ct_status st = ct_export_codec(model, &o, out, r, err, sizeof err);
    if (st != CT_OK) {
        fprintf(stderr, "export codec: %s\n", err);
        return 1;
    }
    for (int i = 0; i < o.n_ramp; i++)
        printf("wrote %s (window %d frames, %.1f MiB%s, weights read per window %.1f MiB)\n", r[i].onnx_path,
               o.context + o.ramp[i], mib(r[i].file_bytes), r[i].external ? ", external data" : "",
               mib(r[i].weight_bytes));
    printf("wrote %s/manifest.json\n", out);
    return 0;
}

static int cmd_sanitize(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    for (int i = 2; i < argc; i++) {
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] != '-' && !in) in = argv[i];
        else {
            fprintf(stderr, "export sanitize: unexpected argument %s\n", argv[i]);
            usage();
            return 2;
        }
    }
    if (!in || !out) {
        usage();
        return 2;
    }
    ct_sanitize_counts c;
    char err[1024];
    ct_status st = ct_onnx_sanitize(in, out, &c, err, sizeof err);
    if (st != CT_OK) {
        fprintf(stderr, "export sanitize: %s\n", err);
        return 1;
    }
    printf("nan_guards_removed %d\nallowzero_cleared %d\nscalar_axes_fixed %d\n", c.nan_guards_removed,
           c.allowzero_cleared, c.scalar_axes_fixed);
    if (c.value_infos_dropped) printf("value_infos_dropped %d\n", c.value_infos_dropped);
    if (c.external_tensors) printf("external tensors re-saved %d (%s.data)\n", c.external_tensors, out);
    return 0;
}

int ct_cli_export(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage_to(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (wants_help(argc, argv)) return 0;
    if (!strcmp(argv[1], "step")) return cmd_step(argc, argv);
    if (!strcmp(argv[1], "codec")) return cmd_codec(argc, argv);
    if (!strcmp(argv[1], "sanitize")) return cmd_sanitize(argc, argv);
    fprintf(stderr, "export: unknown subcommand '%s'\n", argv[1]);
    usage();
    return 2;
}
