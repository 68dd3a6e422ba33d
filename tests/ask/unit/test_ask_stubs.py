"""A stub page ("See [Node RAID Degraded](./NodeRAIDDegraded.md)") and the page it points to;
Hugo's reference shortcodes shown as paths."""

from __future__ import annotations

import pytest

from resolveflow.ask.text import pointed_page, quote

HUGO = '# NodeRAIDDiskFailure\n\nSee [Node RAID Degraded]({{< ref "./NodeRAIDDegraded.md" >}})\n'


@pytest.mark.parametrize(
    ("body", "own", "pointed"),
    [
        (HUGO, "node/NodeRAIDDiskFailure.md", "node/NodeRAIDDegraded.md"),
        ("See [x](./Other.md#meaning).", "a/Stub.md", "a/Other.md"),
        ("Moved to [x](../b/Other.md)", "a/Stub.md", "b/Other.md"),
        ('Same as [x]({{% relref "/b/Other.md" %}})', "a/Stub.md", "b/Other.md"),
        ("See [x](<Other page.md>)", "Stub.md", None),  # a space: not one path
        ("See [x](Other.markdown)", "Stub.md", "Other.markdown"),
    ],
)
def test_a_stub_points_to_the_page_it_links(body: str, own: str, pointed: str | None) -> None:
    assert pointed_page(body, own) == pointed


@pytest.mark.parametrize(
    "body",
    [
        "More information in [blog](https://www.robustperception.io/debugging)",  # the web
        "See [x](./Other.md) or [y](./Third.md)",  # two pages
        "See [x](./Other.png)",  # not a page
        "See [x](../../Outside.md)",  # out of the folder
        "See [x](./Stub.md)",  # itself
        "## Meaning\n\nThe disk array lost a member and runs without redundancy until it is "
        "rebuilt, see [x](./Other.md) for the steps.",  # a page with content of its own
        "",
    ],
)
def test_anything_else_is_no_stub(body: str) -> None:
    assert pointed_page(body, "a/Stub.md") is None


def test_hugo_references_are_shown_as_their_paths() -> None:
    assert quote(HUGO) == "# NodeRAIDDiskFailure\n\nSee [Node RAID Degraded](./NodeRAIDDegraded.md)"
    assert quote("plain [x](./a.md) text") == "plain [x](./a.md) text"
