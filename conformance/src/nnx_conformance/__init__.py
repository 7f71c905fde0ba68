"""nnx_conformance: the Flax NNX documentation as an executable conformance suite.

Run it against any implementation with ``pytest --pyargs nnx_conformance --impl M``;
the pytest plugin (``nnx_conformance.plugin``) collects the suite in ``spec/``.
"""

__version__ = "0.1.0"
