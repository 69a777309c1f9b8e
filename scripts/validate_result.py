#!/usr/bin/python3
"""Checks dpbench result files against docs/result.schema.json.

    validate_result.py FILE.json...

With --described, every field a document holds must also be declared in the
schema with a description (on the field, or on the map or opaque object that
holds it): a field added to the JSON fails until the schema says what it is.

Files that are not dpbench results (no "schema_version": a compare output, a
PyTorch reference result, an export manifest) are skipped with a note when
--skip-other is given, and are errors otherwise. Prints one line per file
that fails, naming the path inside the document; exit status 0 when every
result is valid, 1 when one is not, 2 when a file cannot be read.
"""

import argparse
import json
import os
import sys

import pyreq

jsonschema = pyreq.require("jsonschema")

SCHEMA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "docs", "result.schema.json")


def resolve(schema, node):
    """node with its $ref followed, as a list of the branches a value may take."""
    while isinstance(node, dict) and "$ref" in node:
        node = dict(schema["definitions"][node["$ref"].split("/")[-1]],
                    **{k: v for k, v in node.items() if k != "$ref"})
    out = [node]
    for k in ("oneOf", "anyOf", "allOf"):
        for b in node.get(k, []):
            out += resolve(schema, b)
    return out


def undescribed(schema, value, node=None, where="", described=True):
    """The fields of value (under schema node) that the schema does not
    declare, or declares without a description, as 'PATH: why' lines."""
    nodes = resolve(schema, schema if node is None else node)
    described = described or any("description" in n for n in nodes)
    if node is not None and not described:
        yield "%s: no description in the schema" % where
    if isinstance(value, dict):
        props = {}
        for n in nodes:
            props.update(n.get("properties", {}))
        extra = [n["additionalProperties"] for n in nodes
                 if isinstance(n.get("additionalProperties"), dict)]
        if not props and not extra:
            return  # an opaque object: its description covers its keys
        for k, v in value.items():
            if k in props:
                yield from undescribed(schema, v, props[k], where + "/" + k, False)
            elif extra:
                yield from undescribed(schema, v, extra[0], where + "/" + k, described)
            else:
                yield "%s/%s: not in the schema" % (where, k)
    elif isinstance(value, list):
        items = [n["items"] for n in nodes if isinstance(n.get("items"), dict)]
        for i, v in enumerate(value):
            if items:
                yield from undescribed(schema, v, items[0], "%s/%d" % (where, i), True)


def main(argv=None):
    p = argparse.ArgumentParser(prog="validate_result.py", description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", metavar="FILE.json")
    p.add_argument("--skip-other", action="store_true",
                   help="skip JSON files that are not dpbench results")
    p.add_argument("--described", action="store_true",
                   help="also require a described schema entry for every field a file holds")
    args = p.parse_args(argv)
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    bad = checked = 0
    for path in args.files:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print("validate_result.py: %s: cannot read: %s" % (path, e), file=sys.stderr)
            return 2
        if args.skip_other and not (isinstance(doc, dict) and "schema_version" in doc):
            continue
        checked += 1
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:5]:
            where = "/".join(str(x) for x in e.absolute_path) or "(top)"
            print("%s: %s: %s" % (path, where, e.message[:300]))
        missing = sorted(set(undescribed(schema, doc))) if args.described else []
        for m in missing[:20]:
            print("%s: %s" % (path, m))
        bad += bool(errors or missing)
    print("validate_result.py: %d result file%s checked, %d invalid"
          % (checked, "" if checked == 1 else "s", bad), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
