"""Suite freeze (`python -m pipeline.freeze`): a dataset's file frozen into the project's suite format.

A dataset's JSONL or JSON file, the source, becomes a suite file with its sha256.

The command and its options are `__main__`; one record of the source as a suite item is `records`, whether
its reference answer is one its verifier reads `references`, the suite written from every record (or every
refusal) `suite_file`, and what is refused or written `outcome`.
"""
