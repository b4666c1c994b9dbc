/* ONNX export cross-checked by an independent decoder: `protoc --decode=onnx.ModelProto`
   with Debian's onnx.proto (packages protobuf-compiler and libonnx-dev) must parse a small
   hand-built graph and the tiny model's exported talker and predictor steps (FP32 and FP16)
   and find their ops, inputs and producer. Without protoc or onnx.proto the test is skipped
   (exit 77, reported by ctest as skipped); under CI=true a missing tool is a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"
#include "export_tiny_graph.h"
#include "export/export.h"
#include "export/onnx_graph.h"
#include "model/model_internal.h"
#include "test_models.h"

#define ONNX_PROTO "/usr/include/onnx/onnx.proto"

/* protoc --decode of path; 1 when it parses and the text contains every string in want. */
static int protoc_finds(const char *path, const char *const *want, int n) {
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "protoc --decode=onnx.ModelProto -I/usr/include onnx/onnx.proto < '%s'", path);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    if (!text) {
        pclose(p);
        return 0;
    }
    size_t got;
    while ((got = fread(text + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 4096) {
            char *t = realloc(text, cap * 2);
            if (!t) break;
            text = t;
            cap *= 2;
        }
    }
    text[len] = 0;
    int rc = pclose(p);
    int ok = rc == 0 && len > 0;
    for (int i = 0; ok && i < n; i++)
        if (!strstr(text, want[i])) {
            fprintf(stderr, "protoc --decode of %s: no '%s'\n", path, want[i]);
            ok = 0;
        }
    if (rc != 0) fprintf(stderr, "protoc --decode of %s failed (status %d)\n", path, rc);
    free(text);
    return ok;
}

static void test_small_graph(void) {
    char path[1024], err[256];
    int ext = -1;
    uint64_t fb = 0;
    CHECKF(ct_test_write_tiny_add("test_export_protoc_add.onnx", path, sizeof path, &ext, &fb, err, sizeof err) ==
               CT_OK, "%s", err);
    static const char *const want[] = {"ir_version: 8", "producer_name: \"codectalk\"", "op_type: \"Add\"",
                                       "name: \"tiny_add\"", "name: \"w\"", "version: 18"};
    CHECK(protoc_finds(path, want, (int)(sizeof want / sizeof want[0])));
}

static void test_step_graphs(void) {
    const char *dir = ct_test_make("tiny", "test_export_protoc_tiny", 5);
    CHECK(dir != NULL);
    if (!dir) return;
    char err[1024], out[1200];
    ct_model_params mp = ct_model_params_default();
    ct_model *m = NULL;
    CHECKF(ct_model_load(dir, &mp, &m, err, sizeof err) == CT_OK, "%s", err);
    if (!m) return;
    snprintf(out, sizeof out, "%s/test_export_protoc_out", CT_BIN_DIR);
    mkdir(out, 0755);
    static const char *const want[] = {"producer_name: \"codectalk\"", "name: \"k_cache_0\"", "name: \"v_cache_0\"",
                                       "name: \"logits\"", "op_type: \"MatMul\"", "op_type: \"Softmax\""};
    for (int pred = 0; pred < 2; pred++)
        for (int fp16 = 0; fp16 < 2; fp16++) {
            ct_export_step_opts o = {0};
            o.predictor = pred;
            o.fp16 = fp16;
            o.cache_len = pred ? 16 : 32;
            ct_export_result r;
            CHECKF(ct_export_step(m, dir, &o, out, &r, err, sizeof err) == CT_OK, "%s", err);
            CHECKF(protoc_finds(r.onnx_path, want, (int)(sizeof want / sizeof want[0])), "predictor %d fp16 %d", pred,
                   fp16);
        }
    ct_model_free(m);
}

int main(void) {
    if (access(ONNX_PROTO, R_OK) != 0) return ct_test_skip(ONNX_PROTO " is missing (apt-get install libonnx-dev)");
    if (system("command -v protoc >/dev/null 2>&1") != 0)
        return ct_test_skip("protoc is missing (apt-get install protobuf-compiler)");
    test_small_graph();
    test_step_graphs();
    return ct_test_finish();
}
