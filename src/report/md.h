/* Markdown table writer: a header row, the separator, and body rows, with cell text escaped so
   a '|' or a newline inside a cell cannot break the table; plus the number formatting the
   summaries share (non-finite values print as "-"). */
#ifndef CT_REPORT_MD_H
#define CT_REPORT_MD_H

#include "report/sbuf.h"

/* Column alignment in the separator row. */
typedef enum { CT_MD_LEFT, CT_MD_RIGHT } ct_md_align;

/* Appends "| h0 | h1 | ... |\n|---|---:|...|\n" for headers[ncols]; align may be NULL (all
   left). */
void ct_md_table_header(ct_sbuf *b, int ncols, const char *const *headers, const ct_md_align *align);

/* Appends one body row "| c0 | c1 | ... |\n" of cells[ncols] (NULL cells print as "-"). */
void ct_md_table_row(ct_sbuf *b, int ncols, const char *const *cells);

/* Appends s escaped for a table cell: '|' -> "\|", newlines and tabs -> space. */
void ct_md_put_cell(ct_sbuf *b, const char *s);

/* Formats x with `decimals` digits after the point into out[cap] ("-" when x is not finite);
   returns out. */
char *ct_md_num(char *out, size_t cap, double x, int decimals);

#endif
