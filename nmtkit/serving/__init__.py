"""The HTTP translation server of ``nmtkit serve``: a dynamic batcher (``batcher.py``) and a
FastAPI app (``app.py``) over one :class:`~nmtkit.translation.translator.Translator`."""
