/* SHA-256 of files over OpenSSL's EVP interface (see sha256.h). */
#include "core/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

ct_status ct_sha256_file(const char *path, char hex[65], char *err, size_t errcap) {
    hex[0] = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ct_errf(err, errcap, CT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "'%s' is not a regular file", path);
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        close(fd);
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "sha256: digest init failed");
    }
    static _Thread_local unsigned char buf[1 << 16];
    ct_status st = CT_OK;
    for (;;) {
        ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            st = ct_errf(err, errcap, CT_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
            break;
        }
        if (k == 0) break;
        if (EVP_DigestUpdate(md, buf, (size_t)k) != 1) {
            st = ct_errf(err, errcap, CT_ERR_INTERNAL, "sha256: digest update failed");
            break;
        }
    }
    unsigned char d[32];
    unsigned int dn = 0;
    if (st == CT_OK && (EVP_DigestFinal_ex(md, d, &dn) != 1 || dn != 32))
        st = ct_errf(err, errcap, CT_ERR_INTERNAL, "sha256: digest final failed");
    EVP_MD_CTX_free(md);
    close(fd);
    if (st != CT_OK) return st;
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
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
