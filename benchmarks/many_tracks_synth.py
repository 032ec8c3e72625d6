"""A trace of odd shape for the scale benchmarks: one short slice on each of N threads
(1,000,000 tracks in ~65 MB), every eighth thread named by an M event.

    python benchmarks/many_tracks_synth.py OUT.json [--tracks 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def bench_arguments(doc: str, root: Path) -> tuple[argparse.Namespace, Path]:
    """The many-tracks benchmarks' shared command line (--tracks, --runs, --root, --cache) and the
    trace they measure, written once into the cache folder."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tracks", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--root", type=Path, default=root, help="the vtui checkout to measure (default: this one)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vtui-bench")
    opts = parser.parse_args()
    opts.cache.mkdir(parents=True, exist_ok=True)
    path = opts.cache / f"many_tracks_{opts.tracks}.json"
    if not path.exists():
        write_many_tracks(path.with_suffix(".tmp"), opts.tracks).rename(path)
    return opts, path


def write_many_tracks(path: Path, tracks: int) -> Path:
    """One X event per thread (tid 0..tracks-1 of pid 1) and a thread_name for every eighth."""
    with open(path, "w") as out:
        out.write('{"traceEvents":[\n')
        out.write('{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"wide"}}')
        for tid in range(tracks):
            out.write(f',\n{{"ph":"X","name":"op{tid % 97}","pid":1,"tid":{tid},'
                      f'"ts":{tid},"dur":1}}')
            if tid % 8 == 0:  # some threads are named: both kinds of title are made
                out.write(f',\n{{"ph":"M","name":"thread_name","pid":1,"tid":{tid},"args":{{"name":"w{tid}"}}}}')
        out.write("\n]}\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--tracks", type=int, default=1_000_000)
    args = ap.parse_args()
    write_many_tracks(args.out, args.tracks)
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB, {args.tracks:,} tracks")


if __name__ == "__main__":
    main()
