"""The nn layers, activations, initializers, masks, pooling and attention."""
