/* Whole-file reading with explicit limits. */
#include "core/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ct_status ct_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                       size_t errcap) {
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return ct_errf(err, errcap, CT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return ct_errf(err, errcap, CT_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((size_t)sb.st_size > max_bytes) {
        fclose(f);
        return ct_errf(err, errcap, CT_ERR_LIMIT, "'%s' is %lld bytes, over the %zu-byte limit", path,
                       (long long)sb.st_size, max_bytes);
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    if (!buf) {
        fclose(f);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    size_t n = fread(buf, 1, (size_t)sb.st_size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n != (size_t)sb.st_size) {
        free(buf);
        return ct_errf(err, errcap, CT_ERR_IO, "short read on '%s'", path);
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return CT_OK;
}

int ct_file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

ct_status ct_write_file_atomic(const char *path, const void *data, size_t len, char *err,
                               size_t errcap) {
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "path too long: '%s'", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return ct_errf(err, errcap, CT_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    int ok = fwrite(data, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        remove(tmp);
        return ct_errf(err, errcap, CT_ERR_IO, "cannot write '%s': %s", path, strerror(e));
    }
    return CT_OK;
}

ct_status ct_mkdir_parents(const char *path, char *err, size_t errcap) {
    char d[4200];
    if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "path too long: '%.80s...'", path);
    char *slash = strrchr(d, '/');
    if (!slash || slash == d) return CT_OK;
    *slash = 0;
    for (char *p = d + 1;; p++) {
        int end = *p == 0;
        if (*p != '/' && !end) continue;
        *p = 0;
        if (mkdir(d, 0755) != 0 && errno != EEXIST)
            return ct_errf(err, errcap, CT_ERR_IO, "cannot create directory '%s': %s", d, strerror(errno));
        if (end) break;
        *p = '/';
    }
    return CT_OK;
}
