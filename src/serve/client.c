/* Loopback HTTP client (see client.h). */
#define _GNU_SOURCE
#include "serve/client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"

typedef struct {
    int fd, timeout_ms;
    unsigned char buf[65536];
    size_t n, off;
    int eof, timed_out; /* timed_out: a wait for data ran out (the error names the timeout) */
} rd;

/* Ensures at least one unread byte (returns 0), 1 at EOF, -1 on error/timeout. */
static int fill(rd *r) {
    if (r->off < r->n) return 0;
    if (r->eof) return 1;
    struct pollfd pf = {r->fd, POLLIN, 0};
    int pr = poll(&pf, 1, r->timeout_ms);
    if (pr == 0) r->timed_out = 1;
    if (pr <= 0) return -1;
    ssize_t k = recv(r->fd, r->buf, sizeof r->buf, 0);
    if (k < 0) return -1;
    if (k == 0) {
        r->eof = 1;
        return 1;
    }
    r->n = (size_t)k;
    r->off = 0;
    return 0;
}

static int add_body(ct_http_resp *o, const unsigned char *p, size_t n, size_t *cap, double t0,
                    ct_http_on_data cb, void *ud) {
    if (!n) return 0;
    if (o->body_len + n + 1 > *cap) {
        size_t nc = (o->body_len + n + 1) * 2;
        unsigned char *nb = realloc(o->body, nc);
        if (!nb) return -1;
        o->body = nb;
        *cap = nc;
    }
    memcpy(o->body + o->body_len, p, n);
    o->body_len += n;
    o->body[o->body_len] = 0;
    double t = ct_now_ms() - t0;
    if (isnan(o->t_first_byte_ms)) o->t_first_byte_ms = t;
    if (o->n_events == o->cap_events) {
        int nc = o->cap_events ? o->cap_events * 2 : 256;
        double *nt = realloc(o->t_ms, sizeof(double) * (size_t)nc);
        if (nt) o->t_ms = nt;
        size_t *nbs = realloc(o->bytes, sizeof(size_t) * (size_t)nc);
        if (nbs) o->bytes = nbs;
        if (!nt || !nbs) return -1;
        o->cap_events = nc;
    }
    o->t_ms[o->n_events] = t;
    o->bytes[o->n_events++] = n;
    if (cb && cb(ud, p, n)) {
        o->aborted = 1;
        return 1;
    }
    return 0;
}

void ct_http_resp_free(ct_http_resp *r) {
    if (!r) return;
    free(r->headers);
    free(r->body);
    free(r->t_ms);
    free(r->bytes);
    memset(r, 0, sizeof *r);
}

int ct_http_resp_header(const ct_http_resp *r, const char *name, char *buf, size_t cap) {
    if (!r->headers) return 0;
    size_t nl = strlen(name);
    for (const char *p = r->headers; p && *p;) {
        const char *e = strstr(p, "\r\n");
        if (!e) e = p + strlen(p);
        if ((size_t)(e - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ') v++;
            size_t n = (size_t)(e - v);
            if (n >= cap) n = cap - 1;
            memcpy(buf, v, n);
            buf[n] = 0;
            return 1;
        }
        p = *e ? e + 2 : e;
    }
    return 0;
}

ct_status ct_http_parse_url(const char *url, char *host, size_t cap, int *port, char *err, size_t errcap) {
    if (!url) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "url: NULL");
    const char *p = strncmp(url, "http://", 7) == 0 ? url + 7 : url;
    const char *colon = strchr(p, ':'), *slash = strchr(p, '/');
    const char *end = colon && (!slash || colon < slash) ? colon : slash ? slash : p + strlen(p);
    size_t n = (size_t)(end - p);
    if (n == 0 || n >= cap) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "url '%s': bad host", url);
    memcpy(host, p, n);
    host[n] = 0;
    if (strcmp(host, "localhost") == 0) snprintf(host, cap, "127.0.0.1");
    *port = 80;
    if (end == colon) {
        char *q;
        long v = strtol(colon + 1, &q, 10);
        if (q == colon + 1 || v < 1 || v > 65535 || (*q && *q != '/'))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "url '%s': bad port", url);
        *port = (int)v;
    }
    return CT_OK;
}

ct_status ct_http_request(const char *host, int port, const char *method, const char *path,
                          const char *extra_headers, const char *body, size_t body_len, int timeout_ms,
                          ct_http_on_data on_data, void *ud, ct_http_resp *out, char *err, size_t errcap) {
    memset(out, 0, sizeof *out);
    out->t_first_byte_ms = NAN;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http client: '%s' is not an IPv4 address", host);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int en = errno;
        if (fd >= 0) close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "http client: connect %s:%d: %s", host, port, strerror(en));
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char head[2048];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n%s%s%s", method, path, host, port,
                      extra_headers ? extra_headers : "", body ? "Content-Type: application/json\r\n" : "", "");
    if (body) hn += snprintf(head + hn, sizeof head - (size_t)hn, "Content-Length: %zu\r\n", body_len);
    hn += snprintf(head + hn, sizeof head - (size_t)hn, "\r\n");
    ct_status st = CT_OK;
    double t0 = ct_now_ms();
    if (send(fd, head, (size_t)hn, MSG_NOSIGNAL) != hn) st = CT_ERR_IO;
    for (size_t off = 0; st == CT_OK && body && off < body_len;) {
        ssize_t k = send(fd, body + off, body_len - off, MSG_NOSIGNAL);
        if (k <= 0) {
            /* the server may answer (413, 401) before reading the whole body */
            break;
        }
        off += (size_t)k;
    }
    if (st != CT_OK) {
        close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "http client: send failed");
    }
    rd *r = calloc(1, sizeof *r);
    if (!r) {
        close(fd);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "http client: out of memory");
    }
    r->fd = fd;
    r->timeout_ms = timeout_ms;
    /* headers */
    size_t hcap = 1024, hl = 0;
    char *hb = malloc(hcap);
    int done = 0;
    while (hb && !done) {
        int f = fill(r);
        if (f) break;
        while (r->off < r->n) {
            if (hl + 2 > hcap) {
                char *nb = hcap < (1u << 20) ? realloc(hb, hcap * 2) : NULL;
                if (!nb) {
                    free(hb);
                    hb = NULL;
                    break;
                }
                hb = nb;
                hcap *= 2;
            }
            hb[hl++] = (char)r->buf[r->off++];
            if (hl >= 4 && memcmp(hb + hl - 4, "\r\n\r\n", 4) == 0) {
                done = 1;
                break;
            }
        }
    }
    if (!hb || !done) {
        free(hb);
        int to = r->timed_out;
        free(r);
        close(fd);
        if (hb && to) return ct_errf(err, errcap, CT_ERR_IO, "http client: no response header within %d ms", timeout_ms);
        return ct_errf(err, errcap, hb ? CT_ERR_IO : CT_ERR_NOMEM, "http client: no complete response header");
    }
    hb[hl] = 0;
    out->headers = hb;
    if (sscanf(hb, "HTTP/1.%*d %d", &out->status) != 1) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "http client: bad status line");
        goto fail;
    }
    char v[64];
    int chunked = ct_http_resp_header(out, "Transfer-Encoding", v, sizeof v) && strcasestr(v, "chunked");
    long long clen = -1;
    if (ct_http_resp_header(out, "Content-Length", v, sizeof v)) clen = atoll(v);
    size_t bcap = 0;
    int stop = 0;
    if (strcmp(method, "HEAD") == 0) clen = 0;
    if (chunked) {
        for (;;) {
            char line[64];
            size_t ln = 0;
            for (;;) {
                if (fill(r)) {
                    st = ct_errf(err, errcap, CT_ERR_IO, "http client: connection ended inside a chunk header");
                    goto fail;
                }
                char ch = (char)r->buf[r->off++];
                if (ch == '\n') break;
                if (ln + 1 < sizeof line) line[ln++] = ch;
            }
            line[ln] = 0;
            unsigned long long sz = strtoull(line, NULL, 16);
            if (sz == 0) break;
            while (sz > 0) {
                if (fill(r)) {
                    st = ct_errf(err, errcap, CT_ERR_IO, "http client: connection ended inside a chunk");
                    goto fail;
                }
                size_t take = r->n - r->off;
                if (take > sz) take = (size_t)sz;
                int a = add_body(out, r->buf + r->off, take, &bcap, t0, on_data, ud);
                if (a < 0) {
                    st = ct_errf(err, errcap, CT_ERR_NOMEM, "http client: out of memory");
                    goto fail;
                }
                r->off += take;
                sz -= take;
                if (a > 0) {
                    stop = 1;
                    break;
                }
            }
            if (stop) break;
            for (int k = 0; k < 2; k++) { /* CRLF after the chunk */
                if (fill(r)) break;
                r->off++;
            }
        }
    } else {
        long long left = clen;
        while (left != 0) {
            int f = fill(r);
            if (f > 0 && clen < 0) break;
            if (f) {
                st = ct_errf(err, errcap, CT_ERR_IO, "http client: body ended early (%lld bytes missing)", left);
                goto fail;
            }
            size_t take = r->n - r->off;
            if (left > 0 && (long long)take > left) take = (size_t)left;
            int a = add_body(out, r->buf + r->off, take, &bcap, t0, on_data, ud);
            if (a < 0) {
                st = ct_errf(err, errcap, CT_ERR_NOMEM, "http client: out of memory");
                goto fail;
            }
            r->off += take;
            if (left > 0) left -= (long long)take;
            if (a > 0) break;
        }
    }
    if (!out->body) {
        out->body = calloc(1, 1);
        if (!out->body) st = ct_errf(err, errcap, CT_ERR_NOMEM, "http client: out of memory");
    }
    out->t_total_ms = ct_now_ms() - t0;
fail:
    if (st == CT_ERR_IO && r->timed_out)
        st = ct_errf(err, errcap, CT_ERR_IO, "http client: the server sent nothing for %d ms (timeout)", timeout_ms);
    free(r);
    close(fd);
    if (st != CT_OK) ct_http_resp_free(out);
    return st;
}
