"""The contamination audit's settings (params.yaml `contamination`) and the files its stage writes.

Two kinds of evidence that a suite item may have been seen in training, each recorded per item:

- a probe of a checkpoint (`ProbeFile`, `contamination/probe-<model>.json`): the model is given the first
  `prefix` share of the question and continues it greedily (the continuation compared with the rest of
  the question by exact match and ROUGE-L), and is asked the truncated question in its plain prompt (the
  answer judged by the suite's verifier), after Wu et al. 2025 (arXiv 2507.10532);
- the overlap of the suite with training data the user names (`OverlapFile`, `contamination/overlap.json`):
  the longest word n-gram run an item's question shares with a training text, and MinHash near-duplicates.

The analyses read these files and the `flag` thresholds, never a model: which items count as possibly seen
is decided there (analysis.reports.contamination_split).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contract.engine import EngineInfo

FORMAT_VERSION = 1
PROBE_PREFIX = "probe-"
OVERLAP_FILE = "overlap.json"


class TrainingData(BaseModel):
    """One training set to check the suite against: JSONL (the text under `field`) or plain text."""

    model_config = ConfigDict(extra="forbid")
    path: str
    # JSONL: the key holding each record's text (e.g. `question`, `prompt`); None: plain text, one
    # document per non-empty line.
    field: str | None = None


class FlagThresholds(BaseModel):
    """When an item counts as possibly seen: any one of these evidences is enough."""

    model_config = ConfigDict(extra="forbid")
    # The probe's continuation of the question equals its rest (after whitespace is collapsed).
    exact: bool = True
    # ROUGE-L F1 of the continuation against the rest at least this (null: not used).
    rouge_l: float | None = Field(default=0.9, ge=0.0, le=1.0)
    # The truncated question answered right by a probed checkpoint.
    answer: bool = True
    # A run of at least `ngram` words shared with a training text.
    ngram: bool = True
    # A MinHash near-duplicate of a training text (estimated Jaccard at least `overlap.minhash_threshold`).
    near_duplicate: bool = True
    # true: a run or near-duplicate counts only when its training text holds every number of the question
    # (templated problems share long runs of words with other numbers).
    same_numbers: bool = False
    # A probed checkpoint known never to have seen the suite (e.g. one trained only on data you hold): a
    # probe hit the reference model makes too is what the question's wording predicts, not memory, and
    # counts for no model; the reference's own hits count for nothing. null: every hit counts.
    reference: str | None = None


class OverlapSettings(BaseModel):
    """How the suite's questions are checked against the training data."""

    model_config = ConfigDict(extra="forbid")
    # Word n-grams, lower-cased; 13 is the GPT-3 / NeMo-Skills decontamination size, shorter for short
    # questions.
    ngram: int = Field(default=13, ge=1)
    # MinHash over word 5-shingles: the permutations and the estimated Jaccard at which a pair is a
    # near-duplicate (datasketch's MinHashLSH).
    minhash_perm: int = Field(default=128, ge=16)
    minhash_shingle: int = Field(default=5, ge=1)
    minhash_threshold: float = Field(default=0.8, gt=0.0, le=1.0)


class ContaminationSettings(BaseModel):
    """params.yaml `contamination`: the checkpoints probed, the training data named, the flag rule."""

    model_config = ConfigDict(extra="forbid")
    # Names in `models` whose checkpoints are probed (empty: no probe, the overlap only).
    models: list[str] = []
    # Share of the question's characters (cut back to a word boundary) the probes give the model.
    prefix: float = Field(default=0.6, gt=0.0, lt=1.0)
    # Tokens the completion probe may generate beyond the rest's own length in tokens.
    extra_tokens: int = Field(default=8, ge=0)
    # Tokens the answer probe may generate.
    answer_tokens: int = Field(default=64, ge=1)
    training_data: list[TrainingData] = []
    overlap: OverlapSettings = OverlapSettings()
    flag: FlagThresholds = FlagThresholds()
    # Where the stage writes its files (and the analyses read them).
    out: str = "contamination"


class ProbeItem(BaseModel):
    """One item's probes on one checkpoint."""

    model_config = ConfigDict(extra="forbid")
    item_id: str
    prefix: str  # the part of the question the model was given
    rest: str  # the part it was asked to reproduce
    completion: str  # the greedy continuation, cut to the rest's length in words
    exact: bool
    rouge_l: float
    answer_text: str  # the greedy answer to the truncated question
    answer: str | None  # the answer read from it
    answer_right: bool


class ProbeFile(BaseModel):
    """The probes of one checkpoint over the whole suite (`contamination/probe-<model>.json`)."""

    model_config = ConfigDict(extra="forbid")
    format: Literal[1] = FORMAT_VERSION
    kind: Literal["probe"] = "probe"
    model: str
    model_sha256: str | None  # the checkpoint's pin (a hub model: None, its revision in model_revision)
    model_revision: str | None = None
    suite: str
    questions_sha256: str
    prefix: float
    rouge: str  # the ROUGE-L implementation and version
    engine: EngineInfo
    inputs_sha256: str  # over everything above that decides the texts, and the probe code
    seconds: float  # wall time of the probes, engine start excluded
    items: list[ProbeItem]


class OverlapItem(BaseModel):
    """One item's overlap with the training data: the longest shared word run and a near-duplicate."""

    model_config = ConfigDict(extra="forbid")
    item_id: str
    longest_run: int  # words of the longest run the question shares with one training text
    span: str | None  # that run, as the question writes it
    source: str | None  # where the run is: `path:line`
    near_duplicate: str | None  # `path:line` of a MinHash near-duplicate, else None
    jaccard: float | None  # the estimated Jaccard of that near-duplicate
    # Whether the matching training text (the run's, else the near-duplicate's) holds every number of the
    # question: a templated problem with other numbers is another problem; with the same, the same one
    # reworded. None: no match.
    same_numbers: bool | None = None


class OverlapSource(BaseModel):
    """A training set as it was read: path, field, sha256 of its bytes, documents."""

    model_config = ConfigDict(extra="forbid")
    path: str
    field: str | None
    sha256: str
    documents: int


class OverlapFile(BaseModel):
    """The suite against the named training data (`contamination/overlap.json`)."""

    model_config = ConfigDict(extra="forbid")
    format: Literal[1] = FORMAT_VERSION
    kind: Literal["overlap"] = "overlap"
    suite: str
    questions_sha256: str
    settings: OverlapSettings
    sources: list[OverlapSource]
    datasketch: str
    items: list[OverlapItem]
