/* Minimal SVG 1.1 writer for the bench summaries, no external libraries: x/y plots of line and
   step series with shaded polygons (axes with "nice" ticks and labels, grid, legend, title),
   and horizontal bar charts (one labelled bar per row, value text, optional reference line).
   The output is a standalone, well-formed document; all text is XML-escaped. */
#ifndef CT_REPORT_SVG_H
#define CT_REPORT_SVG_H

#include <stddef.h>

#include "core/status.h"
#include "report/sbuf.h"

typedef enum {
    CT_SVG_LINE, /* straight segments through the points */
    CT_SVG_STEP  /* y[i] holds from x[i] to x[i+1], then jumps (a "post" step) */
} ct_svg_kind;

/* One plotted series. */
typedef struct {
    const char *label;   /* legend text; NULL = not in the legend */
    const char *color;   /* CSS colour, e.g. "#1f77b4"; NULL = black */
    ct_svg_kind kind;
    const double *x, *y; /* [n] data points, x ascending */
    int n;
    double width;        /* stroke width px; <= 0 = 2 */
    int dashed;          /* 1: dashed stroke */
    int markers;         /* 1: a dot at every point (step: at each jump) */
} ct_svg_series;

/* A filled polygon in data coordinates (e.g. a stall region). */
typedef struct {
    const char *label;   /* legend text; the legend lists each distinct label once; NULL = none */
    const char *color;   /* fill colour */
    double opacity;      /* 0..1; <= 0 = 0.35 */
    const double *x, *y; /* [n] vertices, n >= 3 */
    int n;
} ct_svg_area;

/* Legend placement inside the plot area. */
typedef enum { CT_SVG_LEGEND_TOP_LEFT = 0, CT_SVG_LEGEND_BOTTOM_RIGHT } ct_svg_legend_pos;

/* An x/y plot. Data outside [min, max] is clipped to the plot area. */
typedef struct {
    const char *title, *note; /* note: a smaller line under the title (NULL = none) */
    const char *xlabel, *ylabel;
    int width, height;        /* px; <= 0 = 760 x 440 */
    double xmin, xmax, ymin, ymax; /* NAN = from the data, widened to tick multiples */
    const ct_svg_series *series;   /* [n_series] */
    int n_series;
    const ct_svg_area *areas;      /* [n_areas], drawn under the series */
    int n_areas;
    ct_svg_legend_pos legend;      /* where the legend box goes (default top left) */
} ct_svg_plot;

/* A horizontal bar chart, one bar per row, top to bottom in the given order. */
typedef struct {
    const char *title, *note, *xlabel;
    int width;                     /* px; <= 0 = 760; the height follows n */
    const char *const *labels;     /* [n] row labels */
    const double *values;          /* [n] bar lengths; non-finite or negative = no bar */
    const char *const *value_text; /* [n] text right of each bar; NULL (array or entry) = %g */
    int n;
    double xmax;                   /* axis end; NAN = from the data and ref */
    double ref;                    /* vertical reference line at this x; NAN = none */
    const char *ref_label;         /* text at the reference line (NULL = none) */
    const char *color;             /* bar colour; NULL = "#4c78a8" */
} ct_svg_bars;

/* Appends the SVG document of p to out. CT_ERR_INVALID_ARG for a NULL series/area array with a
   positive count, n < 0, a series/area point that is not finite, or a NULL point array;
   CT_ERR_NOMEM when out ran out of memory. */
ct_status ct_svg_plot_render(const ct_svg_plot *p, ct_sbuf *out, char *err, size_t errcap);

/* Appends the SVG document of b to out. CT_ERR_INVALID_ARG for n < 0 or missing arrays,
   CT_ERR_NOMEM when out ran out of memory. An empty chart (n == 0) says "no data". */
ct_status ct_svg_bars_render(const ct_svg_bars *b, ct_sbuf *out, char *err, size_t errcap);

/* "Nice" tick step (1, 2 or 5 times a power of ten) giving about `target` intervals over
   [lo, hi]; 1 when the span is not positive and finite. */
double ct_svg_tick_step(double lo, double hi, int target);

/* Tick positions: multiples of ct_svg_tick_step(lo, hi, target) within [lo, hi] (with a small
   tolerance) into ticks[cap]; returns how many there are (may exceed cap). */
int ct_svg_ticks(double lo, double hi, int target, double *ticks, int cap);

#endif
