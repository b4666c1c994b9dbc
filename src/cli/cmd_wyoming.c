/* `codectalk wyoming`: model + engine (the serve flags) + the Wyoming server until a signal. */
#include "cli/cmd_wyoming.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli_engine.h"
#include "codectalk.h"
#include "edge/profile.h"
#include "serve/voices.h"
#include "serve/wyoming.h"

static void log_line(void *ud, const char *line) {
    (void)ud;
    fprintf(stderr, "%s\n", line);
}

int ct_cli_wyoming(int argc, char **argv) {
    const char *uri = "tcp://127.0.0.1:10200", *voices_dir = NULL;
    int quiet = 0, max_conns = 64, timeout = 30, max_chars = 4096;
    uint64_t seed = 0;
    ct_cli_engine_flags ef;
    ct_cli_engine_flags_init(&ef);
    ct_opt opts[32] = {
        {"uri", 0, CT_OPT_STR, &uri, "URI", "where to listen: tcp://HOST:PORT (default tcp://127.0.0.1:10200; port 0 = any)"},
        {"seed", 0, CT_OPT_U64, &seed, "N",
         "seed of every request, streamed ones too, so a text replays exactly (default: a new seed each)"},
        {"max-connections", 0, CT_OPT_INT, &max_conns, "N",
         "concurrent connections (default 64); one more gets an error event and is closed"},
        {"timeout", 0, CT_OPT_INT, &timeout, "S",
         "a connection silent for S s is closed, idle or inside an event (default 30); also the send timeout"},
        {"max-input-chars", 0, CT_OPT_INT, &max_chars, "N",
         "characters of a synthesize text, or the whole text of a streaming one (default 4096)"},
        {"quiet", 'q', CT_OPT_FLAG, &quiet, NULL, "no log (default: a line per request and per closed bad connection)"},
        {"voices-dir", 0, CT_OPT_STR, &voices_dir, "DIR",
         "Base models: the saved voices of DIR (serve's --voices-dir) are voices too, by name"},
    };
    int no = 7;
    no += ct_cli_engine_opts(&ef, opts + no, 31 - no);
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk wyoming -m DIR [--uri tcp://127.0.0.1:10200] [--profile auto|FILE]\n"
                          "       [--max-streams N] [--queue N] [--threads N] [--placement MODE] [--seed N]\n"
                          "Wyoming protocol server (Home Assistant): describe, synthesize, synthesize-start/-chunk/-stop.");
    if (r) return r < 0 ? 2 : 0;
    if (ct_cli_engine_check(&ef) != 0) return 2;
    char host[64], err[1024];
    int port = 0;
    if (ct_wy_parse_uri(uri, host, sizeof host, &port, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 2;
    }
    if (max_conns < 1 || timeout < 1 || max_chars < 1) {
        fprintf(stderr, "error: --max-connections, --timeout and --max-input-chars must be >= 1\n");
        return 2;
    }
    ct_cli_engine x;
    if (ct_cli_engine_open(&ef, &x) != 0) return 1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    signal(SIGPIPE, SIG_IGN);
    char id[96];
    ct_model_id(ef.model, id, sizeof id);
    ct_wy_params wp = ct_wy_params_default();
    wp.host = host;
    wp.port = port;
    wp.model_id = id;
    wp.stream = &x.sp;
    wp.max_connections = max_conns;
    wp.timeout_s = timeout;
    wp.max_input_chars = max_chars;
    wp.has_seed = ct_args_given(&seed);
    wp.seed = seed;
    wp.log_fn = quiet ? NULL : log_line;
    ct_wy *w = NULL;
    ct_voice_store *vs = NULL;
    int rc = 1;
    if (voices_dir && strcmp(ct_model_get_info(x.m).kind, "base") != 0) {
        fprintf(stderr, "error: --voices-dir: cloned voices need a Base model (this one is %s)\n",
                ct_model_get_info(x.m).kind);
        goto done;
    }
    if (voices_dir && ct_voice_store_open(voices_dir, &vs, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: --voices-dir: %s\n", err);
        goto done;
    }
    wp.voices = vs;
    if (ct_wy_start(x.e, x.m, &wp, &w, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    ct_engine_limits lim = ct_engine_get_limits(x.e);
    fprintf(stderr, "%s\n", x.pm->desc);
    fprintf(stderr, "codectalk wyoming: model '%s' on tcp://%s:%d (streams %d, queue %d, %s placement)\n", id, host,
            ct_wy_port(w), lim.max_streams, lim.queue_cap, ct_placement_str(lim.placement));
    if (ct_cli_engine_wait_ready(&x) != 0) goto done;
    fprintf(stderr, "ready\n");
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "signal %d: shutting down\n", sig);
    rc = 0;
done:
    ct_wy_stop(w);
    ct_voice_store_free(vs);
    ct_cli_engine_close(&x);
    return rc;
}
