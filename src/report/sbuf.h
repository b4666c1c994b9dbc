/* Growable, always NUL-terminated text buffer used by the report writers (markdown, SVG).
   An allocation failure is sticky: later appends do nothing and ct_sbuf_ok() reports it, so
   writers can append freely and check once at the end. */
#ifndef CT_REPORT_SBUF_H
#define CT_REPORT_SBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char *data; /* [cap] text, NUL-terminated at len (NULL until the first append) */
    size_t len; /* bytes of text, excluding the NUL */
    size_t cap; /* bytes allocated */
    int oom;    /* 1 after an allocation failure */
} ct_sbuf;

/* Empty buffer (no allocation). */
void ct_sbuf_init(ct_sbuf *b);
/* Frees the text and resets b to empty. */
void ct_sbuf_free(ct_sbuf *b);
/* Appends s (NULL appends nothing). */
void ct_sbuf_puts(ct_sbuf *b, const char *s);
/* Appends n bytes of s. */
void ct_sbuf_putn(ct_sbuf *b, const char *s, size_t n);
/* Appends printf-formatted text. */
void ct_sbuf_printf(ct_sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* va_list form of ct_sbuf_printf. */
void ct_sbuf_vprintf(ct_sbuf *b, const char *fmt, va_list ap);
/* Appends s with the XML special characters & < > " ' escaped (NULL appends nothing). */
void ct_sbuf_put_xml(ct_sbuf *b, const char *s);
/* 1 when every append so far succeeded. */
int ct_sbuf_ok(const ct_sbuf *b);
/* The text ("" for an empty buffer); valid until the next append or free. */
const char *ct_sbuf_str(const ct_sbuf *b);

#endif
