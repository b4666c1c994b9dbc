/* HTTP edge cases and hostile clients against the server, over raw loopback sockets (issue 19
   items 2 and 3): conflicting / invalid Content-Length, Transfer-Encoding other than chunked,
   %00 in the path, malformed request lines, HTTP/2.0, oversized headers and bad chunk sizes
   each get one clean OpenAI error JSON (one status line); keep-alive for GET and for a POST;
   a header dribbled byte by byte is cut at --header-timeout with 408; connections per address
   are bounded (429); /health answers from the reserve when every connection is taken and
   while 70 slow-loris connections hang; a streaming client that reads at 1 KB/s loses its
   slot after --write-timeout and the next request is served (codectalk_write_timeouts_total). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "codec/codec.h"
#include "codectalk.h"
#include "ct_test.h"
#include "serve/client.h"
#include "serve/gate.h"
#include "serve/http.h"
#include "test_models.h"

static ct_model *M;
static ct_codec *C;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A connected socket from source address src (127.0.0.x) with recv/send timeouts of tmo_ms;
   rcvbuf > 0 shrinks the receive buffer first. -1 on failure. */
static int dial(int port, const char *src, int tmo_ms, int rcvbuf) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = {tmo_ms / 1000, (tmo_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    if (src) {
        inet_pton(AF_INET, src, &sa.sin_addr);
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(fd);
            return -1;
        }
    }
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads one response (header + Content-Length body) into buf[cap]; returns its length. With
   to_close, reads until the peer closes instead. */
static size_t read_resp(int fd, char *buf, size_t cap, int to_close) {
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
        if (k <= 0) break;
        n += (size_t)k;
        buf[n] = 0;
        char *e = strstr(buf, "\r\n\r\n");
        if (!to_close && e) {
            char *cl = strcasestr(buf, "Content-Length:");
            if (cl && cl < e && (size_t)(e + 4 - buf) + (size_t)atoi(cl + 15) <= n) break;
        }
    }
    buf[n] = 0;
    return n;
}

static int count_of(const char *s, const char *needle) {
    int c = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++) c++;
    return c;
}

/* The response is exactly one status line with this status and an OpenAI error JSON body. */
static int one_json_error(const char *resp, int status) {
    char want[32];
    snprintf(want, sizeof want, "HTTP/1.1 %d ", status);
    const char *b = strstr(resp, "\r\n\r\n");
    if (strncmp(resp, want, strlen(want)) != 0 || count_of(resp, "HTTP/1.") != 1 || !b) return 0;
    json_error_t je;
    json_t *j = json_loads(b + 4, 0, &je);
    json_t *e = json_object_get(j, "error");
    int ok = json_is_object(e) && json_is_string(json_object_get(e, "message")) &&
             json_is_string(json_object_get(e, "type")) && json_object_get(e, "param") &&
             json_object_get(e, "code") && !strstr(resp, "<html");
    json_decref(j);
    return ok;
}

/* Sends raw bytes on a fresh connection and returns the whole answer (until close). */
static size_t raw(int port, const char *req, size_t len, char *out, size_t cap) {
    int fd = dial(port, NULL, 5000, 0);
    if (fd < 0) return 0;
    (void)!send(fd, req, len, MSG_NOSIGNAL);
    size_t n = read_resp(fd, out, cap, 1);
    close(fd);
    return n;
}

static ct_status http_get(int port, const char *path, ct_http_resp *r) {
    char err[256];
    return ct_http_request("127.0.0.1", port, "GET", path, NULL, NULL, 0, 5000, NULL, NULL, r, err, sizeof err);
}

static void start(ct_engine_params *ep, ct_http_params *hp, ct_engine **E, ct_http **H) {
    char err[1024];
    *H = NULL;
    CHECKF(ct_engine_create(M, C, ep, E, err, sizeof err) == CT_OK, "%s", err);
    hp->port = 0;
    hp->model_id = "tiny-test";
    CHECKF(*E && ct_http_start(*E, M, hp, H, err, sizeof err) == CT_OK, "%s", err);
}

static double metric_value(int port, const char *name) {
    ct_http_resp r;
    double v = -1;
    if (http_get(port, "/metrics", &r) != CT_OK) return -1;
    char pat[128];
    snprintf(pat, sizeof pat, "\n%s ", name);
    const char *p = strstr((const char *)r.body, pat);
    if (p) v = atof(p + strlen(pat));
    ct_http_resp_free(&r);
    return v;
}

static void edge_cases(int port) {
    static const struct {
        const char *name, *req;
        int status;
    } T[] = {
        {"two Content-Length", "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}", 400},
        {"Content-Length abc", "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400},
        {"Content-Length -1", "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
        {"Content-Length 2^64", "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551616\r\n\r\n", 400},
        {"Transfer-Encoding gzip", "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"TE and CL", "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400},
        {"%00 in path", "GET /health%00 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"malformed request line", "GET\r\n\r\n", 400},
        {"no version", "GET /health\r\n\r\n", 400},
        {"HTTP/2.0", "GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505},
        {"header line without colon", "GET /health HTTP/1.1\r\nHost x\r\n\r\n", 400},
        {"bad chunk size", "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n", 400},
    };
    static char out[65536];
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        double t0 = now_s();
        size_t n = raw(port, T[i].req, strlen(T[i].req), out, sizeof out);
        CHECKF(n > 0 && one_json_error(out, T[i].status) && now_s() - t0 < 2.0, "%s: %.300s", T[i].name, out);
    }
    /* 431: a 40 KB header line */
    size_t big = 40000;
    char *req = malloc(big + 64);
    int k = snprintf(req, 64, "GET /health HTTP/1.1\r\nX: ");
    memset(req + k, 'a', big);
    memcpy(req + k + big, "\r\n\r\n", 4);
    size_t n = raw(port, req, (size_t)k + big + 4, out, sizeof out);
    CHECKF(n > 0 && one_json_error(out, 431), "431: %.300s", out);
    free(req);
    /* the header check alone */
    ct_head_result hr;
    CHECK(ct_http_head_check("GET /health HTTP/1.1\r\nHo", 24, 1024, &hr) == 0);
    CHECK(ct_http_head_check("GET /metrics HTTP/1.1\r\n\r\n", 25, 1024, &hr) == 1 && hr.monitor && hr.head_len == 25);
    CHECK(ct_http_head_check("POST /x HTTP/1.1\r\nContent-Length: 4\r\ncontent-length: 4\r\n\r\n", 59, 1024, &hr) == 1);
}

static void keep_alive(int port) {
    static char out[8192];
    int fd = dial(port, NULL, 5000, 0);
    CHECK(fd >= 0);
    if (fd < 0) return;
    const char *get = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    const char *post = "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
    for (int i = 0; i < 3; i++) {
        const char *q = i == 1 ? post : get;
        CHECK(send(fd, q, strlen(q), MSG_NOSIGNAL) == (ssize_t)strlen(q));
        size_t n = read_resp(fd, out, sizeof out, 0);
        CHECKF(n > 0 && strncmp(out, i == 1 ? "HTTP/1.1 400" : "HTTP/1.1 200", 12) == 0 &&
                   !strcasestr(out, "Connection: close"),
               "request %d on one connection: %.200s", i, out);
    }
    close(fd);
}

/* A header dribbled one byte per 100 ms is cut at the header deadline (1 s here). */
static void slow_header(int port) {
    static char out[4096];
    int fd = dial(port, NULL, 6000, 0);
    CHECK(fd >= 0);
    if (fd < 0) return;
    const char *q = "GET /health HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    double t0 = now_s();
    size_t i = 0;
    for (; q[i] && now_s() - t0 < 4.0; i++) {
        if (send(fd, q + i, 1, MSG_NOSIGNAL) != 1) break;
        ct_test_sleep_ms(100);
    }
    size_t n = read_resp(fd, out, sizeof out, 1);
    CHECKF(n > 0 && one_json_error(out, 408) && now_s() - t0 < 3.5, "slow header: %.1f s, %.200s", now_s() - t0,
           out);
    close(fd);
    /* and between keep-alive requests */
    fd = dial(port, NULL, 6000, 0);
    const char *get = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(fd >= 0 && send(fd, get, strlen(get), MSG_NOSIGNAL) > 0 && read_resp(fd, out, sizeof out, 0) > 0);
    t0 = now_s();
    (void)!send(fd, "GET /he", 7, MSG_NOSIGNAL);
    ssize_t k = recv(fd, out, sizeof out, 0); /* closed after the deadline, long before 6 s */
    CHECKF(k <= 0 && now_s() - t0 < 3.0, "idle keep-alive: %.1f s", now_s() - t0);
    if (fd >= 0) close(fd);
}

typedef struct {
    int fd;
    atomic_int stop;
    size_t got;
} slow_reader;

/* Reads 512 bytes every 500 ms (1 KB/s) until stopped or the server closes. */
static void *slow_read(void *arg) {
    slow_reader *s = arg;
    char b[512];
    while (!atomic_load(&s->stop)) {
        ssize_t k = recv(s->fd, b, sizeof b, 0);
        if (k <= 0) break;
        s->got += (size_t)k;
        ct_test_sleep_ms(500);
    }
    return NULL;
}

int main(void) {
    char err[1024];
    CHECK(ct_test_load("tiny", "serve-edge-tiny", 5, &M, &C));
    if (!M || !C) return ct_test_finish();

    ct_engine_params ep = ct_engine_params_default();
    ep.max_streams = 1;
    ep.queue_cap = 2;
    ep.max_context = 512;
    ep.warmup = 0;
    ct_engine *E = NULL;
    ct_http *H = NULL;

    /* 1. edge cases, keep-alive, slow headers */
    ct_http_params hp = ct_http_params_default();
    hp.header_timeout_s = 1;
    start(&ep, &hp, &E, &H);
    if (H) {
        int port = ct_http_port(H);
        edge_cases(port);
        keep_alive(port);
        slow_header(port);
        CHECK(metric_value(port, "codectalk_header_timeouts_total") >= 2);
    }
    ct_http_stop(H);
    ct_engine_free(E);

    /* 2. per-address limit, the reserve, 70 slow-loris connections */
    hp = ct_http_params_default();
    hp.max_connections = 2;
    hp.reserve_connections = 1;
    hp.max_conn_per_ip = 3;
    start(&ep, &hp, &E, &H);
    if (H) {
        int port = ct_http_port(H);
        static char out[4096];
        const char *get = "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
        int idle[3];
        for (int i = 0; i < 2; i++) { /* two kept-alive connections take every normal place */
            idle[i] = dial(port, NULL, 5000, 0);
            CHECK(idle[i] >= 0 && send(idle[i], get, strlen(get), MSG_NOSIGNAL) > 0 &&
                  read_resp(idle[i], out, sizeof out, 0) > 0 && strncmp(out, "HTTP/1.1 200", 12) == 0);
        }
        size_t n = raw(port, get, strlen(get), out, sizeof out);
        CHECKF(n && one_json_error(out, 503), "all taken: %.200s", out);
        const char *health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
        n = raw(port, health, strlen(health), out, sizeof out);
        CHECKF(n && strncmp(out, "HTTP/1.1 200", 12) == 0 && strcasestr(out, "Connection: close"), "reserve: %.200s",
               out);
        ct_test_sleep_ms(200); /* the reserve connection is closed */
        idle[2] = dial(port, NULL, 5000, 0); /* third from 127.0.0.1: fine; the fourth is over */
        ct_test_sleep_ms(100);
        n = raw(port, health, strlen(health), out, sizeof out);
        CHECKF(n && one_json_error(out, 429), "per address: %.200s", out);
        for (int i = 0; i < 3; i++)
            if (idle[i] >= 0) close(idle[i]);
        ct_test_sleep_ms(200);
    }
    ct_http_stop(H);
    ct_engine_free(E);

    hp = ct_http_params_default(); /* 64 connections, 32 per address */
    start(&ep, &hp, &E, &H);
    if (H) {
        int port = ct_http_port(H);
        int fds[70], opened = 0;
        for (int i = 0; i < 70; i++) {
            fds[i] = dial(port, "127.0.0.1", 2000, 0);
            if (fds[i] >= 0) opened++, (void)!send(fds[i], "GET /health HTTP/1.1\r\nX: ", 25, MSG_NOSIGNAL);
        }
        CHECK(opened == 70);
        ct_test_sleep_ms(300);
        static char out[4096];
        int fd = dial(port, "127.0.0.2", 3000, 0); /* another client */
        const char *health = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        double t0 = now_s();
        size_t n = 0;
        if (fd >= 0 && send(fd, health, strlen(health), MSG_NOSIGNAL) > 0) n = read_resp(fd, out, sizeof out, 1);
        CHECKF(n && strncmp(out, "HTTP/1.1 200", 12) == 0 && now_s() - t0 < 2.0, "health under slow loris: %.200s",
               out);
        if (fd >= 0) close(fd);
        for (int i = 0; i < 70; i++)
            if (fds[i] >= 0) close(fds[i]);
        ct_test_sleep_ms(300); /* the gate sees them go */
        double refused = metric_value(port, "codectalk_connections_refused_total");
        CHECKF(refused >= 38, "refused %g", refused);
    }
    ct_http_stop(H);
    ct_engine_free(E);

    /* 3. a streaming client that reads at 1 KB/s loses its (only) slot after --write-timeout */
    ep.buffer_ms = 1000;
    hp = ct_http_params_default();
    hp.write_timeout_s = 1;
    start(&ep, &hp, &E, &H);
    if (H) {
        int port = ct_http_port(H);
        int fd = dial(port, NULL, 5000, 4096);
        char req[512];
        const char *body = "{\"input\":\"A long stream for a client that never reads it.\",\"stream\":true,"
                           "\"stream_format\":\"audio\",\"response_format\":\"pcm\",\"seed\":3,\"max_new_tokens\":400}";
        int rl = snprintf(req, sizeof req, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                          strlen(body), body);
        CHECK(fd >= 0 && send(fd, req, (size_t)rl, MSG_NOSIGNAL) == rl);
        int active = 0;
        for (int t = 0; t < 400 && !active; t++, ct_test_sleep_ms(10)) active = ct_engine_get_counters(E).active == 1;
        CHECK(active);
        slow_reader sr = {fd, 0, 0};
        pthread_t th;
        pthread_create(&th, NULL, slow_read, &sr);
        double t0 = now_s();
        ct_http_resp r;
        const char *b2 = "{\"input\":\"next\",\"seed\":1,\"max_new_tokens\":4}";
        CHECK(ct_http_request("127.0.0.1", port, "POST", "/v1/audio/speech", NULL, b2, strlen(b2), 8000, NULL, NULL,
                              &r, err, sizeof err) == CT_OK);
        CHECKF(r.status == 200 && now_s() - t0 < 8.0, "status %d after %.1f s", r.status, now_s() - t0);
        ct_http_resp_free(&r);
        CHECK(metric_value(port, "codectalk_write_timeouts_total") == 1);
        atomic_store(&sr.stop, 1);
        pthread_join(th, NULL);
        CHECK(sr.got > 0);
        if (fd >= 0) close(fd);
    }
    ct_http_stop(H);
    ct_engine_free(E);
    ct_model_free(M);
    ct_codec_free(C);
    return ct_test_finish();
}
