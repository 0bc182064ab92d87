"""The requests a kube-apiserver served, from its ``apiserver_request_total`` counter.

The apiserver counts every request it finished by verb, group, resource, subresource, scope and
response code (k8s.io/apiserver's ``apiserver_request_total``); two scrapes of ``/metrics`` around a
phase give the requests of that phase. Long-running requests (WATCH) are counted when they end,
so a phase's watches mostly do not show: what shows is reads and writes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Final

from reconcile import Client

__all__ = ["Requests", "parse_requests", "request_table", "scrape_requests"]

Requests = Counter[tuple[str, str, str]]
"""(verb, resource[/subresource], code) → requests."""

_SAMPLE: Final = re.compile(r"^apiserver_request_total\{([^}]*)\} ([0-9.e+-]+)$")
_LABEL: Final = re.compile(r'(\w+)="([^"]*)"')


def parse_requests(text: str) -> Requests:
    """The ``apiserver_request_total`` samples of a /metrics page, summed over the labels
    other than verb, resource, subresource and code."""
    found: Requests = Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match.group(1)))
        resource = labels.get("resource") or "(non-resource)"
        if labels.get("subresource"):
            resource = f"{resource}/{labels['subresource']}"
        key = (labels.get("verb", "?"), resource, labels.get("code", "?"))
        found[key] += int(float(match.group(2)))
    return found


async def scrape_requests(client: Client) -> Requests:
    """The apiserver's request counters now (read with an admin client).

    Raises:
        RuntimeError: the apiserver answered /metrics with an error.
    """
    status, body = await client.get_path("/metrics")
    if status != 200:
        raise RuntimeError(f"GET /metrics answered {status}: {body[:200]!r}")
    return parse_requests(body.decode())


def _is_error(code: str) -> bool:
    return not code.startswith("2")


def request_table(
    delta: Requests, templates: int, parent: Mapping[tuple[str, str], int]
) -> list[str]:
    """Lines: requests per template by verb and resource, the parent's own share (``parent``:
    (verb, resource) → requests it made) subtracted into its own column; error codes apart.

    Columns: all requests, the parent's, the rest (the controller-manager's), per template.
    """
    by_request: Counter[tuple[str, str]] = Counter()
    errors: Counter[tuple[str, str, str]] = Counter()
    for (verb, resource, code), count in delta.items():
        if verb == "WATCH" or resource.startswith("(non-resource)"):
            continue  # watches end outside the phase; /metrics and probes are the bench's own
        by_request[verb, resource] += count
        if _is_error(code):
            errors[verb, resource, code] += count
    lines = [f"    {'verb resource':<44} {'all':>7} {'bench':>7} {'manager':>8}"]
    manager_total = 0.0
    for (verb, resource), count in sorted(by_request.items(), key=lambda item: -item[1]):
        own = min(parent.get((verb, resource), 0), count)
        manager_total += (count - own) / templates
        lines.append(
            f"    {verb + ' ' + resource:<44} {count / templates:7.2f} {own / templates:7.2f}"
            f" {(count - own) / templates:8.2f}"
        )
    lines.append(f"    {'total (controller-manager)':<44} {'':>7} {'':>7} {manager_total:8.2f}")
    for (verb, resource, code), count in sorted(errors.items()):
        lines.append(f"    of which {verb} {resource} answered {code}: {count / templates:.3f}")
    return lines
