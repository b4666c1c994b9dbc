/* CLI subcommand `codectalk wyoming`: the Wyoming protocol server (Home Assistant). */
#ifndef CT_CLI_CMD_WYOMING_H
#define CT_CLI_CMD_WYOMING_H

/* `codectalk wyoming -m DIR [--uri tcp://127.0.0.1:10200] [engine/profile flags of serve]`:
   loads the model, warms up and serves Wyoming until SIGINT/SIGTERM. argv excludes the
   subcommand name. Returns the exit code (0 ok, 1 failure, 2 usage). */
int ct_cli_wyoming(int argc, char **argv);

#endif
