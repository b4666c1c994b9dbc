/* Front gate and connection guard of the server (see gate.h). */
#define _GNU_SOURCE
#include "serve/gate.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- header check ------------------------------------------------------------------------- */

static int reject(ct_head_result *r, int status, const char *code, const char *msg) {
    r->status = status;
    snprintf(r->code, sizeof r->code, "%s", code);
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    return -1;
}

static int is_tchar(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* The request line b[0..n) (no line end): METHOD SP target SP HTTP/x.y. */
static int check_request_line(const char *b, size_t n, ct_head_result *r) {
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)b[i])) i++;
    size_t mlen = i;
    if (mlen == 0 || mlen > 32 || i >= n || b[i] != ' ') return reject(r, 400, "invalid_request", "malformed request line");
    size_t t0 = ++i;
    while (i < n && b[i] != ' ') {
        unsigned char c = (unsigned char)b[i];
        if (c < 0x21 || c == 0x7f) return reject(r, 400, "invalid_request", "control byte in the request target");
        if (c == '%' && i + 2 < n && b[i + 1] == '0' && b[i + 2] == '0')
            return reject(r, 400, "invalid_request", "%00 in the request target");
        i++;
    }
    size_t tlen = i - t0;
    if (tlen == 0 || b[t0] != '/' || i >= n) return reject(r, 400, "invalid_request", "malformed request line");
    const char *v = b + i + 1;
    size_t vn = n - i - 1;
    if (vn != 8 || strncmp(v, "HTTP/", 5) != 0 || v[6] != '.' || v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9')
        return reject(r, 400, "invalid_request", "malformed request line (HTTP version)");
    if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
        return reject(r, 505, "http_version_not_supported", "only versions 1.0 and 1.1 of HTTP are supported");
    const char *t = b + t0;
    size_t pl = 0;
    while (pl < tlen && t[pl] != '?') pl++;
    int get = (mlen == 3 && !memcmp(b, "GET", 3)) || (mlen == 4 && !memcmp(b, "HEAD", 4));
    r->monitor = get && ((pl == 7 && !memcmp(t, "/health", 7)) || (pl == 8 && !memcmp(t, "/metrics", 8)));
    return 0;
}

static int ieq(const char *a, size_t an, const char *b) { return strlen(b) == an && strncasecmp(a, b, an) == 0; }

int ct_http_head_check(const char *b, size_t n, size_t max_head, ct_head_result *r) {
    memset(r, 0, sizeof *r);
    r->status = -1;
    const char *nl = memchr(b, '\n', n);
    if (!nl) return n >= max_head ? reject(r, 431, "header_too_large", "request line too long") : 0;
    size_t ll = (size_t)(nl - b);
    if (check_request_line(b, ll && b[ll - 1] == '\r' ? ll - 1 : ll, r)) return -1;
    /* headers: find the blank line first */
    size_t p = ll + 1, end = 0;
    for (size_t q = p; q < n; q++) {
        if (b[q] != '\n') continue;
        size_t s = q; /* line [line_start, q) */
        size_t ls = q;
        while (ls > p && b[ls - 1] != '\n') ls--;
        if (s == ls || (s == ls + 1 && b[ls] == '\r')) {
            end = q + 1;
            break;
        }
    }
    if (!end) return n >= max_head ? reject(r, 431, "header_too_large", "request header too large") : 0;
    if (end > max_head) return reject(r, 431, "header_too_large", "request header too large");
    r->head_len = end;
    int has_cl = 0, has_te = 0;
    unsigned long long cl = 0;
    while (p < end) {
        const char *e = memchr(b + p, '\n', end - p);
        size_t len = (size_t)(e - (b + p));
        const char *l = b + p;
        p += len + 1;
        if (len && l[len - 1] == '\r') len--;
        if (!len) break;
        if (l[0] == ' ' || l[0] == '\t') return reject(r, 400, "invalid_request", "folded header line");
        size_t k = 0;
        while (k < len && is_tchar((unsigned char)l[k])) k++;
        if (k == 0 || k >= len || l[k] != ':') return reject(r, 400, "invalid_request", "malformed header line");
        for (size_t j = k + 1; j < len; j++)
            if (((unsigned char)l[j] < 0x20 && l[j] != '\t') || l[j] == 0x7f)
                return reject(r, 400, "invalid_request", "control byte in a header value");
        const char *v = l + k + 1, *ve = l + len;
        while (v < ve && (*v == ' ' || *v == '\t')) v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
        if (ieq(l, k, "Content-Length")) {
            if (v == ve) return reject(r, 400, "invalid_request", "invalid Content-Length");
            unsigned long long x = 0;
            for (const char *c = v; c < ve; c++) {
                if (*c < '0' || *c > '9' || x > (1ull << 53)) return reject(r, 400, "invalid_request", "invalid Content-Length");
                x = x * 10 + (unsigned)(*c - '0');
            }
            if (has_cl && x != cl) return reject(r, 400, "invalid_request", "conflicting Content-Length headers");
            has_cl = 1;
            cl = x;
        } else if (ieq(l, k, "Transfer-Encoding")) {
            if (has_te || !ieq(v, (size_t)(ve - v), "chunked"))
                return reject(r, 501, "not_implemented", "Transfer-Encoding other than chunked is not supported");
            has_te = 1;
        }
    }
    if (has_te && has_cl) return reject(r, 400, "invalid_request", "both Transfer-Encoding and Content-Length");
    if (has_te && b[ll - (ll && b[ll - 1] == '\r') - 1] == '0')
        return reject(r, 400, "invalid_request", "Transfer-Encoding in an HTTP/1.0 request");
    r->chunked = has_te;
    return 1;
}

int ct_http_chunks_check(const char *b, size_t n) {
    size_t p = 0;
    for (;;) {
        size_t q = p;
        unsigned long long sz = 0;
        while (q < n && ((b[q] >= '0' && b[q] <= '9') || (b[q] >= 'a' && b[q] <= 'f') || (b[q] >= 'A' && b[q] <= 'F'))) {
            if (q - p >= 15) return -1;
            sz = sz * 16 + (unsigned)(b[q] <= '9' ? b[q] - '0' : (b[q] | 0x20) - 'a' + 10);
            q++;
        }
        if (q == n) return 0;
        if (q == p) return -1;
        if (b[q] == ';') /* chunk extension: up to the line end */
            while (q < n && b[q] != '\r' && b[q] != '\n') q++;
        while (q < n && (b[q] == ' ' || b[q] == '\t')) q++;
        if (q == n) return 0;
        if (b[q] == '\r') q++;
        if (q == n) return 0;
        if (b[q] != '\n') return -1;
        q++;
        if (sz == 0) return 1; /* the last chunk: trailers follow, the library reads them */
        if (n - q < sz) return 0;
        q += (size_t)sz;
        if (q == n) return 0;
        if (b[q] == '\r') q++;
        if (q == n) return 0;
        if (b[q] != '\n') return -1;
        p = q + 1;
    }
}

static const char *reason(int s) {
    switch (s) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

size_t ct_http_error_response(char *out, size_t cap, int status, const char *code, const char *msg) {
    char body[400];
    const char *type = status >= 500 && status != 501 && status != 505 ? "server_error" : "invalid_request_error";
    int bn = snprintf(body, sizeof body, "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"param\":null,\"code\":\"%s\"}}",
                      msg, type, code);
    if (bn < 0 || (size_t)bn >= sizeof body) return 0;
    int n = snprintf(out, cap,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n"
                     "%s\r\n%s",
                     status, reason(status), bn, status == 503 || status == 429 ? "Retry-After: 1\r\n" : "", body);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

/* ---- the gate ----------------------------------------------------------------------------- */

enum { S_HEAD, S_BODY, S_BUSY };

struct ct_gate_conn {
    ct_gate *g;
    int used, claimed, fd, reserve, state, cut;
    uint32_t ip;
    int64_t t_ms;     /* start of the current state */
    ct_stream *st;    /* streaming: the stream this connection feeds */
    int waiting;      /* 1: the client owes us reading what we handed over (since t_wait) */
    int64_t t_wait;
};

typedef struct {
    int fd;
    uint32_t ip;
    int64_t t0;
    ssize_t seen; /* bytes peeked at the last check */
} pending;

struct ct_gate {
    ct_gate_params p;
    struct MHD_Daemon *d;
    pthread_mutex_t mu;
    ct_gate_conn *conns;
    int n_conns;
    pending *pend;
    int n_pend, cap_pend;
    char *scratch;
    atomic_int stop;
    pthread_t acc, dog;
    int started;
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ct_gate *ct_gate_new(const ct_gate_params *p) {
    ct_gate *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->p = *p;
    g->n_conns = p->max_connections + p->reserve;
    g->cap_pend = 2 * p->max_connections + p->reserve;
    g->conns = calloc((size_t)g->n_conns, sizeof *g->conns);
    g->pend = calloc((size_t)g->cap_pend, sizeof *g->pend);
    g->scratch = malloc(p->max_head + 1);
    pthread_mutex_init(&g->mu, NULL);
    if (!g->conns || !g->pend || !g->scratch) {
        ct_gate_free(g);
        return NULL;
    }
    return g;
}

/* Sends a JSON error on a connection we still own, then closes it. */
static void refuse(ct_gate *g, int fd, int status, const char *code, const char *msg) {
    char out[800];
    size_t n = ct_http_error_response(out, sizeof out, status, code, msg);
    while (recv(fd, g->scratch, g->p.max_head, MSG_DONTWAIT) > 0) {
    } /* consume what came, so closing does not reset the answer away */
    if (n) (void)!send(fd, out, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    close(fd);
    ct_srv_metrics_status(g->p.mx, status);
}

/* Counts connections of ip (pending + handed off); call locked. */
static int count_ip(ct_gate *g, uint32_t ip) {
    int n = 0;
    for (int i = 0; i < g->n_conns; i++) n += g->conns[i].used && g->conns[i].ip == ip;
    for (int i = 0; i < g->n_pend; i++) n += g->pend[i].ip == ip;
    return n;
}

static void drop_pending(ct_gate *g, int i) { g->pend[i] = g->pend[--g->n_pend]; }

/* The header of pending[i] is complete and fine: hand it to MHD (or refuse when full). */
static void hand_off(ct_gate *g, int i, int monitor) {
    pending pc = g->pend[i];
    drop_pending(g, i);
    pthread_mutex_lock(&g->mu);
    int normal = 0, reserve = 0, slot = -1;
    for (int k = 0; k < g->n_conns; k++) {
        if (!g->conns[k].used) {
            if (slot < 0) slot = k;
        } else if (g->conns[k].reserve) reserve++;
        else normal++;
    }
    int use_reserve = normal >= g->p.max_connections;
    if (slot < 0 || (use_reserve && (!monitor || reserve >= g->p.reserve))) {
        pthread_mutex_unlock(&g->mu);
        atomic_fetch_add(&g->p.mx->conn_refused, 1);
        refuse(g, pc.fd, 503, "server_busy", "too many connections; retry later");
        return;
    }
    ct_gate_conn *k = &g->conns[slot];
    memset(k, 0, sizeof *k);
    k->g = g;
    k->used = 1;
    k->fd = pc.fd;
    k->ip = pc.ip;
    k->reserve = use_reserve;
    k->state = S_BUSY; /* MHD parses the header at once; the handler moves it on */
    k->t_ms = now_ms();
    pthread_mutex_unlock(&g->mu);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = pc.ip;
    if (MHD_add_connection(g->d, pc.fd, (struct sockaddr *)&sa, sizeof sa) != MHD_YES) {
        pthread_mutex_lock(&g->mu); /* MHD closed the socket */
        if (k->used && k->fd == pc.fd && !k->claimed) k->used = 0;
        pthread_mutex_unlock(&g->mu);
    }
}

static void accept_new(ct_gate *g) {
    for (;;) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(g->p.listen_fd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        uint32_t ip = sa.sin_family == AF_INET ? sa.sin_addr.s_addr : 0;
        pthread_mutex_lock(&g->mu);
        int over = g->p.per_ip > 0 && count_ip(g, ip) >= g->p.per_ip;
        pthread_mutex_unlock(&g->mu);
        if (over || g->n_pend >= g->cap_pend) {
            atomic_fetch_add(&g->p.mx->conn_refused, 1);
            if (over) refuse(g, fd, 429, "too_many_connections", "too many connections from this address");
            else refuse(g, fd, 503, "server_busy", "too many connections; retry later");
            continue;
        }
        g->pend[g->n_pend++] = (pending){fd, ip, now_ms(), 0};
    }
}

static void check_pending(ct_gate *g) {
    int64_t t = now_ms();
    for (int i = g->n_pend - 1; i >= 0; i--) {
        pending *pc = &g->pend[i];
        int avail = 0; /* peek (a copy of up to max_head bytes) only when more came */
        ssize_t n = pc->seen > 0 && ioctl(pc->fd, FIONREAD, &avail) == 0 && avail == pc->seen
                        ? pc->seen
                        : recv(pc->fd, g->scratch, g->p.max_head, MSG_PEEK | MSG_DONTWAIT);
        struct pollfd hup = {pc->fd, POLLRDHUP, 0}; /* unread data hides a FIN from recv */
        int gone = n > 0 && n == pc->seen && poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR));
        if (gone || n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            close(pc->fd); /* the client went away */
            drop_pending(g, i);
            continue;
        }
        if (n > 0 && n != pc->seen) {
            pc->seen = n;
            ct_head_result r;
            int v = ct_http_head_check(g->scratch, (size_t)n, g->p.max_head, &r);
            if (v > 0 && r.chunked && ct_http_chunks_check(g->scratch + r.head_len, (size_t)n - r.head_len) < 0)
                v = reject(&r, 400, "invalid_request", "malformed chunked body");
            if (v > 0) {
                hand_off(g, i, r.monitor);
                continue;
            }
            if (v < 0) {
                int fd = pc->fd;
                drop_pending(g, i);
                refuse(g, fd, r.status, r.code, r.msg);
                continue;
            }
        }
        if (t - pc->t0 > (int64_t)g->p.header_timeout_s * 1000) {
            int fd = pc->fd;
            drop_pending(g, i);
            atomic_fetch_add(&g->p.mx->header_timeouts, 1);
            refuse(g, fd, 408, "request_timeout", "the request header was not complete in time");
        }
    }
}

static void *acceptor(void *arg) {
    ct_gate *g = arg;
    struct pollfd *pf = malloc(sizeof *pf * (size_t)(g->cap_pend + 1));
    if (!pf) return NULL;
    while (!atomic_load(&g->stop)) {
        int np = 0, busy = 0;
        pf[np++] = (struct pollfd){g->p.listen_fd, POLLIN, 0};
        for (int i = 0; i < g->n_pend; i++) {
            if (g->pend[i].seen) busy = 1; /* unread data keeps it readable: recheck on a timer */
            else pf[np++] = (struct pollfd){g->pend[i].fd, POLLIN, 0};
        }
        poll(pf, (nfds_t)np, busy ? 10 : 100);
        if (pf[0].revents) accept_new(g);
        check_pending(g);
    }
    free(pf);
    return NULL;
}

static void *watchdog(void *arg) {
    ct_gate *g = arg;
    while (!atomic_load(&g->stop)) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        int64_t t = now_ms();
        pthread_mutex_lock(&g->mu);
        for (int i = 0; i < g->n_conns; i++) {
            ct_gate_conn *k = &g->conns[i];
            if (!k->used || !k->claimed || k->cut) continue;
            int cut = 0;
            if (k->state == S_HEAD && t - k->t_ms > (int64_t)g->p.header_timeout_s * 1000) {
                atomic_fetch_add(&g->p.mx->header_timeouts, 1);
                cut = 1;
            } else if (k->state == S_BODY && t - k->t_ms > (int64_t)g->p.body_timeout_s * 1000) {
                atomic_fetch_add(&g->p.mx->body_timeouts, 1);
                cut = 1;
            } else if (k->st && k->waiting && t - k->t_wait > (int64_t)g->p.write_timeout_s * 1000) {
                atomic_fetch_add(&g->p.mx->write_timeouts, 1);
                ct_stream_cancel(k->st); /* frees the slot at once */
                cut = 1;
            }
            if (cut) {
                k->cut = 1;
                shutdown(k->fd, SHUT_RDWR); /* MHD sees the error and closes the connection */
            }
        }
        pthread_mutex_unlock(&g->mu);
    }
    return NULL;
}

int ct_gate_run(ct_gate *g, struct MHD_Daemon *d) {
    g->d = d;
    int fl = fcntl(g->p.listen_fd, F_GETFL);
    if (fl < 0 || fcntl(g->p.listen_fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
    if (pthread_create(&g->acc, NULL, acceptor, g)) return -1;
    if (pthread_create(&g->dog, NULL, watchdog, g)) {
        atomic_store(&g->stop, 1);
        pthread_join(g->acc, NULL);
        return -1;
    }
    g->started = 1;
    return 0;
}

void ct_gate_stop_accepting(ct_gate *g) {
    if (!g || !g->started) return;
    atomic_store(&g->stop, 1);
    pthread_join(g->acc, NULL);
    pthread_join(g->dog, NULL);
    g->started = 0;
    for (int i = 0; i < g->n_pend; i++) close(g->pend[i].fd);
    g->n_pend = 0;
    close(g->p.listen_fd);
}

void ct_gate_free(ct_gate *g) {
    if (!g) return;
    ct_gate_stop_accepting(g);
    pthread_mutex_destroy(&g->mu);
    free(g->conns);
    free(g->pend);
    free(g->scratch);
    free(g);
}

/* ---- hooks -------------------------------------------------------------------------------- */

void ct_gate_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                    enum MHD_ConnectionNotificationCode toe) {
    ct_gate *g = cls;
    pthread_mutex_lock(&g->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        for (int i = 0; ci && i < g->n_conns; i++) {
            ct_gate_conn *k = &g->conns[i];
            if (k->used && !k->claimed && k->fd == ci->connect_fd) {
                k->claimed = 1;
                k->state = S_HEAD;
                k->t_ms = now_ms();
                *socket_context = k;
                break;
            }
        }
    } else if (*socket_context) {
        ct_gate_conn *k = *socket_context;
        k->used = 0;
        k->st = NULL;
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&g->mu);
}

ct_gate_conn *ct_gate_conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

int ct_gate_conn_is_reserve(const ct_gate_conn *k) { return k && k->reserve; }

static void set_state(ct_gate_conn *k, int s) {
    if (!k) return;
    pthread_mutex_lock(&k->g->mu);
    if (k->used) k->state = s;
    k->t_ms = now_ms();
    pthread_mutex_unlock(&k->g->mu);
}

void ct_gate_request_begin(ct_gate_conn *k) { set_state(k, S_BODY); }
void ct_gate_request_body_done(ct_gate_conn *k) { set_state(k, S_BUSY); }
void ct_gate_request_end(ct_gate_conn *k) { set_state(k, S_HEAD); }

void ct_gate_stream_attach(ct_gate_conn *k, ct_stream *st) {
    if (!k) return;
    pthread_mutex_lock(&k->g->mu);
    k->st = st;
    k->waiting = 0;
    pthread_mutex_unlock(&k->g->mu);
}

void ct_gate_stream_detach(ct_gate_conn *k, ct_stream *st) {
    if (!k) return;
    pthread_mutex_lock(&k->g->mu);
    if (k->st == st) k->st = NULL, k->waiting = 0;
    pthread_mutex_unlock(&k->g->mu);
}

void ct_gate_stream_waiting(ct_gate_conn *k, int waiting) {
    if (!k) return;
    pthread_mutex_lock(&k->g->mu);
    if (waiting && !k->waiting) k->t_wait = now_ms();
    k->waiting = waiting;
    pthread_mutex_unlock(&k->g->mu);
}
