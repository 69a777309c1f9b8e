"""The scripts' one check for the Python modules they need.

The scripts run under Debian's /usr/bin/python3 with Debian's packages (what
scripts/install-deps.sh installs); `python3` on PATH may be another
interpreter (pyenv, a venv) without them. require() imports the modules and,
when one is missing, prints one line naming the interpreter in use and the
Debian package to install, and exits with status 2: never a traceback.
"""

import importlib
import os
import sys

# module -> the Debian package that provides it for /usr/bin/python3
DEBIAN_PACKAGE = {
    "torch": "python3-torch",
    "matplotlib": "python3-matplotlib",
    "numpy": "python3-numpy",
    "yaml": "python3-yaml",
    "PIL": "python3-pil",
    "jsonschema": "python3-jsonschema",
}


def require(*modules):
    """Imports MODULES in order and returns them (one module alone, else a
    tuple); exits 2 with one line on stderr at the first that fails."""
    loaded = []
    for name in modules:
        try:
            loaded.append(importlib.import_module(name))
        except Exception as e:  # ImportError, or a broken install's own error
            package = DEBIAN_PACKAGE.get(name.split(".")[0], "python3-" + name.split(".")[0])
            advice = "" if sys.executable == "/usr/bin/python3" else \
                " and run with /usr/bin/python3 (or PYTHON=...)"
            sys.stderr.write(
                "%s: %s cannot import %s (%s): install Debian's %s (apt-get install %s)%s\n"
                % (os.path.basename(sys.argv[0]) or "python", sys.executable, name,
                   str(e).splitlines()[0] if str(e) else type(e).__name__, package, package,
                   advice))
            sys.exit(2)
    return loaded[0] if len(loaded) == 1 else tuple(loaded)
