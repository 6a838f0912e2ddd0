"""Many loops at once: batches, best-of-N attempts and fleets."""

from harness.scale.batch import Batch
from harness.scale.batch_task import BatchTask
from harness.scale.best_of import BestOf
from harness.scale.fleet import Fleet, Subtask

__all__ = ["Batch", "BatchTask", "BestOf", "Fleet", "Subtask"]
