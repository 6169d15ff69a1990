"""ATREX's implementations of ``atrex.fused_recurrent_gated_delta_rule`` (GDN decode / MTP), per arch."""
