/* Markdown tables and number formatting for the bench summaries. */
#include "report/md.h"

#include <math.h>
#include <stdio.h>

void ct_md_put_cell(ct_sbuf *b, const char *s) {
    if (!s) {
        ct_sbuf_puts(b, "-");
        return;
    }
    for (; *s; s++) {
        if (*s == '|') ct_sbuf_puts(b, "\\|");
        else if (*s == '\n' || *s == '\r' || *s == '\t') ct_sbuf_putn(b, " ", 1);
        else ct_sbuf_putn(b, s, 1);
    }
}

void ct_md_table_header(ct_sbuf *b, int ncols, const char *const *headers, const ct_md_align *align) {
    ct_sbuf_puts(b, "|");
    for (int i = 0; i < ncols; i++) {
        ct_sbuf_puts(b, " ");
        ct_md_put_cell(b, headers[i]);
        ct_sbuf_puts(b, " |");
    }
    ct_sbuf_puts(b, "\n|");
    for (int i = 0; i < ncols; i++) ct_sbuf_puts(b, align && align[i] == CT_MD_RIGHT ? "---:|" : "---|");
    ct_sbuf_puts(b, "\n");
}

void ct_md_table_row(ct_sbuf *b, int ncols, const char *const *cells) {
    ct_sbuf_puts(b, "|");
    for (int i = 0; i < ncols; i++) {
        ct_sbuf_puts(b, " ");
        ct_md_put_cell(b, cells[i]);
        ct_sbuf_puts(b, " |");
    }
    ct_sbuf_puts(b, "\n");
}

char *ct_md_num(char *out, size_t cap, double x, int decimals) {
    if (!isfinite(x)) snprintf(out, cap, "-");
    else {
        int d = decimals < 0 ? 0 : decimals > 12 ? 12 : decimals;
        if (fabs(x) < 0.5 * pow(10.0, -d)) x = 0.0; /* no "-0.00" */
        snprintf(out, cap, "%.*f", d, x);
    }
    return out;
}
