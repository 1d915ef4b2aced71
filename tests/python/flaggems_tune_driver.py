"""Drives python/caliber/flaggems_tune.py against the stand-in's LibTuner in a process of its own
(FLAGGEMS_DB_URL is read once, at import): `flaggems_tune_driver.py MODE RUN_DIR REPLAY_FROM
SIZE...` configures the mode through the run's own hooks (environment, installed, opened),
imports the stand-in's tuned kernel, calls it once per size
(checking its result) and prints one JSON line per call: what take_case() reported, or the
error. `shard DB BASE SIZE...` tunes as a parallel-warmup shard does; `merge INTO DB...` merges
shard databases and prints the result."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "flaggems_standin", "src"))
sys.path.insert(0, os.path.join(HERE, "flaggems_standin", "stubs"))  # its tiny torch

from caliber import flaggems_tune  # noqa: E402


def main(argv):
    if argv[0] == "merge":
        print(json.dumps(flaggems_tune.merge_shard_dbs(argv[2:], argv[1])))
        return 0
    if argv[0] == "shard":
        flaggems_tune.shard_session(argv[1], argv[2] or None)
        sizes = argv[3:]
        hooks = None
    else:
        # The run's own hooks, at the points a FlagGems run calls them (python/caliber/flaggems.py)
        hooks = flaggems_tune.Hooks()
        try:
            hooks.environment({"tune": argv[0], "replay_from": argv[2] or None}, os.environ)
        except ValueError as e:  # TuneError, or FlagGemsError: a refusal, exit 2
            print(json.dumps({"usage_error": str(e)}))
            return 2
        sizes = argv[3:]
    import flag_gems
    from flag_gems.utils import libentry, tuned
    if hooks is None:
        flaggems_tune.install(libentry)
    else:
        hooks.installed(flag_gems)
        if argv[1]:
            hooks.opened(argv[1])
    for n in sizes:
        x = [float(i) for i in range(int(n))]
        try:
            out = tuned.scale(x, 3.0)
            assert out == [v * 3.0 for v in x], "wrong result"
            print(json.dumps({"n": int(n), "report": flaggems_tune.take_case()}))
        except Exception as e:  # the case fails alone; its report still says why
            print(json.dumps({"n": int(n), "error": str(e), "report": flaggems_tune.take_case()}))
    print(json.dumps({"db_url": flaggems_tune.session().db_url,
                      "totals": flaggems_tune.session().totals}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
