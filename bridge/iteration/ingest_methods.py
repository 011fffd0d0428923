"""Dataset methods for training ingest (epochs, splits, torch / tf.data exporters).

Kept apart from ``dataset.py`` so each domain's methods live with their code;
:class:`bridge.dataset.Dataset` inherits this mixin.
"""

from __future__ import annotations


class IngestMethods:
    """Training-ingest methods of :class:`bridge.Dataset` (issue: training ingest)."""
