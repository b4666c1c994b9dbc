/* `codectalk stats merge DIR`: thin wrapper over ct_stats_merge_dir / ct_stats_markdown. */
#include "cli/cmd_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/args.h"
#include "core/stepstats.h"

static const char USAGE[] =
    "usage: codectalk stats merge DIR [--json] [--top N]\n"
    "Merges the step-stats dumps (<role>_<pid>.json, written when CODECTALK_STEP_STATS_DIR is set)\n"
    "in DIR and prints the attribution table: role | counter | n | mean ms | p95 ms | share of 80 ms.";

int ct_cli_stats(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
        puts(USAGE);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "merge") != 0) {
        fprintf(stderr, "error: unknown stats action '%s' (expected 'merge')\n", argv[0]);
        return 2;
    }
    int json = 0, top = 0;
    const char *dir = NULL;
    /* The directory is the first argument that is not an option. */
    char **rest = malloc((size_t)(argc > 1 ? argc : 1) * sizeof *rest);
    if (!rest) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    int nr = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
            rest[nr++] = argv[i++]; /* the option and its value */
            rest[nr++] = argv[i];
        } else if (!dir && argv[i][0] != '-') {
            dir = argv[i];
        } else {
            rest[nr++] = argv[i];
        }
    }
    const ct_opt opts[] = {
        {"json", 0, CT_OPT_FLAG, &json, NULL, "print the merged {roles, attribution} JSON"},
        {"top", 0, CT_OPT_INT, &top, "N", "print only the first N attribution rows (0 = all)"},
        {NULL, 0, CT_OPT_FLAG, NULL, NULL, NULL},
    };
    int r = ct_args_parse(nr, rest, opts, USAGE);
    free(rest);
    if (r) return r < 0 ? 2 : 0;
    if (!dir) {
        fprintf(stderr, "error: stats merge needs a directory (see --help)\n");
        return 2;
    }
    json_t *merged = NULL;
    int n_files = 0;
    char err[1024];
    ct_status st = ct_stats_merge_dir(dir, &merged, &n_files, err, sizeof err);
    int rc = 0;
    if (st != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        rc = 1;
    }
    if (merged && n_files == 0 && st == CT_OK) {
        fprintf(stderr, "error: no step-stats dumps (*.json) in '%s'\n", dir);
        rc = 1;
    } else if (merged && n_files > 0) {
        if (json) {
            char *s = json_dumps(merged, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
            if (s) puts(s);
            else rc = 1;
            free(s);
        } else {
            char *md = ct_stats_markdown(merged, top);
            if (md) fputs(md, stdout);
            else rc = 1;
            free(md);
        }
    }
    json_decref(merged);
    return rc;
}
