"""A scriptable exec credential plugin for tests: it logs each run and answers as told."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

V1: Final = "client.authentication.k8s.io/v1"
V1BETA1: Final = "client.authentication.k8s.io/v1beta1"

# The plugin appends one JSON line per run (its args and KUBERNETES_EXEC_INFO) to $PLUGIN_STATE
# and answers as $PLUGIN_MODE says: a token numbered by its run, a certificate, or a failure.
PLUGIN: Final = """#!{python}
import json, os, sys
state = os.environ["PLUGIN_STATE"]
with open(state, "a") as log:
    log.write(json.dumps({{"args": sys.argv[1:], "info": os.environ.get("KUBERNETES_EXEC_INFO")}}))
    log.write("\\n")
runs = len(open(state).read().splitlines())
mode = os.environ.get("PLUGIN_MODE", "token")
version = os.environ.get("PLUGIN_VERSION", "{v1}")
if mode == "fail":
    print("first line", file=sys.stderr)
    print("login required: run `login`", file=sys.stderr)
    sys.exit(3)
if mode == "garbage":
    print("not json")
    sys.exit(0)
status = {{"token": "token-%d" % runs}}
if mode == "token-file":  # a token the apiserver refuses first, then the one in $TOKEN_FILE
    status = {{"token": "refused" if runs == 1 else open(os.environ["TOKEN_FILE"]).read()}}
if mode == "cert":
    status = {{
        "clientCertificateData": open(os.environ["CERT_FILE"]).read(),
        "clientKeyData": open(os.environ["KEY_FILE"]).read(),
    }}
if os.environ.get("EXPIRES"):
    status["expirationTimestamp"] = os.environ["EXPIRES"]
print(json.dumps({{"apiVersion": version, "kind": "ExecCredential", "status": status}}))
"""


def write_plugin(path: Path) -> Path:
    """Write the plugin as an executable at ``path`` (run by this interpreter)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PLUGIN.format(python=sys.executable, v1=V1))
    path.chmod(0o755)
    return path
