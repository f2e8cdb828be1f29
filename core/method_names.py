"""The training methods by name: the name the product stores, the older names it still reads, and
what a user reads about each (its title and one line). No imports: the CLI's help reads it
without loading torch; :class:`core.training.TrainConfig` takes its names from here.

Example:
    >>> canonical_method("fast"), method_title("fast"), method_title("lora")
    ('convfit', 'ConvFiT Stage 2', 'LoRA adapter')
"""

from __future__ import annotations

# The methods a retrain trains (TrainConfig.method), by the name the product stores.
TRAINING_METHODS = ("convfit", "lora")
# Older names a request or a stored config may still use: ``fast`` was ConvFiT Stage 2's name
# until issue 55 (stored configs, scripts and REST clients keep working; versions trained as
# ``fast`` keep their recorded name and display as ConvFiT Stage 2).
METHOD_ALIASES = {"fast": "convfit"}
# Each method as a user reads it: its name and, in one short line, what it is.
METHOD_TITLES = {"convfit": "ConvFiT Stage 2", "lora": "LoRA adapter"}
METHOD_LINES = {
    # what the learning curve of issue 55 found (bench/RESULTS.md), in the line a user reads:
    # the data sets, not a file of the repository (issue 65, item 7)
    "convfit": "ConvFiT Stage 2: contrastive task-tuning of the sentence encoder; in-batch "
    "ranking loss (it beat the paper's own pair recipe at 25-200 steps on BANKING77 and "
    "CLINC150)",
    "lora": "LoRA adapter: the same ConvFiT Stage 2 tuning, training small adapters only (a "
    "300 KB version instead of 88 MB)",
}


def canonical_method(name: str) -> str:
    """A method's name as the product stores it now (``fast`` → ``convfit``).

    >>> canonical_method("fast"), canonical_method("lora")
    ('convfit', 'lora')
    """
    return METHOD_ALIASES.get(name, name)


def method_title(name: str | None) -> str:
    """A method as a user reads it, for a request's or a stored version's name (an older
    ``fast`` version is a ConvFiT Stage 2 version); an unknown name as it is.

    >>> method_title("fast"), method_title("convfit"), method_title("lora")
    ('ConvFiT Stage 2', 'ConvFiT Stage 2', 'LoRA adapter')
    """
    name = name or ""
    return METHOD_TITLES.get(canonical_method(name), name)


def method_choices() -> str:
    """The accepted names in one phrase, for refusals and help texts."""
    return (
        "convfit (ConvFiT Stage 2, the default; 'fast' is its older name, still accepted) or "
        "lora (LoRA adapter)"
    )
