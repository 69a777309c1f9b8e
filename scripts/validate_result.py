#!/usr/bin/python3
"""Checks dpbench result files against docs/result.schema.json.

    validate_result.py FILE.json...

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


def main(argv=None):
    p = argparse.ArgumentParser(prog="validate_result.py", description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", metavar="FILE.json")
    p.add_argument("--skip-other", action="store_true",
                   help="skip JSON files that are not dpbench results")
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
        bad += bool(errors)
    print("validate_result.py: %d result file%s checked, %d invalid"
          % (checked, "" if checked == 1 else "s", bad), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
