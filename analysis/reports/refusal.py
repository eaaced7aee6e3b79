"""The one refusal of the analyses: input they will not compare, said in one line, exit 2."""

EXIT_REFUSED = 2


class Refusal(Exception):
    """Input the analysis will not compare; str() is the one line the CLI prints before exiting 2."""
