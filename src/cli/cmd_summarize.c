/* `codectalk bench summarize DIR [-o OUT_DIR]`: thin wrapper over ct_summarize_dir. */
#include "cli/cmd_summarize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "report/summarize.h"

static const char USAGE[] =
    "usage: codectalk bench summarize DIR [-o OUT_DIR] [--timelines N] [--request-rows N]\n"
    "Renders every result JSON under DIR (stream bench schema 1, model bench, sweeps) as\n"
    "OUT_DIR/summary.md (default DIR/summary/) with SVG plots: per-request chunk timelines\n"
    "against the playback cursor (stalls shaded) and step-time attribution bars.\n"
    "See docs/BENCH.md for how to read them.";

int ct_cli_summarize(int argc, char **argv) {
    if (argc > 0 && strcmp(argv[0], "summarize") == 0) {
        argc--;
        argv++;
    }
    const char *dir = NULL, *out = NULL;
    ct_summarize_opts o = ct_summarize_opts_default();
    const ct_opt opts[] = {
        {"out", 'o', CT_OPT_STR, &out, "OUT_DIR", "output directory (default DIR/summary)"},
        {"timelines", 0, CT_OPT_INT, &o.max_timelines, "N",
         "chunk-timeline plots per stream result: the first N measured requests (default 4, 0 = none)"},
        {"request-rows", 0, CT_OPT_INT, &o.max_request_rows, "N",
         "rows of the per-request table (default 50, 0 = no table)"},
        {NULL, 0, CT_OPT_FLAG, NULL, NULL, NULL},
    };
    /* DIR is the first argument that is neither an option nor an option's value. */
    char **rest = malloc((size_t)(argc > 0 ? argc : 1) * sizeof *rest);
    if (!rest) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    int nr = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int takes_value = !strcmp(a, "-o") || !strcmp(a, "--out") || !strcmp(a, "--timelines") ||
                          !strcmp(a, "--request-rows");
        if (takes_value && i + 1 < argc) {
            rest[nr++] = argv[i++];
            rest[nr++] = argv[i];
        } else if (!dir && a[0] != '-') {
            dir = a;
        } else {
            rest[nr++] = argv[i];
        }
    }
    int r = ct_args_parse(nr, rest, opts, USAGE);
    free(rest);
    if (r) return r < 0 ? 2 : 0;
    if (!dir) {
        fprintf(stderr, "error: bench summarize needs a results directory (see --help)\n");
        return 2;
    }
    if (o.max_timelines < 0 || o.max_request_rows < 0) {
        fprintf(stderr, "error: --timelines and --request-rows must be >= 0\n");
        return 2;
    }
    ct_summarize_result res;
    char err[1200];
    ct_status st = ct_summarize_dir(dir, out, &o, &res, err, sizeof err);
    if (res.log) fputs(res.log, stderr);
    int rc = 0;
    if (st != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        rc = 1;
    } else {
        if (res.n_json == 0) fprintf(stderr, "warning: no result files (*.json) under '%s'\n", dir);
        printf("%s: %d stream, %d model bench, %d sweep result%s, %d skipped, %d with errors; %d SVG plot%s\n",
               res.summary_path, res.n_stream, res.n_model, res.n_sweep,
               res.n_stream + res.n_model + res.n_sweep == 1 ? "" : "s", res.n_skipped, res.n_failed, res.n_svg,
               res.n_svg == 1 ? "" : "s");
        if (res.n_failed) rc = 1;
    }
    ct_summarize_result_free(&res);
    return rc;
}
