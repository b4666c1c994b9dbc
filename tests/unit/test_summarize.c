/* `bench summarize` (src/report): markdown cell escaping and number formatting, SVG ticks,
   escaping and well-formedness (a small XML tag-balance checker), and the whole run over the
   hand-written fixtures in tests/data/summarize/results: table rows against hand-computed values
   (EDGE.md 7.1 nearest-rank percentiles), the attribution rows against ct_stats_markdown, the stall
   regions of the chunk timelines, and the error paths (missing directory, unwritable output
   directory, corrupt and foreign JSON named while every other file is still summarised). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/stepstats.h"
#include "ct_test.h"
#include "report/md.h"
#include "report/sbuf.h"
#include "report/summarize.h"
#include "report/svg.h"

#define FIX CT_SRC_DIR "/tests/data/summarize/results"

/* ---- helpers ---------------------------------------------------------------------------- */

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    size_t l = strlen(needle);
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += l) n++;
    return n;
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Tiny XML well-formedness check: one root element, balanced and properly nested tags, quoted
   attribute values without '<', and '&' only as a predefined or numeric entity. Returns 1 when
   the document passes, else 0 with the reason in why[cap]. */
static int xml_ok(const char *s, const char *root, char *why, size_t cap) {
    char stack[64][32];
    int depth = 0, roots = 0;
    const char *p = s;
    while (*p) {
        if (*p == '&') {
            const char *ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"};
            int ok = 0;
            for (int i = 0; i < 6; i++) ok |= strncmp(p, ents[i], strlen(ents[i])) == 0;
            if (!ok) {
                snprintf(why, cap, "bare '&' at offset %ld", (long)(p - s));
                return 0;
            }
            p++;
            continue;
        }
        if (*p != '<') {
            if (*p == '>') {
                snprintf(why, cap, "stray '>' at offset %ld", (long)(p - s));
                return 0;
            }
            p++;
            continue;
        }
        if (strncmp(p, "<?", 2) == 0) {
            const char *e = strstr(p, "?>");
            if (!e) return snprintf(why, cap, "unterminated <?"), 0;
            p = e + 2;
            continue;
        }
        if (strncmp(p, "<!--", 4) == 0) {
            const char *e = strstr(p, "-->");
            if (!e) return snprintf(why, cap, "unterminated comment"), 0;
            p = e + 3;
            continue;
        }
        int closing = p[1] == '/';
        const char *n = p + 1 + closing;
        size_t nl = 0;
        while (n[nl] && (n[nl] == ':' || n[nl] == '-' || (n[nl] >= 'a' && n[nl] <= 'z') || (n[nl] >= 'A' && n[nl] <= 'Z') ||
                         (n[nl] >= '0' && n[nl] <= '9')))
            nl++;
        if (nl == 0 || nl >= 32) return snprintf(why, cap, "bad tag name at offset %ld", (long)(p - s)), 0;
        const char *q = n + nl;
        char quote = 0;
        while (*q && (quote || *q != '>')) {
            if (quote) {
                if (*q == quote) quote = 0;
                else if (*q == '<') return snprintf(why, cap, "'<' inside an attribute at offset %ld", (long)(q - s)), 0;
            } else if (*q == '"' || *q == '\'') quote = *q;
            else if (*q == '<') return snprintf(why, cap, "'<' inside a tag at offset %ld", (long)(q - s)), 0;
            q++;
        }
        if (!*q) return snprintf(why, cap, "unterminated tag at offset %ld", (long)(p - s)), 0;
        int self = q[-1] == '/';
        if (closing) {
            if (depth == 0 || strlen(stack[depth - 1]) != nl || strncmp(stack[depth - 1], n, nl) != 0)
                return snprintf(why, cap, "mismatched </%.*s> at offset %ld", (int)nl, n, (long)(p - s)), 0;
            depth--;
        } else {
            if (depth == 0) {
                roots++;
                if (roots > 1) return snprintf(why, cap, "second root element"), 0;
                if (strlen(root) != nl || strncmp(root, n, nl) != 0)
                    return snprintf(why, cap, "root is <%.*s>, expected <%s>", (int)nl, n, root), 0;
            }
            if (!self) {
                if (depth >= 64) return snprintf(why, cap, "nesting too deep"), 0;
                memcpy(stack[depth], n, nl);
                stack[depth][nl] = 0;
                depth++;
            }
        }
        p = q + 1;
    }
    if (depth != 0) return snprintf(why, cap, "<%s> not closed", stack[depth - 1]), 0;
    if (roots != 1) return snprintf(why, cap, "no root element"), 0;
    return 1;
}

static void check_svg_file(const char *path) {
    char *s = slurp(path);
    CHECKF(s != NULL, "cannot read %s", path);
    if (!s) return;
    char why[200] = "";
    CHECKF(xml_ok(s, "svg", why, sizeof why), "%s: %s", path, why);
    CHECK(strncmp(s, "<?xml", 5) == 0);
    free(s);
}

/* ---- unit tests --------------------------------------------------------------------------- */

static void test_checker_itself(void) {
    char why[200];
    CHECK(xml_ok("<svg><g a=\"1\"><line/></g></svg>", "svg", why, sizeof why));
    CHECK(!xml_ok("<svg><g></svg>", "svg", why, sizeof why));
    CHECK(!xml_ok("<svg><g></g>", "svg", why, sizeof why));
    CHECK(!xml_ok("<svg>a & b</svg>", "svg", why, sizeof why));
    CHECK(!xml_ok("<svg a=\"<\"/>", "svg", why, sizeof why));
    CHECK(!xml_ok("<svg/><svg/>", "svg", why, sizeof why));
}

static void test_md(void) {
    ct_sbuf b;
    ct_sbuf_init(&b);
    ct_md_put_cell(&b, "a|b\nc\td");
    CHECK(strcmp(ct_sbuf_str(&b), "a\\|b c d") == 0);
    ct_sbuf_free(&b);
    const char *h[3] = {"x", "y", "z"};
    const ct_md_align al[3] = {CT_MD_LEFT, CT_MD_RIGHT, CT_MD_RIGHT};
    const char *row[3] = {"1", NULL, "p|q"};
    ct_md_table_header(&b, 3, h, al);
    ct_md_table_row(&b, 3, row);
    CHECK(strcmp(ct_sbuf_str(&b), "| x | y | z |\n|---|---:|---:|\n| 1 | - | p\\|q |\n") == 0);
    CHECK(ct_sbuf_ok(&b));
    ct_sbuf_free(&b);
    char n[32];
    CHECK(strcmp(ct_md_num(n, sizeof n, NAN, 2), "-") == 0);
    CHECK(strcmp(ct_md_num(n, sizeof n, INFINITY, 1), "-") == 0);
    CHECK(strcmp(ct_md_num(n, sizeof n, -0.0001, 2), "0.00") == 0);
    CHECK(strcmp(ct_md_num(n, sizeof n, 246.2857, 1), "246.3") == 0);
    ct_sbuf_printf(&b, "%0300d|", 7); /* longer than the small-format fast path */
    CHECK(b.len == 301 && b.data[299] == '7' && b.data[300] == '|');
    ct_sbuf_free(&b);
}

static void test_ticks(void) {
    double t[16];
    CHECK(ct_svg_ticks(0, 1000, 5, t, 16) == 6);
    CHECK(t[0] == 0 && t[1] == 200 && t[5] == 1000);
    CHECK(ct_svg_tick_step(0, 7.3, 6) == 1);
    CHECK(fabs(ct_svg_tick_step(0.013, 0.087, 4) - 0.02) < 1e-12);
    int n = ct_svg_ticks(0.013, 0.087, 4, t, 16);
    CHECK(n == 4 && fabs(t[0] - 0.02) < 1e-12 && fabs(t[3] - 0.08) < 1e-12);
    CHECK(ct_svg_tick_step(5, 5, 6) == 1);  /* empty span */
    CHECK(ct_svg_ticks(1, 0, 5, t, 16) == 0); /* reversed */
}

static void test_svg_render(void) {
    double x[3] = {0, 100, 200}, y[3] = {0, 50, 50}, ax[3] = {0, 100, 100}, ay[3] = {0, 0, 40};
    ct_svg_series s = {"a<b & \"c\"", "#123456", CT_SVG_STEP, x, y, 3, 2, 0, 1};
    ct_svg_area a = {"stall", NULL, 0, ax, ay, 3};
    ct_svg_plot p;
    memset(&p, 0, sizeof p);
    p.title = "T & <t>";
    p.xlabel = "x";
    p.ylabel = "y";
    p.xmin = p.xmax = p.ymin = p.ymax = NAN;
    p.series = &s;
    p.n_series = 1;
    p.areas = &a;
    p.n_areas = 1;
    ct_sbuf b;
    ct_sbuf_init(&b);
    char err[256], why[200] = "";
    CHECK(ct_svg_plot_render(&p, &b, err, sizeof err) == CT_OK);
    const char *svg = ct_sbuf_str(&b);
    CHECKF(xml_ok(svg, "svg", why, sizeof why), "%s", why);
    CHECK(strstr(svg, "a&lt;b &amp; &quot;c&quot;") != NULL);
    CHECK(strstr(svg, "T &amp; &lt;t&gt;") != NULL);
    CHECK(count(svg, "<polyline") == 1 && count(svg, "<polygon") == 1);
    CHECK(count(svg, "<circle") == 3);
    /* a step through 3 points has 5 vertices */
    const char *pl = strstr(svg, "<polyline");
    const char *pts = pl ? strstr(pl, "points=\"") : NULL;
    int commas = 0;
    for (const char *q = pts ? pts + 8 : ""; *q && *q != '"'; q++) commas += *q == ',';
    CHECK(commas == 5);
    ct_sbuf_free(&b);

    double bad[3] = {0, NAN, 2};
    s.y = bad;
    CHECK(ct_svg_plot_render(&p, &b, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(strstr(err, "not finite") != NULL);
    ct_sbuf_free(&b);

    ct_svg_bars c;
    memset(&c, 0, sizeof c);
    c.title = "empty";
    c.xmax = c.ref = NAN;
    CHECK(ct_svg_bars_render(&c, &b, err, sizeof err) == CT_OK);
    CHECK(strstr(ct_sbuf_str(&b), "no data") != NULL);
    CHECKF(xml_ok(ct_sbuf_str(&b), "svg", why, sizeof why), "%s", why);
    ct_sbuf_free(&b);
    const char *labels[2] = {"one", "two & three"};
    double vals[2] = {20, 150};
    c.labels = labels;
    c.values = vals;
    c.n = 2;
    c.ref = 100;
    c.ref_label = "80 ms";
    CHECK(ct_svg_bars_render(&c, &b, err, sizeof err) == CT_OK);
    CHECK(count(ct_sbuf_str(&b), "fill=\"#4c78a8\"") == 2);
    CHECK(strstr(ct_sbuf_str(&b), "two &amp; three") != NULL && strstr(ct_sbuf_str(&b), ">150<") != NULL);
    CHECKF(xml_ok(ct_sbuf_str(&b), "svg", why, sizeof why), "%s", why);
    ct_sbuf_free(&b);
    c.n = -1;
    CHECK(ct_svg_bars_render(&c, &b, err, sizeof err) == CT_ERR_INVALID_ARG);
    ct_sbuf_free(&b);
}

/* ---- the whole run over the fixtures ------------------------------------------------------ */

static void test_fixtures(const char *tmp) {
    char out[1024], path[1200], err[1024];
    snprintf(out, sizeof out, "%s/out/nested", tmp); /* parents are created */
    ct_summarize_result res;
    ct_summarize_opts o = ct_summarize_opts_default();
    ct_status st = ct_summarize_dir(FIX, out, &o, &res, err, sizeof err);
    CHECKF(st == CT_OK, "%s", err);
    CHECK(res.n_json == 11);
    CHECK(res.n_stream == 2 && res.n_model == 2 && res.n_sweep == 1 && res.n_serve == 1);
    CHECK(res.n_skipped == 3); /* foreign.json, array.json, the step-stats dump */
    CHECK(res.n_failed == 2);  /* the corrupt file and the bad chunk */
    CHECK(res.n_svg == 6);     /* 3 timelines, attribution bars, two model stage bars */
    const char *log = res.log ? res.log : "";
    CHECK(strstr(log, "error: " FIX "/m06/default/20250520-120000_broken.json: not valid JSON (line ") != NULL);
    CHECK(strstr(log, "error: " FIX "/m06/default/20250520-130000_badchunk.json: schema-1 stream result: "
                      "requests[0].chunks[1].t_ms is missing or not a number") != NULL);
    CHECK(strstr(log, "warning: " FIX "/foreign.json: not a codectalk result") != NULL);
    CHECK(strstr(log, "warning: " FIX "/array.json: not a codectalk result (top level is an array)") != NULL);
    CHECK(strstr(log, "note: " FIX "/step_stats/1747735000_123/stage0_123.json: step-stats dump") != NULL);
    CHECK(count(log, "\n") == 5);
    snprintf(path, sizeof path, "%s/summary.md", out);
    CHECK(strcmp(res.summary_path, path) == 0);
    ct_summarize_result_free(&res);

    char *md = slurp(path);
    CHECK(md != NULL);
    if (!md) return;
    /* meta line */
    CHECK(strstr(md, "model `models/m06` · profile `edge-x86` · schedule `ramp` · decoder windowed · engine 0.1.0 · "
                     "git a4fe5b0c1d2e · date 2025-05-20 10:15:00\n") != NULL);
    CHECK(strstr(md, "2 measured requests (+1 warm-up) · init 1.25 s · peak RSS 2.00 GiB") != NULL);
    /* summary of r0_0 (TTFA 100, start 280, stall 180, gaps 200 200 900) and r0_1 (the ramp:
       TTFA 40, no stall, gaps 32 64 128 200); nearest rank over 2 values: p50 = lower, p90 = upper */
    CHECK(strstr(md, "| ttfa_ms | 2 | 40.0 | 100.0 | 100.0 | 70.0 |\n") != NULL);
    CHECK(strstr(md, "| playback_start_ms | 2 | 40.0 | 280.0 | 280.0 | 160.0 |\n") != NULL);
    CHECK(strstr(md, "| stall_at_ttfa_ms | 2 | 0.0 | 180.0 | 180.0 | 90.0 |\n") != NULL);
    CHECK(strstr(md, "| rtf_streamed | 2 | 0.105 | 1.094 | 1.094 | 0.600 |\n") != NULL);
    CHECK(strstr(md, "| rtf_total | 2 | 0.107 | 0.938 | 0.938 | 0.522 |\n") != NULL);
    /* 7 pooled gaps 32 64 128 200 200 200 900: rank ceil(3.5)=4 -> 200, ceil(6.3)=7 -> 900 */
    CHECK(strstr(md, "| gap_ms | 7 | 200.0 | 900.0 | 900.0 | 246.3 |\n") != NULL);
    /* the edge run has no summary: recomputed from its one request (timeline r0_0) */
    CHECK(strstr(md, "| playback_start_ms | 1 | 280.0 | 280.0 | 280.0 | 280.0 |\n") != NULL);
    CHECK(strstr(md, "| gap_ms | 3 | 200.0 | 900.0 | 900.0 | 433.3 |\n") != NULL);
    CHECK(strstr(md, "(6 of the 6 summary rows recomputed from the requests") != NULL);
    /* per-request rows: the warm-up is listed but marked */
    CHECK(strstr(md, "| w0 | yes | 2 | 0.16 | 500.0 | 620.0 | 120.0 | 4.375 | 4.438 |\n") != NULL);
    CHECK(strstr(md, "| r0_1 | no | 5 | 4.40 | 40.0 | 40.0 | 0.0 | 0.105 | 0.107 |\n") != NULL);
    /* attribution table */
    CHECK(strstr(md, "| role | counter | n | mean ms | p95 ms | share of 80 ms |\n") != NULL);
    CHECK(strstr(md, "| stage0 | core.step_ms | 880 | 146.00 | 219.00 | 182.5% |\n") != NULL);
    CHECK(strstr(md, "| stage1 | codec.decode_ms | 120 | 12.40 | 20.25 | 15.5% |\n") != NULL);
    /* ... and each row equals what ct_stats_markdown makes of the same step_stats */
    json_t *doc = json_load_file(FIX "/m06/default/20250520-101500_ramp.json", 0, NULL);
    char *ref = doc ? ct_stats_markdown(json_object_get(doc, "step_stats"), 0) : NULL;
    CHECK(ref != NULL);
    int rows = 0;
    for (char *line = ref ? strchr(ref, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        char *end = strchr(line + 1, '\n');
        if (!end) break;
        if (strncmp(line + 1, "---", 3) == 0) continue;
        char want[512];
        snprintf(want, sizeof want, "| %.*s |\n", (int)(end - line - 1), line + 1);
        CHECKF(strstr(md, want) != NULL, "attribution row not in summary.md: %s", want);
        rows++;
    }
    CHECK(rows == 3);
    free(ref);
    json_decref(doc);
    /* overview, model bench, sweep */
    CHECK(strstr(md, "| m06/default/20250520-101500_ramp.json | models/m06 | edge-x86 | ramp | 2 | 40.0 | 100.0 | 40.0 | "
                     "0.0 | 0.105 | 0.107 | 2.00 | a4fe5b0c1d2e |\n") != NULL);
    CHECK(strstr(md, "| talker | 30.50 | 880.0 | 28.9 | 72% | - | - | 38.1% |\n") != NULL);
    CHECK(strstr(md, "| total | 46.75 |  |  |  | - | - | 58.4% |\n") != NULL);
    /* a result with stage floors: each stage's floor and ms / floor, the frame's against their sum */
    CHECK(strstr(md, "| talker | 20.00 | 440.0 | 22.0 | 80% | 16.00 | 1.25 | 25.0% |\n") != NULL);
    CHECK(strstr(md, "| codec (stream, ramp 2..25) | 8.00 | - | - | - | 4.00 | 2.00 | 10.0% |\n") != NULL);
    CHECK(strstr(md, "| codec (1-frame pushes, not in the total) | 12.00 | - | - | - | 4.00 | 3.00 | 15.0% |\n") != NULL);
    CHECK(strstr(md, "| total | 38.00 |  |  |  | 25.00 | 1.52 | 47.5% |\n") != NULL);
    CHECK(strstr(md, "\nprefill 390.0 ms (once; 300.0 ms when the voice returns, 28 of 37 positions run) · RTF") != NULL);
    CHECK(strstr(md, "\nprefill 210.5 ms (once) · RTF") != NULL); /* a result without the kept figure */
    CHECK(strstr(md, "| threads | ttfa_ms.p50 | ttfa_ms.p90 | rtf | ok | note |\n") != NULL);
    /* serve bench: a row per level, the best level in the overview */
    CHECK(strstr(md, "## serve_bench.json\n") != NULL);
    CHECK(strstr(md, "| 4 | 4 | 0 | 0 | 454 | 748 | 2.069 | 2.132 | 48, 16167 | 1.88 | 1.74x |\n") != NULL);
    CHECK(strstr(md, "| 1 | 4 | 0 | 0 | 177 | 200 | 0.916 | 0.936 | 4, 824 | 1.08 | 1.00x |\n") != NULL);
    CHECK(strstr(md, "## Serve bench runs\n") != NULL && strstr(md, "| serve_bench.json | 4 | 1.88 |\n") != NULL);
    CHECK(strstr(md, "| 2+1 | 500.25 | 520 | 1.25 | - | a\\|b |\n") != NULL);
    /* the failures are listed, the good files all have sections */
    CHECK(strstr(md, "## Files not summarised") != NULL);
    CHECK(count(md, "20250520-120000_broken.json | error |") == 1);
    CHECK(strstr(md, "## m06/edge/20250520-111500.json\n") != NULL && strstr(md, "## sweep_threads.json\n") != NULL &&
          strstr(md, "## model_bench_0.6b.json\n") != NULL);
    CHECK(strstr(md, "![attribution bars](m06__default__20250520-101500_ramp.attribution.svg)") != NULL);
    free(md);

    /* the SVGs */
    const char *svgs[5] = {"m06__default__20250520-101500_ramp.attribution.svg",
                           "m06__default__20250520-101500_ramp.timeline.r0_0.svg",
                           "m06__default__20250520-101500_ramp.timeline.r0_1.svg",
                           "m06__edge__20250520-111500.timeline.r0_0.svg", "model_bench_0.6b.stages.svg"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", out, svgs[i]);
        check_svg_file(path);
    }
    snprintf(path, sizeof path, "%s/m06__default__20250520-101500_ramp.timeline.w0.svg", out);
    CHECK(!exists(path)); /* warm-ups are not plotted when measured requests exist */
    /* r0_0 with the cursor from TTFA = 100: delivered 160 ms on [100, 300) is passed from
       t = 260, 1120 ms on [500, 1400) from t = 1220: two shaded regions; the ramp has none */
    snprintf(path, sizeof path, "%s/%s", out, svgs[1]);
    char *s = slurp(path);
    CHECK(s && count(s, "<polygon") == 2 && strstr(s, "stall at TTFA 180.0 ms in 2 stalls") != NULL);
    free(s);
    snprintf(path, sizeof path, "%s/%s", out, svgs[2]);
    s = slurp(path);
    CHECK(s && count(s, "<polygon") == 0 && strstr(s, "no stall from TTFA") != NULL);
    free(s);
    snprintf(path, sizeof path, "%s/%s", out, svgs[0]);
    s = slurp(path);
    CHECK(s && strstr(s, "146.00 ms (182.5%)") != NULL && strstr(s, "stage0 core.step_ms") != NULL);
    free(s);

    /* no timelines, no request table */
    o.max_timelines = 0;
    o.max_request_rows = 0;
    snprintf(out, sizeof out, "%s/out2", tmp);
    CHECK(ct_summarize_dir(FIX, out, &o, &res, err, sizeof err) == CT_OK);
    CHECK(res.n_svg == 3 && res.n_stream == 2);
    ct_summarize_result_free(&res);
    snprintf(path, sizeof path, "%s/summary.md", out);
    md = slurp(path);
    CHECK(md && !strstr(md, "| request | warm-up |") && !strstr(md, "### Chunk timelines"));
    free(md);
}

static int copy_file(const char *from, const char *to) {
    char *s = slurp(from);
    if (!s) return 0;
    FILE *f = fopen(to, "wb");
    int ok = f && fputs(s, f) >= 0;
    if (f) fclose(f);
    free(s);
    return ok;
}

static void test_errors(const char *tmp) {
    char dir[1024], out[1100], err[1024];
    ct_summarize_result res;
    /* missing results directory: named, nothing created */
    snprintf(dir, sizeof dir, "%s/no_such_results", tmp);
    CHECK(ct_summarize_dir(dir, NULL, NULL, &res, err, sizeof err) == CT_ERR_IO);
    CHECK(strstr(err, dir) != NULL && strstr(err, "No such file") != NULL);
    CHECK(!exists(dir));
    CHECK(res.log == NULL && res.summary_path[0] == 0);
    ct_summarize_result_free(&res);
    /* results path that is a file */
    snprintf(dir, sizeof dir, "%s/plainfile", tmp);
    CHECK(copy_file(FIX "/foreign.json", dir));
    CHECK(ct_summarize_dir(dir, NULL, NULL, &res, err, sizeof err) == CT_ERR_IO);
    CHECK(strstr(err, "not a directory") != NULL);
    ct_summarize_result_free(&res);
    /* output directory that cannot be created (a parent is a regular file) */
    snprintf(out, sizeof out, "%s/sub/out", dir);
    CHECK(ct_summarize_dir(FIX, out, NULL, &res, err, sizeof err) == CT_ERR_IO);
    CHECK(strstr(err, "cannot create output directory") != NULL && strstr(err, dir) != NULL);
    ct_summarize_result_free(&res);
    CHECK(ct_summarize_dir(NULL, NULL, NULL, &res, err, sizeof err) == CT_ERR_INVALID_ARG);

    /* default output DIR/summary, which the next run does not read back */
    snprintf(dir, sizeof dir, "%s/small", tmp);
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(out, sizeof out, "%s/run.json", dir);
    CHECK(copy_file(FIX "/m06/default/20250520-101500_ramp.json", out));
    CHECK(ct_summarize_dir(dir, NULL, NULL, &res, err, sizeof err) == CT_OK);
    CHECK(res.n_json == 1 && res.n_stream == 1 && res.n_svg == 3 && res.log == NULL);
    ct_summarize_result_free(&res);
    snprintf(out, sizeof out, "%s/summary/summary.md", dir);
    CHECK(exists(out));
    snprintf(out, sizeof out, "%s/summary/stray.json", dir);
    CHECK(copy_file(FIX "/foreign.json", out));
    CHECK(ct_summarize_dir(dir, NULL, NULL, &res, err, sizeof err) == CT_OK);
    CHECK(res.n_json == 1 && res.n_skipped == 0);
    ct_summarize_result_free(&res);
    /* a FIFO named like a result is skipped with a warning, never waited on */
    snprintf(out, sizeof out, "%s/pipe.json", dir);
    CHECK(mkfifo(out, 0600) == 0);
    alarm(60);
    CHECK(ct_summarize_dir(dir, NULL, NULL, &res, err, sizeof err) == CT_OK);
    alarm(0);
    CHECK(res.n_json == 1 && res.n_skipped == 1 && res.log && strstr(res.log, "pipe.json: not a regular file, skipped"));
    ct_summarize_result_free(&res);
    unlink(out);

    /* an empty directory still gets a summary saying so */
    snprintf(dir, sizeof dir, "%s/empty", tmp);
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(out, sizeof out, "%s/empty_out", tmp);
    CHECK(ct_summarize_dir(dir, out, NULL, &res, err, sizeof err) == CT_OK && res.n_json == 0);
    ct_summarize_result_free(&res);
    snprintf(out, sizeof out, "%s/empty_out/summary.md", tmp);
    char *md = slurp(out);
    CHECK(md && strstr(md, "No result files (*.json) found.") != NULL);
    free(md);

    /* a serve-bench result without levels is an error naming the file */
    snprintf(dir, sizeof dir, "%s/badserve", tmp);
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(out, sizeof out, "%s/s.json", dir);
    FILE *f = fopen(out, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"schema\": \"codectalk.bench_serve/1\", \"levels\": []}", f);
        fclose(f);
    }
    CHECK(ct_summarize_dir(dir, NULL, NULL, &res, err, sizeof err) == CT_OK);
    CHECK(res.n_failed == 1 && res.n_serve == 0 && res.log && strstr(res.log, "s.json: codectalk.bench_serve/1 result: "
                                                                            "\"levels\" is missing or empty"));
    ct_summarize_result_free(&res);
}

int main(void) {
    char tmp[] = "/tmp/ct_test_summarize_XXXXXX";
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_checker_itself();
    test_md();
    test_ticks();
    test_svg_render();
    test_fixtures(tmp);
    test_errors(tmp);
    if (ct_test_fail == 0) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", tmp);
    } else {
        fprintf(stderr, "outputs kept in %s\n", tmp);
    }
    return ct_test_finish();
}
