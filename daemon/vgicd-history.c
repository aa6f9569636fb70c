/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-history.c - the operations vgicd keeps after their session ends
 * (see vgicd-history.h).
 *
 * Theory of operation.  Each VM (by UUID) has a ring of its last History=
 * operations; the VMs are kept in a hash table and in a queue ordered by
 * their last operation, so that when HistoryVMs= VMs are kept, the one
 * that was active longest ago is dropped, in O(1).  Every bound is the
 * operator's, and nothing a peer sends grows anything beyond them: a
 * peer's UUID and name are checked at Attach (vgicd-session.c), and a
 * failure's message is cut to 256 bytes.
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
 */
#include "vgicd-history.h"

#include <math.h>
#include <string.h>

#define MESSAGE_MAX 256

const double vgicd_history_buckets[VGICD_HISTORY_N_BUCKETS] = {
  0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, INFINITY,
};

typedef struct _Vm Vm;

typedef struct {
  VgicdOp op;
  char *message;
  Vm *vm;		/* whose ring it is in */
} Entry;

struct _Vm {
  char *uuid;
  char *name;		/* as last attached */
  Entry *ring;		/* per_vm slots */
  guint first, len;
  GList link;		/* in VgicdHistory.recent, data = this */
};

/* One direction's cost of a register one per ioctl: base + n × per_vcpu. */
typedef struct {
  double base, per_vcpu;
  gboolean calibrated;	/* per_vcpu is the calibration's slope */
  const char *source;	/* NULL: not measured; "calibration", "operation" */
} Cost;

struct _VgicdHistory {
  guint per_vm, max_vms;
  GHashTable *vms;	/* uuid -> Vm */
  GQueue recent;	/* Vm links, most recently active first */
  VgicdHistogram histograms[VGICD_HISTORY_N_HISTOGRAMS];	/* save/load × batch/single */
  Cost cost[2];		/* save, load */
};

static void
vm_clear_ring (Vm *vm, guint per_vm)
{
  for (guint i = 0; i < vm->len; i++)
    g_free (vm->ring[(vm->first + i) % per_vm].message);
  vm->first = vm->len = 0;
}

static void
vm_free (gpointer data)
{
  Vm *vm = data;

  g_free (vm->uuid);
  g_free (vm->name);
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
  h->vms = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, vm_free);
  g_queue_init (&h->recent);
  for (guint i = 0; i < G_N_ELEMENTS (h->histograms); i++)
    h->histograms[i] = (VgicdHistogram) { .direction = dirs[i / 2], .path = paths[i % 2] };
  return h;
}

static void
drop_vm (VgicdHistory *h, Vm *vm)
{
  g_queue_unlink (&h->recent, &vm->link);
  vm_clear_ring (vm, h->per_vm);
  g_hash_table_remove (h->vms, vm->uuid);
}

void
vgicd_history_free (VgicdHistory *h)
{
  if (!h)
    return;
  while (h->recent.head)
    drop_vm (h, h->recent.head->data);
  g_hash_table_unref (h->vms);
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
            g_free (e->message);
        }
      g_free (vm->ring);
      vm->ring = ring;
      vm->first = 0;
      vm->len = keep;
    }
  h->per_vm = per_vm;
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
    h->cost[i] = (Cost) { base_ns, per_vcpu_ns, TRUE, "calibration" };
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
      op->single_ns = op->kernel_ns;
      if (op->ioctls && op->vcpus)
        {
          double each = (double) op->kernel_ns / op->ioctls;

          /* Through this point, with the calibrated slope when it leaves
           * a base of at least 0, else proportional to the vCPUs. */
          if (cost->calibrated && cost->per_vcpu * op->vcpus <= each)
            cost->base = each - cost->per_vcpu * op->vcpus;
          else
            *cost = (Cost) { 0, each / op->vcpus, cost->calibrated, NULL };
          cost->source = "operation";
        }
      return;
    }
  if (cost->source && op->registers)
    {
      op->single_ns = (guint64) (op->registers * (cost->base + cost->per_vcpu * op->vcpus));
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
  Vm *vm;
  Entry *e;

  count (h, op);
  if (!h->per_vm || !uuid || !*uuid)
    return;
  vm = g_hash_table_lookup (h->vms, uuid);
  if (vm)
    g_queue_unlink (&h->recent, &vm->link);
  else
    {
      if (h->recent.length >= h->max_vms)
        drop_vm (h, h->recent.tail->data);
      vm = g_new0 (Vm, 1);
      vm->uuid = g_strdup (uuid);
      vm->ring = g_new0 (Entry, h->per_vm);
      vm->link.data = vm;
      g_hash_table_insert (h->vms, vm->uuid, vm);
    }
  g_queue_push_head_link (&h->recent, &vm->link);
  if (g_strcmp0 (vm->name, name) != 0)
    {
      g_free (vm->name);
      vm->name = g_strdup (name);
    }
  if (vm->len == h->per_vm)
    {
      e = &vm->ring[vm->first];
      g_free (e->message);
      vm->first = (vm->first + 1) % h->per_vm;
      vm->len--;
    }
  e = &vm->ring[(vm->first + vm->len++) % h->per_vm];
  e->op = *op;
  e->vm = vm;
  e->message = message ? g_utf8_make_valid (message, MIN (strlen (message), MESSAGE_MAX))
                       : NULL;
}

/* One operation as GetHistory shows it (keys in org.vgicd.Manager1.xml). */
static GVariant *
describe_op (const char *name, const char *uuid, const VgicdOp *op, const char *message)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
#define S(k, v) g_variant_builder_add (&b, "{sv}", k, g_variant_new_string (v))
#define T(k, v) g_variant_builder_add (&b, "{sv}", k, g_variant_new_uint64 (v))
#define U(k, v) g_variant_builder_add (&b, "{sv}", k, g_variant_new_uint32 (v))
  S ("vm", name ? name : "");
  S ("uuid", uuid);
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
  return describe_op (vm->name, vm->uuid, &e->op, e->message);
}

/* Collect the VMs @vm names (UUID first: names are not unique over time). */
static void
matching (VgicdHistory *h, const char *vm, GPtrArray *out)
{
  Vm *by_uuid = vm && *vm ? g_hash_table_lookup (h->vms, vm) : NULL;

  if (by_uuid)
    {
      g_ptr_array_add (out, by_uuid);
      return;
    }
  /* Oldest activity first, so that the operations come out in order. */
  for (GList *l = h->recent.tail; l; l = l->prev)
    {
      Vm *v = l->data;

      if (!vm || !*vm || g_strcmp0 (v->name, vm) == 0)
        g_ptr_array_add (out, v);
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
  g_autoptr (GPtrArray) vms = g_ptr_array_new ();
  g_autoptr (GPtrArray) entries = g_ptr_array_new ();
  GVariantBuilder b;
  guint start;

  matching (h, vm, vms);
  for (guint i = 0; i < vms->len; i++)
    {
      Vm *v = g_ptr_array_index (vms, i);

      for (guint j = 0; j < v->len; j++)
        g_ptr_array_add (entries, &v->ring[(v->first + j) % h->per_vm]);
    }
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
  g_autoptr (GPtrArray) vms = g_ptr_array_new ();
  g_autoptr (GPtrArray) entries = g_ptr_array_new ();
  GPtrArray *out;
  guint start;

  matching (h, vm, vms);
  for (guint i = 0; i < vms->len; i++)
    {
      Vm *v = g_ptr_array_index (vms, i);

      for (guint j = 0; j < v->len; j++)
        g_ptr_array_add (entries, &v->ring[(v->first + j) % h->per_vm]);
    }
  g_ptr_array_sort (entries, by_time);
  start = limit && entries->len > limit ? entries->len - limit : 0;
  out = g_ptr_array_new_full (entries->len - start, history_copy_free);
  for (guint i = start; i < entries->len; i++)
    {
      const Entry *e = g_ptr_array_index (entries, i);
      VgicdHistoryCopy *c = g_new (VgicdHistoryCopy, 1);

      c->op = e->op;
      c->vm = g_strdup (e->vm->name);
      c->uuid = g_strdup (e->vm->uuid);
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

      g_variant_builder_add_value (&b, describe_op (c->vm, c->uuid, &c->op, c->message));
    }
  return g_variant_builder_end (&b);
}
