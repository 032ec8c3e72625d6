"""The device side: activity and idle time, memory, CUDA/HIP graphs, FLOPs, peaks and the roofline,
and the lists (idle gaps, outliers) the Insights screen jumps from."""
