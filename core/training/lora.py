"""LoRA adapters (``peft``) on the transformer of a sentence-transformers model.

Only the adapter is stored per model version (``adapter_model.safetensors`` +
``adapter_config.json``, a few hundred KB for MiniLM); loading attaches it to a fresh copy of the
shared base encoder and merges it, so inference costs nothing extra.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from core.training.config import TrainConfig

logger = logging.getLogger(__name__)

# The adapter's shape past its rank (``TrainConfig.lora_r``): fixed, never measured against
# other values (they left ``TrainConfig``: core.training.config.LORA_FIXED).
LORA_ALPHA = 16
LORA_DROPOUT = 0.1
LORA_TARGETS = ("query", "value")  # the attention's query and value projections


def attach_lora(model: SentenceTransformer, config: TrainConfig) -> None:
    """Wrap ``model``'s transformer in a trainable LoRA ``PeftModel`` (in place); freeze the rest."""
    from peft import LoraConfig, get_peft_model

    module: Any = model[0]
    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=LORA_ALPHA,
        lora_dropout=LORA_DROPOUT,
        target_modules=list(LORA_TARGETS),
        bias="none",
    )
    for p in model.parameters():
        p.requires_grad_(False)
    module.model = get_peft_model(module.model, lora)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    logger.info("LoRA attached: %d trainable parameters", trainable)


def save_adapter(model: SentenceTransformer, directory: Path) -> None:
    """Write only the adapter (safetensors + config) of a LoRA-wrapped model into ``directory``."""
    peft_model: Any = model[0].model
    peft_model.save_pretrained(str(directory), safe_serialization=True)
    readme = directory / "README.md"
    if readme.exists():
        readme.unlink()


def attach_saved_adapter(model: SentenceTransformer, directory: Path) -> None:
    """Load the adapter in ``directory`` onto ``model`` (a fresh base copy) and merge it in place."""
    from peft import PeftModel

    module: Any = model[0]
    peft_model = PeftModel.from_pretrained(module.model, str(directory), is_trainable=False)
    module.model = peft_model.merge_and_unload()


def merged_copy(model: SentenceTransformer) -> SentenceTransformer:
    """A deep copy of a LoRA-wrapped model with the adapter merged (for fast inference)."""
    clone = copy.deepcopy(model)
    module: Any = clone[0]
    module.model = module.model.merge_and_unload()
    clone.eval()
    return clone
