"""The visits service: a plate's entry and exit sightings of a site paired into visits."""
