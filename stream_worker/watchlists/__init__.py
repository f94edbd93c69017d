"""The watch lists as every service and page that changes or reads them sees them: the compacted
topic (`topic.py`) and the CSV files operators import and export (`csvfile.py`). Shared logic: the
alerts service follows the topic, the CLI and the console write it."""
