/* SHA-256 (FIPS 180-4) in plain C (see sha256.h); no crypto library in the runtime. */
#include "core/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void ct_sha256_init(ct_sha256_ctx *c) {
    static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, H0, sizeof H0);
    c->total = 0;
    c->n = 0;
}

void ct_sha256_update(ct_sha256_ctx *c, const void *data, size_t len) {
    const uint8_t *p = data;
    c->total += len;
    if (c->n) {
        size_t k = 64 - c->n < len ? 64 - c->n : len;
        memcpy(c->buf + c->n, p, k);
        c->n += k, p += k, len -= k;
        if (c->n < 64) return;
        block(c->h, c->buf);
        c->n = 0;
    }
    for (; len >= 64; p += 64, len -= 64) block(c->h, p);
    memcpy(c->buf, p, len);
    c->n = len;
}

void ct_sha256_final(ct_sha256_ctx *c, uint8_t out[32]) {
    uint64_t bits = c->total * 8;
    c->buf[c->n++] = 0x80;
    if (c->n > 56) {
        memset(c->buf + c->n, 0, 64 - c->n);
        block(c->h, c->buf);
        c->n = 0;
    }
    memset(c->buf + c->n, 0, 56 - c->n);
    for (int i = 0; i < 8; i++) c->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    block(c->h, c->buf);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(c->h[i] >> (24 - 8 * j));
}

void ct_sha256_hex(const uint8_t d[32], char hex[65]) {
    static const char X[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) hex[2 * i] = X[d[i] >> 4], hex[2 * i + 1] = X[d[i] & 15];
    hex[64] = 0;
}

void ct_sha256_buf(const void *data, size_t len, char hex[65]) {
    ct_sha256_ctx c;
    uint8_t d[32];
    ct_sha256_init(&c);
    ct_sha256_update(&c, data, len);
    ct_sha256_final(&c, d);
    ct_sha256_hex(d, hex);
}

ct_status ct_sha256_file(const char *path, char hex[65], char *err, size_t errcap) {
    hex[0] = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ct_errf(err, errcap, CT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "'%s' is not a regular file", path);
    }
    enum { BUF = 1 << 20 };
    unsigned char *buf = malloc(BUF);
    if (!buf) {
        close(fd);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "hashing '%s': out of memory", path);
    }
    ct_sha256_ctx c;
    ct_sha256_init(&c);
    for (;;) {
        ssize_t k = read(fd, buf, BUF);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return ct_errf(err, errcap, CT_ERR_IO, "cannot read '%s': %s", path, strerror(e));
        }
        if (k == 0) break;
        ct_sha256_update(&c, buf, (size_t)k);
    }
    close(fd);
    free(buf);
    uint8_t d[32];
    ct_sha256_final(&c, d);
    ct_sha256_hex(d, hex);
    return CT_OK;
}

ct_status ct_codec_id(const char *model_dir, char *out, size_t cap, char *err, size_t errcap) {
    if (!model_dir || !out || cap < 72) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "codec id: bad arguments");
    char path[4096], hex[65];
    snprintf(path, sizeof path, "%s/speech_tokenizer/model.safetensors", model_dir);
    ct_status st = ct_sha256_file(path, hex, err, errcap);
    if (st != CT_OK) return st;
    snprintf(out, cap, "sha256:%s", hex);
    return CT_OK;
}
