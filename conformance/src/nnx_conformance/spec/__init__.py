"""The conformance suite: doc examples, property, signature and error tests."""
