/* Long-option parsing with typed destinations and generated --help. */
#include "cli/args.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ct_args_help(const char *usage, const ct_opt *opts) {
    printf("%s\n\nOptions:\n", usage);
    for (const ct_opt *o = opts; o->name; o++) {
        char left[64];
        if (o->short_name)
            snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name, o->meta ? " " : "",
                     o->meta ? o->meta : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", o->name, o->meta ? " " : "", o->meta ? o->meta : "");
        printf("  %-28s %s\n", left, o->help);
    }
    printf("  %-28s %s\n", "-h, --help", "show this help");
}

static const ct_opt *find(const ct_opt *opts, const char *arg) {
    for (const ct_opt *o = opts; o->name; o++) {
        if (arg[0] == '-' && arg[1] == '-' && strcmp(arg + 2, o->name) == 0) return o;
        if (arg[0] == '-' && arg[1] && arg[1] == o->short_name && arg[2] == 0 && o->short_name)
            return o;
    }
    return NULL;
}

/* Destinations of the options the last ct_args_parse saw (the CLI parses once per process). */
static const void *g_given[128];
static int g_n_given;

int ct_args_given(const void *dst) {
    for (int i = 0; i < g_n_given; i++)
        if (g_given[i] == dst) return 1;
    return 0;
}

int ct_args_parse(int argc, char **argv, const ct_opt *opts, const char *usage) {
    g_n_given = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            ct_args_help(usage, opts);
            return 1;
        }
        const ct_opt *o = find(opts, a);
        if (!o) {
            fprintf(stderr, "error: unknown option '%s' (see --help)\n", a);
            return -1;
        }
        if (g_n_given < (int)(sizeof g_given / sizeof g_given[0])) g_given[g_n_given++] = o->dst;
        if (o->kind == CT_OPT_FLAG) {
            *(int *)o->dst = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: option '%s' needs a value\n", a);
            return -1;
        }
        const char *v = argv[++i];
        char *end = NULL;
        errno = 0;
        switch (o->kind) {
        case CT_OPT_STR: *(const char **)o->dst = v; break;
        case CT_OPT_INT: {
            long x = strtol(v, &end, 10);
            if (errno || !*v || *end || x < -2147483647L || x > 2147483647L) {
                fprintf(stderr, "error: option '%s' expects an integer, got '%s'\n", a, v);
                return -1;
            }
            *(int *)o->dst = (int)x;
            break;
        }
        case CT_OPT_U64: {
            unsigned long long x = strtoull(v, &end, 10);
            if (errno || !*v || *end || v[0] == '-') {
                fprintf(stderr, "error: option '%s' expects a non-negative integer, got '%s'\n", a, v);
                return -1;
            }
            *(uint64_t *)o->dst = (uint64_t)x;
            break;
        }
        case CT_OPT_FLOAT: {
            float x = strtof(v, &end);
            if (errno || !*v || *end || !isfinite(x)) { /* nan and inf are never a valid setting */
                fprintf(stderr, "error: option '%s' expects a finite number, got '%s'\n", a, v);
                return -1;
            }
            *(float *)o->dst = x;
            break;
        }
        case CT_OPT_FLAG: break;
        }
    }
    return 0;
}
