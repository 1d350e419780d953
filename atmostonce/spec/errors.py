"""The single exception type for bad input anywhere in the package."""

from __future__ import annotations


class SpecError(ValueError):
    """Bad input: an unknown name, a wrong type, a malformed key or an invalid bound.

    The message is one line that names the problem; the CLI prints it and exits with 2.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def a_value_of(type_name: str) -> str:
    """`type_name` with its article, for messages that name what came back: "an object", "a
    dict"."""
    return f"{'an' if type_name[:1].lower() in 'aeiou' else 'a'} {type_name}"
