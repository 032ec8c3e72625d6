"""The panes under the timeline: details, aggregation, measurements, footer, scroll bars."""
