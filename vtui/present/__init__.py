"""Presentation: text, tables and bars made from analysis results (no Textual)."""
