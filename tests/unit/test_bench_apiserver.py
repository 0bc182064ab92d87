"""bench._apiserver: requests per template from two scrapes of apiserver_request_total."""

from __future__ import annotations

from bench._apiserver import parse_requests, request_table


def _sample(verb: str, resource: str, subresource: str, code: str, value: int) -> str:
    labels = (
        f'code="{code}",component="apiserver",dry_run="",group="apps",resource="{resource}",'
        f'scope="resource",subresource="{subresource}",verb="{verb}",version="v1"'
    )
    return f"apiserver_request_total{{{labels}}} {value}"


PAGE = "\n".join(
    [
        "# HELP apiserver_request_total [STABLE] Counter of apiserver requests ...",
        "# TYPE apiserver_request_total counter",
        _sample("POST", "deployments", "", "201", 10),
        _sample("PUT", "deployments", "status", "200", 4),
        _sample("PUT", "deployments", "status", "409", 1),
        _sample("GET", "", "/metrics", "200", 3),  # a non-resource request, as the apiserver has it
        _sample("WATCH", "deployments", "", "200", 2),
        'apiserver_requested_deprecated_apis{group="x"} 1',
    ]
)


def test_requests_are_counted_by_verb_resource_and_code() -> None:
    found = parse_requests(PAGE)
    assert found["POST", "deployments", "201"] == 10
    assert found["PUT", "deployments/status", "200"] == 4
    assert found["PUT", "deployments/status", "409"] == 1
    assert sum(found.values()) == 20


def test_the_table_puts_the_bench_apart_and_names_the_errors() -> None:
    lines = request_table(parse_requests(PAGE), 10, {("POST", "deployments"): 10})
    text = "\n".join(lines)
    assert "WATCH" not in text
    assert "/metrics" not in text
    post = next(line for line in lines if "POST deployments" in line)
    assert post.split()[-3:] == ["1.00", "1.00", "0.00"], "all the bench's"
    put = next(line for line in lines if "PUT deployments/status" in line)
    assert put.split()[-3:] == ["0.50", "0.00", "0.50"]
    assert lines[-2].split()[-1] == "0.50", "the controller-manager's total"
    assert lines[-1] == "    of which PUT deployments/status answered 409: 0.100"
