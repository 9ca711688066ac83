"""The gateway under uvicorn (one worker), for bench/gateway/run.py; optionally profiled.

Settings come from the environment (HOLON_DATABASE_URL, HOLON_SECRET_KEY,
HOLON_HOME, HOLON_AGENT_NETWORKS, …), as for `holon gateway serve`.

    python bench/gateway/serve.py --port 8000 [--profile OUT.pstats] [--cache-ttl 1.0]

`--profile` runs cProfile in every thread (the event loop and the
anyio worker threads that do the store work; one profiler per thread, since
one profiler's call stack cannot follow several threads) and writes the
merged stats to OUT when the server stops (SIGINT or SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import uvicorn  # noqa: E402

from bench._support import profile_every_thread  # noqa: E402
from gateway.server import SERVER_OPTIONS, create_app  # noqa: E402
from gateway.settings import Settings  # noqa: E402


class Sampler:
    """A wall-clock stack sampler: which code each thread is in, every millisecond.

    Unlike cProfile it barely slows the server, and it shows waiting (the
    selector, locks, the database) as well as running. Written as text:
    for each thread kind, the most frequent innermost frames and stacks.
    """

    def __init__(self, interval_s: float = 0.001) -> None:
        self.interval_s = interval_s
        self.leaves: dict[str, Counter[str]] = {}
        self.stacks: dict[str, Counter[str]] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        names = {}
        while not self._stop.wait(self.interval_s):
            for thread in threading.enumerate():
                names[thread.ident] = thread.name.split("-")[0].split("_")[0]
            self.samples += 1
            for ident, frame in sys._current_frames().items():
                if ident == threading.get_ident():
                    continue
                kind = names.get(ident, "?")
                here = f"{frame.f_code.co_filename.split('/')[-1]}:{frame.f_code.co_name}"
                self.leaves.setdefault(kind, Counter())[here] += 1
                parts = []
                walk: Any = frame
                while walk is not None and len(parts) < 12:
                    code = walk.f_code
                    if "site-packages" not in code.co_filename or len(parts) < 3:
                        parts.append(f"{code.co_filename.split('/')[-1]}:{code.co_name}")
                    walk = walk.f_back
                self.stacks.setdefault(kind, Counter())[" < ".join(parts)] += 1

    def stop(self, out: str) -> None:
        self._stop.set()
        self._thread.join()
        lines = [f"{self.samples} samples"]
        for kind, leaves in sorted(self.leaves.items()):
            total = sum(leaves.values())
            lines.append(f"\n== {kind} ({total} samples)")
            for name, n in leaves.most_common(25):
                lines.append(f"{100 * n / total:5.1f}%  {name}")
            lines.append("-- stacks")
            for stack, n in self.stacks[kind].most_common(25):
                lines.append(f"{100 * n / total:5.1f}%  {stack}")
        Path(out).write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cache-ttl", type=float, default=1.0)
    parser.add_argument("--eval-workers", type=int, default=1)
    parser.add_argument("--profile", metavar="OUT", help="write merged cProfile stats here")
    parser.add_argument(
        "--sample", metavar="OUT", help="sample every thread's stack each ms; write counts here"
    )
    parser.add_argument(
        "--switch-interval",
        type=float,
        help="the GIL switch interval (s) the server sets once started (default 0.001)",
    )
    parser.add_argument(
        "--http",
        choices=("h11", "httptools"),
        help="uvicorn's HTTP parser (default: SERVER_OPTIONS', as `holon gateway serve`)",
    )
    args = parser.parse_args()
    app = create_app(
        Settings.from_env(),
        eval_workers=args.eval_workers,
        cache_ttl_s=args.cache_ttl,
        server_process=True,  # as `holon gateway serve`
        **({"switch_interval_s": args.switch_interval} if args.switch_interval else {}),
    )
    options = {**SERVER_OPTIONS, **({"http": args.http} if args.http else {})}
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        lifespan="on",
        **options,  # type: ignore[arg-type]  # as `holon gateway serve`
    )
    server = uvicorn.Server(config)
    if args.sample:
        sampler = Sampler()
        sampler.start()
        try:
            with contextlib.suppress(KeyboardInterrupt):
                server.run()
        finally:
            sampler.stop(args.sample)
        return
    if not args.profile:
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the SIGINT it handled
            server.run()
        return
    with profile_every_thread() as merged, contextlib.suppress(KeyboardInterrupt):
        server.run()
    merged[0].dump_stats(args.profile)


if __name__ == "__main__":
    main()
