/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-libvirt-dl.c - the table of libvirt functions, filled from the
 * library at run time (see vgicctl-libvirt-dl.h for why).
 */
#define VGICCTL_LIBVIRT_DL_TABLE 1
#include "vgicctl-libvirt-dl.h"

#include <dlfcn.h>

VgicctlLibvirt vgicctl_libvirt;

gboolean
vgicctl_libvirt_load (GError **error)
{
  static int loaded;	/* 0 not yet, 1 loaded, -1 failed */
  static char *why;	/* the failure, for a second call */
  const struct {
    const char *name;
    void **slot;
  } symbols[] = {
#define S(fn) { "vir" #fn, (void **) &vgicctl_libvirt.fn }
    S (ConnectOpen), S (ConnectClose), S (DomainLookupByName), S (DomainGetXMLDesc),
    S (DomainDefineXML), S (DomainIsActive), S (DomainSetMetadata), S (DomainFree),
    S (GetLastError), S (SetErrorFunc),
#undef S
  };
  void *lib;

  if (loaded == 0)
    {
      /* Never unloaded: libvirt keeps threads and handlers of its own. */
      lib = dlopen (VGICCTL_LIBVIRT_SONAME, RTLD_NOW | RTLD_LOCAL);
      if (!lib)
        why = g_strdup_printf ("libvirt's client library is not installed (%s); "
                               "apt install libvirt0, or run this on a libvirt host",
                               dlerror ());
      for (guint i = 0; lib && !why && i < G_N_ELEMENTS (symbols); i++)
        if (!(*symbols[i].slot = dlsym (lib, symbols[i].name)))
          why = g_strdup_printf ("%s has no %s: libvirt is older than this vgicctl "
                                 "was built for", VGICCTL_LIBVIRT_SONAME, symbols[i].name);
      loaded = why ? -1 : 1;
    }
  if (loaded < 0)
    g_set_error_literal (error, G_FILE_ERROR, G_FILE_ERROR_NOENT, why);
  return loaded > 0;
}
