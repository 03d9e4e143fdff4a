"""The path users run (issue 18): ``observe`` into a store with its default budget, read
through ``retrieve`` and ``render_context``.

* ``observe(speaker=...)`` makes the speaker's name part of what is matched.
"""

from __future__ import annotations

# --- speakers -----------------------------------------------------------------------------


def test_a_question_naming_a_speaker_matches_what_they_said(make_store) -> None:
    store = make_store()
    said = {who: store.observe("user", text, speaker=who)[0].id for who, text in
            [("Bo", "Lovely weather today."), ("Ana", "I adopted a puppy from the shelter"),
             ("Cy", "The puppy chewed my shoes")]}
    hits = {h.id: h for h in store.retrieve("What did Ana say about the puppy?",
                                            read_only=True, relative_cutoff=0)}
    assert hits[said["Ana"]].lexical == 1.0  # "ana" and "puppy": the best lexical match
    assert hits[said["Cy"]].lexical < 1.0
    assert max(hits.values(), key=lambda h: h.score).id == said["Ana"]
    assert store.get(said["Ana"]).content == "I adopted a puppy from the shelter"
