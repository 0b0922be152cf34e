#!/usr/bin/env python3
"""Counts the library's documented public API from rustdoc's JSON output.

    cargo +nightly rustdoc -p acp-extension-core --lib -- -Z unstable-options --output-format json
    python3 benches/api-count.py target/doc/acp_extension_core.json

Counts the crate's own items (default features) that rustdoc documents:
modules, types, fields, variants, functions and methods, constants,
traits and their items. Items of trait implementations (derives, `From`,
`Serialize`, ...) and `#[doc(hidden)]` items (which rustdoc leaves out) are
not counted. Prints the total, the types (structs, enums, unions, type
aliases) and the count by kind.
"""

import collections
import json
import sys

d = json.load(open(sys.argv[1]))
idx = d["index"]
# trait-impl items are not part of the crate's own surface
impl_items = set()
for it in idx.values():
    inner = it.get("inner", {})
    if "impl" in inner:
        imp = inner["impl"]
        if imp.get("trait") is not None or imp.get("synthetic") or imp.get("blanket_impl"):
            for i in imp.get("items", []):
                impl_items.add(str(i))
count = collections.Counter()
for k, it in idx.items():
    if it.get("crate_id") != 0: continue
    inner = it.get("inner", {})
    kind = next(iter(inner)) if inner else "?"
    if kind in ("impl", "use"): continue
    if k in impl_items: continue
    vis = it.get("visibility")
    if vis not in ("public", "default"): continue
    count[kind] += 1
total = sum(count.values())
types = sum(count[k] for k in ("struct", "enum", "union", "type_alias"))
print(f"items {total} types {types}")
print(dict(count.most_common()))
