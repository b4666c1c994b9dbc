/* Chunk-schedule policies (EDGE.md 9.3) on synthetic timelines with hand-computed chunk sizes:
   exact, fixed first chunk, the ramp, the dynamic first chunk vs load, and the adaptive EWMA
   controller at 10 / 30 / 60 / 100 ms per frame (grows, locks, never shrinks). */
#include <math.h>
#include <string.h>

#include "ct_test.h"
#include "stream/schedule.h"

#define MAXC 256

typedef struct {
    int n;
    int size[MAXC];
    int at_frame[MAXC]; /* frames_total when emitted */
    double at_ms[MAXC];
    int target[MAXC];
    int final_zero; /* the finishing call ended with 0 (sentinel) */
} trace;

/* Frames arrive at t = k * ms_per_frame (k = 1..n_frames); the last one comes with finished. */
static void simulate(ct_sched *s, int n_frames, const double *frame_ms, double ms_per_frame, int active,
                     trace *tr) {
    memset(tr, 0, sizeof *tr);
    double t = 0;
    for (int k = 1; k <= n_frames; k++) {
        t += frame_ms ? frame_ms[k - 1] : ms_per_frame;
        ct_sched_obs o = {k, k == n_frames, t, active, 0, 0};
        int e;
        while ((e = ct_sched_next_chunk(s, &o)) > 0 && tr->n < MAXC) {
            tr->size[tr->n] = e;
            tr->at_frame[tr->n] = k;
            tr->at_ms[tr->n] = t;
            tr->target[tr->n] = s->target;
            tr->n++;
        }
        CHECK(e == 0);
        if (k == n_frames) tr->final_zero = (e == 0);
    }
}

static int sizes_are(const trace *tr, const int *want, int n) {
    if (tr->n != n) {
        fprintf(stderr, "  got %d chunks:", tr->n);
        for (int i = 0; i < tr->n; i++) fprintf(stderr, " %d", tr->size[i]);
        fprintf(stderr, "\n");
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (tr->size[i] != want[i]) {
            fprintf(stderr, "  chunk %d: got %d want %d; all:", i, tr->size[i], want[i]);
            for (int j = 0; j < tr->n; j++) fprintf(stderr, " %d", tr->size[j]);
            fprintf(stderr, "\n");
            return 0;
        }
    return 1;
}

static ct_sched make(const char *spec) {
    ct_sched_params p = ct_sched_params_default();
    char err[256] = "";
    ct_status st = ct_sched_parse(spec, &p, err, sizeof err);
    CHECKF(st == CT_OK, "%s: %s", spec, err);
    ct_sched s;
    st = ct_sched_init(&s, &p, err, sizeof err);
    CHECKF(st == CT_OK, "%s: %s", spec, err);
    return s;
}

static void test_defaults_and_parse(void) {
    ct_sched_params p = ct_sched_params_default();
    CHECK(p.kind == CT_SCHED_RAMP && p.n_ramp == 5 && p.ramp[0] == 2 && p.ramp[1] == 4 && p.ramp[2] == 8 &&
          p.ramp[3] == 16 && p.ramp[4] == 25);
    CHECK(p.steady == 25 && p.left_context == 72 && p.initial == 0 && p.min_frames == 2);
    CHECK(p.margin_ms == 50 && p.ramp_divisor == 15 && p.delta_min == 2 && p.alpha == 0.3 && p.frame_ms == 80);
    char warn[200] = "x", err[256] = "";
    CHECK(ct_sched_params_check(&p, warn, sizeof warn, err, sizeof err) == CT_OK && warn[0] == 0);

    char buf[128];
    CHECK(strcmp(ct_sched_format(&p, buf, sizeof buf), "ramp:2,4,8,16,25") == 0);
    CHECK(ct_sched_parse("exact", &p, err, sizeof err) == CT_OK && p.kind == CT_SCHED_EXACT);
    CHECK(ct_sched_parse("fixed:1,25", &p, err, sizeof err) == CT_OK && p.kind == CT_SCHED_FIXED &&
          p.initial == 1 && p.steady == 25);
    CHECK(strcmp(ct_sched_format(&p, buf, sizeof buf), "fixed:1,25") == 0);
    CHECK(ct_sched_parse("fixed:4", &p, err, sizeof err) == CT_OK && p.initial == 4 && p.steady == 25);
    CHECK(ct_sched_parse("dynamic", &p, err, sizeof err) == CT_OK && p.kind == CT_SCHED_DYNAMIC &&
          p.max_streams == 64);
    CHECK(ct_sched_parse("dynamic:8", &p, err, sizeof err) == CT_OK && p.max_streams == 8);
    CHECK(ct_sched_parse("adaptive", &p, err, sizeof err) == CT_OK && p.kind == CT_SCHED_ADAPTIVE && p.initial == 0);
    CHECK(ct_sched_parse("adaptive:3", &p, err, sizeof err) == CT_OK && p.initial == 3);
    CHECK(strcmp(ct_sched_format(&p, buf, sizeof buf), "adaptive:3") == 0);
    CHECK(ct_sched_parse("ramp:1,2,4,8,16,25", &p, err, sizeof err) == CT_OK && p.n_ramp == 6 && p.ramp[5] == 25);
    /* ;options: the calibrated adaptive controller's floor and margin, and the steady chunk */
    {
        ct_sched_params q = ct_sched_params_default();
        CHECK(ct_sched_parse("adaptive;min=3;margin=160;steady=20", &q, err, sizeof err) == CT_OK &&
              q.kind == CT_SCHED_ADAPTIVE && q.min_frames == 3 && q.margin_ms == 160 && q.steady == 20);
        CHECK(strcmp(ct_sched_format(&q, buf, sizeof buf), "adaptive;steady=20;min=3;margin=160") == 0);
        ct_sched_params r = ct_sched_params_default();
        CHECK(ct_sched_parse(buf, &r, err, sizeof err) == CT_OK && memcmp(&q, &r, sizeof q) == 0);
        CHECK(ct_sched_parse("ramp:2,4,8;steady=8", &q, err, sizeof err) == CT_OK && q.steady == 8);
        CHECK(ct_sched_parse("adaptive;min=30", &q, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "min"));
        CHECK(ct_sched_parse("adaptive;size=3", &q, err, sizeof err) == CT_ERR_INVALID_ARG &&
              strstr(err, "unknown option 'size'"));
        CHECK(ct_sched_parse("adaptive;min", &q, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "name=value"));
        CHECK(ct_sched_parse("adaptive;margin=x", &q, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "'x'"));
    }

    /* Errors name the bad part and leave p unchanged. */
    ct_sched_params keep = p;
    CHECK(ct_sched_parse("ramp:2,x,8", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "'x'"));
    CHECK(memcmp(&keep, &p, sizeof p) == 0);
    CHECK(ct_sched_parse("ramp:5", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "at least 2"));
    CHECK(ct_sched_parse("ramp:2,0", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "'0'"));
    CHECK(ct_sched_parse("ramp:2,,4", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "entry 2"));
    CHECK(ct_sched_parse("ramp:1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", &p, err, sizeof err) == CT_ERR_INVALID_ARG &&
          strstr(err, "more than 16"));
    CHECK(ct_sched_parse("bogus:3", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "'bogus'"));
    CHECK(ct_sched_parse("fixed", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "fixed needs"));
    CHECK(ct_sched_parse("fixed:1,0", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "steady"));
    CHECK(ct_sched_parse("fixed:-1", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "'-1'"));
    CHECK(ct_sched_parse("exact:3", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "no value"));
    CHECK(ct_sched_parse("dynamic:0", &p, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "'0'"));
    CHECK(memcmp(&keep, &p, sizeof p) == 0);

    /* Ramp ending below steady: valid, with a warning. */
    CHECK(ct_sched_parse("ramp:4,4,8,16,20", &p, err, sizeof err) == CT_OK);
    CHECK(ct_sched_params_check(&p, warn, sizeof warn, err, sizeof err) == CT_OK && strstr(warn, "ends at 20"));
    ct_sched_params bad = ct_sched_params_default();
    bad.min_frames = 30;
    ct_sched s;
    CHECK(ct_sched_init(&s, &bad, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "min frames"));
    bad = ct_sched_params_default();
    bad.alpha = 0;
    CHECK(ct_sched_init(&s, &bad, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "alpha"));
}

static void test_exact(void) {
    ct_sched s = make("exact");
    trace tr;
    simulate(&s, 5, NULL, 80, 1, &tr);
    int want[] = {1, 1, 1, 1, 1};
    CHECK(sizes_are(&tr, want, 5) && tr.final_zero);
    /* A burst of three frames: three chunks of one. */
    ct_sched_reset(&s);
    ct_sched_obs o = {3, 0, 10, 1, 0, 0};
    CHECK(ct_sched_next_chunk(&s, &o) == 1 && ct_sched_next_chunk(&s, &o) == 1 && ct_sched_next_chunk(&s, &o) == 1);
    CHECK(ct_sched_next_chunk(&s, &o) == 0 && s.frames_emitted == 3);
}

static void test_fixed(void) {
    trace tr;
    ct_sched s = make("fixed:1,25"); /* the mainline YAML: 1 then 25 */
    simulate(&s, 60, NULL, 80, 1, &tr);
    int w1[] = {1, 25, 25, 9};
    CHECK(sizes_are(&tr, w1, 4));
    CHECK(tr.at_frame[0] == 1 && tr.at_frame[1] == 26 && tr.at_frame[2] == 51 && tr.at_frame[3] == 60);
    CHECK(tr.final_zero);

    s = make("fixed:0,25"); /* IC 0: plain steady chunks */
    simulate(&s, 60, NULL, 80, 1, &tr);
    int w2[] = {25, 25, 10};
    CHECK(sizes_are(&tr, w2, 3));
    s = make("fixed:30,25"); /* IC >= steady clamps to steady */
    simulate(&s, 60, NULL, 80, 1, &tr);
    CHECK(sizes_are(&tr, w2, 3) && s.ic == 25);
    s = make("fixed:4,25"); /* finishing before the first chunk: the whole buffer */
    simulate(&s, 3, NULL, 80, 1, &tr);
    int w3[] = {3};
    CHECK(sizes_are(&tr, w3, 1));
    s = make("fixed:4,10"); /* exactly on a boundary: no remainder, the finish call returns 0 */
    simulate(&s, 14, NULL, 80, 1, &tr);
    int w4[] = {4, 10};
    CHECK(sizes_are(&tr, w4, 2) && tr.final_zero);
}

static void test_ramp(void) {
    trace tr;
    ct_sched s = make("ramp:2,4,8,16,25");
    simulate(&s, 100, NULL, 80, 1, &tr);
    int w1[] = {2, 4, 8, 16, 25, 25, 20};
    CHECK(sizes_are(&tr, w1, 7));
    int cum[] = {2, 6, 14, 30, 55, 80, 100};
    for (int i = 0; i < 7 && i < tr.n; i++) CHECKF(tr.at_frame[i] == cum[i], "chunk %d at %d", i, tr.at_frame[i]);
    s = make("ramp:2,4,8,16,25");
    simulate(&s, 55, NULL, 80, 1, &tr); /* ends on cum(4): last call is the empty sentinel */
    int w2[] = {2, 4, 8, 16, 25};
    CHECK(sizes_are(&tr, w2, 5) && tr.final_zero);
    s = make("ramp:2,4,8,16,25");
    simulate(&s, 40, NULL, 80, 1, &tr); /* finish mid chunk 4: 40 - cum(3) = 10 */
    int w3[] = {2, 4, 8, 16, 10};
    CHECK(sizes_are(&tr, w3, 5));
    s = make("ramp:1,2"); /* past the table: steady */
    simulate(&s, 53, NULL, 80, 1, &tr);
    int w4[] = {1, 2, 25, 25};
    CHECK(sizes_are(&tr, w4, 4));

    /* Burst: 7 frames at once give chunks 2 and 4, one frame stays pending. */
    s = make("ramp:2,4,8,16,25");
    ct_sched_obs o = {7, 0, 50, 1, 0, 0};
    CHECK(ct_sched_next_chunk(&s, &o) == 2);
    CHECK(ct_sched_next_chunk(&s, &o) == 4);
    CHECK(ct_sched_next_chunk(&s, &o) == 0 && s.frames_emitted == 6 && s.target == 8);
    o.frames_total = 5; /* going backwards is invalid */
    CHECK(ct_sched_next_chunk(&s, &o) == -1);
    CHECK(ct_sched_next_chunk(&s, NULL) == -1);
    /* Reset gives the same sequence again. */
    ct_sched_reset(&s);
    CHECK(s.frames_emitted == 0 && s.chunks == 0);
    simulate(&s, 100, NULL, 80, 1, &tr);
    CHECK(sizes_are(&tr, w1, 7));

    /* 9.3 worked example: ramp_decode_windows([1,2,4,8,16,25], 25) = [1,3,7,15,31,50]. */
    int ramp[] = {1, 2, 4, 8, 16, 25}, win[] = {1, 3, 7, 15, 31, 50}, len = 0;
    for (int i = 0; i < 6; i++) {
        len += ramp[i];
        CHECKF(ct_sched_decode_window(len, ramp[i], 25) == win[i], "window %d", i);
    }
    /* Default 72-frame context: a steady chunk at frame 200 re-decodes 72 + 25 = 97 frames. */
    CHECK(ct_sched_decode_window(200, 25, 72) == 97);
    CHECK(ct_sched_decode_window(2, 2, 72) == 2);
}

static void test_dynamic(void) {
    /* steps 2,4,8,16 for steady 25 (largest power of two < 25 is 16). */
    CHECK(ct_sched_dynamic_ic(25, 0, 64) == 2);
    CHECK(ct_sched_dynamic_ic(25, 1, 64) == 2);   /* load 1/64 -> idx round(0.047) = 0 */
    CHECK(ct_sched_dynamic_ic(25, 11, 64) == 4);  /* 0.515625 -> 1 */
    CHECK(ct_sched_dynamic_ic(25, 32, 64) == 8);  /* 1.5 -> 2 (ties to even) */
    CHECK(ct_sched_dynamic_ic(25, 64, 64) == 16); /* full load */
    CHECK(ct_sched_dynamic_ic(25, 100, 64) == 16); /* load capped at 1 */
    CHECK(ct_sched_dynamic_ic(25, 1, 6) == 2);    /* 0.5 -> 0 (Python round; half-up would give 4) */
    CHECK(ct_sched_dynamic_ic(25, 1, 2) == 8);    /* 1.5 -> 2 */
    CHECK(ct_sched_dynamic_ic(9, 1, 4) == 2);     /* steps 2,4,8: 0.25*2 = 0.5 -> 0 */
    CHECK(ct_sched_dynamic_ic(9, 3, 4) == 8);     /* 1.5 -> 2 */
    CHECK(ct_sched_dynamic_ic(16, 64, 64) == 8);  /* 16 is not < 16: steps 2,4,8 */
    CHECK(ct_sched_dynamic_ic(17, 64, 64) == 16);
    CHECK(ct_sched_dynamic_ic(3, 5, 5) == 2);
    CHECK(ct_sched_dynamic_ic(2, 0, 1) == 1);     /* steady <= 2 -> 1 */
    CHECK(ct_sched_dynamic_ic(1, 0, 1) == 1);
    CHECK(ct_round_half_even(2.5) == 2 && ct_round_half_even(3.5) == 4 && ct_round_half_even(-0.5) == 0 &&
          ct_round_half_even(0.51) == 1);

    /* As a schedule: computed once from the load seen at the first frame, then steady. */
    trace tr;
    ct_sched s = make("dynamic:64");
    simulate(&s, 41, NULL, 80, 64, &tr);
    int w1[] = {16, 25};
    CHECK(sizes_are(&tr, w1, 2));
    s = make("dynamic:64");
    simulate(&s, 29, NULL, 80, 1, &tr);
    int w2[] = {2, 25, 2};
    CHECK(sizes_are(&tr, w2, 3));
    s = make("dynamic:64");
    ct_sched_obs o = {1, 0, 80, 1, 0, 0}; /* light load at frame 1 ... */
    CHECK(ct_sched_next_chunk(&s, &o) == 0 && s.ic == 2);
    o.frames_total = 2;
    o.active_streams = 64; /* ... a later surge does not change the cached IC */
    CHECK(ct_sched_next_chunk(&s, &o) == 2 && s.ic == 2);
}

/* Hand-computed adaptive timelines; adaptive:2 = fixed first chunk of 2, defaults otherwise. */
static void test_adaptive(void) {
    trace tr;
    /* 60 ms/frame: targets 2, 4 (no EWMA: last+2), then EWMA 60 -> growth max(2, 60/15=4):
       8, 12, 16, 20, 24; at frame 87 the buffer 86*80 - (5220-120) = 1780 >= 25*60+50 locks. */
    ct_sched s = make("adaptive:2");
    simulate(&s, 86 + 25 * 3, NULL, 60, 1, &tr);
    int w60[] = {2, 4, 8, 12, 16, 20, 24, 25, 25, 25};
    CHECK(sizes_are(&tr, w60, 10));
    int at60[] = {2, 6, 14, 26, 42, 62, 86, 111};
    for (int i = 0; i < 8 && i < tr.n; i++) CHECKF(tr.at_frame[i] == at60[i], "60ms chunk %d at %d", i, tr.at_frame[i]);
    CHECK(s.locked && fabs(s.ewma_ms - 60) < 1e-9);

    /* 100 ms/frame (slower than real time): growth max(2, 100/15=6): 2, 4, 10, 16, 22, 25..;
       the buffer never covers 25 frames, so it never locks, but it never shrinks either. */
    s = make("adaptive:2");
    simulate(&s, 2 + 4 + 10 + 16 + 22 + 25 + 25, NULL, 100, 1, &tr);
    int w100[] = {2, 4, 10, 16, 22, 25, 25};
    CHECK(sizes_are(&tr, w100, 7));
    CHECK(!s.locked && fabs(s.ewma_ms - 100) < 1e-9);

    /* 30 ms/frame: the greedy term matters. Chunk 2 starts with buffer 330 ms -> greedy 9 and
       drifts down as the buffer drains (8, 7, 6, 6, 6) until 6 frames are pending at frame 12.
       Chunk 3: greedy 20 - p at pending p, floor 8: ships 10 at frame 22. Frame 23 locks
       (1760 - 630 = 1130 >= 800). */
    s = make("adaptive:2");
    simulate(&s, 22 + 50, NULL, 30, 1, &tr);
    int w30[] = {2, 4, 6, 10, 25, 25};
    CHECK(sizes_are(&tr, w30, 6));
    CHECK(tr.at_frame[2] == 12 && tr.at_frame[3] == 22 && s.locked);

    /* 10 ms/frame: EWMA 10 after chunk 1; frame 7 has buffer 480 - 50 = 430 >= 300: lock. */
    s = make("adaptive:2");
    simulate(&s, 6 + 25 + 3, NULL, 10, 1, &tr);
    int w10[] = {2, 4, 25, 3};
    CHECK(sizes_are(&tr, w10, 4));

    /* No fixed IC: the first chunk is the dynamic one (full load -> 16). */
    s = make("adaptive");
    simulate(&s, 16 + 25, NULL, 10, 64, &tr);
    CHECK(tr.n >= 1 && tr.size[0] == 16 && s.ic == 16);
    s = make("adaptive");
    simulate(&s, 3, NULL, 10, 1, &tr);
    CHECK(tr.n == 2 && tr.size[0] == 2 && tr.size[1] == 1); /* 2, then the flush of 1 */

    /* The caller's buffer measurement replaces the estimate. */
    s = make("adaptive:2");
    ct_sched_obs o = {2, 0, 100, 1, 0, 0};
    CHECK(ct_sched_next_chunk(&s, &o) == 2);
    o.frames_total = 6;
    o.now_ms = 300;
    CHECK(ct_sched_next_chunk(&s, &o) == 4 && fabs(s.ewma_ms - 50) < 1e-9);
    o.frames_total = 7;
    o.now_ms = 350;
    o.use_buffer = 1;
    o.buffer_ms = 25 * 50 + 50; /* exactly the lock threshold */
    CHECK(ct_sched_next_chunk(&s, &o) == 0 && s.locked && s.target == 25);

    /* Jittery production (20 / 150 ms alternating, with a 900 ms stall): chunk sizes never
       shrink (final flush aside), never exceed steady, and each is at least its target. */
    double jt[400];
    for (int i = 0; i < 400; i++) jt[i] = (i % 2) ? 150 : 20;
    jt[57] = 900;
    s = make("adaptive:1");
    simulate(&s, 400, jt, 0, 1, &tr);
    int mono = 1, capped = 1, covers = 1;
    for (int i = 1; i < tr.n - 1; i++) mono &= tr.size[i] >= tr.size[i - 1];
    for (int i = 0; i < tr.n; i++) capped &= tr.size[i] <= 25;
    for (int i = 0; i < tr.n - 1; i++) covers &= tr.size[i] >= tr.target[i];
    CHECK(mono && capped && covers && tr.n > 5);
    int total = 0;
    for (int i = 0; i < tr.n; i++) total += tr.size[i];
    CHECK(total == 400);
}

int main(void) {
    test_defaults_and_parse();
    test_exact();
    test_fixed();
    test_ramp();
    test_dynamic();
    test_adaptive();
    return ct_test_finish();
}
