/* Minimal SVG writer: x/y line and step plots with shaded areas, and horizontal bar charts. */
#include "report/svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FONT "font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\""

double ct_svg_tick_step(double lo, double hi, int target) {
    double span = hi - lo;
    if (!(span > 0) || !isfinite(span)) return 1.0;
    if (target < 1) target = 1;
    double raw = span / target;
    double mag = pow(10.0, floor(log10(raw)));
    double norm = raw / mag;
    double m = norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10;
    return m * mag;
}

int ct_svg_ticks(double lo, double hi, int target, double *ticks, int cap) {
    if (!isfinite(lo) || !isfinite(hi) || hi < lo) return 0;
    double step = ct_svg_tick_step(lo, hi, target);
    double eps = step * 1e-9;
    double first = ceil((lo - eps) / step);
    int n = 0;
    for (double k = first;; k += 1) {
        double t = k * step;
        if (t > hi + eps || n > 1000) break;
        if (fabs(t) < eps) t = 0.0;
        if (ticks && n < cap) ticks[n] = t;
        n++;
    }
    return n;
}

/* Tick label: as many decimals as the step needs. */
static void tick_label(char *out, size_t cap, double v, double step) {
    int d = 0;
    if (step < 1) d = (int)ceil(-log10(step) - 1e-9);
    if (d > 6) d = 6;
    if (fabs(v) < 0.5 * pow(10.0, -d)) v = 0;
    snprintf(out, cap, "%.*f", d, v);
}

/* Widens [*lo, *hi] to tick multiples when the end was automatic. */
static void nice_range(double *lo, double *hi, int auto_lo, int auto_hi) {
    if (!(*hi > *lo)) {
        double c = *lo;
        *lo = c - (c != 0 ? fabs(c) * 0.5 : 0.5);
        *hi = c + (c != 0 ? fabs(c) * 0.5 : 0.5);
        if (c >= 0 && *lo < 0 && auto_lo) *lo = 0;
    }
    double step = ct_svg_tick_step(*lo, *hi, 6);
    if (auto_lo) *lo = floor(*lo / step + 1e-9) * step;
    if (auto_hi) *hi = ceil(*hi / step - 1e-9) * step;
    if (!(*hi > *lo)) *hi = *lo + step;
}

static void doc_open(ct_sbuf *b, int w, int h) {
    ct_sbuf_printf(b,
                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                   "viewBox=\"0 0 %d %d\">\n"
                   "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                   w, h, w, h, w, h);
}

static void text(ct_sbuf *b, double x, double y, int size, const char *anchor, const char *extra,
                 const char *s) {
    ct_sbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" " FONT " font-size=\"%d\" text-anchor=\"%s\"%s%s>", x, y,
                   size, anchor, extra ? " " : "", extra ? extra : "");
    ct_sbuf_put_xml(b, s);
    ct_sbuf_puts(b, "</text>\n");
}

static void titles(ct_sbuf *b, int w, const char *title, const char *note) {
    if (title) text(b, w / 2.0, 22, 15, "middle", "font-weight=\"bold\"", title);
    if (note) text(b, w / 2.0, 40, 11, "middle", "fill=\"#555555\"", note);
}

static const char *col(const char *c, const char *dflt) { return c && *c ? c : dflt; }

typedef struct {
    double x0, x1, y0, y1; /* data range */
    double l, t, w, h;     /* plot area px */
} frame;

static double px(const frame *f, double x) { return f->l + (x - f->x0) / (f->x1 - f->x0) * f->w; }
static double py(const frame *f, double y) { return f->t + f->h - (y - f->y0) / (f->y1 - f->y0) * f->h; }

ct_status ct_svg_plot_render(const ct_svg_plot *p, ct_sbuf *b, char *err, size_t errcap) {
    if (!p || !b) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "svg plot: no plot or output");
    if (p->n_series < 0 || p->n_areas < 0 || (p->n_series > 0 && !p->series) || (p->n_areas > 0 && !p->areas))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "svg plot: bad series/area arrays");
    double dx0 = INFINITY, dx1 = -INFINITY, dy0 = INFINITY, dy1 = -INFINITY;
    for (int i = 0; i < p->n_series + p->n_areas; i++) {
        int is_s = i < p->n_series;
        const double *x = is_s ? p->series[i].x : p->areas[i - p->n_series].x;
        const double *y = is_s ? p->series[i].y : p->areas[i - p->n_series].y;
        int n = is_s ? p->series[i].n : p->areas[i - p->n_series].n;
        if (n < 0 || (n > 0 && (!x || !y)))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "svg plot: %s %d has no points", is_s ? "series" : "area",
                           is_s ? i : i - p->n_series);
        for (int k = 0; k < n; k++) {
            if (!isfinite(x[k]) || !isfinite(y[k]))
                return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "svg plot: %s %d point %d is not finite",
                               is_s ? "series" : "area", is_s ? i : i - p->n_series, k);
            if (x[k] < dx0) dx0 = x[k];
            if (x[k] > dx1) dx1 = x[k];
            if (y[k] < dy0) dy0 = y[k];
            if (y[k] > dy1) dy1 = y[k];
        }
    }
    if (!isfinite(dx0)) dx0 = 0, dx1 = 1, dy0 = 0, dy1 = 1;
    frame f;
    int ax0 = !isfinite(p->xmin), ax1 = !isfinite(p->xmax), ay0 = !isfinite(p->ymin), ay1 = !isfinite(p->ymax);
    f.x0 = ax0 ? dx0 : p->xmin;
    f.x1 = ax1 ? dx1 : p->xmax;
    f.y0 = ay0 ? dy0 : p->ymin;
    f.y1 = ay1 ? dy1 : p->ymax;
    nice_range(&f.x0, &f.x1, ax0, ax1);
    nice_range(&f.y0, &f.y1, ay0, ay1);
    int W = p->width > 0 ? p->width : 760, H = p->height > 0 ? p->height : 440;
    f.l = 72;
    f.t = p->note ? 54 : 40;
    f.w = W - f.l - 24;
    f.h = H - f.t - 52;
    if (f.w < 50) f.w = 50;
    if (f.h < 50) f.h = 50;

    doc_open(b, W, H);
    ct_sbuf_printf(b, "<defs><clipPath id=\"plotarea\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
                      "</clipPath></defs>\n", f.l, f.t, f.w, f.h);
    titles(b, W, p->title, p->note);

    /* grid, ticks and tick labels */
    double ticks[64];
    char lab[64];
    int nt = ct_svg_ticks(f.x0, f.x1, 8, ticks, 64);
    double st = ct_svg_tick_step(f.x0, f.x1, 8);
    ct_sbuf_puts(b, "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
    for (int i = 0; i < nt && i < 64; i++)
        ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px(&f, ticks[i]), f.t,
                       px(&f, ticks[i]), f.t + f.h);
    int nty = ct_svg_ticks(f.y0, f.y1, 6, NULL, 0);
    double sty = ct_svg_tick_step(f.y0, f.y1, 6);
    double yt[64];
    ct_svg_ticks(f.y0, f.y1, 6, yt, 64);
    for (int i = 0; i < nty && i < 64; i++)
        ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f.l, py(&f, yt[i]),
                       f.l + f.w, py(&f, yt[i]));
    ct_sbuf_puts(b, "</g>\n");
    for (int i = 0; i < nt && i < 64; i++) {
        tick_label(lab, sizeof lab, ticks[i], st);
        ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n",
                       px(&f, ticks[i]), f.t + f.h, px(&f, ticks[i]), f.t + f.h + 5);
        text(b, px(&f, ticks[i]), f.t + f.h + 18, 11, "middle", NULL, lab);
    }
    for (int i = 0; i < nty && i < 64; i++) {
        tick_label(lab, sizeof lab, yt[i], sty);
        ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", f.l - 5,
                       py(&f, yt[i]), f.l, py(&f, yt[i]));
        text(b, f.l - 8, py(&f, yt[i]) + 4, 11, "end", NULL, lab);
    }
    if (p->xlabel) text(b, f.l + f.w / 2, H - 12, 12, "middle", NULL, p->xlabel);
    if (p->ylabel) {
        char tr[96];
        snprintf(tr, sizeof tr, "transform=\"rotate(-90 16 %.1f)\"", f.t + f.h / 2);
        text(b, 16, f.t + f.h / 2, 12, "middle", tr, p->ylabel);
    }

    /* areas, then series, clipped to the plot area */
    ct_sbuf_puts(b, "<g clip-path=\"url(#plotarea)\">\n");
    for (int i = 0; i < p->n_areas; i++) {
        const ct_svg_area *a = &p->areas[i];
        if (a->n < 3) continue;
        ct_sbuf_printf(b, "<polygon fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"none\" points=\"", col(a->color, "#d62728"),
                       a->opacity > 0 ? a->opacity : 0.35);
        for (int k = 0; k < a->n; k++) ct_sbuf_printf(b, "%s%.2f,%.2f", k ? " " : "", px(&f, a->x[k]), py(&f, a->y[k]));
        ct_sbuf_puts(b, "\"/>\n");
    }
    for (int i = 0; i < p->n_series; i++) {
        const ct_svg_series *s = &p->series[i];
        if (s->n < 1) continue;
        ct_sbuf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" stroke-linejoin=\"round\"%s points=\"",
                       col(s->color, "#000000"), s->width > 0 ? s->width : 2.0,
                       s->dashed ? " stroke-dasharray=\"7,4\"" : "");
        for (int k = 0; k < s->n; k++) {
            if (s->kind == CT_SVG_STEP && k > 0)
                ct_sbuf_printf(b, " %.2f,%.2f", px(&f, s->x[k]), py(&f, s->y[k - 1]));
            ct_sbuf_printf(b, "%s%.2f,%.2f", k ? " " : "", px(&f, s->x[k]), py(&f, s->y[k]));
        }
        ct_sbuf_puts(b, "\"/>\n");
        if (s->markers) {
            ct_sbuf_printf(b, "<g fill=\"%s\">\n", col(s->color, "#000000"));
            for (int k = 0; k < s->n; k++)
                ct_sbuf_printf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\"/>\n", px(&f, s->x[k]), py(&f, s->y[k]));
            ct_sbuf_puts(b, "</g>\n");
        }
    }
    ct_sbuf_puts(b, "</g>\n");
    ct_sbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333333\"/>\n",
                   f.l, f.t, f.w, f.h);

    /* legend, top left inside the plot area */
    int nl = 0;
    for (int i = 0; i < p->n_series; i++) nl += p->series[i].label != NULL;
    for (int i = 0; i < p->n_areas; i++) {
        if (!p->areas[i].label) continue;
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= p->areas[j].label && strcmp(p->areas[j].label, p->areas[i].label) == 0;
        nl += !dup;
    }
    if (nl > 0) {
        size_t maxlen = 0;
        for (int i = 0; i < p->n_series + p->n_areas; i++) {
            const char *l = i < p->n_series ? p->series[i].label : p->areas[i - p->n_series].label;
            if (l && strlen(l) > maxlen) maxlen = strlen(l);
        }
        double lw = 40 + 6.4 * (double)maxlen, lh = 8 + 18.0 * nl;
        double lx = f.l + 10, ly = f.t + 10;
        if (p->legend == CT_SVG_LEGEND_BOTTOM_RIGHT) {
            lx = f.l + f.w - 10 - lw;
            ly = f.t + f.h - 10 - lh;
        }
        ct_sbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\" "
                          "fill-opacity=\"0.9\" stroke=\"#999999\"/>\n", lx, ly, lw, lh);
        int row = 0;
        for (int i = 0; i < p->n_series; i++) {
            const ct_svg_series *s = &p->series[i];
            if (!s->label) continue;
            double y = ly + 4 + 18.0 * row + 9;
            ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"%s/>\n",
                           lx + 6, y, lx + 30, y, col(s->color, "#000000"), s->width > 0 ? s->width : 2.0,
                           s->dashed ? " stroke-dasharray=\"7,4\"" : "");
            text(b, lx + 36, y + 4, 11, "start", NULL, s->label);
            row++;
        }
        for (int i = 0; i < p->n_areas; i++) {
            const ct_svg_area *a = &p->areas[i];
            if (!a->label) continue;
            int dup = 0;
            for (int j = 0; j < i; j++) dup |= p->areas[j].label && strcmp(p->areas[j].label, a->label) == 0;
            if (dup) continue;
            double y = ly + 4 + 18.0 * row + 9;
            ct_sbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"10\" fill=\"%s\" fill-opacity=\"%.2f\"/>\n",
                           lx + 6, y - 5, col(a->color, "#d62728"), a->opacity > 0 ? a->opacity : 0.35);
            text(b, lx + 36, y + 4, 11, "start", NULL, a->label);
            row++;
        }
    }
    ct_sbuf_puts(b, "</svg>\n");
    if (!ct_sbuf_ok(b)) return ct_errf(err, errcap, CT_ERR_NOMEM, "svg plot: out of memory");
    return CT_OK;
}

ct_status ct_svg_bars_render(const ct_svg_bars *c, ct_sbuf *b, char *err, size_t errcap) {
    if (!c || !b) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "svg bars: no chart or output");
    if (c->n < 0 || (c->n > 0 && (!c->labels || !c->values)))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "svg bars: bad label/value arrays");
    double vmax = 0;
    size_t maxlab = 0;
    for (int i = 0; i < c->n; i++) {
        if (isfinite(c->values[i]) && c->values[i] > vmax) vmax = c->values[i];
        size_t l = c->labels[i] ? strlen(c->labels[i]) : 0;
        if (l > maxlab) maxlab = l;
    }
    if (isfinite(c->ref) && c->ref > vmax) vmax = c->ref;
    double x0 = 0, x1 = isfinite(c->xmax) && c->xmax > 0 ? c->xmax : vmax;
    nice_range(&x0, &x1, 0, !(isfinite(c->xmax) && c->xmax > 0));
    int W = c->width > 0 ? c->width : 760;
    double bar_h = 16, pitch = 24;
    double top = c->note ? 56 : 42;
    double lw = 12 + 6.6 * (double)maxlab;
    if (lw < 90) lw = 90;
    if (lw > W * 0.45) lw = W * 0.45;
    double left = lw + 8, right = 130;
    double pw = W - left - right;
    if (pw < 60) pw = 60;
    int rows = c->n > 0 ? c->n : 1;
    double ph = rows * pitch + 8;
    int H = (int)(top + ph + 50);
    frame f = {x0, x1, 0, 1, left, top, pw, ph};

    doc_open(b, W, H);
    titles(b, W, c->title, c->note);
    double ticks[64];
    char lab[64];
    int nt = ct_svg_ticks(x0, x1, 6, ticks, 64);
    double st = ct_svg_tick_step(x0, x1, 6);
    ct_sbuf_puts(b, "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
    for (int i = 0; i < nt && i < 64; i++)
        ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px(&f, ticks[i]), top,
                       px(&f, ticks[i]), top + ph);
    ct_sbuf_puts(b, "</g>\n");
    for (int i = 0; i < nt && i < 64; i++) {
        tick_label(lab, sizeof lab, ticks[i], st);
        ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n",
                       px(&f, ticks[i]), top + ph, px(&f, ticks[i]), top + ph + 5);
        text(b, px(&f, ticks[i]), top + ph + 18, 11, "middle", NULL, lab);
    }
    if (c->xlabel) text(b, left + pw / 2, H - 10, 12, "middle", NULL, c->xlabel);
    if (c->n == 0) text(b, left + pw / 2, top + ph / 2 + 4, 12, "middle", "fill=\"#777777\"", "no data");
    for (int i = 0; i < c->n; i++) {
        double y = top + 4 + pitch * i;
        double v = c->values[i];
        double len = isfinite(v) && v > 0 ? (v > x1 ? x1 : v) / (x1 - x0) * pw : 0;
        text(b, left - 6, y + bar_h - 4, 11, "end", NULL, c->labels[i] ? c->labels[i] : "");
        if (len > 0)
            ct_sbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>\n", left, y, len,
                           bar_h, col(c->color, "#4c78a8"));
        char vt[64];
        const char *t = c->value_text && c->value_text[i] ? c->value_text[i] : NULL;
        if (!t) {
            snprintf(vt, sizeof vt, "%g", v);
            t = vt;
        }
        text(b, left + len + 5, y + bar_h - 4, 11, "start", NULL, t);
    }
    ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", left, top, left,
                   top + ph);
    ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", left, top + ph,
                   left + pw, top + ph);
    if (isfinite(c->ref) && c->ref >= x0 && c->ref <= x1) {
        double rx = px(&f, c->ref);
        ct_sbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
                          "stroke-dasharray=\"6,4\" stroke-width=\"1.5\"/>\n", rx, top - 4, rx, top + ph);
        if (c->ref_label) text(b, rx, top - 7, 10, "middle", "fill=\"#d62728\"", c->ref_label);
    }
    ct_sbuf_puts(b, "</svg>\n");
    if (!ct_sbuf_ok(b)) return ct_errf(err, errcap, CT_ERR_NOMEM, "svg bars: out of memory");
    return CT_OK;
}
