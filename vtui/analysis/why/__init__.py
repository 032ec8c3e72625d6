"""Why a step takes its time: the critical path (graph, walk, summaries) and the findings with hints."""
