/* Test helper: the one-node ONNX graph (y = x + w, [1, 3], opset 18) both export tests write. */
#ifndef CT_EXPORT_TINY_GRAPH_H
#define CT_EXPORT_TINY_GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "export/onnx_graph.h"

/* Writes graph "tiny_add" to CT_BIN_DIR/<file> (path[cap] receives the path); *ext and *fb as
   ct_og_write reports them. */
static inline ct_status ct_test_write_tiny_add(const char *file, char *path, size_t cap, int *ext,
                                               uint64_t *fb, char *err, size_t errcap) {
    ct_og g;
    ct_og_init_graph(&g, "tiny_add", CT_ONNX_FLOAT);
    int64_t d[2] = {1, 3};
    float w[3] = {1, 2, 3};
    ct_og_input(&g, "x", CT_ONNX_FLOAT, 2, d);
    ct_og_op(&g, "Add", "y", "x", ct_og_f32(&g, "w", 2, d, w), NULL);
    ct_og_output(&g, "y", CT_ONNX_FLOAT, 2, d);
    snprintf(path, cap, "%s/%s", CT_BIN_DIR, file);
    ct_status st = ct_og_write(&g, path, 0, 0, ext, fb, err, errcap);
    ct_og_free(&g);
    return st;
}

#endif
