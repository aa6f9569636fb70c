/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-fdpass.c - pass one fd over a unix socket (SCM_RIGHTS), as
 * vgic-sim-run hands the seccomp listener to its supervisor and the tests
 * hand a sim fd to another process.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/socket.h>

#include "vgic-sim.h"

int
vgic_sim_send_fd (int sock, int fd)
{
  char byte = 0, ctl[CMSG_SPACE (sizeof (int))];
  struct iovec iov = { &byte, 1 };
  struct msghdr msg = {
    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl,
  };
  struct cmsghdr *c;

  memset (ctl, 0, sizeof ctl);
  c = CMSG_FIRSTHDR (&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN (sizeof (int));
  memcpy (CMSG_DATA (c), &fd, sizeof fd);
  return sendmsg (sock, &msg, 0) == 1 ? 0 : -1;
}

int
vgic_sim_recv_fd (int sock)
{
  char byte, ctl[CMSG_SPACE (sizeof (int))];
  struct iovec iov = { &byte, 1 };
  struct msghdr msg = {
    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl,
  };
  struct cmsghdr *c;
  int fd;

  if (recvmsg (sock, &msg, MSG_CMSG_CLOEXEC) != 1)
    return -1;
  c = CMSG_FIRSTHDR (&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS)
    return -2;
  memcpy (&fd, CMSG_DATA (c), sizeof fd);
  return fd;
}
