"""stream_worker: licence plates from Kafka camera feeds, read by an NVIDIA Triton pipeline."""

__version__ = "0.1.0"
