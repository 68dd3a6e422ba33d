"""Ask's calibration is measured again only when the index moved enough to move its points: a
live index grows by an issue at a time, and measuring on each would cost every question seconds."""

from resolveflow.ask.calibration import DRIFT, still_holds
from resolveflow.store.documents import IndexState, SpaceRow

SPACE = SpaceRow(id=3, provider="onnx", model="minilm", dimensions=384)


def _state(chunks: int, space: SpaceRow = SPACE) -> IndexState:
    return IndexState(space=space, chunk_count=chunks)


def test_one_more_issue_among_thousands_keeps_the_points() -> None:
    assert still_holds(3, 4000, _state(4001))
    assert still_holds(3, 4000, _state(int(4000 * (1 + DRIFT))))


def test_a_grown_or_shrunk_index_is_measured_again() -> None:
    assert not still_holds(3, 4000, _state(int(4000 * (1 + DRIFT)) + 1))
    assert not still_holds(3, 4000, _state(3000))
    assert not still_holds(3, 10, _state(11))  # a small index: one page is a real change


def test_another_space_is_measured_again() -> None:
    other = SpaceRow(id=4, provider="onnx", model="other", dimensions=384)
    assert not still_holds(3, 4000, _state(4000, other))
