"""Importing the framework and the controller-manager CLI stays light (issue #13: ≤ 50 MiB RSS).

Measured on CPython 3.11 (x86_64 Linux): 45.7 MiB after ``import reconcile, controllers.cli``,
against 92.8 MiB while kubernetes-asyncio's generated client and cryptography were imported.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

BUDGET_MIB = 50.0
"""Issue #13's goal; 4.3 MiB above the figure measured, less than any heavy import costs."""
NEVER_IMPORTED = ("kubernetes_asyncio", "cryptography")

PROBE = """
import json, sys
import reconcile, controllers.cli
rss = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS"))
print(json.dumps({"rss_kib": rss, "modules": sorted(sys.modules)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_importing_reconcile_and_the_cli_fits_the_budget() -> None:
    # -I: no user site, no PYTHON* variables, as a fresh controller-manager process starts.
    done = subprocess.run(
        [sys.executable, "-I", "-c", PROBE], capture_output=True, check=True, timeout=120
    )
    probe = json.loads(done.stdout)
    heavy = [m for m in probe["modules"] if m.split(".")[0] in NEVER_IMPORTED]
    assert heavy == [], "imported at start, though only rare paths need them"
    rss_mib = probe["rss_kib"] / 1024
    assert rss_mib <= BUDGET_MIB, f"{rss_mib:.1f} MiB after the imports"
