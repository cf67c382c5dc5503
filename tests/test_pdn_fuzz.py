"""Fuzzing the PDN reader: random and mutated files must each be read in bounded time.

Every text, however broken, must give a :class:`PdnDocument` (never an exception,
never a hang): the good games read, one :class:`PdnError` per broken game.  The
texts come from a seeded generator, so a failure is reproducible; a watchdog
(``SIGALRM``) turns a hang into a failure that names the text.
"""
from __future__ import annotations

import random
import signal
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from uci_checkers.rules.pdn import PdnDocument, PdnError, parse_pdn, read_game, write_game

DATA = Path(__file__).parent / "data"
SEED = 20261130
PER_TEXT_SECONDS = 5.0     # a few ms is normal; the bound only catches a hang or a quadratic blow-up

# Pieces of PDN a mutation inserts: every character the tokenizer treats specially, and the
# inputs the new-user trial found (stray ']', huge numbers, non-ASCII digits, NBSP).
FRAGMENTS = ["[", "]", "{", "}", "(", ")", ";", "%", "$", "$12", "*", "1-0", "0-1", "1/2-1/2", "2-0",
             ".", "...", "12.", "12...", "11-15", "15x24x31", "x", "-", ":", "\"", "\\", "\n", "\r\n",
             " ", "\t", "!", "??", "[Event \"x\"]", "[FEN \"W:W21:B1\"]", "[GameType \"21\"]",
             "[Result \"1-0\"]", "]]", "[[", "9" * 4400, "1" * 60 + ".", "$" + "7" * 5000,
             "١١-١٥", "１１-１５", "11\u00a0-15", "\ufeff", "\x00", "×", "½-½", "a3-b4",
             "[FEN \"B:W21-32:B1-" + "9" * 4400 + "\"]", "(" * 50, ")" * 50, "{" * 50]


@contextmanager
def watchdog(seconds: float, what: str):
    """Fail (instead of hanging) when the block runs longer than ``seconds``."""

    def expired(signum, frame):
        raise TimeoutError(f"parsing took more than {seconds} s: {what}")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _check(text: str, what: str) -> PdnDocument:
    with watchdog(PER_TEXT_SECONDS, what):
        doc = parse_pdn(text)
    assert isinstance(doc, PdnDocument)
    assert all(isinstance(e, PdnError) for e in doc.errors)
    for game in doc.games:                         # what was read writes and reads back the same
        again = read_game(write_game(game))
        assert again.moves == game.moves and again.start == game.start
    return doc


def _seed_texts() -> list[str]:
    good = (DATA / "awkward.pdn").read_text(encoding="utf-8")
    return [good, '[Event "x"]\n[Result "1-0"]\n1. 11-15 23-19 2. 8-11 22-17 {c} 1-0\n',
            "1. 9-13 23-19 (1... 22-18 {v}) 2. 10-15 19x10 3. 6x15 *\n"]


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        at = rng.randint(0, len(text))
        if op < 0.45:
            text = text[:at] + rng.choice(FRAGMENTS) + text[at:]
        elif op < 0.65 and text:
            end = min(len(text), at + rng.randint(1, 40))
            text = text[:at] + text[end:]
        elif op < 0.85 and text:
            end = min(len(text), at + rng.randint(1, 200))
            text = text[:at] + text[at:end] * rng.randint(2, 4) + text[end:]
        else:
            text = text[:at]                        # a file cut off mid-write
    return text


def test_mutated_files_are_read_in_bounded_time():
    rng = random.Random(SEED)
    seeds = _seed_texts()
    read_games = errors = 0
    for k in range(300):
        text = _mutate(rng, rng.choice(seeds))
        doc = _check(text, f"mutation {k} (seed {SEED})")
        read_games += len(doc.games)
        errors += len(doc.errors)
    assert read_games > 0 and errors > 0           # the mutations both keep and break games


def test_random_texts_are_read_in_bounded_time():
    rng = random.Random(SEED + 1)
    alphabet = "[]{}()\";%$*.-x:!?/\\ \n\t0123456789KBWabc١１\u00a0"
    for k in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
        _check(text, f"random text {k} (seed {SEED + 1})")
    for k in range(200):
        text = " ".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 60)))
        _check(text, f"fragment text {k} (seed {SEED + 1})")


def test_four_thousand_malformed_games_parse_quickly():
    """4,000 games, each broken in its own way, read in one pass: one error per broken game."""
    rng = random.Random(SEED + 2)
    breakers = ["]", "]]", "9" * 4400 + ".", "١١-١٥", "{never closed", "(never closed",
                "17x10", "$", "a3-b4", "}"]
    games = []
    for k in range(4000):
        breaker = breakers[k % len(breakers)]
        games.append(f'[Event "{k}"]\n[Result "*"]\n1. 11-15 23-19 {breaker} 2. 8-11 22-17 *\n')
    text = "\n".join(games)
    t0 = time.perf_counter()
    with watchdog(60.0, "4,000 malformed games"):
        doc = parse_pdn(text)
    elapsed = time.perf_counter() - t0
    assert len(doc.games) == 0
    assert len(doc.errors) == 4000
    assert [e.game_index for e in doc.errors] == list(range(4000))
    print(f"4,000 malformed games parsed in {elapsed:.2f} s")


@pytest.mark.parametrize("text, reason", [
    ('[Event "x"]]\n1. 11-15 *\n', "']'"),
    ("1. 11-15 ] 23-19 *\n", "']'"),
    ("1. 11-15 23-19 " + "9" * 4400 + ". 8-11 *\n", "digits"),
    ("1. ١١-١٥ *\n", "non-ASCII"),
    ("1. 11-15 $" + "1" * 5000 + " *\n", "digits"),
    ('[FEN "B:W21-32:B1-' + "9" * 4400 + '"]\n1. 11-15 *\n', "FEN"),
])
def test_each_fault_the_trial_found_is_one_error_for_its_game(text, reason):
    doc = _check(text + '[Event "after"]\n1. 11-15 *\n', reason)
    assert [g.tags.get("Event") for g in doc.games] == ["after"]   # the next game is still read
    assert len(doc.errors) == 1 and reason in doc.errors[0].reason
