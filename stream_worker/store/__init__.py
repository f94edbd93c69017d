"""The history store: sightings and alerts kept in a database (SQLite or PostgreSQL), searchable by plate."""
