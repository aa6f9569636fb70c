/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-session.c - libFuzzer target for what a peer sends a session:
 * Attach's a{sv}, the Session1 methods' arguments, Next's report, the
 * step channel's packets and whatever it writes into the shared window.
 *
 * Theory of operation
 *
 * The fuzzer plays the peer, which the threat model says may be a
 * compromised QEMU.  vgicd never touches a vGIC itself (the peer executes
 * its plans), so there is no device in this picture: the peer's answers
 * are whatever the input says.  To get past the first step, where almost
 * every random answer ends the operation, the input can also ask for an
 * honest execution: the harness then reads the step out of the window as
 * libvgicd would, gives every read a value that depends only on the
 * register (tests/support/fake-save.c, so that a save and a load of the
 * same VM agree and the guards hold), and reports what it did, optionally
 * with one thing wrong.  A save that ends gives a real record, which later
 * loads can replay as it is or mutated.
 *
 * The input is a small program:
 *
 *   flags   bit 0 channel, 1 guards, 2 record-window, 3 single, 4 off,
 *           5 kernel batch, 6 Record=, 7 Attach's a{sv} comes raw
 *   shape   vCPUs, IRQs, seed, PRIbits, PLPIS (or: u16 length, a{sv} bytes)
 *   ops     one byte each, then that op's operands (see run_op())
 *
 * The calls reach vgicd's state machine exactly as vgicd-session-dbus.c's
 * handlers pass them (one line per method: D-Bus itself has already typed
 * the arguments); the channel's packets go through a real SOCK_SEQPACKET
 * socket into vgicd-channel.c, which parses them.  The session is exported
 * on a real GDBusConnection over a socket pair.
 *
 * What must hold, whatever the input (else abort(), which libFuzzer
 * reports): every answer is a step of the protocol (an action vgicd
 * defines, a count that fits the window, a failure with a reason and a
 * printable message); an answer that ends an operation leaves none in
 * progress; a record vgicd hands out decodes against the VM; a load is
 * never said to have been refused with nothing written after the harness
 * executed one of its writes; and after each input no session and no fd
 * is left behind.  ASan and UBSan catch the rest.  GLib criticals abort.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crc32c.h"
#include "fake-save.h"
#include "vgic-record.h"
#include "vgicd-reaper.h"
#include "vgicd-session-private.h"
#include "vgicd/protocol.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define BYSTANDERS_MAX 3

/* ------------------------------------------------------------------ */
/* The input                                                          */
/* ------------------------------------------------------------------ */

typedef struct {
  const guint8 *p;
  gsize n;
} Input;

static guint8
take_u8 (Input *in)
{
  guint8 v;

  if (!in->n)
    return 0;
  v = *in->p++;
  in->n--;
  return v;
}

static guint16
take_u16 (Input *in)
{
  return (guint16) (take_u8 (in) | take_u8 (in) << 8);
}

static guint32
take_u32 (Input *in)
{
  return take_u16 (in) | (guint32) take_u16 (in) << 16;
}

/* Up to @len bytes (fewer when the input ends). */
static GBytes *
take_bytes (Input *in, gsize len)
{
  GBytes *b;

  len = MIN (len, in->n);
  b = g_bytes_new (in->p, len);
  in->p += len;
  in->n -= len;
  return b;
}

/* Copy @b into @dst, at most @max bytes (an empty GBytes has no data
 * pointer, which memcpy() may not be given); returns the bytes copied. */
static gsize
copy_in (void *dst, GBytes *b, gsize max)
{
  gsize len = MIN (g_bytes_get_size (b), max);

  if (len)
    memcpy (dst, g_bytes_get_data (b, NULL), len);
  return len;
}

/* A GVariant of @type from the input, as GDBus hands an argument over:
 * untrusted bytes, read in normal form. */
static GVariant *
take_variant (Input *in, const char *type)
{
  g_autoptr (GBytes) b = take_bytes (in, take_u16 (in));
  g_autoptr (GVariant) v = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE (type),
                                                                         b, FALSE));

  return g_variant_get_normal_form (v);
}

/* ------------------------------------------------------------------ */
/* The world: one daemon, one connection, made once                   */
/* ------------------------------------------------------------------ */

static VgicdDaemon daemon_state;
static GDBusConnection *connection;
static int connection_peer = -1;

static GLogWriterOutput
quiet_writer (GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  (void) fields;
  (void) n;
  (void) data;
  /* vgicd's own warnings are expected (that is what bad input gets); a
   * critical is a GLib precondition a peer managed to break. */
  if (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR))
    abort ();
  return G_LOG_WRITER_HANDLED;
}

static void
world_init (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocket) socket = NULL;
  g_autoptr (GSocketConnection) stream = NULL;
  int sv[2];

  if (connection)
    return;
  if (!g_getenv ("FUZZ_VERBOSE"))
    g_log_set_writer_func (quiet_writer, NULL, NULL);
  daemon_state.config = vgicd_config_load ("/nonexistent/vgicd.conf", &error);
  if (!daemon_state.config)
    g_error ("defaults: %s", error->message);
  /* Its inert socket, before the first count of descriptors. */
  vgicd_reaper_start ();
  daemon_state.vms_conf = "/nonexistent/vms.conf";
  daemon_state.vms_dir = "/nonexistent/vms.d";
  daemon_state.sessions = g_ptr_array_new ();
  daemon_state.kernel_batch_source = g_strdup ("fuzz-session");
  daemon_state.start_usec = g_get_monotonic_time ();

  /* A peer-to-peer connection needs no handshake when neither end asks
   * for one; the other end is held open and never read (vgicd sends
   * nothing on export). */
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    g_error ("socketpair: %s", g_strerror (errno));
  socket = g_socket_new_from_fd (sv[0], &error);
  if (!socket)
    g_error ("socket: %s", error->message);
  stream = g_socket_connection_factory_create_connection (socket);
  connection = g_dbus_connection_new_sync (G_IO_STREAM (stream), NULL,
                                           G_DBUS_CONNECTION_FLAGS_NONE, NULL, NULL, &error);
  if (!connection)
    g_error ("connection: %s", error->message);
  connection_peer = sv[1];
}

static guint
count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  guint n = 0;

  if (!d)
    return 0;
  while (readdir (d))
    n++;
  closedir (d);
  return n;
}

/* ------------------------------------------------------------------ */
/* One peer                                                           */
/* ------------------------------------------------------------------ */

typedef struct {
  VgicdSession *s;
  GVariant *vm;		/* the Attach argument, for re-attaching */
  int channel;		/* the peer's end, or -1 */
  guint32 seed;
  gboolean plpis;
  guint pri_bits;
  GVariant *step;	/* the last answer */
  gboolean wrote;	/* a write of the operation in progress was executed */
  GBytes *record;	/* the last record a save handed out */
  VgicdSession *bystanders[BYSTANDERS_MAX];
  guint n_bystanders;
} Peer;

static GVariant *
structured_vm (Input *in, guint8 flags, Peer *p)
{
  GVariantBuilder b, features;
  guint32 vcpus = 1 + take_u8 (in) % 16;
  guint32 irqs = 32 * (2 + take_u8 (in) % 31);
  g_autofree guint32 *mpidrs = g_new (guint32, vcpus);

  p->seed = take_u8 (in);
  p->pri_bits = 5 + take_u8 (in) % 3;
  p->plpis = take_u8 (in) & 1;
  for (guint32 i = 0; i < vcpus; i++)
    mpidrs[i] = vgic_default_mpidr (i);
  g_variant_builder_init (&features, G_VARIANT_TYPE_STRING_ARRAY);
  if (flags & 1)
    g_variant_builder_add (&features, "s", VGICD_FEATURE_CHANNEL);
  if (flags & 2)
    g_variant_builder_add (&features, "s", VGICD_FEATURE_GUARDS);
  if (flags & 4)
    g_variant_builder_add (&features, "s", VGICD_FEATURE_RECORD_WINDOW);
  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", VGICD_VM_NAME, g_variant_new_string ("fuzz"));
  g_variant_builder_add (&b, "{sv}", VGICD_VM_NR_IRQS, g_variant_new_uint32 (irqs));
  g_variant_builder_add (&b, "{sv}", VGICD_VM_MPIDRS,
                         g_variant_new_fixed_array (G_VARIANT_TYPE_UINT32, mpidrs, vcpus,
                                                    sizeof (guint32)));
  g_variant_builder_add (&b, "{sv}", VGICD_VM_KERNEL_BATCH,
                         g_variant_new_boolean ((flags & 32) != 0));
  g_variant_builder_add (&b, "{sv}", VGICD_VM_FEATURES, g_variant_builder_end (&features));
  return g_variant_ref_sink (g_variant_builder_end (&b));
}

static VgicdSession *
attach (GVariant *vm)
{
  g_autoptr (GError) error = NULL;
  guint before = daemon_state.sessions->len;
  VgicdSession *s = vgicd_session_new (&daemon_state, connection, vm, 1000, 1, &error);

  if (!s && (!error || !error->message || !*error->message ||
             daemon_state.sessions->len != before))
    abort ();
  /* A batch group is driven only when verified: by the peer's probe, or,
   * when the peer could not tell, by vgicd's own (seed-raw-attach: a peer
   * claiming a group of another ABI was once planned batches). */
  if (s && s->kernel_batch && strcmp (s->kernel_batch_abi, VGICD_BATCH_ABI_OURS) != 0 &&
      !(strcmp (s->kernel_batch_abi, VGICD_BATCH_ABI_UNKNOWN) == 0 &&
        daemon_state.kernel_batch_probed && daemon_state.kernel_batch == 1 &&
        !daemon_state.kernel_batch_foreign))
    abort ();
  return s;
}

static gboolean
printable (const char *text)
{
  if (!g_utf8_validate (text, -1, NULL))
    return FALSE;
  for (const char *c = text; *c; c = g_utf8_next_char (c))
    if (!g_unichar_isprint (g_utf8_get_char (c)))
      return FALSE;
  return TRUE;
}

/* Is @step an answer of the protocol?  Keeps it as the last answer. */
static void
check_answer (Peer *p, GVariant *step)
{
  const char *action = NULL;

  g_clear_pointer (&p->step, g_variant_unref);
  p->step = g_variant_ref_sink (step);
  if (!g_variant_is_of_type (step, G_VARIANT_TYPE_VARDICT) ||
      !g_variant_lookup (step, VGICD_STEP_ACTION, "&s", &action))
    abort ();
  if (!strcmp (action, VGICD_ACTION_READ) || !strcmp (action, VGICD_ACTION_WRITE))
    {
      guint32 count = 0, guard = 0;

      if (!g_variant_lookup (step, VGICD_STEP_COUNT, "u", &count))
        abort ();
      g_variant_lookup (step, VGICD_STEP_GUARD, "u", &guard);
      if (count == 0 || (guint64) count + guard > p->s->window->capacity ||
          !vgicd_steps_operation (p->s))
        abort ();
      return;
    }
  /* Every other answer ends the operation, if one was in progress. */
  if (vgicd_steps_operation (p->s))
    abort ();
  p->wrote = FALSE;
  if (!strcmp (action, VGICD_ACTION_FAIL))
    {
      const char *reason = NULL, *message = NULL;

      if (!g_variant_lookup (step, VGICD_STEP_MESSAGE, "&s", &message) || !*message ||
          !printable (message))
        abort ();
      /* "Next with no operation" has no reason; every other failure has. */
      if (g_variant_lookup (step, VGICD_STEP_REASON, "&s", &reason) &&
          strcmp (reason, VGICD_REASON_REFUSED) && strcmp (reason, VGICD_REASON_DEVICE) &&
          strcmp (reason, VGICD_REASON_INTERNAL))
        abort ();
      return;
    }
  if (!strcmp (action, VGICD_ACTION_DONE))
    {
      g_autoptr (GVariant) bytes = NULL;
      g_autoptr (GError) error = NULL;
      g_autoptr (VgicRecord) rec = NULL;
      guint32 size = 0;

      if (g_variant_lookup (step, VGICD_STEP_RECORD_SIZE, "u", &size))
        {
          if (size == 0 || size > p->s->window->size)
            abort ();
          g_clear_pointer (&p->record, g_bytes_unref);
          p->record = g_bytes_new (p->s->window->entries, size);
        }
      else if ((bytes = g_variant_lookup_value (step, VGICD_STEP_RECORD,
                                                G_VARIANT_TYPE_BYTESTRING)))
        {
          g_clear_pointer (&p->record, g_bytes_unref);
          p->record = g_variant_get_data_as_bytes (bytes);
        }
      else
        return;
      rec = vgic_record_load (g_bytes_get_data (p->record, NULL), g_bytes_get_size (p->record),
                              p->s->shape, &error);
      if (!rec)
        abort ();
      return;
    }
  if (strcmp (action, VGICD_ACTION_DECLINED))
    abort ();
}

/* Did vgicd say a load was refused with nothing written, when the peer
 * had written?  Checked before check_answer() forgets the operation. */
static void
check_refusal (Peer *p, GVariant *step)
{
  const char *reason = NULL;

  if (p->wrote && g_variant_lookup (step, VGICD_STEP_REASON, "&s", &reason) &&
      !strcmp (reason, VGICD_REASON_REFUSED))
    abort ();
}

static void
answer (Peer *p, GVariant *step)
{
  g_variant_ref_sink (step);
  check_refusal (p, step);
  check_answer (p, step);
  g_variant_unref (step);
}

/* ------------------------------------------------------------------ */
/* The peer's executor                                                */
/* ------------------------------------------------------------------ */

/* Run the last step as libvgicd would, then spoil the report as @how says,
 * and build the report. */
static GVariant *
execute (Peer *p, guint8 how, guint8 arg)
{
  GVariantBuilder b;
  const char *action = NULL;
  guint32 count = 0, guard = 0, done;
  gint32 err = 0;
  guint32 index = 0, guard_bad = G_MAXUINT32;
  g_autoptr (GVariant) ranges = NULL;
  g_autoptr (VgicList) run = NULL;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  if (!p->step || !g_variant_lookup (p->step, VGICD_STEP_ACTION, "&s", &action) ||
      !g_variant_lookup (p->step, VGICD_STEP_COUNT, "u", &count))
    return g_variant_builder_end (&b);	/* an empty report */
  g_variant_lookup (p->step, VGICD_STEP_GUARD, "u", &guard);
  ranges = g_variant_lookup_value (p->step, VGICD_STEP_GUARD_RANGES, G_VARIANT_TYPE ("a(ttt)"));

  /* The reads (of a read step, or a write step's guards) get the VM's
   * values; writes are taken as they are. */
  run = vgic_list_new_from (p->s->window->entries, guard + count);
  if (!strcmp (action, VGICD_ACTION_READ))
    fake_save_fill (run, p->seed, p->plpis, p->pri_bits);
  else if (guard)
    {
      g_autoptr (VgicList) g = vgic_list_new_from (run->entries, guard);

      fake_save_fill (g, p->seed, p->plpis, p->pri_bits);
      memcpy (run->entries, g->entries, guard * sizeof (VgicEntry));
      for (guint32 i = 0; ranges && i < guard && i < g_variant_n_children (ranges); i++)
        {
          guint64 mask, min, max;

          g_variant_get_child (ranges, i, "(ttt)", &mask, &min, &max);
          if ((run->entries[i].value & mask) < min || (run->entries[i].value & mask) > max)
            {
              guard_bad = i;
              break;
            }
        }
    }
  done = count;
  switch (how % 8)
    {
    case 1:	/* a count that is not what ran */
      done = count + (arg & 1 ? 1 : -1);
      break;
    case 2:	/* a kernel error at some entry */
      index = guard + arg % count;
      done = index - guard;
      err = -(gint32) (1 + arg % 40);
      break;
    case 3:	/* an access that is not the one laid out */
      run->entries[arg % run->len].attr ^= 4;
      break;
    case 4:	/* a guard that failed */
      guard_bad = arg;
      break;
    case 5:	/* no batch group after all */
      done = 0;
      err = -ENXIO;
      break;
    case 6:	/* an errno no kernel returns */
      err = arg & 1 ? G_MININT32 : G_MAXINT32;
      done = arg >> 1;
      break;
    case 7:	/* a value too wide for its register */
      run->entries[arg % run->len].value |= (guint64) 1 << (32 + arg % 32);
      break;
    default:
      break;
    }
  memcpy (p->s->window->entries, run->entries, run->len * sizeof (VgicEntry));
  if (!strcmp (action, VGICD_ACTION_WRITE) && guard_bad == G_MAXUINT32 && how % 8 != 4 &&
      (err == 0 || done > 0))
    p->wrote = TRUE;
  g_variant_builder_add (&b, "{sv}", VGICD_REPORT_DONE, g_variant_new_uint32 (done));
  if (err)
    {
      g_variant_builder_add (&b, "{sv}", VGICD_REPORT_ERROR, g_variant_new_int32 (err));
      g_variant_builder_add (&b, "{sv}", VGICD_REPORT_ERROR_INDEX, g_variant_new_uint32 (index));
    }
  if (guard_bad != G_MAXUINT32)
    g_variant_builder_add (&b, "{sv}", VGICD_REPORT_GUARD_FAILED, g_variant_new_uint32 (guard_bad));
  g_variant_builder_add (&b, "{sv}", VGICD_REPORT_IOCTLS, g_variant_new_uint32 (1 + count / 4096));
  g_variant_builder_add (&b, "{sv}", VGICD_REPORT_NS, g_variant_new_uint64 (1000));
  return g_variant_builder_end (&b);
}

/* The last record, or input bytes, possibly mutated: what a load sends. */
static GBytes *
record_bytes (Peer *p, Input *in)
{
  guint8 how = take_u8 (in);
  g_autoptr (GByteArray) a = NULL;
  guint flips;

  if (how % 3 == 1 || !p->record)
    return take_bytes (in, take_u16 (in));
  a = g_byte_array_new ();
  g_byte_array_append (a, g_bytes_get_data (p->record, NULL), g_bytes_get_size (p->record));
  if (how % 3 == 2 && a->len)
    {
      flips = 1 + take_u8 (in) % 8;
      for (guint i = 0; i < flips; i++)
        {
          guint16 off = take_u16 (in);

          a->data[off % a->len] ^= take_u8 (in);
        }
      /* Past the checksum too, where the interesting checks are. */
      if (how & 8 && a->len >= 4)
        {
          guint32 crc = crc32c (0, a->data, a->len - 4);

          for (int i = 0; i < 4; i++)
            a->data[a->len - 4 + i] = (guint8) (crc >> (8 * i));
        }
    }
  return g_byte_array_free_to_bytes (g_steal_pointer (&a));
}

/* QEMU's own restore of the last record's values, as LoadList expects it
 * in the window (or input entries); returns the count to pass. */
static guint32
lay_out_list (Peer *p, Input *in)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) rec = NULL;
  g_autoptr (VgicList) writes = NULL;

  if (take_u8 (in) & 1 || !p->record ||
      !(rec = vgic_record_load (g_bytes_get_data (p->record, NULL),
                                g_bytes_get_size (p->record), p->s->shape, &error)) ||
      !(writes = vgic_plan_restore_write (p->s->shape, rec->values, FALSE, &error)))
    {
      g_autoptr (GBytes) raw = take_bytes (in, take_u16 (in));

      copy_in (p->s->window->entries, raw, p->s->window->size);
      return take_u32 (in);
    }
  memcpy (p->s->window->entries, writes->entries, writes->len * sizeof (VgicEntry));
  if (take_u8 (in) & 1)
    p->s->window->entries[take_u16 (in) % writes->len].value ^= take_u8 (in);
  return writes->len;
}

/* ------------------------------------------------------------------ */
/* The step channel, through its socket                               */
/* ------------------------------------------------------------------ */

/* Send one packet and take vgicd's answer, if it gives one. */
static void
channel_send (Peer *p, const void *packet, gsize len)
{
  g_autofree guint8 *buf = NULL;
  ssize_t n = -1;

  if (p->channel < 0 || send (p->channel, packet, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
    return;
  buf = g_malloc (VGICD_CHANNEL_MAX);
  for (int i = 0; i < 8 && n < 0; i++)
    {
      g_main_context_iteration (NULL, FALSE);
      n = recv (p->channel, buf, VGICD_CHANNEL_MAX, MSG_DONTWAIT);
    }
  if (n == 0)
    {
      /* vgicd closed the channel: what it does with a packet it cannot
       * take.  The session stays. */
      close (p->channel);
      p->channel = -1;
      return;
    }
  if (n < 0)
    abort ();		/* neither an answer nor a close */
  {
    g_autoptr (GBytes) bytes = g_bytes_new (buf, (gsize) n);
    g_autoptr (GVariant) v = g_variant_ref_sink (g_variant_new_from_bytes (
        G_VARIANT_TYPE (VGICD_CHANNEL_ANSWER_TYPE), bytes, FALSE));

    if (!g_variant_is_normal_form (v))
      abort ();
    answer (p, g_variant_get_child_value (v, 0));
  }
}

static void
channel_call (Peer *p, guint32 method, GVariant *args)
{
  g_autoptr (GVariant) a = g_variant_ref_sink (args);
  VgicdChannelHeader h = { .method = method };
  gsize len = sizeof h + g_variant_get_size (a);
  g_autofree guint8 *packet = g_malloc (len);

  if (method != VGICD_CHANNEL_NEXT)
    p->wrote = FALSE;	/* as in run_op() */
  memcpy (packet, &h, sizeof h);
  g_variant_store (a, packet + sizeof h);
  channel_send (p, packet, len);
}

/* ------------------------------------------------------------------ */
/* The program                                                        */
/* ------------------------------------------------------------------ */

static void
reattach (Peer *p)
{
  if (p->channel >= 0)
    close (p->channel);
  p->channel = -1;
  g_clear_pointer (&p->s, vgicd_session_free);
  g_clear_pointer (&p->step, g_variant_unref);
  p->wrote = FALSE;
  p->s = attach (p->vm);
  if (p->s)
    p->channel = vgicd_session_take_peer_channel (p->s);
}

static void
run_op (Peer *p, Input *in)
{
  guint8 op = take_u8 (in);

  /* A call that starts an operation drops the one in progress: what the
   * peer wrote belonged to that one. */
  if (op % 13 <= 4)
    p->wrote = FALSE;
  switch (op % 13)
    {
    case 0:
      answer (p, vgicd_steps_save (p->s));
      break;
    case 1:
      answer (p, vgicd_steps_save_fields (p->s));
      break;
    case 2:
      {
        g_autoptr (GBytes) rec = record_bytes (p, in);
        gsize len;
        const guint8 *d = g_bytes_get_data (rec, &len);

        answer (p, vgicd_steps_load (p->s, d, len));
      }
      break;
    case 3:
      {
        g_autoptr (GBytes) rec = record_bytes (p, in);
        gsize len = copy_in (p->s->window->entries, rec, p->s->window->size);
        guint32 size = take_u8 (in) & 1 ? take_u32 (in) : (guint32) len;

        answer (p, vgicd_steps_load_window (p->s, size));
      }
      break;
    case 4:
      answer (p, vgicd_steps_load_list (p->s, lay_out_list (p, in)));
      break;
    case 5:
      {
        guint8 how = take_u8 (in), arg = take_u8 (in);
        g_autoptr (GVariant) report = g_variant_ref_sink (execute (p, how, arg));

        answer (p, vgicd_steps_next (p->s, report));
      }
      break;
    case 6:
      {
        g_autoptr (GVariant) report = take_variant (in, "a{sv}");

        answer (p, vgicd_steps_next (p->s, report));
      }
      break;
    case 7:	/* a raw packet */
      {
        g_autoptr (GBytes) packet = take_bytes (in, take_u16 (in));
        gsize len;
        const guint8 *d = g_bytes_get_data (packet, &len);

        channel_send (p, len ? d : (const guint8 *) "", len);
      }
      break;
    case 8:	/* a call through the channel, honest or not */
      {
        guint8 m = take_u8 (in);

        switch (m % 4)
          {
          case 0:
            channel_call (p, VGICD_CHANNEL_SAVE, g_variant_new ("()"));
            break;
          case 1:
            channel_call (p, VGICD_CHANNEL_SAVE_FIELDS, g_variant_new ("()"));
            break;
          case 2:
            {
              guint8 how = take_u8 (in), arg = take_u8 (in);

              channel_call (p, VGICD_CHANNEL_NEXT,
                            g_variant_new ("(@a{sv})", execute (p, how, arg)));
            }
            break;
          default:
            {
              g_autoptr (GBytes) rec = record_bytes (p, in);
              gsize len = copy_in (p->s->window->entries, rec, p->s->window->size);

              channel_call (p, m & 4 ? VGICD_CHANNEL_LOAD_LIST : VGICD_CHANNEL_LOAD_WINDOW,
                            g_variant_new ("(u)", m & 4 ? take_u32 (in) : (guint32) len));
            }
            break;
          }
      }
      break;
    case 9:	/* the peer writes into the window whenever it likes */
      {
        guint32 off = take_u16 (in) % p->s->window->size;
        g_autoptr (GBytes) b = take_bytes (in, take_u8 (in));

        copy_in ((guint8 *) p->s->window->entries + off, b, p->s->window->size - off);
      }
      break;
    case 10:	/* QEMU exits, or vgicd restarts, and QEMU attaches again */
      reattach (p);
      break;
    case 11:	/* another VM attaches (the host's save guess is a vote) */
      if (p->n_bystanders < BYSTANDERS_MAX)
        {
          VgicdSession *b = attach (p->vm);

          if (b)
            p->bystanders[p->n_bystanders++] = b;
        }
      break;
    default:	/* the operator changes the host's mode */
      daemon_state.mode = (VgicdMode) (take_u8 (in) % 3);
      break;
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  Input in = { data, size };
  Peer p = { .channel = -1 };
  guint8 flags;
  guint fds;
  guint steps = 0;

  world_init ();
  fds = count_fds ();
  flags = take_u8 (&in);
  daemon_state.mode = flags & 16 ? VGICD_MODE_OFF : flags & 8 ? VGICD_MODE_SINGLE
                                                             : VGICD_MODE_AUTO;
  daemon_state.config->record = (flags & 64) != 0;
  daemon_state.kernel_batch = 1;
  daemon_state.kernel_batch_probed = TRUE;
  if (flags & 128)
    {
      p.vm = g_variant_ref_sink (take_variant (&in, "a{sv}"));
      p.seed = take_u8 (&in);
      p.pri_bits = 5 + take_u8 (&in) % 3;
      p.plpis = take_u8 (&in) & 1;
    }
  else
    p.vm = structured_vm (&in, flags, &p);
  p.s = attach (p.vm);
  if (p.s)
    p.channel = vgicd_session_take_peer_channel (p.s);
  /* A bound on the steps keeps one input's time bounded. */
  while (p.s && in.n && steps++ < 256)
    run_op (&p, &in);

  if (p.channel >= 0)
    close (p.channel);
  g_clear_pointer (&p.s, vgicd_session_free);
  for (guint i = 0; i < p.n_bystanders; i++)
    vgicd_session_free (p.bystanders[i]);
  g_clear_pointer (&p.step, g_variant_unref);
  g_clear_pointer (&p.record, g_bytes_unref);
  g_clear_pointer (&p.vm, g_variant_unref);
  /* Let the closed channels' sources go, and the reaper thread close
   * their sockets (vgicd-reaper.c). */
  while (g_main_context_iteration (NULL, FALSE))
    ;
  while (vgicd_reaper_pending ())
    g_usleep (100);
  if (daemon_state.sessions->len != 0 || count_fds () != fds)
    abort ();
  return 0;
}
