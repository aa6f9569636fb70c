/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-peer.c - a minimal libvgicd peer for the tests that need a QEMU of
 * another process: connects to ADDRESS and attaches a 1-vCPU VM (named
 * NAME, "intruder" by default), then prints what happened on one line
 * ("attached", or "error <code> <message>").  The access tests run it under
 * another uid.  The "vGIC fd" is /dev/null: the attach must be refused
 * before any device access matters, or it does not matter.
 */
#include <fcntl.h>
#include <stdio.h>

#include "libvgicd.h"

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdClient) c = NULL;
  guint32 mpidr = 0;
  int fd = open ("/dev/null", O_RDWR);

  if (argc != 2 && argc != 3)
    {
      fprintf (stderr, "usage: vgicd-peer ADDRESS [NAME]\n");
      return 2;
    }
  c = vgicd_client_connect (argv[1], 2000, &error);
  if (c && vgicd_client_attach (c, fd, argc == 3 ? argv[2] : "intruder", NULL, 64, 1, &mpidr,
                                &error))
    {
      printf ("attached\n");
      return 0;
    }
  printf ("error %d %s\n", error->code, error->message);
  return 1;
}
