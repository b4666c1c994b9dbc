/* `codectalk serve` (model + engine + HTTP front end until a signal) and `codectalk bench
   serve` (a loopback load client measuring what each listener hears). */
#include "cli/cmd_serve.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/args.h"
#include "cli/cli_common.h"
#include "cli/cli_engine.h"
#include "cli/cli_profile.h"
#include "codec/codec.h"
#include "codectalk.h"
#include "core/clock.h"
#include "core/sha256.h"
#include "edge/profile.h"
#include "serve/client.h"
#include "serve/http.h"
#include "serve/ws.h"
#include "stream/metrics.h"

/* The access log: one line per request on stderr. */
static void access_line(void *ud, const char *line) {
    (void)ud;
    fprintf(stderr, "%s\n", line);
}

int ct_cli_serve(int argc, char **argv) {
    const char *host = "127.0.0.1", *api_key = NULL, *model_alias = NULL, *voice_alias = NULL, *cors = NULL;
    const char *voices_dir = NULL;
    int quiet = 0, upload_mb = 32;
    int port = 8000, timeout = 30;
    int body_kb = 64, codec_chunk = 0, max_chars = 4096;
    int header_timeout = 10, write_timeout = 20, max_conns = 64, per_ip = 32, reserve = 4;
    int ws_port = -1, ws_max_kb = 64, ws_idle_ms = 30000;
    ct_cli_engine_flags ef;
    ct_cli_engine_flags_init(&ef);
    ct_cli_text tx = {0, 0, 0};
    ct_opt opts[64] = {
        {"host", 0, CT_OPT_STR, &host, "ADDR", "IPv4 address or host name to bind (default 127.0.0.1)"},
        {"cors", 0, CT_OPT_STR, &cors, "ORIGIN", "allow browsers on ORIGIN (or *) to call the API (CORS headers, preflights)"},
        {"quiet", 'q', CT_OPT_FLAG, &quiet, NULL,
         "no access log (default: one line per request on stderr: method, path, status, bytes, audio s, TTFA, RTF)"},
        {"port", 'p', CT_OPT_INT, &port, "N", "TCP port (default 8000; 0 = any free port)"},
        {"api-key", 0, CT_OPT_STR, &api_key, "KEY", "require Authorization: Bearer KEY (default: $CODECTALK_API_KEY)"},
        {"timeout", 0, CT_OPT_INT, &timeout, "S", "idle connection timeout and body upload limit in s (default 30)"},
        {"header-timeout", 0, CT_OPT_INT, &header_timeout, "S",
         "a request header must be complete within S s, also between keep-alive requests (default 10)"},
        {"write-timeout", 0, CT_OPT_INT, &write_timeout, "S",
         "a streaming client that takes no bytes for S s loses its stream (default 20)"},
        {"max-connections", 0, CT_OPT_INT, &max_conns, "N", "concurrent connections (default 64)"},
        {"max-conn-per-ip", 0, CT_OPT_INT, &per_ip, "N", "connections per client address (default 32; 0 = no limit)"},
        {"reserve-connections", 0, CT_OPT_INT, &reserve, "N",
         "extra connections only for GET /health and /metrics (default 4)"},
        {"max-body-kb", 0, CT_OPT_INT, &body_kb, "N", "request body limit in KiB (default 64)"},
        {"max-input-chars", 0, CT_OPT_INT, &max_chars, "N", "limit on `input` characters (default 4096)"},
        {"model-alias", 0, CT_OPT_STR, &model_alias, "LIST",
         "other ids the `model` field may name (default tts-1,tts-1-hd,gpt-4o-mini-tts; \"\" = none)"},
        {"voice-alias", 0, CT_OPT_STR, &voice_alias, "LIST",
         "alias=voice pairs over the OpenAI voice table (alloy, ash, ... -> this model's voices); \"-\" = no aliases"},
        {"codec-chunk", 0, CT_OPT_INT, &codec_chunk, "N",
         "steady codec chunk in frames, 1..64: schedule fixed:IC,N (docs/SERVE.md; default: exact)"},
        {"voices-dir", 0, CT_OPT_STR, &voices_dir, "DIR",
         "Base models: keep uploaded voices (POST /v1/audio/voices) in DIR, created if missing"},
        {"max-upload-mb", 0, CT_OPT_INT, &upload_mb, "N",
         "Base models: body limit of voice uploads and of speech requests with ref_audio (default 32)"},
        {"ws-port", 0, CT_OPT_INT, &ws_port, "N",
         "serve the streaming-text WebSocket /v1/audio/speech/stream on port N (0 = any free port; default off)"},
        {"ws-max-message-kb", 0, CT_OPT_INT, &ws_max_kb, "N", "WebSocket: a larger client message closes with 1009 (default 64)"},
        {"ws-idle-ms", 0, CT_OPT_INT, &ws_idle_ms, "MS",
         "WebSocket: an utterance with no text nor input.done for MS ms fails with an error event (default 30000)"},
    };
    int no = 21;
    no += ct_cli_engine_opts(&ef, opts + no, 63 - no);
    no += ct_cli_text_opts(&tx, opts + no, 63 - no);
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk serve -m DIR [--host 127.0.0.1] [--port 8000] [--profile auto|FILE]\n"
                          "       [--api-key K] [--max-streams N] [--queue N] [--threads N] [--placement MODE]\n"
                          "OpenAI-compatible speech server: POST /v1/audio/speech, GET /v1/models, /health, /metrics;\n"
                          "on a Base model GET/POST /v1/audio/voices, GET/DELETE /v1/audio/voices/NAME (cloned voices).");
    if (r) return r < 0 ? 2 : 0;
    if (ct_cli_engine_check(&ef) != 0 || ct_cli_text_check(&tx) != 0) return 2;
    if (codec_chunk < 0 || body_kb < 1 || timeout < 1 || max_chars < 1 || header_timeout < 1 || write_timeout < 1 ||
        max_conns < 1 || per_ip < 0 || reserve < 0 || upload_mb < 1 || upload_mb > 1024 || ws_port < -1 ||
        ws_port > 65535 || ws_max_kb < 1 || ws_max_kb > 65536 || ws_idle_ms < 0) {
        fprintf(stderr, "error: --codec-chunk/--max-conn-per-ip/--reserve-connections must be >= 0; --max-body-kb, "
                        "--timeout, --header-timeout, --write-timeout, --max-connections, --max-input-chars >= 1; "
                        "--max-upload-mb in [1, 1024]; --ws-port in [0, 65535], --ws-max-message-kb in [1, 65536], "
                        "--ws-idle-ms >= 0\n");
        return 2;
    }
    if (!api_key) api_key = getenv("CODECTALK_API_KEY");
    char err[1024];
    ct_cli_engine x;
    if (ct_cli_engine_open(&ef, &x) != 0) return 1;
    const char *model = ef.model;
    ct_cli_deploy *pm = x.pm;
    ct_engine *e = x.e;
    ct_model *m = x.m;
    ct_stream_params sp = x.sp;
    ct_cli_text_apply(&tx, &sp); /* the server's pauses: requests may set their own */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    signal(SIGPIPE, SIG_IGN);
    ct_http *h = NULL;
    ct_ws *ws = NULL;
    ct_voice_store *vs = NULL;
    ct_speech_encoder *senc = NULL;
    int rc = 1;
    int base = !strcmp(ct_model_get_info(m).kind, "base");
    if (voices_dir && !base) {
        fprintf(stderr, "error: --voices-dir: voice cloning needs a Base model (this one is %s)\n",
                ct_model_get_info(m).kind);
        goto done;
    }
    if (voices_dir && ct_voice_store_open(voices_dir, &vs, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: --voices-dir: %s\n", err);
        goto done;
    }
    /* a Base model clones: ICL clones need the speech-tokenizer encoder */
    if (base && ct_speech_encoder_load(model, &senc, err, sizeof err) != CT_OK)
        fprintf(stderr, "warning: %s: ICL clones are off (x-vector-only clones still work)\n", err);
    char id[96];
    ct_model_id(model, id, sizeof id);
    ct_http_params hp = ct_http_params_default();
    hp.host = host;
    hp.port = port;
    hp.api_key = api_key;
    hp.model_id = id;
    char codec_id[80];
    if (ct_codec_id(model, codec_id, sizeof codec_id, err, sizeof err) != CT_OK) { /* header of codes streams */
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    hp.codec_id = codec_id;
    if ((sp.sentence_pause_ms > 0 || sp.paragraph_pause_ms > 0) && sp.utterance_bytes == 0) {
        fprintf(stderr, "error: --sentence-pause-ms/--paragraph-pause-ms need utterance splitting (the profile's "
                        "streaming.utterance_bytes is 0)\n");
        rc = 2;
        goto done;
    }
    hp.connection_timeout_s = timeout;
    hp.header_timeout_s = header_timeout;
    hp.write_timeout_s = write_timeout;
    hp.max_connections = max_conns;
    hp.max_conn_per_ip = per_ip ? per_ip : -1;
    hp.reserve_connections = reserve;
    hp.max_body_bytes = (size_t)body_kb * 1024;
    hp.max_input_chars = max_chars;
    hp.codec_chunk = codec_chunk;
    hp.model_aliases = model_alias;
    hp.cors_origin = cors;
    hp.log_fn = quiet ? NULL : access_line;
    hp.voice_aliases = voice_alias;
    hp.schedule = sp.schedule;
    hp.stream = &sp;
    hp.voices = vs;
    hp.encoder = senc;
    hp.max_upload_bytes = (size_t)upload_mb << 20;
    if (ct_http_start(e, m, &hp, &h, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    if (ws_port >= 0) {
        ct_ws_params wp = ct_ws_params_default();
        wp.host = host;
        wp.port = ws_port;
        wp.max_message_bytes = (size_t)ws_max_kb << 10;
        wp.text_idle_timeout_ms = ws_idle_ms;
        if (ct_ws_start(e, h, &wp, &ws, err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: --ws-port: %s\n", err);
            goto done;
        }
        fprintf(stderr, "codectalk serve: streaming text on ws://%s:%d/v1/audio/speech/stream\n", host, ct_ws_port(ws));
    }
    ct_engine_limits lim = ct_engine_get_limits(e);
    fprintf(stderr, "%s\n", pm->desc);
    fprintf(stderr,
            "codectalk serve: model '%s' on http://%s:%d (streams %d, queue %d, context %d, KV %.1f MiB/stream of "
            "%.1f MiB, margin %.0f ms, %s placement, %d talker + %d codec threads%s)\n",
            id, host, ct_http_port(h), lim.max_streams, lim.queue_cap, lim.max_context,
            lim.kv_bytes_per_stream / 1048576.0, lim.kv_budget_bytes / 1048576.0, lim.safety_margin_ms,
            ct_placement_str(lim.placement), lim.talker_threads, lim.codec_threads,
            api_key && *api_key ? ", auth on" : "");
    if (strcmp(host, "127.0.0.1") != 0 && !(api_key && *api_key))
        fprintf(stderr, "warning: listening on %s without --api-key\n", host);
    if (ct_cli_engine_wait_ready(&x) != 0) goto done;
    fprintf(stderr, "ready\n");
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "signal %d: shutting down\n", sig);
    rc = 0;
done:
    ct_ws_stop(ws);
    ct_http_stop(h);
    ct_cli_engine_close(&x);
    ct_voice_store_free(vs);
    ct_speech_encoder_free(senc);
    return rc;
}

/* ---- bench serve ------------------------------------------------------------------------ */

typedef struct {
    int ok, status;           /* ok: 200 with audio */
    double ttfa_ms, t_last_ms, audio_s, rtf, stall_ms, total_ms;
    int n_stalls;
} bench_rec;

typedef struct {
    char host[64];
    int port, timeout_ms;
    const char *path;
    char hdr[300];
    char *body;               /* one body per request index, made by the caller */
    int n_req;
    atomic_int next;
    bench_rec *recs;
} bench_run;

static void *bench_worker(void *arg) {
    bench_run *b = arg;
    ct_chunk_rec *ch = NULL;
    int cap = 0;
    for (;;) {
        int i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n_req) break;
        bench_rec *o = &b->recs[i];
        memset(o, 0, sizeof *o);
        ct_http_resp r;
        char err[256];
        if (ct_http_request(b->host, b->port, "POST", b->path, b->hdr, b->body, strlen(b->body), b->timeout_ms, NULL,
                            NULL, &r, err, sizeof err) != CT_OK) {
            o->status = -1;
            continue;
        }
        o->status = r.status;
        if (r.status == 200 && r.body_len >= 2 && r.n_events > 0) {
            if (r.n_events > cap) {
                cap = r.n_events;
                ct_chunk_rec *nc = realloc(ch, sizeof *ch * (size_t)cap);
                if (!nc) {
                    ct_http_resp_free(&r);
                    break;
                }
                ch = nc;
            }
            size_t bytes = 0;
            int64_t prev = 0;
            for (int k = 0; k < r.n_events; k++) {
                bytes += r.bytes[k];
                int64_t s = (int64_t)(bytes / 2);
                ch[k].t_ms = r.t_ms[k];
                ch[k].samples = s - prev;
                prev = s;
            }
            ct_stream_metrics sm;
            if (ct_stream_metrics_compute(ch, r.n_events, 24000, r.t_total_ms, 0, &sm, err, sizeof err) == CT_OK) {
                o->ok = 1;
                o->ttfa_ms = sm.ttfa_ms;
                o->t_last_ms = sm.t_last_audio_ms;
                o->audio_s = sm.streamed_audio_s;
                o->rtf = sm.rtf_streamed;
                o->stall_ms = sm.stall_at_ttfa_ms;
                o->n_stalls = sm.n_stalls_at_ttfa;
                o->total_ms = r.t_total_ms;
            }
        }
        ct_http_resp_free(&r);
    }
    free(ch);
    return NULL;
}

static double pct(double *v, int n, double q) {
    if (n == 0) return NAN;
    for (int i = 1; i < n; i++) /* insertion sort: n is small */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return ct_percentile_nearest(v, n, q);
}

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

int ct_cli_bench_serve(int argc, char **argv) {
    const char *url = "http://127.0.0.1:8000", *conc = "1,2,4", *text = NULL, *voice = NULL, *json_out = NULL;
    const char *api_key = NULL;
    int requests = 8, max_new_tokens = 100, timeout_s = 600;
    uint64_t seed = 1;
    ct_opt opts[] = {
        {"url", 0, CT_OPT_STR, &url, "URL", "server base URL (default http://127.0.0.1:8000)"},
        {"concurrency", 'c', CT_OPT_STR, &conc, "LIST", "concurrency levels, e.g. 1,2,4 (default)"},
        {"requests", 'n', CT_OPT_INT, &requests, "N", "requests per level (default 8)"},
        {"text", 't', CT_OPT_STR, &text, "TEXT", "input text (default: a built-in sentence)"},
        {"voice", 0, CT_OPT_STR, &voice, "NAME", "voice (default: the server's default)"},
        {"max-new-tokens", 0, CT_OPT_INT, &max_new_tokens, "N", "per request (default 100 = 99 frames, 7.9 s)"},
        {"seed", 0, CT_OPT_U64, &seed, "N", "seed of request 0 (request i uses seed + i)"},
        {"api-key", 0, CT_OPT_STR, &api_key, "KEY", "bearer token (default: $CODECTALK_API_KEY)"},
        {"timeout", 0, CT_OPT_INT, &timeout_s, "S", "per-read timeout (default 600)"},
        {"json", 0, CT_OPT_STR, &json_out, "FILE", "also write the JSON result to FILE"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk bench serve --url URL --concurrency 1,2,4 --requests N [--json FILE]\n"
                          "Streams raw PCM from a running server; per level: TTFA, RTF, stalls, audio s per s, 503s.");
    if (r) return r < 0 ? 2 : 0;
    if (requests < 1 || max_new_tokens < 2 || timeout_s < 1) {
        fprintf(stderr, "error: --requests >= 1, --max-new-tokens >= 2, --timeout >= 1\n");
        return 2;
    }
    if (!api_key) api_key = getenv("CODECTALK_API_KEY");
    if (!text) text = "The quick brown fox jumps over the lazy dog, and then it takes a well deserved nap in the sun.";
    bench_run b;
    memset(&b, 0, sizeof b);
    char err[256];
    if (ct_http_parse_url(url, b.host, sizeof b.host, &b.port, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 2;
    }
    int levels[32], nl = 0;
    for (const char *p = conc; *p && nl < 32;) {
        char *q;
        long v = strtol(p, &q, 10);
        if (q == p || v < 1 || v > 256 || (*q && *q != ',')) {
            fprintf(stderr, "error: --concurrency '%s' must be a list like 1,2,4 (each 1..256)\n", conc);
            return 2;
        }
        levels[nl++] = (int)v;
        p = *q ? q + 1 : q;
    }
    signal(SIGPIPE, SIG_IGN);
    b.path = "/v1/audio/speech";
    b.timeout_ms = timeout_s * 1000;
    if (api_key && *api_key) snprintf(b.hdr, sizeof b.hdr, "Authorization: Bearer %.200s\r\n", api_key);
    json_t *in = json_object();
    json_object_set_new(in, "input", json_string(text));
    if (voice) json_object_set_new(in, "voice", json_string(voice));
    json_object_set_new(in, "response_format", json_string("pcm"));
    json_object_set_new(in, "stream", json_true());
    json_object_set_new(in, "stream_format", json_string("audio"));
    json_object_set_new(in, "max_new_tokens", json_integer(max_new_tokens));
    json_object_set_new(in, "seed", json_integer((json_int_t)seed));
    b.body = json_dumps(in, JSON_COMPACT);
    json_decref(in);
    b.recs = calloc((size_t)requests, sizeof *b.recs);
    double *tmp = malloc(sizeof(double) * (size_t)requests);
    if (!b.body || !b.recs || !tmp) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    json_t *doc = json_pack("{s:s, s:s, s:i, s:i, s:s}", "schema", "codectalk.bench_serve/1", "url", url, "requests",
                            requests, "max_new_tokens", max_new_tokens, "text", text);
    json_t *arr = json_array();
    double base_aps = NAN;
    int rc = 0;
    for (int li = 0; li < nl; li++) {
        int c = levels[li];
        atomic_store(&b.next, 0);
        b.n_req = requests;
        pthread_t *th = malloc(sizeof(pthread_t) * (size_t)c);
        double t0 = ct_now_ms();
        for (int k = 0; k < c; k++) pthread_create(&th[k], NULL, bench_worker, &b);
        for (int k = 0; k < c; k++) pthread_join(th[k], NULL);
        double wall = (ct_now_ms() - t0) / 1e3;
        free(th);
        int ok = 0, n503 = 0, nerr = 0, stalls = 0, with_stalls = 0;
        double audio = 0, stall_ms = 0;
        for (int i = 0; i < requests; i++) {
            bench_rec *o = &b.recs[i];
            if (o->ok) {
                ok++;
                audio += o->audio_s;
                stalls += o->n_stalls;
                with_stalls += o->n_stalls > 0;
                stall_ms += o->stall_ms;
            } else if (o->status == 503) {
                n503++;
            } else {
                nerr++;
            }
        }
        int n = 0;
        for (int i = 0; i < requests; i++)
            if (b.recs[i].ok) tmp[n++] = b.recs[i].ttfa_ms;
        double t50 = pct(tmp, n, 0.5), t95 = pct(tmp, n, 0.95), tmax = n ? tmp[n - 1] : NAN;
        n = 0;
        for (int i = 0; i < requests; i++)
            if (b.recs[i].ok) tmp[n++] = b.recs[i].rtf;
        double r50 = pct(tmp, n, 0.5), r95 = pct(tmp, n, 0.95);
        n = 0;
        for (int i = 0; i < requests; i++)
            if (b.recs[i].ok) tmp[n++] = b.recs[i].total_ms;
        double l50 = pct(tmp, n, 0.5), l95 = pct(tmp, n, 0.95);
        double aps = wall > 0 ? audio / wall : NAN;
        if (li == 0) base_aps = aps;
        json_t *lv = json_pack("{s:i, s:i, s:i, s:i}", "concurrency", c, "ok", ok, "rejected_503", n503, "errors", nerr);
        json_object_set_new(lv, "ttfa_ms", json_pack("{s:o, s:o, s:o}", "p50", num(t50), "p95", num(t95), "max", num(tmax)));
        json_object_set_new(lv, "rtf_streamed", json_pack("{s:o, s:o}", "p50", num(r50), "p95", num(r95)));
        json_object_set_new(lv, "latency_ms", json_pack("{s:o, s:o}", "p50", num(l50), "p95", num(l95)));
        json_object_set_new(lv, "stalls", json_pack("{s:i, s:i, s:o}", "count", stalls, "requests_with_stalls",
                                                    with_stalls, "total_ms", num(stall_ms)));
        json_object_set_new(lv, "audio_s", num(audio));
        json_object_set_new(lv, "wall_s", num(wall));
        json_object_set_new(lv, "audio_s_per_s", num(aps));
        json_object_set_new(lv, "throughput_vs_first_level", num(aps / base_aps));
        json_array_append_new(arr, lv);
        fprintf(stderr,
                "concurrency %d: %d ok, %d x 503, %d errors; TTFA p50 %.0f p95 %.0f ms; latency p50 %.0f p95 %.0f ms; "
                "RTF p50 %.3f p95 %.3f; stalls %d (%.0f ms); %.2f audio s/s (x%.2f)\n",
                c, ok, n503, nerr, t50, t95, l50, l95, r50, r95, stalls, stall_ms, aps, aps / base_aps);
        if (nerr) rc = 1;
    }
    json_object_set_new(doc, "levels", arr);
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s) {
        puts(s);
        if (json_out) {
            FILE *f = fopen(json_out, "w");
            if (!f || fputs(s, f) < 0) {
                fprintf(stderr, "error: cannot write '%s'\n", json_out);
                rc = 1;
            }
            if (f) fclose(f);
        }
        free(s);
    }
    json_decref(doc);
    free(b.body);
    free(b.recs);
    free(tmp);
    return rc;
}
