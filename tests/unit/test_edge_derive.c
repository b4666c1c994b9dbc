/* Derived settings (docs/EDGE.md 2): memory budget, f32 KV per stream, streams that fit without
   preemption, usable CPUs; every worked example, and the snapshot machines (containers
   included) against the formulas evaluated here independently. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ct_test.h"
#include "edge/derive.h"
#include "edge/probe.h"
#include "test_models.h"

#define SNAP(m) CT_SRC_DIR "/tests/data/probe/" m

/* 0.6B CustomVoice as `make-model --preset 0.6b-customvoice` writes it: main bf16 1,811,577,344
   bytes + codec decoder f32 457,292,548 bytes (tensor bytes, headers excluded). */
#define W06 2268869892ull

static const ct_kv_geometry TALKER = {28, 8, 128};

static void test_threads(void) {
    static const int r[] = {0, 1, 2, 5, 7, 8};
    char buf[64];
    CHECK(strcmp(ct_cpu_range_str(r, 6, buf, sizeof buf), "0-2,5,7-8") == 0);
    CHECK(strcmp(ct_cpu_range_str(r, 0, buf, sizeof buf), "") == 0);
    int out[16], n = 0;
    char err[128];
    CHECK(ct_cpu_range_parse("0-2,5,7-8", out, 16, &n, err, sizeof err) == CT_OK && n == 6 && out[5] == 8);
    CHECK(ct_cpu_range_parse("", out, 16, &n, err, sizeof err) == CT_OK && n == 0);
    CHECK(ct_cpu_range_parse("3-1", out, 16, &n, err, sizeof err) == CT_ERR_FORMAT);
    CHECK(ct_cpu_range_parse("1,,2", out, 16, &n, err, sizeof err) == CT_ERR_FORMAT);
    CHECK(ct_cpu_range_parse("1,", out, 16, &n, err, sizeof err) == CT_ERR_FORMAT);
    CHECK(ct_cpu_range_parse("a", out, 16, &n, err, sizeof err) == CT_ERR_FORMAT);
    CHECK(ct_cpu_range_parse("0-300", out, 16, &n, err, sizeof err) == CT_ERR_FORMAT);
}

static void test_kv(void) {
    CHECK(ct_kv_bytes_per_token(&TALKER, 2) == 114688); /* 112 KiB */
    CHECK(ct_kv_bytes_per_token(&TALKER, 4) == 229376); /* f32 doubles */
    ct_kv_geometry none = {0, 0, 0};
    CHECK(ct_kv_bytes_per_token(&none, 2) == 0);
    CHECK(ct_kv_bytes_for_seqs(1, 4096, 114688) == 448 * CT_MIB);
    CHECK(ct_kv_bytes_for_seqs(1, 2048, 114688) == 224 * CT_MIB);
    CHECK(ct_kv_bytes_for_seqs(1, 2048, 229376) == 448 * CT_MIB);
    CHECK(ct_kv_bytes_for_seqs(3, 17, 10) == 3 * 32 * 10); /* rounded up to 16-token blocks */
    CHECK(ct_kv_max_seqs(448 * CT_MIB, 2048, 114688) == 2);
    CHECK(ct_kv_max_seqs(448 * CT_MIB - 1, 2048, 114688) == 1);
    CHECK(ct_kv_max_seqs(CT_GIB, 2048, 0) == 0);
    CHECK(ct_kv_admission_ok(448 * CT_MIB, 2048, 114688, 2));
    CHECK(!ct_kv_admission_ok(448 * CT_MIB, 2048, 114688, 3));
}

static ct_hw_profile cpu_hw(const char *arch, uint64_t avail, int n_cpus, int bf16) {
    ct_hw_profile p;
    ct_hw_profile_init(&p);
    snprintf(p.arch, sizeof p.arch, "%s", arch);
    p.n_logical = p.n_physical = n_cpus;
    p.ram_total_bytes = avail + CT_GIB;
    p.ram_available_bytes = avail;
    p.supports_bf16 = bf16;
    return p;
}

/* The derivation evaluated here from its formulas: pool = usable RAM; budget = pool - W -
   max(0.15 W, 512 MiB) - headroom; one stream = ceil(2048/16)*16 positions x f32 KV;
   streams = clamp(budget / stream, 1, class cap). */
static void expect(const ct_hw_profile *hw, uint64_t w, const ct_derived *d, const char *what) {
    const ct_class_consts *k = ct_class_table(ct_hw_engine_class(hw));
    uint64_t pool = ct_hw_usable_ram(hw), act = (uint64_t)(0.15 * (double)w);
    if (act < 512 * CT_MIB) act = 512 * CT_MIB;
    uint64_t need = w + act + k->headroom_bytes, budget = pool > need ? pool - need : 0;
    uint64_t seq = (uint64_t)((k->max_context + 15) / 16 * 16) * 229376ull;
    uint64_t fit = budget / seq;
    int streams = fit < (uint64_t)k->max_streams ? (int)fit : k->max_streams;
    if (streams < 1) streams = 1;
    CHECKF(d->cls == ct_hw_engine_class(hw) && d->pool_bytes == pool && d->budget_bytes == budget &&
               d->kv_bytes_per_token == 229376 && d->per_seq_bytes == seq && d->max_streams_mem == streams &&
               d->kv_budget_bytes == (uint64_t)streams * seq && d->max_context == k->max_context,
           "%s: class %s pool %llu budget %llu streams %d", what, ct_hw_class_name(d->cls),
           (unsigned long long)d->pool_bytes, (unsigned long long)d->budget_bytes, d->max_streams_mem);
    int big[CT_HW_MAX_CPUS];
    int n = ct_hw_big_cpus(hw, big, CT_HW_MAX_CPUS);
    CHECKF(d->n_cpus == n && (n == 0 || memcmp(d->cpus, big, sizeof(int) * (size_t)n) == 0), "%s cpus", what);
    CHECKF(d->chunk_min_frames == k->chunk_min_frames && d->chunk_margin_ms == k->chunk_margin_ms, "%s chunks", what);
}

static void test_rules(void) {
    ct_derived d;
    ct_derive_in in = {W06, TALKER, 0};
    ct_hw_profile p = cpu_hw("x86_64", 16 * CT_GIB, 8, 0);
    ct_derive(&p, &in, &d);
    expect(&p, W06, &d, "16 GiB x86");
    /* the engine's KV is f32 whatever the weights: 224 KiB/token, 448 MiB per 2048-position stream */
    CHECK(d.kv_bytes_per_token == 229376 && d.per_seq_bytes == 448 * CT_MIB);
    CHECK(d.activation_bytes == 512 * CT_MIB); /* 0.15 x 2.27 GB < 512 MiB */
    /* 16 GiB - 2.11 GiB - 0.5 GiB - 2 GiB = 11.4 GiB: 26 streams fit, the x86 cap is 8 */
    CHECK(d.max_streams_mem == 8 && d.kv_budget_bytes == 8 * 448 * CT_MIB);
    ct_derive_in big = {20000000000ull, TALKER, 0};
    ct_derive(&p, &big, &d);
    CHECK(d.activation_bytes == 3000000000ull);
    CHECK(d.budget_bytes == 0 && d.max_streams_mem == 1); /* 16 GiB < 20 GB: one stream, never zero */
    /* memory decides below the cap: 3 streams of 448 MiB */
    p.ram_available_bytes = W06 + 512 * CT_MIB + 2 * CT_GIB + 3 * 448 * CT_MIB + 5;
    ct_derive(&p, &in, &d);
    CHECK(d.max_streams_mem == 3);
    expect(&p, W06, &d, "3 streams");
    /* a container's memory limit is the pool (ct_hw_usable_ram) */
    p.ram_available_bytes = 64 * CT_GIB;
    p.cgroup_mem_limit_bytes = W06 + 512 * CT_MIB + 2 * CT_GIB + 2 * 448 * CT_MIB;
    ct_derive(&p, &in, &d);
    CHECK(d.pool_bytes == p.cgroup_mem_limit_bytes && d.max_streams_mem == 2);
    p.cgroup_mem_limit_bytes = 0;
    /* unknown geometry -> 8 KiB/token */
    ct_derive_in nomodel = {0, {0, 0, 0}, 0};
    ct_derive(&p, &nomodel, &d);
    CHECK(d.kv_bytes_per_token == 8192);
    /* max_cpus truncates the usable list; the affinity mask limits it */
    ct_derive_in trunc = {W06, TALKER, 6};
    p = cpu_hw("x86_64", 16 * CT_GIB, 16, 0);
    ct_derive(&p, &trunc, &d);
    CHECK(d.n_cpus == 6 && d.cpus[5] == 5);
    p.n_allowed_cpus = 2;
    p.allowed_cpus[0] = 3;
    p.allowed_cpus[1] = 9;
    ct_derive(&p, &in, &d);
    CHECK(d.n_cpus == 2 && d.cpus[0] == 3 && d.cpus[1] == 9);
    /* a CPU-only engine on a GPU host derives CPU settings: the engine class */
    ct_hw_profile g = cpu_hw("x86_64", 60 * CT_GIB, 16, 1);
    snprintf(g.accelerator, sizeof g.accelerator, "cuda_discrete");
    g.gpu_mem_bytes = 8 * CT_GIB;
    ct_derive(&g, &in, &d);
    CHECK(d.cls == CT_HW_X86_CPU && d.pool_bytes == 60 * CT_GIB && d.n_cpus == 16);
    ct_hw_profile j = cpu_hw("aarch64", 4 * CT_GIB, 6, 1);
    snprintf(j.accelerator, sizeof j.accelerator, "cuda_unified");
    ct_derive(&j, &in, &d);
    CHECK(d.cls == CT_HW_ARM64_CPU && d.n_cpus == 6 && d.chunk_min_frames == 3 && d.chunk_margin_ms == 160);
    CHECK(strncmp(d.notes[0], "class=arm64_cpu pool=", 21) == 0);
}

static void test_class_table(void) {
    const ct_class_consts *k = ct_class_table(CT_HW_X86_CPU);
    CHECK(k->max_streams == 8 && k->max_context == 2048 && k->headroom_bytes == 2 * CT_GIB &&
          k->chunk_min_frames == 2 && k->chunk_margin_ms == 120);
    k = ct_class_table(CT_HW_ARM64_CPU);
    CHECK(k->max_streams == 4 && k->headroom_bytes == CT_GIB && k->chunk_min_frames == 3 && k->chunk_margin_ms == 160);
    CHECK(ct_class_table((ct_hw_class)99) == ct_class_table(CT_HW_X86_CPU));
}

/* every snapshot machine, containers included */
static void test_machines(void) {
    static const struct {
        const char *machine;
        int override;
        ct_hw_class cls;
    } M[] = {{"x86_avx512_server", 0, CT_HW_X86_CPU},   {"x86_avx2_laptop", 0, CT_HW_X86_CPU},
             {"rpi5", 0, CT_HW_ARM64_CPU},              {"rk3588", 0, CT_HW_ARM64_CPU},
             {"jetson_orin", 0, CT_HW_ARM64_CPU},       {"snapdragon_phone/override.json", 1, CT_HW_ARM64_CPU},
             {"container_cgroup2", 0, CT_HW_X86_CPU},   {"container_cgroup1", 0, CT_HW_X86_CPU},
             {"arm_pinned", 0, CT_HW_ARM64_CPU},        {"x86_nvidia_host", 0, CT_HW_X86_CPU}};
    ct_derive_in in = {W06, TALKER, 0};
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++) {
        char path[512], err[256];
        snprintf(path, sizeof path, "%s/%s", SNAP(""), M[i].machine);
        ct_hw_profile hw;
        ct_status st = M[i].override ? ct_hw_load_override(path, &hw, err, sizeof err)
                                     : ct_hw_probe(path, &hw, err, sizeof err);
        CHECKF(st == CT_OK, "%s: %s", M[i].machine, err);
        ct_derived d;
        ct_derive(&hw, &in, &d);
        CHECKF(d.cls == M[i].cls, "%s class %s", M[i].machine, ct_hw_class_name(d.cls));
        expect(&hw, W06, &d, M[i].machine);
    }
}

/* data bytes of a safetensors file: file size - 8 - header length */
static uint64_t st_data_bytes(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char h[8];
    uint64_t hl = 0;
    if (fread(h, 1, 8, f) == 8)
        for (int i = 7; i >= 0; i--) hl = hl << 8 | h[i];
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fclose(f);
    return (uint64_t)sz - 8 - hl;
}

static void test_model_dir(void) {
    char err[256];
    const char *dir = ct_test_make("tiny", "edge_tiny", 1);
    CHECK(dir != NULL);
    if (dir) {
        char a[1200], b[1200];
        snprintf(a, sizeof a, "%s/model.safetensors", dir);
        snprintf(b, sizeof b, "%s/speech_tokenizer/model.safetensors", dir);
        uint64_t want = st_data_bytes(a) + st_data_bytes(b), got = 0;
        CHECK(ct_model_weights_bytes(dir, &got, err, sizeof err) == CT_OK);
        CHECKF(got == want && want > 0, "weights %llu, want %llu", (unsigned long long)got,
               (unsigned long long)want);
        const ct_mm_preset *tp = ct_mm_find_preset("tiny");
        ct_kv_geometry g = {0, 0, 0};
        CHECK(ct_model_kv_geometry(dir, &g, err, sizeof err) == CT_OK);
        CHECK(tp && g.layers == tp->layers && g.kv_heads == tp->kv_heads && g.head_dim == tp->head_dim);
    }
    uint64_t w = 1;
    CHECK(ct_model_weights_bytes("/nonexistent/model", &w, err, sizeof err) == CT_ERR_IO && w == 0);
    ct_kv_geometry g;
    CHECK(ct_model_kv_geometry("/nonexistent/model", &g, err, sizeof err) != CT_OK);
}

int main(void) {
    test_threads();
    test_kv();
    test_rules();
    test_class_table();
    test_machines();
    test_model_dir();
    return ct_test_finish();
}
