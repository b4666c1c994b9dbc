/* CLI subcommand `codectalk bench summarize DIR [-o OUT_DIR]`: result JSON -> summary.md + SVGs
   (see src/report/summarize.h). */
#ifndef CT_CLI_CMD_SUMMARIZE_H
#define CT_CLI_CMD_SUMMARIZE_H

/* argv = the arguments after "summarize" (a leading "summarize" is also accepted): DIR and the
   options. Prints the log (errors/warnings naming files) to stderr and the outputs to stdout.
   Returns 0 when everything was summarised, 1 when the summary was written but some file was
   corrupt or malformed, or when nothing could be written (missing DIR, unwritable OUT_DIR),
   2 for bad usage. */
int ct_cli_summarize(int argc, char **argv);

#endif
