"""`stream-worker up`: the whole stack on one machine, supervised, its data in one directory."""
