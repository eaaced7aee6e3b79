"""Common random numbers: one seed per (item, sample), identical in every arm, rerun and batch order."""

from __future__ import annotations

from hashlib import blake2b


def sample_seed(protocol_seed: int, item_id: str, j: int) -> int:
    """Seed of sample j of item_id: blake2b of 'seed|item|j', 31 bits."""
    digest = blake2b(f"{protocol_seed}|{item_id}|{j}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def round_seed(seed: int, round_index: int) -> int:
    """Seed of a later round of a multi-turn sample; round 0 keeps the sample seed itself."""
    if round_index == 0:
        return seed
    digest = blake2b(f"{seed}|round|{round_index}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF
