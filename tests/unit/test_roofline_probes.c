/* The roofline's product probes (edge/roofline.c): the f32 FMA at the selected level's width, and
   each weight format's prompt instruction as the selected kernels run it, every rate measured and
   positive. Also built for AArch64 (scripts/test-arm64.sh), where the FMLA, SDOT and SMULL probes
   run under qemu. */
#include <math.h>
#include <string.h>

#include "ct_test.h"
#include "edge/roofline.h"
#include "kernels/cpu.h"

static const char *fma_name(ct_isa isa) {
    switch (isa) {
    case CT_ISA_AVX512:
    case CT_ISA_AVX512BF16: return "FMA (f32, 512-bit)";
    case CT_ISA_AVX2: return "FMA (f32, 256-bit)";
    case CT_ISA_NEON:
    case CT_ISA_NEON_DOTPROD: return "FMLA (f32, NEON)";
    default: return "f32 multiply-add (scalar)";
    }
}

static const char *dot_name(ct_dot_op op) {
    switch (op) {
    case CT_DOT_VNNI512: return "VPDPBUSD (AVX-512 VNNI)";
    case CT_DOT_AVXVNNI: return "VPDPBUSD (AVX-VNNI)";
    case CT_DOT_VNNI256: return "VPDPBUSD (AVX-512 VNNI, 256-bit)";
    case CT_DOT_MADDUBS: return "VPMADDUBSW + VPMADDWD (256-bit)";
    case CT_DOT_SDOT: return "SDOT";
    case CT_DOT_SMULL: return "SMULL + SMLAL2 + SADALP";
    default: return NULL;
    }
}

static const char *const FORMATS[CT_WF_COUNT] = {"bf16", "int8", "int4"};

int main(void) {
    const uint64_t sizes[2] = {1u << 20, 2u << 20};
    ct_machine m;
    char err[256];
    CHECKF(ct_roofline_machine(2, sizes, 2, &m, err, sizeof err) == CT_OK, "%s", err);
    const ct_kernel_table *k = ct_kernels();
    const char *fma = fma_name(k->isa);
    printf("kernels %s: FMA %.1f / %.1f GFLOP/s\n", m.kernels, m.fma_1t, m.fma_nt);
    CHECK(!strcmp(m.kernels, ct_kernels_id()));
    CHECK(isfinite(m.fma_1t) && m.fma_1t > 0 && m.fma_nt >= m.fma_1t && isfinite(m.fma_nt));
    CHECKF(strstr(m.source, fma) != NULL, "%s", m.source);
    for (int f = 0; f < CT_WF_COUNT; f++) {
        const char *want = fma;
        if (f == CT_WF_BF16 && k->amx)
            want = k->bf16act ? "TDPBF16PS (AMX)" : "TDPBF16PS (AMX, split activations: 2 per product)";
        else if (f == CT_WF_BF16 && k->bf16act)
            want = "VDPBF16PS (512-bit)";
        else if (f != CT_WF_BF16 && k->xq && dot_name(k->dot_op))
            want = dot_name(k->dot_op);
        printf("%s prompt: %s, %.1f / %.1f GFLOP/s\n", FORMATS[f], m.prompt_op[f], m.prompt_1t[f], m.prompt_nt[f]);
        CHECKF(!strcmp(m.prompt_op[f], want), "%s: %s, not %s", FORMATS[f], m.prompt_op[f], want);
        CHECK(isfinite(m.prompt_1t[f]) && m.prompt_1t[f] > 0 && m.prompt_nt[f] >= m.prompt_1t[f] && isfinite(m.prompt_nt[f]));
        if (want == fma) CHECK(m.prompt_1t[f] == m.fma_1t && m.prompt_nt[f] == m.fma_nt);
    }
    return ct_test_finish();
}
