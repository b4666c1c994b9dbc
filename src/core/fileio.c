/* Whole-file reading with explicit limits, atomic writes, file-kind checks. */
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ct_status ct_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                       size_t errcap) {
    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO in place of the file must not block the open; fstat refuses it */
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ct_errf(err, errcap, CT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        const int e = errno;
        close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "'%s' is not a regular file (%s)", path, ct_file_kind(sb.st_mode));
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        const int e = errno;
        close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "cannot open '%s': %s", path, strerror(e));
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

const char *ct_file_kind(unsigned mode) {
    const mode_t m = (mode_t)mode;
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

ct_status ct_check_regular(const char *path, char *err, size_t errcap) {
    struct stat sb;
    if (!path || stat(path, &sb) != 0 || S_ISREG(sb.st_mode)) return CT_OK;
    return ct_errf(err, errcap, CT_ERR_IO, "'%s' is not a regular file (%s)", path, ct_file_kind(sb.st_mode));
}

ct_status ct_json_load_object(const char *path, json_t **root, char *err, size_t errcap) {
    *root = NULL;
    ct_status st = ct_check_regular(path, err, errcap); /* a FIFO must not block the read */
    if (st != CT_OK) return st;
    json_error_t je;
    json_t *r = json_load_file(path, 0, &je);
    if (!r) {
        FILE *f = fopen(path, "rb");
        if (!f) return ct_errf(err, errcap, CT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        fclose(f);
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: JSON error at line %d column %d: %s", path, je.line,
                       je.column, je.text);
    }
    if (!json_is_object(r)) {
        json_decref(r);
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: top level is not a JSON object", path);
    }
    *root = r;
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
