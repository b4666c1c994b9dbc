/* Stream metrics (EDGE.md 7.1, 3.1) on hand-computed timelines: TTFA, C_i, playback start,
   ring-buffer stalls for several starts, RTFs, gaps, playback slack, nearest-rank percentiles,
   the multi-request summary, and the schema-1 bench JSON (7.2) written and read back. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "ct_test.h"
#include "stream/metrics.h"

#define SR 24000
#define FRAME 1920 /* samples per 80 ms codec frame */

static int near(double a, double b) { return fabs(a - b) < 1e-9 * (1 + fabs(b)); }

/* Timeline A: 160, 320, 640, 160 ms of audio at 100, 300, 500, 1400 ms, then an empty
   end-of-stream record at 1450. C = 0, 160, 480, 1120; t - C = 100, 140, 20, 280. */
static const ct_chunk_rec A[] = {{100, 2 * FRAME}, {300, 4 * FRAME}, {500, 8 * FRAME}, {1400, 2 * FRAME}, {1450, 0}};
/* Timeline B: the ramp 2,4,8,16,25 at 8 ms per frame, first chunk at 40 ms. */
static const ct_chunk_rec B[] = {{40, 2 * FRAME}, {72, 4 * FRAME}, {136, 8 * FRAME}, {264, 16 * FRAME}, {464, 25 * FRAME}};

static void test_timeline_a(void) {
    ct_stream_metrics m;
    char err[256];
    CHECK(ct_stream_metrics_compute(A, 5, SR, 1500, 0.32, &m, err, sizeof err) == CT_OK);
    CHECK(m.n_chunks == 5 && m.n_audio == 4 && m.n_gaps == 3);
    CHECK(near(m.ttfa_ms, 100) && near(m.t_last_audio_ms, 1400));
    CHECK(near(m.playback_start_ms, 280));
    CHECK(near(m.stall_at_ttfa_ms, 180) && m.n_stalls_at_ttfa == 2);
    CHECK(near(m.streamed_audio_s, 1.28) && near(m.tail_audio_s, 0.32) && near(m.total_wall_s, 1.5));
    CHECK(near(m.rtf_streamed, 1.4 / 1.28));
    CHECK(near(m.rtf_total, 1.5 / 1.6));
    CHECK(near(m.gap_max_ms, 900) && near(m.gap_mean_ms, 1300.0 / 3));

    double c[8];
    CHECK(ct_stream_prefix_ms(A, 5, SR, c, 8) == 4);
    CHECK(near(c[0], 0) && near(c[1], 160) && near(c[2], 480) && near(c[3], 1120));
    double g[8];
    CHECK(ct_stream_gaps(A, 5, g, 8) == 3 && near(g[0], 200) && near(g[1], 200) && near(g[2], 900));

    /* Ring buffer at TTFA: chunk 1 needed at 260 (stall 40, cursor 140), chunk 3 needed at
       140 + 1120 = 1260 (stall 140). */
    ct_stall st[4];
    double total = -1;
    CHECK(ct_underruns(A, 5, SR, 100, st, 4, &total) == 2 && near(total, 180));
    CHECK(st[0].chunk == 1 && st[0].audio_idx == 1 && near(st[0].stall_ms, 40));
    CHECK(st[1].chunk == 3 && st[1].audio_idx == 3 && near(st[1].stall_ms, 140));
    /* At playback_start nothing stalls; at 0 the first chunk itself is 100 ms late. */
    CHECK(ct_underruns(A, 5, SR, 280, st, 4, &total) == 0 && total == 0);
    CHECK(ct_underruns(A, 5, SR, 0, st, 1, &total) == 3 && near(total, 280) && near(st[0].stall_ms, 100));
    /* Starting at 200: chunk 3 needed at 1320: one stall of 80. */
    CHECK(ct_underruns(A, 5, SR, 200, NULL, 0, &total) == 1 && near(total, 80));
    CHECK(ct_underruns(A, 5, 0, 200, NULL, 0, &total) == -1);

    /* Playback slack (3.1): at 600 ms, 1120 ms arrived and 500 played. At 1300 ms chunk 3 is
       still missing: 1120 - 1200 = -80 (underrun). Start 280 at now 200: only chunk 0, not playing. */
    CHECK(near(ct_playback_slack_ms(A, 5, SR, 600, NAN), 620));
    CHECK(near(ct_playback_slack_ms(A, 5, SR, 1300, NAN), -80));
    CHECK(near(ct_playback_slack_ms(A, 5, SR, 200, 280), 160));
    CHECK(ct_playback_slack_ms(A, 0, SR, 200, 280) == 0);
}

static void test_cliff_and_ramp(void) {
    /* 7.4 "1 -> 25 frame cliff": 1 frame at 32 ms, then 25 frames produced at 8 ms/frame
       arrive at 232. Starting at TTFA the player needs chunk 1 at 112: stall 120; the earliest
       safe start is 232 - 80 = 152. */
    ct_chunk_rec cliff[] = {{32, FRAME}, {232, 25 * FRAME}};
    ct_stream_metrics m;
    char err[256];
    CHECK(ct_stream_metrics_compute(cliff, 2, SR, 240, 0, &m, err, sizeof err) == CT_OK);
    CHECK(near(m.ttfa_ms, 32) && near(m.playback_start_ms, 152) && near(m.stall_at_ttfa_ms, 120));
    /* The ramp costs TTFA (2 frames first) but never stalls: playback starts at TTFA. */
    CHECK(ct_stream_metrics_compute(B, 5, SR, 500, 0, &m, err, sizeof err) == CT_OK);
    CHECK(near(m.ttfa_ms, 40) && near(m.playback_start_ms, 40) && m.stall_at_ttfa_ms == 0 && m.n_stalls_at_ttfa == 0);
    CHECK(near(m.streamed_audio_s, 4.4) && near(m.rtf_streamed, 0.464 / 4.4) && near(m.rtf_total, 0.5 / 4.4));
}

static void test_edge_cases(void) {
    ct_stream_metrics m;
    char err[256];
    /* No audio at all: audio metrics are NaN, tail-only RTF still defined. */
    ct_chunk_rec empty[] = {{50, 0}};
    CHECK(ct_stream_metrics_compute(empty, 1, SR, 900, 0.5, &m, err, sizeof err) == CT_OK);
    CHECK(m.n_audio == 0 && isnan(m.ttfa_ms) && isnan(m.playback_start_ms) && isnan(m.rtf_streamed));
    CHECK(near(m.rtf_total, 1.8) && m.n_gaps == 0 && isnan(m.gap_max_ms));
    CHECK(ct_stream_metrics_compute(NULL, 0, SR, 900, 0, &m, err, sizeof err) == CT_OK && isnan(m.rtf_total));
    ct_chunk_rec bad[] = {{10, FRAME}, {20, -5}};
    CHECK(ct_stream_metrics_compute(bad, 2, SR, 30, 0, &m, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "chunk 1"));
    ct_chunk_rec nan_t[] = {{NAN, FRAME}};
    CHECK(ct_stream_metrics_compute(nan_t, 1, SR, 30, 0, &m, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "chunk 0"));
    CHECK(ct_stream_metrics_compute(A, 5, 0, 30, 0, &m, err, sizeof err) == CT_ERR_INVALID_ARG);
    /* A single chunk: playback start = TTFA, no gaps. */
    CHECK(ct_stream_metrics_compute(A, 1, SR, 100, 0, &m, err, sizeof err) == CT_OK);
    CHECK(near(m.playback_start_ms, 100) && m.n_gaps == 0 && m.stall_at_ttfa_ms == 0);
}

static void test_percentiles(void) {
    double v[10];
    for (int i = 0; i < 10; i++) v[i] = i + 1;
    CHECK(ct_percentile_nearest(v, 10, 0.5) == 5);   /* rank ceil(5) = 5 */
    CHECK(ct_percentile_nearest(v, 10, 0.9) == 9);   /* rank 9 */
    CHECK(ct_percentile_nearest(v, 10, 0.95) == 10); /* ceil(9.5) = 10 */
    CHECK(ct_percentile_nearest(v, 10, 0.0) == 1);   /* rank max(1, 0) */
    CHECK(ct_percentile_nearest(v, 10, 1.0) == 10);
    CHECK(ct_percentile_nearest(v, 3, 0.5) == 2);    /* ceil(1.5) = 2 */
    CHECK(ct_percentile_nearest(v, 1, 0.9) == 1);
    CHECK(isnan(ct_percentile_nearest(v, 0, 0.5)));
    double u[] = {900, 200, NAN, 200, INFINITY};
    ct_summary s;
    CHECK(ct_summary_of(u, 5, &s) == CT_OK && s.n == 3 && s.p50 == 200 && s.p90 == 900 && s.max == 900 &&
          near(s.mean, 1300.0 / 3));
    CHECK(ct_summary_of(u, 0, &s) == CT_OK && s.n == 0 && isnan(s.p50));
}

static void fill_requests(ct_stream_request *r) {
    static const ct_chunk_rec W[] = {{500, 10 * FRAME}};
    memset(r, 0, 3 * sizeof *r);
    r[0] = (ct_stream_request){"w0", "warm", 1, SR, W, 1, 600, 0, {0}};
    r[1] = (ct_stream_request){"r0_0", "hello", 0, SR, A, 5, 1500, 0.32, {0}};
    r[2] = (ct_stream_request){"r0_1", NULL, 0, SR, B, 5, 500, 0, {0}};
    char err[256];
    for (int i = 0; i < 3; i++) CHECK(ct_stream_request_score(&r[i], err, sizeof err) == CT_OK);
}

static void test_summary(void) {
    ct_stream_request r[3];
    fill_requests(r);
    ct_stream_summary s;
    char err[256];
    CHECK(ct_stream_summarize(r, 3, &s, err, sizeof err) == CT_OK);
    CHECK(s.n_requests == 2); /* warm-up excluded */
    CHECK(s.ttfa_ms.n == 2 && s.ttfa_ms.p50 == 40 && s.ttfa_ms.p90 == 100 && s.ttfa_ms.max == 100 &&
          near(s.ttfa_ms.mean, 70));
    CHECK(s.playback_start_ms.p50 == 40 && s.playback_start_ms.max == 280);
    CHECK(s.stall_at_ttfa_ms.p50 == 0 && s.stall_at_ttfa_ms.p90 == 180 && near(s.stall_at_ttfa_ms.mean, 90));
    /* Gaps pooled: 200, 200, 900 + 32, 64, 128, 200 -> sorted 32 64 128 200 200 200 900. */
    CHECK(s.gap_ms.n == 7 && s.gap_ms.p50 == 200 && s.gap_ms.p90 == 900 && near(s.gap_ms.mean, 1724.0 / 7));
    CHECK(near(s.total_audio_s, 1.28 + 0.32 + 4.4) && near(s.total_wall_s, 2.0));
    CHECK(near(s.rtf_total.max, 1.5 / 1.6) && near(s.rtf_total.p50, 0.5 / 4.4));
}

static void test_json(void) {
    ct_stream_request r[3];
    fill_requests(r);
    char *argv[] = {"codectalk", "bench", "stream"};
    json_t *args = json_pack("{s:i,s:i}", "warmup", 1, "repeat", 1);
    json_t *stats = json_pack("{s:{},s:[]}", "roles", "attribution");
    ct_bench_meta meta = {"models/tiny", NULL, "CustomVoice", NULL, "abc1234", "0.1.0", "20250101-120000",
                          3, argv, args, 1, 1, 0, 12.5, NULL, 123456789};
    char err[256];
    json_t *doc = ct_bench_json(&meta, r, 3, stats, err, sizeof err);
    CHECK(doc != NULL);
    if (!doc) return;
    CHECK(json_integer_value(json_object_get(doc, "schema")) == 1);
    json_t *jm = json_object_get(doc, "meta");
    CHECK(!strcmp(json_string_value(json_object_get(jm, "engine_version")), "0.1.0"));
    CHECK(!strcmp(json_string_value(json_object_get(jm, "git_sha")), "abc1234"));
    CHECK(json_is_null(json_object_get(jm, "gpu_name")) && json_is_null(json_object_get(jm, "deploy_config")));
    CHECK(json_array_size(json_object_get(jm, "argv")) == 3);
    CHECK(json_integer_value(json_object_get(json_object_get(jm, "bench_args"), "repeat")) == 1);
    CHECK(json_object_get(doc, "step_stats") == stats);
    json_t *res = json_object_get(doc, "resources");
    CHECK(json_integer_value(json_object_get(res, "peak_rss_bytes")) == 123456789);
    CHECK(!strcmp(json_string_value(json_object_get(res, "gpu_mem_mode")), "none"));
    CHECK(json_is_null(json_object_get(res, "peak_gpu_mem_mib")));
    CHECK(near(json_real_value(json_object_get(json_object_get(doc, "init"), "init_s")), 12.5));

    char path[512], tmpdir[400];
    snprintf(tmpdir, sizeof tmpdir, "%s/test_stream_metrics_%ld", CT_BIN_DIR, (long)getpid());
    CHECK(ct_bench_result_path(tmpdir, "models/tiny/", "profile_auto", "20250101-120000", "x", path, sizeof path,
                               err, sizeof err) == CT_OK);
    char want[512];
    snprintf(want, sizeof want, "%s/tiny/profile_auto/20250101-120000_x.json", tmpdir);
    CHECK(!strcmp(path, want));
    char p2[64];
    CHECK(ct_bench_result_path("o", "m", NULL, "T", NULL, p2, sizeof p2, err, sizeof err) == CT_OK &&
          !strcmp(p2, "o/m/default/T.json"));
    CHECK(ct_bench_result_path("o", "m", NULL, "T", NULL, p2, 8, err, sizeof err) == CT_ERR_LIMIT);

    CHECKF(ct_json_write_file(path, doc, err, sizeof err) == CT_OK, "%s", err);
    json_error_t je;
    json_t *back = json_load_file(path, 0, &je);
    CHECK(back != NULL);
    if (back) {
        json_t *rq = json_object_get(back, "requests");
        CHECK(json_array_size(rq) == 3);
        json_t *r1 = json_array_get(rq, 1);
        CHECK(!strcmp(json_string_value(json_object_get(r1, "request_id")), "r0_0"));
        CHECK(json_integer_value(json_object_get(r1, "n_chunks")) == 4);
        CHECK(json_array_size(json_object_get(r1, "chunks")) == 5);
        json_t *c1 = json_array_get(json_object_get(r1, "chunks"), 1);
        CHECK(near(json_number_value(json_object_get(c1, "gap_ms")), 200) &&
              json_integer_value(json_object_get(c1, "samples")) == 4 * FRAME);
        CHECK(near(json_number_value(json_object_get(r1, "playback_start_ms")), 280));
        CHECK(near(json_number_value(json_object_get(r1, "stall_at_ttfa_ms")), 180));
        CHECK(json_array_size(json_object_get(r1, "gap_ms")) == 3);
        CHECK(json_is_true(json_object_get(json_array_get(rq, 0), "warmup")));
        CHECK(json_is_null(json_object_get(json_array_get(rq, 2), "text")));
        json_t *sm = json_object_get(back, "summary");
        CHECK(json_integer_value(json_object_get(sm, "n_requests")) == 2);
        CHECK(near(json_number_value(json_object_get(json_object_get(sm, "ttfa_ms"), "p50")), 40));
        CHECK(json_integer_value(json_object_get(json_object_get(sm, "gap_ms"), "n")) == 7);
        json_decref(back);
    }
    /* Non-finite metrics become null. */
    ct_chunk_rec none[] = {{10, 0}};
    ct_stream_request q = {"r0_0", "x", 0, SR, none, 1, 20, 0, {0}};
    CHECK(ct_stream_request_score(&q, err, sizeof err) == CT_OK);
    json_t *d2 = ct_bench_json(&meta, &q, 1, NULL, err, sizeof err);
    CHECK(d2 && json_is_null(json_object_get(json_array_get(json_object_get(d2, "requests"), 0), "ttfa_ms")));
    CHECK(d2 && json_is_null(json_object_get(d2, "step_stats")));
    CHECK(d2 && json_is_null(json_object_get(json_object_get(json_object_get(d2, "summary"), "ttfa_ms"), "p50")));
    json_decref(d2);

    /* An unwritable destination names the path: a directory under a regular file. */
    char blocked[600];
    snprintf(blocked, sizeof blocked, "%s/sub/r.json", path);
    CHECK(ct_json_write_file(blocked, doc, err, sizeof err) == CT_ERR_IO && strstr(err, path));
    remove(path);
    json_decref(doc);
    json_decref(args);
    json_decref(stats);
}

int main(void) {
    test_timeline_a();
    test_cliff_and_ramp();
    test_edge_cases();
    test_percentiles();
    test_summary();
    test_json();
    return ct_test_finish();
}
