/* Deploy profiles (docs/EDGE.md 4): the strict YAML loader and its error messages, the writer's
   round trip, every key reaching the params it stands for (ct_profile_apply), and the auto
   chain (base -> class overlay -> derived -> cost model / calibration -> calibrated schedule ->
   user file -> flags) on snapshot machines with fixed machine rates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_test.h"
#include "edge/probe.h"
#include "edge/profile.h"
#include "kernels/cpu.h"
#include "test_machine.h"
#include "test_models.h"

#define PDIR CT_SRC_DIR "/profiles"
#define SNAP(m) CT_SRC_DIR "/tests/data/probe/" m


/* Writes text to path (CHECKed). */
static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fputs(text, f) != EOF);
    CHECK(fclose(f) == 0);
}

static ct_profile P;
static char err[1024];

static ct_status load(const char *yaml) {
    ct_profile_defaults(&P);
    return ct_profile_load_yaml(&P, yaml, strlen(yaml), "x.yaml", "test", err, sizeof err);
}

static int list_is(ct_pkey k, const int *v, int n) {
    if (P.v[k].n != n) return 0;
    for (int i = 0; i < n; i++)
        if (P.v[k].list[i] != v[i]) return 0;
    return 1;
}

static void test_loader(void) {
    ct_profile_defaults(&P);
    CHECK(ct_profile_validate(&P, err, sizeof err) == CT_OK);
    CHECK(strcmp(P.v[CT_PK_TALKER_WEIGHTS].s, "bf16") == 0 && strcmp(P.v[CT_PK_TALKER_WEIGHTS].layer, "builtin") == 0);

    CHECK(load("") == CT_OK);
    CHECK(load("# only a comment\n") == CT_OK);
    CHECK(load("{}\n") == CT_OK);
    CHECK(load("engine:\n  max_streams: 3\n  kv_budget_bytes: 123456789012\n  warmup: yes\nstreaming:\n"
               "  chunk_ramp: [3, 6, 12]\n  policy: ramp\ntalker:\n  cpus: \"0,1,2,3\"\n") == CT_OK);
    static const int r3[] = {3, 6, 12};
    CHECK(P.v[CT_PK_ENGINE_MAX_STREAMS].i == 3 && strcmp(P.v[CT_PK_ENGINE_MAX_STREAMS].layer, "test") == 0);
    CHECK(list_is(CT_PK_STREAM_RAMP, r3, 3) && P.v[CT_PK_ENGINE_WARMUP].i == 1 &&
          !strcmp(P.v[CT_PK_STREAM_POLICY].s, "ramp"));
    CHECK(strcmp(P.v[CT_PK_TALKER_CPUS].s, "0-3") == 0 && P.v[CT_PK_ENGINE_KV_BUDGET].i == 123456789012LL);
    CHECK(load("streaming:\n  chunk_ramp:\n    - 2\n    - 25\n") == CT_OK && P.v[CT_PK_STREAM_RAMP].n == 2);

    /* errors name file, line and key */
    CHECK(load("talker:\n  weights: bf16\n  kv_budget: 5\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "x.yaml:3:") && strstr(err, "unknown key 'talker.kv_budget'"), "%s", err);
    CHECK(load("turbo:\n  on: true\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "x.yaml:1:") && strstr(err, "'turbo'"), "%s", err);
    CHECK(load("max_streams: 2\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "unknown key 'max_streams'"), "%s", err);
    CHECK(load("engine:\n  max_streams: 2\n  max_streams: 3\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "x.yaml:3:") && strstr(err, "duplicate key 'engine.max_streams'"), "%s", err);
    CHECK(load("engine:\n  max_streams: &n 2\nstreaming:\n  min_frames: *n\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "alias") && strstr(err, "streaming.min_frames"), "%s", err);
    CHECK(load("engine:\n  max_streams: two\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "x.yaml:2:") && strstr(err, "engine.max_streams"), "%s", err);
    CHECK(load("engine:\n  max_streams: 0\n") == CT_ERR_FORMAT);
    CHECK(load("engine:\n  max_streams:\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "has no value"), "%s", err);
    CHECK(load("engine:\n  warmup: maybe\n") == CT_ERR_FORMAT);
    /* keys of the seed framework with no meaning here are gone */
    CHECK(load("engine:\n  parallel_init: true\n") == CT_ERR_FORMAT);
    CHECK(load("talker:\n  eager: true\n") == CT_ERR_FORMAT);
    CHECK(load("talker:\n  dtype: bf16\n") == CT_ERR_FORMAT);
    CHECK(load("streaming:\n  decode_batch_max_size: 1\n") == CT_ERR_FORMAT);
    CHECK(load("engine:\n  throttle_margin_ms: -2\n") == CT_ERR_FORMAT);
    CHECK(load("engine:\n  throttle_margin_ms: -1\n") == CT_OK);
    CHECK(load("streaming:\n  chunk_ramp: 25\n") == CT_ERR_FORMAT);
    CHECK(load("engine:\n  max_streams: [1]\n") == CT_ERR_FORMAT);
    CHECK(load("streaming:\n  chunk_ramp: [1, x]\n") == CT_ERR_FORMAT);
    CHECK(load("talker:\n  weights: fp64\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "talker.weights") && strstr(err, "bf16 int8 int4"), "%s", err);
    CHECK(load("predictor:\n  weights: int3\n") == CT_ERR_FORMAT);
    CHECK(load("streaming:\n  policy: sometimes\n") == CT_ERR_FORMAT);
    CHECK(load("talker:\n  prefill_chunk_tokens: 5000\n") == CT_ERR_FORMAT);
    CHECK(load("talker:\n  cpus: 3-1\n") == CT_ERR_FORMAT);
    CHECK(load("engine: [\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "section 'engine' must be a mapping"), "%s", err);
    CHECK(load("streaming:\n  chunk_ramp: [1, 2\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "x.yaml:") && strstr(err, "syntax"), "%s", err);
    CHECK(load("- a\n- b\n") == CT_ERR_FORMAT);
    CHECK(load("engine: {}\n---\nengine: {}\n") == CT_ERR_FORMAT);
    CHECK(load("engine:\n  max_streams:\n    deeper: 1\n") == CT_ERR_FORMAT);
    CHECK(load("? [a]\n: 1\n") == CT_ERR_FORMAT);

    /* text setter */
    ct_profile_defaults(&P);
    CHECK(ct_profile_set(&P, "streaming.chunk_ramp", "[3, 6, 25]", "flag", err, sizeof err) == CT_OK &&
          P.v[CT_PK_STREAM_RAMP].n == 3);
    CHECK(ct_profile_set(&P, "streaming.chunk_ramp", "4,8", "flag", err, sizeof err) == CT_OK &&
          P.v[CT_PK_STREAM_RAMP].list[1] == 8);
    CHECK(ct_profile_set(&P, "streaming.chunk_ramp", "[4,8", "flag", err, sizeof err) == CT_ERR_FORMAT);
    CHECK(ct_profile_set(&P, "nope", "1", "flag", err, sizeof err) == CT_ERR_FORMAT);
    CHECK(ct_profile_set(&P, "engine.kv_budget_bytes", "-1", "flag", err, sizeof err) == CT_ERR_FORMAT);
    /* cross-key checks */
    ct_profile_defaults(&P);
    CHECK(ct_profile_set(&P, "streaming.min_frames", "30", "f", err, sizeof err) == CT_OK &&
          ct_profile_validate(&P, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "streaming.min_frames"));
    ct_profile_defaults(&P);
    CHECK(ct_profile_set(&P, "streaming.policy", "ramp", "f", err, sizeof err) == CT_OK &&
          ct_profile_set(&P, "streaming.chunk_ramp", "[8, 4]", "f", err, sizeof err) == CT_OK &&
          ct_profile_validate(&P, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "must not decrease"));
    ct_profile_defaults(&P);
    CHECK(ct_profile_set(&P, "streaming.utterance_bytes", "5", "f", err, sizeof err) == CT_OK &&
          ct_profile_validate(&P, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "utterance_bytes"));
}

static void test_files(void) {
    ct_profile_defaults(&P);
    CHECK(ct_profile_load_file(&P, PDIR "/qwen3_tts.yaml", "base", err, sizeof err) == CT_OK);
    static const int ramp[] = {2, 4, 8, 16, 25};
    CHECK(list_is(CT_PK_STREAM_RAMP, ramp, 5) && P.v[CT_PK_STREAM_CHUNK_FRAMES].i == 25);
    CHECK(ct_profile_load_file(&P, "/nonexistent.yaml", "u", err, sizeof err) == CT_ERR_IO);
    CHECK(ct_profile_set(&P, "talker.weights", "int4", "x", err, sizeof err) == CT_OK &&
          ct_profile_set(&P, "engine.throttle_margin_ms", "-1", "x", err, sizeof err) == CT_OK);

    /* round trip through the writer, with and without comments */
    for (int explain = 0; explain < 2; explain++) {
        char *y = ct_profile_to_yaml(&P, explain, "header line 1\nheader: 2");
        CHECK(y != NULL);
        if (!y) continue;
        ct_profile Q;
        ct_profile_defaults(&Q);
        CHECK(ct_profile_set(&Q, "description", "other", "x", err, sizeof err) == CT_OK);
        CHECKF(ct_profile_load_yaml(&Q, y, strlen(y), "rt.yaml", "rt", err, sizeof err) == CT_OK, "%s", err);
        int same = 1;
        for (int k = 0; k < CT_PK_COUNT; k++) {
            const ct_pval *a = &P.v[k], *b = &Q.v[k];
            if (a->i != b->i || strcmp(a->s, b->s) || a->n != b->n ||
                memcmp(a->list, b->list, sizeof a->list)) {
                same = 0;
                fprintf(stderr, "round trip differs at %s\n", ct_profile_key(k)->key);
            }
        }
        CHECK(same);
        if (explain) CHECK(strstr(y, "# header line 1\n") && strstr(y, "# base | codec_chunk_ramp"));
        free(y);
    }
}

/* Every key reaches the params it stands for: set one key to a value other than the builtin,
   apply, and the params differ from the builtin profile's (a key with no consumer fails). The
   builtin profile gives the engine's plain defaults (`--profile none`). */
static void test_apply(void) {
    ct_profile_defaults(&P);
    ct_profile_bufs b0, b1;
    ct_model_params m0 = ct_model_params_default(), m1;
    ct_engine_params e0 = ct_engine_params_default(), e1;
    ct_stream_params s0 = ct_stream_params_default(), s1;
    CHECKF(ct_profile_apply(&P, &m0, &e0, &s0, &b0, err, sizeof err) == CT_OK, "%s", err);
    ct_engine_params ed = ct_engine_params_default();
    ct_stream_params sd = ct_stream_params_default();
    CHECK(e0.max_streams == ed.max_streams && e0.queue_cap == ed.queue_cap && e0.placement == ed.placement &&
          e0.kv_budget_bytes == ed.kv_budget_bytes && e0.safety_margin_ms == ed.safety_margin_ms &&
          e0.max_defer_ms == ed.max_defer_ms && e0.warmup == ed.warmup && e0.talker_threads == ed.talker_threads &&
          e0.max_context == ed.max_context && e0.codec_threads == ed.codec_threads &&
          e0.frame_ms_fixed == ed.frame_ms_fixed && e0.frame_ms_per_stream == ed.frame_ms_per_stream &&
          (e0.prefill_chunk_tokens == ed.prefill_chunk_tokens || (ed.prefill_chunk_tokens == 0 && e0.prefill_chunk_tokens == 64)) &&
          !e0.talker_cpus && !e0.codec_cpus);
    CHECK(!strcmp(s0.schedule, "exact") && s0.windowed == sd.windowed && s0.context_frames == sd.context_frames &&
          s0.utterance_bytes == sd.utterance_bytes && s0.deadline_ms == sd.deadline_ms &&
          s0.first_audio_timeout_ms == sd.first_audio_timeout_ms);
    CHECK(!strcmp(m0.talker_weights, "bf16") && !strcmp(m0.predictor_weights, "bf16"));
    static const struct {
        const char *key, *value;
    } K[] = {{"engine.max_streams", "3"},
             {"engine.queue_depth", "2"},
             {"engine.placement", "serial"},
             {"engine.kv_budget_bytes", "1000000"},
             {"engine.throttle_margin_ms", "-1"},
             {"engine.max_defer_ms", "10"},
             {"engine.warmup", "true"},
             {"engine.frame_ms_fixed", "30"},
             {"engine.frame_ms_per_stream", "20"},
             {"engine.request_deadline_ms", "9000"},
             {"engine.first_audio_timeout_ms", "800"},
             {"engine.prompt_cache_bytes", "0"},
             {"talker.weights", "int8"},
             {"talker.weight_panels", "true"},
             {"talker.threads", "3"},
             {"talker.cpus", "0-1"},
             {"talker.max_context", "1024"},
             {"talker.prefill_chunk_tokens", "16"},
             {"predictor.weights", "int4"},
             {"codec.threads", "2"},
             {"codec.cpus", "1"},
             {"codec.windowed", "true"},
             {"codec.left_context_frames", "30"},
             {"streaming.policy", "adaptive"},
             {"streaming.first_chunk_frames", "3"},
             {"streaming.chunk_ramp", "[1, 2, 25]"},
             {"streaming.chunk_frames", "20"},
             {"streaming.min_frames", "4"},
             {"streaming.safety_margin_ms", "90"},
             {"streaming.utterance_bytes", "0"}};
    int seen[CT_PK_COUNT] = {0};
    seen[CT_PK_DESCRIPTION] = 1; /* a comment, no consumer by design */
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++) {
        ct_profile Q;
        ct_profile_defaults(&Q);
        /* keys that only act under another key's value get it too */
        if (!strncmp(K[i].key, "streaming.", 10) && strcmp(K[i].key, "streaming.policy") &&
            strcmp(K[i].key, "streaming.utterance_bytes"))
            ct_profile_set(&Q, "streaming.policy", !strcmp(K[i].key, "streaming.chunk_ramp") ? "ramp" : "adaptive", "t",
                           err, sizeof err);
        ct_profile R = Q;
        CHECKF(ct_profile_set(&Q, K[i].key, K[i].value, "t", err, sizeof err) == CT_OK, "%s: %s", K[i].key, err);
        int k = ct_profile_find(K[i].key);
        CHECK(k >= 0);
        if (k >= 0) seen[k] = 1;
        m0 = ct_model_params_default(), m1 = m0;
        e0 = ct_engine_params_default(), e1 = e0;
        s0 = ct_stream_params_default(), s1 = s0;
        CHECKF(ct_profile_apply(&R, &m0, &e0, &s0, &b0, err, sizeof err) == CT_OK, "%s", err);
        CHECKF(ct_profile_apply(&Q, &m1, &e1, &s1, &b1, err, sizeof err) == CT_OK, "%s: %s", K[i].key, err);
        int differs = strcmp(m0.talker_weights, m1.talker_weights) || strcmp(m0.predictor_weights, m1.predictor_weights) ||
                      m0.weight_panels != m1.weight_panels ||
                      strcmp(s0.schedule, s1.schedule) || b0.n_talker_cpus != b1.n_talker_cpus ||
                      b0.n_codec_cpus != b1.n_codec_cpus;
        e0.talker_cpus = e1.talker_cpus = e0.codec_cpus = e1.codec_cpus = NULL;
        s0.schedule = s1.schedule = NULL;
        differs |= memcmp(&e0, &e1, sizeof e0) != 0 || memcmp(&s0, &s1, sizeof s0) != 0;
        CHECKF(differs, "key %s=%s changes no parameter", K[i].key, K[i].value);
    }
    for (int k = 0; k < CT_PK_COUNT; k++) CHECKF(seen[k], "key %s is not covered", ct_profile_key(k)->key);
    /* the schedule string carries policy, ramp and the adaptive controller's parameters */
    ct_profile_defaults(&P);
    ct_profile_set(&P, "streaming.policy", "adaptive", "t", err, sizeof err);
    ct_profile_set(&P, "streaming.min_frames", "3", "t", err, sizeof err);
    ct_profile_set(&P, "streaming.safety_margin_ms", "160", "t", err, sizeof err);
    CHECK(ct_profile_apply(&P, NULL, NULL, &s1, &b1, err, sizeof err) == CT_OK &&
          !strcmp(s1.schedule, "adaptive;min=3;margin=160"));
    ct_profile_set(&P, "streaming.policy", "ramp", "t", err, sizeof err);
    ct_profile_set(&P, "streaming.chunk_ramp", "[1, 3, 9]", "t", err, sizeof err);
    ct_profile_set(&P, "streaming.chunk_frames", "9", "t", err, sizeof err);
    CHECK(ct_profile_apply(&P, NULL, NULL, &s1, &b1, err, sizeof err) == CT_OK &&
          !strcmp(s1.schedule, "ramp:1,3,9;steady=9;min=3;margin=160"));
    ct_profile_set(&P, "streaming.policy", "fixed", "t", err, sizeof err);
    ct_profile_set(&P, "streaming.first_chunk_frames", "4", "t", err, sizeof err);
    CHECK(ct_profile_apply(&P, NULL, NULL, &s1, &b1, err, sizeof err) == CT_OK &&
          !strncmp(s1.schedule, "fixed:4,9", 9));
}

static ct_auto_opts opts_for(const char *root, const char *cache) {
    ct_auto_opts o;
    memset(&o, 0, sizeof o);
    o.profiles_dir = PDIR;
    o.probe_root = root;
    o.cache_dir = cache;
    return o;
}

static void test_auto(void) {
    char cache[] = "/tmp/ct_edge_prof_XXXXXX";
    CHECK(mkdtemp(cache) != NULL);
    ct_auto_report *r = malloc(sizeof *r);
    CHECK(r != NULL);
    if (!r) return;
    const char *model = ct_test_make("tiny", "edge_prof_tiny", 3);
    CHECK(model != NULL);

    /* RK3588 (big cluster 4-7), a fast machine: the best quality is real time */
    ct_machine fast = ct_test_rates(20, 50, 4), slow = ct_test_rates(0.01, 50, 4);
    ct_auto_opts o = opts_for(SNAP("rk3588"), cache);
    o.model_dir = model;
    o.machine = &fast;
    o.codec_macs = 1e6;
    CHECKF(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK, "%s", err);
    CHECK(r->derived.cls == CT_HW_ARM64_CPU && !r->hw_overlay_found && r->have_plan);
    CHECK(r->plan.realtime && r->plan.chosen == 0 && r->plan.n_cpus == 4);
    CHECK(!strcmp(P.v[CT_PK_TALKER_WEIGHTS].s, "bf16") && !strcmp(P.v[CT_PK_TALKER_WEIGHTS].layer, "cost model"));
    const ct_plan_option *c = &r->plan.opt[0];
    CHECK(!strcmp(P.v[CT_PK_ENGINE_PLACEMENT].s, c->cfg.serial ? "serial" : "overlapped") &&
          P.v[CT_PK_TALKER_THREADS].i == c->cfg.talker_threads);
    /* CPU sets are cut from the usable (big) CPUs */
    CHECK(!strncmp(P.v[CT_PK_TALKER_CPUS].s, "4", 1));
    /* streams: memory and compute */
    int want = c->max_streams < r->derived.max_streams_mem ? c->max_streams : r->derived.max_streams_mem;
    CHECK(P.v[CT_PK_ENGINE_MAX_STREAMS].i == (want > 0 ? want : 1));
    CHECK((uint64_t)P.v[CT_PK_ENGINE_KV_BUDGET].i == (uint64_t)P.v[CT_PK_ENGINE_MAX_STREAMS].i * r->derived.per_seq_bytes);
    CHECK(!strcmp(P.v[CT_PK_STREAM_POLICY].s, "adaptive") && P.v[CT_PK_STREAM_MIN_FRAMES].i == 3 &&
          P.v[CT_PK_STREAM_MARGIN_MS].i == 160 && !strcmp(P.v[CT_PK_STREAM_MIN_FRAMES].layer, "derived"));
    CHECK(P.v[CT_PK_TALKER_MAX_CONTEXT].i == 2048 && !strcmp(P.v[CT_PK_TALKER_MAX_CONTEXT].layer, "derived"));
    CHECK(strstr(r->model_id, "qwen3-tts-12hz-") == r->model_id);
    CHECK(P.v[CT_PK_ENGINE_FRAME_MS_FIXED].i + P.v[CT_PK_ENGINE_FRAME_MS_STREAM].i >= (int64_t)c->frame_ms);

    /* a machine too slow for any format: the fastest, with a warning giving its RTF */
    o.machine = &slow;
    o.codec_macs = 1; /* the transformer decides */
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && !r->plan.realtime);
    CHECKF(strstr(r->warnings, "no weight format reaches RTF 0.85") != NULL, "%s", r->warnings);
    CHECK(!strcmp(P.v[CT_PK_TALKER_WEIGHTS].s, "int4") && P.v[CT_PK_ENGINE_MAX_STREAMS].i == 1);
    o.target_rtf = 1e9; /* any target met: the best quality again */
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && r->plan.realtime &&
          !strcmp(P.v[CT_PK_TALKER_WEIGHTS].s, "bf16"));
    o.target_rtf = 0;
    o.machine = &fast;
    o.codec_macs = 1e6;

    /* calibration: the measured figure wins, its placement is used, its schedule applies */
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && !r->have_calibration[0]);
    ct_calibration cal;
    ct_cal_schedule(10, 500, &cal); /* adaptive, min 7, margin 140 */
    snprintf(cal.model_id, sizeof cal.model_id, "%s", r->model_id);
    snprintf(cal.engine_version, sizeof cal.engine_version, "%s", ct_version());
    snprintf(cal.kernels, sizeof cal.kernels, "%s", ct_kernels_id());
    snprintf(cal.talker_weights, sizeof cal.talker_weights, "bf16");
    snprintf(cal.predictor_weights, sizeof cal.predictor_weights, "bf16");
    cal.n_runs = 2;
    cal.runs[0] = (ct_cal_run){1, 4, 0, 10, 20, 5, 40, 1}; /* serial 4: 40 ms/frame */
    cal.runs[1] = (ct_cal_run){0, 3, 1, 12, 22, 6, 60, 1};
    CHECK(ct_cal_save(r->cache_path[0], &cal, r->fingerprint, r->model_id, err, sizeof err) == CT_OK);
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && r->have_calibration[0]);
    CHECK(r->plan.opt[0].measured && r->plan.opt[0].frame_ms == 40 && r->plan.chosen == 0);
    CHECK(!strcmp(P.v[CT_PK_ENGINE_PLACEMENT].s, "serial") && P.v[CT_PK_TALKER_THREADS].i == 4 &&
          !strcmp(P.v[CT_PK_TALKER_CPUS].s, "4-7"));
    CHECK(!strncmp(P.v[CT_PK_TALKER_WEIGHTS].layer, "calibration ", 12));
    CHECK(P.v[CT_PK_STREAM_MIN_FRAMES].i == 7 && P.v[CT_PK_STREAM_MARGIN_MS].i == 140 &&
          !strncmp(P.v[CT_PK_STREAM_MIN_FRAMES].layer, "calibration ", 12));
    /* measured too slow for the target: the next format is chosen */
    cal.runs[0].frame_ms = cal.runs[1].frame_ms = 500;
    CHECK(ct_cal_save(r->cache_path[0], &cal, r->fingerprint, r->model_id, err, sizeof err) == CT_OK);
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && r->plan.chosen == 1 &&
          !strcmp(P.v[CT_PK_TALKER_WEIGHTS].s, "int8"));
    /* measured with other kernels: ignored with a note naming them */
    snprintf(cal.kernels, sizeof cal.kernels, "avx9, none"); /* no level has this name */
    CHECK(ct_cal_save(r->cache_path[0], &cal, r->fingerprint, r->model_id, err, sizeof err) == CT_OK);
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && !r->have_calibration[0] && r->plan.chosen == 0);
    CHECKF(strstr(r->warnings, "kernels 'avx9, none'") != NULL, "%s", r->warnings);
    snprintf(cal.kernels, sizeof cal.kernels, "%s", ct_kernels_id());
    /* another engine version: ignored with a note */
    snprintf(cal.engine_version, sizeof cal.engine_version, "0.0.0-old");
    CHECK(ct_cal_save(r->cache_path[0], &cal, r->fingerprint, r->model_id, err, sizeof err) == CT_OK);
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && !r->have_calibration[0] && r->plan.chosen == 0);
    CHECKF(strstr(r->warnings, "0.0.0-old") != NULL, "%s", r->warnings);
    /* corrupt: ignored with a warning */
    write_text(r->cache_path[0], "not json");
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && !r->have_calibration[0]);
    CHECKF(strstr(r->warnings, "corrupt") != NULL, "%s", r->warnings);
    o.no_calibration = 1;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && !r->have_calibration[0] && !r->cache_path[0][0]);
    o.no_calibration = 0;
    remove(r->cache_path[0]);

    /* the cost model without a machine record: measuring off gives the probe's estimate */
    o.machine = NULL;
    o.no_measure = 1;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK);
    CHECKF(strstr(r->machine.source, "estimate") && strstr(r->warnings, "probe's figures"), "%s", r->warnings);
    o.no_measure = 0;
    o.machine = &fast;

    /* user file, then --set flags */
    char user[1100];
    snprintf(user, sizeof user, "%s/mine.yaml", cache);
    write_text(user, "streaming:\n  chunk_frames: 30\nengine:\n  max_streams: 2\n");
    const char *sets[] = {"engine.max_streams=3", "talker.cpus=5"};
    o.user_file = user;
    o.sets = sets;
    o.n_sets = 2;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK);
    CHECK(P.v[CT_PK_STREAM_CHUNK_FRAMES].i == 30 && !strcmp(P.v[CT_PK_STREAM_CHUNK_FRAMES].layer, "user mine.yaml"));
    CHECK(P.v[CT_PK_ENGINE_MAX_STREAMS].i == 3 && !strcmp(P.v[CT_PK_ENGINE_MAX_STREAMS].layer, "flag --set"));
    CHECK(!strcmp(P.v[CT_PK_TALKER_CPUS].s, "5"));
    const char *bad[] = {"engine.max_streams"};
    o.sets = bad;
    o.n_sets = 1;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_ERR_FORMAT);
    const char *badk[] = {"engine.turbo=1"};
    o.sets = badk;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "engine.turbo"));
    const char *small[] = {"streaming.min_frames=40"}; /* above chunk_frames 30 */
    o.sets = small;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "min_frames"));
    o.sets = NULL;
    o.n_sets = 0;
    write_text(user, "streaming:\n  chunk_frames: 30\n  typo_key: 1\n");
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "mine.yaml:3:") && strstr(err, "streaming.typo_key"), "%s", err);
    o.user_file = NULL;

    /* a model dir that is not one fails */
    o.model_dir = "/nonexistent/model";
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) != CT_OK);
    o.model_dir = NULL;

    /* Jetson host: CPU settings (no GPU backend here), no cost model without a model dir */
    o = opts_for(SNAP("jetson_orin"), cache);
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && r->derived.cls == CT_HW_ARM64_CPU && !r->have_plan);
    CHECK(!strcmp(P.v[CT_PK_TALKER_WEIGHTS].layer, "builtin"));

    /* --profile FILE: builtin + the file; none: builtin */
    write_text(user, "streaming:\n  chunk_ramp: [5, 25]\n");
    CHECK(ct_profile_resolve(user, NULL, &P, NULL, err, sizeof err) == CT_OK);
    CHECK(P.v[CT_PK_STREAM_RAMP].n == 2 && !strcmp(P.v[CT_PK_TALKER_WEIGHTS].layer, "builtin"));
    CHECK(ct_profile_resolve("/nonexistent.yaml", NULL, &P, NULL, err, sizeof err) == CT_ERR_IO);
    CHECK(ct_profile_resolve("none", NULL, &P, NULL, err, sizeof err) == CT_OK &&
          !strcmp(P.v[CT_PK_STREAM_POLICY].layer, "builtin"));
    o = opts_for(SNAP("rpi5"), cache);
    CHECK(ct_profile_resolve("auto", &o, &P, NULL, err, sizeof err) == CT_OK &&
          !strcmp(P.v[CT_PK_STREAM_POLICY].s, "adaptive"));

    remove(user);
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/calibration", cache);
    rmdir(sub);
    rmdir(cache);
    free(r);
}

/* The plan's option turns weight panels on where 4 or more streams are batched with an INT8
   format or 3 or more with INT4, and the memory left after the KV budget holds a bound on their
   bytes (the weight files' size with an INT8 format, else 10/18 of it). */
static void test_weight_panels_rule(void) {
    static const struct {
        int tf, pf, streams;
        uint64_t budget;
        int want;
    } C[] = {{CT_WF_INT4, CT_WF_INT4, 4, 8ull << 30, 1},    {CT_WF_INT8, CT_WF_INT4, 3, 8ull << 30, 1},
             {CT_WF_INT4, CT_WF_INT4, 2, 8ull << 30, 0},    {CT_WF_INT8, CT_WF_INT8, 4, 8ull << 30, 1},
             {CT_WF_BF16, CT_WF_BF16, 4, 8ull << 30, 0},    {CT_WF_INT4, CT_WF_INT4, 4, 1000ull << 20, 0},
             {CT_WF_INT4, CT_WF_INT4, 4, 2000ull << 20, 1}, {CT_WF_INT8, CT_WF_INT8, 4, 2000ull << 20, 0},
             {CT_WF_INT8, CT_WF_INT4, 4, 2000ull << 20, 0}, {CT_WF_INT8, CT_WF_INT8, 3, 8ull << 30, 0},
             {CT_WF_INT8, CT_WF_BF16, 4, 8ull << 30, 1}};
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        ct_plan plan;
        memset(&plan, 0, sizeof plan);
        plan.opt[0].talker_fmt = C[i].tf;
        plan.opt[0].pred_fmt = C[i].pf;
        plan.opt[0].max_streams = C[i].streams;
        plan.opt[0].cfg.serial = 1;
        plan.opt[0].cfg.talker_threads = 2;
        ct_derived d;
        memset(&d, 0, sizeof d);
        d.max_streams_mem = 8;
        d.per_seq_bytes = 100ull << 20;    /* 100 MiB of KV per stream */
        d.weights_bytes = 1800ull << 20;   /* panels bound: 1800 MiB with INT8, else 1000 */
        d.budget_bytes = C[i].budget;
        d.n_cpus = 2;
        ct_profile p;
        ct_profile_defaults(&p);
        ct_profile_apply_plan(&p, &plan, 0, &d, "cost model");
        CHECKF(p.v[CT_PK_TALKER_WEIGHT_PANELS].i == C[i].want, "case %zu: weight_panels %lld, expected %d", i,
               (long long)p.v[CT_PK_TALKER_WEIGHT_PANELS].i, C[i].want);
        ct_model_params mp = ct_model_params_default();
        ct_profile_bufs b;
        char e2[256];
        CHECK(ct_profile_apply(&p, &mp, NULL, NULL, &b, e2, sizeof e2) == CT_OK && mp.weight_panels == C[i].want);
    }
}

int main(void) {
    test_weight_panels_rule();
    test_loader();
    test_files();
    test_apply();
    test_auto();
    return ct_test_finish();
}
