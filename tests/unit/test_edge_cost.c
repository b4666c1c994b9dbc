/* The cost model and the deploy plan (docs/EDGE.md 3): bytes per frame against the tensors of a
   real checkpoint, the format byte rules, bandwidth interpolation, how batches, threads and
   placements are priced, the plan's choices (quality first under the target, measured over
   predicted, streams kept real time) and the machine-rates cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"
#include "edge/machine.h"
#include "edge/plan.h"
#include "edge/roofline.h"
#include "io/safetensors.h"
#include "test_machine.h"
#include "test_models.h"

static void test_bytes(void) {
    ct_matset s = {1024 * 1024, 1024};
    CHECK(ct_matset_bytes(s, CT_WF_BF16, 0) == 2u << 20);
    CHECK(ct_matset_bytes(s, CT_WF_INT8, 0) == (1u << 20) + 4096);
    CHECK(ct_matset_bytes(s, CT_WF_INT4, 0) == (512u << 10) + (128u << 10));
    CHECK(ct_matset_bytes(s, CT_WF_INT4, 1) == ct_matset_bytes(s, CT_WF_INT8, 1)); /* heads stay int8 */
    CHECK(ct_wformat_parse("int4") == CT_WF_INT4 && ct_wformat_parse("f16") == -1 &&
          !strcmp(ct_wformat_name(CT_WF_INT8), "int8") && !strcmp(ct_wformat_name(9), "?"));

    /* the shape from config.json against the checkpoint's own tensors */
    const char *dir = ct_test_make("tiny", "cost_tiny", 5);
    CHECK(dir != NULL);
    if (!dir) return;
    ct_model_shape sh;
    char err[256], path[1200];
    CHECKF(ct_model_shape_read(dir, &sh, err, sizeof err) == CT_OK, "%s", err);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ct_st_file *f = NULL;
    CHECK(ct_st_open(path, &f, err, sizeof err) == CT_OK);
    if (!f) return;
    uint64_t talker = 0, pred = 0, heads = 0, n_heads = 0, proj = 0;
    static const char *const mats[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    for (size_t i = 0; i < ct_st_count(f); i++) {
        const ct_st_tensor *t = ct_st_at(f, i);
        if (t->ndim != 2) continue;
        uint64_t el = (uint64_t)t->shape[0] * (uint64_t)t->shape[1];
        int mat = 0;
        for (size_t k = 0; k < 7; k++) mat |= strstr(t->name, mats[k]) != NULL;
        if (!strncmp(t->name, "talker.model.layers.", 20) && mat) talker += el;
        else if (!strncmp(t->name, "talker.code_predictor.model.layers.", 35) && mat) pred += el;
        else if (!strcmp(t->name, "talker.codec_head.weight")) talker += el;
        else if (!strncmp(t->name, "talker.code_predictor.lm_head.", 30)) heads += el, n_heads++;
        else if (!strcmp(t->name, "talker.code_predictor.small_to_mtp_projection.weight")) proj += el;
    }
    ct_st_close(f);
    CHECKF(ct_cost_talker_bytes(&sh, CT_WF_BF16) == 2 * talker, "talker %llu vs %llu",
           (unsigned long long)ct_cost_talker_bytes(&sh, CT_WF_BF16), (unsigned long long)(2 * talker));
    CHECK(n_heads == (uint64_t)sh.n_groups - 1);
    CHECKF(ct_cost_pred_bytes(&sh, CT_WF_BF16) == 2 * (n_heads * pred + heads + (uint64_t)sh.n_groups * proj),
           "predictor %llu", (unsigned long long)ct_cost_pred_bytes(&sh, CT_WF_BF16));
    CHECK(ct_cost_talker_bytes(&sh, CT_WF_INT8) < ct_cost_talker_bytes(&sh, CT_WF_BF16) &&
          ct_cost_talker_bytes(&sh, CT_WF_INT4) < ct_cost_talker_bytes(&sh, CT_WF_INT8));
    CHECK(sh.kv_bytes_per_token > 0 && sh.codec_macs == 0);
    CHECK(ct_model_shape_read("/nonexistent/m", &sh, err, sizeof err) != CT_OK);
}

static void test_rates(void) {
    ct_machine m;
    memset(&m, 0, sizeof m);
    m.n_sizes = 3;
    m.n_threads = 4;
    uint64_t sz[3] = {8ull << 20, 32ull << 20, 512ull << 20};
    double g1[3] = {100, 40, 20}, gn[3] = {400, 80, 40};
    for (int i = 0; i < 3; i++) m.bytes[i] = sz[i], m.gbs_1t[i] = g1[i], m.gbs_nt[i] = gn[i];
    m.fma_1t = 100;
    m.fma_nt = 400;
    CHECK(ct_machine_read_gbs(&m, 1 << 20, 1) == 100 && ct_machine_read_gbs(&m, 8ull << 20, 4) == 400);
    CHECK(ct_machine_read_gbs(&m, 1ull << 40, 1) == 20);                         /* beyond: DRAM */
    CHECK(fabs(ct_machine_read_gbs(&m, 16ull << 20, 1) - 70) < 1e-9);            /* log-size midpoint */
    CHECK(fabs(ct_machine_read_gbs(&m, 512ull << 20, 2) - (20 + 20.0 / 3)) < 1e-9); /* threads interpolated */
    CHECK(ct_machine_read_gbs(&m, 512ull << 20, 9) == 40);                       /* flat beyond n */
    CHECK(ct_machine_fma(&m, 1) == 100 && ct_machine_fma(&m, 4) == 400 && ct_machine_fma(&m, 8) == 400);
}

/* a model of round numbers: 100 M talker, 10 M predictor pass, 15 passes */
static ct_model_shape shape(void) {
    ct_model_shape s;
    memset(&s, 0, sizeof s);
    s.talker = (ct_matset){100000000, 100000};
    s.pred = (ct_matset){10000000, 10000};
    s.n_groups = 16;
    s.kv_bytes_per_token = 0;
    s.codec_macs = 1e9;
    return s;
}

static void test_predict(void) {
    ct_machine m = ct_test_rates(20, 50, 4);
    ct_model_shape s = shape();
    ct_cost_eff e = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1};
    ct_cost c;
    ct_cost_cfg cfg = {CT_WF_BF16, CT_WF_BF16, 1, 1, 0, 1, 0};
    ct_cost_predict(&m, &s, &e, &cfg, &c);
    /* 200 MB at 20 GB/s = 10 ms; 15 x 20 MB = 300 MB = 15 ms; 2 GFLOP at 50 = 40 ms; serial sums */
    CHECKF(fabs(c.talker_ms - 10) < 1e-9 && fabs(c.predictor_ms - 15) < 1e-9 && fabs(c.codec_ms - 40) < 1e-9 &&
               fabs(c.frame_ms - 65) < 1e-9 && fabs(c.rtf - 65.0 / 80) < 1e-12,
           "%g %g %g %g", c.talker_ms, c.predictor_ms, c.codec_ms, c.frame_ms);
    /* overlapped: the slower side */
    cfg.serial = 0;
    cfg.codec_threads = 2;
    ct_cost_predict(&m, &s, &e, &cfg, &c);
    CHECK(fabs(c.codec_ms - 20) < 1e-9 && fabs(c.frame_ms - 25) < 1e-9);
    /* int8 halves the weight reads */
    cfg.talker_fmt = cfg.pred_fmt = CT_WF_INT8;
    ct_cost_predict(&m, &s, &e, &cfg, &c);
    CHECK(fabs(c.talker_ms - (100000000 + 400000) / 20e6) < 1e-9);
    /* a batch reads the weights once; compute grows with it (100 streams: compute bound) */
    cfg.streams = 100;
    ct_cost k;
    ct_cost_predict(&m, &s, &e, &cfg, &k);
    CHECK(fabs(k.talker_ms - 100 * 2 * 1e8 / 50e6) < 1e-6 && fabs(k.codec_ms - 100 * 20) < 1e-6);
    /* the prompt: its format's instruction rate (1 GFLOP per token at 100 GFLOP/s on 2 threads) plus
       a 64th of a weight read; a faster integer dot makes int8's prompt faster, nothing else */
    cfg.streams = 1;
    cfg.talker_threads = 2;
    m.prompt_1t[CT_WF_INT8] = 200, m.prompt_nt[CT_WF_INT8] = 800; /* 400 on 2 of 4 threads */
    ct_cost_predict(&m, &s, &e, &cfg, &k);
    const double rd = (100000000 + 400000) / 20e6 / 64;
    CHECKF(fabs(k.prefill_ms_per_token - (2e8 / 400e9 * 1e3 + rd)) < 1e-9, "%g", k.prefill_ms_per_token);
    CHECK(fabs(k.talker_ms - c.talker_ms) < 1e-9);
    cfg.talker_fmt = CT_WF_BF16;
    ct_cost_predict(&m, &s, &e, &cfg, &k);
    CHECKF(fabs(k.prefill_ms_per_token - (2e8 / 100e9 * 1e3 + 200000000 / 20e6 / 64)) < 1e-9, "%g", k.prefill_ms_per_token);
    cfg.talker_fmt = CT_WF_INT8;
    /* the KV read grows with streams and context */
    s.kv_bytes_per_token = 1000000;
    cfg.streams = 2;
    cfg.context = 100;
    ct_cost_predict(&m, &s, &e, &cfg, &k);
    CHECK(k.talker_ms > c.talker_ms + 9.99);
}

static void test_plan(void) {
    ct_model_shape s = shape();
    ct_machine m = ct_test_rates(20, 50, 2);
    ct_plan p;
    ct_plan_make(&m, &s, NULL, 2, 0.85, 0, NULL, &p);
    CHECK(p.n_cpus == 2 && p.target_rtf == 0.85);
    /* every option's placement is the fastest the cost model sees on 2 CPUs */
    for (int i = 0; i < CT_PLAN_OPTIONS; i++) {
        ct_cost best;
        ct_cost_cfg c = p.opt[i].cfg;
        ct_cost_predict(&m, &s, NULL, &c, &best);
        ct_cost_cfg alt[2] = {{p.opt[i].talker_fmt, p.opt[i].pred_fmt, 1, 2, 0, 1, 0},
                              {p.opt[i].talker_fmt, p.opt[i].pred_fmt, 0, 1, 1, 1, 0}};
        for (int a = 0; a < 2; a++) {
            ct_cost k;
            ct_cost_predict(&m, &s, NULL, &alt[a], &k);
            CHECK(best.frame_ms <= k.frame_ms + 1e-9);
        }
        CHECK(p.opt[i].frame_ms == best.frame_ms && !p.opt[i].measured);
    }
    /* the chosen option is the first (best quality) at or under the target */
    int first = -1;
    for (int i = 0; i < CT_PLAN_OPTIONS && first < 0; i++)
        if (p.opt[i].frame_ms <= 0.85 * 80) first = i;
    CHECK(first >= 0 && p.chosen == first && p.realtime);
    /* streams: as many as keep the batched frame under the target */
    const ct_plan_option *o = &p.opt[p.chosen];
    ct_cost_cfg b = o->cfg;
    b.streams = o->max_streams;
    ct_cost k;
    ct_cost_predict(&m, &s, NULL, &b, &k);
    CHECK(o->max_streams >= 1 && k.frame_ms <= 0.85 * 80);
    b.streams = o->max_streams + 1;
    ct_cost_predict(&m, &s, NULL, &b, &k);
    CHECK(k.frame_ms > 0.85 * 80);
    CHECK(fabs(o->frame_ms_fixed + o->frame_ms_per_stream - o->frame_ms) < 1e-9 && o->frame_ms_per_stream > 0);
    /* nothing real time: the fastest */
    ct_machine slow = ct_test_rates(0.05, 50, 2);
    ct_plan_make(&slow, &s, NULL, 2, 0.85, 0, NULL, &p);
    CHECK(!p.realtime && p.chosen == CT_PLAN_OPTIONS - 1 && p.opt[p.chosen].max_streams == 0);
    /* measured beats predicted: a slow measurement moves the choice, a fast one brings bf16 back */
    ct_calibration c0, c1;
    memset(&c0, 0, sizeof c0);
    c0.n_runs = 1;
    c0.runs[0] = (ct_cal_run){0, 1, 1, 1, 1, 1, 30, 1};
    const ct_calibration *cals[CT_PLAN_OPTIONS] = {&c0, NULL, NULL, NULL};
    ct_plan_make(&slow, &s, NULL, 2, 0.85, 0, cals, &p);
    CHECK(p.realtime && p.chosen == 0 && p.opt[0].measured && p.opt[0].frame_ms == 30 && !p.opt[0].cfg.serial);
    CHECK(fabs(p.opt[0].scale - 30 / p.opt[0].predicted.frame_ms) < 1e-12);
    memset(&c1, 0, sizeof c1);
    c1.n_runs = 2;
    c1.runs[0] = (ct_cal_run){1, 2, 0, 1, 1, 1, 500, 1};
    c1.runs[1] = (ct_cal_run){0, 1, 1, 1, 1, 1, 400, 1};
    cals[0] = &c1;
    ct_plan_make(&m, &s, NULL, 2, 0.85, 0, cals, &p);
    CHECK(p.chosen != 0 && p.opt[0].frame_ms == 400 && p.opt[0].cfg.serial == 0);
    int tf, pf;
    ct_plan_formats(2, &tf, &pf);
    CHECK(tf == CT_WF_INT8 && pf == CT_WF_INT4);
}

static void test_machine_cache(void) {
    ct_machine m = ct_test_rates(21.5, 99.25, 2), back;
    char err[256];
    char *js = ct_machine_to_json(&m);
    CHECK(js != NULL);
    CHECKF(js && ct_machine_from_json(js, strlen(js), &back, err, sizeof err) == CT_OK, "%s", err);
    CHECK(back.n_sizes == 1 && back.gbs_1t[0] == 21.5 && back.fma_1t == 99.25 && back.n_threads == 2);
    CHECK(back.prompt_nt[CT_WF_INT4] == 99.25 * 2 && !strcmp(back.prompt_op[CT_WF_INT4], "test FMA") &&
          !strcmp(back.kernels, ct_kernels_id()));
    const char *bad = "{\"schema\": 2, \"n_threads\": 2, \"fma_gflops_1t\": 1, \"fma_gflops_nt\": 2, \"kernels\": \"k\", "
                      "\"prompt\": [{\"format\": \"bf16\", \"op\": \"a\", \"gflops_1t\": 1, \"gflops_nt\": 2}, "
                      "{\"format\": \"int8\", \"op\": \"b\", \"gflops_1t\": 1, \"gflops_nt\": 2}, "
                      "{\"format\": \"int4\", \"op\": \"b\", \"gflops_1t\": 1, \"gflops_nt\": 2}], \"read\": []}";
    CHECK(ct_machine_from_json(bad, strlen(bad), &back, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "'read'"));
    /* a record of the last schema, and one whose formats are out of order, are refused */
    char *old = strdup(bad), *sw = strdup(js);
    memcpy(strstr(old, "2,"), "1,", 2);
    CHECK(ct_machine_from_json(old, strlen(old), &back, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "schema"));
    memcpy(strstr(sw, "int8"), "int4", 4);
    CHECK(ct_machine_from_json(sw, strlen(sw), &back, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "prompt[]"));
    free(old);
    free(sw);
    char dir[] = "/tmp/ct_cost_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[512], note[1024];
    snprintf(path, sizeof path, "%s/roofline", dir);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/roofline/00ff.json", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && js && fputs(js, f) != EOF && fclose(f) == 0);
    ct_hw_profile hw;
    ct_hw_profile_init(&hw);
    ct_machine_get(dir, "00ff", &hw, 2, 1, &back, note, sizeof note);
    CHECK(back.fma_1t == 99.25 && !note[0] && !strncmp(back.source, "cache ", 6));
    /* measured for other threads: not used; measuring off gives the estimate, and says so */
    ct_machine_get(dir, "00ff", &hw, 3, 1, &back, note, sizeof note);
    CHECKF(strstr(note, "not 3") && strstr(note, "probe's figures") && !strncmp(back.source, "estimate", 8), "%s",
           note);
    CHECK(back.fma_nt == back.fma_1t * 3 && back.gbs_1t[0] == 20 && back.prompt_nt[CT_WF_INT8] == back.fma_nt);
    /* measured with other kernels (a forced level, say): not used either */
    ct_machine other = m;
    snprintf(other.kernels, sizeof other.kernels, "scalar, none, f32 act");
    char *ojs = ct_machine_to_json(&other);
    f = fopen(path, "wb");
    CHECK(f && ojs && fputs(ojs, f) != EOF && fclose(f) == 0);
    free(ojs);
    ct_machine_get(dir, "00ff", &hw, 2, 1, &back, note, sizeof note);
    CHECKF(strstr(note, "measured with kernels 'scalar, none, f32 act'") && !strncmp(back.source, "estimate", 8), "%s", note);
    f = fopen(path, "wb");
    CHECK(f && fputs("{garbage", f) != EOF && fclose(f) == 0);
    ct_machine_get(dir, "00ff", &hw, 2, 1, &back, note, sizeof note);
    CHECKF(strstr(note, "ignored") && strstr(note, path), "%s", note);
    free(js);
    remove(path);
    snprintf(path, sizeof path, "%s/roofline", dir);
    rmdir(path);
    /* measured once (1 thread), cached under directories made on the way, read back */
    snprintf(path, sizeof path, "%s/new/root", dir);
    ct_machine_get(path, "77aa", &hw, 1, 0, &back, note, sizeof note);
    CHECKF(!note[0] && !strncmp(back.source, "measured", 8) && back.fma_1t > 0 && back.gbs_1t[3] > 0, "%s", note);
    /* each format's prompt: the instruction the selected kernels run it with, measured */
    const ct_kernel_table *kt = ct_kernels();
    for (int fm = 0; fm < CT_WF_COUNT; fm++) CHECK(back.prompt_1t[fm] > 0 && back.prompt_nt[fm] >= back.prompt_1t[fm]);
    CHECK(!strcmp(back.kernels, ct_kernels_id()));
    CHECKF(!strcmp(back.prompt_op[CT_WF_INT8], back.prompt_op[CT_WF_INT4]), "%s", back.prompt_op[CT_WF_INT4]);
    if (kt->xq && kt->dot_op != CT_DOT_NONE) /* the integer dot, not the FMA */
        CHECKF(strcmp(back.prompt_op[CT_WF_INT8], back.prompt_op[CT_WF_BF16]) != 0 && !strstr(back.prompt_op[CT_WF_INT8], "FM"),
               "%s / %s", back.prompt_op[CT_WF_INT8], back.prompt_op[CT_WF_BF16]);
    if (!kt->amx && !kt->bf16act) /* f32 arithmetic at the level's width: the FMA's rate */
        CHECKF(back.prompt_1t[CT_WF_BF16] == back.fma_1t && strstr(back.prompt_op[CT_WF_BF16], "f32"), "%s",
               back.prompt_op[CT_WF_BF16]);
    ct_machine_get(path, "77aa", &hw, 1, 0, &m, note, sizeof note);
    CHECK(!strncmp(m.source, "cache ", 6) && m.fma_1t == back.fma_1t && m.gbs_nt[2] == back.gbs_nt[2]);
    snprintf(path, sizeof path, "%s/new/root/roofline/77aa.json", dir);
    CHECK(remove(path) == 0);
    snprintf(path, sizeof path, "%s/new/root/roofline", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/new/root", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/new", dir);
    rmdir(path);
    rmdir(dir);
}

/* The read probe: GB/s over a prefix of its buffer on 1 or n threads (sizes clamped to the
   buffer), and the buffer in huge pages where the kernel has them, as the streamed weights are
   (docs/KERNELS.md "Huge pages for the streamed weights"). */
static void test_read_probe(void) {
    const uint64_t MiB = 1ull << 20;
    ct_read_probe *p = NULL;
    char err[256];
    CHECK(ct_read_probe_create(2, 64 * MiB, &p, err, sizeof err) == CT_OK);
    if (!p) return;
    const double g1 = ct_read_probe_gbs(p, 32 * MiB, 1), g2 = ct_read_probe_gbs(p, 64 * MiB, 2);
    const double tiny = ct_read_probe_gbs(p, 100, 2), over = ct_read_probe_gbs(p, 1ull << 40, 9);
    /* rates only positive and finite: a loaded CI machine can make 16 KiB on 2 threads take a
       scheduler slice (ASan, two tests at once), so no speed is asked of them */
    CHECKF(g1 > 0 && g2 > 0 && tiny > 0 && over > 0 && isfinite(g1) && isfinite(g2) && isfinite(tiny) &&
               isfinite(over),
           "%g %g %g %g GB/s", g1, g2, tiny, over);
    if (access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0) {
        FILE *fp = fopen("/proc/self/smaps", "r");
        char line[512];
        long size_kb = 0, huge = 0;
        while (fp && fgets(line, sizeof line, fp)) {
            if (!strncmp(line, "Size:", 5)) size_kb = strtol(line + 5, NULL, 10);
            if (!strncmp(line, "VmFlags:", 8) && strstr(line, " hg") && size_kb >= 64 * 1024) huge = size_kb;
        }
        if (fp) fclose(fp);
        CHECKF(huge > 0, "no MADV_HUGEPAGE mapping of 64 MiB or more while the probe lives");
    }
    ct_read_probe_free(p);
}

int main(void) {
    test_read_probe();
    test_bytes();
    test_rates();
    test_predict();
    test_plan();
    test_machine_cache();
    return ct_test_finish();
}
