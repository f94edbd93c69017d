"""Local child-process servers (tritonserver, the Tansu broker) for development, demos and tests."""
