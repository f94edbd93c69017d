"""The operators' console and HTTP API of the history store (FastAPI, Jinja2 pages, plain CSS, a
little vanilla JS, no build step), served by `stream-worker store` on a thread (console_thread.py)."""
