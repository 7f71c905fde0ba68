"""Variables: values, metadata, sharding metadata, ref and hijax Variables."""
