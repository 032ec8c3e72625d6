"""Loading: trace files to a TraceStore (decode in parallel processes, build, cache), and the
spawned process the app loads in. Sits on io and store; knows nothing of Textual."""
