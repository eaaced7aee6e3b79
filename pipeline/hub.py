"""Hub models offline: a `{hf: org/name, revision: <sha>}` model is read from the local Hugging Face cache.

The pipeline never downloads: a run must read what its pins name, and a machine without the model should
say so before an engine starts rather than fetch gigabytes in the middle of a DVC stage. The cache is
huggingface_hub's own (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub; the layout
models--org--name/snapshots/<sha>/), looked up through its public `snapshot_download(local_files_only=True)`.
A model that is not there at that commit is refused in one line naming the model, the revision and the
command that fetches it.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.config import ConfigError, ModelRef


def fetch_command(ref: ModelRef) -> str:
    """The command that puts a hub model at its pinned commit into the local cache."""
    return f"hf download {ref.hf} --revision {ref.revision}"


def check_repo_id(ref: ModelRef, key: str, params_file: Path | str = "params.yaml") -> None:
    """Refuse a hub id that is not 'org/name' as the hub spells ids (no '..', no path): ConfigError."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(str(ref.hf))
    except HFValidationError as e:
        raise ConfigError(
            f"{params_file}: models.{key}.hf: {ref.hf!r} is not a hub repository id "
            f"({str(e).splitlines()[0]}); write it as org/name"
        ) from None


def snapshot_dir(ref: ModelRef, key: str, params_file: Path | str = "params.yaml") -> Path:
    """The cached snapshot directory of hub model `key` at its commit; ConfigError in one line if absent."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    check_repo_id(ref, key, params_file)
    try:
        found = snapshot_download(str(ref.hf), revision=ref.revision, local_files_only=True)
    except LocalEntryNotFoundError:
        raise ConfigError(
            f"{params_file}: models.{key}: {ref.hf} at revision {ref.revision} is not in the local Hugging "
            f"Face cache ({constants.HF_HUB_CACHE}); fetch it with `{fetch_command(ref)}`"
        ) from None
    return Path(found)


def model_dir(ref: ModelRef, key: str, params_file: Path | str = "params.yaml") -> str:
    """What an engine and a tokenizer load: the local checkpoint directory or the hub model's snapshot."""
    return str(ref.path) if ref.path is not None else str(snapshot_dir(ref, key, params_file))
