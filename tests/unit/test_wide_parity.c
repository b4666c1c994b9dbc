/* Parity with the official implementation at SIMD widths, at every ISA level this CPU runs.
   The model is not committed: `make-model --preset parity128` (talker and predictor hidden
   128, text_hidden 128, FFN 384 / 320, head_dim 64, real vocabularies) regenerates it here and
   its model.safetensors must hash to the sha256 that tools/parity/make_wide_parity.py recorded
   when it loaded that same directory with the official qwen-tts code and dumped
   tests/data/wide_parity/ref.safetensors. Then, for each level (scalar, avx2, avx512,
   avx512bf16 on x86; scalar, neon, neon-dotprod on arm64) in its own child process (the kernel
   table is selected once per process), every case of the manifest runs through
   tests/test_parity.h: greedy codes identical with f32 and with BF16 weights, teacher-forced
   stages within the bounds of tests/unit/test_parity.c. Each child asserts that the selected
   table is that level's: every matmul of this model has >= 128 columns, so at avx512 and
   avx512bf16 they run the 16-lane AVX-512 kernels (the 8-24-wide parity models mostly run
   their tails). avx512bf16 runs a second time in the bf16-activation mode (VDPBF16PS). */
#include <sys/wait.h>
#include <unistd.h>

#include "core/sha256.h"
#include "kernels/cpu.h"
#include "test_models.h"
#include "test_parity.h"

#define DATA CT_SRC_DIR "/tests/data/wide_parity"

/* The bf16-activation mode (CODECTALK_BF16_ACT=1 at avx512bf16: VDPBF16PS for BF16-weight
   matmuls of >= 8 tokens, i.e. the talker prefill) rounds activations to bf16 as the official
   bf16 run does: held to the same 2e-3 against that run and to BF16ACT_VS_F32 against the
   official f32 run (measured 3.8e-6), and it must differ from the f32-activation result (else
   the mode did not run); its BF16-weight codes are counted, not required (its logit error,
   ~2e-3 relative, exceeds the smallest greedy margins of 2.7e-4). */
#define BF16ACT_VS_F32 1e-4

static int run_level(ct_isa isa, int bf16act, const char *dir, json_t *man) {
    char err[256];
    /* selected as users select it (model load reads CODECTALK_ISA and CODECTALK_BF16_ACT) */
    setenv("CODECTALK_ISA", ct_isa_name(isa), 1);
    if (bf16act)
        setenv("CODECTALK_BF16_ACT", "1", 1);
    else
        unsetenv("CODECTALK_BF16_ACT");
    CHECKF(ct_kernels_init(NULL, err, sizeof err) == CT_OK, "%s", err);
    const ct_kernel_table *k = ct_kernels();
    CHECKF(k->isa == isa && k->matmul_rows == ct_matmul_rows_for(isa) && k->bf16act == bf16act,
           "level %s: the kernel table is %s's", ct_isa_name(isa), ct_isa_name(k->isa));
    ct_parity_bounds b = ct_parity_default;
    if (bf16act) {
        b.bf16_vs_f32_max = BF16ACT_VS_F32;
        b.bf16_greedy = 0;
    }
    ct_parity_totals t = {0};
    int f32_rows = (int)json_integer_value(json_object_get(man, "f32_pred_rows"));
    int bf16_rows = (int)json_integer_value(json_object_get(man, "bf16_pred_rows"));
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(man, "cases"), i, c)
        ct_parity_case(dir, DATA "/ref.safetensors", c, f32_rows, bf16_rows, &b, &t);
    printf("level %s%s:\n", ct_isa_name(isa), bf16act ? " with CODECTALK_BF16_ACT=1" : "");
    ct_parity_report(&t, &b);
    CHECK(t.cases == 3 && t.greedy_match == 3 && (bf16act || t.bf16_greedy_match == 3));
    if (bf16act)
        CHECKF(t.bf16_vs_f32.hidden > CT_PARITY_F32_MAX, "the bf16-activation mode changed nothing "
               "(hidden NMSE %.2e against the official f32 run)", t.bf16_vs_f32.hidden);
    return ct_test_finish();
}

int main(void) {
    json_error_t je;
    json_t *man = json_load_file(DATA "/manifest.json", 0, &je);
    CHECKF(man != NULL, "manifest: %s", je.text);
    if (!man) return ct_test_finish();
    json_t *mm = json_object_get(man, "make_model");
    const char *preset = json_string_value(json_object_get(mm, "preset"));
    const char *want = json_string_value(json_object_get(mm, "model_safetensors_sha256"));
    json_int_t seed = json_integer_value(json_object_get(mm, "seed"));
    const ct_mm_preset *p = preset ? ct_mm_find_preset(preset) : NULL;
    CHECKF(p && want, "manifest: make_model.preset / model_safetensors_sha256 missing or unknown");
    if (!p || !want) return ct_test_finish();
    /* the widths this test exists for */
    CHECK(p->hidden >= 128 && p->cp_hidden >= 128 && p->text_hidden >= 128 && p->ffn >= 128 &&
          p->cp_ffn >= 128 && p->head_dim >= 64 && p->cp_head_dim >= 64);

    const char *dir = ct_test_make(preset, "wide_parity_model", (uint64_t)seed);
    CHECK(dir != NULL);
    if (!dir) return ct_test_finish();
    char path[1200], hex[65], err[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECKF(ct_sha256_file(path, hex, err, sizeof err) == CT_OK, "%s", err);
    int same = strcmp(hex, want) == 0;
    CHECKF(same, "make-model --preset %s --seed %lld now writes model.safetensors with sha256 %s, "
           "the dumps were made from %s: the generator changed, so regenerate "
           "tests/data/wide_parity with tools/parity/make_wide_parity.py (see its README.md)",
           preset, (long long)seed, hex, want);

    ct_cpu_features f;
    ct_cpu_detect(&f);
    int levels = 0;
    for (int isa = 0; same && isa < CT_ISA_COUNT; isa++) {
        if (!ct_isa_supported((ct_isa)isa, &f) || !ct_matmul_rows_for((ct_isa)isa)) {
            printf("level %s: not run (this CPU or build lacks it)\n", ct_isa_name((ct_isa)isa));
            continue;
        }
        /* avx512bf16 runs twice: its default kernels, then the bf16-activation mode */
        for (int bf16act = 0; bf16act <= (isa == CT_ISA_AVX512BF16); bf16act++) {
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid == 0) {
                int rc = run_level((ct_isa)isa, bf16act, dir, man);
                json_decref(man);
                exit(rc); /* not _exit: LeakSanitizer checks the child too */
            }
            int status = 0;
            CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
            CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "level %s%s failed (status %d)",
                   ct_isa_name((ct_isa)isa), bf16act ? " (bf16 activations)" : "", status);
        }
        levels++;
    }
    printf("%d ISA levels compared\n", levels);
    CHECK(levels >= 1);
    ct_test_rm_rf(dir);
    json_decref(man);
    return ct_test_finish();
}
