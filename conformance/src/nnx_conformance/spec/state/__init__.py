"""State: its mapping methods, flat and pure-dict forms, splitting and merging."""
