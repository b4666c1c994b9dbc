/* Growable text buffer for the report writers. */
#include "report/sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ct_sbuf_init(ct_sbuf *b) { memset(b, 0, sizeof *b); }

void ct_sbuf_free(ct_sbuf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* Makes room for `extra` more bytes plus the NUL; 0 on failure (sets oom). */
static int reserve(ct_sbuf *b, size_t extra) {
    if (b->oom) return 0;
    if (b->len + extra + 1 <= b->cap) return 1;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + extra + 1) {
        if (nc > ((size_t)-1) / 2) {
            b->oom = 1;
            return 0;
        }
        nc *= 2;
    }
    char *p = realloc(b->data, nc);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->data = p;
    b->cap = nc;
    return 1;
}

void ct_sbuf_putn(ct_sbuf *b, const char *s, size_t n) {
    if (!s || !reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void ct_sbuf_puts(ct_sbuf *b, const char *s) {
    if (s) ct_sbuf_putn(b, s, strlen(s));
}

void ct_sbuf_vprintf(ct_sbuf *b, const char *fmt, va_list ap) {
    if (b->oom) return;
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        ct_sbuf_putn(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n)) return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void ct_sbuf_printf(ct_sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ct_sbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

void ct_sbuf_put_xml(ct_sbuf *b, const char *s) {
    if (!s) return;
    for (; *s; s++) {
        switch (*s) {
        case '&': ct_sbuf_puts(b, "&amp;"); break;
        case '<': ct_sbuf_puts(b, "&lt;"); break;
        case '>': ct_sbuf_puts(b, "&gt;"); break;
        case '"': ct_sbuf_puts(b, "&quot;"); break;
        case '\'': ct_sbuf_puts(b, "&apos;"); break;
        default:
            /* XML 1.0 forbids most control characters even escaped. */
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r') ct_sbuf_putn(b, " ", 1);
            else ct_sbuf_putn(b, s, 1);
        }
    }
}

int ct_sbuf_ok(const ct_sbuf *b) { return !b->oom; }

const char *ct_sbuf_str(const ct_sbuf *b) { return b->data ? b->data : ""; }
