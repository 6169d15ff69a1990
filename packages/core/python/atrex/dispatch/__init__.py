"""Target detection, plugin discovery, registry, selection and explain traces."""
