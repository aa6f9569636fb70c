/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-server.c - accepts QEMUs on the unix socket and speaks
 * peer-to-peer D-Bus with each.
 *
 * Why not GDBusServer: under systemd the listening socket arrives already
 * bound (socket activation), and GDBusServer only listens on addresses it
 * binds itself.  So vgicd accepts with a GSocketService and runs the D-Bus
 * server-side handshake on each accepted stream.  Peers authenticate with
 * EXTERNAL only (SO_PEERCRED credentials); their uid is checked against the
 * allow-list when they Attach, so a refused peer gets an error that says why
 * instead of a bare authentication failure.
 *
 * Each connection is independent: a slow or stuck peer holds nothing that
 * another needs (all D-Bus I/O is asynchronous, and a session's work is
 * bounded planning and encoding).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "vgic-shape.h"
#include "vgicd-dbus.h"
#include "vgicd-server.h"
#include "vgicd-session.h"
#include "vgicd/protocol.h"


struct _VgicdServer {
  VgicdDaemon *daemon;
  GSocketService *service;
  GDBusAuthObserver *observer;
  char *guid;
  char *description;
  char *bound_path;	/* unlinked at exit when vgicd bound it */
  GArray *allowed;	/* uid_t */
  GPtrArray *pending;	/* Pending *: accepted, before their first byte */
  GPtrArray *peers;	/* Peer * */
};

typedef struct {
  VgicdServer *server;
  GDBusConnection *connection;
  VgicdDbusHelper1 *helper;
  VgicdSession *session;
  uid_t uid;
  pid_t pid;
  gulong closed_id;
} Peer;

static void
peer_free (Peer *p)
{
  vgicd_session_free (p->session);
  if (p->helper)
    {
      g_dbus_interface_skeleton_unexport (G_DBUS_INTERFACE_SKELETON (p->helper));
      g_object_unref (p->helper);
    }
  if (p->closed_id)
    g_signal_handler_disconnect (p->connection, p->closed_id);
  g_clear_object (&p->connection);
  g_free (p);
}

static gboolean
uid_allowed (VgicdServer *server, uid_t uid)
{
  for (guint i = 0; i < server->allowed->len; i++)
    if (g_array_index (server->allowed, uid_t, i) == uid)
      return TRUE;
  return FALSE;
}

static char *
user_name (uid_t uid)
{
  struct passwd *pw = getpwuid (uid);

  return pw ? g_strdup (pw->pw_name) : g_strdup_printf ("%u", (guint) uid);
}

static gboolean
on_attach (VgicdDbusHelper1 *helper, GDBusMethodInvocation *inv, GUnixFDList *in_fds,
           GVariant *vm, gpointer data)
{
  Peer *p = data;
  VgicdServer *server = p->server;
  g_autoptr (GError) error = NULL;
  g_autoptr (GUnixFDList) fds = NULL;
  int index, channel, channel_index = -1;

  if (!uid_allowed (server, p->uid))
    {
      g_autofree char *who = user_name (p->uid);
      g_autofree char *list = g_strjoinv (", ", server->daemon->config->allow_users);
      g_autofree char *uid = g_strdup_printf ("%u", (guint) p->uid);

      server->daemon->totals.refused++;
      vgicd_daemon_changed (server->daemon);
      /* The operator reads the setting in the log; the peer, possibly
       * hostile, is told only that its own uid is refused, not who else
       * may connect nor where the configuration lives. */
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "VGICD_PEER_UID", uid,
                        "MESSAGE", "refused a peer: user %s (uid %u, pid %d) is not allowed "
                        "(AllowUsers in %s lists: %s)",
                        who, (guint) p->uid, (int) p->pid, server->daemon->config->path, list);
      g_autofree char *msg =
        g_strdup_printf ("user %s (uid %u) may not use vgicd on this host; vgicd's log "
                         "names the setting that allows it", who, (guint) p->uid);
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.AccessDenied", msg);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  if (p->session)
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, VGICD_DBUS_ERROR_ALREADY_ATTACHED,
        "this connection already has a session; open a new connection for another VM");
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  p->session = vgicd_session_new (server->daemon, p->connection, vm, p->uid, p->pid, &error);
  if (!p->session)
    {
      g_dbus_method_invocation_return_dbus_error (inv, "org.freedesktop.DBus.Error.InvalidArgs",
                                                  error->message);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  fds = g_unix_fd_list_new ();
  index = g_unix_fd_list_append (fds, vgicd_session_get_window_fd (p->session), &error);
  if (index < 0)
    {
      g_dbus_method_invocation_return_gerror (inv, error);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  channel = vgicd_session_take_peer_channel (p->session);
  if (channel >= 0)
    {
      channel_index = g_unix_fd_list_append (fds, channel, &error);
      close (channel);
      if (channel_index < 0)
        {
          g_dbus_method_invocation_return_gerror (inv, error);
          return G_DBUS_METHOD_INVOCATION_HANDLED;
        }
    }
  vgicd_dbus_helper1_complete_attach (helper, inv, fds,
                                      vgicd_session_get_path (p->session),
                                      g_variant_new_handle (index),
                                      vgicd_session_get_info (p->session, channel_index));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
on_closed (GDBusConnection *connection, gboolean remote_peer_vanished, GError *error,
           gpointer data)
{
  Peer *p = data;

  /* The session, its window and its object go with the connection. */
  g_ptr_array_remove (p->server->peers, p);
}

static void
on_connection_ready (GObject *source, GAsyncResult *res, gpointer data)
{
  VgicdServer *server = data;
  g_autoptr (GError) error = NULL;
  GDBusConnection *connection = g_dbus_connection_new_finish (res, &error);
  GCredentials *creds;
  Peer *p;

  if (!connection)
    {
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                        "MESSAGE", "a peer failed the D-Bus handshake: %s", error->message);
      return;
    }
  p = g_new0 (Peer, 1);
  p->server = server;
  p->connection = connection;
  creds = g_dbus_connection_get_peer_credentials (connection);
  p->uid = creds ? g_credentials_get_unix_user (creds, NULL) : (uid_t) -1;
  p->pid = creds ? g_credentials_get_unix_pid (creds, NULL) : -1;
  p->helper = vgicd_dbus_helper1_skeleton_new ();
  g_signal_connect (p->helper, "handle-attach", G_CALLBACK (on_attach), p);
  p->closed_id = g_signal_connect (connection, "closed", G_CALLBACK (on_closed), p);
  g_ptr_array_add (server->peers, p);
  if (!g_dbus_interface_skeleton_export (G_DBUS_INTERFACE_SKELETON (p->helper), connection,
                                         VGICD_HELPER_PATH, &error))
    {
      g_warning ("cannot serve a peer: %s", error->message);
      g_ptr_array_remove (server->peers, p);
      return;
    }
  g_dbus_connection_start_message_processing (connection);
}

/* A connection waiting for its first byte. */
typedef struct {
  VgicdServer *server;
  GSocketConnection *stream;
  GSource *source;
} Pending;

static void
pending_free (Pending *p)
{
  if (p->source)
    {
      g_source_destroy (p->source);
      g_source_unref (p->source);
    }
  g_clear_object (&p->stream);
  g_free (p);
}

/*
 * The first byte decides: a D-Bus client sends one (a NUL, then AUTH)
 * before anything else, so a connection closed before it is someone asking
 * whether vgicd is there (libvirt's qemu hook, a health check), not a
 * failed handshake.  It is closed without a word; everything else gets the
 * D-Bus handshake.
 */
static gboolean
on_first_byte (GSocket *sock, GIOCondition cond, gpointer data)
{
  Pending *p = data;
  VgicdServer *server = p->server;
  char byte;
  ssize_t n = recv (g_socket_get_fd (sock), &byte, 1, MSG_PEEK | MSG_DONTWAIT);

  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return G_SOURCE_CONTINUE;
  if (n > 0)
    g_dbus_connection_new (G_IO_STREAM (p->stream), server->guid,
                           G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_SERVER |
                           G_DBUS_CONNECTION_FLAGS_DELAY_MESSAGE_PROCESSING,
                           server->observer, NULL, on_connection_ready, server);
  else
    g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_DEBUG,
                      "MESSAGE", "a peer connected and closed: a reachability probe");
  g_clear_pointer (&p->source, g_source_unref);	/* removed by returning */
  g_ptr_array_remove (server->pending, p);
  return G_SOURCE_REMOVE;
}

static gboolean
on_incoming (GSocketService *service, GSocketConnection *stream, GObject *source,
             gpointer data)
{
  VgicdServer *server = data;
  Pending *p = g_new0 (Pending, 1);

  p->server = server;
  p->stream = g_object_ref (stream);
  p->source = g_socket_create_source (g_socket_connection_get_socket (stream),
                                      G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
  g_source_set_callback (p->source, G_SOURCE_FUNC (on_first_byte), p, NULL);
  g_source_attach (p->source, NULL);
  g_ptr_array_add (server->pending, p);
  return TRUE;
}

/* Only EXTERNAL: the kernel vouches for the peer's uid. */
static gboolean
on_allow_mechanism (GDBusAuthObserver *observer, const char *mechanism, gpointer data)
{
  return g_strcmp0 (mechanism, "EXTERNAL") == 0;
}

/*
 * The socket vgicd binds itself gets what vgicd.socket gives systemd's:
 * mode 0660, group SocketGroup= (kvm), owned by vgicd's user (root).  A group that does not
 * exist is an error when the file names it; when it is the default (a host
 * without a kvm group, where only root can use /dev/kvm anyway), only root
 * may connect, and the log says so.
 */
static gboolean
restrict_socket (const char *path, const char *group, gboolean group_set, GError **error)
{
  struct group gr, *found = NULL;
  char buf[4096];
  int r = getgrnam_r (group, &gr, buf, sizeof buf, &found);

  if (!found && group_set)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                   "SocketGroup=%s: %s", group,
                   r ? g_strerror (r) : "no such group");
      return FALSE;
    }
  if (!found)
    {
      g_message ("group %s does not exist: only root may connect to %s (mode 0600); "
                 "set SocketGroup= in vgicd.conf to let QEMUs of another user in",
                 group, path);
      if (chmod (path, 0600) < 0)
        goto fail;
      return TRUE;
    }
  if (chown (path, (uid_t) -1, found->gr_gid) < 0 || chmod (path, 0660) < 0)
    goto fail;
  return TRUE;

fail:
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED, "cannot set the owner and mode of %s: %s",
               path, g_strerror (errno));
  return FALSE;
}

static GSocket *
bind_socket (const char *path, const char *group, gboolean group_set, GError **error)
{
  g_autoptr (GSocket) sock = NULL;
  g_autoptr (GSocketAddress) addr = NULL;
  g_autofree char *dir = g_path_get_dirname (path);
  struct stat st;

  if (g_mkdir_with_parents (dir, 0755) < 0)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED, "cannot create %s: %s", dir,
                   g_strerror (errno));
      return NULL;
    }
  /* A stale socket from a previous run would make bind fail. */
  if (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode))
    unlink (path);
  sock = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT,
                       error);
  if (!sock)
    return NULL;
  addr = g_unix_socket_address_new (path);
  /* Owner and mode are set before listen(): until then nobody connects. */
  if (!g_socket_bind (sock, addr, TRUE, error))
    {
      g_prefix_error (error, "cannot listen on %s: ", path);
      return NULL;
    }
  if (!restrict_socket (path, group, group_set, error) || !g_socket_listen (sock, error))
    {
      g_prefix_error (error, "cannot listen on %s: ", path);
      unlink (path);
      return NULL;
    }
  return g_steal_pointer (&sock);
}

VgicdServer *
vgicd_server_new (VgicdDaemon *daemon, const char *socket_path, GError **error)
{
  VgicdServer *server = g_new0 (VgicdServer, 1);
  g_autoptr (GSocket) sock = NULL;
  int n = sd_listen_fds (TRUE);

  server->daemon = daemon;
  server->guid = g_dbus_generate_guid ();
  server->allowed = g_array_new (FALSE, FALSE, sizeof (uid_t));
  server->peers = g_ptr_array_new_with_free_func ((GDestroyNotify) peer_free);
  server->pending = g_ptr_array_new_with_free_func ((GDestroyNotify) pending_free);
  server->observer = g_dbus_auth_observer_new ();
  g_signal_connect (server->observer, "allow-mechanism", G_CALLBACK (on_allow_mechanism), NULL);

  if (n > 1)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                   "systemd passed %d sockets; vgicd.socket should pass one", n);
      vgicd_server_free (server);
      return NULL;
    }
  if (n == 1)
    {
      sock = g_socket_new_from_fd (SD_LISTEN_FDS_START, error);
      server->description = g_strdup ("socket-activated");
    }
  else
    {
      sock = bind_socket (socket_path, daemon->config->socket_group,
                          daemon->config->socket_group_set, error);
      server->bound_path = g_strdup (socket_path);
      server->description = g_strdup (socket_path);
    }
  if (!sock)
    {
      vgicd_server_free (server);
      return NULL;
    }
  if (n == 1)
    {
      g_autoptr (GSocketAddress) local = g_socket_get_local_address (sock, NULL);
      if (local && G_IS_UNIX_SOCKET_ADDRESS (local))
        {
          g_free (server->description);
          server->description = g_strdup_printf (
            "%s (socket-activated)",
            g_unix_socket_address_get_path (G_UNIX_SOCKET_ADDRESS (local)));
        }
    }
  server->service = g_socket_service_new ();
  if (!g_socket_listener_add_socket (G_SOCKET_LISTENER (server->service), sock, NULL, error))
    {
      vgicd_server_free (server);
      return NULL;
    }
  g_signal_connect (server->service, "incoming", G_CALLBACK (on_incoming), server);
  g_socket_service_start (server->service);
  return server;
}

void
vgicd_server_free (VgicdServer *server)
{
  if (!server)
    return;
  if (server->service)
    {
      g_socket_service_stop (server->service);
      g_socket_listener_close (G_SOCKET_LISTENER (server->service));
      g_object_unref (server->service);
    }
  if (server->pending)
    g_ptr_array_unref (server->pending);
  if (server->peers)
    g_ptr_array_unref (server->peers);
  if (server->bound_path)
    unlink (server->bound_path);
  g_clear_object (&server->observer);
  g_array_unref (server->allowed);
  g_free (server->bound_path);
  g_free (server->description);
  g_free (server->guid);
  g_free (server);
}

const char *
vgicd_server_describe (VgicdServer *server)
{
  return server->description;
}

void
vgicd_server_set_allowed (VgicdServer *server, const uid_t *uids, guint n)
{
  g_array_set_size (server->allowed, 0);
  g_array_append_vals (server->allowed, uids, n);
}
