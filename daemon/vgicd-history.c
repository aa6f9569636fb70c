/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-history.c - the operations vgicd keeps after their session ends
 * (see vgicd-history.h).
 *
 * Theory of operation.  Each VM has a ring of its last History=
 * operations; the VMs are kept in a hash table and in a queue ordered by
 * their last operation, so that when HistoryVMs= VMs are kept, the one
 * that was active longest ago is dropped, in O(1).  Every bound is the
 * operator's, and nothing a peer sends grows anything beyond them: a
 * peer's UUID and name are checked at Attach (vgicd-session.c), and a
 * failure's message is cut to 256 bytes.
 *
 * Whose history.  A UUID and a name are what the peer claims, and any
 * admitted peer may claim another VM's.  So a history VM is keyed by the
 * UUID *and* the process that ran the operations (its SO_PEERCRED pid):
 * a peer claiming another VM's UUID starts a history of its own beside
 * that VM's, which it can neither rename nor add to; each entry carries
 * the name its VM had when it ran (an attach with another name renames
 * nothing that came before) and the pid, so that GetHistory shows whose
 * entry it is.  A UUID asks for every history VM of that UUID (a VM
 * migrated within the host has its source's and its destination's), in
 * time order.  And one process adds at most HistoryVMsPerProcess= VMs: past
 * that, its own least recently active one is dropped, never another's,
 * so that a peer claiming many UUIDs cannot push honest VMs' history out
 * (HistoryVMs= still drops the least recently active VM when the
 * processes together pass it).  A pid reused by a later process continues
 * the earlier one's count, which only shortens the history of a process
 * that has gone.
 *
 * The histograms count successful operations only, per direction and
 * path: a failed save says nothing about how long saves take, and is
 * counted in GetStats' "failures".
 *
 * The one-by-one estimate.  An ioctl of the device-attr groups locks every
 * vCPU of the VM, so one register costs about a + b × vCPUs, and a whole
 * operation registers × (a + b × vCPUs).  The line (a, b) comes from
 * vgicd's start-up calibration (vgicd-calibrate.c: two throwaway VMs), for
 * both directions; the last operation this host ran one register per
 * ioctl (mode single, or a kernel without the batch group) then pins its
 * direction's line to what it measured, keeping the calibrated slope (or,
 * uncalibrated, taking a = 0: the cost proportional to the vCPUs, best
 * for VMs near the size it was measured on).  Either way it is an
 * estimate, and says so.
 *
 * What an operation teaches is vgicd's own figures, never the peer's
 * alone: the peer reports its ioctls and their time, and a hostile one
 * reports anything.  So the time is the lesser of the peer's and the
 * operation's duration as vgicd's own clock saw it (call to done), the
 * count is vgicd's (the registers it asked for, one ioctl each on that
 * path), and the cost per register is held within plausible bounds:
 * within a factor of SPREAD of the calibrated line when there is one,
 * else under MAX_BASE_NS + MAX_PER_VCPU_NS × vCPUs (far above any host
 * measured: the nested tier's 11 µs + 1.1 µs × vCPUs; and above
 * vgic-sim's one-by-one path, whose every ioctl is a seccomp round trip,
 * on a loaded machine, about 200 µs).  Every conversion to an integer is
 * clamped (ns_of()), so that no figure, whatever a peer reports, is
 * undefined behaviour.
 */
#include "vgicd-history.h"

#include <math.h>
#include <string.h>

#define MESSAGE_MAX 256

/* The bounds on one register's cost that an operation may teach (see the
 * theory above): the calibrated line × or ÷ SPREAD, or below the ceiling. */
#define SPREAD 8.0
#define MAX_BASE_NS 1e6
#define MAX_PER_VCPU_NS 100e3
/* The largest figure a conversion gives: about 31 years of ns. */
#define NS_MAX 1e18

const double vgicd_history_buckets[VGICD_HISTORY_N_BUCKETS] = {
  0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, INFINITY,
};

typedef struct _Vm Vm;

typedef struct {
  VgicdOp op;
  char *message;
  char *name;		/* the VM's name when it ran (a GRefString, shared) */
  Vm *vm;		/* whose ring it is in */
} Entry;

struct _Vm {
  char *key;		/* "uuid pid": the table's */
  char *uuid;
  gint64 pid;		/* the process whose operations these are */
  char *name;		/* as last attached (a GRefString) */
  Entry *ring;		/* per_vm slots */
  guint first, len;
  GList link;		/* in VgicdHistory.recent, data = this */
};

/* One direction's cost of a register one per ioctl: base + n × per_vcpu. */
typedef struct {
  double base, per_vcpu;
  gboolean calibrated;	/* per_vcpu is the calibration's slope */
  double cal_base, cal_per_vcpu;	/* the calibration's line, which bounds what
                                   operations teach */
  const char *source;	/* NULL: not measured; "calibration", "operation" */
} Cost;

struct _VgicdHistory {
  guint per_vm, max_vms, per_process;
  GHashTable *vms;	/* key -> Vm */
  GHashTable *of_pid;	/* pid -> how many Vms it has */
  GQueue recent;	/* Vm links, most recently active first */
  VgicdHistogram histograms[VGICD_HISTORY_N_HISTOGRAMS];	/* save/load × batch/single */
  Cost cost[2];		/* save, load */
};

static void
entry_clear (Entry *e)
{
  g_clear_pointer (&e->message, g_free);
  g_clear_pointer (&e->name, g_ref_string_release);
}

static void
vm_clear_ring (Vm *vm, guint per_vm)
{
  for (guint i = 0; i < vm->len; i++)
    entry_clear (&vm->ring[(vm->first + i) % per_vm]);
  vm->first = vm->len = 0;
}

static void
vm_free (gpointer data)
{
  Vm *vm = data;

  g_free (vm->key);
  g_free (vm->uuid);
  g_clear_pointer (&vm->name, g_ref_string_release);
  g_free (vm->ring);
  g_free (vm);
}

VgicdHistory *
vgicd_history_new (guint per_vm, guint max_vms)
{
  VgicdHistory *h = g_new0 (VgicdHistory, 1);
  static const char *const dirs[] = { "save", "load" }, *const paths[] = { "batch", "single" };

  h->per_vm = per_vm;
  h->max_vms = MAX (max_vms, 1);
  h->per_process = G_MAXUINT;
  h->vms = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, vm_free);
  h->of_pid = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  g_queue_init (&h->recent);
  for (guint i = 0; i < G_N_ELEMENTS (h->histograms); i++)
    h->histograms[i] = (VgicdHistogram) { .direction = dirs[i / 2], .path = paths[i % 2] };
  return h;
}

static void
drop_vm (VgicdHistory *h, Vm *vm)
{
  guint n = GPOINTER_TO_UINT (g_hash_table_lookup (h->of_pid, &vm->pid));

  if (n > 1)
    g_hash_table_insert (h->of_pid, g_memdup2 (&vm->pid, sizeof vm->pid), GUINT_TO_POINTER (n - 1));
  else
    g_hash_table_remove (h->of_pid, &vm->pid);
  g_queue_unlink (&h->recent, &vm->link);
  vm_clear_ring (vm, h->per_vm);
  g_hash_table_remove (h->vms, vm->key);
}

void
vgicd_history_free (VgicdHistory *h)
{
  if (!h)
    return;
  while (h->recent.head)
    drop_vm (h, h->recent.head->data);
  g_hash_table_unref (h->vms);
  g_hash_table_unref (h->of_pid);
  g_free (h);
}

void
vgicd_history_resize (VgicdHistory *h, guint per_vm, guint max_vms)
{
  max_vms = MAX (max_vms, 1);
  while (h->recent.length > max_vms)
    drop_vm (h, h->recent.tail->data);
  h->max_vms = max_vms;
  if (per_vm == h->per_vm)
    return;
  /* Each ring is laid out again, keeping its newest operations. */
  for (GList *l = h->recent.head; l; l = l->next)
    {
      Vm *vm = l->data;
      Entry *ring = g_new0 (Entry, MAX (per_vm, 1));
      guint keep = MIN (vm->len, per_vm);

      for (guint i = 0; i < vm->len; i++)
        {
          Entry *e = &vm->ring[(vm->first + i) % h->per_vm];

          if (i >= vm->len - keep)
            ring[i - (vm->len - keep)] = *e;
          else
            entry_clear (e);
        }
      g_free (vm->ring);
      vm->ring = ring;
      vm->first = 0;
      vm->len = keep;
    }
  h->per_vm = per_vm;
}

/* The least recently active history VM of @pid. */
static Vm *
oldest_of (VgicdHistory *h, gint64 pid)
{
  for (GList *l = h->recent.tail; l; l = l->prev)
    if (((Vm *) l->data)->pid == pid)
      return l->data;
  return NULL;
}

void
vgicd_history_set_vms_per_process (VgicdHistory *h, guint per_process)
{
  GHashTableIter it;
  gpointer key, value;
  g_autoptr (GArray) over = g_array_new (FALSE, FALSE, sizeof (gint64));

  h->per_process = MAX (per_process, 1);
  g_hash_table_iter_init (&it, h->of_pid);
  while (g_hash_table_iter_next (&it, &key, &value))
    if (GPOINTER_TO_UINT (value) > h->per_process)
      g_array_append_val (over, *(gint64 *) key);
  for (guint i = 0; i < over->len; i++)
    {
      gint64 pid = g_array_index (over, gint64, i);

      while (GPOINTER_TO_UINT (g_hash_table_lookup (h->of_pid, &pid)) > h->per_process)
        drop_vm (h, oldest_of (h, pid));
    }
}

static int
direction_index (const char *direction)
{
  return g_strcmp0 (direction, "load") == 0;
}

void
vgicd_history_calibrated (VgicdHistory *h, double base_ns, double per_vcpu_ns)
{
  for (guint i = 0; i < G_N_ELEMENTS (h->cost); i++)
    h->cost[i] = (Cost) { .base = base_ns, .per_vcpu = per_vcpu_ns, .calibrated = TRUE,
                          .cal_base = base_ns, .cal_per_vcpu = per_vcpu_ns,
                          .source = "calibration" };
}

/* @x ns as an integer: NaN and below 0 are 0, above NS_MAX is NS_MAX (a
 * cast of a double out of guint64's range is undefined behaviour). */
static guint64
ns_of (double x)
{
  if (!(x > 0))
    return 0;
  return x >= NS_MAX ? (guint64) NS_MAX : (guint64) x;
}

/* A cost per register at @vcpus, held within the plausible bounds. */
static double
plausible (const Cost *cost, double each, guint vcpus)
{
  if (cost->calibrated)
    {
      double line = cost->cal_base + cost->cal_per_vcpu * vcpus;

      if (line > 0)
        return CLAMP (each, line / SPREAD, line * SPREAD);
    }
  return CLAMP (each, 0, MAX_BASE_NS + MAX_PER_VCPU_NS * vcpus);
}

void
vgicd_history_estimate (VgicdHistory *h, VgicdOp *op)
{
  Cost *cost = &h->cost[direction_index (op->direction)];

  op->single_ns = 0;
  op->single_estimated = FALSE;
  op->single_source = NULL;
  if (g_strcmp0 (op->outcome, VGICD_OUTCOME_OK) != 0)
    return;
  if (g_strcmp0 (op->path, "single") == 0)
    {
      /* What it took, as far as vgicd's clock confirms the peer's. */
      guint64 took = MIN (op->kernel_ns, op->duration_ns);

      op->single_ns = took;
      if (op->registers && op->vcpus)
        {
          double each = plausible (cost, (double) took / op->registers, op->vcpus);

          /* Through this point, with the calibrated slope when it leaves
           * a base of at least 0, else proportional to the vCPUs. */
          if (cost->calibrated && cost->per_vcpu * op->vcpus <= each)
            cost->base = each - cost->per_vcpu * op->vcpus;
          else
            {
              cost->base = 0;
              cost->per_vcpu = each / op->vcpus;
            }
          cost->source = "operation";
        }
      return;
    }
  if (cost->source && op->registers)
    {
      op->single_ns = ns_of (op->registers * (cost->base + cost->per_vcpu * op->vcpus));
      op->single_estimated = TRUE;
      op->single_source = cost->source;
    }
}

gboolean
vgicd_history_single_cost (VgicdHistory *h, const char *direction, double *base_ns,
                           double *per_vcpu_ns, const char **source)
{
  const Cost *cost = &h->cost[direction_index (direction)];

  *base_ns = cost->base;
  *per_vcpu_ns = cost->per_vcpu;
  *source = cost->source;
  return cost->source != NULL;
}

static void
count (VgicdHistory *h, const VgicdOp *op)
{
  VgicdHistogram *hist;
  double seconds = op->duration_ns / 1e9;
  guint b = 0;

  if (g_strcmp0 (op->outcome, VGICD_OUTCOME_OK) != 0 ||
      (g_strcmp0 (op->path, "batch") != 0 && g_strcmp0 (op->path, "single") != 0))
    return;
  hist = &h->histograms[2 * direction_index (op->direction) +
                        (g_strcmp0 (op->path, "single") == 0)];
  while (seconds > vgicd_history_buckets[b])
    b++;		/* the last bound is +Inf */
  hist->buckets[b]++;
  hist->count++;
  hist->sum_ns += op->duration_ns;
}

void
vgicd_history_add (VgicdHistory *h, const char *uuid, const char *name, const VgicdOp *op,
                   const char *message)
{
  vgicd_history_add_of (h, uuid, name, 0, op, message);
}

void
vgicd_history_add_of (VgicdHistory *h, const char *uuid, const char *name, gint64 pid,
                      const VgicdOp *op, const char *message)
{
  g_autofree char *key = NULL;
  Vm *vm;
  Entry *e;

  count (h, op);
  if (!h->per_vm || !uuid || !*uuid)
    return;
  key = g_strdup_printf ("%s %" G_GINT64_FORMAT, uuid, pid);
  vm = g_hash_table_lookup (h->vms, key);
  if (vm)
    g_queue_unlink (&h->recent, &vm->link);
  else
    {
      guint mine = GPOINTER_TO_UINT (g_hash_table_lookup (h->of_pid, &pid));

      /* The process's own oldest first, then the host's. */
      if (mine >= h->per_process)
        {
          drop_vm (h, oldest_of (h, pid));
          mine--;
        }
      else if (h->recent.length >= h->max_vms)
        {
          Vm *tail = h->recent.tail->data;

          mine -= tail->pid == pid;
          drop_vm (h, tail);
        }
      vm = g_new0 (Vm, 1);
      vm->key = g_steal_pointer (&key);
      vm->uuid = g_strdup (uuid);
      vm->pid = pid;
      vm->ring = g_new0 (Entry, h->per_vm);
      vm->link.data = vm;
      g_hash_table_insert (h->vms, vm->key, vm);
      g_hash_table_insert (h->of_pid, g_memdup2 (&pid, sizeof pid), GUINT_TO_POINTER (mine + 1));
    }
  g_queue_push_head_link (&h->recent, &vm->link);
  /* The name is the entry's: a later attach under another name renames
   * none of the entries before it. */
  if (g_strcmp0 (vm->name, name) != 0)
    {
      g_clear_pointer (&vm->name, g_ref_string_release);
      vm->name = g_ref_string_new (name ? name : "");
    }
  if (vm->len == h->per_vm)
    {
      e = &vm->ring[vm->first];
      entry_clear (e);
      vm->first = (vm->first + 1) % h->per_vm;
      vm->len--;
    }
  e = &vm->ring[(vm->first + vm->len++) % h->per_vm];
  e->op = *op;
  e->vm = vm;
  e->name = g_ref_string_acquire (vm->name);
  e->message = message ? g_utf8_make_valid (message, MIN (strlen (message), MESSAGE_MAX))
                       : NULL;
}

/* One operation as GetHistory shows it (keys in org.vgicd.Manager1.xml). */
static GVariant *
describe_op (const char *name, const char *uuid, gint64 pid, const VgicdOp *op,
             const char *message)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
#define S(k, v) g_variant_builder_add (&b, "{sv}", k, g_variant_new_string (v))
#define T(k, v) g_variant_builder_add (&b, "{sv}", k, g_variant_new_uint64 (v))
#define U(k, v) g_variant_builder_add (&b, "{sv}", k, g_variant_new_uint32 (v))
  S ("vm", name ? name : "");
  S ("uuid", uuid);
  g_variant_builder_add (&b, "{sv}", "pid", g_variant_new_int64 (pid));
  T ("when-usec", (guint64) op->when_usec);
  S ("direction", op->direction);
  S ("path", op->path);
  S ("stream", op->stream);
  S ("outcome", op->outcome);
  T ("duration-ns", op->duration_ns);
  T ("kernel-ns", op->kernel_ns);
  T ("vgicd-ns", op->busy_ns);
  U ("ioctls", op->ioctls);
  U ("calls", op->calls);
  U ("registers", op->registers);
  T ("bytes", op->bytes);
  U ("vcpus", op->vcpus);
  T ("single-ns", op->single_ns);
  g_variant_builder_add (&b, "{sv}", "single-estimated",
                         g_variant_new_boolean (op->single_estimated));
  if (message)
    S ("message", message);
#undef S
#undef T
#undef U
  return g_variant_builder_end (&b);
}

static GVariant *
describe (const Vm *vm, const Entry *e)
{
  return describe_op (e->name, vm->uuid, vm->pid, &e->op, e->message);
}

/* Collect the entries @vm names: every history VM of that UUID (a UUID
 * may have several, one per process), or else every entry that ran under
 * that name (names are the entries' own, and not unique over time). */
static void
matching (VgicdHistory *h, const char *vm, GPtrArray *out)
{
  gboolean by_uuid = FALSE;

  if (vm && *vm)
    for (GList *l = h->recent.head; l && !by_uuid; l = l->next)
      by_uuid = g_str_equal (((Vm *) l->data)->uuid, vm);
  for (GList *l = h->recent.tail; l; l = l->prev)
    {
      Vm *v = l->data;

      if (by_uuid && !g_str_equal (v->uuid, vm))
        continue;
      for (guint j = 0; j < v->len; j++)
        {
          Entry *e = &v->ring[(v->first + j) % h->per_vm];

          if (by_uuid || !vm || !*vm || g_strcmp0 (e->name, vm) == 0)
            g_ptr_array_add (out, e);
        }
    }
}

static gint
by_time (gconstpointer a, gconstpointer b)
{
  const Entry *x = *(Entry *const *) a, *y = *(Entry *const *) b;

  return x->op.when_usec < y->op.when_usec ? -1 : x->op.when_usec > y->op.when_usec;
}

GVariant *
vgicd_history_describe (VgicdHistory *h, const char *vm, guint limit)
{
  g_autoptr (GPtrArray) entries = g_ptr_array_new ();
  GVariantBuilder b;
  guint start;

  matching (h, vm, entries);
  g_ptr_array_sort (entries, by_time);
  start = limit && entries->len > limit ? entries->len - limit : 0;
  g_variant_builder_init (&b, G_VARIANT_TYPE ("aa{sv}"));
  for (guint i = start; i < entries->len; i++)
    {
      const Entry *e = g_ptr_array_index (entries, i);

      g_variant_builder_add_value (&b, describe (e->vm, e));
    }
  return g_variant_builder_end (&b);
}

const VgicdHistogram *
vgicd_history_histogram (VgicdHistory *h, guint i)
{
  g_return_val_if_fail (i < G_N_ELEMENTS (h->histograms), NULL);
  return &h->histograms[i];
}

GVariant *
vgicd_history_histograms (VgicdHistory *h)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE ("aa{sv}"));
  for (guint i = 0; i < G_N_ELEMENTS (h->histograms); i++)
    {
      const VgicdHistogram *hist = &h->histograms[i];
      GVariantBuilder d, le, counts;
      guint64 cumulative = 0;

      if (!hist->count)
        continue;
      g_variant_builder_init (&le, G_VARIANT_TYPE ("ad"));
      g_variant_builder_init (&counts, G_VARIANT_TYPE ("at"));
      for (guint k = 0; k < VGICD_HISTORY_N_BUCKETS; k++)
        {
          cumulative += hist->buckets[k];
          g_variant_builder_add (&le, "d", vgicd_history_buckets[k]);
          g_variant_builder_add (&counts, "t", cumulative);
        }
      g_variant_builder_init (&d, G_VARIANT_TYPE_VARDICT);
      g_variant_builder_add (&d, "{sv}", "direction", g_variant_new_string (hist->direction));
      g_variant_builder_add (&d, "{sv}", "path", g_variant_new_string (hist->path));
      g_variant_builder_add (&d, "{sv}", "count", g_variant_new_uint64 (hist->count));
      g_variant_builder_add (&d, "{sv}", "sum-ns", g_variant_new_uint64 (hist->sum_ns));
      g_variant_builder_add (&d, "{sv}", "le-seconds", g_variant_builder_end (&le));
      g_variant_builder_add (&d, "{sv}", "buckets", g_variant_builder_end (&counts));
      g_variant_builder_add_value (&b, g_variant_builder_end (&d));
    }
  return g_variant_builder_end (&b);
}

static void
history_copy_free (gpointer data)
{
  VgicdHistoryCopy *c = data;

  g_free (c->vm);
  g_free (c->uuid);
  g_free (c->message);
  g_free (c);
}

/* vgicd_history_copy() - see vgicd-history.h */
GPtrArray *
vgicd_history_copy (VgicdHistory *h, const char *vm, guint limit)
{
  g_autoptr (GPtrArray) entries = g_ptr_array_new ();
  GPtrArray *out;
  guint start;

  matching (h, vm, entries);
  g_ptr_array_sort (entries, by_time);
  start = limit && entries->len > limit ? entries->len - limit : 0;
  out = g_ptr_array_new_full (entries->len - start, history_copy_free);
  for (guint i = start; i < entries->len; i++)
    {
      const Entry *e = g_ptr_array_index (entries, i);
      VgicdHistoryCopy *c = g_new (VgicdHistoryCopy, 1);

      c->op = e->op;
      c->vm = g_strdup (e->name);
      c->uuid = g_strdup (e->vm->uuid);
      c->pid = e->vm->pid;
      c->message = g_strdup (e->message);
      g_ptr_array_add (out, c);
    }
  return out;
}

/* vgicd_history_copy_describe() - see vgicd-history.h */
GVariant *
vgicd_history_copy_describe (GPtrArray *copies)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE ("aa{sv}"));
  for (guint i = 0; copies && i < copies->len; i++)
    {
      const VgicdHistoryCopy *c = g_ptr_array_index (copies, i);

      g_variant_builder_add_value (&b, describe_op (c->vm, c->uuid, c->pid, &c->op,
                                                    c->message));
    }
  return g_variant_builder_end (&b);
}
