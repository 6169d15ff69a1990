"""One module per public operator: signature, docstring, validation, dispatch."""
