/* `codectalk bench emulate`: the stream bench under emulated hardware classes. Each case runs
   in a child process with a synthetic hardware profile (CODECTALK_HW_PROFILE, so the derived
   deploy profile is the target's), a forced kernel ISA (CODECTALK_ISA) and a CPU affinity mask,
   running `bench stream` with the auto profile exactly as synth applies it; the table shows what
   each child applied (read back from its result JSON) beside the measured TTFA / RTF. */
#define _GNU_SOURCE
#include <dirent.h>
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "edge/hw.h"
#include "edge/profile.h"
#include "kernels/cpu.h"

typedef struct {
    const char *name, *note, *isa;
    const char *hw_json; /* printf format: %d logical cpus, %d physical, %llu RAM bytes */
    int cpus;            /* affinity: first N CPUs of this machine */
} emu_case;

static const emu_case cases[] = {
    {"x86_cpu_scalar_1core", "1 core, no SIMD", "scalar",
     "{\"arch\":\"x86_64\",\"cpu_model\":\"emulated scalar x86\",\"cpu_flags\":[],\"n_logical\":%d,"
     "\"n_physical\":%d,\"ram_total_bytes\":%llu,\"ram_available_bytes\":%llu}", 1},
    {"x86_cpu_avx2", "AVX2 laptop class", "avx2",
     "{\"arch\":\"x86_64\",\"cpu_model\":\"emulated AVX2 x86\",\"cpu_flags\":[\"avx2\",\"fma\",\"f16c\"],"
     "\"n_logical\":%d,\"n_physical\":%d,\"ram_total_bytes\":%llu,\"ram_available_bytes\":%llu}", 0},
    {"x86_cpu_avx512", "AVX-512 + BF16 server class", "avx512bf16",
     "{\"arch\":\"x86_64\",\"cpu_model\":\"emulated AVX-512 x86\",\"cpu_flags\":[\"avx2\",\"fma\","
     "\"f16c\",\"avx512\",\"avx512_bf16\",\"avx512_vnni\"],\"n_logical\":%d,\"n_physical\":%d,"
     "\"ram_total_bytes\":%llu,\"ram_available_bytes\":%llu}", 0},
    {"arm64_cpu_logic", "arm64 rules on x86 kernels (scalar)", "scalar",
     "{\"arch\":\"aarch64\",\"cpu_model\":\"emulated arm64\",\"cpu_flags\":[\"neon\",\"dotprod\","
     "\"fp16_arith\"],\"n_logical\":%d,\"n_physical\":%d,\"ram_total_bytes\":%llu,"
     "\"ram_available_bytes\":%llu}", 0},
};

/* Newest *.json file under dir (recursive), into out. */
static int newest_json(const char *dir, char *out, size_t cap, time_t *best) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            found |= newest_json(p, out, cap, best);
        } else if (strstr(e->d_name, ".json") && st.st_mtime >= *best) {
            *best = st.st_mtime;
            snprintf(out, cap, "%s", p);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

static double sget(json_t *sum, const char *metric, const char *stat) {
    json_t *v = json_object_get(json_object_get(sum, metric), stat);
    return json_is_number(v) ? json_number_value(v) : -1;
}

int ct_cli_bench_emulate(int argc, char **argv) {
    const char *model = NULL, *out = "results/emulate", *only = NULL;
    int frames = 40, repeat = 1;
    ct_opt opts[] = {{"model", 'm', CT_OPT_STR, &model, "DIR", "model directory"},
                     {"output", 'o', CT_OPT_STR, &out, "DIR", "results directory (default results/emulate)"},
                     {"case", 0, CT_OPT_STR, &only, "NAME", "run one case only"},
                     {"max-frames", 0, CT_OPT_INT, &frames, "N", "frames per request (default 40)"},
                     {"repeat", 0, CT_OPT_INT, &repeat, "N", "passes over the prompts (default 1)"},
                     {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk bench emulate -m DIR [--case NAME] [-o DIR]\n"
                          "Runs the stream bench under emulated hardware classes (profile override,\n"
                          "forced ISA, CPU affinity). Cases: x86_cpu_scalar_1core, x86_cpu_avx2,\n"
                          "x86_cpu_avx512, arm64_cpu_logic.");
    if (r) return r < 0 ? 2 : 0;
    if (!model) {
        fprintf(stderr, "error: --model DIR is required\n");
        return 2;
    }
    if (frames < 1 || frames > 1000000 || repeat < 1 || repeat > 1000) {
        fprintf(stderr, "error: --max-frames must be in [1, 1000000] and --repeat in [1, 1000]\n");
        return 2;
    }
    char self[1024];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "error: cannot find the codectalk executable\n");
        return 1;
    }
    self[sl] = 0;
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    unsigned long long ram = (unsigned long long)pages * (unsigned long long)psz;
    ct_cpu_features feat;
    ct_cpu_detect(&feat);
    printf("| case | note | ISA | cpus | engine class | weights (talker/predictor) | placement, threads | schedule | "
           "TTFA p50 ms | playback start p50 ms | stall p50 ms | RTF p50 | result |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const emu_case *c = &cases[i];
        if (only && strcmp(only, c->name) != 0) continue;
        ran++;
        int n = c->cpus ? c->cpus : ncpu;
        if (n > ncpu) n = ncpu;
        char hw[2048];
        snprintf(hw, sizeof hw, c->hw_json, n, n, ram, ram * 3 / 4);
        ct_isa isa;
        ct_isa_parse(c->isa, &isa);
        if (!ct_isa_supported(isa, &feat)) {
            printf("| %s | %s | %s | %d | | | | | | | | | skipped: this CPU lacks %s |\n", c->name, c->note,
                   c->isa, n, c->isa);
            continue;
        }
        char klass[32] = "?";
        {
            ct_hw_profile hp;
            char err[1024];
            if (ct_hw_from_json(hw, strlen(hw), c->name, &hp, err, sizeof err) == CT_OK)
                snprintf(klass, sizeof klass, "%s", ct_hw_class_name(ct_hw_engine_class(&hp)));
        }
        char dir[1200], fr[16], rp[16];
        snprintf(dir, sizeof dir, "%s/%s", out, c->name);
        snprintf(fr, sizeof fr, "%d", frames);
        snprintf(rp, sizeof rp, "%d", repeat);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            for (int k = 0; k < n; k++) CPU_SET(k, &set);
            sched_setaffinity(0, sizeof set, &set);
            setenv("CODECTALK_HW_PROFILE", hw, 1);
            setenv("CODECTALK_ISA", c->isa, 1);
            if (!freopen("/dev/null", "w", stdout)) _exit(127);
            execl(self, self, "bench", "stream", "-m", model, "--profile", "auto", "--max-frames", fr,
                  "--repeat", rp, "-o", dir, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("| %s | %s | %s | %d | %s | | | | | | | | failed (exit %d) |\n", c->name, c->note, c->isa, n, klass,
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            continue;
        }
        /* what the child ran is what its result records: the profile as applied */
        char path[2048];
        time_t best = 0;
        json_t *doc = NULL, *sum = NULL;
        if (newest_json(dir, path, sizeof path, &best)) doc = json_load_file(path, 0, NULL);
        sum = json_object_get(doc, "summary");
        const json_t *ba = json_object_get(json_object_get(doc, "meta"), "bench_args");
        const char *sched = json_string_value(json_object_get(ba, "schedule"));
        const char *place = json_string_value(json_object_get(ba, "placement"));
        const char *tw = json_string_value(json_object_get(ba, "talker_weights"));
        const char *pw = json_string_value(json_object_get(ba, "predictor_weights"));
        printf("| %s | %s | %s | %d | %s | %s/%s | %s %lld+%lld | %s | %.0f | %.0f | %.0f | %.3f | %s |\n", c->name,
               c->note, c->isa, n, klass, tw ? tw : "?", pw ? pw : "?", place ? place : "?",
               (long long)json_integer_value(json_object_get(ba, "talker_threads")),
               (long long)json_integer_value(json_object_get(ba, "codec_threads")), sched ? sched : "?",
               sget(sum, "ttfa_ms", "p50"), sget(sum, "playback_start_ms", "p50"), sget(sum, "stall_at_ttfa_ms", "p50"),
               sget(sum, "rtf_total", "p50"), sum ? path : "no result JSON");
        json_decref(doc);
    }
    if (!ran) {
        fprintf(stderr, "error: unknown case '%s'\n", only);
        return 2;
    }
    return 0;
}
