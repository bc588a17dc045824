"""Runs the os-ken OpenFlow Switch Test Tool (os_ken/tests/switch/tester.py) and records
every test's result as JSON.

Started by bench/switch-tester.sh, inside the private network namespace it builds:

    switch_tester_run.py --dir CASES --port PORT --out RESULT.json

The tester listens on 127.0.0.1:PORT for the target switch (dpid 1) and the tester switch
(dpid 2), runs every JSON case under CASES in its own order, logs its usual report, and
ends its own process. Each test's outcome is recorded as it finishes (file description, test
description, "OK" or the tester's error message) and RESULT.json is rewritten after every
test, so an interrupted run still leaves what it measured.

os-ken 4.x ships no osken-manager: the config is parsed here and the app started with
AppManager.run_apps under the eventlet hub (OSKEN_HUB_TYPE must be set before os_ken.lib.hub
is imported).
"""

import argparse
import json
import os
import sys
import time

os.environ["OSKEN_HUB_TYPE"] = "eventlet"

from os_ken.lib import hub  # noqa: E402

hub.patch(thread=False)

from os_ken import cfg  # noqa: E402
from os_ken import log  # noqa: E402  (registers --log-file, read by the tester)
from os_ken.base import app_manager  # noqa: E402

args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
args.add_argument("--dir", required=True, help="directory (or file) of JSON test cases")
args.add_argument("--port", type=int, default=6633, help="OpenFlow listen port")
args.add_argument("--out", required=True, help="JSON result file")
args.add_argument("--label", default="", help="name of the switch under test, for the JSON")
opts = args.parse_args()

cfg.CONF(args=["--ofp-listen-host", "127.0.0.1",
               "--ofp-tcp-listen-port", str(opts.port),
               "--test-switch-dir", opts.dir,
               "--test-switch-target", "0000000000000001",
               "--test-switch-tester", "0000000000000002"],
         project="os_ken")
log.init_log()

from os_ken.tests.switch import tester  # noqa: E402

results = []
state = {"file": None, "error": None, "started": time.time()}


def save():
    ok = sum(1 for r in results if r["result"] == "OK")
    doc = {
        "switch": opts.label,
        "cases": opts.dir,
        "started": state["started"],
        "elapsed_s": round(time.time() - state["started"], 1),
        "pass": ok,
        "fail": len(results) - ok,
        "tests": results,
    }
    tmp = opts.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, opts.out)


# Remember the message of the last test exception built: it is the one that ended the test
# (earlier ones, such as a packet-in wait timing out, are caught and turned into the final one).
_orig_msg_init = tester.TestMessageBase.__init__


def _msg_init(self, state_, message_type, **argv):
    _orig_msg_init(self, state_, message_type, **argv)
    state["error"] = str(self)


tester.TestMessageBase.__init__ = _msg_init

_orig_file_execute = tester.OfTester._test_file_execute


def _file_execute(self, testfile):
    state["file"] = testfile.description
    return _orig_file_execute(self, testfile)


tester.OfTester._test_file_execute = _file_execute

_orig_execute = tester.OfTester._test_execute


def _execute(self, test, description):
    state["error"] = None
    t0 = time.time()
    result_type = _orig_execute(self, test, description)
    detail = "OK" if result_type == tester.TEST_OK else (state["error"] or result_type)
    results.append({
        "file": state["file"],
        "test": test.description,
        "result": "OK" if result_type == tester.TEST_OK else "ERROR",
        "detail": detail,
        "seconds": round(time.time() - t0, 2),
    })
    save()
    return result_type


tester.OfTester._test_execute = _execute

_orig_end = tester.OfTester._test_end


def _end(self, msg=None, report=None):
    save()
    _orig_end(self, msg, report)


tester.OfTester._test_end = _end

app_manager.AppManager.run_apps(["os_ken.tests.switch.tester"])
