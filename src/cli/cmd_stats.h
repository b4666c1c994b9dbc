/* CLI subcommand `codectalk stats`: merge step-stats dumps into the attribution table. */
#ifndef CT_CLI_CMD_STATS_H
#define CT_CLI_CMD_STATS_H

/* `codectalk stats merge DIR [--json] [--top N]`: merges every <role>_<pid>.json dump in DIR
   (docs/STREAMING.md 3) and prints the markdown attribution table, or with --json the merged
   {roles, attribution} object. A bad dump file is named on stderr; the table of the good files
   is still printed and the exit code is 1. argv excludes the subcommand name. Returns the
   process exit code (0 ok, 1 failure, 2 usage). */
int ct_cli_stats(int argc, char **argv);

#endif
