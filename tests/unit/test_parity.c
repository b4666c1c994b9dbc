/* Parity with the official implementation (qwen-tts 0.1.1, transformers 4.57.3): per-stage
   tensors dumped by tools/parity/make_parity.py from small random official models (8-24 wide)
   are compared teacher-forced, and greedy free-running codes must match exactly, with f32 and
   with BF16 weights. Bounds (tests/test_parity.h): f32 path <= 1e-8 NMSE on every stage;
   BF16-weight path <= 1e-8 against the official f32 run and <= 2e-3 against the official
   all-bf16 run. tests/unit/test_wide_parity.c does the same at SIMD widths (>= 128). */
#include "test_parity.h"

#define DATA CT_SRC_DIR "/tests/data/parity"

int main(void) {
    json_error_t je;
    json_t *man = json_load_file(DATA "/manifest.json", 0, &je);
    CHECKF(man != NULL, "manifest: %s", je.text);
    if (!man) return ct_test_finish();
    int bf16_rows = (int)json_integer_value(json_object_get(man, "bf16_pred_rows"));
    ct_parity_totals t = {0};
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(man, "cases"), i, c) {
        const char *model = json_string_value(json_object_get(c, "model"));
        char dir[1024], path[1200];
        snprintf(dir, sizeof dir, "%s/%s", DATA, model);
        snprintf(path, sizeof path, "%s/ref.safetensors", dir);
        int S = (int)json_integer_value(json_object_get(c, "S"));
        ct_parity_case(dir, path, c, S, bf16_rows, &ct_parity_default, &t);
    }
    ct_parity_report(&t, &ct_parity_default);
    CHECK(t.cases == 8);
    json_decref(man);
    return ct_test_finish();
}
