/* `codectalk export step|codec|sanitize`: on-device ONNX exports (docs/EXPORT.md). */
#ifndef CT_CMD_EXPORT_H
#define CT_CMD_EXPORT_H

/* argv[0] is "export". Returns the process exit status (0 ok, 1 runtime error, 2 usage). */
int ct_cli_export(int argc, char **argv);

#endif
