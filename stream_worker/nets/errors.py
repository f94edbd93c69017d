"""One base error for everything `models prepare` can fail on, so the CLI reports it cleanly."""


class ModelPrepareError(RuntimeError):
    """Preparing the model artifacts failed; the message says what, where and how to fix it."""
