/* Hardware probe on captured snapshots (tests/data/probe/<machine>), ISA flag normalisation,
   class rules, container limits (affinity, cgroup v1/v2), the JSON override (file and inline)
   and its error messages (EDGE.md 1). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"
#include "edge/hw.h"
#include "edge/probe.h"

#define SNAP(m) CT_SRC_DIR "/tests/data/probe/" m

static ct_hw_profile hw;

static int probe(const char *root) {
    char err[256];
    return ct_hw_probe(root, &hw, err, sizeof err) == CT_OK;
}

static int cluster_is(int c, uint32_t khz, const int *cpus, int n) {
    if (c >= hw.n_clusters || hw.clusters[c].max_khz != khz || hw.clusters[c].n_cpus != n) return 0;
    for (int i = 0; i < n; i++)
        if (hw.clusters[c].cpus[i] != cpus[i]) return 0;
    return 1;
}

static void test_flags(void) {
    /* EDGE.md 1.2: kept tokens and their stored names */
    static const struct {
        const char *raw, *stored;
    } T[] = {{"avx2", "avx2"},     {"avx512_bf16", "avx512_bf16"}, {"avx512_vnni", "avx512_vnni"},
             {"amx_bf16", "amx_bf16"}, {"amx_tile", "amx_tile"},   {"amx_int8", "amx_int8"},
             {"fma", "fma"},       {"f16c", "f16c"},               {"avx512f", "avx512"},
             {"asimd", "neon"},    {"asimdhp", "fp16_arith"},      {"asimddp", "dotprod"},
             {"i8mm", "i8mm"},     {"bf16", "bf16"},               {"sve", "sve"},
             {"sve2", "sve2"},     {"sme", "sme"},                 {"avx512bw", "avx512bw"},
             {"avx512vl", "avx512vl"}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        int f = ct_hw_flag_from_token(T[i].raw, strlen(T[i].raw));
        CHECKF(f >= 0 && strcmp(ct_hw_flag_name((ct_hw_flag)f), T[i].stored) == 0, "%s", T[i].raw);
    }
    static const char *const DROP[] = {"sse4_2", "avx512dq", "avx", "fp", "asimdrdm", "fphp", "avx512_fp16", "avx2x"};
    for (size_t i = 0; i < sizeof DROP / sizeof DROP[0]; i++)
        CHECKF(ct_hw_flag_from_token(DROP[i], strlen(DROP[i])) < 0, "%s kept", DROP[i]);
    /* arch from flags */
    CHECK(strcmp(ct_hw_arch_from_flags(CT_HWF_BIT(CT_HWF_NEON)), "aarch64") == 0);
    CHECK(strcmp(ct_hw_arch_from_flags(CT_HWF_BIT(CT_HWF_I8MM)), "aarch64") == 0);
    CHECK(strcmp(ct_hw_arch_from_flags(CT_HWF_BIT(CT_HWF_FP16_ARITH)), "aarch64") == 0);
    CHECK(strcmp(ct_hw_arch_from_flags(CT_HWF_BIT(CT_HWF_FMA)), "x86_64") == 0);
    CHECK(strcmp(ct_hw_arch_from_flags(CT_HWF_BIT(CT_HWF_AMX_TILE)), "x86_64") == 0);
    CHECK(strcmp(ct_hw_arch_from_flags(CT_HWF_BIT(CT_HWF_F16C)), "unknown") == 0);
    CHECK(strcmp(ct_hw_arch_from_flags(0), "unknown") == 0);
}

static void test_classes(void) {
    ct_hw_profile p;
    ct_hw_profile_init(&p);
    CHECK(ct_hw_classify(&p) == CT_HW_X86_CPU); /* unknown arch falls through to x86_cpu */
    snprintf(p.arch, sizeof p.arch, "aarch64");
    CHECK(ct_hw_classify(&p) == CT_HW_ARM64_CPU);
    snprintf(p.accelerator, sizeof p.accelerator, "cuda_discrete");
    CHECK(ct_hw_classify(&p) == CT_HW_CUDA_DISCRETE);
    snprintf(p.accelerator, sizeof p.accelerator, "cuda_unified");
    CHECK(ct_hw_classify(&p) == CT_HW_JETSON);
    snprintf(p.accelerator, sizeof p.accelerator, "npu:qualcomm");
    CHECK(ct_hw_classify(&p) == CT_HW_NPU_PHONE);
    for (int c = 0; c < CT_HW_CLASS_COUNT; c++)
        CHECK(ct_hw_class_from_name(ct_hw_class_name((ct_hw_class)c)) == c);
    CHECK(ct_hw_class_from_name("gpu") == -1);
    /* engine class: CPU kernels only, so the arch decides whatever the accelerator */
    CHECK(ct_hw_engine_class(&p) == CT_HW_ARM64_CPU); /* aarch64 phone with an NPU */
    snprintf(p.accelerator, sizeof p.accelerator, "cuda_unified");
    CHECK(ct_hw_engine_class(&p) == CT_HW_ARM64_CPU);
    snprintf(p.arch, sizeof p.arch, "x86_64");
    snprintf(p.accelerator, sizeof p.accelerator, "cuda_discrete");
    CHECK(ct_hw_engine_class(&p) == CT_HW_X86_CPU && ct_hw_classify(&p) == CT_HW_CUDA_DISCRETE);
}

static void test_snapshots(void) {
    CHECK(probe(SNAP("x86_avx512_server")));
    CHECK(strcmp(hw.arch, "x86_64") == 0);
    CHECK(strcmp(hw.cpu_model, "Intel(R) Xeon(R) Platinum 8480+") == 0);
    CHECK(hw.n_logical == 16 && hw.n_physical == 8 && hw.numa_nodes == 2);
    CHECK(hw.n_clusters == 1 && hw.clusters[0].n_cpus == 16 && hw.clusters[0].max_khz == 3800000);
    CHECK(ct_hw_has(&hw, CT_HWF_BIT(CT_HWF_AVX512) | CT_HWF_BIT(CT_HWF_AVX512BW) |
                             CT_HWF_BIT(CT_HWF_AVX512VL) | CT_HWF_BIT(CT_HWF_AVX512_BF16) |
                             CT_HWF_BIT(CT_HWF_AMX_TILE) | CT_HWF_BIT(CT_HWF_AVX2)));
    CHECK(hw.supports_bf16 == 1 && hw.supports_fp16 == 1);
    CHECK(hw.ram_total_bytes == 263842256ull * 1024 && hw.ram_available_bytes == 251658240ull * 1024);
    CHECK(hw.thermal_zones == 2 && strcmp(hw.accelerator, "none") == 0);
    CHECK(ct_hw_classify(&hw) == CT_HW_X86_CPU);
    CHECKF(hw.notes[0] == 0, "%s", hw.notes);

    CHECK(probe(SNAP("x86_avx2_laptop")));
    CHECK(hw.n_logical == 8 && hw.n_physical == 4 && hw.numa_nodes == 1);
    CHECK(ct_hw_has(&hw, CT_HWF_BIT(CT_HWF_AVX2) | CT_HWF_BIT(CT_HWF_FMA) | CT_HWF_BIT(CT_HWF_F16C)));
    CHECK(!(hw.flags & CT_HWF_BIT(CT_HWF_AVX512)));
    CHECK(hw.supports_bf16 == 0 && hw.supports_fp16 == 1); /* x86 -> fp16 true */
    CHECK(hw.thermal_zones == 3 && ct_hw_classify(&hw) == CT_HW_X86_CPU);

    CHECK(probe(SNAP("rpi5")));
    CHECK(strcmp(hw.arch, "aarch64") == 0);
    CHECK(strcmp(hw.cpu_model, "Raspberry Pi 5 Model B Rev 1.0") == 0);
    CHECK(hw.n_logical == 4 && hw.n_physical == 4);
    CHECK(hw.flags == (CT_HWF_BIT(CT_HWF_NEON) | CT_HWF_BIT(CT_HWF_FP16_ARITH) | CT_HWF_BIT(CT_HWF_DOTPROD)));
    CHECK(hw.supports_bf16 == 0 && hw.supports_fp16 == 1);
    CHECK(ct_hw_classify(&hw) == CT_HW_ARM64_CPU);

    CHECK(probe(SNAP("rk3588")));
    static const int big[4] = {4, 5, 6, 7}, little[4] = {0, 1, 2, 3};
    CHECK(hw.n_clusters == 2);
    CHECK(cluster_is(0, 2400000, big, 4)); /* big first */
    CHECK(cluster_is(1, 1800000, little, 4));
    int bc[8];
    CHECK(ct_hw_big_cpus(&hw, bc, 8) == 4 && bc[0] == 4 && bc[3] == 7);
    CHECK(hw.supports_bf16 == 0 && hw.thermal_zones == 7);
    CHECK(strcmp(hw.cpu_model, "Radxa ROCK 5B") == 0);
    CHECK(ct_hw_classify(&hw) == CT_HW_ARM64_CPU);

    CHECK(probe(SNAP("jetson_orin")));
    CHECK(strcmp(hw.accelerator, "cuda_unified") == 0); /* Tegra without CUDA reported */
    CHECK(hw.gpu_mem_bytes == hw.ram_total_bytes && hw.supports_bf16 == 1 && hw.gpu_integrated == 1);
    CHECK(hw.n_logical == 6 && ct_hw_classify(&hw) == CT_HW_JETSON);
    CHECK(ct_hw_engine_class(&hw) == CT_HW_ARM64_CPU); /* the Jetson's CPU runs this engine */

    /* a discrete NVIDIA GPU seen through its driver entry: reported, but CPU settings derived */
    CHECK(probe(SNAP("x86_nvidia_host")));
    CHECK(strcmp(hw.accelerator, "cuda_discrete") == 0);
    CHECK(strcmp(hw.gpu_name, "NVIDIA GeForce RTX 4090") == 0);
    CHECK(ct_hw_classify(&hw) == CT_HW_CUDA_DISCRETE && ct_hw_engine_class(&hw) == CT_HW_X86_CPU);
    CHECKF(strstr(hw.notes, "/proc/driver/nvidia") != NULL, "%s", hw.notes);
    /* its cgroup: cpu.max garbled (named, ignored), memory.max "max" (no limit) */
    CHECKF(strstr(hw.notes, "sys/fs/cgroup/cpu.max is garbled") != NULL, "%s", hw.notes);
    CHECK(hw.cgroup_cpus == 0 && hw.cgroup_mem_limit_bytes == 0);
    CHECK(ct_hw_usable_ram(&hw) == 50331648ull * 1024);
}

static void test_containers(void) {
    int bc[CT_HW_MAX_CPUS];
    /* cgroup v2, nested: app/ has cpu.max 150000/100000 and 4 GiB, app/worker "max" and 2 GiB */
    CHECK(probe(SNAP("container_cgroup2")));
    CHECK(hw.n_logical == 8 && hw.n_allowed_cpus == 0);
    CHECK(hw.cgroup_cpus == 1.5);
    CHECK(hw.cgroup_mem_limit_bytes == 2147483648ull);
    CHECK(hw.cgroup_mem_used_bytes == 536870912ull); /* 768 MiB current less 256 MiB inactive file */
    CHECK(ct_hw_usable_ram(&hw) == 2147483648ull - 536870912ull);
    CHECK(ct_hw_big_cpus(&hw, bc, CT_HW_MAX_CPUS) == 2 && bc[0] == 0 && bc[1] == 1); /* ceil(1.5) */
    CHECKF(hw.notes[0] == 0, "%s", hw.notes);

    /* cgroup v1 on a hybrid host (v1 controllers win over the 0:: line); the host-level
       "unlimited" memory.limit_in_bytes at the mount is no limit; affinity 1,3 */
    CHECK(probe(SNAP("container_cgroup1")));
    CHECK(hw.n_allowed_cpus == 2 && hw.allowed_cpus[0] == 1 && hw.allowed_cpus[1] == 3);
    CHECK(hw.cgroup_cpus == 2.0);
    CHECK(hw.cgroup_mem_limit_bytes == 1073741824ull);
    CHECK(hw.cgroup_mem_used_bytes == 314572800ull - 104857600ull); /* total_inactive_file */
    CHECK(ct_hw_usable_ram(&hw) == 1073741824ull - 209715200ull);
    CHECK(ct_hw_big_cpus(&hw, bc, CT_HW_MAX_CPUS) == 2 && bc[0] == 1 && bc[1] == 3);
    CHECKF(hw.notes[0] == 0, "%s", hw.notes);

    /* big.LITTLE pinned to 2-5: big cluster 4-7 intersected with the mask */
    CHECK(probe(SNAP("arm_pinned")));
    CHECK(hw.n_allowed_cpus == 4 && hw.allowed_cpus[0] == 2 && hw.allowed_cpus[3] == 5);
    CHECK(hw.n_clusters == 2 && hw.clusters[0].max_khz == 2400000);
    CHECK(ct_hw_big_cpus(&hw, bc, CT_HW_MAX_CPUS) == 2 && bc[0] == 4 && bc[1] == 5);
    CHECK(hw.cgroup_cpus == 0 && hw.cgroup_mem_limit_bytes == 0); /* no cgroup file: no limits */
    hw.n_allowed_cpus = 2; /* mask outside the big cluster: the allowed CPUs */
    hw.allowed_cpus[0] = 0;
    hw.allowed_cpus[1] = 1;
    CHECK(ct_hw_big_cpus(&hw, bc, CT_HW_MAX_CPUS) == 2 && bc[0] == 0 && bc[1] == 1);
    hw.cgroup_cpus = 0.5;
    CHECK(ct_hw_big_cpus(&hw, bc, CT_HW_MAX_CPUS) == 1 && bc[0] == 0);
    hw.n_allowed_cpus = 0;
    hw.n_clusters = 0; /* no cluster info, no mask: 0..n_logical-1 under the quota */
    hw.cgroup_cpus = 3.2;
    CHECK(ct_hw_big_cpus(&hw, bc, CT_HW_MAX_CPUS) == 4 && bc[3] == 3);

    /* usable RAM: total when available is unknown; 0 once the cgroup is full */
    ct_hw_profile p;
    ct_hw_profile_init(&p);
    CHECK(ct_hw_usable_ram(&p) == 0);
    p.ram_total_bytes = 8000;
    CHECK(ct_hw_usable_ram(&p) == 8000);
    p.ram_available_bytes = 5000;
    p.cgroup_mem_limit_bytes = 6000;
    CHECK(ct_hw_usable_ram(&p) == 5000);
    p.cgroup_mem_used_bytes = 2000;
    CHECK(ct_hw_usable_ram(&p) == 4000);
    p.cgroup_mem_used_bytes = 7000;
    CHECK(ct_hw_usable_ram(&p) == 0);
}

static void test_degrade(void) {
    CHECK(probe(SNAP("garbled")));
    CHECK(hw.n_logical == 2);                 /* both processor lines survive the NUL bytes */
    CHECK(hw.flags == (CT_HWF_BIT(CT_HWF_AVX2) | CT_HWF_BIT(CT_HWF_FMA)));
    CHECK(hw.ram_total_bytes == 0 && hw.n_clusters == 0);
    CHECK(strstr(hw.notes, "MemTotal") != NULL);
    CHECK(strstr(hw.notes, "cpufreq") != NULL);
    CHECK(strstr(hw.notes, "topology") != NULL);
    CHECK(probe("/nonexistent/probe/root"));
    CHECK(hw.n_logical == 0 && hw.numa_nodes == 1 && strstr(hw.notes, "cpuinfo") != NULL);
    CHECK(ct_hw_classify(&hw) == CT_HW_X86_CPU);
    char err[128];
    CHECK(ct_hw_probe(NULL, &hw, err, sizeof err) == CT_ERR_INVALID_ARG);
}

static void test_override(void) {
    char err[512];
    ct_hw_profile p;
    CHECK(ct_hw_load_override(SNAP("snapdragon_phone/override.json"), &p, err, sizeof err) == CT_OK);
    CHECK(ct_hw_classify(&p) == CT_HW_NPU_PHONE);
    CHECK(strncmp(p.source, "override:", 9) == 0);
    CHECK(p.n_clusters == 4 && p.clusters[0].n_cpus == 1 && p.clusters[0].cpus[0] == 7);
    CHECK(ct_hw_has(&p, CT_HWF_BIT(CT_HWF_I8MM) | CT_HWF_BIT(CT_HWF_BF16)) && p.supports_bf16);
    CHECK(p.ram_available_bytes == 4294967296ull);

    CHECK(ct_hw_load_override("  {\"arch\":\"aarch64\",\"accelerator\":\"cuda_discrete\",\"gpu_mem_bytes\":8589934592,"
                              "\"future_key\":{\"x\":1}}", &p, err, sizeof err) == CT_OK);
    CHECK(ct_hw_classify(&p) == CT_HW_CUDA_DISCRETE && p.gpu_mem_bytes == 8589934592ull);
    CHECK(strcmp(p.source, "override:inline") == 0);

    /* malformed: syntax (line named), wrong type (key named), bad accelerator, missing file */
    CHECK(ct_hw_load_override("{\n\"arch\": \"x86_64\",\n\"n_logical\": }", &p, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "inline:3:") != NULL, "%s", err);
    CHECK(ct_hw_load_override("{\"n_logical\": \"eight\"}", &p, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "'n_logical'") != NULL, "%s", err);
    CHECK(ct_hw_load_override("{\"clusters\": [{\"max_khz\": 1, \"cpus\": [999]}]}", &p, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "clusters[0].cpus") != NULL, "%s", err);
    CHECK(ct_hw_load_override("{\"accelerator\": \"tpu\"}", &p, err, sizeof err) == CT_ERR_FORMAT);
    CHECK(ct_hw_load_override("[1,2]", &p, err, sizeof err) != CT_OK);
    CHECK(ct_hw_load_override("/nonexistent/hw.json", &p, err, sizeof err) == CT_ERR_IO);

    /* JSON round trip of a probed snapshot */
    CHECK(probe(SNAP("rk3588")));
    char *js = ct_hw_to_json(&hw, 0);
    CHECK(js != NULL);
    CHECK(ct_hw_from_json(js, strlen(js), "roundtrip", &p, err, sizeof err) == CT_OK);
    free(js);
    CHECK(strcmp(p.cpu_model, hw.cpu_model) == 0 && p.flags == hw.flags && p.n_clusters == 2 &&
          p.clusters[0].cpus[0] == 4 && p.ram_total_bytes == hw.ram_total_bytes &&
          p.thermal_zones == 7 && p.supports_bf16 == hw.supports_bf16);

    /* container limits round-trip; absent keys mean all CPUs / no limit */
    CHECK(probe(SNAP("container_cgroup1")));
    js = ct_hw_to_json(&hw, 1);
    CHECK(js != NULL && strstr(js, "\"engine_class\": \"x86_cpu\"") != NULL);
    CHECK(ct_hw_from_json(js, strlen(js), "roundtrip", &p, err, sizeof err) == CT_OK);
    free(js);
    CHECK(p.n_allowed_cpus == 2 && p.allowed_cpus[1] == 3 && p.cgroup_cpus == 2.0 &&
          p.cgroup_mem_limit_bytes == hw.cgroup_mem_limit_bytes &&
          p.cgroup_mem_used_bytes == hw.cgroup_mem_used_bytes);
    CHECK(ct_hw_load_override("{\"cgroup_cpus\": 0.5, \"allowed_cpus\": [2, 6]}", &p, err, sizeof err) == CT_OK);
    CHECK(p.cgroup_cpus == 0.5 && p.n_allowed_cpus == 2 && p.allowed_cpus[1] == 6 && p.cgroup_mem_limit_bytes == 0);
    CHECK(ct_hw_load_override("{}", &p, err, sizeof err) == CT_OK);
    CHECK(p.n_allowed_cpus == 0 && p.cgroup_cpus == 0 && p.cgroup_mem_limit_bytes == 0);
    CHECK(ct_hw_load_override("{\"allowed_cpus\": [3, 1]}", &p, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "'allowed_cpus'") != NULL, "%s", err);
    CHECK(ct_hw_load_override("{\"cgroup_cpus\": -1}", &p, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "'cgroup_cpus'") != NULL, "%s", err);
    CHECK(ct_hw_load_override("{\"cgroup_mem_limit_bytes\": \"2G\"}", &p, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "'cgroup_mem_limit_bytes'") != NULL, "%s", err);

    /* CODECTALK_HW_PROFILE replaces the probe; an explicit root wins over it */
    setenv("CODECTALK_HW_PROFILE", SNAP("snapdragon_phone/override.json"), 1);
    CHECK(ct_hw_detect(NULL, &p, err, sizeof err) == CT_OK && ct_hw_classify(&p) == CT_HW_NPU_PHONE);
    CHECK(ct_hw_detect(SNAP("rpi5"), &p, err, sizeof err) == CT_OK && ct_hw_classify(&p) == CT_HW_ARM64_CPU);
    setenv("CODECTALK_HW_PROFILE", "{\"arch\": 5}", 1);
    CHECK(ct_hw_detect(NULL, &p, err, sizeof err) == CT_ERR_FORMAT);
    unsetenv("CODECTALK_HW_PROFILE");
}

static void test_live(void) {
    /* this machine: must not fail, must find at least one CPU */
    CHECK(probe("/"));
    CHECK(hw.n_logical >= 1 && hw.n_physical >= 1);
    CHECK(strcmp(hw.source, "probe:/") == 0);
    /* the allowed CPUs are exactly this process's affinity mask */
    cpu_set_t set;
    CPU_ZERO(&set);
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    int n = 0, same = 1;
    for (int c = 0; c < CT_HW_MAX_CPUS; c++)
        if (CPU_ISSET(c, &set)) {
            same = same && n < hw.n_allowed_cpus && hw.allowed_cpus[n] == c;
            n++;
        }
    CHECKF(same && n == hw.n_allowed_cpus && n >= 1, "%d allowed CPUs probed, %d in the mask", hw.n_allowed_cpus, n);
}

int main(void) {
    test_flags();
    test_classes();
    test_snapshots();
    test_containers();
    test_degrade();
    test_override();
    test_live();
    return ct_test_finish();
}
