"""The REST API's bodies about a project's model versions: the list with each version's
metrics and files, the disk they use against the deployment's budget, and a prune's answer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Version(BaseModel):
    """A model version with its headline metrics (as the Train tab's history shows it)."""

    model_config = ConfigDict(extra="allow")
    version: int
    active: bool
    method: str = Field(
        ...,
        description="the method as recorded: convfit (ConvFiT Stage 2), lora, or fast (ConvFiT "
        "Stage 2's name until issue 55: the same method)",
    )
    method_name: str = Field(..., description="the method as the Train tab names it")
    accuracy: float | None = None
    macro_f1: float | None = None
    serving: str | None = Field(
        None, description="the active version: `int8` or `fp32`, the encoder that serves it"
    )
    trigger: str = Field(
        "manual", description="who asked for it: manual, or auto (a retrain after new labels)"
    )
    steps: int | None = Field(
        None, description="the training steps of the checkpoint it holds (of `of_steps`)"
    )
    of_steps: int | None = Field(None, description="its job's planned training steps")
    created: str
    pinned: bool = Field(False, description="pinned: it keeps its files whatever else holds")
    files: str = Field(
        "",
        description="its files as the retention rule leaves them: `kept: <why>` (active, newest N, pinned, activated by hand, exported, used by a retrain), `removed …`, or "
        "`removed at the next pass`",
    )
    files_removed: str | None = Field(
        None, description="why its files were removed (null: it has them): it cannot serve"
    )
    disk_bytes: int = Field(0, description="the bytes its files (artifact and int8 copy) use")


class VersionsDisk(BaseModel):
    """The disk a project's versions use, against the deployment's budget."""

    bytes: int = Field(..., description="what the versions that have files use")
    budget_bytes: int = Field(
        ..., description="a retrain is refused (409) once the versions use this much"
    )
    with_files: int
    versions: int
    words: str


class VersionsOut(BaseModel):
    versions: list[Version]
    disk: VersionsDisk


class PruneOut(BaseModel):
    message: str
    removed: list[int] = Field(..., description="the versions whose files were removed")
    freed_bytes: int
