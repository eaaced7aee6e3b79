"""Transcripts as one token stream for training, with a loss mask on what the model writes.

Tokenized once, joined, and cut into windows that start at a transcript."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_RESPONSE = re.compile(r"(\n<tool_response>.*?</tool_response>\n)", re.S)


def _offsets(segs: list[list[tuple[str, float]]]) -> list[tuple[int, list[tuple[str, float]]]]:
    """(index of the transcript's first segment in the flattened list, its segments) per transcript."""
    out, k = [], 0
    for sg in segs:
        out.append((k, sg))
        k += len(sg)
    return out


class TokenStream:
    """Transcripts tokenized once and joined as <s> t </s> <s> t </s> ...; windows start at a <s>.

    The loss mask is 1 on what the model writes (completion tokens and their </s>) and 0 on the prompt and on
    the tool responses the runner appends: with the loss on every token the rare answer tokens were swamped
    by passage and question text.
    """

    def __init__(self, pairs: Sequence[tuple[str, str]], mask_responses: bool = True) -> None:
        import numpy as np
        import torch

        from demo.charmodel import BOS, EOS, build_tokenizer, vocabulary

        vocab = vocabulary()
        tok = build_tokenizer()
        # One tokenizer, one batch call: the same ids as demo.charmodel.encode gives text by text.
        # A transcript's segments (text, trained?): the prompt and the runner's tool responses are context.
        segs = [
            [(p, 0.0)]
            + [(t, float(i % 2 == 0 or not mask_responses)) for i, t in enumerate(_RESPONSE.split(c))]
            for p, c in pairs
        ]
        flat_texts = [t for sg in segs for t, _ in sg]
        seg_ids = [e.ids for e in tok.encode_batch(flat_texts, add_special_tokens=False)]
        lengths = np.array(
            [sum(len(seg_ids[j]) for j in range(k, k + len(sg))) + 2 for k, sg in _offsets(segs)]
        )
        self.starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        flat = np.empty(int(lengths.sum()), dtype=np.int64)
        mask = np.zeros(int(lengths.sum()), dtype=np.float32)
        for s, (k, sg) in zip(self.starts, _offsets(segs), strict=True):
            flat[s] = vocab[BOS]
            pos = s + 1
            for j, (_, trained) in enumerate(sg):
                ids = seg_ids[k + j]
                flat[pos : pos + len(ids)] = ids
                mask[pos : pos + len(ids)] = trained
                pos += len(ids)
            flat[pos] = vocab[EOS]
            mask[pos] = 1.0
        self.tokens = torch.from_numpy(flat)
        self.mask = torch.from_numpy(mask)
        self.max_len = int(lengths.max())

    def __len__(self) -> int:
        return int(self.tokens.numel())

    def batch(self, gen: Any, batch: int, seq_len: int) -> tuple[Any, Any]:
        """(tokens, loss mask), each (batch, seq_len + 1), of windows starting at random transcript starts."""
        import torch

        usable = self.starts[self.starts + seq_len + 1 <= len(self)]
        pick = [int(usable[i]) for i in torch.randint(len(usable), (batch,), generator=gen).tolist()]
        x = torch.stack([self.tokens[s : s + seq_len + 1] for s in pick])
        m = torch.stack([self.mask[s : s + seq_len + 1] for s in pick])
        return x, m
