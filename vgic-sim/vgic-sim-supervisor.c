/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-supervisor.c - how real ioctl(2) calls on a sim fd reach the
 * model: a seccomp user-notification filter and the supervisor answering
 * it.
 *
 * Theory of operation
 *
 * The filter (vgic_sim_filter_install) returns SECCOMP_RET_USER_NOTIF for
 * ioctl(2) with one of the three request numbers KVM_GET_DEVICE_ATTR,
 * KVM_SET_DEVICE_ATTR and KVM_HAS_DEVICE_ATTR, and ALLOW for everything
 * else, so no other syscall of the supervised process ever leaves the
 * kernel.  The request is matched on its low 32 bits only, because the
 * kernel's ioctl takes an unsigned int command.
 *
 * For each notification the supervisor (vgic_sim_server_handle):
 *  1. takes a copy of the caller's fd with pidfd_open + pidfd_getfd, and
 *     checks with SECCOMP_IOCTL_NOTIF_ID_VALID that the caller is still the
 *     one that trapped (the tid cannot have been recycled);
 *  2. checks that the fd is a sim memfd (a regular file starting with the
 *     sim magic and our layout version).  If not - /dev/kvm devices,
 *     /dev/null, sockets... - it replies SECCOMP_USER_NOTIF_FLAG_CONTINUE
 *     and the kernel runs the real ioctl, so those fds behave normally;
 *  3. maps the memfd (mappings are cached by inode) and runs the model,
 *     which reads and writes the caller's memory with process_vm_readv /
 *     process_vm_writev - a bad pointer there is a real -EFAULT;
 *  4. replies with 0 or -errno.
 *
 * In-process supervision (vgic_sim_supervise_self): the filter is installed
 * on every thread of the calling process (TSYNC; TSYNC_ESRCH is what makes
 * TSYNC combinable with NEW_LISTENER), then a dedicated supervisor thread
 * serves the listener.  That thread is itself under the filter - threads
 * created later inherit it - and that is safe because it never issues one
 * of the three trapped requests: it only calls the listener's own ioctls,
 * process_vm_*, pidfd_* and the model, which is plain memory.  (The facts
 * file's fork-first arrangement puts the supervisor outside the filter; it
 * is what vgic-sim-run does.  In-process, a thread is enough and keeps the
 * test's direct API and the supervisor in one address space.)  Children
 * forked afterwards inherit the filter, and their notifications arrive on
 * the same listener, so a sim fd passed to another process over SCM_RIGHTS
 * keeps working.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vgic-sim-private.h"

#if defined(__x86_64__)
#define VGIC_SIM_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define VGIC_SIM_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "vgic-sim: add this architecture's AUDIT_ARCH"
#endif

#if G_BYTE_ORDER == G_LITTLE_ENDIAN
#define ARG1_LOW offsetof (struct seccomp_data, args[1])
#else
#define ARG1_LOW (offsetof (struct seccomp_data, args[1]) + 4)
#endif

#define CACHE_SIZE 32

static int
sys_seccomp (unsigned int op, unsigned int flags, void *args)
{
  return (int) syscall (SYS_seccomp, op, flags, args);
}

int
vgic_sim_filter_install (gboolean all_threads, GError **error)
{
  struct sock_filter code[] = {
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, arch)),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, VGIC_SIM_AUDIT_ARCH, 1, 0),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 1, 0),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, ARG1_LOW),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, (guint32) KVM_GET_DEVICE_ATTR, 3, 0),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, (guint32) KVM_SET_DEVICE_ATTR, 2, 0),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, (guint32) KVM_HAS_DEVICE_ATTR, 1, 0),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
  };
  struct sock_fprog prog = { .len = G_N_ELEMENTS (code), .filter = code };
  unsigned int flags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
  int listener;

  /* Unprivileged processes need no_new_privs to install a filter. */
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    {
      g_set_error (error, VGIC_SIM_ERROR, 0, "PR_SET_NO_NEW_PRIVS: %s",
                   g_strerror (errno));
      return -1;
    }
  if (all_threads)
    flags |= SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
  listener = sys_seccomp (SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (listener < 0)
    {
      int e = errno;

      /* EBUSY: this process already has a listener in its filter chain. */
      g_set_error (error, VGIC_SIM_ERROR, 0,
                   "installing the vgic-sim seccomp filter: %s%s", g_strerror (e),
                   e == ESRCH ? " (a thread could not be synchronised)" : "");
      errno = e;	/* callers look at it (vgic-sim-run) */
      return -1;
    }
  return listener;
}

/* ------------------------------------------------------------------ */
/* The server                                                         */
/* ------------------------------------------------------------------ */

typedef struct {
  dev_t dev;
  ino_t ino;
  VgicSimShm *m;
  gsize size;
} CacheEntry;

struct _VgicSimServer {
  int listener;
  struct seccomp_notif *req;
  struct seccomp_notif_resp *resp;
  gsize req_size, resp_size;
  CacheEntry cache[CACHE_SIZE];
  guint next;	/* round-robin eviction */
};

VgicSimServer *
vgic_sim_server_new (int listener, GError **error)
{
  struct seccomp_notif_sizes sizes;
  VgicSimServer *s;

  /* The kernel may use bigger structures than our headers know. */
  if (sys_seccomp (SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
    {
      g_set_error (error, VGIC_SIM_ERROR, 0, "SECCOMP_GET_NOTIF_SIZES: %s",
                   g_strerror (errno));
      return NULL;
    }
  s = g_new0 (VgicSimServer, 1);
  s->listener = listener;
  s->req_size = MAX (sizes.seccomp_notif, sizeof (struct seccomp_notif));
  s->resp_size = MAX (sizes.seccomp_notif_resp, sizeof (struct seccomp_notif_resp));
  s->req = g_malloc0 (s->req_size);
  s->resp = g_malloc0 (s->resp_size);
  return s;
}

void
vgic_sim_server_free (VgicSimServer *s)
{
  if (!s)
    return;
  for (guint i = 0; i < CACHE_SIZE; i++)
    if (s->cache[i].m)
      munmap (s->cache[i].m, s->cache[i].size);
  close (s->listener);
  g_free (s->req);
  g_free (s->resp);
  g_free (s);
}

/* The thread group of @tid, from /proc (pidfd_open wants a leader). */
static pid_t
tgid_of (pid_t tid)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) tid);
  g_autofree char *text = NULL;
  const char *p;

  if (!g_file_get_contents (path, &text, NULL, NULL))
    return -1;
  p = strstr (text, "\nTgid:");
  return p ? (pid_t) atoi (p + 6) : -1;
}

/* A copy of fd @fd of thread @tid, or -1. */
static int
fetch_fd (VgicSimServer *s, pid_t tid, int fd, guint64 id)
{
  int pidfd, copy;

  /* A thread that is not its group's leader: pidfd_open says EINVAL on
   * older kernels, ENOENT on newer ones; go through the thread group. */
  pidfd = pidfd_open (tid, 0);
  if (pidfd < 0 && (errno == EINVAL || errno == ENOENT))
    {
      pid_t tgid = tgid_of (tid);

      pidfd = tgid > 0 ? pidfd_open (tgid, 0) : -1;
    }
  if (pidfd < 0)
    return -1;
  /* The pidfd pins the task: if the notification is still valid now, the
   * pidfd names the caller and not a recycled tid. */
  if (ioctl (s->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0)
    {
      close (pidfd);
      return -1;
    }
  copy = pidfd_getfd (pidfd, fd, 0);
  close (pidfd);
  return copy;
}

/* The model behind @fd (mapped once per memfd), or NULL if it is not one. */
static VgicSimShm *
model_of (VgicSimServer *s, int fd)
{
  struct stat st;
  VgicSimShm header;
  CacheEntry *e;
  void *p;

  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) ||
      (gsize) st.st_size < sizeof header)
    return NULL;
  /* A cached mapping keeps its memfd alive, so its inode cannot be reused. */
  for (guint i = 0; i < CACHE_SIZE; i++)
    if (s->cache[i].m && s->cache[i].dev == st.st_dev && s->cache[i].ino == st.st_ino)
      return s->cache[i].m;
  if (pread (fd, &header, sizeof header, 0) != (ssize_t) sizeof header ||
      !vgic_sim_shm_check (&header, (gsize) st.st_size))
    return NULL;
  p = mmap (NULL, header.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return NULL;
  e = &s->cache[s->next];
  s->next = (s->next + 1) % CACHE_SIZE;
  if (e->m)
    munmap (e->m, e->size);
  e->dev = st.st_dev;
  e->ino = st.st_ino;
  e->m = p;
  e->size = header.total_size;
  return p;
}

/* The caller's memory, through process_vm_{readv,writev}. */
static int
peer_read (void *ctx, guint64 addr, void *buf, gsize len)
{
  struct iovec local = { buf, len }, remote = { (void *) (uintptr_t) addr, len };

  return process_vm_readv (GPOINTER_TO_INT (ctx), &local, 1, &remote, 1, 0) ==
         (ssize_t) len ? 0 : -EFAULT;
}

static int
peer_write (void *ctx, guint64 addr, const void *buf, gsize len)
{
  struct iovec local = { (void *) buf, len }, remote = { (void *) (uintptr_t) addr, len };

  return process_vm_writev (GPOINTER_TO_INT (ctx), &local, 1, &remote, 1, 0) ==
         (ssize_t) len ? 0 : -EFAULT;
}

gboolean
vgic_sim_server_handle (VgicSimServer *s)
{
  struct seccomp_notif *req = s->req;
  struct seccomp_notif_resp *resp = s->resp;
  VgicSimShm *m;
  int fd;

  memset (req, 0, s->req_size);
  if (ioctl (s->listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
    /* EINTR: a signal; ENOENT: the caller went away before we got it. */
    return errno == EINTR || errno == ENOENT;

  memset (resp, 0, s->resp_size);
  resp->id = req->id;
  fd = fetch_fd (s, (pid_t) req->pid, (int) req->data.args[0], req->id);
  m = fd >= 0 ? model_of (s, fd) : NULL;
  if (!m)
    /* Not ours (or not an fd at all): let the kernel run the real ioctl. */
    resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  else
    {
      VgicSimUser user = { peer_read, peer_write, GINT_TO_POINTER (req->pid) };

      resp->error = vgic_sim_device_ioctl (m, (unsigned int) req->data.args[1],
                                           req->data.args[2], &user);
    }
  if (fd >= 0)
    close (fd);
  /* ENOENT here means the caller was interrupted: nothing to do. */
  (void) ioctl (s->listener, SECCOMP_IOCTL_NOTIF_SEND, resp);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* In-process supervision                                             */
/* ------------------------------------------------------------------ */

static gpointer
supervisor_thread (gpointer data)
{
  VgicSimServer *s = data;

  while (vgic_sim_server_handle (s))
    ;
  g_warning ("vgic-sim: supervisor stopped: %s", g_strerror (errno));
  return NULL;
}

gboolean
vgic_sim_supervise_self (GError **error)
{
  static gboolean started;
  G_LOCK_DEFINE_STATIC (started);
  VgicSimServer *s;
  GThread *thread;
  int listener;

  G_LOCK (started);
  if (started || g_getenv (VGIC_SIM_SUPERVISED_ENV))
    {
      G_UNLOCK (started);
      return TRUE;
    }
  listener = vgic_sim_filter_install (TRUE, error);
  if (listener < 0)
    goto fail;
  s = vgic_sim_server_new (listener, error);
  if (!s)
    {
      close (listener);
      goto fail;
    }
  thread = g_thread_try_new ("vgic-sim-supervisor", supervisor_thread, s, error);
  if (!thread)
    {
      /* The filter stays: trapped calls would now fail with ENOSYS. */
      vgic_sim_server_free (s);
      goto fail;
    }
  g_thread_unref (thread);
  started = TRUE;
  G_UNLOCK (started);
  return TRUE;

fail:
  G_UNLOCK (started);
  return FALSE;
}
