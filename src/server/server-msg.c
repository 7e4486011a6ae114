/* The socket's messages: one datagram each (SOCK_SEQPACKET), a version and a type, descriptors beside them. */
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "server-int.h"

int
server_msg_send(int fd, enum server_msg_type type, const void *data,
    size_t len, const int *fds, int nfds)
{
	struct server_msg_hdr hdr = { SERVER_PROTOCOL, (uint32_t)type };
	struct iovec iov[2] = { { &hdr, sizeof hdr }, { (void *)data, len } };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * SERVER_MSG_FDS)];
	} u;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	if (len > SERVER_MSG_MAX - sizeof hdr || nfds > SERVER_MSG_FDS) {
		errno = EMSGSIZE;
		return -1;
	}
	if (nfds > 0 && util_cmsg_put(&msg, u.buf, sizeof u.buf, fds,
	    (size_t)nfds) == -1)
		return -1;
	while (sendmsg(fd, &msg, MSG_NOSIGNAL) == -1) {
		if (errno != EINTR)
			return -1;
	}
	return 0;
}

int
server_msg_exit(int fd, int code, const char *text)
{
	struct buf b;
	int32_t c = code;
	int rc;

	buf_init(&b);
	buf_add(&b, &c, sizeof c);
	if (text != NULL)
		buf_adds(&b, text);
	rc = server_msg_send(fd, SERVER_MSG_EXIT, b.data, b.len, NULL, 0);
	buf_free(&b);
	return rc;
}

int
server_msg_recv(int fd, struct buf *b, uint32_t *version, int *fds, int *nfds)
{
	struct server_msg_hdr hdr;
	char *data = xmalloc(SERVER_MSG_MAX);
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * SERVER_MSG_FDS)];
	} u;
	struct iovec iov = { data, SERVER_MSG_MAX };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	ssize_t n;

	*nfds = 0;
	*version = 0;
	if ((n = util_recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) <= 0) {
		free(data);
		return (int)n;
	}
	*nfds = (int)util_cmsg_take(&msg, fds, SERVER_MSG_FDS);
	if ((size_t)n < sizeof hdr || (msg.msg_flags & MSG_TRUNC) != 0) {
		free(data);
		errno = EPROTO;
		return -1;
	}
	memcpy(&hdr, data, sizeof hdr);
	if (hdr.version != SERVER_PROTOCOL)
		*version = hdr.version;
	buf_add(b, data + sizeof hdr, (size_t)n - sizeof hdr);
	free(data);
	return hdr.type == 0 ? -1 : (int)hdr.type;
}
