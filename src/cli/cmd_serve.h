/* CLI subcommands for serving: the OpenAI-compatible speech server and its load bench. */
#ifndef CT_CLI_CMD_SERVE_H
#define CT_CLI_CMD_SERVE_H

/* `codectalk serve -m DIR [--host 127.0.0.1] [--port 8000] [--profile auto|FILE]
   [--api-key K] [--max-streams N] [--queue N] [--threads N] ...`: loads the model, warms up
   and serves until SIGINT/SIGTERM. argv excludes the subcommand name. Returns the process exit
   code (0 ok, 1 failure, 2 usage). */
int ct_cli_serve(int argc, char **argv);

/* `codectalk bench serve --url URL --concurrency 1,2,4 --requests N [--json FILE] ...`: a
   loopback load client streaming raw PCM; per concurrency level reports TTFA and whole-request
   latency p50/p95, RTF, ring-buffer stalls, aggregate audio seconds per second and 503 counts,
   as JSON on stdout (and in FILE). argv excludes "bench serve". Exit code as above. */
int ct_cli_bench_serve(int argc, char **argv);

#endif
