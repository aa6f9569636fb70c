/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qmp.c - a minimal QMP client for the QEMU end-to-end tier, run inside the
 * nested arm64 machine (static, so it needs nothing from the initramfs).
 *
 *   qmp SOCKET 'JSON' ['JSON'...]    run each command, print each reply line
 *                                    (events are skipped); exit 2 if any
 *                                    reply was an error
 *   qmp SOCKET --wait-migrate SECS   poll query-migrate until it reaches
 *                                    completed, failed or cancelled; print
 *                                    the last reply; exit 0 only on completed
 *
 * The socket may not exist yet: connecting is retried for 60 s.  Exit 1 on
 * any I/O problem (QEMU gone, timeout).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;
static char buf[1 << 20];
static size_t have;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One line from QEMU (without the line end) into @line, within @secs. */
static int read_line(char *line, size_t size, double secs)
{
	double end = now() + secs;

	for (;;) {
		char *nl = memchr(buf, '\n', have);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t len = nl - buf;

			if (len && buf[len - 1] == '\r')
				len--;
			if (len >= size)
				len = size - 1;
			memcpy(line, buf, len);
			line[len] = 0;
			have -= nl + 1 - buf;
			memmove(buf, nl + 1, have);
			return 0;
		}
		if (have == sizeof(buf)) {
			fprintf(stderr, "qmp: reply too long\n");
			return -1;
		}
		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			return -1;
		if (p.revents) {
			n = read(fd, buf + have, sizeof(buf) - have);
			if (n <= 0) {
				fprintf(stderr, "qmp: QEMU closed the connection\n");
				return -1;
			}
			have += n;
		}
		if (now() > end) {
			fprintf(stderr, "qmp: no reply within %.0f s\n", secs);
			return -1;
		}
	}
}

/* Send @cmd and read its reply (skipping events) into @reply. */
static int command(const char *cmd, char *reply, size_t size, double secs)
{
	size_t len = strlen(cmd), off = 0;

	while (off < len) {
		ssize_t n = write(fd, cmd + off, len - off);

		if (n <= 0) {
			perror("qmp: write");
			return -1;
		}
		off += n;
	}
	if (write(fd, "\n", 1) != 1)
		return -1;
	do {
		if (read_line(reply, size, secs) < 0)
			return -1;
	} while (strstr(reply, "\"event\"") && !strstr(reply, "\"return\""));
	return 0;
}

int main(int argc, char **argv)
{
	static char reply[1 << 20];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	double end;
	int i, rc = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: qmp SOCKET JSON... | qmp SOCKET --wait-migrate SECS\n");
		return 1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	end = now() + 60;
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (fd >= 0)
			close(fd);
		if (now() > end) {
			fprintf(stderr, "qmp: cannot connect to %s: %s\n", argv[1], strerror(errno));
			return 1;
		}
		usleep(100000);
	}
	/* The greeting, then capabilities negotiation. */
	if (read_line(reply, sizeof(reply), 60) < 0 ||
	    command("{\"execute\":\"qmp_capabilities\"}", reply, sizeof(reply), 60) < 0)
		return 1;

	if (strcmp(argv[2], "--wait-migrate") == 0) {
		double limit = argc > 3 ? atof(argv[3]) : 600;

		end = now() + limit;
		for (;;) {
			if (command("{\"execute\":\"query-migrate\"}", reply, sizeof(reply), 60) < 0)
				return 1;
			if (strstr(reply, "\"status\": \"completed\"")) {
				puts(reply);
				return 0;
			}
			if (strstr(reply, "\"status\": \"failed\"") ||
			    strstr(reply, "\"status\": \"cancelled\"")) {
				puts(reply);
				return 1;
			}
			if (now() > end) {
				puts(reply);
				fprintf(stderr, "qmp: migration not finished after %.0f s\n", limit);
				return 1;
			}
			usleep(50000);
		}
	}

	for (i = 2; i < argc; i++) {
		if (command(argv[i], reply, sizeof(reply), 120) < 0)
			return 1;
		puts(reply);
		if (strstr(reply, "\"error\""))
			rc = 2;
	}
	return rc;
}
