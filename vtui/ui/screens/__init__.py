"""The screens over the timeline: Insights, call tree, SQL, ranks, compare and the modal prompts."""
