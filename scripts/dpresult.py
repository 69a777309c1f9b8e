"""Reading dpbench result files (the JSON that `dpbench --format json`,
`--out DIR` and scripts/torch_reference.py write), shared by the scripts."""

import json


class BadResult(Exception):
    """A file that is not a readable dpbench result."""


def read(path):
    """Returns the parsed document; raises BadResult with the reason."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise BadResult("%s: cannot read: %s" % (path, e.strerror)) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BadResult("%s: not valid JSON: %s" % (path, e)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list) or not doc["runs"]:
        raise BadResult("%s: not a dpbench result with at least one run" % path)
    return doc
