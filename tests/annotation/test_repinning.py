"""Content versions from revision histories, and re-pinning rows that recorded the old item version."""
from annotation.repinning import content_versions, pinned, repin_unique

A, B, C = {"context": "a"}, {"context": "b"}, {"context": "c"}


def test_a_revision_that_changes_no_content_keeps_the_content_version():
    # import, queued (status only), published (status only), rewrite, status, revert to the first content
    history = [(1, A), (2, A), (3, A), (4, B), (5, B), (6, A)]
    assert content_versions(reversed(history)) == {1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3}


def test_an_old_version_maps_to_the_latest_revision_at_or_before_it():
    mapping = {1: 1, 3: 1, 4: 2, 7: 3}
    assert [pinned(v, mapping) for v in (1, 2, 3, 4, 5, 6, 7, 9)] == [1, 1, 1, 2, 2, 2, 3, 3]
    assert pinned(5, {}) == 1


def test_repinning_never_makes_two_rows_meet_on_a_unique_key():
    # Two labels of one target judged at versions 2 and 3 (status-only changes between): both are content 1.
    rows = [(10, ("q", "t", "verdict"), 2, 1), (11, ("q", "t", "verdict"), 3, 1), (12, ("q", "u", "verdict"), 3, 1)]
    moves = repin_unique(rows)
    assert moves == {10: 1, 12: 1}
    finals = {(key, moves.get(pk, old)) for pk, key, old, _ in rows}
    assert len(finals) == len(rows)
