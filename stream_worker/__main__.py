from stream_worker.cli import app

app()
