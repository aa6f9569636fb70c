#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-protocol-doc.py - docs/protocol.md against the introspection XML.

Every interface, method, property, signal and argument defined in the XML
files must be named in the document, and every `Interface.Member` the
document mentions must exist in the XML: the prose cannot drift from the
definition without this test failing.  So must every key and value the
dictionaries carry (include/vgicd/protocol.h's VGICD_VM_*, VGICD_INFO_*,
VGICD_FEATURE_*, VGICD_STEP_*, VGICD_ACTION_*, VGICD_VIA_*, VGICD_REASON_*
and VGICD_REPORT_* strings), as `code` in the document.

usage: check-protocol-doc.py DOC PROTOCOL_H XML...
"""
import re
import sys
import xml.etree.ElementTree as ET


def main():
    doc_path, header, xml_paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    doc = open(doc_path, encoding="utf-8").read()
    missing, known = [], set()
    keys = re.findall(r'#define (VGICD_(?:VM|INFO|FEATURE|STEP|ACTION|VIA|REASON|REPORT)_\w+)'
                      r'\s+"([^"]+)"', open(header, encoding="utf-8").read())
    for macro, key in keys:
        if f"`{key}`" not in doc:
            missing.append(f"key `{key}` ({macro}, {header})")
    for path in xml_paths:
        for iface in ET.parse(path).getroot().iter("interface"):
            name = iface.get("name")
            known.add(name)
            if name not in doc:
                missing.append(f"interface {name} ({path})")
            for kind in ("method", "property", "signal"):
                for member in iface.iter(kind):
                    m = member.get("name")
                    known.add(f"{name}.{m}")
                    if not re.search(rf"\b{re.escape(m)}\b", doc):
                        missing.append(f"{kind} {name}.{m}")
                    for arg in member.iter("arg"):
                        a = arg.get("name")
                        if a and not re.search(rf"\b{re.escape(a)}\b", doc):
                            missing.append(f"argument {a} of {name}.{m}")
    # D-Bus error names (org.vgicd.Error.*) are not defined in XML.
    unknown = [ref for ref in re.findall(r"\borg\.vgicd\.[A-Za-z0-9]+(?:\.[A-Za-z]+)?", doc)
               if not ref.startswith("org.vgicd.Error")
               and ref not in known and ref.rsplit(".", 1)[0] not in known]
    for what in missing:
        print(f"docs/protocol.md does not mention the {what}")
    for ref in sorted(set(unknown)):
        print(f"docs/protocol.md names {ref}, which no XML defines")
    if missing or unknown:
        return 1
    print(f"docs/protocol.md covers {len(known)} interfaces and members, "
          f"{len(keys)} keys and values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
