"""Input errors that name the object and the field."""

from __future__ import annotations


class InputError(ValueError):
    """A malformed input value. str() is one line: `<object>: <field>: <problem>`."""

    def __init__(self, obj: str, field: str, problem: str, hint: str | None = None) -> None:
        self.obj = obj
        self.field = field
        self.problem = problem
        self.hint = hint  # what the user most likely meant: the CLI prints it on a line of its own
        super().__init__(self.line())

    def line(self) -> str:
        parts = [p for p in (self.obj, self.field) if p]
        return ": ".join([*parts, self.problem])


class ConfigError(ValueError):
    """A configuration with one or more problems; all are reported at once."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))
