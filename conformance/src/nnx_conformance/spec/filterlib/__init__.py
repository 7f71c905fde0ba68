"""Filters: the Any/All/Not algebra, the atomic filters and their shorthand forms."""
