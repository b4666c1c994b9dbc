/* Layered deploy profiles (EDGE.md 5): the strict YAML loader and its error messages, the
   writer's round trip, and the auto chain (base -> class overlay -> derived -> calibration ->
   user file -> flags) including the RK3588 end state of EDGE.md 5. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_test.h"
#include "edge/probe.h"
#include "edge/profile.h"
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
    CHECK(strcmp(P.v[CT_PK_TALKER_DTYPE].s, "bf16") == 0 && strcmp(P.v[CT_PK_TALKER_DTYPE].layer, "builtin") == 0);

    CHECK(load("") == CT_OK);
    CHECK(load("# only a comment\n") == CT_OK);
    CHECK(load("{}\n") == CT_OK);
    CHECK(load("engine:\n  max_streams: 3\nstreaming:\n  chunk_ramp: [3, 6, 12]\n  adaptive: yes\n"
               "talker:\n  cpus: \"0,1,2,3\"\n  kv_budget_bytes: 123456789012\n") == CT_OK);
    static const int r3[] = {3, 6, 12};
    CHECK(P.v[CT_PK_ENGINE_MAX_STREAMS].i == 3 && strcmp(P.v[CT_PK_ENGINE_MAX_STREAMS].layer, "test") == 0);
    CHECK(list_is(CT_PK_STREAM_RAMP, r3, 3) && P.v[CT_PK_STREAM_ADAPTIVE].i == 1);
    CHECK(strcmp(P.v[CT_PK_TALKER_CPUS].s, "0-3") == 0 && P.v[CT_PK_TALKER_KV_BUDGET].i == 123456789012LL);
    CHECK(load("streaming:\n  chunk_ramp:\n    - 2\n    - 25\n") == CT_OK && P.v[CT_PK_STREAM_RAMP].n == 2);

    /* errors name file, line and key */
    CHECK(load("talker:\n  dtype: bf16\n  kv_budget: 5\n") == CT_ERR_FORMAT);
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
    CHECK(load("engine:\n  parallel_init: maybe\n") == CT_ERR_FORMAT);
    CHECK(load("streaming:\n  chunk_ramp: 25\n") == CT_ERR_FORMAT);
    CHECK(load("engine:\n  max_streams: [1]\n") == CT_ERR_FORMAT);
    CHECK(load("streaming:\n  chunk_ramp: [1, x]\n") == CT_ERR_FORMAT);
    CHECK(load("talker:\n  dtype: fp64\n") == CT_ERR_FORMAT);
    CHECKF(strstr(err, "talker.dtype") && strstr(err, "f32 bf16"), "%s", err);
    CHECK(load("codec:\n  dtype: bf16\n") == CT_ERR_FORMAT); /* codec is always f32 */
    CHECK(load("talker:\n  device: gpu\n") == CT_ERR_FORMAT);
    CHECK(load("talker:\n  device: cuda:1\n") == CT_OK);
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
    CHECK(ct_profile_set(&P, "talker.kv_budget_bytes", "-1", "flag", err, sizeof err) == CT_ERR_FORMAT);
}

static void test_files(void) {
    static const char *const F[] = {PDIR "/qwen3_tts.yaml", PDIR "/hardware/cuda_discrete.yaml",
                                    PDIR "/hardware/jetson.yaml", PDIR "/hardware/x86_cpu.yaml",
                                    PDIR "/hardware/arm64_cpu.yaml", PDIR "/hardware/npu_phone.yaml"};
    for (size_t i = 0; i < sizeof F / sizeof F[0]; i++) {
        ct_profile_defaults(&P);
        CHECKF(ct_profile_load_file(&P, F[i], "f", err, sizeof err) == CT_OK, "%s: %s", F[i], err);
    }
    ct_profile_defaults(&P);
    CHECK(ct_profile_load_file(&P, PDIR "/qwen3_tts.yaml", "base", err, sizeof err) == CT_OK);
    static const int ramp[] = {2, 4, 8, 16, 25};
    CHECK(list_is(CT_PK_STREAM_RAMP, ramp, 5) && P.v[CT_PK_STREAM_LEFT_CONTEXT].i == 72 &&
          P.v[CT_PK_STREAM_CHUNK_FRAMES].i == 25 && P.v[CT_PK_TALKER_PREFILL_CHUNK].i == 512 &&
          P.v[CT_PK_ENGINE_MAX_STREAMS].i == 4 && P.v[CT_PK_ENGINE_PARALLEL_INIT].i == 1 &&
          P.v[CT_PK_STREAM_FIRST_WAIT_MS].i == 3000 && P.v[CT_PK_STREAM_CHUNK_WAIT_MS].i == 300);
    CHECK(ct_profile_load_file(&P, "/nonexistent.yaml", "u", err, sizeof err) == CT_ERR_IO);

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

    /* EDGE.md 5 RK3588 end state */
    ct_auto_opts o = opts_for(SNAP("rk3588"), cache);
    o.model_dir = model;
    CHECKF(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK, "%s", err);
    static const int ramp[] = {2, 4, 8, 16, 25};
    CHECK(r->derived.cls == CT_HW_ARM64_CPU && r->hw_overlay_found && !r->have_calibration);
    CHECK(P.v[CT_PK_TALKER_EAGER].i == 1 && P.v[CT_PK_CODEC_EAGER].i == 1);
    CHECK(P.v[CT_PK_ENGINE_MAX_STREAMS].i == 1);
    CHECK(!strcmp(P.v[CT_PK_TALKER_DEVICE].s, "cpu") && !strcmp(P.v[CT_PK_CODEC_DEVICE].s, "cpu"));
    CHECK(!strcmp(P.v[CT_PK_TALKER_CPUS].s, "4-6") && !strcmp(P.v[CT_PK_CODEC_CPUS].s, "7"));
    CHECK(!strcmp(P.v[CT_PK_TALKER_DTYPE].s, "f32") && P.v[CT_PK_TALKER_KV_BUDGET].i > 0);
    CHECK(P.v[CT_PK_STREAM_ADAPTIVE].i == 1 && list_is(CT_PK_STREAM_RAMP, ramp, 5));
    CHECK(!strcmp(P.v[CT_PK_STREAM_RAMP].layer, "base qwen3_tts.yaml"));
    CHECK(P.v[CT_PK_TALKER_PREFILL_CHUNK].i == 512 && !strcmp(P.v[CT_PK_TALKER_PREFILL_CHUNK].layer, "base qwen3_tts.yaml"));
    CHECK(!strcmp(P.v[CT_PK_ENGINE_MAX_STREAMS].layer, "derived"));
    CHECK(P.v[CT_PK_STREAM_MIN_FRAMES].i == 3 && P.v[CT_PK_STREAM_MARGIN_MS].i == 160);
    CHECK(strstr(r->model_id, "qwen3-tts-12hz-") == r->model_id);
    CHECK((uint64_t)P.v[CT_PK_TALKER_KV_BUDGET].i + (uint64_t)P.v[CT_PK_CODEC_MEMORY_BUDGET].i ==
          r->derived.budget_bytes);

    /* layer 4: a cached calibration for this fingerprint */
    ct_calibration cal;
    ct_cal_schedule(10, 500, &cal);
    CHECK(ct_cal_save(r->cache_path, &cal, r->fingerprint, r->model_id, err, sizeof err) == CT_OK);
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && r->have_calibration);
    static const int r10[] = {7, 14, 25};
    CHECK(list_is(CT_PK_STREAM_RAMP, r10, 3) && P.v[CT_PK_STREAM_MIN_FRAMES].i == 7 &&
          P.v[CT_PK_STREAM_MARGIN_MS].i == 140);
    CHECK(strncmp(P.v[CT_PK_STREAM_RAMP].layer, "calibration ", 12) == 0);
    ct_cal_schedule(150, 80, &cal); /* adaptive false does not switch the derived true off */
    CHECK(ct_cal_save(r->cache_path, &cal, r->fingerprint, r->model_id, err, sizeof err) == CT_OK);
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK);
    CHECK(P.v[CT_PK_STREAM_ADAPTIVE].i == 1 && !strcmp(P.v[CT_PK_STREAM_ADAPTIVE].layer, "derived") &&
          P.v[CT_PK_STREAM_RAMP].list[0] == 1 && P.v[CT_PK_STREAM_MARGIN_MS].i == 47);
    o.no_calibration = 1;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && !r->have_calibration);
    CHECK(r->cache_path[0] == 0);
    o.no_calibration = 0;

    /* corrupt cache: ignored with a warning */
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && r->cache_path[0]);
    write_text(r->cache_path, "not json");
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && !r->have_calibration);
    CHECKF(strstr(r->warnings, "corrupt") != NULL, "%s", r->warnings);
    CHECK(list_is(CT_PK_STREAM_RAMP, ramp, 5));
    remove(r->cache_path);

    /* layers 5 and 6: user file, then --set flags */
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
    const char *small[] = {"streaming.chunk_frames=10"}; /* base ramp ends at 25 > 10 */
    o.sets = small;
    o.user_file = NULL;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "chunk_ramp"));
    o.sets = NULL;
    o.n_sets = 0;
    write_text(user, "streaming:\n  chunk_frames: 30\n  typo_key: 1\n");
    o.user_file = user;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "mine.yaml:3:") && strstr(err, "streaming.typo_key"), "%s", err);
    o.user_file = NULL;

    /* a model dir that is not one fails; the probe root that is not one degrades */
    o.model_dir = "/nonexistent/model";
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) != CT_OK);
    o.model_dir = NULL;

    /* Jetson: CUDA class, no CPU binding, small memory -> eager */
    o = opts_for(SNAP("jetson_orin"), cache);
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && r->derived.cls == CT_HW_JETSON);
    CHECK(P.v[CT_PK_TALKER_EAGER].i == 1 && P.v[CT_PK_CODEC_EAGER].i == 1 && P.v[CT_PK_TALKER_WARMUP].n == 0);
    CHECK(!strcmp(P.v[CT_PK_TALKER_CPUS].layer, "builtin") && P.v[CT_PK_ENGINE_MAX_STREAMS].i == 2);
    CHECK(!strcmp(P.v[CT_PK_TALKER_DTYPE].s, "bf16"));

    /* discrete 24 GiB card via an explicit profile: warm-up sizes, not eager, 4 streams */
    ct_hw_profile g;
    ct_hw_profile_init(&g);
    snprintf(g.arch, sizeof g.arch, "x86_64");
    snprintf(g.accelerator, sizeof g.accelerator, "cuda_discrete");
    g.gpu_mem_bytes = 24ull << 30;
    g.ram_total_bytes = 64ull << 30;
    g.supports_bf16 = 1;
    o.hw = &g;
    o.model_dir = model;
    CHECK(ct_profile_auto(&o, &P, r, err, sizeof err) == CT_OK && r->derived.cls == CT_HW_CUDA_DISCRETE);
    static const int warm[] = {1, 2, 4};
    CHECK(P.v[CT_PK_TALKER_EAGER].i == 0 && list_is(CT_PK_TALKER_WARMUP, warm, 3) &&
          P.v[CT_PK_ENGINE_MAX_STREAMS].i == 4 && P.v[CT_PK_TALKER_MAX_CONTEXT].i == 4096);

    /* --profile FILE: builtin + the file */
    write_text(user, "streaming:\n  chunk_ramp: [5, 25]\n");
    CHECK(ct_profile_resolve(user, NULL, &P, err, sizeof err) == CT_OK);
    CHECK(P.v[CT_PK_STREAM_RAMP].n == 2 && !strcmp(P.v[CT_PK_TALKER_DEVICE].layer, "builtin"));
    CHECK(ct_profile_resolve("/nonexistent.yaml", NULL, &P, err, sizeof err) == CT_ERR_IO);
    o = opts_for(SNAP("rpi5"), cache);
    CHECK(ct_profile_resolve("auto", &o, &P, err, sizeof err) == CT_OK && !strcmp(P.v[CT_PK_TALKER_CPUS].s, "0-2"));

    remove(user);
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/calibration", cache);
    rmdir(sub);
    rmdir(cache);
    free(r);
}

int main(void) {
    test_loader();
    test_files();
    test_auto();
    return ct_test_finish();
}
