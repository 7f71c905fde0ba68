"""The lifted transforms: results, state left behind, tracing, devices and errors."""
