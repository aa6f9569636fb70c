/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-domxml.c - see vgicd-domxml.h.
 *
 * Edits keep the document's own layout: new elements get the indentation
 * libvirt itself writes (two spaces a level), removed ones take the
 * whitespace before them along, so a definition edited and put back reads
 * like one libvirt wrote.
 */
#include "vgicd-domxml.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/xmlsave.h>

#include "vgicd-config.h"

#define ARG_PREFIX VGICD_QEMU_PROPERTY "="

static GQuark
domxml_error_quark (void)
{
  return g_quark_from_static_string ("vgicd-domxml-error");
}

xmlDoc *
vgicd_domxml_parse (const char *data, gsize len, GError **error)
{
  g_autofree char *first = NULL;
  xmlParserCtxt *ctxt;
  xmlDoc *doc;
  xmlNode *root;

  if (len > G_MAXINT)
    {
      g_set_error (error, domxml_error_quark (), 0, "domain XML too large");
      return NULL;
    }
  ctxt = xmlNewParserCtxt ();
  if (!ctxt)
    {
      g_set_error (error, domxml_error_quark (), 0, "out of memory");
      return NULL;
    }
  /* NOERROR: libxml2 would print on stderr; the first error goes into the
   * GError instead. */
  doc = xmlCtxtReadMemory (ctxt, data, (int) len, "domain.xml", NULL,
                           XML_PARSE_NONET | XML_PARSE_NOERROR |
                           XML_PARSE_NOWARNING);
  if (!doc)
    {
      const xmlError *err = xmlCtxtGetLastError (ctxt);

      if (err && err->message)
        {
          first = g_strdup_printf ("line %d: %s", err->line, err->message);
          g_strchomp (first);
        }
    }
  xmlFreeParserCtxt (ctxt);
  if (!doc)
    {
      g_set_error (error, domxml_error_quark (), 0, "not well-formed XML: %s",
                   first ? first : "unknown error");
      return NULL;
    }
  root = xmlDocGetRootElement (doc);
  if (!root || !xmlStrEqual (root->name, BAD_CAST "domain") || root->ns)
    {
      g_set_error (error, domxml_error_quark (), 0,
                   "not a libvirt domain definition (the root element is not <domain>)");
      xmlFreeDoc (doc);
      return NULL;
    }
  return doc;
}

static gboolean
is_element (xmlNode *n, const char *ns, const char *name)
{
  if (!n || n->type != XML_ELEMENT_NODE || !xmlStrEqual (n->name, BAD_CAST name))
    return FALSE;
  if (!ns)
    return n->ns == NULL;
  return n->ns && xmlStrEqual (n->ns->href, BAD_CAST ns);
}

static xmlNode *
child (xmlNode *parent, const char *ns, const char *name)
{
  for (xmlNode *n = parent ? parent->children : NULL; n; n = n->next)
    if (is_element (n, ns, name))
      return n;
  return NULL;
}

/* The depth of @node below the document (root = 0), for indentation. */
static int
depth (xmlNode *node)
{
  int d = -1;

  for (; node && node->type == XML_ELEMENT_NODE; node = node->parent)
    d++;
  return d;
}

static xmlNode *
indent_text (xmlDoc *doc, int level)
{
  g_autofree char *s = g_strnfill (1 + 2 * level, ' ');

  s[0] = '\n';
  return xmlNewDocText (doc, BAD_CAST s);
}

static gboolean
is_blank (xmlNode *n)
{
  return n && n->type == XML_TEXT_NODE && xmlIsBlankNode (n);
}

/* Append @node as the last element child of @parent, indented as libvirt
 * indents: the whitespace after the last element stays the closing tag's. */
static xmlNode *
append_element (xmlNode *parent, xmlNode *node)
{
  int level = depth (parent) + 1;
  xmlNode *last = parent->last;

  /* Adjacent text nodes merge when linked (the one linked is freed), so
   * every text node goes next to an element. */
  if (is_blank (last))
    {
      /* "...<prev/>[\n  ]</parent>": insert before the trailing blank. */
      xmlAddPrevSibling (last, node);
      xmlAddPrevSibling (node, indent_text (parent->doc, level));
    }
  else
    {
      xmlAddChild (parent, node);
      xmlAddPrevSibling (node, indent_text (parent->doc, level));
      xmlAddNextSibling (node, indent_text (parent->doc, level - 1));
    }
  return node;
}

/* Remove @node and the whitespace in front of it; if that leaves @parent
 * with only whitespace, empty it. */
static void
remove_element (xmlNode *node)
{
  xmlNode *parent = node->parent;
  xmlNode *prev = node->prev;
  gboolean only_blanks = TRUE;

  if (is_blank (prev))
    {
      xmlUnlinkNode (prev);
      xmlFreeNode (prev);
    }
  xmlUnlinkNode (node);
  xmlFreeNode (node);

  for (xmlNode *n = parent->children; n; n = n->next)
    if (!is_blank (n))
      only_blanks = FALSE;
  if (only_blanks)
    while (parent->children)
      {
        xmlNode *n = parent->children;

        xmlUnlinkNode (n);
        xmlFreeNode (n);
      }
}

/* The element's namespace declared on it, or a usable one in scope. */
static xmlNs *
namespace_for (xmlNode *node, const char *href, const char *prefix)
{
  xmlNs *ns = xmlSearchNsByHref (node->doc, node, BAD_CAST href);
  g_autofree char *alt = NULL;

  if (ns)
    return ns;
  /* The prefix must not already stand for another namespace in scope. */
  if (xmlSearchNs (node->doc, node, BAD_CAST prefix))
    {
      for (int i = 1; !alt; i++)
        {
          alt = g_strdup_printf ("%s%d", prefix, i);
          if (xmlSearchNs (node->doc, node, BAD_CAST alt))
            g_clear_pointer (&alt, g_free);
        }
      prefix = alt;
    }
  return xmlNewNs (node, BAD_CAST href, BAD_CAST prefix);
}

static xmlNode *
metadata_element (xmlDoc *doc)
{
  return child (child (xmlDocGetRootElement (doc), NULL, "metadata"),
                VGICD_XMLNS, VGICD_XML_ELEMENT);
}

/* An attribute of @el, or NULL. */
static char *
prop (xmlNode *el, const char *name)
{
  xmlChar *value = xmlGetNoNsProp (el, BAD_CAST name);
  char *s = g_strdup ((const char *) value);

  xmlFree (value);
  return s;
}

gboolean
vgicd_domxml_choice (xmlDoc *doc, VgicdVmChoice *choice, GError **error)
{
  xmlNode *el = metadata_element (doc);
  g_autofree char *req = NULL;
  g_autofree char *mode = NULL;

  *choice = VGICD_VM_DEFAULT;
  if (!el)
    return TRUE;
  req = prop (el, "required");
  mode = prop (el, "mode");
  if (mode && !g_str_equal (mode, "off"))
    {
      g_set_error (error, domxml_error_quark (), 0,
                   "<vgicd:vgicd mode=\"%s\"> in the domain's metadata: "
                   "mode is \"off\" or absent", mode);
      return FALSE;
    }
  if (req && !g_str_equal (req, "no") && !g_str_equal (req, "yes"))
    {
      g_set_error (error, domxml_error_quark (), 0,
                   "<vgicd:vgicd required=\"%s\"> in the domain's metadata: "
                   "required must be \"yes\" or \"no\"", req);
      return FALSE;
    }
  if (mode && req && g_str_equal (req, "yes"))
    {
      g_set_error (error, domxml_error_quark (), 0,
                   "<vgicd:vgicd mode=\"off\" required=\"yes\"> in the domain's "
                   "metadata: a domain cannot both require vgicd and turn it off");
      return FALSE;
    }
  *choice = mode ? VGICD_VM_OFF
          : req && g_str_equal (req, "yes") ? VGICD_VM_REQUIRED : VGICD_VM_WANTED;
  return TRUE;
}

void
vgicd_domxml_set_choice (xmlDoc *doc, VgicdVmChoice choice)
{
  xmlNode *root = xmlDocGetRootElement (doc);
  xmlNode *metadata = child (root, NULL, "metadata");
  xmlNode *el = metadata_element (doc);

  if (choice == VGICD_VM_DEFAULT)
    {
      if (el)
        remove_element (el);
      if (metadata && !metadata->children)
        remove_element (metadata);
      return;
    }
  if (!metadata)
    {
      /* libvirt writes <metadata> after the name/uuid/title/description
       * block; any position is valid, this one is the conventional one. */
      xmlNode *after = NULL;

      metadata = xmlNewDocNode (doc, NULL, BAD_CAST "metadata", NULL);
      for (xmlNode *n = root->children; n; n = n->next)
        if (is_element (n, NULL, "name") || is_element (n, NULL, "uuid") ||
            is_element (n, NULL, "genid") || is_element (n, NULL, "title") ||
            is_element (n, NULL, "description"))
          after = n;
      if (after)
        {
          xmlAddNextSibling (after, metadata);
          xmlAddPrevSibling (metadata, indent_text (doc, 1));
        }
      else
        append_element (root, metadata);
    }
  if (!el)
    {
      el = xmlNewDocNode (doc, NULL, BAD_CAST VGICD_XML_ELEMENT, NULL);
      append_element (metadata, el);
      xmlSetNs (el, namespace_for (el, VGICD_XMLNS, VGICD_XMLNS_PREFIX));
    }
  if (choice == VGICD_VM_OFF)
    {
      xmlUnsetProp (el, BAD_CAST "required");
      xmlSetProp (el, BAD_CAST "mode", BAD_CAST "off");
      return;
    }
  xmlUnsetProp (el, BAD_CAST "mode");
  xmlSetProp (el, BAD_CAST "required",
              BAD_CAST (choice == VGICD_VM_REQUIRED ? "yes" : "no"));
}

static char *
arg_value (xmlNode *n)
{
  xmlChar *v;
  char *s;

  if (!is_element (n, QEMU_XMLNS, "arg"))
    return NULL;
  v = xmlGetNoNsProp (n, BAD_CAST "value");
  s = g_strdup ((const char *) v);
  xmlFree (v);
  return s;
}

static xmlNode *
prev_element (xmlNode *n)
{
  for (n = n->prev; n && n->type != XML_ELEMENT_NODE; n = n->prev)
    ;
  return n;
}

/* Is @n the value half of a vgicd argument pair?  Sets *flag to the
 * "-global" element before it. */
static gboolean
is_vgicd_arg (xmlNode *n, xmlNode **flag)
{
  g_autofree char *v = arg_value (n);
  g_autofree char *f = NULL;
  xmlNode *p;

  if (!v || !g_str_has_prefix (v, ARG_PREFIX))
    return FALSE;
  p = prev_element (n);
  f = arg_value (p);
  if (!f || !(g_str_equal (f, "-global") || g_str_equal (f, "--global")))
    return FALSE;
  *flag = p;
  return TRUE;
}

char *
vgicd_domxml_arg (xmlDoc *doc)
{
  xmlNode *root = xmlDocGetRootElement (doc);

  for (xmlNode *cl = root->children; cl; cl = cl->next)
    if (is_element (cl, QEMU_XMLNS, "commandline"))
      for (xmlNode *n = cl->children; n; n = n->next)
        {
          xmlNode *flag;

          if (is_vgicd_arg (n, &flag))
            return arg_value (n);
        }
  return NULL;
}

guint
vgicd_domxml_remove_arg (xmlDoc *doc)
{
  xmlNode *root = xmlDocGetRootElement (doc);
  g_autoptr (GPtrArray) doomed = g_ptr_array_new ();
  g_autoptr (GPtrArray) lines = g_ptr_array_new ();
  guint removed = 0;

  /* Collect first: removing an element also frees whitespace around it
   * (and all of a parent left blank), so no pointer survives a removal. */
  for (xmlNode *cl = root->children; cl; cl = cl->next)
    {
      gboolean hit = FALSE;

      if (!is_element (cl, QEMU_XMLNS, "commandline"))
        continue;
      for (xmlNode *n = cl->children; n; n = n->next)
        {
          xmlNode *flag;

          if (!is_vgicd_arg (n, &flag))
            continue;
          g_ptr_array_add (doomed, flag);
          g_ptr_array_add (doomed, n);
          hit = TRUE;
        }
      if (hit)
        g_ptr_array_add (lines, cl);
    }
  for (guint i = 0; i < doomed->len; i++)
    remove_element (doomed->pdata[i]);
  removed = doomed->len / 2;
  /* A <qemu:commandline> left empty goes too. */
  for (guint i = 0; i < lines->len; i++)
    if (!((xmlNode *) lines->pdata[i])->children)
      remove_element (lines->pdata[i]);
  return removed;
}

static xmlNode *
find_path (xmlDoc *doc, const char *path)
{
  g_auto (GStrv) parts = g_strsplit (path, "/", -1);
  xmlNode *n = xmlDocGetRootElement (doc);

  for (guint i = 0; n && parts[i]; i++)
    if (*parts[i])
      n = child (n, NULL, parts[i]);
  return n;
}

char *
vgicd_domxml_attr (xmlDoc *doc, const char *path, const char *attr)
{
  xmlNode *n = find_path (doc, path);
  xmlChar *v;
  char *s;

  if (!n)
    return NULL;
  v = xmlGetNoNsProp (n, BAD_CAST attr);
  s = g_strdup ((const char *) v);
  xmlFree (v);
  return s;
}

char *
vgicd_domxml_text (xmlDoc *doc, const char *path)
{
  xmlNode *n = find_path (doc, path);
  xmlChar *v;
  char *s;

  if (!n)
    return NULL;
  v = xmlNodeGetContent (n);
  s = g_strstrip (g_strdup ((const char *) v));
  xmlFree (v);
  return s;
}

char *
vgicd_domxml_uuid (xmlDoc *doc)
{
  return vgicd_domxml_text (doc, "uuid");
}

char *
vgicd_domxml_name (xmlDoc *doc)
{
  return vgicd_domxml_text (doc, "name");
}

char *
vgicd_domxml_format (xmlDoc *doc, gsize *len)
{
  xmlBuffer *buf = xmlBufferCreate ();
  xmlSaveCtxt *save = xmlSaveToBuffer (buf, "UTF-8", XML_SAVE_NO_DECL);
  char *out;

  xmlSaveDoc (save, doc);
  xmlSaveClose (save);
  out = g_strndup ((const char *) xmlBufferContent (buf), xmlBufferLength (buf));
  if (len)
    *len = xmlBufferLength (buf);
  xmlBufferFree (buf);
  return out;
}

VgicdConfig *
vgicd_host_config (char **warning)
{
  const char *conf = g_getenv ("VGICD_CONFIG");
  g_autoptr (VgicdDiags) diags = vgicd_diags_new ();
  g_autoptr (GError) error = NULL;
  VgicdConfig *config = vgicd_config_check (conf && *conf ? conf : VGICD_DEFAULT_CONFIG,
                                            diags);

  if (diags->errors && warning && !vgicd_diags_set_error (diags, &error))
    *warning = g_strdup_printf ("%s; assuming the socket is %s, and the other keys as "
                                "far as they load", error->message, config->socket_path);
  return config;
}

char *
vgicd_socket_path (const VgicdConfig *config)
{
  const char *env = g_getenv ("VGICD_SOCKET");

  if (env && *env)
    return g_strdup (env);
  return g_strdup (config->socket_path);
}

gboolean
vgicd_socket_reachable (const char *path, char **why)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  int fd, r;

  if (strlen (path) >= sizeof addr.sun_path)
    {
      *why = g_strdup ("the path is too long for a unix socket");
      return FALSE;
    }
  strcpy (addr.sun_path, path);
  /* Non-blocking: a listener with a full backlog is there, only busy, and
   * must not hang libvirtd's hook call. */
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    {
      *why = g_strdup_printf ("socket: %s", g_strerror (errno));
      return FALSE;
    }
  r = connect (fd, (struct sockaddr *) &addr, sizeof addr);
  if (r < 0 && errno != EAGAIN && errno != EINPROGRESS)
    {
      *why = g_strdup (g_strerror (errno));
      close (fd);
      return FALSE;
    }
  close (fd);
  return TRUE;
}
