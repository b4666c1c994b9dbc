/* A small ONNX graph builder: named inputs/outputs with static shapes, nodes with
   attributes, initializers (FP32 / FP16 / INT64), serialized as an opset-18 ModelProto with
   the field numbers of onnx.proto. Tensors can be stored inline (raw_data) or in one
   external-data blob next to the .onnx file (needed above protobuf's 2 GB message limit).
   Node outputs get unique generated names unless a name is given. */
#ifndef CT_EXPORT_ONNX_GRAPH_H
#define CT_EXPORT_ONNX_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "export/pb.h"

/* onnx.TensorProto.DataType values used here. */
enum { CT_ONNX_FLOAT = 1, CT_ONNX_INT32 = 6, CT_ONNX_INT64 = 7, CT_ONNX_BOOL = 9, CT_ONNX_FLOAT16 = 10 };

#define CT_OG_MAX_DIMS 8

/* One node attribute; kind selects the member used. */
typedef struct {
    const char *name;
    enum { CT_OG_A_INT, CT_OG_A_FLOAT, CT_OG_A_INTS } kind;
    int64_t i;
    float f;
    const int64_t *ints; /* [n] for CT_OG_A_INTS */
    int n;
} ct_og_attr;

typedef struct {
    char *name;
    int elem;                      /* CT_ONNX_* */
    int ndim;
    int64_t dims[CT_OG_MAX_DIMS];
    void *data;                    /* owned, nbytes */
    size_t nbytes;
} ct_og_init;

typedef struct {
    ct_pb nodes;      /* GraphProto field 1 entries */
    ct_pb inputs;     /* field 11 entries */
    ct_pb outputs;    /* field 12 entries */
    ct_og_init *inits;
    size_t n_inits, cap_inits;
    char **names;     /* interned strings */
    size_t n_names, cap_names;
    long counter;     /* generated-name counter */
    long n_nodes;
    int float_elem;   /* element type of float tensors made by ct_og_f32 (FLOAT or FLOAT16) */
    int oom;
    uint64_t weight_bytes; /* sum of initializer bytes */
    char graph_name[64];
    char doc[512];
} ct_og;

/* Starts an empty graph; float_elem is CT_ONNX_FLOAT or CT_ONNX_FLOAT16. */
void ct_og_init_graph(ct_og *g, const char *name, int float_elem);
void ct_og_free(ct_og *g);

/* Copies s into the graph's string arena (NULL on OOM, which also sets g->oom). */
const char *ct_og_str(ct_og *g, const char *s);
/* A fresh unique tensor name "<prefix>_<n>". */
const char *ct_og_fresh(ct_og *g, const char *prefix);

/* Declares a graph input / output of element type elem and static shape dims[ndim]. */
void ct_og_input(ct_og *g, const char *name, int elem, int ndim, const int64_t *dims);
void ct_og_output(ct_og *g, const char *name, int elem, int ndim, const int64_t *dims);

/* Adds a node. ins[nin] are tensor names ("" = omitted optional input); outs[nout] receives
   (or, when non-NULL entries are given, uses) output names. Returns outs[0]. */
const char *ct_og_node(ct_og *g, const char *op, const char *const *ins, int nin, const char **outs,
                       int nout, const ct_og_attr *attrs, int nattr);
/* One-output node with up to 3 inputs (NULL ends the list) and an optional output name. */
const char *ct_og_op(ct_og *g, const char *op, const char *out, const char *a, const char *b,
                     const char *c);
/* The same with attributes. */
const char *ct_og_opa(ct_og *g, const char *op, const char *out, const char *a, const char *b,
                      const ct_og_attr *attrs, int nattr);

/* Adds an initializer named name (NULL = generated) of shape dims holding n f32 values,
   stored as g->float_elem (converted to FP16 when the graph is FP16). Returns its name. */
const char *ct_og_f32(ct_og *g, const char *name, int ndim, const int64_t *dims, const float *v);
/* Same, always stored as FP32 regardless of the graph's float type. */
const char *ct_og_f32_exact(ct_og *g, const char *name, int ndim, const int64_t *dims, const float *v);
/* Adds an INT64 initializer. */
const char *ct_og_i64(ct_og *g, const char *name, int ndim, const int64_t *dims, const int64_t *v);
/* Rank-1 INT64 constant of n values (shapes, axes, slice bounds). */
const char *ct_og_ints(ct_og *g, int n, const int64_t *v);
/* Scalar-valued float constant of shape [1] in the graph's float type. */
const char *ct_og_scalar(ct_og *g, float v);
/* Takes ownership of data (malloc'd, nbytes) as an initializer of element type elem. */
const char *ct_og_take(ct_og *g, const char *name, int elem, int ndim, const int64_t *dims, void *data,
                       size_t nbytes);

/* Writes the model to path. Tensors of at least 1 KiB go to "<path>.data" (offsets aligned
   to 4 KiB) when external is 1, or automatically when the inline model would exceed
   ext_limit bytes (0 = 2 GiB - 64 MiB); external is reported in *used_external (may be NULL).
   The file is written under a temporary name and renamed, so a failure leaves nothing at
   path. *file_bytes receives the total bytes written (both files; may be NULL). */
ct_status ct_og_write(const ct_og *g, const char *path, int external, uint64_t ext_limit, int *used_external,
                      uint64_t *file_bytes, char *err, size_t errcap);

/* IEEE half from float, round to nearest even (overflow -> inf, NaN kept). */
uint16_t ct_og_f16(float f);

/* Attribute helpers. */
ct_og_attr ct_og_ai(const char *name, int64_t v);
ct_og_attr ct_og_af(const char *name, float v);
ct_og_attr ct_og_aints(const char *name, const int64_t *v, int n);

#endif
