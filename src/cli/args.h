/* Tiny long-option parser shared by the CLI subcommands. */
#ifndef CT_CLI_ARGS_H
#define CT_CLI_ARGS_H

typedef enum { CT_OPT_FLAG, CT_OPT_STR, CT_OPT_INT, CT_OPT_FLOAT, CT_OPT_U64 } ct_opt_kind;

typedef struct {
    const char *name;  /* long name without dashes, e.g. "model" */
    char short_name;   /* 0 when none */
    ct_opt_kind kind;
    void *dst;         /* int* for FLAG/INT, const char** for STR, float* FLOAT, uint64_t* U64 */
    const char *meta;  /* value placeholder for help, e.g. "DIR" */
    const char *help;
} ct_opt;

/* Parses argv[0..argc) against opts (terminated by name == NULL). Prints an error naming the
   bad option to stderr and returns -1; returns 1 when --help was given, 0 otherwise. */
int ct_args_parse(int argc, char **argv, const ct_opt *opts, const char *usage);

/* 1 when the last ct_args_parse saw the option whose dst is `dst` (whatever its value): an
   explicit flag beats the deploy profile even when it repeats the flag's default. */
int ct_args_given(const void *dst);

/* Prints usage and every option. */
void ct_args_help(const char *usage, const ct_opt *opts);

#endif
