/* CLI subcommands for edge adaptation: probe, profile, calibrate. */
#ifndef CT_CLI_CMD_EDGE_H
#define CT_CLI_CMD_EDGE_H

/* `codectalk probe [--json] [--root DIR] [--derive] [-m DIR]`: prints the hardware profile
   (CODECTALK_HW_PROFILE replaces the probe unless --root is given). argv excludes the
   subcommand name. Returns the process exit code (0 ok, 1 failure, 2 usage). */
int ct_cli_probe(int argc, char **argv);

/* `codectalk profile --auto [-m DIR] [--explain] [--out FILE] [--set key=value]...` or
   `codectalk profile --profile FILE`: writes the materialised profile. Exit code as above. */
int ct_cli_profile(int argc, char **argv);

/* `codectalk calibrate -m DIR --timeline FILE [--cache-dir DIR] [--json] [--dry-run]`:
   derives the chunk schedule from a recorded chunk timeline and caches it. Exit code as above. */
int ct_cli_calibrate(int argc, char **argv);

#endif
