/* A listening IPv4 TCP socket for the servers. */
#include "serve/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/status.h"

ct_status ct_tcp_listen(const char *what, const char *host, int port, int *fd_out, int *bound_port, char *err,
                        size_t errcap) {
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) { /* a name: its first IPv4 address */
        struct addrinfo hints, *ai = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        int gr = getaddrinfo(host, NULL, &hints, &ai);
        if (gr != 0 || !ai)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "%s: host '%s' is not an IPv4 address or a name that "
                           "resolves to one (%s)", what, host, gai_strerror(gr));
        sa.sin_addr = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;
        freeaddrinfo(ai);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0) {
        int en = errno;
        if (fd >= 0) close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "%s: cannot listen on %s:%d: %s", what, host, port, strerror(en));
    }
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *fd_out = fd;
    *bound_port = ntohs(sa.sin_port);
    return CT_OK;
}
