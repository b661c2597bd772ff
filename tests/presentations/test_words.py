from __future__ import annotations

from amends_toolkit.presentations._words import query_terms, stem, words


def test_names_read_in_words_whatever_their_case_or_separator() -> None:
    assert words("create_issue") == words("create-issue") == words("createIssue")
    assert words("createIssue") == ["create", "issue"]
    assert words("getHTTPResponse v2") == ["get", "http", "response", "v", "2"]
    assert words("box__get_files_id#thumb") == ["box", "get", "files", "id", "thumb"]


def test_stems_make_the_forms_of_a_word_meet_without_merging_other_words() -> None:
    assert {stem(w) for w in ("create", "creates", "created", "creating")} == {stem("create")}
    assert stem("playlists") == stem("playlist")
    assert stem("policies") == stem("policy")
    assert stem("matches") == stem("match")
    assert stem("status") == "status"
    assert stem("user") != stem("use")


def test_a_query_s_terms_leave_out_common_words_unless_it_has_nothing_else() -> None:
    assert query_terms("list the songs in a playlist") == ["list", "song", "playlist"]
    assert query_terms("the") == ["the"]
    assert query_terms("create creating issues") == [stem("create"), stem("issue")]  # each once
