/* Derived overrides (EDGE.md 2) and KV admission (EDGE.md 3.3): every worked example, and the
   six snapshot machines against values computed independently from the spec formulas. */
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

static void split(const int *cpus, int n, const char *e0, const char *e1) {
    char s0[64], s1[64];
    ct_split_cpus(cpus, n, s0, sizeof s0, s1, sizeof s1);
    CHECKF(strcmp(s0, e0) == 0 && strcmp(s1, e1) == 0, "got %s / %s, want %s / %s", s0, s1, e0, e1);
}

static void test_threads(void) {
    static const int c6[] = {0, 1, 2, 3, 4, 5}, c8[] = {0, 1, 2, 3, 4, 5, 6, 7}, c1[] = {7},
                     gap[] = {0, 2, 3, 4}, rk[] = {4, 5, 6, 7}, r[] = {0, 1, 2, 5, 7, 8};
    split(c6, 6, "0-3", "4-5");
    split(c8, 8, "0-4", "5-7");
    split(c1, 1, "7", "7");
    split(gap, 4, "0,2-3", "4");
    split(rk, 4, "4-6", "7");
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
    CHECK(ct_dtype_bytes_by_name("float32") == 4 && ct_dtype_bytes_by_name("f32") == 4);
    CHECK(ct_dtype_bytes_by_name("float16") == 2 && ct_dtype_bytes_by_name("bfloat16") == 2);
    CHECK(ct_dtype_bytes_by_name("auto") == 2 && ct_dtype_bytes_by_name("fp8") == 1);
    CHECK(ct_dtype_bytes_by_name("float8_e4m3fn") == 1 && ct_dtype_bytes_by_name("weird") == 2);
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

static void test_rules(void) {
    ct_derived d;
    ct_derive_in in = {W06, TALKER, 0};
    /* dtype: CPU bf16 / f32, CUDA bf16 / f16 */
    ct_hw_profile p = cpu_hw("x86_64", 16 * CT_GIB, 8, 1);
    ct_derive(&p, &in, &d);
    CHECK(strcmp(d.dtype, "bf16") == 0 && d.kv_bytes_per_token == 114688);
    p.supports_bf16 = 0;
    ct_derive(&p, &in, &d);
    CHECK(strcmp(d.dtype, "f32") == 0 && d.kv_bytes_per_token == 229376);
    CHECK(d.cpu_bind && strcmp(d.cpus0, "0-4") == 0 && strcmp(d.cpus1, "5-7") == 0);
    /* activation allowance and the exact split kv0 + kv1 = B */
    CHECK(d.activation_bytes == 512 * CT_MIB); /* 0.15 x 2.27 GB < 512 MiB */
    CHECK(d.kv0_bytes + d.kv1_bytes == d.budget_bytes);
    ct_derive_in big = {20000000000ull, TALKER, 0};
    ct_derive(&p, &big, &d);
    CHECK(d.activation_bytes == 3000000000ull);
    CHECK(d.budget_bytes == 0 && d.kv0_bytes == 0 && d.max_num_seqs == 1); /* 16 GiB < 20 GB */
    for (uint64_t b = 1; b < 40; b++) {
        p.ram_available_bytes = b * 997 * CT_MIB;
        ct_derive(&p, &in, &d);
        CHECK(d.kv0_bytes + d.kv1_bytes == d.budget_bytes);
    }
    /* unknown geometry -> 8 KiB/token; no weights -> 60 s load */
    ct_derive_in nomodel = {0, {0, 0, 0}, 0};
    ct_derive(&p, &nomodel, &d);
    CHECK(d.kv_bytes_per_token == 8192 && d.load_s == 60.0 && d.stage_init_timeout_s == 300);
    /* max_cpus truncates the big list */
    ct_derive_in trunc = {W06, TALKER, 6};
    p = cpu_hw("x86_64", 16 * CT_GIB, 16, 0);
    ct_derive(&p, &trunc, &d);
    CHECK(strcmp(d.cpus0, "0-3") == 0 && strcmp(d.cpus1, "4-5") == 0);

    /* CUDA: small_vram strictly below the threshold; cudagraph sizes when not eager */
    ct_hw_profile g = cpu_hw("x86_64", 60 * CT_GIB, 16, 1);
    snprintf(g.accelerator, sizeof g.accelerator, "cuda_discrete");
    g.gpu_mem_bytes = 8 * CT_GIB;
    ct_derive(&g, &in, &d);
    CHECK(d.small_vram == 0 && d.eager0 == 0 && d.eager1 == 0 && !d.cpu_bind);
    CHECK(d.n_capture == 3 && d.capture_sizes[0] == 1 && d.capture_sizes[1] == 2 && d.capture_sizes[2] == 4);
    CHECK(d.pool_bytes == 8 * CT_GIB && d.budget_bytes == 3636710140ull && d.kv0_bytes == 2545697098ull);
    CHECK(d.max_num_seqs == 4 && d.max_len0 == 4096 && d.max_len1 == 65536);
    CHECK(d.compile_s == 240 && d.stage_init_timeout_s == 543 && d.init_timeout_s == 1086);
    g.gpu_mem_bytes = 8 * CT_GIB - 1;
    ct_derive(&g, &in, &d);
    CHECK(d.small_vram == 1 && d.eager0 == 1 && d.eager1 == 1 && d.n_capture == 0);
    CHECK(d.compile_s == 0 && d.stage_init_timeout_s == 300 && d.init_timeout_s == 600);
    g.gpu_mem_bytes = 12 * CT_GIB;
    g.supports_bf16 = 0;
    ct_derive(&g, &in, &d);
    CHECK(strcmp(d.dtype, "f16") == 0 && d.kv0_bytes == 5552174205ull && d.max_num_seqs == 4);
    g.gpu_mem_bytes = 24 * CT_GIB;
    g.supports_bf16 = 1;
    ct_derive(&g, &in, &d);
    CHECK(d.budget_bytes == 20816579324ull && d.kv0_bytes == 14571605526ull && d.kv1_bytes == 6244973798ull);
    /* admission caps max_num_seqs below the class value: 1 GiB talker budget, 448 MiB/seq */
    g.gpu_mem_bytes = 2 * CT_GIB + 512 * CT_MIB + 3 * CT_GIB; /* pool */
    ct_derive_in w0 = {0, TALKER, 0};
    ct_derive(&g, &w0, &d);
    /* B = 5.5 GiB - 0 - 512 MiB - 2 GiB = 3 GiB; kv0 = 0.7 x 3 GiB = 2.1 GiB -> 4 fit, class 4 */
    CHECK(d.budget_bytes == 3 * CT_GIB && d.max_num_seqs == 4);
    g.gpu_mem_bytes = 2 * CT_GIB + 512 * CT_MIB + 1 * CT_GIB; /* B = 1 GiB, kv0 = 0.7 GiB -> 1 */
    ct_derive(&g, &w0, &d);
    CHECK(d.budget_bytes == CT_GIB && d.per_seq_bytes == 448 * CT_MIB && d.max_num_seqs == 1);
    /* Jetson pool = gpu_mem, or ram_total when the GPU memory is unknown */
    ct_hw_profile j = cpu_hw("aarch64", 4 * CT_GIB, 6, 1);
    snprintf(j.accelerator, sizeof j.accelerator, "cuda_unified");
    ct_derive(&j, &in, &d);
    CHECK(d.cls == CT_HW_JETSON && d.pool_bytes == j.ram_total_bytes && d.small_vram == 1);
    CHECK(d.chunk_min_frames == 2 && d.chunk_margin_ms == 80 && d.chunk_adaptive == 1);
    CHECK(d.decode_batch_max_size == 1 && d.async_chunk == 1);
    CHECK(strncmp(d.notes[0], "class=jetson dtype=bf16 budget=", 31) == 0);
    CHECK(strcmp(d.notes[1], "small_vram=true eager=(true,true) max_num_seqs=1") == 0);
}

static void test_class_table(void) {
    const ct_class_consts *k = ct_class_table(CT_HW_CUDA_DISCRETE);
    CHECK(k->max_num_seqs == 4 && k->max_len0 == 4096 && k->max_len1 == 65536 && k->headroom_bytes == 2 * CT_GIB);
    CHECK(k->chunk_min_frames == 2 && k->chunk_margin_ms == 50 && !k->eager0 && !k->eager1 &&
          k->small_vram_bytes == 8 * CT_GIB && k->read_gbps == 2.0);
    k = ct_class_table(CT_HW_JETSON);
    CHECK(k->max_num_seqs == 2 && k->max_len1 == 32768 && k->headroom_bytes == 3 * CT_GIB &&
          k->chunk_margin_ms == 80 && !k->eager0 && k->eager1 && k->small_vram_bytes == 16 * CT_GIB &&
          k->read_gbps == 0.8);
    k = ct_class_table(CT_HW_X86_CPU);
    CHECK(k->max_num_seqs == 2 && k->max_len0 == 2048 && k->max_len1 == 16384 && k->chunk_margin_ms == 120 &&
          k->eager0 && k->eager1 && k->read_gbps == 1.0);
    k = ct_class_table(CT_HW_ARM64_CPU);
    CHECK(k->max_num_seqs == 1 && k->headroom_bytes == CT_GIB && k->chunk_min_frames == 3 &&
          k->chunk_margin_ms == 160 && k->read_gbps == 0.4);
    k = ct_class_table(CT_HW_NPU_PHONE);
    CHECK(k->max_num_seqs == 1 && k->chunk_min_frames == 4 && k->chunk_margin_ms == 200 && k->read_gbps == 0.3);
    for (int c = 0; c < CT_HW_CLASS_COUNT; c++) CHECK(ct_class_table((ct_hw_class)c)->kv_share0 == 0.7);
}

typedef struct {
    const char *machine; /* snapshot dir, or the override file */
    int override;
    ct_hw_class cls;
    const char *dtype;
    uint64_t pool, budget, kv0, kv1, bpt;
    int mns, eager0, eager1;
    const char *cpus0, *cpus1; /* NULL: no binding */
    int cmin, cmargin, sit, it;
} machine_case;

/* expected values: an independent (Python) evaluation of the EDGE.md 2.2 formulas on the same
   inputs; docs/EDGE.md tables them */
static const machine_case MACHINES[] = {
    {"x86_avx512_server", 0, CT_HW_X86_CPU, "bf16", 257698037760ull, 252744813308ull, 176921369315ull,
     75823443993ull, 114688, 2, 1, 1, "0-10", "11-15", 2, 120, 300, 600},
    {"x86_avx2_laptop", 0, CT_HW_X86_CPU, "f32", 11811160064ull, 6857935612ull, 4800554928ull,
     2057380684ull, 229376, 2, 1, 1, "0-4", "5-7", 2, 120, 300, 600},
    {"rpi5", 0, CT_HW_ARM64_CPU, "f32", 7516192768ull, 3636710140ull, 2545697098ull, 1091013042ull,
     229376, 1, 1, 1, "0-2", "3", 3, 160, 300, 600},
    {"rk3588", 0, CT_HW_ARM64_CPU, "f32", 15360000000ull, 11480517372ull, 8036362160ull, 3444155212ull,
     229376, 1, 1, 1, "4-6", "7", 3, 160, 300, 600},
    {"jetson_orin", 0, CT_HW_JETSON, "bf16", 7990136832ull, 1963170556ull, 1374219389ull, 588951167ull,
     114688, 2, 1, 1, NULL, NULL, 2, 80, 300, 600},
    {"snapdragon_phone/override.json", 1, CT_HW_NPU_PHONE, "bf16", 4294967296ull, 415484668ull,
     290839267ull, 124645401ull, 114688, 1, 1, 1, "7", "7", 4, 200, 300, 600},
};

static void test_machines(void) {
    ct_derive_in in = {W06, TALKER, 0};
    for (size_t i = 0; i < sizeof MACHINES / sizeof MACHINES[0]; i++) {
        const machine_case *m = &MACHINES[i];
        char path[512], err[256];
        snprintf(path, sizeof path, "%s/%s", SNAP(""), m->machine);
        ct_hw_profile hw;
        ct_status st = m->override ? ct_hw_load_override(path, &hw, err, sizeof err)
                                   : ct_hw_probe(path, &hw, err, sizeof err);
        CHECKF(st == CT_OK, "%s", m->machine);
        ct_derived d;
        ct_derive(&hw, &in, &d);
        CHECKF(d.cls == m->cls, "%s class %s", m->machine, ct_hw_class_name(d.cls));
        CHECKF(strcmp(d.dtype, m->dtype) == 0, "%s dtype %s", m->machine, d.dtype);
        CHECKF(d.pool_bytes == m->pool && d.budget_bytes == m->budget, "%s pool %llu budget %llu",
               m->machine, (unsigned long long)d.pool_bytes, (unsigned long long)d.budget_bytes);
        CHECKF(d.kv0_bytes == m->kv0 && d.kv1_bytes == m->kv1, "%s kv %llu/%llu", m->machine,
               (unsigned long long)d.kv0_bytes, (unsigned long long)d.kv1_bytes);
        CHECKF(d.kv_bytes_per_token == m->bpt && d.max_num_seqs == m->mns, "%s bpt %llu seqs %d",
               m->machine, (unsigned long long)d.kv_bytes_per_token, d.max_num_seqs);
        CHECKF(d.eager0 == m->eager0 && d.eager1 == m->eager1, "%s eager", m->machine);
        if (m->cpus0)
            CHECKF(d.cpu_bind && !strcmp(d.cpus0, m->cpus0) && !strcmp(d.cpus1, m->cpus1),
                   "%s cpus %s / %s", m->machine, d.cpus0, d.cpus1);
        else
            CHECKF(!d.cpu_bind, "%s binds CPUs", m->machine);
        CHECKF(d.chunk_min_frames == m->cmin && d.chunk_margin_ms == m->cmargin, "%s chunk", m->machine);
        CHECKF(d.stage_init_timeout_s == m->sit && d.init_timeout_s == m->it, "%s timeouts %d/%d",
               m->machine, d.stage_init_timeout_s, d.init_timeout_s);
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
