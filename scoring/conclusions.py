"""Conclusions stated in words: yes/no and "none" answers, and text answers whose words a conclusion states.

A reference "No", "Yes", "No integer solutions", "It is not possible" or "The sequence does not exist" is
a stance: yes (it holds, it exists) or no (it does not, there is none). A response states one in its
conclusion (its last sentences) by an opening "Yes"/"No", "it is (not) possible", "there is/are no ...",
"no such ...", "does not exist", "has no solutions". It is read only where the question asks for it: a
yes/no question for Yes/No, a "find all" (determine, solve, how many, which) question for a "none"; anything
less clear is not read. A text reference ("Monotonically increasing", "The sequence is not periodic") is
stated when the conclusion holds its words in order (articles and "given" aside) with as many negations.

Hand-written: math-verify compares mathematical objects and sympy has no notion of a stated conclusion.
"""

from __future__ import annotations

import re

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_YES_NO_QUESTION = re.compile(
    r"(?:^|[.?!,]\s+|\n)\s*(?:is|are|can|could|does|do|did|must|will|would|has|have|was|were|should|may|"
    r"shall)\b[^?!]*\?|\b(?:determine|decide|show|prove)\s+(?:whether|if)\b|\bprove\s+or\s+disprove\b|"
    r"\bwhether\b[^?!]*\?",
    re.I,
)
_FIND_QUESTION = re.compile(
    r"\b(?:find|determine|list|solve|how\s+many|which|what\s+(?:are|is)|does\s+there|do\s+there|is\s+there|"
    r"are\s+there|exists?)\b",
    re.I,
)
_OPENING_NO = re.compile(r"^\W*no\b(?!\s+(?:more|less|matter|later|longer))", re.I)
_OPENING_YES = re.compile(r"^\W*yes\b", re.I)
_NONE_WORDS = re.compile(
    r"\b(?:(?:is|are|was|were)\s+not\s+possible|there\s+(?:is|are|exist|exists|were|was)\s+no\b|"
    r"no\s+such\b|(?:does|do|did)\s+not\s+exist|doesn't\s+exist|don't\s+exist|"
    r"(?:has|have)\s+no\s+(?:\w+\s+){0,3}(?:solutions?|roots?|zeros?|values?)|"
    r"no\s+(?:\w+\s+){0,3}(?:solutions?|values?|roots?|zeros?|numbers?|sequences?|pairs?)\s+(?:exists?|"
    r"satisfy|satisfies|to|for|of|in|that|which|can|are|is)\b|no\s+(?:\w+\s+){0,2}solutions?\b)",
    re.I,
)
# What answers a yes/no question: "it is (not) possible", "does not exist", "no such ... exists"; "there
# are no solutions" answers a "find all" question, not whether something holds.
_YES_NO_WORDS = re.compile(
    r"\b(?:(?:is|are|was|were)\s+not\s+possible|(?:does|do|did)\s+not\s+exist|doesn't\s+exist|"
    r"no\s+such\s+(?:\w+\s+){0,3}(?:exists?|is\s+possible))",
    re.I,
)
_YES_WORDS = re.compile(r"\b(?<!not\s)(?:it\s+is\s+possible|the\s+answer\s+is\s+yes)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|no|never|none|cannot|nor)\b|n't\b", re.I)
_REF_NO = re.compile(
    r"^(?:no|none)\b|\bnot\s+possible\b|\b(?:does|do)\s+not\s+exist\b|\bthere\s+(?:are|is)\s+no\b|\bno\s+such\b",
    re.I,
)
_REF_YES = re.compile(r"^yes\b", re.I)
_SKIP_WORDS = frozenset(["the", "a", "an", "given", "such", "that", "this"])


def reference_stance(reference: str) -> str | None:
    """'yes' or 'no' where a reference is a stance ('No', 'No integer solutions', 'It is not possible',
    'Yes, and ...'), else None; 'yes_no' questions and 'none' answers are told apart by reference_kind."""
    ref = reference.strip()
    if _REF_YES.search(ref):
        return "yes"
    if _REF_NO.search(ref):
        return "no"
    return None


def reference_kind(reference: str) -> str | None:
    """'yes_no' for a bare Yes/No reference, 'none' for one that says there is none, else None."""
    stance = reference_stance(reference)
    if stance is None:
        return None
    bare = re.fullmatch(r"\W*(?:yes|no)\W*|\W*(?:yes|no),.*", reference.strip(), re.I | re.S)
    return "yes_no" if bare else "none"


def question_allows(question: str, kind: str) -> bool:
    """Whether the question asks what a reference of this kind answers (yes/no, or find all)."""
    if kind == "yes_no":
        return _YES_NO_QUESTION.search(question) is not None
    return _FIND_QUESTION.search(question) is not None or _YES_NO_QUESTION.search(question) is not None


def sentence_stance(sentence: str, kind: str = "none") -> str | None:
    """'yes' or 'no' where one sentence states a stance (kind 'yes_no': as an answer to a yes/no question),
    None where it states none or both."""
    words = _YES_NO_WORDS if kind == "yes_no" else _NONE_WORDS
    no = bool(_OPENING_NO.search(sentence) or words.search(sentence))
    yes = bool(_OPENING_YES.search(sentence) or _YES_WORDS.search(sentence))
    if no == yes:
        return None
    return "no" if no else "yes"


def conclusion_sentences(text: str, last: int = 2) -> list[str]:
    """The last sentences of a text (its conclusion), the last first."""
    sentences = [s.strip() for s in _SENTENCES.split(text.strip()) if s.strip()]
    return sentences[::-1][:last]


def conclusion_stance(text: str, kind: str = "none") -> str | None:
    """The stance the conclusion states: the last sentence that states one, of the last two."""
    for sentence in conclusion_sentences(text):
        stance = sentence_stance(sentence, kind)
        if stance is not None:
            return stance
    return None


# The notation that names a subject as well as its word does ("lim" for the limit).
_NOTATION = {"limit": "lim"}


def subject_stated(subject: str, text: str) -> bool:
    """Whether a conclusion sentence of text names the subject (its word, plural or notation), so that the
    value it states is stated of that subject and not a number of the working."""
    names = [re.escape(subject) + "s?", *([_NOTATION[subject]] if subject in _NOTATION else [])]
    pattern = re.compile(r"\b(?:" + "|".join(names) + r")\b", re.I)
    return any(pattern.search(s) for s in conclusion_sentences(text))


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+(?:'t)?", text.casefold()) if w not in _SKIP_WORDS]


def _in_order(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(w == h for h in it) for w in needle)


def words_stated(reference: str, text: str) -> bool:
    """Whether a conclusion sentence of text holds the reference's words in order, with as many negations."""
    want = _words(reference)
    if len(want) < 2:
        return False  # one word ('No', 'odd') is a stance or an exact answer, not a statement
    negations = len(_NEGATION.findall(reference))
    return any(
        _in_order(want, _words(s)) and len(_NEGATION.findall(s)) == negations
        for s in conclusion_sentences(text)
    )


def text_verdict(reference: str, answer: str, question: str) -> bool | None:
    """True where the answer states the text reference, False where it states the opposite stance, None
    where the words cannot tell (the reader cannot settle it)."""
    kind = reference_kind(reference)
    if kind is not None and question_allows(question, kind):
        stated = conclusion_stance(answer, kind)
        if stated is not None:
            return stated == reference_stance(reference)
    if words_stated(reference, answer):
        return True
    return None
