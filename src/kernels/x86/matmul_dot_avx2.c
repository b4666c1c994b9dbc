/* The 256-bit integer-dot matmul with VPMADDUBSW (AVX2): the shim for matmul_dot_body.h. */
#define CT_DOT_VNNI 0
#define CT_DOT_FN ct_matmul_rows_dot_avx2
#include "kernels/x86/matmul_dot_body.h"
