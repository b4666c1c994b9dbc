/* The AMX tile configuration the AMX kernels load (x86/matmul_avx512.c, x86/conv_amx_body.h):
 * palette 1, tiles 0-7 of 16 rows x 64 bytes. */
#ifndef CT_KERNELS_X86_AMX_CFG_H
#define CT_KERNELS_X86_AMX_CFG_H

#include <stdint.h>
#include <string.h>

/* LDTILECFG's 64-byte operand. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} ct_amx_cfg;

static inline void ct_amx_cfg_full(ct_amx_cfg *c) {
    memset(c, 0, sizeof *c);
    c->palette = 1;
    for (int i = 0; i < 8; i++) {
        c->colsb[i] = 64;
        c->rows[i] = 16;
    }
}

#endif
