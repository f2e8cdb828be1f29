"""ML only, no SQL and no Gradio. One package per concern:

- ``core.encoding``: the encoder registry (MiniLM, mpnet), the on-disk embedding cache.
- ``core.retrieval``: the k-NN index, explanations and the one :class:`Predictor`.
- ``core.training``: pairs, losses, the loop, LoRA, saving and loading tuned encoders.
- ``core.multilabel``: the Multi-ConvFiT head, its thresholds and metrics.
- ``core.evaluation``: one fold splitter, one scoring rule per task, space metrics.
- ``core.bundle``: the portable model bundle (writer, reader, safety checks, int8 ONNX).
- ``core.projection``: 2D maps (UMAP, t-SNE, PCA).
- ``core.slots``: the slot book and templates (TaDSE): their checks, templates from annotations.

Importing ``core`` loads nothing heavy; each subpackage imports its own dependencies.
"""

from __future__ import annotations
