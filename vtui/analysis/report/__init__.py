"""The façade: every analysis over one range assembled (Insights), and the comparison of two."""
