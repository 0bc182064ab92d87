"""Fuzz the fieldOverrider's document loader: PyYAML's answer, or a refusal, quickly.

The text is a tenant's (a ConfigMap value) and is parsed on the event loop (#26 item 3). Any
text, from random characters or from YAML pieces that include anchors, aliases, tags and deep
nesting, must load to what ``yaml.safe_load`` reads (where that reads anything: libyaml is a
little more lenient) or raise ``DocumentError`` or ``yaml.YAMLError`` (which the overrider
reports on its entry), within a wall-time bound.
"""

from __future__ import annotations

from typing import Final

import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from controllers.binding.documents import DocumentError, load_yaml
from tests.fuzz.strategies import fuzz_settings, within

_PIECES: Final = [
    "a", "b: ", "- ", "[", "]", "{", "}", ", ", ": ", "\n", "  ", "&x ", "*x", "&y ", "*y",
    "!!str ", "!!binary ", "!!python/object:os.system ", "'", '"', "|\n", ">\n", "---\n",
    "...\n", "# c\n", "? ", "1", "0x1F", "1e3", "null", "~", "yes", "<<: ", "\t", "\u00e9",
    "!!int", "!!float", "!!bool", "!!timestamp ", "!!set ", "!!omap ", "\x1f",
]  # fmt: skip

pieces = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)
nested = st.integers(0, 400).map(lambda depth: "[" * depth + "1" + "]" * depth)
texts = st.one_of(st.text(max_size=80), pieces, nested)


@fuzz_settings(max_examples=600)
@given(text=texts)
def test_every_text_loads_as_safe_load_or_is_refused(text: str) -> None:
    with within(2):
        try:
            loaded = load_yaml(text)
        except DocumentError:
            event("DocumentError")
            return
        except yaml.YAMLError:
            event("YAMLError")
            return
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError:
        # libyaml reads a few texts PyYAML's Python scanner refuses (a tab after a scalar).
        event("loaded by libyaml only")
        return
    event("loaded")
    assert loaded == expected
