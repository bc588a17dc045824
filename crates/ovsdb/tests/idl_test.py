"""Drive the ferrovs OVSDB server with the Python `ovs` package's IDL.

Usage: idl_test.py SOCKET SCHEMA
Registers interest in Open_vSwitch.bridges and Bridge, inserts a bridge, waits for it to show up
in the replica, then prints the bridge names as JSON. Exits 77 if the `ovs` package is missing.
"""
import json
import sys
import time

try:
    import ovs.db.idl
    import ovs.poller
except ImportError:
    print("SKIP: python ovs package not available")
    sys.exit(77)


def run(idl, until, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        idl.run()
        if until():
            return True
        poller = ovs.poller.Poller()
        idl.wait(poller)
        poller.timer_wait(100)
        poller.block()
    return False


def main():
    sock, schema = sys.argv[1], sys.argv[2]
    helper = ovs.db.idl.SchemaHelper(schema)
    helper.register_columns("Open_vSwitch", ["bridges"])
    helper.register_table("Bridge")
    idl = ovs.db.idl.Idl("unix:" + sock, helper)
    if not run(idl, lambda: idl.has_ever_connected() and idl.change_seqno > 0):
        print("never connected")
        return 1

    txn = ovs.db.idl.Transaction(idl)
    ovs_rows = list(idl.tables["Open_vSwitch"].rows.values())
    root = ovs_rows[0] if ovs_rows else txn.insert(idl.tables["Open_vSwitch"])
    br = txn.insert(idl.tables["Bridge"])
    br.name = "pybr"
    br.other_config = {"from": "python"}
    root.addvalue("bridges", br)
    status = txn.commit_block()
    if status != ovs.db.idl.Transaction.SUCCESS:
        print("commit failed: %s %s" % (status, txn.get_error()))
        return 1

    def seen():
        return any(b.name == "pybr" for b in idl.tables["Bridge"].rows.values())

    if not run(idl, seen):
        print("inserted bridge never showed up in the replica")
        return 1
    names = sorted(b.name for b in idl.tables["Bridge"].rows.values())
    print(json.dumps({"bridges": names}))
    idl.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
