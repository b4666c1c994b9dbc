/* A listening IPv4 TCP socket for the servers (HTTP, Wyoming). */
#ifndef CT_SERVE_LISTEN_H
#define CT_SERVE_LISTEN_H

#include <stddef.h>

#include "codectalk.h"

/* Binds host (an IPv4 address or a name resolving to one) : port (0 = any free port) with
   SO_REUSEADDR and listens. *fd and *bound_port on CT_OK. Errors name the address:
   CT_ERR_INVALID_ARG (host does not resolve), CT_ERR_IO (socket/bind/listen, with errno's
   text). what prefixes the message ("http", "wyoming"). */
ct_status ct_tcp_listen(const char *what, const char *host, int port, int *fd, int *bound_port, char *err,
                        size_t errcap);

#endif
